//===- MemoryStats.h - Counting CPU allocator -------------------*- C++ -*-===//
//
// CPU tests and benchmarks measure training peak memory the way
// torch.cuda.max_memory_allocated does on a GPU: an opt-in allocator wraps the
// current CPU allocator and counts the bytes requested through it.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_MEMORYSTATS_H
#define MEMOPT_RUNTIME_MEMORYSTATS_H

#include <cstdint>

namespace memopt::runtime {

struct MemoryStats {
  int64_t currentBytes = 0; // bytes live in counted allocations
  int64_t peakBytes = 0;    // high-water mark of currentBytes since reset
};

/// Installs the counting allocator in front of the current CPU allocator.
/// Idempotent. Only allocations made afterwards are counted; freeing a tensor
/// allocated before never changes the counts.
void enableMemoryStats();
bool memoryStatsEnabled();
MemoryStats memoryStats();
/// Sets the peak to the current value (like
/// torch.cuda.reset_peak_memory_stats).
void resetPeakMemoryStats();

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_MEMORYSTATS_H
