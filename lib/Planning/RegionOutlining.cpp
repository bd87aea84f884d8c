//===- RegionOutlining.cpp - move ops into a checkpoint region ------------===//
#include "memopt/Planning/RegionOutlining.h"
#include "memopt/Planning/FunctionChain.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::memopt;

/// The function arguments free `value` is computed from: they enter the
/// region as inputs (they are resident, so keeping them costs nothing).
static void collectArguments(Value value, llvm::SetVector<Value> &inputs) {
  if (isa<BlockArgument>(value)) {
    inputs.insert(value);
    return;
  }
  for (Value operand : value.getDefiningOp()->getOperands())
    collectArguments(operand, inputs);
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
    llvm::function_ref<Attribute(Value)> policyFor) {
  assert(!ops.empty() && "nothing to outline");
  Block *block = ops.front()->getBlock();
  SmallVector<Operation *> moved;
  llvm::SmallPtrSet<Operation *, 32> movedSet;
  for (Operation *op : ops)
    if (!definesOnlyFreeValues(op)) {
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
      if (isFreeValue(operand)) {
        collectArguments(operand, inputs);
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
    builder.clone(*op, mapping);
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
