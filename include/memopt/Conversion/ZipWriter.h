//===- ZipWriter.h - A zip archive as PyTorch lays one out --*- C++ -*-===//
//
// The exporter writes a compiled module's archive itself rather than through
// LibTorch's writer, which checksums every weight byte by byte (about 0.3 s
// of CPU for ResNet-152's 233 MB on the development machine): records are
// stored (or copied as another archive stores them), each record's data
// starts at a multiple of 64 bytes as in torch.jit.save's archives (loaders
// that map tensors in place rely on it), and sizes or offsets past 4 GiB get
// ZIP64 fields. LLVM Support only.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_ZIPWRITER_H
#define MEMOPT_CONVERSION_ZIPWRITER_H

#include "memopt/Conversion/ZipArchive.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::memopt {

class ZipWriter {
public:
  /// Sizes and offsets at or past `zip64From` are written as ZIP64 fields
  /// (the format's limit, 2^32 - 1, unless a test lowers it).
  explicit ZipWriter(llvm::raw_ostream &os, uint64_t zip64From = 0xFFFFFFFF)
      : os(os), zip64From(zip64From) {}

  // Each returns where the record's data starts in the archive.
  /// A stored record with `data`, whose CRC-32 is `crc`.
  uint64_t addStored(llvm::StringRef name, llvm::StringRef data, uint32_t crc);
  /// A stored record with `data` (its CRC-32 computed here).
  uint64_t addStored(llvm::StringRef name, llvm::StringRef data);
  /// A record exactly as another archive stores it (method, CRC, bytes).
  uint64_t addCopy(const ZipRecord &record);
  /// The central directory and the end records; nothing is added after.
  void finish();

  /// Bytes written so far.
  uint64_t size() const { return offset; }

private:
  struct Written {
    std::string name;
    uint16_t method;
    uint32_t crc;
    uint64_t compressed, uncompressed, local;
  };
  uint64_t add(llvm::StringRef name, uint16_t method, uint32_t crc,
               llvm::StringRef data, uint64_t uncompressed);
  void put(llvm::StringRef bytes);
  void putLittleEndian(uint64_t value, unsigned width);

  llvm::raw_ostream &os;
  uint64_t zip64From;
  uint64_t offset = 0;
  std::vector<Written> written;
};

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_ZIPWRITER_H
