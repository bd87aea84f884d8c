//===- LaunchStubDispatch.h - Calling registered launch stubs ---*- C++ -*-===//
//
// Private to the runtime. Where a region or a packed layer is about to pack
// its binary tensors, it asks for a registered site whose static facts match
// the tensors exactly; when there is one, one launch packs them all (and one
// unpacks them in backward), else the generic kernels run as before. Both
// paths produce the same payload bytes (tests/python/test_launch_stubs.py).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_LAUNCHSTUBDISPATCH_H
#define MEMOPT_LIB_RUNTIME_LAUNCHSTUBDISPATCH_H

#include "memopt/Runtime/Compression.h"
#include "memopt/Runtime/LaunchStubs.h"

#include <c10/core/Stream.h>

#include <functional>
#include <string>
#include <vector>

namespace memopt::runtime::stubs {

/// The registered site of region `name` that packs exactly `tensors` with
/// `kinds` (same count, element counts, dtypes, device; all contiguous), or
/// null (also when stubs are disabled or none are registered).
const memopt_stub_site *
findRegionSite(const std::string &name, const std::vector<at::Tensor> &tensors,
               const std::vector<CompressionKind> &kinds);
/// A registered layer site that packs exactly `x` as `kind`, or null.
const memopt_stub_site *findLayerSite(const at::Tensor &x,
                                      CompressionKind kind);

/// Packs `tensors` with one call of `site.pack`. With `check`, returns in
/// `firstInvalid` (one entry per tensor) the first flat index that is not
/// 0 or 1, or -1; the payloads are then not to be used.
std::vector<at::Tensor> pack(const memopt_stub_site &site,
                             const std::vector<at::Tensor> &tensors, bool check,
                             std::vector<int64_t> &firstInvalid);
/// The tensors again (contiguous), from the payloads `pack` made.
std::vector<at::Tensor> unpack(const memopt_stub_site &site,
                               const std::vector<PackedTensor> &packed);

/// The memopt_stub_device a tensor lives on (-1: neither host nor CUDA).
int32_t stubDevice(const at::Tensor &x);

/// The native stream (a cudaStream_t) a launcher of a site on `device`
/// (memopt_stub_device) enqueues on: `stream()`'s; null for a host site.
/// Fails, naming `site`, for a CUDA site in a runtime built without CUDA.
void *nativeStream(int32_t device, const char *site,
                   const std::function<c10::Stream()> &stream);

/// Whether stubs built against ABI `version` can be used; says on stderr
/// why not (`what`: "launch stubs", "offload stubs").
bool acceptsStubAbi(int32_t version, const char *model, const char *what);

/// Counts the launches of the generic compression kernels, as the CUDA
/// backend issues them for these arguments (memopt_launch_counts).
void countGenericPack(CompressionKind kind, bool check, const at::Tensor &x);
void countGenericUnpack(CompressionKind kind, at::ScalarType dtype,
                        int64_t numel);

} // namespace memopt::runtime::stubs

#endif // MEMOPT_LIB_RUNTIME_LAUNCHSTUBDISPATCH_H
