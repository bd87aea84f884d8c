//===- MaskBits.cpp - One bit per value, packed a chunk at a time ---------===//
#include "MaskBits.h"

namespace memopt::runtime {
namespace {

at::Tensor bitWeights(const at::Device &device) {
  return at::tensor({1, 2, 4, 8, 16, 32, 64, 128},
                    at::TensorOptions().dtype(at::kByte).device(device));
}

} // namespace

at::Tensor packMask(const at::Tensor &tensor, MaskTest test) {
  const int64_t n = tensor.numel();
  at::Tensor flat = tensor.reshape({-1});
  at::Tensor bits =
      at::empty({(n + 7) / 8},
                at::TensorOptions().dtype(at::kByte).device(tensor.device()));
  const at::Tensor weights = bitWeights(tensor.device());
  for (int64_t begin = 0; begin < n; begin += kMaskChunk) {
    const int64_t count = std::min(kMaskChunk, n - begin);
    at::Tensor bytes = test(flat.slice(0, begin, begin + count)).to(at::kByte);
    if (count % 8)
      bytes = at::constant_pad_nd(bytes, {0, 8 - count % 8}, 0);
    bits.slice(0, begin / 8, begin / 8 + bytes.numel() / 8)
        .copy_(bytes.view({-1, 8}).mul_(weights).sum(1, false, at::kByte));
  }
  return bits;
}

at::Tensor unpackMask(const at::Tensor &bits, int64_t begin, int64_t count) {
  const int64_t firstByte = begin / 8;
  const int64_t lastByte = (begin + count + 7) / 8;
  at::Tensor bytes = bits.slice(0, firstByte, lastByte)
                         .unsqueeze(1)
                         .bitwise_and(bitWeights(bits.device()))
                         .ne(0)
                         .view({-1});
  return bytes.slice(0, begin - firstByte * 8, begin - firstByte * 8 + count);
}

} // namespace memopt::runtime
