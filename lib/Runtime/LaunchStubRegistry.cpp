//===- LaunchStubRegistry.cpp - Registered launch stubs and launch counts -===//
//
// The C entry points of LaunchStubs.h, the lookup the runtime's packing
// paths use (LaunchStubDispatch.h), and TorchScript ops for tests and
// benchmarks:
//   memopt::launch_counts() -> int[]           [generic, stubs]
//   memopt::reset_launch_counts() -> ()
//   memopt::set_launch_stubs(bool enabled) -> ()
//   memopt::launch_stub_sites() -> int
//   memopt::launch_stub_pack(str region, Tensor[] tensors, str[] kinds,
//                            bool check) -> Tensor[]
//   memopt::launch_stub_unpack(str region, Tensor[] payloads,
//                              Tensor[] like, str[] kinds) -> Tensor[]
// (region "" selects a layer site; an error when no registered site fits).
//
//===----------------------------------------------------------------------===//
#include "LaunchStubDispatch.h"
#include "OffloadInternal.h"
#include "OffloadStubDispatch.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

#ifdef MEMOPT_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace memopt::runtime::stubs {

int32_t stubDevice(const at::Tensor &x) {
  return x.is_cuda() ? MEMOPT_STUB_CUDA : x.is_cpu() ? MEMOPT_STUB_HOST : -1;
}

void *nativeStream(int32_t device, const char *site,
                   const std::function<c10::Stream()> &stream) {
#ifdef MEMOPT_WITH_CUDA
  if (device == MEMOPT_STUB_CUDA)
    return c10::cuda::CUDAStream(stream()).stream();
#else
  (void)stream;
  TORCH_CHECK(device == MEMOPT_STUB_HOST, "memopt: launch stub site '", site,
              "' is a CUDA site but libmemopt_runtime was built without CUDA");
#endif
  return nullptr;
}

namespace {

/// A site as registered, with its strings and tensor table copied.
struct Site {
  std::string model, name;
  std::vector<memopt_stub_tensor> tensors;
  memopt_stub_site abi{};
};

struct Registry {
  std::mutex mutex;
  /// unique_ptr: lookups hand out pointers that must stay valid.
  std::vector<std::unique_ptr<Site>> sites;
  std::multimap<std::string, const Site *> regions;
  std::vector<const Site *> layers;
};

Registry &registry() {
  // Never destroyed: other libraries' static destructors may still pack.
  static Registry *r = new Registry();
  return *r;
}

// Stubs may register from static initializers of libraries loaded before
// or after the runtime; the counters are plain atomics.
std::atomic<int64_t> gGeneric{0}, gStubs{0}, gSites{0};
std::atomic<bool> gEnabled{true};

int32_t stubDtype(at::ScalarType dtype) {
  switch (dtype) {
  case at::kFloat:
    return MEMOPT_STUB_F32;
  case at::kHalf:
    return MEMOPT_STUB_F16;
  case at::kBFloat16:
    return MEMOPT_STUB_BF16;
  default:
    return -1;
  }
}

int32_t stubKind(CompressionKind kind) {
  switch (kind) {
  case CompressionKind::Bit:
    return MEMOPT_STUB_BIT;
  case CompressionKind::Bool:
    return MEMOPT_STUB_BOOL;
  default:
    return -1; // uint8 and sparse have no stubs
  }
}

bool matches(const Site &site, const std::vector<at::Tensor> &tensors,
             const std::vector<CompressionKind> &kinds) {
  if (site.tensors.size() != tensors.size())
    return false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor &x = tensors[i];
    const memopt_stub_tensor &want = site.tensors[i];
    if (stubDevice(x) != site.abi.device || !x.is_contiguous() ||
        x.numel() != want.numel || stubDtype(x.scalar_type()) != want.dtype ||
        stubKind(kinds[i]) != want.kind)
      return false;
  }
  return true;
}

void *streamFor(const memopt_stub_site &site, const at::Tensor &any) {
  return nativeStream(site.device, site.name,
                      [&] { return currentStream(any.device()); });
}

CompressionKind kindOf(int32_t kind) {
  return kind == MEMOPT_STUB_BOOL ? CompressionKind::Bool
                                  : CompressionKind::Bit;
}

/// The payload tensor's element count and type (the runtime's formats).
int64_t payloadNumel(const memopt_stub_tensor &t) {
  return packedNumel(kindOf(t.kind), t.numel);
}
at::ScalarType payloadType(const memopt_stub_tensor &t) {
  return packedScalarType(kindOf(t.kind), t.numel);
}

} // namespace

const memopt_stub_site *
findRegionSite(const std::string &name, const std::vector<at::Tensor> &tensors,
               const std::vector<CompressionKind> &kinds) {
  if (!gEnabled.load(std::memory_order_relaxed) || gSites.load() == 0 ||
      tensors.empty())
    return nullptr;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [begin, end] = r.regions.equal_range(name);
  for (auto it = begin; it != end; ++it)
    if (matches(*it->second, tensors, kinds))
      return &it->second->abi;
  return nullptr;
}

const memopt_stub_site *findLayerSite(const at::Tensor &x,
                                      CompressionKind kind) {
  if (!gEnabled.load(std::memory_order_relaxed) || gSites.load() == 0)
    return nullptr;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const Site *site : r.layers)
    if (matches(*site, {x}, {kind}))
      return &site->abi;
  return nullptr;
}

std::vector<at::Tensor> pack(const memopt_stub_site &site,
                             const std::vector<at::Tensor> &tensors, bool check,
                             std::vector<int64_t> &firstInvalid) {
  TORCH_INTERNAL_ASSERT(static_cast<int32_t>(tensors.size()) == site.count);
#ifdef MEMOPT_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (site.device == MEMOPT_STUB_CUDA)
    guard.emplace(tensors[0].device());
#endif
  std::vector<at::Tensor> payloads;
  std::vector<const void *> in;
  std::vector<void *> out;
  for (int32_t i = 0; i < site.count; ++i) {
    const memopt_stub_tensor &t = site.tensors[i];
    payloads.push_back(at::empty({payloadNumel(t)},
                                 tensors[i].options().dtype(payloadType(t))));
    in.push_back(tensors[i].data_ptr());
    out.push_back(payloads.back().data_ptr());
  }
  at::Tensor first;
  if (check)
    first = at::empty({site.count}, tensors[0].options().dtype(at::kLong));
  int err = site.pack(in.data(), out.data(),
                      check ? first.data_ptr<int64_t>() : nullptr,
                      streamFor(site, tensors[0]));
  TORCH_CHECK(err == 0, "memopt: launch stub '", site.name,
              "' failed to pack (error ", err, ")");
  gStubs.fetch_add(site.launches, std::memory_order_relaxed);
  firstInvalid.assign(site.count, -1);
  if (check) {
    at::Tensor host = first.cpu(); // waits for a CUDA launch
    for (int32_t i = 0; i < site.count; ++i)
      if (host[i].item<int64_t>() < site.tensors[i].numel)
        firstInvalid[i] = host[i].item<int64_t>();
  }
  return payloads;
}

std::vector<at::Tensor> unpack(const memopt_stub_site &site,
                               const std::vector<PackedTensor> &packed) {
  TORCH_INTERNAL_ASSERT(static_cast<int32_t>(packed.size()) == site.count);
#ifdef MEMOPT_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (site.device == MEMOPT_STUB_CUDA)
    guard.emplace(packed[0].data.device());
#endif
  std::vector<at::Tensor> outputs;
  std::vector<const void *> in;
  std::vector<void *> out;
  for (int32_t i = 0; i < site.count; ++i) {
    const PackedTensor &p = packed[i];
    const memopt_stub_tensor &t = site.tensors[i];
    TORCH_CHECK(p.data.is_contiguous() && p.data.numel() == payloadNumel(t) &&
                    stubDtype(p.dtype) == t.dtype && stubKind(p.kind) == t.kind,
                "memopt: launch stub '", site.name, "': payload ", i,
                " does not match the site (was it packed by another site?)");
    outputs.push_back(at::empty(p.shape, p.data.options().dtype(p.dtype)));
    in.push_back(p.data.data_ptr());
    out.push_back(outputs.back().data_ptr());
  }
  int err = site.unpack(in.data(), out.data(), streamFor(site, packed[0].data));
  TORCH_CHECK(err == 0, "memopt: launch stub '", site.name,
              "' failed to unpack (error ", err, ")");
  gStubs.fetch_add(site.launches, std::memory_order_relaxed);
  return outputs;
}

namespace {
/// Launches of a generic bit pack or unpack of `numel` values: the vector
/// kernel over whole warps of 16-byte vectors, then one for the rest
/// (cuda/CompressionKernels.cu; buffers from the allocator are aligned).
int64_t bitLaunches(at::ScalarType dtype, int64_t numel) {
  const int64_t step = 32 * (dtype == at::kFloat ? 4 : 8);
  return (numel >= step ? 1 : 0) + (numel % step != 0 ? 1 : 0);
}
} // namespace

bool acceptsStubAbi(int32_t version, const char *model, const char *what) {
  if (version == MEMOPT_LAUNCH_STUBS_ABI)
    return true;
  std::fprintf(stderr,
               "memopt: %s of '%s' use ABI %d, this runtime %d; regenerate "
               "them with this memopt (they are not used)\n",
               what, model ? model : "?", version, MEMOPT_LAUNCH_STUBS_ABI);
  return false;
}

void countGenericPack(CompressionKind kind, bool check, const at::Tensor &x) {
  const int64_t n = x.numel();
  // A check: a launch that sets the result slot, one that scans.
  int64_t launches = check && n > 0 ? 2 : 0;
  if (kind == CompressionKind::Bit)
    launches += bitLaunches(x.scalar_type(), n);
  else if (kind == CompressionKind::Sparse)
    launches += 2; // count, then write the indices
  else
    launches += n > 0 ? 1 : 0;
  gGeneric.fetch_add(launches, std::memory_order_relaxed);
}

void countGenericUnpack(CompressionKind kind, at::ScalarType dtype,
                        int64_t numel) {
  gGeneric.fetch_add(kind == CompressionKind::Bit ? bitLaunches(dtype, numel)
                                                  : 1,
                     std::memory_order_relaxed);
}

namespace {
std::vector<CompressionKind> parseKinds(const std::vector<std::string> &kinds,
                                        size_t count) {
  TORCH_CHECK(kinds.size() == count, "memopt: ", kinds.size(), " kinds for ",
              count, " tensors");
  std::vector<CompressionKind> parsed;
  for (const std::string &kind : kinds)
    parsed.push_back(parseCompressionKind(kind));
  return parsed;
}

const memopt_stub_site &siteFor(const std::string &region,
                                const std::vector<at::Tensor> &tensors,
                                const std::vector<CompressionKind> &kinds) {
  const memopt_stub_site *site =
      region.empty()
          ? (tensors.size() == 1 ? findLayerSite(tensors[0], kinds[0])
                                 : nullptr)
          : findRegionSite(region, tensors, kinds);
  TORCH_CHECK(site, "memopt: no registered launch stub site ",
              region.empty() ? std::string("of a layer")
                             : "of region '" + region + "'",
              " packs these ", tensors.size(), " tensor(s)");
  return *site;
}

std::vector<at::Tensor> packOp(std::string region,
                               std::vector<at::Tensor> tensors,
                               std::vector<std::string> kinds, bool check) {
  std::vector<CompressionKind> parsed = parseKinds(kinds, tensors.size());
  const memopt_stub_site &site = siteFor(region, tensors, parsed);
  std::vector<int64_t> firstInvalid;
  std::vector<at::Tensor> payloads = pack(site, tensors, check, firstInvalid);
  for (size_t i = 0; i < firstInvalid.size(); ++i)
    if (firstInvalid[i] >= 0)
      compressTensor(tensors[i], parsed[i], /*check=*/true); // raises
  return payloads;
}

std::vector<at::Tensor> unpackOp(std::string region,
                                 std::vector<at::Tensor> payloads,
                                 std::vector<at::Tensor> like,
                                 std::vector<std::string> kinds) {
  std::vector<CompressionKind> parsed = parseKinds(kinds, like.size());
  TORCH_CHECK(payloads.size() == like.size(), "memopt: ", payloads.size(),
              " payloads for ", like.size(), " tensors");
  const memopt_stub_site &site = siteFor(region, like, parsed);
  std::vector<PackedTensor> packed;
  for (size_t i = 0; i < like.size(); ++i)
    packed.push_back(PackedTensor{payloads[i], parsed[i], like[i].sizes().vec(),
                                  like[i].scalar_type(), like[i].device()});
  return unpack(site, packed);
}

std::vector<int64_t> launchCountsOp() {
  int64_t generic = 0, stubs = 0;
  memopt_launch_counts(&generic, &stubs);
  return {generic, stubs};
}
} // namespace

} // namespace memopt::runtime::stubs

using namespace memopt::runtime::stubs;

extern "C" int memopt_register_launch_stubs(int32_t abi_version,
                                            const char *model,
                                            const memopt_stub_site *sites,
                                            int32_t count) {
  if (!acceptsStubAbi(abi_version, model, "launch stubs"))
    return -1;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (int32_t i = 0; i < count; ++i) {
    auto site = std::make_unique<Site>();
    site->model = model ? model : "";
    site->name = sites[i].name ? sites[i].name : "";
    site->tensors.assign(sites[i].tensors, sites[i].tensors + sites[i].count);
    site->abi = sites[i];
    site->abi.name = site->name.c_str();
    site->abi.tensors = site->tensors.data();
    if (site->abi.site_kind == MEMOPT_STUB_LAYER)
      r.layers.push_back(site.get());
    else
      r.regions.emplace(site->name, site.get());
    r.sites.push_back(std::move(site));
  }
  gSites.fetch_add(count);
  return 0;
}

extern "C" int64_t memopt_launch_stub_sites(void) { return gSites.load(); }

extern "C" void memopt_set_launch_stubs_enabled(int enabled) {
  gEnabled.store(enabled != 0);
}

extern "C" int memopt_launch_stubs_enabled(void) { return gEnabled.load(); }

extern "C" void memopt_launch_counts(int64_t *generic, int64_t *stubs) {
  if (generic)
    *generic = gGeneric.load();
  if (stubs)
    *stubs = gStubs.load();
}

extern "C" void memopt_reset_launch_counts(void) {
  gGeneric.store(0);
  gStubs.store(0);
  resetOffloadCopyCounts();
}

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  m.def("launch_counts() -> int[]", &launchCountsOp);
  m.def("reset_launch_counts() -> ()", [] { memopt_reset_launch_counts(); });
  m.def("set_launch_stubs(bool enabled) -> ()",
        [](bool enabled) { memopt_set_launch_stubs_enabled(enabled); });
  m.def("launch_stub_sites() -> int",
        [] { return memopt_launch_stub_sites(); });
  m.def("launch_stub_pack(str region, Tensor[] tensors, str[] kinds, "
        "bool check) -> Tensor[]",
        &packOp);
  m.def("launch_stub_unpack(str region, Tensor[] payloads, Tensor[] like, "
        "str[] kinds) -> Tensor[]",
        &unpackOp);
}
