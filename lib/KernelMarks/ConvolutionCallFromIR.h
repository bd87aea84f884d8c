//===- ConvolutionCallFromIR.h - a convolution memopt.op as a probe call -===//
//
// What the kernel probe, and the marks measured on another device, need of
// the IR: the call a convolution makes at its static shapes, and which
// gradients training asks of it.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_CONVOLUTIONCALLFROMIR_H
#define MEMOPT_LIB_PROBE_CONVOLUTIONCALLFROMIR_H

#include "ConvolutionCall.h"

#include "memopt/Dialect/MemoptOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir::memopt {

/// True for the ATen convolutions the probe runs (conv1d/2d/3d,
/// conv_transpose1d/2d/3d, convolution, _convolution).
bool isConvolutionOperator(StringRef name);

/// The call `op` makes, when every shape and argument is known; `threads`
/// is part of its key (0 for a device without intra-op threads).
std::optional<::memopt::probe::ConvolutionCall> getConvolutionCall(TorchOp op,
                                                                   int threads);

/// Values that will require grad in training: trainable parameters and
/// what is computed from them (lists and region values included).
DenseSet<Value> getGradValues(ModuleOp module);

/// The gradient mask the model will ask this convolution's backward for
/// (bit 0: input, bit 1: weight and bias); 0 when none or when the bias's
/// differs from the weight's (the probe measures them together).
unsigned getConvolutionGradientMask(TorchOp op, const DenseSet<Value> &grads);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_PROBE_CONVOLUTIONCALLFROMIR_H
