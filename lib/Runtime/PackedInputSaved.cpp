//===- PackedInputSaved.cpp - Pack a layer input, check it, restore it ----===//

#include "PackedInputSaved.h"

#include "CompressionBackends.h"
#include "LaunchStubDispatch.h"
#include "memopt/Runtime/PackedInput.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <sstream>
#include <string>

namespace memopt::runtime {
namespace {

std::atomic<bool> gCheck{true};

/// `x.permute(perm)` is contiguous for a dense `x`: dims by decreasing stride
/// (a stable sort keeps size-1 dims, whose strides tie, in place).
std::vector<int64_t> memoryOrder(const at::Tensor &x) {
  std::vector<int64_t> perm(static_cast<size_t>(x.dim()));
  std::iota(perm.begin(), perm.end(), 0);
  const auto strides = x.strides();
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return strides[a] > strides[b];
  });
  return perm;
}

[[noreturn]] void reportNonBinary(const at::Tensor &x, const at::Tensor &packed,
                                  const std::vector<int64_t> &perm,
                                  int64_t index, const char *op) {
  const float value = packed.reshape({-1})[index].item<float>();
  // Flat index in `packed` -> coordinates of `packed` -> coordinates of `x`.
  std::vector<int64_t> coords(static_cast<size_t>(x.dim()), 0);
  for (int64_t d = packed.dim() - 1; d >= 0; --d) {
    const int64_t size = packed.size(d);
    const int64_t c = size == 0 ? 0 : index % size;
    index = size == 0 ? 0 : index / size;
    coords[static_cast<size_t>(perm.empty() ? d : perm[d])] = c;
  }
  std::ostringstream where;
  where << '[';
  for (size_t i = 0; i < coords.size(); ++i)
    where << (i ? ", " : "") << coords[i];
  where << ']';
  TORCH_CHECK(false, "memopt: ", op,
              " input is not binary (values other than 0 and 1); found ",
              detail::formatValue(value), " at ", where.str(), " of a ",
              detail::dtypeName(x.scalar_type()), " tensor of shape ",
              x.sizes(),
              "; keep this input unpacked (call the plain ATen op) or make "
              "it binary");
}

} // namespace

void setPackedInputCheck(bool enabled) {
  gCheck.store(enabled, std::memory_order_relaxed);
}

bool packedInputCheckEnabled() {
  return gCheck.load(std::memory_order_relaxed);
}

CompressionKind parsePackedInputKind(c10::string_view kind, const char *op) {
  const std::string name(kind.data(), kind.size());
  TORCH_CHECK(name == "bit" || name == "bool", "memopt: ", op,
              ": kind must be 'bit' or 'bool', got '", name, "'");
  return parseCompressionKind(name);
}

void describeInput(const at::Tensor &x, PackedInputLayout &layout) {
  layout.dtype = x.scalar_type();
  layout.sizes = x.sizes().vec();
  layout.strides = x.strides().vec();
  layout.packedSizes = layout.sizes;
  layout.restoreStrides = false;
  layout.site = nullptr;
}

at::Tensor packInput(const at::Tensor &x, CompressionKind kind, const char *op,
                     PackedInputLayout &layout) {
  describeInput(x, layout);
  layout.kind = kind;
  TORCH_CHECK(x.is_cpu() || x.is_cuda(), "memopt: ", op, ": inputs on ",
              x.device(), " are not supported (CPU or CUDA only)");
  const at::ScalarType dtype = x.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf ||
                  dtype == at::kBFloat16,
              "memopt: ", op, "(", compressionKindName(kind),
              "): expected a float32, float16 or bfloat16 input, got ",
              detail::dtypeName(dtype));

  at::Tensor view = x.detach();
  std::vector<int64_t> perm;
  if (!view.is_contiguous() && view.is_non_overlapping_and_dense()) {
    perm = memoryOrder(view);
    at::Tensor permuted = view.permute(perm);
    if (permuted.is_contiguous()) {
      view = permuted;
      layout.restoreStrides = true;
    } else {
      perm.clear();
    }
  }
  layout.packedSizes = view.sizes().vec();

  int64_t firstInvalid = -1;
  const bool check = packedInputCheckEnabled();
  at::Tensor payload;
  layout.site = stubs::findLayerSite(view, kind);
  if (layout.site) {
    std::vector<int64_t> invalid;
    payload = stubs::pack(*layout.site, {view}, check, invalid).front();
    firstInvalid = invalid.front();
  } else {
    stubs::countGenericPack(kind, check, view);
    payload = view.is_cuda()
                  ? detail::compressCUDA(view, kind, check, firstInvalid)
                  : detail::compressCPU(view, kind, check, firstInvalid);
  }
  if (firstInvalid >= 0)
    reportNonBinary(x, view, perm, firstInvalid, op);
  return payload;
}

at::Tensor unpackInput(const at::Tensor &payload,
                       const PackedInputLayout &layout) {
  PackedTensor packed{payload, layout.kind, layout.packedSizes, layout.dtype,
                      payload.device()};
  at::Tensor restored = layout.site ? stubs::unpack(*layout.site, {packed})[0]
                                    : decompressTensor(packed);
  if (layout.restoreStrides)
    restored = restored.as_strided(layout.sizes, layout.strides, 0);
  return restored;
}

at::Tensor inputPlaceholder(const PackedInputLayout &layout,
                            const at::TensorOptions &options) {
  return at::empty_strided(layout.sizes, layout.strides,
                           options.dtype(layout.dtype));
}

} // namespace memopt::runtime
