//===- OffloadGroup.cpp - Offload after forward, prefetch before backward -===//
//
// Stream discipline (device tensors; a CPU tensor under simulation takes the
// same path with synchronous copies and no streams):
//   offload:  side waits for the compute stream, copies device -> host (or
//             into managed memory, then migrates it to the host), and the
//             source is recorded on the side stream so the caching allocator
//             does not reuse it before the copy has read it;
//   prefetch: the device buffer is allocated on the compute stream, the side
//             stream waits for it, copies host -> device (or migrates the
//             managed pages back) and records a "ready" event;
//   take:     the compute stream waits for "ready".
// All copies of one device share one side stream, so a pool buffer lent
// again is written only after the copy that last read it.
//
//===----------------------------------------------------------------------===//

#include "OffloadInternal.h"
#include "OffloadStubDispatch.h"

#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace memopt::runtime {

struct OffloadGroup::Slot {
  OffloadTarget target = OffloadTarget::Host;
  at::Tensor kept;                  // not offloaded: the tensor itself
  std::shared_ptr<HostLease> lease; // Host: the pool buffer
  at::Tensor offloaded;             // host view of the lease, or managed tensor
  at::Tensor restored;              // on the device again, after prefetch
  std::shared_ptr<c10::Event> ready; // one event may serve a whole site
  std::vector<int64_t> sizes, strides;
  at::TensorOptions options;
  bool onDevice = false; // device tensor (streams and events apply)
};

namespace {

// Sealed groups in forward order; backward walks it from the back. Entries
// are never locked (turned into owners) while gOrderMutex is held: dropping
// the last owner there would re-enter release() and deadlock.
struct OrderEntry {
  const OffloadGroup *raw;
  std::weak_ptr<OffloadGroup> weak;
};
std::mutex gOrderMutex;
std::vector<OrderEntry> gOrder;

at::Tensor hostView(const HostLease &lease, const at::Tensor &like,
                    const std::vector<int64_t> &strides) {
  return lease.bytes.view(like.scalar_type())
      .as_strided(like.sizes(), strides, 0);
}

} // namespace

bool offloadKeepsInPlace(const at::Tensor &t, OffloadTarget target) {
  bool simulate = t.device().is_cpu() && target == OffloadTarget::Host &&
                  offloadSimulation();
  return (t.device().is_cpu() && !simulate) || t.numel() == 0;
}

OffloadGroup::OffloadGroup() = default;

OffloadGroup::~OffloadGroup() { release(); }

size_t OffloadGroup::add(const at::Tensor &t, OffloadTarget target) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_INTERNAL_ASSERT(!sealed_, "OffloadGroup::add after seal");
  auto slot = std::make_unique<Slot>();
  slot->target = target;
  if (offloadKeepsInPlace(t, target)) {
    slot->kept = t; // already on the host: nothing to move
    slots_.push_back(std::move(slot));
    return slots_.size() - 1;
  }
  slot->onDevice = !t.device().is_cpu();
  slot->sizes = t.sizes().vec();
  slot->strides = denseStridesFor(t);
  slot->options = t.options();
  int64_t nbytes = t.numel() * static_cast<int64_t>(t.element_size());

  std::optional<c10::Stream> side;
  if (slot->onDevice) {
    side = sideStream(t.device());
    streamWaitsFor(*side, currentStream(t.device()));
  }
  if (target == OffloadTarget::Unified) {
    slot->offloaded = emptyManagedLike(t);
    {
      c10::StreamGuard guard(*side);
      slot->offloaded.copy_(t, /*non_blocking=*/true);
    }
    migrateManaged(slot->offloaded, /*toHost=*/true, *side);
  } else {
    slot->lease = acquireHostBuffer(nbytes, /*pinned=*/slot->onDevice, side);
    if (!slot->lease) {
      offloadCounters().fallbacks++;
      slot->kept = t;
      slots_.push_back(std::move(slot));
      return slots_.size() - 1;
    }
    slot->lease->lastUser = side;
    slot->offloaded = hostView(*slot->lease, t, slot->strides);
    if (side) {
      c10::StreamGuard guard(*side);
      slot->offloaded.copy_(t, /*non_blocking=*/true);
    } else {
      slot->offloaded.copy_(t);
    }
  }
  if (side)
    recordTensorOnStream(t, *side);
  stubs::countGenericCopy();
  offloadCounters().tensors++;
  offloadCounters().bytes += nbytes;
  slots_.push_back(std::move(slot));
  return slots_.size() - 1;
}

std::optional<std::vector<size_t>>
OffloadGroup::addSite(const memopt_stub_offload_site &site,
                      const std::vector<at::Tensor> &tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_INTERNAL_ASSERT(!sealed_ && slots_.empty() && !tensors.empty() &&
                            tensors.size() == static_cast<size_t>(site.count),
                        "OffloadGroup::addSite out of order");
  const at::Device device = tensors[0].device();
  const bool onDevice = !device.is_cpu();
  std::optional<c10::Stream> side;
  if (onDevice) {
    side = sideStream(device);
    streamWaitsFor(*side, currentStream(device));
  }
  std::shared_ptr<HostLease> lease =
      acquireHostBuffer(site.host_bytes, /*pinned=*/onDevice, side);
  if (!lease)
    return std::nullopt;
  lease->lastUser = side;
  std::vector<const void *> sources;
  for (const at::Tensor &t : tensors)
    sources.push_back(t.data_ptr());
  int err = site.offload(sources.data(), lease->bytes.data_ptr(),
                         stubs::offloadStreamFor(site, device));
  TORCH_CHECK(err == 0, "memopt: offload stub of region '", site.name,
              "' failed (error ", err, ")");
  stubs::countStubCopy();
  std::vector<size_t> indices;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor &t = tensors[i];
    auto slot = std::make_unique<Slot>();
    slot->target = OffloadTarget::Host;
    slot->onDevice = onDevice;
    slot->sizes = t.sizes().vec();
    slot->strides = t.strides().vec();
    slot->options = t.options();
    slot->lease = lease; // shared: the block returns with the last slot
    const memopt_stub_copy &copy = site.copies[i];
    slot->offloaded =
        lease->bytes.narrow(0, copy.offset, copy.numel * copy.element_size)
            .view(t.scalar_type())
            .as_strided(slot->sizes, slot->strides, 0);
    if (side)
      recordTensorOnStream(t, *side);
    offloadCounters().tensors++;
    offloadCounters().bytes += copy.numel * copy.element_size;
    slots_.push_back(std::move(slot));
    indices.push_back(slots_.size() - 1);
  }
  site_ = &site;
  return indices;
}

bool OffloadGroup::prefetchSiteLocked() {
  if (!site_)
    return false;
  const size_t count = static_cast<size_t>(site_->count);
  if (slots_.size() < count)
    return false; // released
  // All out, none back yet: one launcher call. Otherwise (a retained
  // graph's second backward took some already) slot by slot.
  for (size_t i = 0; i < count; ++i)
    if (!slots_[i]->offloaded.defined() || slots_[i]->restored.defined())
      return false;
  const Slot &first = *slots_[0];
  const c10::Device device = first.options.device();
  std::optional<c10::Stream> side;
  if (first.onDevice) {
    side = sideStream(device);
    // Allocated on the compute stream, written on the side stream.
    streamWaitsFor(*side, currentStream(device));
  }
  std::vector<void *> targets;
  for (size_t i = 0; i < count; ++i) {
    Slot &slot = *slots_[i];
    slot.restored = at::empty_strided(slot.sizes, slot.strides, slot.options);
    targets.push_back(slot.restored.data_ptr());
  }
  int err = site_->prefetch(first.lease->bytes.data_ptr(), targets.data(),
                            stubs::offloadStreamFor(*site_, device));
  TORCH_CHECK(err == 0, "memopt: prefetch stub of region '", site_->name,
              "' failed (error ", err, ")");
  stubs::countStubCopy();
  if (side) {
    std::shared_ptr<c10::Event> ready = recordEvent(*side);
    for (size_t i = 0; i < count; ++i) {
      recordTensorOnStream(slots_[i]->restored, *side);
      slots_[i]->ready = ready;
    }
  }
  return true;
}

void OffloadGroup::setTrigger(std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_INTERNAL_ASSERT(!sealed_, "OffloadGroup::setTrigger after seal");
  trigger_ = std::move(name);
}

void OffloadGroup::seal() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sealed_)
      return;
    sealed_ = true;
  }
  std::lock_guard<std::mutex> lock(gOrderMutex);
  gOrder.push_back(OrderEntry{this, weak_from_this()});
}

bool OffloadGroup::prefetch() {
  std::lock_guard<std::mutex> lock(mutex_);
  return prefetchLocked();
}

bool OffloadGroup::prefetchLocked() {
  if (prefetched_)
    return false;
  prefetched_ = true;
  bool siteDone = prefetchSiteLocked();
  for (size_t index = 0; index < slots_.size(); ++index) {
    if (siteDone && index < static_cast<size_t>(site_->count))
      continue;
    auto &slot = slots_[index];
    if (slot->kept.defined() || !slot->offloaded.defined() ||
        slot->restored.defined())
      continue;
    if (!slot->onDevice) { // simulation: synchronous copy back
      slot->restored =
          at::empty_strided(slot->sizes, slot->strides, slot->options);
      slot->restored.copy_(slot->offloaded);
      stubs::countGenericCopy();
      continue;
    }
    c10::Device device = slot->options.device();
    c10::Stream compute = currentStream(device);
    c10::Stream side = sideStream(device);
    if (slot->target == OffloadTarget::Unified) {
      streamWaitsFor(side, compute);
      migrateManaged(slot->offloaded, /*toHost=*/false, side);
      slot->restored = slot->offloaded;
    } else {
      // Allocated on the compute stream, written on the side stream.
      slot->restored =
          at::empty_strided(slot->sizes, slot->strides, slot->options);
      streamWaitsFor(side, compute);
      {
        c10::StreamGuard guard(side);
        slot->restored.copy_(slot->offloaded, /*non_blocking=*/true);
      }
      recordTensorOnStream(slot->restored, side);
    }
    stubs::countGenericCopy();
    slot->ready = recordEvent(side);
  }
  return true;
}

at::Tensor OffloadGroup::take(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(index < slots_.size(), "memopt: offload slot ", index,
              " out of range");
  Slot &slot = *slots_[index];
  if (slot.kept.defined())
    return slot.kept;
  TORCH_CHECK(slot.offloaded.defined(),
              "memopt: an offloaded tensor was used after its group was "
              "released (backward through a checkpoint region twice needs "
              "retain_graph=True)");
  if (!slot.restored.defined()) {
    prefetched_ = false; // not fetched yet (e.g. taken without prefetch)
    prefetchLocked();
  }
  if (slot.ready)
    slot.ready->block(currentStream(slot.options.device()));
  // The device copy lives only as long as the caller holds it.
  at::Tensor result = std::move(slot.restored);
  slot.restored = at::Tensor();
  slot.ready.reset();
  // Once every slot is taken, a retained graph's next backward prefetches
  // the group again like the first did.
  if (std::none_of(slots_.begin(), slots_.end(),
                   [](const auto &s) { return s->restored.defined(); }))
    prefetched_ = false;
  return result;
}

void OffloadGroup::release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_.clear(); // leases go back to the pool, managed blocks to theirs
    prefetched_ = true;
  }
  std::lock_guard<std::mutex> lock(gOrderMutex);
  gOrder.erase(std::remove_if(gOrder.begin(), gOrder.end(),
                              [this](const OrderEntry &e) {
                                return e.raw == this || e.weak.expired();
                              }),
               gOrder.end());
}

void prefetchForBackward(const std::shared_ptr<OffloadGroup> &current) {
  std::vector<std::weak_ptr<OffloadGroup>> before; // nearest first
  {
    std::lock_guard<std::mutex> lock(gOrderMutex);
    // Backward runs regions in reverse forward order: the groups sealed just
    // before `current` are needed next.
    auto it =
        std::find_if(gOrder.rbegin(), gOrder.rend(), [&](const OrderEntry &e) {
          return e.raw == current.get();
        });
    if (it != gOrder.rend())
      for (++it; it != gOrder.rend(); ++it)
        before.push_back(it->weak);
  }
  current->prefetch();
  int64_t depth = std::max<int64_t>(offloadConfig().prefetchDepth, 0);
  int64_t issued = 0;
  for (const auto &weak : before) {
    if (issued >= depth)
      break;
    auto group = weak.lock();
    if (!group || !group->trigger().empty())
      continue; // scheduled groups wait for their trigger
    ++issued;
    if (group->prefetch())
      offloadCounters().prefetchedAhead++;
  }
}

std::vector<std::weak_ptr<OffloadGroup>>
takeScheduledGroups(const std::string &name, const OffloadGroup *own) {
  std::vector<std::weak_ptr<OffloadGroup>> taken;
  std::lock_guard<std::mutex> lock(gOrderMutex);
  // Nearest first: of these, backward needs the latest one next.
  for (auto it = gOrder.rbegin(); it != gOrder.rend(); ++it) {
    OrderEntry &entry = *it;
    // Only the raw pointer: locking here could drop the last owner.
    // An expired group's destructor waits for this mutex in release(), so
    // its members are still there; it is skipped all the same.
    auto *group = const_cast<OffloadGroup *>(entry.raw);
    if (entry.weak.expired() || group->handedToTrigger_ ||
        group->trigger_ != name)
      continue;
    group->handedToTrigger_ = true; // its own region fetches it itself
    if (group != own)
      taken.push_back(entry.weak);
  }
  return taken;
}

} // namespace memopt::runtime
