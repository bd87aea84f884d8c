//===- RegionOutlining.cpp - move ops into a checkpoint region ------------===//
#include "memopt/Planning/RegionOutlining.h"
#include "memopt/Planning/FunctionChain.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::memopt;

bool mlir::memopt::isStateRead(Operation *op) {
  return isa<ParamOp, BufferOp, GetAttrOp>(op);
}

/// The values free `value` is computed from that enter the region as inputs
/// (they are resident, so keeping them costs nothing): block arguments, and
/// inside another region's body, where no module is at hand to read state
/// from, the state reads of types a region takes. An absent optional (a
/// layer's None bias) is cloned in instead: the exporter gives it as None to
/// every body and checks it where `self` is at hand.
static void collectFreeInputs(Value value, bool nested,
                              llvm::SetVector<Value> &inputs) {
  if (isa<BlockArgument>(value)) {
    inputs.insert(value);
    return;
  }
  Operation *def = value.getDefiningOp();
  if (nested && isStateRead(def) &&
      isa<TensorType, IntegerType, FloatType>(value.getType())) {
    inputs.insert(value);
    return;
  }
  for (Value operand : def->getOperands())
    collectFreeInputs(operand, nested, inputs);
}

/// Clones the definition of free `value` (and of its operands) into the body.
static Value materializeFree(Value value, IRMapping &mapping,
                             OpBuilder &builder) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    materializeFree(operand, mapping, builder);
  builder.clone(*def, mapping);
  return mapping.lookup(value);
}

FailureOr<CheckpointOp> mlir::memopt::outlineCheckpointRegion(
    ArrayRef<Operation *> ops, StringRef label,
    llvm::function_ref<Attribute(Value)> policyFor,
    llvm::function_ref<bool(Value)> isFree) {
  if (!isFree)
    isFree = isFreeValue;
  assert(!ops.empty() && "nothing to outline");
  Block *block = ops.front()->getBlock();
  // A region inside a region's body (recomputed within its recompute).
  bool nested = isa<CheckpointOp>(block->getParentOp());
  SmallVector<Operation *> moved;
  llvm::SmallPtrSet<Operation *, 32> movedSet;
  for (Operation *op : ops)
    if (op->getNumResults() == 0 || !llvm::all_of(op->getResults(), isFree)) {
      moved.push_back(op);
      movedSet.insert(op);
    }
  if (moved.empty())
    return ops.front()->emitError("checkpoint region '")
           << label << "' would contain no computation";

  auto isInside = [&](Operation *user) {
    Operation *top = block->findAncestorOpInBlock(*user);
    return top && movedSet.contains(top);
  };

  llvm::SetVector<Value> inputs;
  SmallVector<Value> results;
  for (Operation *op : moved) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && movedSet.contains(def))
        continue;
      if (isFree(operand)) {
        collectFreeInputs(operand, nested, inputs);
        continue;
      }
      if (!isa<TensorType, IntegerType, FloatType>(operand.getType()))
        return op->emitError("checkpoint region '")
               << label << "' cannot take " << operand.getType()
               << " as an input";
      inputs.insert(operand);
    }
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !isInside(user); })) {
        if (!isa<TensorType>(result.getType()))
          return op->emitError("checkpoint region '")
                 << label << "' would have to return " << result.getType()
                 << ", but regions return tensors";
        results.push_back(result);
      }
  }
  if (results.empty())
    return moved.back()->emitError("checkpoint region '")
           << label << "' computes nothing used after it";

  // State reads that enter a nested region may sit between its ops; they
  // read no operands, so they can move up to where the region goes.
  for (Value input : inputs)
    if (Operation *def = input.getDefiningOp())
      if (nested && isStateRead(def) && def->getBlock() == block &&
          moved.front()->isBeforeInBlock(def))
        def->moveBefore(moved.front());
  OpBuilder builder(moved.front());
  SmallVector<Attribute> policies;
  for (Value input : inputs)
    policies.push_back(policyFor(input));
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  Location loc = moved.front()->getLoc();
  auto region = builder.create<CheckpointOp>(
      loc, resultTypes, builder.getStringAttr(label), inputs.getArrayRef(),
      builder.getArrayAttr(policies));

  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value input : inputs) {
    argTypes.push_back(input.getType());
    argLocs.push_back(input.getLoc());
  }
  Block *body = builder.createBlock(&region.getBody(), {}, argTypes, argLocs);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  builder.setInsertionPointToEnd(body);
  for (Operation *op : moved) {
    for (Value operand : op->getOperands())
      if (!mapping.contains(operand))
        materializeFree(operand, mapping, builder);
    Operation *clone = builder.clone(*op, mapping);
    // A region's recompute hands its parameters' gradients to the runtime,
    // which passes each whole sum to the accumulator: there is no `.grad`
    // to add row blocks into from inside a region.
    if (auto torchOp = dyn_cast<TorchOp>(clone))
      if (BackwardKernelAttr kernel = torchOp.getBackwardAttr();
          kernel && kernel.getKernel() == BackwardKernel::weight_rows)
        torchOp.removeBackwardAttr();
  }
  SmallVector<Value> yielded;
  for (Value result : results)
    yielded.push_back(mapping.lookup(result));
  builder.create<YieldOp>(loc, yielded);

  for (auto [result, replacement] : llvm::zip(results, region.getResults()))
    result.replaceUsesWithIf(
        replacement, [&](OpOperand &use) { return !isInside(use.getOwner()); });
  for (Operation *op : llvm::reverse(moved))
    op->erase();
  return region;
}

/// The parameter `value` is: a memopt.param, or a region body's argument
/// that a parameter was passed in as.
static ParamOp getParameter(Value value) {
  while (auto arg = dyn_cast<BlockArgument>(value)) {
    auto region = dyn_cast<CheckpointOp>(arg.getOwner()->getParentOp());
    if (!region)
      return nullptr;
    value = region.getInputs()[arg.getArgNumber()];
  }
  return value.getDefiningOp<ParamOp>();
}

void mlir::memopt::countParameterUses(
    Operation *root, llvm::DenseMap<StringAttr, unsigned> &uses) {
  root->walk([&](Operation *op) {
    if (isa<CheckpointOp>(op))
      return;
    for (Value operand : op->getOperands())
      if (ParamOp param = getParameter(operand); param && !param.getFrozen())
        ++uses[param.getPathAttr()];
  });
}

StringAttr mlir::memopt::findSplitParameterSum(
    CheckpointOp region,
    const llvm::DenseMap<StringAttr, unsigned> &functionUses) {
  llvm::DenseMap<StringAttr, unsigned> inside;
  countParameterUses(region, inside);
  for (auto &[path, uses] : inside)
    if (uses >= 2 && uses < functionUses.lookup(path))
      return path;
  return nullptr;
}
