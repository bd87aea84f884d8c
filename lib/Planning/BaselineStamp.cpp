//===- BaselineStamp.cpp - the peak and budget a plan refers to -----------===//
#include "memopt/Planning/BaselineStamp.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::memopt;

LogicalResult
mlir::memopt::stampBaseline(func::FuncOp func,
                            const std::optional<Budget> &budget,
                            std::optional<int64_t> predictedPeak) {
  Builder builder(func.getContext());
  if (!func->hasAttr(kUnplannedPeakAttrName))
    func->setAttr(kUnplannedPeakAttrName,
                  builder.getI64IntegerAttr(
                      predictedPeak ? *predictedPeak
                                    : TrainingMemoryModel(func).predictPeak()));
  if (func->hasAttr(kBudgetBytesAttrName))
    return success();
  // A signature's own budget overrides the one given for all.
  std::optional<Budget> applies = budget;
  if (auto own = func->getAttrOfType<StringAttr>(kBudgetAttrName)) {
    std::string error;
    FailureOr<Budget> parsed = parseBudget(own.getValue(), error);
    if (failed(parsed))
      return func.emitError(error);
    applies = *parsed;
  }
  if (applies)
    func->setAttr(kBudgetBytesAttrName,
                  builder.getI64IntegerAttr(
                      applies->resolve(getStampedBaselineBytes(func))));
  return success();
}

int64_t mlir::memopt::getStampedBaselineBytes(func::FuncOp func) {
  auto peak = func->getAttrOfType<IntegerAttr>(kUnplannedPeakAttrName);
  return peak ? peak.getInt() : 0;
}

std::optional<int64_t> mlir::memopt::getStampedBudgetBytes(func::FuncOp func) {
  if (auto bytes = func->getAttrOfType<IntegerAttr>(kBudgetBytesAttrName))
    return bytes.getInt();
  return std::nullopt;
}
