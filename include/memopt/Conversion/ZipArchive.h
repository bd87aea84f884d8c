//===- ZipArchive.h - What is wrong with a zip archive, if anything -*- C++
//-*-===//
//
// TorchScript archives are zip files. LibTorch's reader neither bounds the
// sizes a central directory declares nor checks the records' CRC-32s, so a
// damaged file can ask for gigabytes or load as different weights. Both
// directions check here: the importer before LibTorch reads a model, the
// exporter after writing one. LLVM Support and zlib only.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_ZIPARCHIVE_H
#define MEMOPT_CONVERSION_ZIPARCHIVE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

/// Why `bytes` is not an intact zip archive (no end of central directory, an
/// entry out of bounds, a record that claims more bytes than the archive can
/// hold, a record whose data does not match its CRC-32, naming the record),
/// or std::nullopt when every record checks out.
std::optional<std::string> findZipArchiveDamage(llvm::StringRef bytes);

/// One record of a zip archive as it is stored: `data` is what follows its
/// local header (the deflated bytes when `method` is 8, deflate).
struct ZipRecord {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t uncompressedSize = 0;
  llvm::StringRef data;
};

/// The records of `bytes` in directory order, each bounded by the archive as
/// findZipArchiveDamage bounds them (their CRC-32s are not checked), or
/// std::nullopt with `why` set.
std::optional<std::vector<ZipRecord>> readZipRecords(llvm::StringRef bytes,
                                                     std::string &why);

/// The folder a TorchScript archive's records are in, with its slash
/// ("archive/" for "archive/data.pkl"), or std::nullopt without a data.pkl.
std::optional<std::string>
torchScriptRecordPrefix(const std::vector<ZipRecord> &records);

/// What `record` holds, inflated if it is deflated; std::nullopt if it does
/// not inflate.
std::optional<std::string> readZipRecordData(const ZipRecord &record);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_ZIPARCHIVE_H
