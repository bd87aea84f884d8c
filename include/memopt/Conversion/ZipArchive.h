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

#include <optional>
#include <string>

namespace mlir::memopt {

/// Why `bytes` is not an intact zip archive (no end of central directory, an
/// entry out of bounds, a record that claims more bytes than the archive can
/// hold, a record whose data does not match its CRC-32, naming the record),
/// or std::nullopt when every record checks out.
std::optional<std::string> findZipArchiveDamage(llvm::StringRef bytes);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_ZIPARCHIVE_H
