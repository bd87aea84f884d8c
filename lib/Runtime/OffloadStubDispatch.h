//===- OffloadStubDispatch.h - Calling registered offload sites -*- C++ -*-===//
//
// Private to the runtime. A checkpoint region about to offload its inputs
// asks for a registered offload site (memopt_register_offload_stubs) made
// for exactly these tensors and this prefetch trigger; with one, a single
// host block holds them all, at the site's static offsets, and one launcher
// call moves them out (and one brings them back), else the generic offload
// group copies them one by one.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_OFFLOADSTUBDISPATCH_H
#define MEMOPT_LIB_RUNTIME_OFFLOADSTUBDISPATCH_H

#include "memopt/Runtime/LaunchStubs.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace memopt::runtime::stubs {

/// The registered offload site of region `name` with prefetch trigger
/// `trigger` that moves exactly `tensors` (same count, element counts and
/// sizes, device kind; all contiguous), or null (also when stubs are
/// disabled).
const memopt_stub_offload_site *
findOffloadSite(const std::string &name, const std::string &trigger,
                const std::vector<at::Tensor> &tensors);

/// The stream a site's launchers take: the device's side stream for a CUDA
/// site, null for a host one.
void *offloadStreamFor(const memopt_stub_offload_site &site,
                       const at::Device &device);

/// memopt_offload_copy_counts.
void countGenericCopy();
void countStubCopy();
void resetOffloadCopyCounts();

} // namespace memopt::runtime::stubs

#endif // MEMOPT_LIB_RUNTIME_OFFLOADSTUBDISPATCH_H
