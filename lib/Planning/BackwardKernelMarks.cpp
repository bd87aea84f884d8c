//===- BackwardKernelMarks.cpp - keep the lean backwards a plan needs -----===//
//
// memopt-chunk-batch-norm-backward and memopt-chunk-weight-gradients mark
// every op whose backward can run in chunks; each chunked backward costs
// time (strided copies, more kernel calls). Once a plan is chosen, the marks
// its peak or budget does not need come off again.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/BackwardKernelMarks.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;

std::optional<int64_t>
mlir::memopt::dropUnneededBackwardKernels(func::FuncOp func,
                                          int64_t limitBytes) {
  SmallVector<std::pair<TorchOp, BackwardKernelAttr>> marked;
  func.walk([&](TorchOp op) {
    if (BackwardKernelAttr kernel = op.getBackwardAttr())
      marked.push_back({op, kernel});
  });
  auto tryDropping =
      [&](std::optional<BackwardKernel> kind) -> std::optional<int64_t> {
    SmallVector<std::pair<TorchOp, BackwardKernelAttr>> dropped;
    for (auto &[op, kernel] : marked)
      if (op.getBackwardAttr() && (!kind || kernel.getKernel() == *kind)) {
        op.removeBackwardAttr();
        dropped.push_back({op, kernel});
      }
    if (dropped.empty())
      return std::nullopt;
    int64_t peak = TrainingMemoryModel(func).predictPeak();
    if (peak <= limitBytes)
      return peak;
    for (auto &[op, kernel] : dropped)
      op.setBackwardAttr(kernel);
    return std::nullopt;
  };
  if (std::optional<int64_t> peak = tryDropping(std::nullopt))
    return peak;
  // Each successful drop leaves the marks off: the last peak is the plan's.
  std::optional<int64_t> peakAfterDrops;
  for (BackwardKernel kind :
       {BackwardKernel::by_channel, BackwardKernel::weight_rows})
    if (std::optional<int64_t> peak = tryDropping(kind))
      peakAfterDrops = peak;
  return peakAfterDrops;
}
