//===- LaunchStubHost.h - Host loops of the launch stubs --------*- C++ -*-===//
//
// Header-only, no LibTorch: the element loops of the host (CPU) launch stubs.
// Generated launchers call them with element counts that are compile-time
// constants. Values are raw bit patterns (float32 as uint32_t, float16 and
// bfloat16 as uint16_t); the formats and the value rules are the runtime's
// (docs/runtime-compression.md): a value encodes as 1 when it is not +-0,
// and a checked value is valid when it is +-0 or exactly 1.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_LAUNCHSTUBHOST_H
#define MEMOPT_RUNTIME_LAUNCHSTUBHOST_H

#include <stdint.h>
#include <string.h>

namespace memopt_stubs {

/// Bit patterns of one element type.
struct F32 {
  using U = uint32_t;
  static constexpr U kOne = 0x3F800000u;
  static constexpr U kMagnitude = 0x7FFFFFFFu;
};
struct F16 {
  using U = uint16_t;
  static constexpr U kOne = 0x3C00;
  static constexpr U kMagnitude = 0x7FFF;
};
struct BF16 {
  using U = uint16_t;
  static constexpr U kOne = 0x3F80;
  static constexpr U kMagnitude = 0x7FFF;
};

/// The first flat index of `in` that is neither +-0 nor 1, or `n`.
template <class T, int64_t N> int64_t hostFirstInvalid(const void *data) {
  const auto *in = static_cast<const typename T::U *>(data);
  for (int64_t i = 0; i < N; ++i)
    if ((in[i] & T::kMagnitude) != 0 && in[i] != T::kOne)
      return i;
  return N;
}

/// bit: element i is bit (i % 8) of byte i / 8; padding bits are zero.
template <class T, int64_t N> void hostBitPack(const void *data, void *out) {
  const auto *in = static_cast<const typename T::U *>(data);
  auto *bytes = static_cast<uint8_t *>(out);
  constexpr int64_t kWhole = N / 8;
  for (int64_t b = 0; b < kWhole; ++b) {
    uint8_t byte = 0;
    for (int j = 0; j < 8; ++j)
      byte |= static_cast<uint8_t>((in[8 * b + j] & T::kMagnitude) != 0) << j;
    bytes[b] = byte;
  }
  if (N % 8 != 0) {
    uint8_t byte = 0;
    for (int64_t i = kWhole * 8; i < N; ++i)
      byte |= static_cast<uint8_t>((in[i] & T::kMagnitude) != 0) << (i % 8);
    bytes[kWhole] = byte;
  }
}

template <class T, int64_t N> void hostBitUnpack(const void *data, void *out) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  auto *values = static_cast<typename T::U *>(out);
  for (int64_t i = 0; i < N; ++i)
    values[i] = ((bytes[i >> 3] >> (i & 7)) & 1) ? T::kOne : 0;
}

/// bool: one byte per element, 0 or 1.
template <class T, int64_t N> void hostBoolPack(const void *data, void *out) {
  const auto *in = static_cast<const typename T::U *>(data);
  auto *bytes = static_cast<uint8_t *>(out);
  for (int64_t i = 0; i < N; ++i)
    bytes[i] = (in[i] & T::kMagnitude) != 0;
}

template <class T, int64_t N> void hostBoolUnpack(const void *data, void *out) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  auto *values = static_cast<typename T::U *>(out);
  for (int64_t i = 0; i < N; ++i)
    values[i] = bytes[i] ? T::kOne : 0;
}

/// An offload site's copy of one tensor: `Bytes` bytes, either way.
template <int64_t Bytes> void hostCopy(void *to, const void *from) {
  memcpy(to, from, Bytes);
}

} // namespace memopt_stubs

#endif // MEMOPT_RUNTIME_LAUNCHSTUBHOST_H
