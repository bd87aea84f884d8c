//===- Offload.h - Saved tensors off the device and back ---------*- C++
//-*-===//
//
// Checkpoint regions may save their inputs off the accelerator: into a
// bounded pool of pinned host buffers (copied on a side stream, prefetched
// back ahead of need in backward), or into CUDA managed memory that is
// migrated to the host after forward and back before backward (the policy of
// Megatron's unified-memory module). CPU tensors are already on the host:
// both policies keep them as they are.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_OFFLOAD_H
#define MEMOPT_RUNTIME_OFFLOAD_H

#include "memopt/Runtime/LaunchStubs.h"

#include <ATen/ATen.h>
#include <optional>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace memopt::runtime {

/// MemScale's async_config: how much host memory the pinned pool may hold
/// and how many regions ahead backward prefetches.
struct OffloadConfig {
  int64_t poolBytes = int64_t(4) << 30;
  int64_t prefetchDepth = 2;
};

void setOffloadConfig(const OffloadConfig &config);
OffloadConfig offloadConfig();

/// Testing aid: treat CPU tensors under `offload:host` as if they lived on a
/// device, copying them into (unpinned) pool buffers and back, so the pool,
/// its bound and the prefetch order can be exercised without a GPU.
void setOffloadSimulation(bool enabled);
bool offloadSimulation();

struct OffloadStats {
  int64_t offloadedTensors = 0; // tensors moved off their device
  int64_t offloadedBytes = 0;
  int64_t poolFallbacks = 0;   // tensors kept on device: pool exhausted
  int64_t prefetchedAhead = 0; // groups prefetched before their backward
  int64_t poolReservedBytes = 0;
  int64_t poolInUseBytes = 0;
};
OffloadStats offloadStats();
void resetOffloadStats(); // counters only; the pool itself is untouched

/// Whether `offload:unified` can work for tensors on `device` (the current
/// CUDA device when none is given): a CUDA build and a device with
/// concurrent managed-memory access.
bool unifiedMemorySupported(std::optional<c10::Device> device = std::nullopt);
/// Throws `memopt: unified memory unsupported: <reason>` unless supported.
void checkUnifiedMemorySupported(const c10::Device &device);

enum class OffloadTarget { Host, Unified };

/// The offloaded inputs of one region invocation. Forward adds tensors (their
/// copies start at once on a side stream) and seals the group, which queues
/// it for backward; the region's backward prefetches it and the next groups
/// (prefetch depth), then takes the tensors back on the current stream.
class OffloadGroup : public std::enable_shared_from_this<OffloadGroup> {
public:
  OffloadGroup();
  ~OffloadGroup();

  /// Starts moving `t` off its device and returns its slot. A CPU tensor (no
  /// simulation), or one the pinned pool has no room for, is kept as is.
  size_t add(const at::Tensor &t, OffloadTarget target);
  /// Moves `tensors` (contiguous, on one device, as `site` was made for) to
  /// one host block with one call of the site's launcher, and brings them
  /// back with one (memopt_stub_offload_site). Returns their slots, or
  /// nothing when the pinned pool has no room for the block (then add()
  /// each). Call before any add().
  std::optional<std::vector<size_t>>
  addSite(const memopt_stub_offload_site &site,
          const std::vector<at::Tensor> &tensors);
  /// Prefetch when the backward of region `name` starts (a compiled
  /// schedule) instead of by the configured depth. Call before seal().
  void setTrigger(std::string name);
  const std::string &trigger() const { return trigger_; }
  /// Queues the group for backward prefetching; call after the last add.
  void seal();
  /// Starts bringing every slot back (asynchronous). Returns false if that
  /// had already started.
  bool prefetch();
  /// The tensor of `slot`, on its device, ready for use on the current
  /// stream. Prefetches first if that has not happened yet.
  at::Tensor take(size_t slot);
  /// Frees host buffers and managed memory; the group cannot be used again.
  void release();

  struct Slot;

private:
  bool prefetchLocked();
  bool prefetchSiteLocked();
  std::mutex mutex_;
  std::vector<std::unique_ptr<Slot>> slots_;
  bool prefetched_ = false;
  bool sealed_ = false;
  std::string trigger_;
  const memopt_stub_offload_site *site_ = nullptr; // slots [0, count)
  bool handedToTrigger_ = false; // guarded by the global order mutex
  friend std::vector<std::weak_ptr<OffloadGroup>>
  takeScheduledGroups(const std::string &name, const OffloadGroup *own);
};

/// Called as a region's backward starts: prefetches `current` and the next
/// `prefetchDepth` sealed groups without a trigger in backward (reverse
/// forward) order.
void prefetchForBackward(const std::shared_ptr<OffloadGroup> &current);

/// Called as region `name` runs forward (its own group is `own`, or null):
/// hands over the sealed groups whose trigger is `name` and that no earlier
/// run of `name` took, i.e. those of this forward pass. The caller
/// prefetches them as its backward starts.
std::vector<std::weak_ptr<OffloadGroup>>
takeScheduledGroups(const std::string &name, const OffloadGroup *own);

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_OFFLOAD_H
