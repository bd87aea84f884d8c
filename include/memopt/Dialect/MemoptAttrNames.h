//===- MemoptAttrNames.h - memopt's discardable attribute names -*- C++ -*-===//
//
// The attributes memopt's importer, passes and driver put on modules,
// functions and ops. The dialect owns their names so that every layer
// (importer, analyses, passes, exporter, driver) spells each one here only.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_DIALECT_MEMOPTATTRNAMES_H
#define MEMOPT_DIALECT_MEMOPTATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::memopt {

//===-- Set by the importer ----------------------------------------------===//

/// Module: absolute path of the source .pt (the exporter copies its state).
inline constexpr llvm::StringLiteral kSourceAttrName = "memopt.source";
/// Function: {count = N, index = i}, one specialization of N signatures.
inline constexpr llvm::StringLiteral kSignatureAttrName = "memopt.signature";
/// Function: the byte budget given for its signature ("1.5GiB", "40%").
inline constexpr llvm::StringLiteral kBudgetAttrName = "memopt.budget";
/// Function: left as imported (no plan), e.g. a signature passed through.
inline constexpr llvm::StringLiteral kPassthroughAttrName =
    "memopt.passthrough";
/// Function: module attribute values control flow was folded on: {path =
/// value} (the exported code checks them).
inline constexpr llvm::StringLiteral kAssumesAttrName = "memopt.assumes";
/// Function: control-flow decisions folded on tensor sizes (not only ranks
/// or dtypes), one string each naming it and where it is. A function
/// carrying it is valid only for its exact input shapes.
inline constexpr llvm::StringLiteral kShapeAssumesAttrName =
    "memopt.shape_assumes";

//===-- Set by the driver, read by the memory model ----------------------===//

/// Module or function: "resident" or "allocated" (.grad buffers).
inline constexpr llvm::StringLiteral kGradBuffersAttrName =
    "memopt.grad_buffers";
/// Module or function: how many data-parallel processes train the model
/// (i64, absent: one). Each holds DistributedDataParallel's gradient
/// buckets beside its parameters.
inline constexpr llvm::StringLiteral kWorldSizeAttrName = "memopt.world_size";
/// Module or function: "cpu" or "cuda", where training runs.
inline constexpr llvm::StringLiteral kTrainingDeviceAttrName = "memopt.device";
/// Module or function: module paths whose outputs the user asserts hold
/// only 0 and 1 (`--assume-binary`).
inline constexpr llvm::StringLiteral kAssumeBinaryAttrName =
    "memopt.assume_binary";

//===-- Set by the passes
//--------------------------------------------------===//

/// Function: the predicted peak before any memopt transformation (set by
/// the first pass that changes what autograd saves); budgets given in
/// percent refer to it.
inline constexpr llvm::StringLiteral kUnplannedPeakAttrName =
    "memopt.unplanned_peak_bytes";
/// Function: the budget that applies to it (its own memopt.budget, else
/// the option's) in bytes, resolved against memopt.unplanned_peak_bytes by
/// the same step (memopt-stamp-baseline); absent without a budget.
inline constexpr llvm::StringLiteral kBudgetBytesAttrName =
    "memopt.budget_bytes";
/// Function: the planner's summary (baseline, budget, planned peak, ...).
inline constexpr llvm::StringLiteral kPlanAttrName = "memopt.plan";
/// Function: memopt-schedule-prefetch's summary of offload transfers.
inline constexpr llvm::StringLiteral kPrefetchScheduleAttrName =
    "memopt.prefetch_schedule";
/// Checkpoint region: why it was chosen, and the bytes it frees.
inline constexpr llvm::StringLiteral kRegionReasonAttrName = "memopt.reason";
inline constexpr llvm::StringLiteral kSavedBytesAvoidedAttrName =
    "memopt.saved_bytes_avoided";
/// Function made by memopt-specialize-signatures: the method it specializes,
/// and (on the generic fallback) the function it generalizes.
inline constexpr llvm::StringLiteral kOriginalMethodAttrName =
    "memopt.original_method";
inline constexpr llvm::StringLiteral kGenericOfAttrName = "memopt.generic_of";

} // namespace mlir::memopt

#endif // MEMOPT_DIALECT_MEMOPTATTRNAMES_H
