//===- OffloadInternal.h - Pools, streams, counters for offload -*- C++ -*-===//
//
// Private to the runtime. Everything here uses c10's device-generic stream
// and event API (no CUDA headers); the CUDA runtime calls managed memory
// needs live behind the extern "C" functions of cuda/UnifiedMemory.cu.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_OFFLOADINTERNAL_H
#define MEMOPT_LIB_RUNTIME_OFFLOADINTERNAL_H

#include "memopt/Runtime/Offload.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <atomic>
#include <memory>

namespace memopt::runtime {

// --- Counters (OffloadConfig.cpp) ------------------------------------------
struct OffloadCounters {
  std::atomic<int64_t> tensors{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> fallbacks{0};
  std::atomic<int64_t> prefetchedAhead{0};
};
OffloadCounters &offloadCounters();

// --- Streams (OffloadStreams.cpp) -------------------------------------------
c10::Stream currentStream(const c10::Device &device);
/// One side stream per device, so that every offload copy of a device is
/// ordered after the previous ones.
c10::Stream sideStream(const c10::Device &device);
/// Makes `waiter` wait for the work queued on `producer` so far.
void streamWaitsFor(const c10::Stream &waiter, const c10::Stream &producer);
/// Tells the device allocator that `t`'s memory is in use on `stream`, so it
/// is not handed out again before that stream's queued work is done.
void recordTensorOnStream(const at::Tensor &t, const c10::Stream &stream);
/// An event recorded on `stream` now.
std::unique_ptr<c10::Event> recordEvent(const c10::Stream &stream);

/// Strides that cover the storage densely: `t`'s own when they do (keeps
/// channels-last and other permuted layouts, so the recompute runs the same
/// kernels), else contiguous ones.
std::vector<int64_t> denseStridesFor(const at::Tensor &t);

/// Whether offloading `t` to `target` moves nothing (it stays as it is): a
/// CPU tensor, unless host offload is simulated, or an empty one.
bool offloadKeepsInPlace(const at::Tensor &t, OffloadTarget target);

// --- Pinned host pool (OffloadPool.cpp) -------------------------------------
/// A pool buffer lent to one saved tensor; returns to the pool when the last
/// reference goes. `lastUser`, if set, is the stream whose queued work must
/// finish before the buffer is lent again.
struct HostLease {
  at::Tensor bytes; // 1-D uint8 view of exactly the requested size
  size_t bufferIndex = 0;
  std::optional<c10::Stream> lastUser;
  ~HostLease();
};

/// A buffer of at least `nbytes` (pinned unless `pinned` is false), or null
/// when the pool's bound leaves no room. A returned buffer is safe to write on
/// `user` (it waits for the buffer's previous user).
std::shared_ptr<HostLease> acquireHostBuffer(int64_t nbytes, bool pinned,
                                             std::optional<c10::Stream> user);
void setHostPoolLimit(int64_t bytes);
int64_t hostPoolReservedBytes();
int64_t hostPoolInUseBytes();

// --- Unified (managed) memory (UnifiedMemory.cpp) --------------------------
/// An uninitialized tensor like `t` (sizes, dense strides, dtype, device) in
/// CUDA managed memory from the managed pool. Throws if unsupported.
at::Tensor emptyManagedLike(const at::Tensor &t);
/// cudaMemAdvise(SetPreferredLocation) + cudaMemPrefetchAsync of `t`'s
/// memory to `toHost` ? the host : its device, queued on `stream`.
void migrateManaged(const at::Tensor &t, bool toHost,
                    const c10::Stream &stream);

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_OFFLOADINTERNAL_H
