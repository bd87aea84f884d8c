//===- MemoptAttrNames.h - memopt's discardable attribute names -*- C++ -*-===//
//
// The attributes memopt's importer, passes and driver put on modules,
// functions and ops. The dialect declares each with its type
// (`discardableAttrs` in MemoptDialect.td, verified by the dialect); these
// constants are the generated helpers' names, for code that sets or reads
// an attribute by name.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_DIALECT_MEMOPTATTRNAMES_H
#define MEMOPT_DIALECT_MEMOPTATTRNAMES_H

#include "memopt/Dialect/MemoptDialect.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::memopt {

//===-- Set by the importer ----------------------------------------------===//

/// Module: absolute path of the source .pt (the exporter copies its state).
inline constexpr llvm::StringLiteral kSourceAttrName =
    MemoptDialect::SourceAttrHelper::getNameStr();
/// Function: #memopt.signature<index = i, count = N> (SignatureAttr), the
/// function made for the i-th of several input signatures.
inline constexpr llvm::StringLiteral kSignatureAttrName =
    MemoptDialect::SignatureAttrHelper::getNameStr();
/// Function: the byte budget given for its signature ("1.5GiB", "40%").
inline constexpr llvm::StringLiteral kBudgetAttrName =
    MemoptDialect::BudgetAttrHelper::getNameStr();
/// Function: left as imported (no plan), e.g. a signature passed through.
inline constexpr llvm::StringLiteral kPassthroughAttrName =
    MemoptDialect::PassthroughAttrHelper::getNameStr();
/// Function: module attribute values control flow was folded on: {path =
/// value} (the exported code checks them).
inline constexpr llvm::StringLiteral kAssumesAttrName =
    MemoptDialect::AssumesAttrHelper::getNameStr();
/// Function: control-flow decisions folded on tensor sizes (not only ranks
/// or dtypes), one string each naming it and where it is. A function
/// carrying it is valid only for its exact input shapes.
inline constexpr llvm::StringLiteral kShapeAssumesAttrName =
    MemoptDialect::ShapeAssumesAttrHelper::getNameStr();
/// Function argument: an input left out of the input specs, bound to this
/// value (its default, or None) while the function was specialized; the
/// exported forward takes it with that default and refuses any other.
inline constexpr llvm::StringLiteral kBoundDefaultAttrName =
    MemoptDialect::BoundDefaultAttrHelper::getNameStr();

//===-- Set by the driver, read by the memory model ----------------------===//

/// Module or function: "resident" or "allocated" (.grad buffers).
inline constexpr llvm::StringLiteral kGradBuffersAttrName =
    MemoptDialect::GradBuffersAttrHelper::getNameStr();
/// Module or function: how many data-parallel processes train the model
/// (i64, absent: one). Each holds DistributedDataParallel's gradient
/// buckets beside its parameters.
inline constexpr llvm::StringLiteral kWorldSizeAttrName =
    MemoptDialect::WorldSizeAttrHelper::getNameStr();
/// Module or function: the intra-op threads training on the CPU runs with
/// (i64, absent: one). They choose PyTorch's convolution kernels and the
/// per-thread buffers those allocate.
inline constexpr llvm::StringLiteral kIntraOpThreadsAttrName =
    MemoptDialect::IntraOpThreadsAttrHelper::getNameStr();
/// Module or function: the cost model's coefficients fitted on the machine
/// that will train (`--cost-model`): a dictionary from cost class
/// (CostClasses.def) to `array<f64: secondsPerFlop, secondsPerByte,
/// overheadSeconds>`; classes it leaves out keep the built-in fit.
inline constexpr llvm::StringLiteral kCostModelAttrName =
    MemoptDialect::CostModelAttrHelper::getNameStr();
/// The keys `memopt.cost_model` may hold, in CostClasses.def's order.
llvm::ArrayRef<llvm::StringLiteral> getCostClassNames();
/// Module or function: "cpu" or "cuda", where training runs.
inline constexpr llvm::StringLiteral kTrainingDeviceAttrName =
    MemoptDialect::DeviceAttrHelper::getNameStr();
/// Module or function: module paths whose outputs the user asserts hold
/// only 0 and 1 (`--assume-binary`).
inline constexpr llvm::StringLiteral kAssumeBinaryAttrName =
    MemoptDialect::AssumeBinaryAttrHelper::getNameStr();

//===-- Set by the passes ------------------------------------------------===//

/// Function: the predicted peak before any memopt transformation (set by
/// the first pass that changes what autograd saves); budgets given in
/// percent refer to it.
inline constexpr llvm::StringLiteral kUnplannedPeakAttrName =
    MemoptDialect::UnplannedPeakBytesAttrHelper::getNameStr();
/// Function: the budget that applies to it (its own memopt.budget, else
/// the option's) in bytes, resolved against memopt.unplanned_peak_bytes by
/// the same step (memopt-stamp-baseline); absent without a budget.
inline constexpr llvm::StringLiteral kBudgetBytesAttrName =
    MemoptDialect::BudgetBytesAttrHelper::getNameStr();
/// Function: the planner's summary, a #memopt.plan (PlanSummaryAttr).
inline constexpr llvm::StringLiteral kPlanAttrName =
    MemoptDialect::PlanAttrHelper::getNameStr();
/// Function: memopt-schedule-prefetch's summary of offload transfers, a
/// #memopt.prefetch (PrefetchScheduleAttr).
inline constexpr llvm::StringLiteral kPrefetchScheduleAttrName =
    MemoptDialect::PrefetchScheduleAttrHelper::getNameStr();
/// Checkpoint region: why it was chosen, and the bytes it frees.
inline constexpr llvm::StringLiteral kRegionReasonAttrName =
    MemoptDialect::ReasonAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSavedBytesAvoidedAttrName =
    MemoptDialect::SavedBytesAvoidedAttrHelper::getNameStr();
/// Checkpoint region: how much higher the modelled peak is without it.
inline constexpr llvm::StringLiteral kLowersPeakByAttrName =
    MemoptDialect::LowersPeakByAttrHelper::getNameStr();
/// Function made by memopt-specialize-signatures: the method it specializes,
/// and (on the generic fallback) the function it generalizes.
inline constexpr llvm::StringLiteral kOriginalMethodAttrName =
    MemoptDialect::OriginalMethodAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kGenericOfAttrName =
    MemoptDialect::GenericOfAttrHelper::getNameStr();

} // namespace mlir::memopt

#endif // MEMOPT_DIALECT_MEMOPTATTRNAMES_H
