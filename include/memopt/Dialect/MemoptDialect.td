//===- MemoptDialect.td - The memopt dialect ---------------*- tablegen -*-===//
//
// The memopt dialect holds a TorchScript training graph (generic operator
// calls, parameters, buffers) together with the memory decisions the planner
// takes on it: checkpoint regions, compression, offload and specialization.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_DIALECT_TD
#define MEMOPT_DIALECT_TD

include "mlir/IR/OpBase.td"

def Memopt_Dialect : Dialect {
  let name = "memopt";
  let cppNamespace = "::mlir::memopt";
  let summary = "Training-memory planning for TorchScript graphs";
  let description = [{
    `memopt` carries a TorchScript graph exactly enough to regenerate it
    (`memopt.op`, `memopt.param`, `memopt.buffer`), and the operations that
    change what autograd keeps alive between forward and backward:
    `memopt.checkpoint` regions recomputed in backward, `memopt.compress` /
    `memopt.decompress` for binary (spike) and small-integer tensors,
    `memopt.offload` / `memopt.prefetch` / `memopt.wait` for host memory, and
    `memopt.dispatch` for one plan per input signature.
  }];
  // The attributes memopt's importer, passes and driver put on modules,
  // functions and checkpoint regions, each with its type. The generated
  // helpers (`MemoptDialect::PlanAttrHelper`, ...) hold the names
  // (memopt.<name>); the dialect verifies every memopt.* attribute against
  // this list (MemoptDialect.cpp). What each one means: MemoptAttrNames.h.
  let discardableAttrs = (ins
    "::mlir::StringAttr":$source,
    "::mlir::memopt::SignatureAttr":$signature,
    "::mlir::StringAttr":$budget,
    "::mlir::UnitAttr":$passthrough,
    "::mlir::DictionaryAttr":$assumes,
    "::mlir::ArrayAttr":$shape_assumes,
    "::mlir::Attribute":$bound_default,
    "::mlir::StringAttr":$grad_buffers,
    "::mlir::IntegerAttr":$world_size,
    "::mlir::IntegerAttr":$intra_op_threads,
    "::mlir::DictionaryAttr":$cost_model,
    "::mlir::StringAttr":$device,
    "::mlir::ArrayAttr":$assume_binary,
    "::mlir::IntegerAttr":$unplanned_peak_bytes,
    "::mlir::IntegerAttr":$budget_bytes,
    "::mlir::memopt::PlanSummaryAttr":$plan,
    "::mlir::memopt::PrefetchScheduleAttr":$prefetch_schedule,
    "::mlir::StringAttr":$reason,
    "::mlir::IntegerAttr":$saved_bytes_avoided,
    "::mlir::IntegerAttr":$lowers_peak_by,
    "::mlir::StringAttr":$original_method,
    "::mlir::FlatSymbolRefAttr":$generic_of
  );
  let hasOperationAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

class Memopt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Memopt_Dialect, mnemonic, traits>;

#endif // MEMOPT_DIALECT_TD
