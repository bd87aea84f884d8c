//===- ArchiveCheck.cpp - Reject zip directories that lie about sizes -----===//
//
// LibTorch's zip reader allocates each record's declared uncompressed size
// before reading it, so a damaged central directory can ask for gigabytes
// (found by fuzz/ImportFuzzer.cpp). torch.jit.save stores records
// uncompressed; a record larger than the archive (with a generous allowance
// for archives recompressed by other tools) is rejected before LibTorch reads
// anything.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

using namespace mlir::memopt::detail;

static uint64_t readLittleEndian(llvm::StringRef bytes, size_t offset,
                                 unsigned width) {
  uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i)
    value |= uint64_t(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

/// The uncompressed size in a ZIP64 extended-information extra field.
static std::optional<uint64_t> zip64Size(llvm::StringRef extra) {
  size_t at = 0;
  while (at + 4 <= extra.size()) {
    uint64_t id = readLittleEndian(extra, at, 2);
    uint64_t size = readLittleEndian(extra, at + 2, 2);
    if (id == 0x0001 && size >= 8 && at + 4 + 8 <= extra.size())
      return readLittleEndian(extra, at + 4, 8);
    at += 4 + size;
  }
  return std::nullopt;
}

void mlir::memopt::detail::checkZipRecordSizes(llvm::StringRef bytes,
                                               llvm::StringRef name) {
  auto corrupt = [&](const std::string &why) {
    return ImportError(
        ("'" + name + "' is a corrupt or truncated zip archive (" + why + ")")
            .str());
  };
  // End of central directory: 22 bytes plus a comment of up to 64 KiB.
  constexpr size_t kEndRecordSize = 22;
  if (bytes.size() < kEndRecordSize)
    throw corrupt("too short");
  size_t end = std::string::npos;
  size_t lowest = bytes.size() > kEndRecordSize + 65535
                      ? bytes.size() - kEndRecordSize - 65535
                      : 0;
  for (size_t at = bytes.size() - kEndRecordSize + 1; at-- > lowest;)
    if (readLittleEndian(bytes, at, 4) == 0x06054b50) {
      end = at;
      break;
    }
  if (end == std::string::npos)
    throw corrupt("no end of central directory");
  uint64_t entries = readLittleEndian(bytes, end + 10, 2);
  uint64_t directory = readLittleEndian(bytes, end + 16, 4);
  if (directory == 0xFFFFFFFF || entries == 0xFFFF)
    return; // ZIP64 directory: LibTorch validates it; sizes checked below
            // only for the classic layout
  const uint64_t limit = 1024 * uint64_t(bytes.size()) + (1 << 20);
  size_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (at + 46 > bytes.size() || readLittleEndian(bytes, at, 4) != 0x02014b50)
      throw corrupt("bad central directory entry");
    uint64_t method = readLittleEndian(bytes, at + 10, 2);
    uint64_t uncompressed = readLittleEndian(bytes, at + 24, 4);
    uint64_t nameLength = readLittleEndian(bytes, at + 28, 2);
    uint64_t extraLength = readLittleEndian(bytes, at + 30, 2);
    uint64_t commentLength = readLittleEndian(bytes, at + 32, 2);
    if (at + 46 + nameLength + extraLength > bytes.size())
      throw corrupt("bad central directory entry");
    if (uncompressed == 0xFFFFFFFF)
      uncompressed = zip64Size(bytes.substr(at + 46 + nameLength, extraLength))
                         .value_or(uncompressed);
    bool stored = method == 0;
    if ((stored && uncompressed > bytes.size()) || uncompressed > limit)
      throw corrupt("record '" + bytes.substr(at + 46, nameLength).str() +
                    "' claims " + std::to_string(uncompressed) + " bytes");
    at += 46 + nameLength + extraLength + commentLength;
  }
}
