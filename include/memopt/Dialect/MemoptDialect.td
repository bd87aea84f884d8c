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
