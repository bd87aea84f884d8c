//===- SourceArchive.h - The source .pt, open while a compile runs -*- C++ -*-//
//
// A compiled module's weights are its source's: the export writes them
// again, which on large models is most of the export's time (a write()
// copies every byte into the page cache). The source archive stays open and
// mapped from the import to the export; the import notes where each large
// tensor's bytes were read from, and the export copies those ranges file to
// file (copy_file_range) when the tensor still holds exactly those bytes.
// LLVM Support only.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_SOURCEARCHIVE_H
#define MEMOPT_CONVERSION_SOURCEARCHIVE_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace mlir::memopt {

class SourceArchive {
public:
  /// Reads smaller than this are not noted: copying them file to file saves
  /// less than the system call costs.
  static constexpr size_t kMinCopyBytes = 64 * 1024;

  /// Opens and maps `path`. The descriptor and the mapping are of the same
  /// file, even if `path` is replaced while the compile runs.
  static llvm::Expected<std::unique_ptr<SourceArchive>>
  open(llvm::StringRef path);
  ~SourceArchive();
  SourceArchive(const SourceArchive &) = delete;
  SourceArchive &operator=(const SourceArchive &) = delete;

  llvm::StringRef path() const { return filePath; }
  llvm::StringRef bytes() const { return mapping->getBuffer(); }

  /// Notes that the `size` bytes at `offset` of the file were copied to
  /// `destination` (a reader filling a tensor's storage).
  void noteRead(const void *destination, uint64_t offset, size_t size);

  /// The file offset whose `size` bytes were read into `data` and equal
  /// them still, if any.
  std::optional<uint64_t> unchangedOffset(const void *data, size_t size) const;

  /// Copies `size` bytes at `offset` of the file to `outputFd` at its
  /// current position, in the kernel; returns how many it copied before the
  /// first failure (0 where the two files cannot be copied between, e.g. a
  /// pipe or another file system): the caller writes the rest itself.
  size_t copyTo(int outputFd, uint64_t offset, size_t size) const;

private:
  SourceArchive(std::string path, int fd,
                std::unique_ptr<llvm::MemoryBuffer> mapping);

  std::string filePath;
  int fd;
  std::unique_ptr<llvm::MemoryBuffer> mapping;
  mutable std::mutex readsMutex;
  /// destination -> (offset, size)
  llvm::DenseMap<const void *, std::pair<uint64_t, size_t>> reads;
};

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_SOURCEARCHIVE_H
