/*===- UnifiedMemory.h - CUDA managed-memory calls behind a C ABI --------===*\
|*                                                                            *|
|* The runtime's C++ code never includes CUDA headers; the few CUDA runtime   *|
|* calls unified memory needs are made in UnifiedMemory.cu and reached        *|
|* through these functions. Each returns 0 (cudaSuccess) or a cudaError_t.   *|
|* A device of -1 means the host (cudaCpuDeviceId).                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef MEMOPT_LIB_RUNTIME_CUDA_UNIFIEDMEMORY_H
#define MEMOPT_LIB_RUNTIME_CUDA_UNIFIEDMEMORY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if `device` can access managed memory concurrently with the host, else 0.
 */
int memopt_um_device_supported(int device);
/* cudaMallocManaged, then cudaMemAdviseSetAccessedBy(device). */
int memopt_um_alloc(void **ptr, size_t bytes, int device);
int memopt_um_free(void *ptr);
/* cudaMemAdviseSetPreferredLocation(device or host). */
int memopt_um_advise_preferred(const void *ptr, size_t bytes, int device);
/* cudaMemPrefetchAsync to `device` (or the host) on `stream` (a cudaStream_t).
   A null stream means: the legacy default stream, then wait for it. */
int memopt_um_prefetch(const void *ptr, size_t bytes, int device, void *stream);
const char *memopt_um_error_string(int error);

#ifdef __cplusplus
}
#endif

#endif /* MEMOPT_LIB_RUNTIME_CUDA_UNIFIEDMEMORY_H */
