//===- MemoryStatsOps.cpp - memopt::memory_stats and friends --------------===//
//
// The counting allocator (MemoryStats.cpp, shared with the compiler's kernel
// probe) as TorchScript ops, for tests and benchmarks in Python.
//
//===----------------------------------------------------------------------===//
#include "memopt/Runtime/MemoryStats.h"

#include <torch/library.h>

#include <vector>

namespace memopt::runtime {
namespace {
std::vector<int64_t> memoryStatsOp() {
  MemoryStats s = memoryStats();
  return {s.currentBytes, s.peakBytes};
}
} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  using namespace memopt::runtime;
  m.def("enable_memory_stats() -> ()", &enableMemoryStats);
  m.def("memory_stats_enabled() -> bool", &memoryStatsEnabled);
  m.def("memory_stats() -> int[]", &memoryStatsOp);
  m.def("reset_peak_memory_stats() -> ()", &resetPeakMemoryStats);
}
