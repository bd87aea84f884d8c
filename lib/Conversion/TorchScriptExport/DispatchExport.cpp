//===- DispatchExport.cpp - A dispatching forward as one TorchScript module
//===//
//
// After memopt-specialize-signatures, `@forward` is one memopt.dispatch over
// the per-signature functions. It exports as ONE module whose state is
// stored once and shared by every method:
//   - one method per case callee (`forward_s0`, ...) and for a generic
//     fallback (`forward_generic`), built like a plain forward (assumption
//     guards included);
//   - `forward_original` for a fallback declared with
//     `memopt.original_method = "forward"`: the source module's own method,
//     inlined and re-typed onto the rebuilt module hierarchy;
//   - `forward`, compiled from TorchScript source, which tests each case's
//     exact sizes and dtypes in order and calls the matching method, else
//     the fallback (a generic one checks ranks and dtypes first), else
//     raises naming the unmatched signature and the compiled ones.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/passes/inliner.h>

using namespace mlir;
using namespace mlir::memopt;

FailureOr<DispatchOp> exporter::findEntryDispatch(func::FuncOp forward) {
  DispatchOp dispatch;
  forward.walk([&](DispatchOp op) { dispatch = op; });
  if (!dispatch)
    return DispatchOp();
  Block &body = forward.getBody().front();
  Operation *terminator = body.getTerminator();
  bool plain = &body.front() == dispatch.getOperation() &&
               dispatch->getNextNode() == terminator &&
               llvm::equal(dispatch.getInputs(), body.getArguments()) &&
               llvm::equal(terminator->getOperands(), dispatch.getResults());
  if (!plain)
    return forward.emitError(
        "cannot export @forward: a dispatching forward must be exactly one "
        "memopt.dispatch of its arguments, in order, returning its results "
        "(as memopt-specialize-signatures makes it)");
  return dispatch;
}

namespace {
/// What the dispatcher's source may name: `torch` (as TorchScript's native
/// resolver) and RuntimeError.
struct DispatchResolver : public torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue>
  resolveValue(const std::string &name, torch::jit::GraphFunction &function,
               const torch::jit::SourceRange &loc) override {
    if (name == "RuntimeError")
      return std::make_shared<torch::jit::ExceptionValue>(name);
    return torch::jit::nativeResolver()->resolveValue(name, function, loc);
  }
  c10::TypePtr resolveType(const std::string &name,
                           const torch::jit::SourceRange &loc) override {
    return nullptr;
  }
};
} // namespace

/// Python text of a string literal (the names and types quoted here are
/// identifiers, digits and 'x').
static std::string pyString(llvm::StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// "f32" for memopt specs (InputSpec); other element types by MLIR name.
static std::string dtypeName(Type element) {
  if (element.isF32())
    return "f32";
  if (element.isF16())
    return "f16";
  if (element.isBF16())
    return "bf16";
  if (element.isF64())
    return "f64";
  if (element.isInteger(1))
    return "i1";
  if (element.isSignlessInteger(32))
    return "i32";
  if (element.isSignlessInteger(64))
    return "i64";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << element;
  return text;
}

/// "x: 8x3x32x32 f32, y: ?x8 i64", as the importer's describeSignature.
static std::string describeTypes(ArrayRef<std::string> names, TypeRange types) {
  std::string text;
  for (auto [name, type] : llvm::zip(names, types)) {
    text += (text.empty() ? "" : ", ") + name + ": ";
    auto tensor = cast<TensorType>(type);
    if (!tensor.hasRank())
      text += "*";
    else if (tensor.getRank() == 0)
      text += "scalar";
    for (int64_t i = 0; tensor.hasRank() && i < tensor.getRank(); ++i)
      text += (i ? "x" : "") + (tensor.isDynamicDim(i)
                                    ? std::string("?")
                                    : std::to_string(tensor.getDimSize(i)));
    text += " " + dtypeName(tensor.getElementType());
  }
  return text;
}

/// TorchScript conditions that hold when input `name` has a value of
/// `type`: its sizes (static ones) and dtype (x.dtype is an int there).
static LogicalResult guardTerms(Operation *op, llvm::StringRef name, Type type,
                                SmallVectorImpl<std::string> &terms) {
  auto tensor = dyn_cast<TensorType>(type);
  auto dtype = tensor ? scalarTypeOf(tensor.getElementType()) : std::nullopt;
  if (!dtype)
    return op->emitError("cannot export a dispatch guard on type ")
           << type << ": expected a tensor of a TorchScript dtype";
  std::string value = name.str();
  if (tensor.hasRank()) {
    if (tensor.hasStaticShape()) {
      terms.push_back(value + ".size() == [" +
                      llvm::join(llvm::map_range(tensor.getShape(),
                                                 [](int64_t size) {
                                                   return std::to_string(size);
                                                 }),
                                 ", ") +
                      "]");
    } else {
      terms.push_back(value + ".dim() == " + std::to_string(tensor.getRank()));
      for (int64_t i = 0; i < tensor.getRank(); ++i)
        if (!tensor.isDynamicDim(i))
          terms.push_back(value + ".size(" + std::to_string(i) +
                          ") == " + std::to_string(tensor.getDimSize(i)));
    }
  }
  terms.push_back(value +
                  ".dtype == " + std::to_string(static_cast<int>(*dtype)));
  return success();
}

/// Every module-valued value of an inlined graph of the source gets the type
/// of the rebuilt module at the same path (the hierarchies have the same
/// attribute names; classes differ, one per instance).
static LogicalResult retypeModuleValues(torch::jit::Block *block,
                                        std::string &error) {
  for (torch::jit::Node *node : block->nodes()) {
    for (torch::jit::Block *inner : node->blocks())
      if (failed(retypeModuleValues(inner, error)))
        return failure();
    for (torch::jit::Value *output : node->outputs()) {
      auto cls = output->type()->cast<c10::ClassType>();
      if (!cls || !cls->is_module())
        continue;
      torch::jit::Value *owner =
          node->kind() == c10::prim::GetAttr ? node->input(0) : nullptr;
      auto ownerType =
          owner ? owner->type()->cast<c10::ClassType>() : c10::ClassTypePtr();
      const std::string name = owner ? node->s(c10::attr::name) : std::string();
      if (!ownerType || !ownerType->hasAttribute(name)) {
        error = "it passes the module object '" + output->debugName() +
                "' through '" + node->kind().toQualString() + "'";
        return failure();
      }
      output->setType(ownerType->getAttribute(name));
    }
  }
  return success();
}

/// Adds `newName` to `root`: the source's method `sourceMethod` with every
/// call inlined, reading the rebuilt hierarchy's (shared) state.
static LogicalResult copySourceMethod(func::FuncOp decl,
                                      const std::string &sourceMethod,
                                      const std::string &newName,
                                      torch::jit::Module &root,
                                      const torch::jit::Module &source) {
  auto method = source.find_method(sourceMethod);
  if (!method)
    return decl.emitError("cannot export @")
           << decl.getSymName() << ": the source module has no method '"
           << sourceMethod << "' (" << kOriginalMethodAttrName << ")";
  std::shared_ptr<torch::jit::Graph> graph = method->graph()->copy();
  torch::jit::Inline(*graph);
  graph->inputs().at(0)->setType(root.type());
  std::string error;
  if (failed(retypeModuleValues(graph->block(), error)))
    return decl.emitError("cannot copy the source's method '")
           << sourceMethod << "' as " << newName << ": " << error;
  auto *function = root._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*root.type()->name(), newName), graph);
  root.type()->addMethod(function);
  return success();
}

/// Adds `func` (a case or the fallback) to `root` as the method of its
/// name, once.
static LogicalResult addMethod(func::FuncOp func, torch::jit::Module &root,
                               const torch::jit::Module &source,
                               std::vector<std::string> &added) {
  std::string name = func.getSymName().str();
  if (llvm::is_contained(added, name))
    return success();
  added.push_back(name);
  if (root.type()->findMethod(name) || root.type()->hasAttribute(name))
    return func.emitError("cannot export @")
           << name << " as a method: the module already has a member '" << name
           << "'";
  if (func.isExternal()) {
    auto original = func->getAttrOfType<StringAttr>(kOriginalMethodAttrName);
    if (!original)
      return func.emitError("cannot export @")
             << name << ": a declaration is exportable only as the source's "
             << "own method (" << kOriginalMethodAttrName << " = \"forward\")";
    return copySourceMethod(func, original.str(), name, root, source);
  }
  std::shared_ptr<torch::jit::Graph> graph =
      exporter::buildForwardGraph(func, root.type(), source);
  if (!graph)
    return failure();
  auto *function = root._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*root.type()->name(), name), graph);
  root.type()->addMethod(function);
  return success();
}

LogicalResult exporter::addDispatchMethods(DispatchOp dispatch,
                                           torch::jit::Module &root,
                                           const torch::jit::Module &source) {
  ModuleOp module = dispatch->getParentOfType<ModuleOp>();
  auto lookup = [&](FlatSymbolRefAttr symbol) {
    return module.lookupSymbol<func::FuncOp>(symbol.getAttr());
  };

  // Methods first: forward's source refers to them.
  std::vector<std::string> added;
  SmallVector<std::pair<DispatchCaseAttr, func::FuncOp>> cases;
  for (Attribute attr : dispatch.getCases()) {
    auto dispatchCase = cast<DispatchCaseAttr>(attr);
    func::FuncOp callee = lookup(dispatchCase.getCallee());
    if (!callee)
      return dispatch.emitError("case callee ")
             << dispatchCase.getCallee() << " is not a func.func";
    if (failed(addMethod(callee, root, source, added)))
      return failure();
    cases.emplace_back(dispatchCase, callee);
  }
  func::FuncOp fallback;
  if (FlatSymbolRefAttr symbol = dispatch.getFallbackAttr()) {
    fallback = lookup(symbol);
    if (!fallback)
      return dispatch.emitError("fallback ") << symbol << " is not a func.func";
    if (failed(addMethod(fallback, root, source, added)))
      return failure();
  }

  // Every method must return what forward returns.
  c10::TypePtr returnType;
  std::string firstMethod;
  for (const std::string &name : added) {
    const auto &returns =
        root.get_method(name).function().getSchema().returns();
    c10::TypePtr type = returns.size() == 1 ? returns.front().type()
                                            : c10::TupleType::create({});
    if (!returnType) {
      returnType = type;
      firstMethod = name;
      continue;
    }
    if (!c10::unifyTypes(returnType, type))
      return dispatch.emitError("cannot export the dispatch: method '")
             << name << "' returns " << type->repr_str() << " but '"
             << firstMethod << "' returns " << returnType->repr_str();
  }

  // Argument names: the source forward's, for keyword calls (its trailing
  // optional inputs that no signature gives are left out).
  std::vector<std::string> names;
  size_t numInputs = dispatch.getInputs().size();
  if (auto method = source.find_method("forward")) {
    const auto &arguments = method->function().getSchema().arguments();
    if (arguments.size() >= numInputs + 1)
      for (size_t i = 1; i <= numInputs; ++i)
        names.push_back(arguments[i].name());
  }
  if (names.empty())
    for (size_t i = 0; i < numInputs; ++i)
      names.push_back("input" + std::to_string(i));
  std::string arguments = llvm::join(names, ", ");

  std::string code = "def forward(self";
  for (const std::string &name : names)
    code += ", " + name + ": Tensor";
  code += "):\n";
  std::vector<std::string> compiled;
  for (auto &[dispatchCase, callee] : cases) {
    SmallVector<std::string> terms;
    for (auto [name, guard] : llvm::zip(names, dispatchCase.getGuards()))
      if (failed(guardTerms(dispatch, name, guard, terms)))
        return failure();
    code += "    if " + llvm::join(terms, " and ") + ":\n";
    code += "        return self." + callee.getSymName().str() + "(" +
            arguments + ")\n";
    compiled.push_back(describeTypes(names, dispatchCase.getGuards()));
  }
  std::string tail =
      "; recompile with --spec for it or drop --strict-signatures";
  if (fallback) {
    // The source's own forward takes anything; a compiled fallback only
    // values of its argument types.
    SmallVector<std::string> terms;
    if (!fallback.isExternal()) {
      for (auto [name, type] : llvm::zip(names, fallback.getArgumentTypes()))
        if (failed(guardTerms(dispatch, name, type, terms)))
          return failure();
      tail = " and the generic fallback takes (" +
             describeTypes(names, fallback.getArgumentTypes()) +
             ") only; recompile with --spec for it";
    }
    std::string call =
        "self." + fallback.getSymName().str() + "(" + arguments + ")";
    if (terms.empty()) {
      code += "    return " + call + "\n";
    } else {
      code += "    if " + llvm::join(terms, " and ") + ":\n";
      code += "        return " + call + "\n";
    }
  }
  if (!fallback || !fallback.isExternal()) {
    // What the inputs were, as the compiled signatures are described.
    std::string dtypes = "{6: \"f32\", 5: \"f16\", 15: \"bf16\", 7: \"f64\", "
                         "4: \"i64\", 3: \"i32\", 11: \"i1\"}";
    std::vector<std::string> parts;
    for (const std::string &name : names) {
      std::string shape = "(\"x\".join([str(d) for d in " + name +
                          ".size()]) if " + name +
                          ".dim() > 0 else \"scalar\")";
      parts.push_back(pyString(name + ": ") + " + " + shape + " + \" \" + " +
                      dtypes + ".get(" + name + ".dtype, \"dtype \" + str(" +
                      name + ".dtype))");
    }
    code += "    raise RuntimeError(" + pyString("memopt: input signature (") +
            " + " + llvm::join(parts, " + \", \" + ") + " + " +
            pyString(") matches none of the compiled signatures (" +
                     llvm::join(compiled, ", ") + ")" + tail) +
            ")\n";
  }
  root.define(code, std::make_shared<DispatchResolver>());
  return success();
}
