//===- CheckpointReplay.h - Forward state replayed by the recompute -*- C++
//-*-=//
//
// Private to the runtime. What the forward ran under, beyond its inputs:
// generator states (only when the graph draws random numbers) and autocast
// settings. The recompute runs under the same, and the caller's state is
// restored afterwards, so the step as a whole draws exactly what eager would.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_CHECKPOINTREPLAY_H
#define MEMOPT_LIB_RUNTIME_CHECKPOINTREPLAY_H

#include "memopt/Runtime/TorchCompat.h"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace memopt::runtime {

struct ForwardState {
  bool hasRng = false;
  at::Tensor cpuRng;
  std::vector<std::pair<c10::Device, at::Tensor>> deviceRng;
  compat::AutocastState autocastCpu, autocastCuda;

  /// Captures the autocast settings, and with `rng` the CPU generator and the
  /// default generator of every CUDA device among `inputs`.
  static ForwardState capture(at::TensorList inputs, bool rng);
};

/// Puts a ForwardState in place for its lifetime, restoring what it replaced.
/// Also turns the autocast weight cache off: a cast cached while a region
/// runs without grad would otherwise be reused by later code that needs grad.
class ReplayGuard {
public:
  explicit ReplayGuard(const ForwardState &state);
  ~ReplayGuard();
  ReplayGuard(const ReplayGuard &) = delete;
  ReplayGuard &operator=(const ReplayGuard &) = delete;

private:
  ForwardState saved_;
  bool cacheWasEnabled_;
};

/// Only the autocast-cache part of ReplayGuard, for the forward run.
class AutocastCacheOff {
public:
  AutocastCacheOff();
  ~AutocastCacheOff();
  AutocastCacheOff(const AutocastCacheOff &) = delete;
  AutocastCacheOff &operator=(const AutocastCacheOff &) = delete;

private:
  bool wasEnabled_;
};

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_CHECKPOINTREPLAY_H
