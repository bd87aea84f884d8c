//===- CheckpointExport.cpp - memopt.checkpoint to memopt::checkpoint -----===//
//
// A region becomes one call of the runtime operator
//
//   memopt::checkpoint.typed(str graph, Tensor[] inputs, int[] ints,
//                            float[] floats, str[] policies, str name)
//       -> Tensor[]
//
// whose `graph` is the body as TorchScript IR text (tensor inputs first,
// then int/bool and float scalars, as the runtime requires). The `.typed`
// overload is the one TorchScript source can call: the saved module's code
// is recompiled on load and cannot build the Scalar[] of the other overload.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Runtime/RegionIR.h"

#include <torch/csrc/jit/ir/irparser.h>

using namespace mlir;
using namespace mlir::memopt;
using torch::jit::Graph;

/// The runtime's spelling of a save policy (SavePolicy::parse). An offloaded
/// input names the region whose backward prefetches it (`@label`): the
/// schedule the memory model assumed, instead of the runtime's default
/// prefetch depth.
static std::optional<std::string> policyText(Attribute policy,
                                             CheckpointOp region) {
  if (isa<KeepPolicyAttr>(policy))
    return "keep";
  if (auto compress = dyn_cast<CompressPolicyAttr>(policy))
    return "compress:" + stringifyCompressionKind(compress.getKind()).str();
  if (auto offload = dyn_cast<OffloadPolicyAttr>(policy))
    return "offload:" + stringifyOffloadKind(offload.getKind()).str() + "@" +
           region.getPrefetchTrigger().str();
  return std::nullopt;
}

namespace {
struct RegionInput {
  mlir::Value inner;        // body argument or hoisted state read; null for
                            // an element of a list of tensors
  torch::jit::Value *outer; // its value in the enclosing graph
  std::string policy;
};

/// A list of tensors entering a region as `count` tensor inputs from
/// `first` on, rebuilt inside.
struct TensorListInput {
  mlir::Value inner;
  size_t first, count;
};
} // namespace

LogicalResult exporter::emitCheckpoint(CheckpointOp op, Graph &graph,
                                       ValueMap &values,
                                       const BakedAttributes &baked) {
  if (failed(checkRuntimeSchema(op, "checkpoint region '" + op.getLabel() + "'",
                                schemas::kCheckpointTyped)))
    return failure();
  Block &body = op.getBodyBlock();
  SmallVector<RegionInput> tensors, ints, floats;
  SmallVector<TensorListInput> tensorLists;
  auto classify = [&](mlir::Value inner, torch::jit::Value *outer,
                      std::string policy,
                      std::optional<size_t> length = {}) -> LogicalResult {
    c10::TypeKind kind = outer->type()->kind();
    RegionInput input{inner, outer, policy};
    auto list = outer->type()->cast<c10::ListType>();
    if (list && list->getElementType()->kind() == c10::TypeKind::TensorType) {
      // A list built here and never changed holds its inputs; a list
      // attribute of known length is unpacked (which raises if its length
      // changed).
      std::vector<torch::jit::Value *> elements;
      if (outer->node()->kind() == c10::prim::ListConstruct) {
        bool changed =
            llvm::any_of(outer->uses(), [](const torch::jit::Use &use) {
              const c10::FunctionSchema *schema = use.user->maybeSchema();
              if (!schema || use.offset >= schema->arguments().size())
                return false;
              const c10::AliasInfo *alias =
                  schema->arguments()[use.offset].alias_info();
              return alias && alias->isWrite();
            });
        if (changed)
          return op.emitError("cannot export checkpoint region '")
                 << op.getLabel() << "': input of type " << inner.getType()
                 << " is a list of tensors changed after it was built";
        elements = outer->node()->inputs().vec();
      } else if (length)
        elements = graph.insertNode(graph.createListUnpack(outer, *length))
                       ->outputs()
                       .vec();
      else
        return op.emitError("cannot export checkpoint region '")
               << op.getLabel() << "': input of type " << inner.getType()
               << " is a list of tensors of a length unknown at export";
      tensorLists.push_back({inner, tensors.size(), elements.size()});
      for (torch::jit::Value *element : elements)
        tensors.push_back({mlir::Value(), element, policy});
      return success();
    }
    if (kind == c10::TypeKind::TensorType)
      tensors.push_back(input);
    else if (kind == c10::TypeKind::IntType || kind == c10::TypeKind::BoolType)
      ints.push_back(input);
    else if (kind == c10::TypeKind::FloatType)
      floats.push_back(input);
    else
      return op.emitError("cannot export checkpoint region '")
             << op.getLabel() << "': input of type " << inner.getType()
             << " is not a tensor, int, bool or float";
    return success();
  };
  for (auto [arg, input, policy] :
       llvm::zip(body.getArguments(), op.getInputs(), op.getPolicies())) {
    std::optional<std::string> text = policyText(policy, op);
    torch::jit::Value *outer = values.lookup(input);
    if (!text || !outer)
      return op.emitError("cannot export checkpoint region '")
             << op.getLabel() << "': unsupported input or policy " << policy;
    if (failed(classify(arg, outer, *text)))
      return failure();
  }
  // Tensor constants print as their values, which the runtime's parser
  // cannot read: they are made in the enclosing graph and enter as inputs.
  // The outermost region makes those of the regions nested in it too, which
  // then find them among their enclosing region's values.
  SmallVector<TorchOp> tensorConstants;
  body.walk([&](TorchOp constant) {
    if (constant.getName() == "prim::Constant" &&
        constant->getNumResults() == 1 &&
        isa<mlir::TensorType>(constant.getResult(0).getType()))
      tensorConstants.push_back(constant);
  });
  for (TorchOp constant : tensorConstants) {
    mlir::Value result = constant.getResult(0);
    torch::jit::Value *&outer = values[result];
    if (!outer && !(outer = insertTensorConstant(constant, graph)))
      return failure();
    if (failed(classify(result, outer, "keep")))
      return failure();
  }
  SmallVector<mlir::Value> absentOptionals; // None inside, checked outside
  SmallVector<GetAttrOp> bakedReads;          // constants inside
  for (Operation &nested : body) {
    if (!isa<ParamOp, BufferOp, GetAttrOp>(nested))
      continue;
    if (auto get = dyn_cast<GetAttrOp>(nested);
        get && baked.constants.count(get.getPath())) {
      bakedReads.push_back(get);
      continue;
    }
    torch::jit::Value *outer = values.lookup(nested.getResult(0));
    // Inside another region's body an absent optional is already None.
    if (outer && outer->type()->kind() == c10::TypeKind::NoneType) {
      absentOptionals.push_back(nested.getResult(0));
      continue;
    }
    if (outer && outer->type()->kind() == c10::TypeKind::OptionalType) {
      if (!isa<mlir::TensorType>(nested.getResult(0).getType())) {
        absentOptionals.push_back(nested.getResult(0));
        continue;
      }
      // A present optional tensor (a layer's bias): checked, then refined
      // to Tensor so that it can enter the region.
      torch::jit::Value *isNone = graph.insert(
          c10::Symbol::fromQualString("aten::__is__"),
          {outer, graph.insertConstant(c10::IValue())});
      torch::jit::Node *check = graph.insertNode(graph.create(
          c10::Symbol::fromQualString("prim::If"), {isNone}, 0));
      {
        torch::jit::WithInsertPoint raise(check->addBlock());
        graph.insert(c10::Symbol::fromQualString("prim::RaiseException"),
                     {graph.insertConstant(
                         "memopt: checkpoint region '" + op.getLabel().str() +
                         "' was compiled with a tensor in this optional "
                         "attribute, but it is None now")});
      }
      check->addBlock();
      outer = graph.insertUncheckedCast(outer, c10::TensorType::get());
    }
    std::optional<size_t> length;
    if (auto get = dyn_cast<GetAttrOp>(nested))
      if (auto it = baked.tensorListLengths.find(get.getPath());
          it != baked.tensorListLengths.end())
        length = it->second;
    if (failed(classify(nested.getResult(0), outer, "keep", length)))
      return failure();
  }
  // Lists of tensors read in regions nested in this one (a body has no
  // `self`): read by the caller, they enter here and are passed down.
  WalkResult nestedLists = body.walk([&](GetAttrOp get) {
    auto it = baked.tensorListLengths.find(get.getPath());
    if (get->getBlock() == &body || it == baked.tensorListLengths.end())
      return WalkResult::advance();
    torch::jit::Value *outer = values.lookup(get.getResult());
    if (!outer || failed(classify(get.getResult(), outer, "keep", it->second)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (nestedLists.wasInterrupted())
    return op.emitError("cannot export checkpoint region '")
           << op.getLabel() << "': a list of tensors read in a region nested "
           << "in it is not at hand";

  // The body graph: tensors first, then ints/bools, then floats.
  auto region = std::make_shared<Graph>();
  ValueMap inner;
  std::vector<torch::jit::Value *> tensorInputs;
  for (auto *group : {&tensors, &ints, &floats})
    for (RegionInput &input : *group) {
      torch::jit::Value *arg = region->addInput()->setType(input.outer->type());
      if (group == &tensors)
        tensorInputs.push_back(arg);
      if (input.inner)
        inner[input.inner] = arg;
    }
  for (const TensorListInput &list : tensorLists)
    inner[list.inner] =
        region
            ->insertNode(region->createList(
                c10::TensorType::get(),
                c10::ArrayRef<torch::jit::Value *>(tensorInputs)
                    .slice(list.first, list.count)))
            ->output();
  for (mlir::Value optional : absentOptionals)
    inner[optional] = region->insertConstant(c10::IValue());
  for (GetAttrOp get : bakedReads)
    inner[get.getResult()] =
        insertConstantValue(*region, baked.constants.lookup(get.getPath()));
  if (failed(emitBlock(body, *region, /*self=*/nullptr, inner, baked)))
    return failure();
  for (mlir::Value result : body.getTerminator()->getOperands()) {
    torch::jit::Value *output = inner.lookup(result);
    if (!isa<mlir::TensorType>(result.getType()) || !output)
      return op.emitError("cannot export checkpoint region '")
             << op.getLabel() << "': result of type " << result.getType()
             << " is not a tensor";
    region->registerOutput(output);
  }
  region->lint();
  // The runtime reads the region back from its text: check that it can,
  // so that a module that cannot run is a compile error, not a first-call
  // one (a non-finite constant once printed as an unparseable literal).
  std::string regionText = region->toString(/*print_source_locations=*/false);
  try {
    torch::jit::Graph reread;
    torch::jit::parseIR(::memopt::runtime::normalizeRegionIR(regionText),
                        &reread);
  } catch (const std::exception &e) {
    return op.emitError("cannot export checkpoint region '")
           << op.getLabel() << "': the runtime could not read its graph: "
           << ::memopt::runtime::describeRegionIRParseError(e.what());
  }

  // The call in the enclosing graph.
  auto list = [&](const c10::TypePtr &element, ArrayRef<RegionInput> group) {
    std::vector<torch::jit::Value *> elements;
    for (const RegionInput &input : group) {
      torch::jit::Value *v = input.outer;
      if (v->type()->kind() == c10::TypeKind::BoolType)
        v = graph.insert(c10::Symbol::fromQualString("aten::Int"), {v});
      elements.push_back(v);
    }
    return graph.insertNode(graph.createList(element, elements))->output();
  };
  c10::impl::GenericList policies(c10::StringType::get());
  for (const RegionInput &input : tensors)
    policies.push_back(input.policy);
  std::vector<torch::jit::Value *> arguments = {
      graph.insertConstant(regionText),
      list(c10::TensorType::get(), tensors),
      list(c10::IntType::get(), ints),
      list(c10::FloatType::get(), floats),
      insertConstantValue(graph, c10::IValue(policies)),
      graph.insertConstant(op.getLabel().str())};
  torch::jit::Node *call = graph.create(
      c10::Symbol::fromQualString("memopt::checkpoint"), arguments);
  call->output()->setType(c10::ListType::ofTensors());
  graph.insertNode(call);
  torch::jit::Node *unpack = graph.insertNode(
      graph.createListUnpack(call->output(), op.getNumResults()));
  for (auto [result, output] : llvm::zip(op.getResults(), unpack->outputs()))
    values[result] = output;
  return success();
}
