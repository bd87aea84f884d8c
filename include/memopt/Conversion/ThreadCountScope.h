//===- ThreadCountScope.h - Intra-op threads for some work ------*- C++ -*-===//
//
// The kernel probe runs kernels with the thread count training uses (they
// pick the kernels); the exporter's forward check with every core (it only
// compares two runs of the same kernels). Only code that links LibTorch
// includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_THREADCOUNTSCOPE_H
#define MEMOPT_CONVERSION_THREADCOUNTSCOPE_H

#include <ATen/Parallel.h>

namespace mlir::memopt {

/// Sets LibTorch's intra-op thread count (when `threads` > 0) and restores
/// the previous one when it ends.
class ThreadCountScope {
public:
  explicit ThreadCountScope(int threads) : saved(at::get_num_threads()) {
    if (threads > 0 && threads != saved)
      at::set_num_threads(threads);
  }
  ~ThreadCountScope() {
    if (at::get_num_threads() != saved)
      at::set_num_threads(saved);
  }
  ThreadCountScope(const ThreadCountScope &) = delete;
  ThreadCountScope &operator=(const ThreadCountScope &) = delete;

private:
  int saved;
};

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_THREADCOUNTSCOPE_H
