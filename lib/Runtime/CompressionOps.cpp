//===- CompressionOps.cpp - memopt:: compression operators ----------------===//
//
// TorchScript / Python operators over the C++ API of Compression.h:
//
//   memopt::compress(Tensor x, str kind, bool check=False) -> Tensor
//       The payload of x (float32 / float16 / bfloat16, any shape and
//       strides) for kind "bit" (uint8, ceil(numel / 8) bytes), "bool"
//       (bool, numel), "uint8" (uint8, numel) or "sparse" (int32 flat indices
//       of the ones, int64 from 2^31 elements). With check=True a value the
//       kind cannot represent raises instead of being rounded.
//   memopt::decompress(Tensor packed, str kind, int[] shape,
//                      ScalarType dtype) -> Tensor
//       The contiguous tensor of `shape` and `dtype` on packed's device;
//       bitwise equal to the compressed input when that input was valid.
//   memopt::is_binary(Tensor x) -> bool
//       Whether every value of x is 0 or 1, i.e. compress(x, "bit",
//       check=True) would succeed.
//   memopt::packed_numel(str kind, int[] shape) -> int
//       Elements of the payload of a "bit", "bool" or "uint8" compression
//       of a tensor of `shape` (sparse payloads depend on the data).
//
// The ops are registered for the CPU (and, with MEMOPT_WITH_CUDA, CUDA)
// dispatch keys; they are not differentiable.
//
//===----------------------------------------------------------------------===//

#include "memopt/Runtime/Compression.h"

#include <torch/library.h>

namespace memopt::runtime {
namespace {

CompressionKind kindOf(c10::string_view kind) {
  return parseCompressionKind(std::string(kind.data(), kind.size()));
}

at::Tensor compressOp(const at::Tensor &x, c10::string_view kind, bool check) {
  return compressTensor(x, kindOf(kind), check).data;
}

at::Tensor decompressOp(const at::Tensor &packed, c10::string_view kind,
                        at::IntArrayRef shape, at::ScalarType dtype) {
  PackedTensor p{packed, kindOf(kind), shape.vec(), dtype,
                 packed.defined() ? packed.device() : at::Device(at::kCPU)};
  return decompressTensor(p);
}

bool isBinaryOp(const at::Tensor &x) { return isBinary(x); }

int64_t packedNumelOp(c10::string_view kind, at::IntArrayRef shape) {
  const CompressionKind k = kindOf(kind);
  TORCH_CHECK(k != CompressionKind::Sparse,
              "memopt: packed_numel(sparse): the payload size depends on the "
              "number of ones");
  int64_t numel = 1;
  for (int64_t size : shape) {
    TORCH_CHECK(size >= 0, "memopt: packed_numel: negative size in shape ",
                shape);
    numel *= size;
  }
  return packedNumel(k, numel);
}

} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  m.def("compress(Tensor x, str kind, bool check=False) -> Tensor");
  m.def("decompress(Tensor packed, str kind, int[] shape, ScalarType dtype) "
        "-> Tensor");
  m.def("is_binary(Tensor x) -> bool");
  // No tensor argument: a catch-all kernel, not a per-device one.
  m.def("packed_numel(str kind, int[] shape) -> int",
        &memopt::runtime::packedNumelOp);
}

TORCH_LIBRARY_IMPL(memopt, CPU, m) {
  m.impl("compress", &memopt::runtime::compressOp);
  m.impl("decompress", &memopt::runtime::decompressOp);
  m.impl("is_binary", &memopt::runtime::isBinaryOp);
}

#ifdef MEMOPT_WITH_CUDA
TORCH_LIBRARY_IMPL(memopt, CUDA, m) {
  m.impl("compress", &memopt::runtime::compressOp);
  m.impl("decompress", &memopt::runtime::decompressOp);
  m.impl("is_binary", &memopt::runtime::isBinaryOp);
}
#endif
