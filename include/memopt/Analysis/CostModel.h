//===- CostModel.h - FLOPs, bytes and time of operators ---------*- C++ -*-===//
//
// Per operator: floating-point operations, bytes read and written, and a
// predicted time `overhead + flops * secondsPerFlop + bytes * secondsPerByte`
// whose coefficients (one set per operator class) are fitted on this
// machine by bench/cost_model_calibration.py: built in from
// lib/Analysis/CostCoefficients.def, or per module from `memopt.cost_model`
// (memopt-compile --cost-model, a file that script writes on the machine
// that will train). Backward is costed as twice the forward
// FLOPs (input and weight gradients).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_COSTMODEL_H
#define MEMOPT_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <array>
#include <optional>

namespace mlir::memopt {

enum class CostClass {
#define MEMOPT_COST_CLASS_NAME(NAME) NAME,
#include "memopt/Dialect/CostClasses.def"
#undef MEMOPT_COST_CLASS_NAME
};
/// One per line of CostClasses.def, whatever its last class.
inline constexpr unsigned kNumCostClasses = 0
#define MEMOPT_COST_CLASS_NAME(NAME) +1
#include "memopt/Dialect/CostClasses.def"
#undef MEMOPT_COST_CLASS_NAME
    ;
StringRef stringifyCostClass(CostClass cls);
std::optional<CostClass> symbolizeCostClass(StringRef name);
/// The `memopt.cost_model` of `op` or its nearest ancestor that has one
/// (null: the built-in fit prices it).
DictionaryAttr getFittedCostModel(Operation *op);

struct CostCoefficients {
  double secondsPerFlop = 0, secondsPerByte = 0, overheadSeconds = 0;
};

struct OpCost {
  CostClass cls = CostClass::View;
  double flops = 0, bytes = 0, seconds = 0;
};

class CostModel {
public:
  /// The coefficients are the built-in fit, overridden by the
  /// `memopt.cost_model` of `op` or its nearest ancestor that has one.
  explicit CostModel(Operation *op = nullptr);

  /// Forward cost of one op (a checkpoint region: its body).
  OpCost getCost(Operation *op) const;
  double getBackwardSeconds(Operation *op) const;
  /// Time to recompute the ops in [begin, end) in forward.
  double getRecomputeSeconds(Block::iterator begin, Block::iterator end) const;
  double getRecomputeSeconds(ArrayRef<Operation *> ops) const;
  /// Time to move `bytes` one way over a link of `bandwidth` bytes/s.
  static double getTransferSeconds(int64_t bytes, double bandwidth,
                                   double latencySeconds = 10e-6);
  const CostCoefficients &getCoefficients(CostClass cls) const {
    return coefficients[static_cast<unsigned>(cls)];
  }
  /// lib/Analysis/CostCoefficients.def's line for `cls`.
  static const CostCoefficients &getBuiltinCoefficients(CostClass cls);

private:
  std::array<CostCoefficients, kNumCostClasses> coefficients;
};

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_COSTMODEL_H
