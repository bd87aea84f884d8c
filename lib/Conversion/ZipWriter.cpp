//===- ZipWriter.cpp - Stored records, 64-byte aligned, ZIP64 past 4 GiB --===//
//
// Layout (APPNOTE 6.3.9): per record a local header, its name, an extra
// field (ZIP64 sizes when they do not fit, then PyTorch's "FB" padding up to
// the next multiple of 64) and the data; then one central directory entry
// per record and the end record, preceded by the ZIP64 end record and its
// locator when a count, size or offset does not fit in the classic fields.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ZipWriter.h"
#include "ZipFormat.h"
#include "memopt/Conversion/Crc32.h"

#include <cassert>

using namespace mlir::memopt;
using namespace mlir::memopt::zip;

namespace {
constexpr uint16_t kPaddingExtraId = 0x4246; // "FB", as PyTorch writes it
constexpr uint64_t kAlignment = 64;
constexpr unsigned kLocalHeaderSize = 30;
// Version 4.5 (ZIP64) when a record needs it, 2.0 otherwise.
constexpr uint16_t kVersionZip64 = 45, kVersionPlain = 20;
// 1980-01-01 00:00, the earliest MS-DOS date: archives are reproducible.
constexpr uint16_t kDosTime = 0, kDosDate = (1 << 5) | 1;
} // namespace

void ZipWriter::put(llvm::StringRef bytes) {
  os.write(bytes.data(), bytes.size());
  offset += bytes.size();
}

void ZipWriter::putLittleEndian(uint64_t value, unsigned width) {
  char bytes[8];
  for (unsigned i = 0; i < width; ++i)
    bytes[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  put(llvm::StringRef(bytes, width));
}

uint64_t ZipWriter::addStored(llvm::StringRef name, llvm::StringRef data,
                              uint32_t crc) {
  return add(name, /*method=*/0, crc, data, data.size());
}

uint64_t ZipWriter::addStored(llvm::StringRef name, llvm::StringRef data) {
  return addStored(name, data,
                   updateCrc32(0,
                               reinterpret_cast<const uint8_t *>(data.data()),
                               data.size()));
}

uint64_t ZipWriter::addCopy(const ZipRecord &record) {
  return add(record.name, record.method, record.crc, record.data,
             record.uncompressedSize);
}

uint64_t ZipWriter::add(llvm::StringRef name, uint16_t method, uint32_t crc,
                        llvm::StringRef data, uint64_t uncompressed) {
  assert(name.size() <= 0xFFFF && "zip names are at most 64 KiB");
  uint64_t compressed = data.size();
  bool zip64 = compressed >= zip64From || uncompressed >= zip64From;
  uint64_t zip64Extra = zip64 ? 4 + 16 : 0;
  // The data starts after the header, the name, the ZIP64 field and the
  // padding field (4 bytes of id and size, then the padding itself).
  uint64_t unpadded = offset + kLocalHeaderSize + name.size() + zip64Extra + 4;
  uint64_t padding = (kAlignment - unpadded % kAlignment) % kAlignment;
  written.push_back(
      {name.str(), method, crc, compressed, uncompressed, offset});

  putLittleEndian(kLocalSignature, 4);
  putLittleEndian(zip64 ? kVersionZip64 : kVersionPlain, 2);
  putLittleEndian(0, 2); // flags: sizes are in the header, no descriptor
  putLittleEndian(method, 2);
  putLittleEndian(kDosTime, 2);
  putLittleEndian(kDosDate, 2);
  putLittleEndian(crc, 4);
  putLittleEndian(zip64 ? kSaturated32 : compressed, 4);
  putLittleEndian(zip64 ? kSaturated32 : uncompressed, 4);
  putLittleEndian(name.size(), 2);
  putLittleEndian(zip64Extra + 4 + padding, 2);
  put(name);
  if (zip64) {
    putLittleEndian(kZip64ExtraId, 2);
    putLittleEndian(16, 2);
    putLittleEndian(uncompressed, 8);
    putLittleEndian(compressed, 8);
  }
  putLittleEndian(kPaddingExtraId, 2);
  putLittleEndian(padding, 2);
  put(std::string(padding, 'Z'));
  assert(offset % kAlignment == 0 && "record data must start aligned");
  uint64_t start = offset;
  put(data);
  return start;
}

void ZipWriter::finish() {
  uint64_t directoryOffset = offset;
  for (const Written &record : written) {
    // Only the fields that do not fit go into the ZIP64 field, in this
    // order: uncompressed size, compressed size, local header offset.
    llvm::SmallVector<uint64_t, 3> wide;
    for (uint64_t value :
         {record.uncompressed, record.compressed, record.local})
      if (value >= zip64From)
        wide.push_back(value);
    auto narrow = [&](uint64_t value) {
      return value >= zip64From ? kSaturated32 : value;
    };
    uint16_t version = wide.empty() ? kVersionPlain : kVersionZip64;
    putLittleEndian(kEntrySignature, 4);
    putLittleEndian(version, 2); // made by
    putLittleEndian(version, 2); // needed to extract
    putLittleEndian(0, 2);
    putLittleEndian(record.method, 2);
    putLittleEndian(kDosTime, 2);
    putLittleEndian(kDosDate, 2);
    putLittleEndian(record.crc, 4);
    putLittleEndian(narrow(record.compressed), 4);
    putLittleEndian(narrow(record.uncompressed), 4);
    putLittleEndian(record.name.size(), 2);
    putLittleEndian(wide.empty() ? 0 : 4 + 8 * wide.size(), 2);
    putLittleEndian(0, 2); // comment
    putLittleEndian(0, 2); // disk
    putLittleEndian(0, 2); // internal attributes
    putLittleEndian(0, 4); // external attributes
    putLittleEndian(narrow(record.local), 4);
    put(record.name);
    if (!wide.empty()) {
      putLittleEndian(kZip64ExtraId, 2);
      putLittleEndian(8 * wide.size(), 2);
      for (uint64_t value : wide)
        putLittleEndian(value, 8);
    }
  }
  uint64_t directorySize = offset - directoryOffset;
  uint64_t entries = written.size();
  bool zip64 = entries >= 0xFFFF || directoryOffset >= zip64From ||
               directorySize >= zip64From;
  if (zip64) {
    uint64_t zip64End = offset;
    putLittleEndian(kZip64EndSignature, 4);
    putLittleEndian(44, 8); // size of the rest of this record
    putLittleEndian(kVersionZip64, 2);
    putLittleEndian(kVersionZip64, 2);
    putLittleEndian(0, 4); // this disk
    putLittleEndian(0, 4); // the directory's disk
    putLittleEndian(entries, 8);
    putLittleEndian(entries, 8);
    putLittleEndian(directorySize, 8);
    putLittleEndian(directoryOffset, 8);
    putLittleEndian(kZip64LocatorSignature, 4);
    putLittleEndian(0, 4);
    putLittleEndian(zip64End, 8);
    putLittleEndian(1, 4); // disks
  }
  putLittleEndian(kEndSignature, 4);
  putLittleEndian(0, 2);
  putLittleEndian(0, 2);
  putLittleEndian(zip64 ? 0xFFFF : entries, 2);
  putLittleEndian(zip64 ? 0xFFFF : entries, 2);
  putLittleEndian(zip64 ? kSaturated32 : directorySize, 4);
  putLittleEndian(zip64 ? kSaturated32 : directoryOffset, 4);
  putLittleEndian(0, 2); // comment
  written.clear();
}
