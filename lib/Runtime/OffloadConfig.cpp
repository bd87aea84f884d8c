//===- OffloadConfig.cpp - Offload settings, counters and their ops -------===//

#include "OffloadInternal.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <mutex>

namespace memopt::runtime {
namespace {
std::mutex gConfigMutex;
OffloadConfig gConfig;
std::atomic<bool> gSimulate{false};
} // namespace

OffloadCounters &offloadCounters() {
  static OffloadCounters counters;
  return counters;
}

void setOffloadConfig(const OffloadConfig &config) {
  TORCH_CHECK(config.poolBytes >= 0, "memopt::set_offload_config: pool_bytes ",
              "must be >= 0, got ", config.poolBytes);
  TORCH_CHECK(config.prefetchDepth >= 0, "memopt::set_offload_config: ",
              "prefetch_depth must be >= 0, got ", config.prefetchDepth);
  {
    std::lock_guard<std::mutex> lock(gConfigMutex);
    gConfig = config;
  }
  setHostPoolLimit(config.poolBytes);
}

OffloadConfig offloadConfig() {
  std::lock_guard<std::mutex> lock(gConfigMutex);
  return gConfig;
}

void setOffloadSimulation(bool enabled) { gSimulate = enabled; }
bool offloadSimulation() { return gSimulate; }

OffloadStats offloadStats() {
  OffloadCounters &c = offloadCounters();
  OffloadStats s;
  s.offloadedTensors = c.tensors;
  s.offloadedBytes = c.bytes;
  s.poolFallbacks = c.fallbacks;
  s.prefetchedAhead = c.prefetchedAhead;
  s.poolReservedBytes = hostPoolReservedBytes();
  s.poolInUseBytes = hostPoolInUseBytes();
  return s;
}

void resetOffloadStats() {
  OffloadCounters &c = offloadCounters();
  c.tensors = 0;
  c.bytes = 0;
  c.fallbacks = 0;
  c.prefetchedAhead = 0;
}

namespace {

void setOffloadConfigOp(int64_t poolBytes, int64_t prefetchDepth) {
  setOffloadConfig(OffloadConfig{poolBytes, prefetchDepth});
}

std::vector<int64_t> offloadStatsOp() {
  OffloadStats s = offloadStats();
  return {s.offloadedTensors, s.offloadedBytes,    s.poolFallbacks,
          s.prefetchedAhead,  s.poolReservedBytes, s.poolInUseBytes};
}

bool unifiedMemorySupportedOp() { return unifiedMemorySupported(); }

} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  using namespace memopt::runtime;
  m.def("set_offload_config(int pool_bytes, int prefetch_depth) -> ()",
        &setOffloadConfigOp);
  m.def("offload_stats() -> int[]", &offloadStatsOp);
  m.def("reset_offload_stats() -> ()", &resetOffloadStats);
  m.def("_set_offload_simulation(bool enabled) -> ()", &setOffloadSimulation);
  m.def("unified_memory_supported() -> bool", &unifiedMemorySupportedOp);
}
