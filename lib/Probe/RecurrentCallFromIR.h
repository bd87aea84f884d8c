//===- RecurrentCallFromIR.h - a recurrent memopt.op as a probe call -*- C++
//-*-===//
#ifndef MEMOPT_LIB_PROBE_RECURRENTCALLFROMIR_H
#define MEMOPT_LIB_PROBE_RECURRENTCALLFROMIR_H

#include "RecurrentCall.h"

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir::memopt {

/// True for aten::lstm / gru / rnn_tanh / rnn_relu.
bool isRecurrentOperator(StringRef name);

/// The call `op` makes (the `.input` overloads: a padded sequence), when
/// every shape and constant is known; `grads` holds the values that will
/// require grad in training.
std::optional<::memopt::probe::RecurrentCall>
getRecurrentCall(TorchOp op, const DenseSet<Value> &grads, int threads);

/// Records what the probe measured on `op`: high_water (forward and the
/// call's gradient mask) and, when the call records a graph,
/// measured_saves (bytes kept, and which operands).
void setRecurrentMarks(TorchOp op, const ::memopt::probe::RecurrentCall &call,
                       const ::memopt::probe::KernelMarks &marks);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_PROBE_RECURRENTCALLFROMIR_H
