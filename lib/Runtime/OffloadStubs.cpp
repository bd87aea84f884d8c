//===- OffloadStubs.cpp - Registered offload sites and copy counts --------===//
//
// The offload half of LaunchStubs.h: memopt_register_offload_stubs, the
// lookup OffloadGroup uses (OffloadStubDispatch.h), the copy counters, and
// TorchScript ops for tests and benchmarks:
//   memopt::offload_copy_counts() -> int[]   [generic, stubs]
//   memopt::offload_stub_sites() -> int
// (memopt::reset_launch_counts resets these counters too).
//
//===----------------------------------------------------------------------===//
#include "LaunchStubDispatch.h"
#include "OffloadInternal.h"
#include "OffloadStubDispatch.h"

#include <torch/library.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace memopt::runtime::stubs {
namespace {

/// A site as registered, with its strings and copy table copied.
struct OffloadSite {
  std::string model, name, trigger;
  std::vector<memopt_stub_copy> copies;
  memopt_stub_offload_site abi{};
};

struct OffloadRegistry {
  std::mutex mutex;
  std::vector<std::unique_ptr<OffloadSite>> sites;
  std::multimap<std::string, const OffloadSite *> regions;
};

OffloadRegistry &offloadRegistry() {
  // Never destroyed: other libraries' static destructors may still offload.
  static OffloadRegistry *r = new OffloadRegistry();
  return *r;
}

std::atomic<int64_t> gGenericCopies{0}, gStubCopies{0}, gOffloadSites{0};

bool matches(const OffloadSite &site, const std::string &trigger,
             const std::vector<at::Tensor> &tensors) {
  if (site.trigger != trigger || site.copies.size() != tensors.size())
    return false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor &x = tensors[i];
    const memopt_stub_copy &want = site.copies[i];
    if (stubDevice(x) != site.abi.device || !x.is_contiguous() ||
        x.numel() != want.numel ||
        static_cast<int64_t>(x.element_size()) != want.element_size ||
        x.device() != tensors[0].device())
      return false;
  }
  return true;
}

} // namespace

const memopt_stub_offload_site *
findOffloadSite(const std::string &name, const std::string &trigger,
                const std::vector<at::Tensor> &tensors) {
  if (!memopt_launch_stubs_enabled() || tensors.empty() ||
      gOffloadSites.load(std::memory_order_relaxed) == 0)
    return nullptr;
  OffloadRegistry &r = offloadRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [begin, end] = r.regions.equal_range(name);
  for (auto it = begin; it != end; ++it)
    if (matches(*it->second, trigger, tensors))
      return &it->second->abi;
  return nullptr;
}

void *offloadStreamFor(const memopt_stub_offload_site &site,
                       const at::Device &device) {
  return nativeStream(site.device, site.name,
                      [&] { return sideStream(device); });
}

void countGenericCopy() {
  gGenericCopies.fetch_add(1, std::memory_order_relaxed);
}
void countStubCopy() { gStubCopies.fetch_add(1, std::memory_order_relaxed); }
void resetOffloadCopyCounts() {
  gGenericCopies.store(0);
  gStubCopies.store(0);
}

} // namespace memopt::runtime::stubs

using namespace memopt::runtime::stubs;

extern "C" int
memopt_register_offload_stubs(int32_t abi_version, const char *model,
                              const memopt_stub_offload_site *sites,
                              int32_t count) {
  if (!acceptsStubAbi(abi_version, model, "offload stubs"))
    return -1;
  OffloadRegistry &r = offloadRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (int32_t i = 0; i < count; ++i) {
    auto site = std::make_unique<OffloadSite>();
    site->model = model ? model : "";
    site->name = sites[i].name ? sites[i].name : "";
    site->trigger = sites[i].trigger ? sites[i].trigger : site->name;
    site->copies.assign(sites[i].copies, sites[i].copies + sites[i].count);
    site->abi = sites[i];
    site->abi.name = site->name.c_str();
    site->abi.trigger = site->trigger.c_str();
    site->abi.copies = site->copies.data();
    r.regions.emplace(site->name, site.get());
    r.sites.push_back(std::move(site));
  }
  gOffloadSites.fetch_add(count);
  return 0;
}

extern "C" int64_t memopt_offload_stub_sites(void) {
  return gOffloadSites.load();
}

extern "C" void memopt_offload_copy_counts(int64_t *generic, int64_t *stubs) {
  if (generic)
    *generic = gGenericCopies.load();
  if (stubs)
    *stubs = gStubCopies.load();
}

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  m.def("offload_copy_counts() -> int[]", [] {
    int64_t generic = 0, stubs = 0;
    memopt_offload_copy_counts(&generic, &stubs);
    return std::vector<int64_t>{generic, stubs};
  });
  m.def("offload_stub_sites() -> int",
        [] { return memopt_offload_stub_sites(); });
}
