//===- OffloadStubEmitter.cpp - Copy schedules as launch stubs ------------===//
//
// A region of a CUDA plan that offloads inputs to pinned host memory
// becomes one offload site: its tensors' sizes and their offsets in one
// host block are constants of the source, as are the prefetch trigger and
// the forward ops the outgoing copies run alongside (what
// memopt-schedule-prefetch modelled). The launchers copy every tensor of the
// site in one call: memcpy on the host, cudaMemcpyAsync on the stream the
// runtime passes (its side stream, ordered after forward by an event) under
// __CUDACC__.
//
//===----------------------------------------------------------------------===//
#include "OffloadStubs.h"

#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Runtime/LaunchStubs.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memopt;

static int64_t alignUp(int64_t bytes) {
  constexpr int64_t kAlign = MEMOPT_STUB_COPY_ALIGN;
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

LogicalResult
mlir::memopt::collectOffloadSite(CheckpointOp region,
                                 std::vector<OffloadStubSite> &sites) {
  OffloadStubSite site;
  site.name = region.getLabel().str();
  site.trigger = region.getPrefetchTrigger().str();
  site.heldFor = region.getOffloadHeldFor().value_or(0);
  for (auto [index, policy] : llvm::enumerate(region.getPolicies())) {
    auto offload = dyn_cast<OffloadPolicyAttr>(policy);
    if (!offload || offload.getKind() != OffloadKind::host)
      continue;
    Type type = region.getInputs()[index].getType();
    OffloadStubCopy copy;
    llvm::raw_string_ostream(copy.what) << "input " << index << ": " << type;
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked) {
      site.skipped = copy.what + " is not one tensor";
      continue;
    }
    if (!ranked.hasStaticShape())
      return region.emitError("cannot emit launch stubs for region '")
             << region.getLabel() << "': " << copy.what
             << " has no static shape; launch stubs need static sizes "
                "(compile with --input-shape or --spec)";
    copy.numel = ranked.getNumElements();
    copy.elementSize = getElementBytes(ranked.getElementType());
    if (copy.elementSize <= 0) {
      site.skipped = copy.what + " has no fixed element size";
      continue;
    }
    copy.offset = site.hostBytes;
    site.hostBytes += alignUp(copy.bytes());
    site.copies.push_back(std::move(copy));
  }
  if (site.copies.empty() && site.skipped.empty())
    return success(); // nothing offloaded to the host
  sites.push_back(std::move(site));
  return success();
}

namespace {
void writeSite(llvm::raw_ostream &os, const std::string &id,
               const OffloadStubSite &site) {
  os << "\n// " << id << ": region " << stubCString(site.name) << ", "
     << site.copies.size() << " tensor(s) to pinned host memory, one block of "
     << site.hostBytes << " bytes\n";
  for (const OffloadStubCopy &c : site.copies)
    os << "//   " << c.what << ", " << c.bytes() << " bytes at offset "
       << c.offset << "\n";
  os << "//   out:  device -> host on the side stream after the region's "
        "forward";
  if (site.heldFor > 0)
    os << "; the inputs stay on the device while the next " << site.heldFor
       << " op(s) run";
  os << "\n//   back: host -> device when the backward of region "
     << stubCString(site.trigger) << " starts\n";
  os << "constexpr memopt_stub_copy " << id << "Copies[] = {";
  for (auto [i, c] : llvm::enumerate(site.copies))
    os << (i ? ", " : "") << "{" << c.numel << ", " << c.elementSize << ", 0, "
       << c.offset << "}";
  os << "};\n\n";

  os << "int " << id
     << "HostOut(const void *const *device, void *host, void *) {\n"
     << "  char *block = static_cast<char *>(host);\n";
  for (auto [i, c] : llvm::enumerate(site.copies))
    os << "  hostCopy<" << c.bytes() << ">(block + " << c.offset << ", device["
       << i << "]);\n";
  os << "  return 0;\n}\n\n";
  os << "int " << id
     << "HostBack(const void *host, void *const *device, void *) {\n"
     << "  const char *block = static_cast<const char *>(host);\n";
  for (auto [i, c] : llvm::enumerate(site.copies))
    os << "  hostCopy<" << c.bytes() << ">(device[" << i << "], block + "
       << c.offset << ");\n";
  os << "  return 0;\n}\n";

  os << "\n#ifdef __CUDACC__\n";
  for (bool out : {true, false}) {
    os << "int " << id << (out ? "CudaOut" : "CudaBack")
       << (out ? "(const void *const *device, void *host, void *stream) {\n"
               : "(const void *host, void *const *device, void *stream) {\n")
       << "  cudaStream_t s = static_cast<cudaStream_t>(stream);\n"
       << "  " << (out ? "char" : "const char") << " *block = static_cast<"
       << (out ? "char" : "const char")
       << " *>(host);\n  cudaError_t err = cudaSuccess;\n";
    for (auto [i, c] : llvm::enumerate(site.copies)) {
      os << "  if ((err = cudaMemcpyAsync(";
      if (out)
        os << "block + " << c.offset << ", device[" << i << "], " << c.bytes()
           << ", cudaMemcpyDeviceToHost";
      else
        os << "device[" << i << "], block + " << c.offset << ", " << c.bytes()
           << ", cudaMemcpyHostToDevice";
      os << ", s)) != cudaSuccess)\n    return err;\n";
    }
    os << "  return err;\n}\n\n";
  }
  os << "#endif // __CUDACC__\n";
}
} // namespace

void mlir::memopt::writeOffloadSites(llvm::raw_ostream &os,
                                     const std::vector<OffloadStubSite> &sites,
                                     StringRef model) {
  size_t next = 0;
  for (const OffloadStubSite &site : sites) {
    if (!site.skipped.empty()) {
      os << "\n// region " << stubCString(site.name)
         << " offloads with the generic copies: " << site.skipped << "\n";
      continue;
    }
    writeSite(os, "offload" + std::to_string(next++), site);
  }
  if (next == 0)
    return;
  os << "\nconst memopt_stub_offload_site kOffloadSites[] = {\n";
  for (bool cuda : {false, true}) {
    if (cuda)
      os << "#ifdef __CUDACC__\n";
    size_t index = 0;
    for (const OffloadStubSite &site : sites) {
      if (!site.skipped.empty())
        continue;
      const std::string id = "offload" + std::to_string(index++);
      const char *prefix = cuda ? "Cuda" : "Host";
      os << "    {" << stubCString(site.name) << ", "
         << stubCString(site.trigger) << ", "
         << (cuda ? "MEMOPT_STUB_CUDA" : "MEMOPT_STUB_HOST") << ", "
         << site.copies.size() << ", " << id << "Copies, " << site.hostBytes
         << ", " << site.heldFor << ", 0, " << id << prefix << "Out, " << id
         << prefix << "Back},\n";
    }
    if (cuda)
      os << "#endif\n";
  }
  os << "};\n\n"
     << "struct OffloadRegistrar {\n  OffloadRegistrar() {\n"
     << "    memopt_register_offload_stubs(MEMOPT_LAUNCH_STUBS_ABI, "
     << stubCString(model)
     << ", kOffloadSites, sizeof(kOffloadSites) / sizeof(kOffloadSites[0]));\n"
     << "  }\n} offloadRegistrar;\n";
}
