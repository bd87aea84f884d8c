//===- UnknownOperatorProbe.h - operators the table does not know -*- C++ -*-//
#ifndef MEMOPT_LIB_PROBE_UNKNOWNOPERATORPROBE_H
#define MEMOPT_LIB_PROBE_UNKNOWNOPERATORPROBE_H

#include "GraphRun.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::memopt {

enum class UnknownOperatorProbe { NotApplicable, Measured, Reused, Skipped };

/// For an ATen operator the saved-tensor table has no row for (the memory
/// model would guess that it saves every operand and result), or one the
/// operator catalog marks `WorkspaceRule::Measured`, on
/// statically shaped floating-point operands of which some will require
/// grad: runs it alone, forward and backward, on `threads` intra-op threads
/// and sets its `measured_saves` and `high_water`. `seen` holds the marks
/// of calls measured earlier in this compile, by call. Skipped when the op
/// cannot be written alone, raises at made-up values, or returns a view or
/// a shape other than the IR's.
UnknownOperatorProbe probeUnknownOperator(TorchOp op,
                                          const DenseSet<Value> &grads,
                                          int threads,
                                          llvm::StringMap<GraphRunMarks> &seen);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_PROBE_UNKNOWNOPERATORPROBE_H
