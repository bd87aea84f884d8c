//===- UnifiedMemory.cu - CUDA managed-memory calls behind a C ABI --------===//
//
// Follows Megatron's unified-memory module: managed allocations, advice on
// the preferred location and the accessing device, and explicit prefetches
// that migrate pages without changing the pointer.
//
//===----------------------------------------------------------------------===//

#include "UnifiedMemory.h"

#include <cuda_runtime_api.h>

namespace {

// CUDA 13 takes a cudaMemLocation where older releases took a device ordinal.
#if CUDART_VERSION >= 13000
cudaMemLocation location(int device) {
  cudaMemLocation loc;
  if (device < 0) {
    loc.type = cudaMemLocationTypeHost;
    loc.id = 0;
  } else {
    loc.type = cudaMemLocationTypeDevice;
    loc.id = device;
  }
  return loc;
}
#endif

cudaError_t advise(const void *ptr, size_t bytes, cudaMemoryAdvise advice,
                   int device) {
#if CUDART_VERSION >= 13000
  return cudaMemAdvise(ptr, bytes, advice, location(device));
#else
  return cudaMemAdvise(ptr, bytes, advice,
                       device < 0 ? cudaCpuDeviceId : device);
#endif
}

cudaError_t prefetch(const void *ptr, size_t bytes, int device,
                     cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  return cudaMemPrefetchAsync(ptr, bytes, location(device), 0, stream);
#else
  return cudaMemPrefetchAsync(ptr, bytes, device < 0 ? cudaCpuDeviceId : device,
                              stream);
#endif
}

} // namespace

extern "C" int memopt_um_device_supported(int device) {
  int managed = 0, concurrent = 0;
  if (cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess,
                             device) != cudaSuccess) {
    cudaGetLastError(); // clear the error so later calls do not report it
    return 0;
  }
  return managed && concurrent ? 1 : 0;
}

extern "C" int memopt_um_alloc(void **ptr, size_t bytes, int device) {
  // Allocate on `device` so that pointer queries (from_blob's device check)
  // report the tensor's device.
  int previous = 0;
  cudaError_t err = cudaGetDevice(&previous);
  if (err == cudaSuccess && previous != device)
    err = cudaSetDevice(device);
  if (err == cudaSuccess)
    err = cudaMallocManaged(ptr, bytes, cudaMemAttachGlobal);
  // Keep the device's page-table mapping so its first touch after a prefetch
  // back does not fault.
  if (err == cudaSuccess) {
    err = advise(*ptr, bytes, cudaMemAdviseSetAccessedBy, device);
    if (err != cudaSuccess) {
      cudaFree(*ptr);
      *ptr = nullptr;
    }
  }
  if (previous != device)
    cudaSetDevice(previous);
  return static_cast<int>(err);
}

extern "C" int memopt_um_free(void *ptr) {
  return static_cast<int>(cudaFree(ptr));
}

extern "C" int memopt_um_advise_preferred(const void *ptr, size_t bytes,
                                          int device) {
  return static_cast<int>(
      advise(ptr, bytes, cudaMemAdviseSetPreferredLocation, device));
}

extern "C" int memopt_um_prefetch(const void *ptr, size_t bytes, int device,
                                  void *stream) {
  if (stream)
    return static_cast<int>(
        prefetch(ptr, bytes, device, static_cast<cudaStream_t>(stream)));
  cudaError_t err = prefetch(ptr, bytes, device, cudaStreamLegacy);
  if (err != cudaSuccess)
    return static_cast<int>(err);
  return static_cast<int>(cudaStreamSynchronize(cudaStreamLegacy));
}

extern "C" const char *memopt_um_error_string(int error) {
  return cudaGetErrorString(static_cast<cudaError_t>(error));
}
