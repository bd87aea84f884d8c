//===- CheckpointOp.cpp - checkpoint regions and their terminator ---------===//
#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;

bool mlir::memopt::isCompressibleTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return false;
  Type element = tensor.getElementType();
  return element.isF16() || element.isBF16() || element.isF32();
}

LogicalResult CheckpointOp::verify() {
  if (getLabel().empty())
    return emitOpError("needs a non-empty label");
  if (getNumResults() == 0)
    return emitOpError("must return at least one value");
  if (getPolicies().size() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but "
                               << getPolicies().size() << " save policies";
  for (auto [index, policy, input] :
       llvm::enumerate(getPolicies(), getInputs())) {
    if (!isSavePolicy(policy))
      return emitOpError("save policy #")
             << index << " is " << policy
             << ", expected #memopt.keep, #memopt.compress<...> or "
                "#memopt.offload<...>";
    if (isa<CompressPolicyAttr>(policy) &&
        !isCompressibleTensor(input.getType()))
      return emitOpError("input #")
             << index << " of type " << input.getType()
             << " cannot be compressed: it needs a static f16, bf16 or f32 "
                "tensor";
    if (isa<OffloadPolicyAttr>(policy) && !isa<TensorType>(input.getType()))
      return emitOpError("input #")
             << index << " of type " << input.getType()
             << " cannot be offloaded: it is not a tensor";
  }
  if (getOffloadHeldFor() &&
      !llvm::any_of(getPolicies(), llvm::IsaPred<OffloadPolicyAttr>))
    return emitOpError("has offload_held_for but no offloaded input");
  return verifyPrefetchAt();
}

LogicalResult CheckpointOp::verifyPrefetchAt() {
  std::optional<StringRef> at = getPrefetchAt();
  if (!at)
    return success();
  if (!llvm::any_of(getPolicies(), llvm::IsaPred<OffloadPolicyAttr>))
    return emitOpError("has prefetch_at but no offloaded input");
  Block *block = (*this)->getBlock();
  if (!block)
    return success();
  // Backward runs regions in reverse forward order: only this region or a
  // later one starts its backward early enough to trigger the prefetch.
  bool after = false;
  unsigned matchesAfter = 0, matchesBefore = 0;
  for (auto other : block->getOps<CheckpointOp>()) {
    if (other == *this)
      after = true;
    if (other.getLabel() == *at)
      ++(after ? matchesAfter : matchesBefore);
  }
  if (matchesAfter + matchesBefore > 1)
    return emitOpError("prefetch_at names '")
           << *at << "', the label of " << matchesAfter + matchesBefore
           << " regions; it must name exactly one";
  if (matchesBefore)
    return emitOpError("prefetch_at names '")
           << *at << "', a region that runs before this one in forward; "
           << "its backward starts too late to prefetch for this one";
  if (!matchesAfter)
    return emitOpError("prefetch_at names '")
           << *at << "', which is not the label of a checkpoint region in "
           << "this block";
  return success();
}

LogicalResult CheckpointOp::verifyRegions() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for "
           << getInputs().size() << " inputs";
  for (auto [index, argument, input] :
       llvm::enumerate(body.getArguments(), getInputs()))
    if (argument.getType() != input.getType())
      return emitOpError("body argument #")
             << index << " has type " << argument.getType()
             << " but input #" << index << " has type " << input.getType();
  // Recompute runs the body a second time: effects that cannot be replayed
  // idempotently (in-place buffer updates can) must stay outside.
  WalkResult walk = body.walk([&](Operation *nested) {
    auto torchOp = dyn_cast<TorchOp>(nested);
    if (isa<SetAttrOp>(nested) || (torchOp && torchOp.getSideEffects())) {
      emitOpError("body contains '")
          << (torchOp ? torchOp.getName() : nested->getName().getStringRef())
          << "', a side effect that recomputation would repeat";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult YieldOp::verify() {
  auto parent = cast<CheckpointOp>((*this)->getParentOp());
  if (getValues().getTypes() != parent.getResultTypes())
    return emitOpError("yields types (")
           << getValues().getTypes() << ") but the region returns ("
           << parent.getResultTypes() << ")";
  return success();
}
