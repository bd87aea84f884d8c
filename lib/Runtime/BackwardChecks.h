//===- BackwardChecks.h - What every memopt backward refuses ----*- C++ -*-===//
//
// Private to the runtime. The backward passes of memopt's autograd Functions
// compute gradients with plain ATen calls under grad mode off, so they
// cannot build a graph for a second derivative.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_BACKWARDCHECKS_H
#define MEMOPT_LIB_RUNTIME_BACKWARDCHECKS_H

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

namespace memopt::runtime {

/// Raises "memopt::<op> does not support double backward
/// (create_graph=True)": inside backward, grad mode is on exactly then.
inline void refuseDoubleBackward(const char *op) {
  TORCH_CHECK(!at::GradMode::is_enabled(), "memopt::", op,
              " does not support double backward (create_graph=True)");
}

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_BACKWARDCHECKS_H
