//===- LittleEndian.h - Unsigned little-endian fields of a byte string ---===//
//
// Zip records (ZipArchive.cpp) and pickles (PickleCheck.cpp) store their
// counts, lengths and offsets as little-endian integers of 1 to 8 bytes.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_LITTLEENDIAN_H
#define MEMOPT_LIB_CONVERSION_LITTLEENDIAN_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::memopt {
/// The `width`-byte little-endian integer at `offset` of `bytes` (the
/// caller has checked that it lies inside).
inline uint64_t readLittleEndian(llvm::StringRef bytes, uint64_t offset,
                                 unsigned width) {
  uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i)
    value |= uint64_t(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}
} // namespace mlir::memopt

#endif // MEMOPT_LIB_CONVERSION_LITTLEENDIAN_H
