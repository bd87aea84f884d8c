//===- UnifiedMemory.cpp - Managed-memory pool for offload:unified --------===//
//
// A saved tensor under `offload:unified` is copied into CUDA managed memory,
// advised to prefer the host and prefetched there after forward (freeing
// device memory without changing the pointer), then advised back to its
// device and prefetched before backward. Managed blocks are pooled (bounded
// by the offload pool size) because cudaMallocManaged/cudaFree synchronize.
//
//===----------------------------------------------------------------------===//

#include "OffloadInternal.h"
#include "memopt/Runtime/TorchCompat.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#if MEMOPT_WITH_CUDA
#include "cuda/UnifiedMemory.h"
#endif

#include <mutex>
#include <thread>

namespace memopt::runtime {

#if MEMOPT_WITH_CUDA
namespace {

void checkCuda(int error, const char *what) {
  TORCH_CHECK(error == 0, "memopt: unified memory: ", what,
              " failed: ", memopt_um_error_string(error));
}

struct ManagedBlock {
  void *ptr = nullptr;
  size_t bytes = 0;
  int device = 0;
  std::unique_ptr<c10::Event> lastUse;
};

class ManagedPool {
public:
  static ManagedPool &instance() {
    static ManagedPool *pool = new ManagedPool(); // leaked: tensors may outlive
    return *pool;
  }

  ManagedBlock *acquire(size_t bytes, int device, const c10::Stream &user) {
    constexpr size_t kGranule = size_t(2)
                                << 20; // managed pages migrate in 2 MiB
    bytes = (bytes + kGranule - 1) / kGranule * kGranule;
    std::unique_lock<std::mutex> lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->bytes != bytes || (*it)->device != device)
        continue;
      ManagedBlock *block = *it;
      idle_.erase(it);
      idleBytes_ -= block->bytes;
      if (block->lastUse)
        block->lastUse->block(user);
      block->lastUse.reset();
      return block;
    }
    lock.unlock();
    auto block = std::make_unique<ManagedBlock>();
    block->bytes = bytes;
    block->device = device;
    checkCuda(memopt_um_alloc(&block->ptr, bytes, device), "cudaMallocManaged");
    return block.release();
  }

  void release(ManagedBlock *block) {
    try {
      c10::Device device(c10::DeviceType::CUDA,
                         static_cast<c10::DeviceIndex>(block->device));
      block->lastUse = recordEvent(currentStream(device));
    } catch (const std::exception &) {
      block->lastUse.reset();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(block);
    idleBytes_ += block->bytes;
    int64_t limit = offloadConfig().poolBytes;
    while (idleBytes_ > static_cast<size_t>(std::max<int64_t>(limit, 0)) &&
           !idle_.empty()) {
      ManagedBlock *victim = idle_.front();
      idle_.erase(idle_.begin());
      idleBytes_ -= victim->bytes;
      while (victim->lastUse && !victim->lastUse->query())
        std::this_thread::yield();
      memopt_um_free(victim->ptr); // nothing to report to from a deleter
      delete victim;
    }
  }

private:
  std::mutex mutex_;
  std::vector<ManagedBlock *> idle_;
  size_t idleBytes_ = 0;
};

int deviceIndex(std::optional<c10::Device> device) {
  if (device && device->has_index())
    return device->index();
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return impl.getDevice().index();
}

} // namespace
#endif // MEMOPT_WITH_CUDA

bool unifiedMemorySupported(std::optional<c10::Device> device) {
#if MEMOPT_WITH_CUDA
  if (!at::hasCUDA() || (device && !device->is_cuda()))
    return false;
  return memopt_um_device_supported(deviceIndex(device)) == 1;
#else
  (void)device;
  return false;
#endif
}

void checkUnifiedMemorySupported(const c10::Device &device) {
#if MEMOPT_WITH_CUDA
  TORCH_CHECK(device.is_cuda(), "memopt: unified memory unsupported: ", device,
              " is not a CUDA device");
  TORCH_CHECK(at::hasCUDA(), "memopt: unified memory unsupported: no CUDA "
                             "device is available");
  TORCH_CHECK(unifiedMemorySupported(device),
              "memopt: unified memory unsupported: ", device,
              " has no concurrent managed-memory access "
              "(cudaDevAttrConcurrentManagedAccess is 0)");
#else
  TORCH_CHECK(false,
              "memopt: unified memory unsupported: this "
              "libmemopt_runtime was built against a LibTorch without CUDA, "
              "so a tensor on ",
              device, " cannot be saved in managed memory");
#endif
}

at::Tensor emptyManagedLike(const at::Tensor &t) {
  checkUnifiedMemorySupported(t.device());
#if MEMOPT_WITH_CUDA
  size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  int device = t.device().index();
  ManagedBlock *block =
      ManagedPool::instance().acquire(bytes, device, sideStream(t.device()));
  return at::from_blob(
      block->ptr, t.sizes(), denseStridesFor(t),
      [block](void *) { ManagedPool::instance().release(block); }, t.options());
#else
  return at::Tensor();
#endif
}

void migrateManaged(const at::Tensor &t, bool toHost,
                    const c10::Stream &stream) {
#if MEMOPT_WITH_CUDA
  const void *ptr = t.data_ptr();
  size_t bytes = t.storage().nbytes();
  int target = toHost ? -1 : t.device().index();
  checkCuda(memopt_um_advise_preferred(ptr, bytes, target),
            "cudaMemAdvise(SetPreferredLocation)");
  void *handle = compat::nativeStreamHandle(stream);
  if (!handle)
    stream.synchronize(); // no native handle: order by waiting instead
  checkCuda(memopt_um_prefetch(ptr, bytes, target, handle),
            "cudaMemPrefetchAsync");
#else
  (void)t;
  (void)toHost;
  (void)stream;
  TORCH_CHECK(false, "memopt: unified memory unsupported: built without CUDA");
#endif
}

} // namespace memopt::runtime
