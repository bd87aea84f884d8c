//===- Crc32.h - zip's CRC-32 at memory speed -------------------*- C++ -*-===//
//
// Every compile checks the CRC-32 of each record of the model it reads and
// of the one it writes: for a large model (ResNet-152: 233 MB, read and
// written) zlib's table-driven CRC took 0.1 s a pass. On x86-64 CPUs with
// carry-less multiplication the data is folded 64 bytes at a time instead
// (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ Instruction", Intel, 2009), about 4x faster; elsewhere zlib's
// result.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_CRC32_H
#define MEMOPT_CONVERSION_CRC32_H

#include <cstddef>
#include <cstdint>

namespace mlir::memopt {

/// zlib's crc32(crc, data, size) (the zip CRC-32), for any size.
uint32_t updateCrc32(uint32_t crc, const uint8_t *data, size_t size);

/// The same through zlib only (the reference the tests compare with).
uint32_t updateCrc32WithZlib(uint32_t crc, const uint8_t *data, size_t size);

/// Whether updateCrc32 folds with carry-less multiplication on this CPU.
bool crc32UsesCarrylessMultiply();

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_CRC32_H
