//===- OperatorCatalog.h - what the analyses know of each operator -*- C++ -*-===//
//
// One row per TorchScript operator (lib/Analysis/OperatorCatalog.def) with
// every hand-kept fact the analyses need: its cost class and FLOP formula,
// how it propagates binary (0/1) values, what it does to strides, its
// kernel-workspace model and the simulator's rule for it. What autograd
// saves is not here: it is derived from PyTorch at build time (the
// saved-tensor table), keyed by the same names. Adding an operator is one
// row here (and, when it is differentiable, one spec in
// scripts/saved_tensor_ops.py); an operator without a row gets the
// defaults below and, without a saved-tensor row, is reported as unknown.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_OPERATORCATALOG_H
#define MEMOPT_ANALYSIS_OPERATORCATALOG_H

#include "memopt/Analysis/CostModel.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::memopt {

/// How CostModel counts an operator's floating-point operations.
enum class FlopRule : uint8_t {
  None,                  // views, metadata, copies (bytes only)
  PerOutput,             // flopsPerElement x output elements
  PerInput,              // flopsPerElement x elements of operand 0
  Convolution,           // 2 x output x (input channels per group x kernel)
  TransposedConvolution, // 2 x input x (output channels per group x kernel)
  Matmul,                // 2 x output x last dim of operand 0
  MatmulAnyRank,         // as Matmul; batched when both operands are >= 3-d
  AddMatmul,             // as Matmul with the left factor at operand 1 (addmm)
  Attention,             // q k^T and its product with v: 4 x |q| x key length
  Recurrent,             // 2 x rows of the input x elements of the 2-d weights
                         // (every step's gate products, every layer)
};

/// How BinaryValueAnalysis propagates "holds only 0 and 1".
enum class BinaryRule : uint8_t {
  None,          // not binary (sigmoid, x * 0.5, sums of binaries, ...)
  Subset,        // result 0 holds values of operand 0 (views, relu); may alias
  SubsetCopy,    // as Subset, always a new tensor (casts, max-pooling, amax)
  Always,        // 0/1 whatever the inputs (zeros, bernoulli)
  AllOperands,   // binary when every tensor operand is (cat, and, or)
  Mul,           // AllOperands; a constant factor of 0 or 1 keeps operand 0
  Where,         // the two values chosen from: operands 1 and 2
  MaxMin,        // elementwise of two tensors: AllOperands; else SubsetCopy
  Heaviside,     // the value taken at 0: operand 1
  OneMinus,      // rsub(b, 1): 1 - b
  Add,           // 1 + (-b), and hard + (soft - soft.detach())
  MaskedFill,    // operand 0 with a constant or operand-2 fill
  FillAt1,       // constant fill value at argument 1 (full, fill_)
  FillAt2,       // constant fill value at argument 2 (full_like, new_full)
  ConstantPad,   // operand 0 padded with a constant (0 or 1 keeps it)
};

/// What the result's strides are, relative to operand 0 (MemorySimulator:
/// which values are non-contiguous, which fold into matmul with a copy).
enum class LayoutRule : uint8_t {
  Inherit,         // elementwise: the layout of operand 0
  KeepStrides,     // clone: operand 0's strides, a dense new tensor
  Dense,           // contiguous, reshape, flatten: contiguous
  Transpose,       // transpose(dim0, dim1): args 1 and 2
  Permute,         // permute(dims): arg 1
  MatrixTranspose, // t()
  Strided,         // expand, as_strided, unfold: never contiguous
  SliceDimAt1,     // select/slice/narrow/unbind: non-contiguous unless dim
                   // (arg 1) is 0
  SliceDimAt2,     // chunk, split: dim at arg 2
  BatchFirstAt8,   // recurrent layers: result 0 is a transpose of the
                   // time-major output when batch_first (arg 8) is true
};

/// Transient kernel buffers (KernelWorkspace).
enum class WorkspaceRule : uint8_t {
  None,
  Convolution,        // conv1d/conv2d: groups at arg 6
  GeneralConvolution, // convolution/_convolution: transposed arg 6, groups 8
  BatchNorm,          // training batch-norm's backward temporary
  LayerNorm,          // copies a non-contiguous input
  Recurrent,          // measured only (the kernel probe); the backward's
                      // gradient mask: input (arg 0), parameters (arg 2)
  Measured,           // run alone by the kernel probe, as an operator the
                      // table lacks is: which kernel runs and the buffers
                      // it makes depend on the build, the arguments and the
                      // threads (CPU attention: flash or math)
};

/// The simulator's rule for what an op does to storages.
enum class SimulatorRule : uint8_t {
  Default,        // saved-tensor table row (or the unknown-op bound)
  ListConstruct,  // a list of its operands' storages
  TupleConstruct, // as ListConstruct; typed !memopt.script (tuples, dicts)
  Append,         // the list keeps the element alive
  UncheckedCast,  // Optional[Tensor] -> Tensor: the same value
  Unpack,         // the elements of a list or tuple, in order
  Index,          // one element, at the constant index arg 1
  Constant,       // a tensor constant: lives in the graph
  Dropout,        // identity when p = 0 / eval; noise can be saved as bits
  IdentityDropout // identity when p = 0 / eval (other dropout forms)
};

/// Which saved-tensor row an op takes: its name, or a variant by arguments.
enum class SavedRowKey : uint8_t {
  Name,
  DropoutAt4, // "[dropout]" unless the constant dropout_p (arg 4) is 0
};

struct OperatorInfo {
  StringRef name;
  CostClass cost;
  FlopRule flops;
  double flopsPerElement;
  BinaryRule binary;
  LayoutRule layout;
  WorkspaceRule workspace;
  SimulatorRule simulator;
  SavedRowKey savedRow;

  bool isPermutation() const {
    return layout == LayoutRule::Transpose || layout == LayoutRule::Permute ||
           layout == LayoutRule::MatrixTranspose;
  }
};

/// The catalog row of `name`; for an operator without one, the defaults:
/// an elementwise op of one FLOP per element that keeps its input's layout
/// (a prim:: op: free), no binary rule, no workspace.
const OperatorInfo &lookupOperator(StringRef name);

/// Whether `name` has a row of its own.
bool isCataloged(StringRef name);

/// Every row, in the order of the .def file (for docs and tests).
ArrayRef<OperatorInfo> getOperatorCatalog();

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_OPERATORCATALOG_H
