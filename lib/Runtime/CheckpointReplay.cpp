//===- CheckpointReplay.cpp - Stash and replay RNG and autocast state -----===//
//
// Generators are reached through the device-generic
// at::globalContext().defaultGenerator(device), so no CUDA header is needed.
//
//===----------------------------------------------------------------------===//

#include "CheckpointReplay.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>

#include <mutex>

namespace memopt::runtime {
namespace {

at::Tensor getState(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void setState(at::Generator gen, const at::Tensor &state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

void apply(const ForwardState &s) {
  if (s.hasRng) {
    setState(at::detail::getDefaultCPUGenerator(), s.cpuRng);
    for (const auto &[device, state] : s.deviceRng)
      setState(at::globalContext().defaultGenerator(device), state);
  }
  compat::setAutocastState(c10::DeviceType::CPU, s.autocastCpu);
  compat::setAutocastState(c10::DeviceType::CUDA, s.autocastCuda);
}

} // namespace

ForwardState ForwardState::capture(at::TensorList inputs, bool rng) {
  ForwardState s;
  s.autocastCpu = compat::getAutocastState(c10::DeviceType::CPU);
  s.autocastCuda = compat::getAutocastState(c10::DeviceType::CUDA);
  if (!rng)
    return s;
  s.hasRng = true;
  s.cpuRng = getState(at::detail::getDefaultCPUGenerator());
  for (const at::Tensor &t : inputs) {
    if (!t.is_cuda())
      continue;
    c10::Device device = t.device();
    bool seen = false;
    for (const auto &entry : s.deviceRng)
      seen |= entry.first == device;
    if (!seen)
      s.deviceRng.emplace_back(
          device, getState(at::globalContext().defaultGenerator(device)));
  }
  return s;
}

ReplayGuard::ReplayGuard(const ForwardState &state)
    : cacheWasEnabled_(at::autocast::is_autocast_cache_enabled()) {
  // Save the caller's state for exactly what `state` will overwrite.
  saved_.autocastCpu = compat::getAutocastState(c10::DeviceType::CPU);
  saved_.autocastCuda = compat::getAutocastState(c10::DeviceType::CUDA);
  if (state.hasRng) {
    saved_.hasRng = true;
    saved_.cpuRng = getState(at::detail::getDefaultCPUGenerator());
    for (const auto &entry : state.deviceRng)
      saved_.deviceRng.emplace_back(
          entry.first,
          getState(at::globalContext().defaultGenerator(entry.first)));
  }
  at::autocast::set_autocast_cache_enabled(false);
  apply(state);
}

ReplayGuard::~ReplayGuard() {
  try {
    apply(saved_);
    at::autocast::set_autocast_cache_enabled(cacheWasEnabled_);
  } catch (const std::exception &) {
    // Only reachable if a generator rejects its own earlier state.
  }
}

AutocastCacheOff::AutocastCacheOff()
    : wasEnabled_(at::autocast::is_autocast_cache_enabled()) {
  at::autocast::set_autocast_cache_enabled(false);
}

AutocastCacheOff::~AutocastCacheOff() {
  at::autocast::set_autocast_cache_enabled(wasEnabled_);
}

} // namespace memopt::runtime
