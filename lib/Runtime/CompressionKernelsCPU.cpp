//===- CompressionKernelsCPU.cpp - CPU compression kernels ----------------===//
//
// Multi-threaded with at::parallel_for over chunks of output bytes (bit,
// bool, uint8) or of input elements (sparse); each chunk works tile by tile
// so the inner loops stay short, branch-free and vectorizable.
//
//===----------------------------------------------------------------------===//

#include "CompressionBackends.h"
#include "CompressionElementsCPU.h"

#include <ATen/Parallel.h>

#include <vector>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "bit packing reads eight codes as one little-endian word");

namespace memopt::runtime::detail {
namespace {

/// Elements per parallel task at least: small tensors stay on one thread.
constexpr int64_t kGrain = 1 << 15;
/// Elements per sparse chunk (one count, one output offset each).
constexpr int64_t kSparseChunk = 1 << 16;

/// Packs 0/1 codes eight per byte, element k of a group at bit k.
void packCodes(const uint8_t *codes, int64_t len, uint8_t *out) {
  const int64_t full = len / 8;
  for (int64_t j = 0; j < full; ++j) {
    uint64_t word;
    std::memcpy(&word, codes + 8 * j, sizeof word);
    // Moves byte k's low bit to bit 56 + k; the top byte is the packed result.
    out[j] = static_cast<uint8_t>((word * 0x0102040810204080ULL) >> 56);
  }
  if (len % 8 != 0) {
    uint8_t byte = 0;
    for (int64_t k = 0; k < len % 8; ++k)
      byte |= static_cast<uint8_t>(codes[8 * full + k] << k);
    out[full] = byte;
  }
}

template <class T>
uint8_t encode(CompressionKind kind, const typename T::U *in, uint8_t *codes,
               int64_t len) {
  return kind == CompressionKind::UInt8 ? encodeUInt8<T>(in, codes, len)
                                        : encodeBinary<T>(in, codes, len);
}

/// Position of the first invalid value of a tile known to hold one.
template <class T>
int64_t firstInvalidInTile(CompressionKind kind, const typename T::U *in,
                           int64_t len) {
  uint8_t code;
  for (int64_t i = 0; i < len; ++i)
    if (encode<T>(kind, in + i, &code, 1))
      return i;
  TORCH_INTERNAL_ASSERT(false, "tile flagged invalid but no value is");
}

/// bit: eight elements per output byte; tasks split the bytes.
template <class T>
void packBits(const LogicalReader<T> &reader, int64_t n, bool check,
              uint8_t *out, FirstInvalid &invalid) {
  at::parallel_for(0, (n + 7) / 8, kGrain / 8, [&](int64_t b0, int64_t b1) {
    uint8_t codes[kTile];
    auto tile = [&](int64_t first, const typename T::U *v, int64_t len) {
      if (encodeBinary<T>(v, codes, len) && check) {
        invalid.record(first +
                       firstInvalidInTile<T>(CompressionKind::Bit, v, len));
        return false;
      }
      packCodes(codes, len, out + first / 8);
      return true;
    };
    forEachTile(reader, b0 * 8, std::min(b1 * 8, n), tile);
  });
}

/// bool / uint8: one output byte per element.
template <class T>
void packBytes(const LogicalReader<T> &reader, int64_t n, CompressionKind kind,
               bool check, uint8_t *out, FirstInvalid &invalid) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    auto tile = [&](int64_t first, const typename T::U *v, int64_t len) {
      if (encode<T>(kind, v, out + first, len) && check) {
        invalid.record(first + firstInvalidInTile<T>(kind, v, len));
        return false;
      }
      return true;
    };
    forEachTile(reader, begin, end, tile);
  });
}

/// For every byte value, the positions of its set bits (ascending) and their
/// number: sparse compaction handles eight elements per step without branches.
struct SetBitTable {
  uint8_t positions[256][8] = {};
  uint8_t count[256] = {};
  SetBitTable() {
    for (int b = 0; b < 256; ++b)
      for (int k = 0; k < 8; ++k)
        if ((b >> k) & 1)
          positions[b][count[b]++] = static_cast<uint8_t>(k);
  }
};

/// Writes the indices of the ones among `len` codes starting at `first`
/// into `local` (which has room for len + 7 entries); returns their number.
template <typename I>
int64_t compactOnes(const uint8_t *codes, int64_t len, int64_t first,
                    I *local) {
  static const SetBitTable table;
  uint8_t bits[kTile / 8];
  packCodes(codes, len, bits);
  int64_t count = 0;
  for (int64_t j = 0; j < (len + 7) / 8; ++j) {
    const uint8_t byte = bits[j];
    const I base = static_cast<I>(first + 8 * j);
    for (int k = 0; k < 8; ++k) // entries past count are overwritten later
      local[count + k] = base + table.positions[byte][k];
    count += table.count[byte];
  }
  return count;
}

/// sparse: count the ones per chunk, scan, then write each chunk's indices
/// at its offset (ascending overall).
template <class T, typename I>
void writeSparse(const LogicalReader<T> &reader, int64_t n,
                 const std::vector<int64_t> &offsets, I *out) {
  const int64_t chunks = static_cast<int64_t>(offsets.size()) - 1;
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    uint8_t codes[kTile];
    I local[kTile + 8];
    for (int64_t c = c0; c < c1; ++c) {
      I *dst = out + offsets[c];
      auto tile = [&](int64_t first, const typename T::U *v, int64_t len) {
        encodeBinary<T>(v, codes, len);
        const int64_t count = compactOnes(codes, len, first, local);
        std::memcpy(dst, local, count * sizeof(I));
        dst += count;
        return true;
      };
      forEachTile(reader, c * kSparseChunk, std::min((c + 1) * kSparseChunk, n),
                  tile);
    }
  });
}

template <class T>
at::Tensor packSparse(const LogicalReader<T> &reader, int64_t n, bool check,
                      const at::TensorOptions &options, FirstInvalid &invalid) {
  const int64_t chunks = (n + kSparseChunk - 1) / kSparseChunk;
  std::vector<int64_t> offsets(chunks + 1, 0);
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    uint8_t codes[kTile];
    for (int64_t c = c0; c < c1; ++c) {
      int64_t count = 0;
      auto tile = [&](int64_t first, const typename T::U *v, int64_t len) {
        if (encodeBinary<T>(v, codes, len) && check) {
          invalid.record(
              first + firstInvalidInTile<T>(CompressionKind::Sparse, v, len));
          return false;
        }
        for (int64_t i = 0; i < len; ++i)
          count += codes[i];
        return true;
      };
      forEachTile(reader, c * kSparseChunk, std::min((c + 1) * kSparseChunk, n),
                  tile);
      offsets[c + 1] = count;
    }
  });
  if (invalid.get() >= 0)
    return at::Tensor();
  for (int64_t c = 0; c < chunks; ++c)
    offsets[c + 1] += offsets[c];
  const at::ScalarType indexType = packedScalarType(CompressionKind::Sparse, n);
  at::Tensor out = at::empty({offsets[chunks]}, options.dtype(indexType));
  if (indexType == at::kInt)
    writeSparse<T>(reader, n, offsets, out.data_ptr<int32_t>());
  else
    writeSparse<T>(reader, n, offsets, out.data_ptr<int64_t>());
  return out;
}

/// Expands whole bytes [j0, j1). A function of its own so that the pointers
/// are plain arguments, not loads from a lambda's captures the vectorizer
/// must assume the stores may change.
template <class T>
void unpackWholeBytes(const uint8_t *in, typename T::U *out, int64_t j0,
                      int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t byte = in[j];
    for (int k = 0; k < 8; ++k)
      out[8 * j + k] = decodeBit<T>((byte >> k) & 1);
  }
}

template <class T>
void unpackBits(const uint8_t *in, int64_t n, typename T::U *out) {
  const int64_t fullBytes = n / 8;
  at::parallel_for(0, (n + 7) / 8, kGrain / 8, [&](int64_t b0, int64_t b1) {
    unpackWholeBytes<T>(in, out, b0, std::min(b1, fullBytes));
    if (b1 > fullBytes) // the last, partial byte
      for (int64_t i = 8 * fullBytes; i < n; ++i)
        out[i] = decodeBit<T>((in[fullBytes] >> (i % 8)) & 1);
  });
}

template <class T>
void unpackBytes(const uint8_t *in, int64_t n, CompressionKind kind,
                 typename T::U *out) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    if (kind == CompressionKind::UInt8) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = T::fromSmallInt(in[i]);
    } else {
      for (int64_t i = begin; i < end; ++i)
        out[i] = decodeBit<T>(in[i] != 0);
    }
  });
}

template <class T, typename I>
void scatterOnes(const I *indices, int64_t count, int64_t n,
                 typename T::U *out) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    std::fill(out + begin, out + end, typename T::U(0));
  });
  FirstInvalid outside;
  at::parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t i = static_cast<int64_t>(indices[k]);
      if (i < 0 || i >= n) {
        outside.record(k);
        return;
      }
      out[i] = T::kOne;
    }
  });
  const int64_t k = outside.get();
  TORCH_CHECK(k < 0, "memopt: decompress(sparse): index ",
              k < 0 ? 0 : static_cast<int64_t>(indices[k]), " at position ", k,
              " is outside [0, ", n, ")");
}

} // namespace

at::Tensor compressCPU(const at::Tensor &x, CompressionKind kind, bool check,
                       int64_t &firstInvalid) {
  const int64_t n = x.numel();
  const auto bytes = x.options().dtype(at::kByte);
  at::Tensor out;
  FirstInvalid invalid;
  dispatchElement(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    const LogicalReader<T> reader(x);
    switch (kind) {
    case CompressionKind::Bit:
      out = at::empty({(n + 7) / 8}, bytes);
      packBits(reader, n, check, out.data_ptr<uint8_t>(), invalid);
      break;
    case CompressionKind::Bool:
    case CompressionKind::UInt8:
      out = at::empty({n}, kind == CompressionKind::Bool
                               ? x.options().dtype(at::kBool)
                               : bytes);
      packBytes(reader, n, kind, check, static_cast<uint8_t *>(out.data_ptr()),
                invalid);
      break;
    case CompressionKind::Sparse:
      out = packSparse(reader, n, check, x.options(), invalid);
      break;
    }
  });
  firstInvalid = invalid.get();
  return firstInvalid >= 0 ? at::Tensor() : out;
}

void decompressCPU(const at::Tensor &payload, CompressionKind kind,
                   at::Tensor &out) {
  const int64_t n = out.numel();
  dispatchElement(out.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    auto *dst = static_cast<typename T::U *>(out.data_ptr());
    switch (kind) {
    case CompressionKind::Bit:
      unpackBits<T>(payload.data_ptr<uint8_t>(), n, dst);
      break;
    case CompressionKind::Bool:
    case CompressionKind::UInt8:
      unpackBytes<T>(static_cast<const uint8_t *>(payload.data_ptr()), n, kind,
                     dst);
      break;
    case CompressionKind::Sparse:
      if (payload.scalar_type() == at::kInt)
        scatterOnes<T>(payload.data_ptr<int32_t>(), payload.numel(), n, dst);
      else
        scatterOnes<T>(payload.data_ptr<int64_t>(), payload.numel(), n, dst);
      break;
    }
  });
}

int64_t findFirstInvalidCPU(const at::Tensor &x, CompressionKind kind) {
  FirstInvalid invalid;
  dispatchElement(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    const LogicalReader<T> reader(x);
    at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
      uint8_t codes[kTile];
      auto tile = [&](int64_t first, const typename T::U *v, int64_t len) {
        if (!encode<T>(kind, v, codes, len))
          return true;
        invalid.record(first + firstInvalidInTile<T>(kind, v, len));
        return false;
      };
      forEachTile(reader, begin, end, tile);
    });
  });
  return invalid.get();
}

} // namespace memopt::runtime::detail
