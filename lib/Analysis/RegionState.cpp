//===- RegionState.cpp - State a checkpoint region writes in place --------===//
#include "memopt/Analysis/RegionState.h"
#include "memopt/Analysis/TensorBytes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::memopt;

/// Whether an op writes `value` in place: lists it in `mutates`, or writes a
/// view of it, or is a nested region that writes the input it is passed as.
static bool isWrittenInPlace(Value value) {
  SmallVector<Value> worklist = {value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    for (OpOperand &use : current.getUses()) {
      int64_t index = use.getOperandNumber();
      if (auto nested = dyn_cast<CheckpointOp>(use.getOwner())) {
        worklist.push_back(nested.getBodyBlock().getArgument(index));
        continue;
      }
      auto op = dyn_cast<TorchOp>(use.getOwner());
      if (!op)
        continue;
      if (std::optional<ArrayRef<int64_t>> mutates = op.getMutates())
        if (llvm::is_contained(*mutates, index))
          return true;
      if (std::optional<ArrayRef<int64_t>> views = op.getViews())
        for (auto [result, of] : llvm::zip(op->getResults(), *views))
          if (of == index)
            worklist.push_back(result);
    }
  }
  return false;
}

int64_t mlir::memopt::getWrittenStateBytes(CheckpointOp region) {
  int64_t bytes = 0;
  // A buffer read in several places (or in nested regions) is one input of
  // the exported region graph.
  llvm::StringSet<> buffers;
  region.getBodyBlock().walk([&](BufferOp buffer) {
    if (isWrittenInPlace(buffer) && buffers.insert(buffer.getPath()).second)
      bytes += std::max<int64_t>(getDeviceBytes(buffer.getType()), 0);
  });
  for (BlockArgument arg : region.getBodyBlock().getArguments())
    if (isa<TensorType>(arg.getType()) && isWrittenInPlace(arg))
      bytes += std::max<int64_t>(getDeviceBytes(arg.getType()), 0);
  return bytes;
}
