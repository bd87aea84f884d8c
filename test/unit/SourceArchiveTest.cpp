//===- SourceArchiveTest.cpp - weights copied file to file, only if equal -===//
#include "memopt/Conversion/SourceArchive.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <random>
#include <unistd.h>
#include <vector>

using namespace mlir::memopt;

namespace {

std::vector<char> randomBytes(size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::vector<char> bytes(size);
  for (char &byte : bytes)
    byte = static_cast<char>(generator());
  return bytes;
}

/// A temporary file holding `bytes`, removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::vector<char> &bytes) {
    int fd;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("source-archive", "pt", fd, path));
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(bytes.data(), bytes.size());
  }
  ~TempFile() { llvm::sys::fs::remove(path); }
  llvm::SmallString<128> path;
};

std::vector<char> readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer));
  return std::vector<char>((*buffer)->getBufferStart(),
                           (*buffer)->getBufferEnd());
}

constexpr size_t kRecord = SourceArchive::kMinCopyBytes * 2;
constexpr size_t kOffset = 4096 + 64;

TEST(SourceArchive, FindsWhatWasReadWhileItIsUnchanged) {
  std::vector<char> bytes = randomBytes(kOffset + kRecord + 100, 1);
  TempFile file(bytes);
  auto archive = SourceArchive::open(file.path);
  ASSERT_TRUE(bool(archive)) << llvm::toString(archive.takeError());
  ASSERT_EQ((*archive)->bytes().size(), bytes.size());

  // A reader filling a tensor's storage.
  std::vector<char> tensor(kRecord);
  std::memcpy(tensor.data(), (*archive)->bytes().data() + kOffset, kRecord);
  (*archive)->noteRead(tensor.data(), kOffset, kRecord);

  EXPECT_EQ((*archive)->unchangedOffset(tensor.data(), kRecord),
            std::optional<uint64_t>(kOffset));
  // Another size at the same address, or another address, is not that read.
  EXPECT_FALSE((*archive)->unchangedOffset(tensor.data(), kRecord - 4));
  EXPECT_FALSE((*archive)->unchangedOffset(tensor.data() + 4, kRecord - 4));
  // One byte written since: the file no longer holds the tensor.
  tensor[kRecord / 2] ^= 1;
  EXPECT_FALSE((*archive)->unchangedOffset(tensor.data(), kRecord));
}

TEST(SourceArchive, IgnoresSmallReadsAndReadsPastTheEnd) {
  std::vector<char> bytes = randomBytes(kOffset + kRecord, 2);
  TempFile file(bytes);
  auto archive = SourceArchive::open(file.path);
  ASSERT_TRUE(bool(archive));
  std::vector<char> small(SourceArchive::kMinCopyBytes - 1);
  std::memcpy(small.data(), bytes.data(), small.size());
  (*archive)->noteRead(small.data(), 0, small.size());
  EXPECT_FALSE((*archive)->unchangedOffset(small.data(), small.size()));

  // A read noted beyond the file (a reader's bug) is never copied.
  std::vector<char> tensor(kRecord);
  (*archive)->noteRead(tensor.data(), kOffset + 1, kRecord);
  EXPECT_FALSE((*archive)->unchangedOffset(tensor.data(), kRecord));
}

TEST(SourceArchive, CopiesIntoAFileAtItsPosition) {
  std::vector<char> bytes = randomBytes(kOffset + kRecord, 3);
  TempFile source(bytes);
  auto archive = SourceArchive::open(source.path);
  ASSERT_TRUE(bool(archive));

  TempFile output({});
  int fd = ::open(output.path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "head", 4), 4);
  EXPECT_EQ((*archive)->copyTo(fd, kOffset, kRecord), kRecord);
  ASSERT_EQ(::write(fd, "tail", 4), 4);
  ::close(fd);

  std::vector<char> expected = {'h', 'e', 'a', 'd'};
  expected.insert(expected.end(), bytes.begin() + kOffset, bytes.end());
  expected.insert(expected.end(), {'t', 'a', 'i', 'l'});
  EXPECT_EQ(readFile(output.path), expected);
}

TEST(SourceArchive, CopiesNothingIntoAPipe) {
  // copy_file_range needs two regular files; the caller writes the bytes.
  std::vector<char> bytes = randomBytes(kRecord, 4);
  TempFile source(bytes);
  auto archive = SourceArchive::open(source.path);
  ASSERT_TRUE(bool(archive));
  int pipeEnds[2];
  ASSERT_EQ(::pipe(pipeEnds), 0);
  EXPECT_EQ((*archive)->copyTo(pipeEnds[1], 0, 16), 0u);
  ::close(pipeEnds[0]);
  ::close(pipeEnds[1]);
}

TEST(SourceArchive, KeepsTheFileItOpenedWhenThePathIsReplaced) {
  std::vector<char> first = randomBytes(kRecord, 5);
  TempFile file(first);
  auto archive = SourceArchive::open(file.path);
  ASSERT_TRUE(bool(archive));
  // Another file renamed over the path, as an editor or a build would.
  TempFile replacement(randomBytes(kRecord, 6));
  ASSERT_FALSE(llvm::sys::fs::rename(replacement.path, file.path));

  TempFile output({});
  int fd = ::open(output.path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ((*archive)->copyTo(fd, 0, kRecord), kRecord);
  ::close(fd);
  EXPECT_EQ(readFile(output.path), first);
  EXPECT_EQ(
      std::vector<char>((*archive)->bytes().begin(), (*archive)->bytes().end()),
      first);
}

TEST(SourceArchive, ReportsAFileThatCannotBeOpened) {
  auto archive = SourceArchive::open("/nonexistent/memopt/model.pt");
  ASSERT_FALSE(bool(archive));
  llvm::consumeError(archive.takeError());
}

} // namespace
