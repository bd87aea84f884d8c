//===- Compression.cpp - Saved-tensor compression API ---------------------===//
//
// Argument validation, error messages and the choice of backend; the byte
// moving lives in CompressionKernelsCPU.cpp and CompressionCUDA.cpp.
//
//===----------------------------------------------------------------------===//

#include "memopt/Runtime/Compression.h"

#include "CompressionBackends.h"
#include "LaunchStubDispatch.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace memopt::runtime {
namespace detail {

const char *dtypeName(at::ScalarType dtype) {
  switch (dtype) {
  case at::kFloat:
    return "float32";
  case at::kHalf:
    return "float16";
  case at::kBFloat16:
    return "bfloat16";
  case at::kDouble:
    return "float64";
  case at::kLong:
    return "int64";
  case at::kInt:
    return "int32";
  case at::kShort:
    return "int16";
  case at::kChar:
    return "int8";
  case at::kByte:
    return "uint8";
  case at::kBool:
    return "bool";
  default:
    return c10::toString(dtype);
  }
}

/// Shortest %g form that reads back as the same float ("0.5", "nan", "inf").
/// snprintf rather than std::to_chars(float), which needs libstdc++ 11.
std::string formatValue(float value) {
  char buf[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(value));
    if (std::strtof(buf, nullptr) == value)
      break;
  }
  return buf;
}

} // namespace detail

namespace {

using detail::dtypeName;
using detail::formatValue;

bool isSupportedDtype(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
}

void checkDtype(const char *op, CompressionKind kind, at::ScalarType dtype) {
  TORCH_CHECK(isSupportedDtype(dtype), "memopt: ", op, "(",
              compressionKindName(kind),
              "): expected a float32, float16 or bfloat16 tensor, got ",
              dtypeName(dtype));
}

/// The value at logical flat index `index`, read without copying `x`.
float valueAt(const at::Tensor &x, int64_t index) {
  int64_t offset = x.storage_offset();
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    offset += (index % x.size(d)) * x.stride(d);
    index /= x.size(d);
  }
  return x.as_strided({}, {}, offset).item<float>();
}

[[noreturn]] void reportInvalid(const at::Tensor &x, CompressionKind kind,
                                int64_t index) {
  TORCH_CHECK(
      false, "memopt: compress(", compressionKindName(kind), "): value ",
      formatValue(valueAt(x, index)), " at flat index ", index, " of a ",
      dtypeName(x.scalar_type()), " tensor of shape ", x.sizes(), " is not ",
      kind == CompressionKind::UInt8 ? "an integer in [0, 255]" : "0 or 1");
}

bool isCUDA(const at::Tensor &t, const char *op, CompressionKind kind) {
  TORCH_CHECK(t.is_cpu() || t.is_cuda(), "memopt: ", op, "(",
              compressionKindName(kind), "): tensors on ", t.device(),
              " are not supported (CPU or CUDA only)");
  return t.is_cuda();
}

void checkPayload(const at::Tensor &payload, CompressionKind kind,
                  at::IntArrayRef shape, int64_t numel) {
  const char *name = compressionKindName(kind);
  TORCH_CHECK(payload.defined(), "memopt: decompress(", name,
              "): undefined payload");
  const at::ScalarType expected = packedScalarType(kind, numel);
  const bool anyIndexType =
      kind == CompressionKind::Sparse &&
      (payload.scalar_type() == at::kInt || payload.scalar_type() == at::kLong);
  TORCH_CHECK(payload.scalar_type() == expected || anyIndexType,
              "memopt: decompress(", name, "): payload dtype is ",
              dtypeName(payload.scalar_type()), ", expected ",
              dtypeName(expected));
  if (kind == CompressionKind::Sparse) {
    TORCH_CHECK(payload.numel() <= numel,
                "memopt: decompress(sparse): ", payload.numel(),
                " indices for shape ", shape, " of ", numel, " elements");
    return;
  }
  TORCH_CHECK(payload.numel() == packedNumel(kind, numel),
              "memopt: decompress(", name, "): payload holds ", payload.numel(),
              " elements, shape ", shape, " needs ", packedNumel(kind, numel));
}

} // namespace

CompressionKind parseCompressionKind(const std::string &name) {
  if (name == "bit")
    return CompressionKind::Bit;
  if (name == "bool")
    return CompressionKind::Bool;
  if (name == "uint8")
    return CompressionKind::UInt8;
  if (name == "sparse")
    return CompressionKind::Sparse;
  TORCH_CHECK(false, "memopt: unknown compression kind '", name,
              "' (expected bit, bool, uint8 or sparse)");
}

const char *compressionKindName(CompressionKind kind) {
  switch (kind) {
  case CompressionKind::Bit:
    return "bit";
  case CompressionKind::Bool:
    return "bool";
  case CompressionKind::UInt8:
    return "uint8";
  case CompressionKind::Sparse:
    return "sparse";
  }
  return "?";
}

at::ScalarType packedScalarType(CompressionKind kind, int64_t numel) {
  switch (kind) {
  case CompressionKind::Bool:
    return at::kBool;
  case CompressionKind::Sparse:
    return numel <= std::numeric_limits<int32_t>::max() ? at::kInt : at::kLong;
  case CompressionKind::Bit:
  case CompressionKind::UInt8:
    break;
  }
  return at::kByte;
}

PackedTensor compressTensor(const at::Tensor &x, CompressionKind kind,
                            bool check) {
  TORCH_CHECK(x.defined(), "memopt: compress(", compressionKindName(kind),
              "): undefined tensor");
  checkDtype("compress", kind, x.scalar_type());
  int64_t firstInvalid = -1;
  stubs::countGenericPack(kind, check, x);
  at::Tensor data = isCUDA(x, "compress", kind)
                        ? detail::compressCUDA(x, kind, check, firstInvalid)
                        : detail::compressCPU(x, kind, check, firstInvalid);
  if (firstInvalid >= 0)
    reportInvalid(x, kind, firstInvalid);
  return PackedTensor{std::move(data), kind, x.sizes().vec(), x.scalar_type(),
                      x.device()};
}

at::Tensor decompressTensor(const PackedTensor &packed) {
  const CompressionKind kind = packed.kind;
  checkDtype("decompress", kind, packed.dtype);
  int64_t numel = 1;
  for (int64_t size : packed.shape) {
    TORCH_CHECK(size >= 0, "memopt: decompress(", compressionKindName(kind),
                "): negative size in shape ", at::IntArrayRef(packed.shape));
    numel *= size;
  }
  checkPayload(packed.data, kind, packed.shape, numel);
  // The payload's device wins over `packed.device`: it is where the bytes are.
  const bool cuda = isCUDA(packed.data, "decompress", kind);
  at::Tensor out =
      at::empty(packed.shape, packed.data.options().dtype(packed.dtype));
  if (numel == 0)
    return out;
  const at::Tensor payload = packed.data.contiguous();
  stubs::countGenericUnpack(kind, packed.dtype, numel);
  if (cuda)
    detail::decompressCUDA(payload, kind, out);
  else
    detail::decompressCPU(payload, kind, out);
  return out;
}

int64_t findFirstInvalid(const at::Tensor &x, CompressionKind kind) {
  TORCH_CHECK(x.defined(), "memopt: check(", compressionKindName(kind),
              "): undefined tensor");
  checkDtype("check", kind, x.scalar_type());
  if (x.numel() == 0)
    return -1;
  return isCUDA(x, "check", kind) ? detail::findFirstInvalidCUDA(x, kind)
                                  : detail::findFirstInvalidCPU(x, kind);
}

bool isBinary(const at::Tensor &x) {
  return findFirstInvalid(x, CompressionKind::Bit) < 0;
}

} // namespace memopt::runtime
