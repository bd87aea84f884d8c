//===- MemoryStats.cpp - Counting CPU allocator ---------------------------===//
//
// The counting allocator asks the wrapped allocator for `n + kHeader` bytes
// and keeps, in the header in front of the block it hands out, the wrapped
// DataPtr and `n`. The handed-out DataPtr is "simple" (context == data) with
// a static deleter, so raw_allocate/raw_deallocate (used by oneDNN's scratch
// allocations) keep working, and a tensor allocated before enabling still
// carries the wrapped allocator's deleter and is never subtracted.
//
//===----------------------------------------------------------------------===//

#include "memopt/Runtime/MemoryStats.h"
#include "memopt/Runtime/TorchCompat.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <vector>

namespace memopt::runtime {
namespace {

std::atomic<int64_t> gCurrent{0};
std::atomic<int64_t> gPeak{0};

void addBytes(int64_t n) {
  int64_t now = gCurrent.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = gPeak.load(std::memory_order_relaxed);
  while (now > peak &&
         !gPeak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

struct Header {
  c10::DataPtr inner; // what the wrapped allocator returned; owns the block
  int64_t bytes;      // bytes requested by the caller (what is counted)
};

// The header keeps the user block at the wrapped allocator's alignment.
constexpr size_t kHeader =
    std::max<size_t>(c10::gAlignment, ((sizeof(Header) + 63) / 64) * 64);

void countingDelete(void *ptr) {
  if (!ptr)
    return;
  auto *header = reinterpret_cast<Header *>(static_cast<char *>(ptr) - kHeader);
  gCurrent.fetch_sub(header->bytes, std::memory_order_relaxed);
  c10::DataPtr inner = std::move(header->inner);
  header->~Header();
  inner.clear(); // frees the block the header lived in
}

class CountingAllocator final : public c10::Allocator {
public:
  explicit CountingAllocator(c10::Allocator *inner) : inner_(inner) {}

  MEMOPT_ALLOCATOR_ENTRY_POINTS

  c10::DeleterFnPtr raw_deleter() const override { return &countingDelete; }

private:
  c10::DataPtr allocateBytes(size_t n) const {
    c10::DataPtr inner = inner_->allocate(n + kHeader);
    char *base = static_cast<char *>(compat::dataPtrAddress(inner));
    TORCH_CHECK(base, "memopt: wrapped CPU allocator returned null for ",
                n + kHeader, " bytes");
    new (base) Header{std::move(inner), static_cast<int64_t>(n)};
    addBytes(static_cast<int64_t>(n));
    void *user = base + kHeader;
    return {user, user, &countingDelete, c10::Device(c10::DeviceType::CPU)};
  }

  void copyBytes(void *dest, const void *src, std::size_t count) const {
    if (count)
      std::memcpy(dest, src, count);
  }

  c10::Allocator *inner_;
};

std::mutex gEnableMutex;
CountingAllocator *gAllocator = nullptr; // leaked: DataPtrs may outlive us

} // namespace

void enableMemoryStats() {
  std::lock_guard<std::mutex> lock(gEnableMutex);
  if (gAllocator)
    return;
  c10::Allocator *current = c10::GetCPUAllocator();
  auto *counting = new CountingAllocator(current);
  // The highest priority, so that no allocator registered later with the
  // default priority silently replaces (and stops) the counting.
  c10::SetCPUAllocator(counting, std::numeric_limits<uint8_t>::max());
  TORCH_CHECK(c10::GetCPUAllocator() == counting,
              "memopt: could not install the counting CPU allocator (another "
              "allocator holds a higher priority)");
  gAllocator = counting;
}

bool memoryStatsEnabled() {
  std::lock_guard<std::mutex> lock(gEnableMutex);
  return gAllocator != nullptr;
}

MemoryStats memoryStats() {
  MemoryStats s;
  s.currentBytes = gCurrent.load(std::memory_order_relaxed);
  s.peakBytes = std::max(s.currentBytes, gPeak.load(std::memory_order_relaxed));
  return s;
}

void resetPeakMemoryStats() {
  gPeak.store(gCurrent.load(std::memory_order_relaxed),
              std::memory_order_relaxed);
}

} // namespace memopt::runtime
