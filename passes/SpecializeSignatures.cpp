//===- SpecializeSignatures.cpp - memopt-specialize-signatures ------------===//
//
// The importer gives each recorded input signature its own function,
// `@forward_s<i>` with `memopt.signature = #memopt.signature<index = i,
// count = N>`; the planner optimizes each for its exact shapes. This pass
// adds the entry `@forward`: one `memopt.dispatch` that calls the function
// whose signature the inputs match exactly (most frequent first), and
// otherwise
//   - generic:  `@forward_generic`, a copy of the signature function with the
//               largest inputs whose tensor types are made dynamic. Valid
//               because nothing in the exported code depends on shapes at
//               run time (checkpoint regions replay whatever they get) --
//               unless the importer folded control flow on tensor sizes
//               (`memopt.shape_assumes`), in which case `original` is used;
//   - original: `@forward_original`, a private declaration marked
//               `memopt.original_method = "forward"`: the source module's
//               own, unmodified forward;
//   - none:     nothing; the dispatch is `strict` and a miss raises.
//
//===----------------------------------------------------------------------===//
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_SPECIALIZESIGNATURES
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {

struct SignatureFunc {
  mutable func::FuncOp func; // a handle: using it does not change the entry
  int64_t index = 0;
  int64_t count = 0;
};

/// `tensor<8x3xf32>` -> `tensor<?x?xf32>`; other types unchanged.
Type dynamicType(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return type;
  SmallVector<int64_t> shape(ranked.getRank(), ShapedType::kDynamic);
  return RankedTensorType::get(shape, ranked.getElementType());
}

/// The most precise type every type of `types` is an instance of: equal
/// sizes stay, differing sizes become `?`, differing ranks unranked. Null
/// when they are not all tensors of one element type (or all equal).
Type joinTypes(ArrayRef<Type> types) {
  Type first = types.front();
  if (llvm::all_equal(types))
    return first;
  auto firstTensor = dyn_cast<TensorType>(first);
  if (!firstTensor)
    return {};
  Type element = firstTensor.getElementType();
  std::optional<int64_t> rank;
  SmallVector<int64_t> shape;
  bool unranked = false;
  for (Type type : types) {
    auto tensor = dyn_cast<TensorType>(type);
    if (!tensor || tensor.getElementType() != element)
      return {};
    if (!tensor.hasRank() || (rank && *rank != tensor.getRank())) {
      unranked = true;
      continue;
    }
    if (!rank) {
      rank = tensor.getRank();
      shape.assign(tensor.getShape().begin(), tensor.getShape().end());
      continue;
    }
    for (auto [size, other] : llvm::zip(shape, tensor.getShape()))
      if (size != other)
        size = ShapedType::kDynamic;
  }
  if (unranked || !rank)
    return UnrankedTensorType::get(element);
  return RankedTensorType::get(shape, element);
}

/// `tensor<*xf32>` for tensors: what the source module's forward may take
/// or return.
Type unrankedType(Type type) {
  if (auto tensor = dyn_cast<TensorType>(type))
    return UnrankedTensorType::get(tensor.getElementType());
  return type;
}

int64_t numElements(func::FuncOp func) {
  int64_t total = 0;
  for (Type type : func.getArgumentTypes())
    if (auto ranked = dyn_cast<RankedTensorType>(type))
      total += ranked.getNumElements();
  return total;
}

/// Why a generic copy of `func` would not be valid, or "" when it would.
std::string genericObstacle(func::FuncOp func) {
  if (auto decisions = func->getAttrOfType<ArrayAttr>(kShapeAssumesAttrName)) {
    std::string list;
    for (Attribute decision : decisions)
      if (auto text = dyn_cast<StringAttr>(decision))
        list += (list.empty() ? "" : "; ") + text.str();
    return "@" + func.getSymName().str() +
           " folded control flow on tensor sizes (" + list + ")";
  }
  std::string obstacle;
  func.walk([&](Operation *op) {
    auto fixed = [](Type type) {
      return isa<PackedTensorType, HostTensorType>(type);
    };
    if (llvm::any_of(op->getResultTypes(), fixed) ||
        llvm::any_of(op->getOperandTypes(), fixed)) {
      obstacle = "@" + func.getSymName().str() + " holds '" +
                 op->getName().getStringRef().str() +
                 "' on a packed or host tensor, whose type needs a static "
                 "shape";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return obstacle;
}

/// Turns the clone `generic` into the shape-generic fallback: every tensor
/// computed from the inputs gets `?` sizes (parameters, buffers and tensor
/// constants keep theirs). Packing needs static shapes (the verifiers of
/// checkpoint policies and `saved_input` say so), so in the fallback packed
/// saves become plain ones: only memory, never values, changes.
void makeShapeGeneric(func::FuncOp generic) {
  Block &entry = generic.getBody().front();
  for (BlockArgument arg : entry.getArguments())
    arg.setType(dynamicType(arg.getType()));
  generic.walk([&](Operation *op) {
    if (isa<ParamOp, BufferOp, func::ReturnOp, YieldOp>(op))
      return;
    if (auto torchOp = dyn_cast<TorchOp>(op)) {
      if (torchOp.getName() == "prim::Constant")
        return;
      if (torchOp.getSavedInputAttr())
        torchOp.removeSavedInputAttr();
      if (torchOp.getSavedFormAttr())
        torchOp.removeSavedFormAttr();
      if (torchOp.getBackwardAttr())
        torchOp.removeBackwardAttr();
    }
    if (auto region = dyn_cast<CheckpointOp>(op)) {
      // Post-order: the body is done, the inputs' producers too.
      Block &body = region.getBodyBlock();
      SmallVector<Attribute> policies(region.getPolicies().begin(),
                                      region.getPolicies().end());
      for (auto [arg, input, policy] :
           llvm::zip(body.getArguments(), region.getInputs(), policies)) {
        arg.setType(input.getType());
        auto ranked = dyn_cast<RankedTensorType>(input.getType());
        if (isa<CompressPolicyAttr>(policy) &&
            (!ranked || !ranked.hasStaticShape()))
          policy = KeepPolicyAttr::get(op->getContext());
      }
      region.setPoliciesAttr(ArrayAttr::get(op->getContext(), policies));
      for (auto [result, yielded] :
           llvm::zip(region.getResults(), body.getTerminator()->getOperands()))
        result.setType(yielded.getType());
      return;
    }
    for (Value result : op->getResults())
      result.setType(dynamicType(result.getType()));
  });
  generic.setFunctionType(
      FunctionType::get(generic.getContext(), entry.getArgumentTypes(),
                        entry.getTerminator()->getOperandTypes()));
}

struct SpecializeSignaturesPass
    : public mlir::memopt::impl::SpecializeSignaturesBase<
          SpecializeSignaturesPass> {
  using SpecializeSignaturesBase::SpecializeSignaturesBase;

  void runOnOperation() override;

private:
  LogicalResult collect(ModuleOp module, SmallVector<SignatureFunc> &found);
  LogicalResult checkConsistent(ArrayRef<SignatureFunc> signatures);
};

} // namespace

/// `<method>_s<digits>`.
static bool isSignatureName(StringRef name, StringRef method) {
  if (!name.consume_front(method) || !name.consume_front("_s"))
    return false;
  return !name.empty() && llvm::all_of(name, llvm::isDigit);
}

LogicalResult
SpecializeSignaturesPass::collect(ModuleOp module,
                                  SmallVector<SignatureFunc> &found) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!isSignatureName(func.getSymName(), method))
      continue;
    auto signature = func->getAttrOfType<SignatureAttr>(kSignatureAttrName);
    if (!signature)
      return emitError(func.getLoc(), "signature function @")
             << func.getSymName()
             << " needs memopt.signature = #memopt.signature<index = <i>, "
                "count = <n>>";
    if (func.isExternal())
      return emitError(func.getLoc(), "signature function @")
             << func.getSymName() << " has no body";
    WalkResult nested = func.walk([&](DispatchOp dispatch) {
      dispatch.emitError("signature function @")
          << func.getSymName()
          << " already dispatches; memopt-specialize-signatures runs once, "
             "on the functions the importer made";
      return WalkResult::interrupt();
    });
    if (nested.wasInterrupted())
      return failure();
    found.push_back({func, signature.getIndex(), signature.getCount()});
  }
  if (found.empty())
    return module.emitError("memopt-specialize-signatures: no signature "
                            "functions @")
           << method.getValue()
           << "_s<N> (with memopt.signature) in the module; import with "
              "several input signatures first";
  for (StringRef suffix : {"", "_generic", "_original"}) {
    std::string name = method + suffix.str();
    if (Operation *existing = module.lookupSymbol(name))
      return emitError(existing->getLoc(), "memopt-specialize-signatures: @")
             << name << " already exists; it would be the "
             << (suffix.empty() ? "dispatching entry" : "fallback")
             << " of the signature functions";
  }
  return success();
}

LogicalResult
SpecializeSignaturesPass::checkConsistent(ArrayRef<SignatureFunc> signatures) {
  func::FuncOp first = signatures.front().func;
  for (const SignatureFunc &signature : signatures) {
    func::FuncOp func = signature.func;
    for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
      auto ranked = dyn_cast<RankedTensorType>(type);
      if (!ranked || !ranked.hasStaticShape())
        return emitError(func.getLoc(), "argument #")
               << index << " of @" << func.getSymName() << " has type " << type
               << "; dispatch guards need statically shaped tensors";
    }
    if (func.getNumArguments() != first.getNumArguments())
      return emitError(func.getLoc(), "@")
             << func.getSymName() << " takes " << func.getNumArguments()
             << " arguments but @" << first.getSymName() << " takes "
             << first.getNumArguments()
             << "; signatures of one method must have the same inputs";
    if (func.getNumResults() != first.getNumResults())
      return emitError(func.getLoc(), "@")
             << func.getSymName() << " returns " << func.getNumResults()
             << " values but @" << first.getSymName() << " returns "
             << first.getNumResults();
    for (auto [index, type, other] :
         llvm::enumerate(func.getArgumentTypes(), first.getArgumentTypes()))
      if (cast<TensorType>(type).getElementType() !=
          cast<TensorType>(other).getElementType())
        return emitError(func.getLoc(), "argument #")
               << index << " of @" << func.getSymName() << " is " << type
               << " but " << other << " in @" << first.getSymName()
               << "; one dispatch needs one element type per input";
    for (auto [index, type, other] :
         llvm::enumerate(func.getResultTypes(), first.getResultTypes()))
      if (!joinTypes({type, other}))
        return emitError(func.getLoc(), "result #")
               << index << " of @" << func.getSymName() << " is " << type
               << " but " << other << " in @" << first.getSymName();
  }
  for (auto [position, signature] : llvm::enumerate(signatures))
    for (const SignatureFunc &earlier : signatures.take_front(position))
      if (earlier.func.getArgumentTypes() == signature.func.getArgumentTypes())
        return emitError(signature.func.getLoc(), "@")
               << signature.func.getSymName() << " has the input types of @"
               << earlier.func.getSymName() << "; each signature needs its own";
  return success();
}

void SpecializeSignaturesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::string mode = fallback;
  if (mode != "generic" && mode != "original" && mode != "none") {
    module.emitError("memopt-specialize-signatures: fallback must be "
                     "generic, original or none, not '")
        << mode << "'";
    return signalPassFailure();
  }
  SmallVector<SignatureFunc> signatures;
  if (failed(collect(module, signatures)) ||
      failed(checkConsistent(signatures)))
    return signalPassFailure();

  // Most frequent first; ties in signature order.
  SmallVector<SignatureFunc> ordered(signatures);
  llvm::stable_sort(ordered,
                    [](const SignatureFunc &a, const SignatureFunc &b) {
                      if (a.count != b.count)
                        return a.count > b.count;
                      return a.index < b.index;
                    });

  MLIRContext *context = &getContext();
  OpBuilder builder(context);
  Location loc = ordered.front().func.getLoc();
  func::FuncOp firstFunc = signatures.front().func;
  func::FuncOp lastFunc = signatures.back().func;
  unsigned numInputs = firstFunc.getNumArguments();
  unsigned numResults = firstFunc.getNumResults();

  // The fallback.
  func::FuncOp fallbackFunc;
  if (mode == "generic") {
    const SignatureFunc *largest = &signatures.front();
    for (const SignatureFunc &signature : signatures)
      if (numElements(signature.func) > numElements(largest->func))
        largest = &signature;
    std::string obstacle = genericObstacle(largest->func);
    if (!obstacle.empty()) {
      emitWarning(largest->func.getLoc(),
                  "memopt-specialize-signatures: no generic "
                  "fallback: ")
          << obstacle << "; unseen signatures run the original forward";
      mode = "original";
    } else {
      fallbackFunc = largest->func.clone();
      fallbackFunc.setSymName(method + "_generic");
      fallbackFunc->removeAttr(kSignatureAttrName);
      // Its plan (memopt.plan, region reasons) was made for these shapes.
      fallbackFunc->setAttr(
          kGenericOfAttrName,
          FlatSymbolRefAttr::get(largest->func.getSymNameAttr()));
      makeShapeGeneric(fallbackFunc);
      builder.setInsertionPointAfter(lastFunc);
      builder.insert(fallbackFunc);
    }
  }
  if (mode == "original") {
    SmallVector<Type> inputs, results;
    for (Type type : firstFunc.getArgumentTypes())
      inputs.push_back(unrankedType(type));
    for (Type type : firstFunc.getResultTypes())
      results.push_back(unrankedType(type));
    builder.setInsertionPointAfter(lastFunc);
    fallbackFunc = builder.create<func::FuncOp>(
        loc, method + "_original", builder.getFunctionType(inputs, results));
    fallbackFunc.setPrivate();
    fallbackFunc->setAttr(kOriginalMethodAttrName,
                          builder.getStringAttr(method.getValue()));
  }

  // The entry's types cover every case and the fallback.
  SmallVector<func::FuncOp> callees;
  for (const SignatureFunc &signature : ordered)
    callees.push_back(signature.func);
  if (fallbackFunc)
    callees.push_back(fallbackFunc);
  SmallVector<Type> inputTypes, resultTypes;
  for (unsigned i = 0; i < numInputs; ++i)
    inputTypes.push_back(joinTypes(llvm::map_to_vector(
        callees, [&](func::FuncOp f) { return f.getArgumentTypes()[i]; })));
  for (unsigned i = 0; i < numResults; ++i)
    resultTypes.push_back(joinTypes(llvm::map_to_vector(
        callees, [&](func::FuncOp f) { return f.getResultTypes()[i]; })));

  SmallVector<Attribute> cases;
  for (const SignatureFunc &signature : ordered)
    cases.push_back(DispatchCaseAttr::get(
        context, signature.func.getArgumentTypes(),
        FlatSymbolRefAttr::get(signature.func.getSymNameAttr()),
        signature.count));

  builder.setInsertionPoint(firstFunc);
  auto entry = builder.create<func::FuncOp>(
      loc, method, builder.getFunctionType(inputTypes, resultTypes));
  Block *body = entry.addEntryBlock();
  builder.setInsertionPointToStart(body);
  auto dispatch = builder.create<DispatchOp>(
      loc, resultTypes, body->getArguments(), builder.getArrayAttr(cases),
      fallbackFunc ? FlatSymbolRefAttr::get(fallbackFunc.getSymNameAttr())
                   : FlatSymbolRefAttr(),
      /*strict=*/!fallbackFunc);
  builder.create<func::ReturnOp>(loc, dispatch.getResults());
}
