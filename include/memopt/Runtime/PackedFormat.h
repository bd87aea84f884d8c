//===- PackedFormat.h - sizes of packed tensors -----------------*- C++ -*-===//
//
// Part of the compiler/runtime contract (plain C++: no torch, no MLIR). How
// big a packed tensor's payload is: the runtime allocates and checks
// payloads by it, the dialect's !memopt.packed type and the memory model
// count bytes by it.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_PACKEDFORMAT_H
#define MEMOPT_RUNTIME_PACKEDFORMAT_H

#include <cstdint>

namespace memopt::packed {

enum class Kind {
  Bit,    // 0/1 values, 8 per byte
  Bool,   // 0/1 values, one byte each (torch.bool)
  UInt8,  // small non-negative integers 0..255, one byte each
  Sparse, // flat indices of the non-zero (== 1) entries of a 0/1 tensor
};

/// Payload elements for `numel` logical values: (numel + 7) / 8 bytes for
/// bit, numel for bool and uint8, at most numel indices for sparse (one per
/// non-zero value).
constexpr int64_t payloadNumel(Kind kind, int64_t numel) {
  return kind == Kind::Bit ? (numel + 7) / 8 : numel;
}

/// Bytes of one payload element: 1, or 4 for sparse indices (int32 below
/// 2^31 elements, which every statically sized packed type the compiler
/// plans for is).
constexpr int64_t payloadElementBytes(Kind kind) {
  return kind == Kind::Sparse ? 4 : 1;
}

/// The most bytes a payload takes (sparse: every value one).
constexpr int64_t maxPayloadBytes(Kind kind, int64_t numel) {
  return payloadNumel(kind, numel) * payloadElementBytes(kind);
}

} // namespace memopt::packed

#endif // MEMOPT_RUNTIME_PACKEDFORMAT_H
