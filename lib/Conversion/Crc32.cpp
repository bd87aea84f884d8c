//===- Crc32.cpp - zip's CRC-32 by carry-less multiplication --------------===//
//
// Folding (reflected CRC-32, polynomial 0x04C11DB7): four 128-bit lanes of
// the message, each multiplied forward by x^512 modulo the polynomial and
// added to the next 64 bytes, keep the message's remainder while shrinking
// it; the lanes fold into one (by x^128 each) and that one into any 16-byte
// blocks left. What is left, 16 bytes plus fewer than 16, has the whole
// message's CRC: zlib finishes it. Each fold multiplies a lane's two 64-bit
// halves by x^(D+32) and x^(D-32) mod P (D = 512 or 128), bit-reflected and
// shifted by one as carry-less products of reflected operands need.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/Crc32.h"

#include <zlib.h>

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MEMOPT_CRC32_FOLDING 1
#endif

using namespace mlir::memopt;

uint32_t mlir::memopt::updateCrc32WithZlib(uint32_t crc, const uint8_t *data,
                                           size_t size) {
  uLong value = crc;
  while (size) {
    size_t chunk = std::min<size_t>(size, 1u << 30); // zlib takes a uInt
    value = crc32(value, data, static_cast<uInt>(chunk));
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(value);
}

#ifdef MEMOPT_CRC32_FOLDING
namespace {
// x^544 and x^480 mod P (fold by 512 bits), x^160 and x^96 (by 128 bits),
// reflected and shifted as above: the low half of a lane (the earlier
// bytes, the higher powers) takes the first of each pair.
constexpr long long kFold512Low = 0x154442bd4LL, kFold512High = 0x1c6e41596LL;
constexpr long long kFold128Low = 0x1751997d0LL, kFold128High = 0x0ccaa009eLL;

__attribute__((target("pclmul,sse2"))) inline __m128i load(const uint8_t *at) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i *>(at));
}

/// `lane` multiplied forward by the fold's distance, plus `next`.
__attribute__((target("pclmul,sse2"))) inline __m128i
fold(__m128i lane, __m128i constants, __m128i next) {
  __m128i low = _mm_clmulepi64_si128(lane, constants, 0x00);
  __m128i high = _mm_clmulepi64_si128(lane, constants, 0x11);
  return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

__attribute__((target("pclmul,sse2"))) uint32_t
foldedCrc32(uint32_t crc, const uint8_t *data, size_t size) {
  const __m128i by512 = _mm_set_epi64x(kFold512High, kFold512Low);
  const __m128i by128 = _mm_set_epi64x(kFold128High, kFold128Low);
  // zlib's crc is the complemented register: the register enters the
  // message as its first four bytes.
  __m128i lane0 =
      _mm_xor_si128(load(data), _mm_cvtsi32_si128(static_cast<int>(~crc)));
  __m128i lane1 = load(data + 16), lane2 = load(data + 32),
          lane3 = load(data + 48);
  data += 64;
  size -= 64;
  for (; size >= 64; data += 64, size -= 64) {
    lane0 = fold(lane0, by512, load(data));
    lane1 = fold(lane1, by512, load(data + 16));
    lane2 = fold(lane2, by512, load(data + 32));
    lane3 = fold(lane3, by512, load(data + 48));
  }
  __m128i lane =
      fold(fold(fold(lane0, by128, lane1), by128, lane2), by128, lane3);
  for (; size >= 16; data += 16, size -= 16)
    lane = fold(lane, by128, load(data));
  alignas(16) uint8_t rest[16];
  _mm_store_si128(reinterpret_cast<__m128i *>(rest), lane);
  // The folded block, from a zero register (zlib's 0xFFFFFFFF), then the
  // bytes after it.
  return updateCrc32WithZlib(updateCrc32WithZlib(0xFFFFFFFFu, rest, 16), data,
                             size);
}
} // namespace

bool mlir::memopt::crc32UsesCarrylessMultiply() {
  static const bool supported =
      __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
  return supported;
}

uint32_t mlir::memopt::updateCrc32(uint32_t crc, const uint8_t *data,
                                   size_t size) {
  // Below four lanes there is nothing to fold.
  if (size < 64 || !crc32UsesCarrylessMultiply())
    return updateCrc32WithZlib(crc, data, size);
  return foldedCrc32(crc, data, size);
}
#else
bool mlir::memopt::crc32UsesCarrylessMultiply() { return false; }

uint32_t mlir::memopt::updateCrc32(uint32_t crc, const uint8_t *data,
                                   size_t size) {
  return updateCrc32WithZlib(crc, data, size);
}
#endif
