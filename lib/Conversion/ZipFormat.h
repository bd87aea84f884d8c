//===- ZipFormat.h - Zip signatures for reader and writer ---*- C++ -*-===//
//
// The constants of APPNOTE 6.3.9 that ZipArchive.cpp reads and ZipWriter.cpp
// writes.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_ZIPFORMAT_H
#define MEMOPT_LIB_CONVERSION_ZIPFORMAT_H

#include <cstdint>

namespace mlir::memopt::zip {
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint32_t kEntrySignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
/// The extra field holding the sizes and offsets that do not fit.
constexpr uint16_t kZip64ExtraId = 0x0001;
/// What a classic field holds when its value is in the ZIP64 extra field.
constexpr uint64_t kSaturated32 = 0xFFFFFFFF;
} // namespace mlir::memopt::zip

#endif // MEMOPT_LIB_CONVERSION_ZIPFORMAT_H
