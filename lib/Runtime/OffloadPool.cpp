//===- OffloadPool.cpp - Bounded pool of reusable pinned host buffers -----===//
//
// Pinned allocations are slow (they map and lock pages), so buffers are kept
// and lent again. The pool never holds more than the configured bytes: when a
// request does not fit, idle buffers are freed to make room, and if it still
// does not fit the caller keeps its tensor on the device.
//
//===----------------------------------------------------------------------===//

#include "OffloadInternal.h"

#include <c10/util/Exception.h>

#include <mutex>
#include <thread>

namespace memopt::runtime {
namespace {

struct Buffer {
  at::Tensor storage; // 1-D uint8; undefined once freed
  int64_t capacity = 0;
  bool pinned = true;
  bool inUse = false;
  int64_t lentBytes = 0;
  std::unique_ptr<c10::Event> lastUse; // work that last touched the buffer
};

// Sizes are rounded so that buffers fit later requests of similar size.
int64_t roundSize(int64_t n) {
  constexpr int64_t kSmall = int64_t(1) << 20; // 1 MiB
  if (n <= kSmall) {
    int64_t r = 4096;
    while (r < n)
      r <<= 1;
    return r;
  }
  return (n + kSmall - 1) / kSmall * kSmall;
}

class HostPool {
public:
  static HostPool &instance() {
    static HostPool *pool = new HostPool(); // leaked: leases may outlive exit
    return *pool;
  }

  std::shared_ptr<HostLease> acquire(int64_t nbytes, bool pinned,
                                     std::optional<c10::Stream> user) {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t index = bestFit(nbytes, pinned);
    if (index < 0)
      index = allocate(nbytes, pinned);
    if (index < 0)
      return nullptr;
    Buffer &b = buffers_[index];
    if (b.lastUse && user)
      b.lastUse->block(*user);
    b.lastUse.reset();
    b.inUse = true;
    b.lentBytes = nbytes;
    inUse_ += b.capacity;
    auto lease = std::make_shared<HostLease>();
    lease->bytes = b.storage.narrow(0, 0, nbytes);
    lease->bufferIndex = static_cast<size_t>(index);
    return lease;
  }

  void release(size_t index, const std::optional<c10::Stream> &lastUser) {
    std::unique_ptr<c10::Event> event;
    if (lastUser) {
      try {
        event = recordEvent(*lastUser);
      } catch (const std::exception &) {
        // Recording can only fail if the device is gone; then nothing runs.
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    Buffer &b = buffers_[index];
    b.inUse = false;
    b.lastUse = std::move(event);
    inUse_ -= b.capacity;
    trimLocked();
  }

  void setLimit(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    trimLocked();
  }

  int64_t reserved() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reserved_;
  }
  int64_t inUse() {
    std::lock_guard<std::mutex> lock(mutex_);
    return inUse_;
  }

private:
  HostPool() : limit_(OffloadConfig().poolBytes) {}

  int64_t bestFit(int64_t nbytes, bool pinned) const {
    int64_t best = -1;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const Buffer &b = buffers_[i];
      if (!b.storage.defined() || b.inUse || b.pinned != pinned ||
          b.capacity < nbytes)
        continue;
      if (best < 0 || b.capacity < buffers_[best].capacity)
        best = static_cast<int64_t>(i);
    }
    return best;
  }

  int64_t allocate(int64_t nbytes, bool pinned) {
    int64_t size = roundSize(nbytes);
    if (size > limit_)
      return -1;
    // Free idle buffers, largest first, until the new one fits.
    while (reserved_ + size > limit_) {
      int64_t victim = -1;
      for (size_t i = 0; i < buffers_.size(); ++i)
        if (buffers_[i].storage.defined() && !buffers_[i].inUse &&
            (victim < 0 || buffers_[i].capacity > buffers_[victim].capacity))
          victim = static_cast<int64_t>(i);
      if (victim < 0)
        return -1;
      freeBuffer(buffers_[victim]);
    }
    at::Tensor storage = at::empty(
        {size}, at::TensorOptions().dtype(at::kByte).pinned_memory(pinned));
    reserved_ += size;
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (!buffers_[i].storage.defined()) {
        buffers_[i] = Buffer{storage, size, pinned, false, 0, nullptr};
        return static_cast<int64_t>(i);
      }
    buffers_.push_back(Buffer{storage, size, pinned, false, 0, nullptr});
    return static_cast<int64_t>(buffers_.size() - 1);
  }

  void freeBuffer(Buffer &b) {
    // A pending copy may still read or write the buffer.
    // (c10::Event has no synchronize() in PyTorch 1.13; query() everywhere.)
    while (b.lastUse && !b.lastUse->query())
      std::this_thread::yield();
    reserved_ -= b.capacity;
    b = Buffer{};
  }

  void trimLocked() {
    for (Buffer &b : buffers_)
      if (reserved_ > limit_ && b.storage.defined() && !b.inUse)
        freeBuffer(b);
  }

  std::mutex mutex_;
  std::vector<Buffer> buffers_;
  int64_t limit_;
  int64_t reserved_ = 0;
  int64_t inUse_ = 0;
};

} // namespace

HostLease::~HostLease() {
  bytes = at::Tensor();
  HostPool::instance().release(bufferIndex, lastUser);
}

std::shared_ptr<HostLease> acquireHostBuffer(int64_t nbytes, bool pinned,
                                             std::optional<c10::Stream> user) {
  return HostPool::instance().acquire(nbytes, pinned, user);
}

void setHostPoolLimit(int64_t bytes) { HostPool::instance().setLimit(bytes); }
int64_t hostPoolReservedBytes() { return HostPool::instance().reserved(); }
int64_t hostPoolInUseBytes() { return HostPool::instance().inUse(); }

} // namespace memopt::runtime
