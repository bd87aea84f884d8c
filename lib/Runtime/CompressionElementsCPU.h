//===- CompressionElementsCPU.h - Element types and tiles -------*- C++ -*-===//
//
// Private to the CPU compression kernels: the element types as raw bit
// patterns, the per-element encoders (tight, branch-free loops that GCC
// vectorizes at -O3) and a reader that walks any strided tensor in logical
// order one small tile at a time, so that non-contiguous inputs never need a
// full-size contiguous copy.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_COMPRESSIONELEMENTSCPU_H
#define MEMOPT_LIB_RUNTIME_COMPRESSIONELEMENTSCPU_H

#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>

namespace memopt::runtime::detail {

/// Logical elements per tile; a multiple of 8 so tiles start on a byte.
constexpr int64_t kTile = 2048;

inline uint32_t floatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
inline float bitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

struct F32 {
  using U = uint32_t;
  static constexpr U kOne = 0x3F800000u;
  static constexpr U kMagnitude = 0x7FFFFFFFu;
  static uint32_t toF32Bits(U b) { return b; }
  static U fromSmallInt(uint8_t c) { return floatBits(c); }
};

struct F16 {
  using U = uint16_t;
  static constexpr U kOne = 0x3C00;
  static constexpr U kMagnitude = 0x7FFF;
  // Exact, with selects instead of branches so that loops vectorize.
  static uint32_t toF32Bits(U h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7FFFu;                   // exponent and mantissa
    const uint32_t normal = (em << 13) + 0x38000000u;  // exponent 15 -> 127
    const uint32_t special = (em << 13) | 0x7F800000u; // inf, NaN
    const uint32_t subnormal =
        floatBits(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
    const uint32_t isSpecial = 0u - static_cast<uint32_t>(em >= 0x7C00u);
    const uint32_t isNormal =
        (0u - static_cast<uint32_t>(em >= 0x0400u)) & ~isSpecial;
    return sign | (special & isSpecial) | (normal & isNormal) |
           (subnormal & ~(isSpecial | isNormal));
  }
  // A non-zero integer < 256 is a normal float whose low 13 mantissa bits are
  // zero: rebias the exponent (127 -> 15) and drop those bits.
  static U fromSmallInt(uint8_t c) {
    const U h = static_cast<U>((F32::fromSmallInt(c) >> 13) - 0x1C000u);
    return static_cast<U>(h & (0u - static_cast<uint32_t>(c != 0)));
  }
};

struct BF16 {
  using U = uint16_t;
  static constexpr U kOne = 0x3F80;
  static constexpr U kMagnitude = 0x7FFF;
  static uint32_t toF32Bits(U b) { return static_cast<uint32_t>(b) << 16; }
  // Integers < 256 have at most 8 significant bits: truncation is exact.
  static U fromSmallInt(uint8_t c) {
    return static_cast<U>(F32::fromSmallInt(c) >> 16);
  }
};

/// Calls `fn(F32{})`, `fn(F16{})` or `fn(BF16{})` for the tensor dtype.
template <class Fn> void dispatchElement(at::ScalarType dtype, Fn &&fn) {
  switch (dtype) {
  case at::kFloat:
    return fn(F32{});
  case at::kHalf:
    return fn(F16{});
  case at::kBFloat16:
    return fn(BF16{});
  default:
    TORCH_CHECK(false, "memopt: unsupported element type ", dtype);
  }
}

/// bit / bool / sparse: code = value != 0 (either sign of zero is 0); the
/// result is non-zero when some value was neither 0 nor 1.
template <class T>
uint8_t encodeBinary(const typename T::U *in, uint8_t *codes, int64_t len) {
  uint8_t bad = 0;
  for (int64_t i = 0; i < len; ++i) {
    const typename T::U v = in[i];
    const uint8_t nonZero = (v & T::kMagnitude) != 0;
    codes[i] = nonZero;
    bad |= nonZero & static_cast<uint8_t>(v != T::kOne);
  }
  return bad;
}

/// uint8: clamp to [0, 255] (NaN -> 0) and truncate toward zero; the result
/// is non-zero when some value was not an integer in [0, 255]. Works on
/// float32 bit patterns: non-negative floats order like their bits. Masks
/// instead of selects keep GCC from splitting the loop into paths for the
/// constant cases, which would stop it from vectorizing.
template <class T>
uint8_t encodeUInt8(const typename T::U *in, uint8_t *codes, int64_t len) {
  constexpr int32_t kInf = 0x7F800000, k255 = 0x437F0000;
  uint8_t bad = 0;
  for (int64_t i = 0; i < len; ++i) {
    const uint32_t b = T::toF32Bits(in[i]);
    int32_t c = static_cast<int32_t>(b);
    c &= ~(c >> 31);                       // negative -> +0
    c &= -static_cast<int32_t>(c <= kInf); // NaN -> +0
    c = std::min(c, k255);                 // above 255 -> 255
    const int32_t q = static_cast<int32_t>(bitsFloat(static_cast<uint32_t>(c)));
    codes[i] = static_cast<uint8_t>(q);
    // Exact iff q restores the same bits; -0.0 restores as +0.0.
    bad |= static_cast<uint8_t>((floatBits(static_cast<float>(q)) != b) &
                                (b != 0x80000000u));
  }
  return bad;
}

/// The restored bit pattern of a code that is 0 or 1, without a branch.
template <class T> typename T::U decodeBit(uint8_t bit) {
  using U = typename T::U;
  return static_cast<U>(static_cast<U>(0u - bit) & T::kOne);
}

/// Reads logical elements [begin, begin + len) of a tensor of any strides.
template <class T> class LogicalReader {
  using U = typename T::U;

public:
  explicit LogicalReader(const at::Tensor &x)
      : base_(static_cast<const U *>(x.data_ptr())),
        contiguous_(x.is_contiguous()),
        sizes_(x.sizes().begin(), x.sizes().end()),
        strides_(x.strides().begin(), x.strides().end()) {}

  /// A pointer into the tensor when contiguous, else `buf` filled in order.
  const U *read(int64_t begin, int64_t len, U *buf) const {
    if (contiguous_)
      return base_ + begin;
    gather(begin, len, buf);
    return buf;
  }

private:
  void gather(int64_t begin, int64_t len, U *buf) const {
    const int64_t last = static_cast<int64_t>(sizes_.size()) - 1;
    c10::SmallVector<int64_t, 8> index(sizes_.size());
    int64_t offset = 0;
    for (int64_t d = last, rest = begin; d >= 0; --d) {
      index[d] = rest % sizes_[d];
      rest /= sizes_[d];
      offset += index[d] * strides_[d];
    }
    const int64_t stride = strides_[last];
    for (int64_t done = 0; done < len;) {
      const int64_t run = std::min(len - done, sizes_[last] - index[last]);
      const U *row = base_ + offset;
      for (int64_t k = 0; k < run; ++k)
        buf[done + k] = row[k * stride];
      done += run;
      index[last] += run;
      offset += run * stride;
      for (int64_t d = last; d > 0 && index[d] == sizes_[d]; --d) {
        offset += strides_[d - 1] - index[d] * strides_[d];
        index[d] = 0;
        ++index[d - 1];
      }
    }
  }

  const U *base_;
  bool contiguous_;
  c10::SmallVector<int64_t, 8> sizes_, strides_;
};

/// Calls `body(first, values, len)` for consecutive tiles of [begin, end);
/// stops early when `body` returns false.
template <class T, class Body>
void forEachTile(const LogicalReader<T> &reader, int64_t begin, int64_t end,
                 Body &&body) {
  typename T::U buf[kTile];
  for (int64_t first = begin; first < end; first += kTile) {
    const int64_t len = std::min(kTile, end - first);
    if (!body(first, reader.read(first, len, buf), len))
      return;
  }
}

/// The smallest invalid flat index reported by any parallel task.
class FirstInvalid {
public:
  void record(int64_t index) {
    int64_t seen = value_.load(std::memory_order_relaxed);
    while (index < seen && !value_.compare_exchange_weak(seen, index)) {
    }
  }
  /// -1 when nothing was recorded.
  int64_t get() const {
    const int64_t v = value_.load();
    return v == std::numeric_limits<int64_t>::max() ? -1 : v;
  }

private:
  std::atomic<int64_t> value_{std::numeric_limits<int64_t>::max()};
};

} // namespace memopt::runtime::detail

#endif // MEMOPT_LIB_RUNTIME_COMPRESSIONELEMENTSCPU_H
