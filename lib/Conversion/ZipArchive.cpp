//===- ZipArchive.cpp - Bounds and CRC-32 of every record of a zip --------===//
//
// Reads the central directory (classic or ZIP64), bounds each record by the
// archive (LibTorch allocates a record's declared size before reading it:
// found by fuzz/ImportFuzzer.cpp) and checks each record's CRC-32 over its
// data, inflating deflated ones (torch.jit.save stores records as they are;
// archives repacked by other tools may deflate them).
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ZipArchive.h"
#include "LittleEndian.h"
#include "ZipFormat.h"
#include "memopt/Conversion/Crc32.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

using namespace mlir::memopt;

namespace {

using namespace zip;

struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
};

/// The central directory's place, from the end record (and ZIP64's when the
/// classic fields are saturated).
std::optional<Directory> findDirectory(llvm::StringRef bytes,
                                       std::string &why) {
  // End of central directory: 22 bytes plus a comment of up to 64 KiB.
  constexpr size_t kEndRecordSize = 22;
  if (bytes.size() < kEndRecordSize) {
    why = "too short";
    return std::nullopt;
  }
  size_t lowest = bytes.size() > kEndRecordSize + 65535
                      ? bytes.size() - kEndRecordSize - 65535
                      : 0;
  size_t end = std::string::npos;
  for (size_t at = bytes.size() - kEndRecordSize + 1; at-- > lowest;)
    if (readLittleEndian(bytes, at, 4) == kEndSignature) {
      end = at;
      break;
    }
  if (end == std::string::npos) {
    why = "no end of central directory";
    return std::nullopt;
  }
  // The counts and offset as LibTorch's reader (miniz) takes them: from the
  // ZIP64 end record whenever its locator is there, which LibTorch writes
  // into every archive. Fields that disagree mean a damaged end: reading
  // other records than LibTorch reads would check the wrong ones.
  Directory classic{readLittleEndian(bytes, end + 10, 2),
                    readLittleEndian(bytes, end + 16, 4)};
  uint64_t classicOnDisk = readLittleEndian(bytes, end + 8, 2);
  if (classicOnDisk != classic.entries) {
    why = "end of central directory counts " + std::to_string(classicOnDisk) +
          " entries on its disk but " + std::to_string(classic.entries) +
          " in all";
    return std::nullopt;
  }
  bool saturated = classic.entries == 0xFFFF || classic.offset == kSaturated32;
  if (end < 20 ||
      readLittleEndian(bytes, end - 20, 4) != kZip64LocatorSignature) {
    if (!saturated)
      return classic;
    why = "no ZIP64 end of central directory locator";
    return std::nullopt;
  }
  uint64_t record = readLittleEndian(bytes, end - 20 + 8, 8);
  if (record > bytes.size() || bytes.size() - record < 56 ||
      readLittleEndian(bytes, record, 4) != kZip64EndSignature) {
    why = "bad ZIP64 end of central directory";
    return std::nullopt;
  }
  Directory zip64{readLittleEndian(bytes, record + 32, 8),
                  readLittleEndian(bytes, record + 48, 8)};
  if (readLittleEndian(bytes, record + 24, 8) != zip64.entries ||
      (classic.entries != 0xFFFF && classic.entries != zip64.entries) ||
      (classic.offset != kSaturated32 && classic.offset != zip64.offset)) {
    why = "the end of central directory and its ZIP64 record disagree on "
          "the entries";
    return std::nullopt;
  }
  return zip64;
}

/// One central directory entry, with ZIP64 extra fields applied.
struct Entry {
  std::string name;
  uint64_t method = 0, crc = 0, compressed = 0, uncompressed = 0, local = 0;
};

void applyZip64Extra(llvm::StringRef extra, Entry &entry) {
  size_t at = 0;
  while (at + 4 <= extra.size()) {
    uint64_t id = readLittleEndian(extra, at, 2);
    uint64_t size = readLittleEndian(extra, at + 2, 2);
    if (id == kZip64ExtraId) {
      // Only the saturated fields are present, in this order.
      size_t field = at + 4, fieldEnd = std::min(extra.size(), at + 4 + size);
      for (uint64_t *value :
           {&entry.uncompressed, &entry.compressed, &entry.local}) {
        if (*value != kSaturated32)
          continue;
        if (field + 8 > fieldEnd)
          return;
        *value = readLittleEndian(extra, field, 8);
        field += 8;
      }
      return;
    }
    at += 4 + size;
  }
}

uint32_t crcOfStored(llvm::StringRef data) {
  return updateCrc32(0, reinterpret_cast<const uint8_t *>(data.data()),
                     data.size());
}

/// Inflates raw-deflated `data`, handing each piece to `consume`; false if
/// it does not inflate.
template <typename Consume>
bool inflateRaw(llvm::StringRef data, Consume consume) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return false;
  std::vector<Bytef> out(1 << 16);
  size_t consumed = 0;
  int status = Z_OK;
  while (status == Z_OK) {
    if (stream.avail_in == 0 && consumed < data.size()) {
      size_t chunk = std::min<size_t>(data.size() - consumed, 1u << 30);
      stream.next_in =
          reinterpret_cast<Bytef *>(const_cast<char *>(data.data() + consumed));
      stream.avail_in = static_cast<uInt>(chunk);
      consumed += chunk;
    }
    stream.next_out = out.data();
    stream.avail_out = static_cast<uInt>(out.size());
    status = inflate(&stream, Z_NO_FLUSH);
    consume(out.data(), out.size() - stream.avail_out);
    if (status == Z_BUF_ERROR && stream.avail_in == 0 &&
        consumed == data.size())
      break; // input ends before the stream does
  }
  inflateEnd(&stream);
  return status == Z_STREAM_END;
}

/// The CRC-32 and size of a raw-deflated record's inflated data, or nullopt
/// if it does not inflate.
std::optional<std::pair<uint32_t, uint64_t>>
crcOfDeflated(llvm::StringRef data) {
  uint32_t crc = 0;
  uint64_t size = 0;
  if (!inflateRaw(data, [&](const Bytef *piece, size_t length) {
        crc = updateCrc32(crc, piece, length);
        size += length;
      }))
    return std::nullopt;
  return std::make_pair(crc, size);
}

std::string hex(uint64_t value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format_hex(value, 10);
  return text;
}

/// Where `entry`'s data lies (bounded by the archive), or why it cannot.
std::optional<llvm::StringRef>
locateRecord(llvm::StringRef bytes, const Entry &entry, std::string &why) {
  const std::string record = "record '" + entry.name + "'";
  // A record can hold no more than the archive, or than 1024x it for a
  // deflated one (deflate's best ratio), plus room for tiny archives.
  const uint64_t limit = 1024 * uint64_t(bytes.size()) + (1 << 20);
  bool stored = entry.method == 0;
  if ((stored && entry.uncompressed > bytes.size()) ||
      entry.uncompressed > limit) {
    why = record + " claims " + std::to_string(entry.uncompressed) + " bytes";
    return std::nullopt;
  }
  if (!stored && entry.method != 8) {
    why = record + " uses compression method " + std::to_string(entry.method) +
          ", which LibTorch cannot read";
    return std::nullopt;
  }
  uint64_t local = entry.local;
  if (local > bytes.size() || bytes.size() - local < 30 ||
      readLittleEndian(bytes, local, 4) != kLocalSignature) {
    why = record + " has no local header where the directory says";
    return std::nullopt;
  }
  uint64_t start = local + 30 + readLittleEndian(bytes, local + 26, 2) +
                   readLittleEndian(bytes, local + 28, 2);
  uint64_t length = stored ? entry.uncompressed : entry.compressed;
  if (start > bytes.size() || bytes.size() - start < length) {
    why = record + " runs past the end of the archive";
    return std::nullopt;
  }
  return bytes.substr(start, length);
}

/// Why the record `entry`, whose data is `data`, does not match its CRC-32.
std::optional<std::string> checkRecordCrc(const Entry &entry,
                                          llvm::StringRef data) {
  const std::string record = "record '" + entry.name + "'";
  uint32_t crc;
  if (entry.method == 0) {
    crc = crcOfStored(data);
  } else {
    auto inflated = crcOfDeflated(data);
    if (!inflated)
      return record + " does not inflate";
    if (inflated->second != entry.uncompressed)
      return record + " inflates to " + std::to_string(inflated->second) +
             " bytes, not the " + std::to_string(entry.uncompressed) +
             " its directory entry says";
    crc = inflated->first;
  }
  if (crc != entry.crc)
    return record + " does not match its CRC-32 (stored " + hex(entry.crc) +
           ", computed " + hex(crc) + ")";
  return std::nullopt;
}

/// Calls `visit(entry, data)` for each record in directory order until it
/// returns false; why the directory or a record's bounds are bad, if they
/// are.
template <typename Visit>
std::optional<std::string> walkRecords(llvm::StringRef bytes, Visit visit) {
  std::string why;
  std::optional<Directory> directory = findDirectory(bytes, why);
  if (!directory)
    return why;
  uint64_t at = directory->offset;
  for (uint64_t i = 0; i < directory->entries; ++i) {
    if (at > bytes.size() || bytes.size() - at < 46 ||
        readLittleEndian(bytes, at, 4) != kEntrySignature)
      return std::string("bad central directory entry");
    Entry entry;
    entry.method = readLittleEndian(bytes, at + 10, 2);
    entry.crc = readLittleEndian(bytes, at + 16, 4);
    entry.compressed = readLittleEndian(bytes, at + 20, 4);
    entry.uncompressed = readLittleEndian(bytes, at + 24, 4);
    uint64_t nameLength = readLittleEndian(bytes, at + 28, 2);
    uint64_t extraLength = readLittleEndian(bytes, at + 30, 2);
    uint64_t commentLength = readLittleEndian(bytes, at + 32, 2);
    entry.local = readLittleEndian(bytes, at + 42, 4);
    if (bytes.size() - at - 46 < nameLength + extraLength)
      return std::string("bad central directory entry");
    entry.name = bytes.substr(at + 46, nameLength).str();
    applyZip64Extra(bytes.substr(at + 46 + nameLength, extraLength), entry);
    std::optional<llvm::StringRef> data = locateRecord(bytes, entry, why);
    if (!data)
      return why;
    std::optional<std::string> damage = visit(entry, *data);
    if (damage)
      return damage;
    at += 46 + nameLength + extraLength + commentLength;
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string>
mlir::memopt::findZipArchiveDamage(llvm::StringRef bytes) {
  return walkRecords(bytes, checkRecordCrc);
}

std::optional<std::vector<ZipRecord>>
mlir::memopt::readZipRecords(llvm::StringRef bytes, std::string &why) {
  std::vector<ZipRecord> records;
  std::optional<std::string> damage = walkRecords(
      bytes,
      [&](const Entry &entry,
          llvm::StringRef data) -> std::optional<std::string> {
        records.push_back({entry.name, static_cast<uint16_t>(entry.method),
                           static_cast<uint32_t>(entry.crc), entry.uncompressed,
                           data});
        return std::nullopt;
      });
  if (damage) {
    why = *damage;
    return std::nullopt;
  }
  return records;
}

std::optional<std::string>
mlir::memopt::readZipRecordData(const ZipRecord &record) {
  if (record.method == 0)
    return record.data.str();
  std::string text;
  if (record.method != 8 ||
      !inflateRaw(record.data, [&](const Bytef *piece, size_t length) {
        text.append(reinterpret_cast<const char *>(piece), length);
      }))
    return std::nullopt;
  return text;
}

std::optional<std::string>
mlir::memopt::torchScriptRecordPrefix(const std::vector<ZipRecord> &records) {
  for (const ZipRecord &record : records) {
    llvm::StringRef name = record.name;
    if (name.ends_with("/data.pkl") && name.count('/') == 1)
      return name.drop_back(llvm::StringRef("data.pkl").size()).str();
  }
  return std::nullopt;
}
