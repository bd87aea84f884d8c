//===- Compression.h - Saved-tensor compression for spikes ------*- C++ -*-===//
//
// Binary ("spike") and small-integer tensors saved for backward can be stored
// far smaller than their float32/float16/bfloat16 form. This is the C++ API
// the checkpoint runtime and the memopt:: TorchScript ops share.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_COMPRESSION_H
#define MEMOPT_RUNTIME_COMPRESSION_H

#include "memopt/Runtime/PackedFormat.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace memopt::runtime {

/// The kinds of the contract (PackedFormat.h): bit, bool, uint8, sparse.
using CompressionKind = ::memopt::packed::Kind;

/// Parses "bit", "bool", "uint8" or "sparse"; throws c10::Error otherwise.
CompressionKind parseCompressionKind(const std::string &name);
const char *compressionKindName(CompressionKind kind);

/// A compressed tensor plus what is needed to restore it exactly.
struct PackedTensor {
  at::Tensor data;             // packed payload (uint8 / bool / int32 / int64)
  CompressionKind kind;
  std::vector<int64_t> shape;  // logical shape
  at::ScalarType dtype;        // logical element type
  at::Device device = at::kCPU;
};

/// Compresses `x` (float32/float16/bfloat16, any shape, contiguous or not).
/// With `check`, the first value the kind cannot represent exactly raises a
/// c10::Error naming its flat index and value instead of being corrupted.
PackedTensor compressTensor(const at::Tensor &x, CompressionKind kind,
                            bool check);

/// Restores the logical tensor (contiguous, original shape and dtype).
at::Tensor decompressTensor(const PackedTensor &packed);

/// Flat (logical, row-major) index of the first value of `x` that `kind`
/// cannot represent exactly, or -1 when every value is representable.
int64_t findFirstInvalid(const at::Tensor &x, CompressionKind kind);

/// Whether every value of `x` is 0 or 1 (-0.0 counts as 0).
bool isBinary(const at::Tensor &x);

/// Element type of the payload of `kind` for `numel` logical elements:
/// uint8 (bit, uint8), bool, or int32 / int64 (sparse, below / from 2^31).
at::ScalarType packedScalarType(CompressionKind kind, int64_t numel);

/// Elements of the payload of `kind` for `numel` logical elements (the
/// contract's payloadNumel).
inline int64_t packedNumel(CompressionKind kind, int64_t numel) {
  return ::memopt::packed::payloadNumel(kind, numel);
}

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_COMPRESSION_H
