//===- SourceArchive.cpp - The source .pt, open while a compile runs ------===//
#include "memopt/Conversion/SourceArchive.h"

#include "llvm/Support/FileSystem.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

using namespace mlir::memopt;

SourceArchive::SourceArchive(std::string path, int fd,
                             std::unique_ptr<llvm::MemoryBuffer> mapping)
    : filePath(std::move(path)), fd(fd), mapping(std::move(mapping)) {}

SourceArchive::~SourceArchive() { ::close(fd); }

llvm::Expected<std::unique_ptr<SourceArchive>>
SourceArchive::open(llvm::StringRef path) {
  llvm::Expected<llvm::sys::fs::file_t> opened =
      llvm::sys::fs::openNativeFileForRead(path);
  if (!opened)
    return opened.takeError();
  int fd = *opened;
  llvm::sys::fs::file_status status;
  std::error_code ec = llvm::sys::fs::status(fd, status);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> mapping =
      ec ? llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>>(ec)
         : llvm::MemoryBuffer::getOpenFile(fd, path, status.getSize(),
                                           /*RequiresNullTerminator=*/false);
  if (!mapping) {
    ::close(fd);
    return llvm::errorCodeToError(mapping.getError());
  }
  return std::unique_ptr<SourceArchive>(
      new SourceArchive(path.str(), fd, std::move(*mapping)));
}

void SourceArchive::noteRead(const void *destination, uint64_t offset,
                             size_t size) {
  if (size < kMinCopyBytes)
    return;
  std::lock_guard<std::mutex> lock(readsMutex);
  reads[destination] = {offset, size};
}

std::optional<uint64_t> SourceArchive::unchangedOffset(const void *data,
                                                       size_t size) const {
  if (size < kMinCopyBytes)
    return std::nullopt;
  std::pair<uint64_t, size_t> read;
  {
    std::lock_guard<std::mutex> lock(readsMutex);
    auto found = reads.find(data);
    if (found == reads.end())
      return std::nullopt;
    read = found->second;
  }
  if (read.second != size || read.first > bytes().size() ||
      size > bytes().size() - read.first)
    return std::nullopt;
  // Nothing may have written the tensor since; comparing costs a read of
  // both, far less than writing the bytes.
  if (std::memcmp(bytes().data() + read.first, data, size) != 0)
    return std::nullopt;
  return read.first;
}

size_t SourceArchive::copyTo(int outputFd, uint64_t offset, size_t size) const {
  size_t copied = 0;
  while (copied < size) {
    loff_t from = static_cast<loff_t>(offset + copied);
    ssize_t n = ::copy_file_range(fd, &from, outputFd, nullptr, size - copied,
                                  /*flags=*/0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    copied += static_cast<size_t>(n);
  }
  return copied;
}
