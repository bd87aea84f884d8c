//===- ProbeSupport.h - running kernels under the counting allocator -*- C++
//-*-===//
//
// What every probe (convolutions, recurrent layers) does the same way: the
// element type, the thread count training uses, and the counting CPU
// allocator's high-water mark around a piece of work. LibTorch side only.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_PROBESUPPORT_H
#define MEMOPT_LIB_PROBE_PROBESUPPORT_H

#include "KernelMarks.h"

#include "memopt/Conversion/ThreadCountScope.h"
#include "memopt/Runtime/MemoryStats.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

namespace memopt::probe {

inline at::ScalarType getScalarType(ElementKind element) {
  switch (element) {
  case ElementKind::F32:
    return at::kFloat;
  case ElementKind::F64:
    return at::kDouble;
  case ElementKind::F16:
    return at::kHalf;
  case ElementKind::BF16:
    return at::kBFloat16;
  }
  return at::kFloat;
}

/// Runs the kernels with the intra-op thread count training uses, and
/// restores the compiler's afterwards.
using ThreadCountScope = ::mlir::memopt::ThreadCountScope;

/// Bytes the counting allocator holds now.
inline int64_t getLiveBytes() {
  return ::memopt::runtime::memoryStats().currentBytes;
}

/// Peak bytes above the current ones while `body` runs (what it leaves
/// allocated counts).
template <typename Body> int64_t measurePeak(Body &&body) {
  using namespace ::memopt::runtime;
  int64_t before = memoryStats().currentBytes;
  resetPeakMemoryStats();
  body();
  return memoryStats().peakBytes - before;
}

} // namespace memopt::probe

#endif // MEMOPT_LIB_PROBE_PROBESUPPORT_H
