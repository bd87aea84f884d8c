//===- CostModel.h - FLOPs, bytes and time of operators ---------*- C++ -*-===//
//
// Per operator: floating-point operations, bytes read and written, and a
// predicted time `overhead + flops * secondsPerFlop + bytes * secondsPerByte`
// whose coefficients (one set per operator class) are fitted on this
// machine by bench/cost_model_calibration.py
// (lib/Analysis/CostCoefficients.def). Backward is costed as twice the forward
// FLOPs (input and weight gradients).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_COSTMODEL_H
#define MEMOPT_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

namespace mlir::memopt {

enum class CostClass {
  Conv,
  Matmul,
  Elementwise,
  Reduction,
  Normalization,
  Pooling,
  Copy,    // contiguous, cat, stack, casts: bytes only
  View,    // views and metadata: free
  Unknown, // modelled as a copy of its operands
  // Ops whose CPU kernels are far off their class (PyTorch 1.13):
  MaxPooling,    // max_pool2d with int64 indices
  Softmax,       // softmax, log_softmax
  BatchNorm,     // batch_norm in training (statistics, then normalization)
  BatchedMatmul, // bmm, baddbmm, batched matmul (a different GEMM loop)
  Gemm           // a linear layer's backward products (operands as stored)
};
StringRef stringifyCostClass(CostClass cls);

struct CostCoefficients {
  double secondsPerFlop = 0, secondsPerByte = 0, overheadSeconds = 0;
};

struct OpCost {
  CostClass cls = CostClass::View;
  double flops = 0, bytes = 0, seconds = 0;
};

class CostModel {
public:
  /// For getAnalysis<>; the costs depend only on each op.
  explicit CostModel(Operation *op = nullptr) {}

  /// Forward cost of one op (a checkpoint region: its body).
  OpCost getCost(Operation *op) const;
  double getBackwardSeconds(Operation *op) const;
  /// Time to recompute the ops in [begin, end) in forward.
  double getRecomputeSeconds(Block::iterator begin, Block::iterator end) const;
  double getRecomputeSeconds(ArrayRef<Operation *> ops) const;
  /// Time to move `bytes` one way over a link of `bandwidth` bytes/s.
  static double getTransferSeconds(int64_t bytes, double bandwidth,
                                   double latencySeconds = 10e-6);
  static const CostCoefficients &getCoefficients(CostClass cls);
};

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_COSTMODEL_H
