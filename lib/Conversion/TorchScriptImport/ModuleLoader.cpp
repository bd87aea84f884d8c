//===- ModuleLoader.cpp - Load a .pt and prepare method graphs ------------===//
//
// Loading classifies what is wrong with a bad file before LibTorch sees it
// (not a zip, truncated, a torch.save archive) so that the one error line a
// user gets says so, instead of a LibTorch internal message.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Conversion/PickleCheck.h"
#include "memopt/Conversion/ZipArchive.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <ATen/Functions.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/passes/constant_pooling.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cstring>

using namespace mlir::memopt::detail;

std::string
mlir::memopt::detail::describeTorchException(const std::exception &error) {
  std::string text;
  if (auto *c10Error = dynamic_cast<const c10::Error *>(&error))
    text = c10Error->what_without_backtrace();
  else
    text = error.what();
  llvm::StringRef message(text);
  // TorchScript errors span lines (message, source excerpt); keep the first
  // line that says something.
  while (!message.empty()) {
    auto [line, rest] = message.split('\n');
    line = line.trim();
    if (!line.empty())
      return line.rtrim(".:").str();
    message = rest;
  }
  return "unknown LibTorch error";
}

/// The zip records a TorchScript archive has: `<root>/constants.pkl`,
/// `<root>/data.pkl` and `<root>/code/...`. torch.save archives have only
/// data.pkl.
static void checkTorchScriptRecords(llvm::StringRef bytes,
                                    llvm::StringRef name) {
  std::vector<std::string> records;
  try {
    caffe2::serialize::PyTorchStreamReader reader(
        std::make_shared<BufferReader>(bytes));
    records = reader.getAllRecords();
  } catch (const std::exception &error) {
    throw ImportError(("'" + name +
                       "' is a corrupt or truncated zip archive (" +
                       describeTorchException(error) + ")")
                          .str());
  }
  bool hasCode = false, hasConstants = false;
  for (llvm::StringRef record : records) {
    hasCode |= record.starts_with("code/");
    hasConstants |= record == "constants.pkl";
  }
  if (!hasCode || !hasConstants)
    throw ImportError(
        ("'" + name +
         "' is a zip archive but not a TorchScript module (no code/ or "
         "constants.pkl; was it written by torch.save instead of "
         "torch.jit.save?)")
            .str());
}

/// "Unknown builtin op: ns::op" from the TorchScript compiler means the
/// archive calls an operator this process has no schema for.
static std::optional<std::string> missingOperator(llvm::StringRef message) {
  llvm::Regex unknownOp("Unknown builtin op: ([A-Za-z0-9_]+::[A-Za-z0-9_.]+)");
  llvm::SmallVector<llvm::StringRef, 2> match;
  if (unknownOp.match(message, &match))
    return match[1].rtrim(".").str();
  return std::nullopt;
}

/// `File "code/__torch__/m.py", line 8` in a TorchScript compile error.
static std::string compileErrorSite(llvm::StringRef message) {
  llvm::Regex site("File \"([^\"]+)\", line ([0-9]+)");
  llvm::SmallVector<llvm::StringRef, 3> match;
  if (site.match(message, &match))
    return (llvm::sys::path::filename(match[1]) + ":" + match[2]).str();
  return "";
}

/// Every pickle of the archive (data.pkl, constants.pkl, the code's
/// .debug_pkl records, read lazily when a location is built) walked before
/// LibTorch unpickles it: a number no record of its size can hold would
/// make LibTorch allocate for it first (PickleCheck.h).
static void checkPickles(llvm::StringRef bytes, llvm::StringRef name) {
  std::string why;
  std::optional<std::vector<mlir::memopt::ZipRecord>> records =
      mlir::memopt::readZipRecords(bytes, why);
  if (!records)
    return; // findZipArchiveDamage has passed them; LibTorch says the rest
  for (const mlir::memopt::ZipRecord &record : *records) {
    llvm::StringRef recordName = record.name;
    if (!recordName.ends_with(".pkl") && !recordName.ends_with(".debug_pkl"))
      continue;
    std::optional<std::string> data = mlir::memopt::readZipRecordData(record);
    if (!data)
      continue;
    if (std::optional<std::string> damage =
            mlir::memopt::findPickleDamage(*data))
      throw ImportError(("'" + name + "' is a damaged TorchScript archive (" +
                         recordName + ": " + *damage + ")")
                            .str());
  }
}

/// What is wrong with a file before LibTorch reads it, if anything.
static void checkArchive(llvm::StringRef bytes, llvm::StringRef name) {
  if (bytes.size() < 4 || !bytes.starts_with("PK"))
    throw ImportError(
        ("'" + name + "' is not a TorchScript archive (not a zip file)").str());
  if (std::optional<std::string> damage =
          mlir::memopt::findZipArchiveDamage(bytes))
    throw ImportError(("'" + name +
                       "' is a corrupt or truncated zip archive (" + *damage +
                       ")")
                          .str());
  checkPickles(bytes, name);
  checkTorchScriptRecords(bytes, name);
}

std::optional<torch::jit::Module> mlir::memopt::detail::loadSharedSource(
    llvm::StringRef bytes, llvm::StringRef name,
    std::shared_ptr<llvm::WritableMemoryBuffer> weights) {
  checkArchive(bytes, name);
  try {
    LoaderCrashGuard guard(name);
    if (weights)
      if (std::optional<torch::jit::Module> module =
              loadWithWeightsInPlace(bytes, std::move(weights)))
        return module;
    return torch::jit::load(std::make_shared<BufferReader>(bytes));
  } catch (const std::exception &) {
    return std::nullopt; // loadTorchScriptArchive says why, or maps to CPU
  }
}

namespace {
/// Copies module state value by value; shared values stay shared.
class StateCopier {
public:
  std::optional<c10::IValue> copy(const c10::IValue &value);

private:
  std::optional<c10::IValue> copyTensor(const at::Tensor &tensor);
  std::unordered_map<const void *, c10::IValue> copies;
};
} // namespace

std::optional<c10::IValue> StateCopier::copyTensor(const at::Tensor &tensor) {
  if (!tensor.device().is_cpu() || tensor.layout() != at::kStrided ||
      tensor.is_quantized() || tensor.has_names() || tensor.is_conj() ||
      tensor.is_neg() || !tensor.is_non_overlapping_and_dense())
    return std::nullopt;
  at::Tensor copy =
      at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options());
  {
    at::NoGradGuard noGrad;
    copy.copy_(tensor);
  }
  copy.requires_grad_(tensor.requires_grad());
  return copy;
}

std::optional<c10::IValue> StateCopier::copy(const c10::IValue &value) {
  // Immutable values.
  if (value.isNone() || value.isInt() || value.isDouble() || value.isBool() ||
      value.isString() || value.isDevice() || value.isEnum() ||
      (value.isTensor() && !value.toTensor().defined()))
    return value;
  if (!value.isTensor() && !value.isObject() && !value.isList() &&
      !value.isTuple() && !value.isGenericDict())
    return std::nullopt;
  const void *identity = value.internalToPointer();
  if (auto known = copies.find(identity); known != copies.end())
    return known->second;
  std::optional<c10::IValue> result;
  if (value.isTensor()) {
    result = copyTensor(value.toTensor());
  } else if (value.isObject()) {
    if (value.isCustomClass())
      return std::nullopt;
    c10::intrusive_ptr<c10::ivalue::Object> object = value.toObject();
    size_t slots = object->slots().size();
    auto copied = c10::ivalue::Object::create(
        c10::StrongTypePtr(object->compilation_unit(), object->type()), slots);
    copies[identity] = copied;
    const c10::ClassTypePtr &type = object->type();
    for (size_t i = 0; i < slots; ++i) {
      const c10::IValue &original = object->getSlot(i);
      // Parameters are shared (see copyModuleState).
      if (type->is_module() && type->is_parameter(i) && original.isTensor() &&
          !copies.count(original.internalToPointer()))
        copies[original.internalToPointer()] = original;
      std::optional<c10::IValue> slot = copy(original);
      if (!slot)
        return std::nullopt;
      copied->setSlot(i, std::move(*slot));
    }
    return c10::IValue(copied);
  } else if (value.isList()) {
    c10::impl::GenericList list = value.toList();
    c10::impl::GenericList copied(list.elementType());
    copied.reserve(list.size());
    for (const c10::IValue &element : list) {
      std::optional<c10::IValue> elementCopy = copy(element);
      if (!elementCopy)
        return std::nullopt;
      copied.push_back(std::move(*elementCopy));
    }
    result = copied;
  } else if (value.isTuple()) {
    const auto &tuple = value.toTupleRef();
    std::vector<c10::IValue> elements;
    for (const c10::IValue &element : tuple.elements()) {
      std::optional<c10::IValue> elementCopy = copy(element);
      if (!elementCopy)
        return std::nullopt;
      elements.push_back(std::move(*elementCopy));
    }
    result = c10::ivalue::Tuple::createNamed(std::move(elements), tuple.type());
  } else {
    c10::impl::GenericDict dict = value.toGenericDict();
    c10::impl::GenericDict copied(dict.keyType(), dict.valueType());
    for (const auto &entry : dict) {
      std::optional<c10::IValue> key = copy(entry.key());
      std::optional<c10::IValue> mapped = copy(entry.value());
      if (!key || !mapped)
        return std::nullopt;
      copied.insert(std::move(*key), std::move(*mapped));
    }
    result = copied;
  }
  if (result)
    copies[identity] = *result;
  return result;
}

std::optional<torch::jit::Module>
mlir::memopt::detail::copyModuleState(const torch::jit::Module &module) {
  std::optional<c10::IValue> copy = StateCopier().copy(module._ivalue());
  if (!copy)
    return std::nullopt;
  return torch::jit::Module(copy->toObject());
}

torch::jit::Module
mlir::memopt::detail::loadTorchScriptArchive(llvm::StringRef bytes,
                                             llvm::StringRef name) {
  checkArchive(bytes, name);
  try {
    LoaderCrashGuard guard(name);
    return torch::jit::load(std::make_shared<BufferReader>(bytes),
                            c10::Device(c10::kCPU));
  } catch (const std::exception &error) {
    std::string full =
        dynamic_cast<const c10::Error *>(&error)
            ? static_cast<const c10::Error &>(error).what_without_backtrace()
            : error.what();
    if (auto op = missingOperator(full)) {
      std::string site = compileErrorSite(full);
      throw ImportError("operator '" + *op + "' has no schema" +
                        (site.empty() ? "" : ", at " + site) +
                        " (no library that registers it is loaded: pass it "
                        "with --load-library)");
    }
    throw ImportError(("cannot load TorchScript archive '" + name +
                       "': " + describeTorchException(error))
                          .str());
  }
}

/// Dotted path of a module value: the prim::GetAttr chain from `self`.
static std::string moduleValuePath(const torch::jit::Value *value,
                                   const torch::jit::Graph &graph) {
  std::vector<std::string> names;
  while (value != graph.inputs().at(0)) {
    const torch::jit::Node *node = value->node();
    if (node->kind() != c10::prim::GetAttr)
      return "";
    names.push_back(node->s(c10::attr::name));
    value = node->input(0);
  }
  std::string path;
  for (auto it = names.rbegin(); it != names.rend(); ++it)
    path += (path.empty() ? "" : ".") + *it;
  return path;
}

static void tagModulePath(torch::jit::Node *node, const std::string &path) {
  if (node->kind() != c10::prim::Constant)
    node->s_(kModulePathAttr, path);
  for (torch::jit::Block *block : node->blocks())
    for (torch::jit::Node *inner : block->nodes())
      tagModulePath(inner, path);
}

/// torch::jit::Inline, but every inlined node is tagged with the path of the
/// module instance whose code it is: TorchScript's inliner records call
/// stacks only on nodes with outputs outside nested blocks, which would leave
/// `self.num_batches_tracked.add_(1)` or a prim::SetAttr without a module.
static void inlineCalls(torch::jit::Block *block, torch::jit::Graph &graph) {
  for (torch::jit::Node *node = block->nodes().front();
       node != block->return_node();) {
    bool isCall = node->kind() == c10::prim::CallMethod ||
                  node->kind() == c10::prim::CallFunction;
    torch::jit::GraphFunction *callee =
        isCall ? torch::jit::tryToGraphFunction(node) : nullptr;
    if (!callee) {
      for (torch::jit::Block *inner : node->blocks())
        inlineCalls(inner, graph);
      node = node->next();
      continue;
    }
    std::string path = node->kind() == c10::prim::CallMethod
                           ? moduleValuePath(node->input(0), graph)
                       : node->hasAttribute(kModulePathAttr)
                           ? node->s(kModulePathAttr)
                           : "";
    torch::jit::Node *before = node->prev();
    torch::jit::Node *after = node->next();
    // A call's first input is the function itself (as torch's Inline does).
    if (node->kind() == c10::prim::CallFunction)
      node->removeInput(0);
    // The callee's unoptimized graph: its own calls are inlined (and tagged)
    // when the walk reaches them.
    torch::jit::inlineCallTo(node, callee, callee->graph().get());
    for (torch::jit::Node *inserted = before->next(); inserted != after;
         inserted = inserted->next())
      tagModulePath(inserted, path);
    node = before->next();
  }
}

std::shared_ptr<torch::jit::Graph>
mlir::memopt::detail::prepareMethodGraph(const torch::jit::Module &module,
                                         const std::string &methodName) {
  auto method = module.find_method(methodName);
  if (!method) {
    std::string available;
    for (const auto &candidate : module.get_methods())
      available += (available.empty() ? "" : ", ") + candidate.name();
    throw ImportError("the module has no method '" + methodName +
                      "' (methods: " + available + ")");
  }
  std::shared_ptr<torch::jit::Graph> graph = method->graph()->copy();
  // Inlining tags every node with its module path (Locations.cpp).
  inlineCalls(graph->block(), *graph);
  // The cleanups TorchScript itself runs after scripting: none of them runs a
  // tensor op, so numerics and the order of random draws are unchanged.
  torch::jit::LowerSimpleTuples(graph);
  torch::jit::ConstantPropagationImmutableTypes(graph);
  torch::jit::ConstantPooling(graph);
  // Inputs are named as the method's parameters (what input specs name):
  // the graph's own names carry suffixes ("x.1") and lose the name to an
  // inlined callee's "x" (GoogLeNet's _transform_input left "x0").
  const auto &arguments = method->function().getSchema().arguments();
  for (size_t i = 0; i < arguments.size() && i < graph->inputs().size(); ++i)
    graph->inputs()[i]->setDebugName(arguments[i].name());
  return graph;
}
