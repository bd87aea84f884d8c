//===- ZipWriterTest.cpp - archives ZipWriter writes read back ------------===//
//
// Round trips through the reader the importer and the exporter's check use
// (ZipArchive.h): names, bytes, CRC-32s and methods as written, every
// record's data 64-byte aligned, ZIP64 fields where sizes, offsets or the
// record count need them (forced on small archives by a lower threshold),
// and damage still found.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ZipWriter.h"
#include "memopt/Conversion/Crc32.h"
#include "memopt/Conversion/ZipArchive.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>

using namespace mlir::memopt;

namespace {

std::string randomBytes(size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (char &byte : bytes)
    byte = static_cast<char>(generator());
  return bytes;
}

uint32_t crcOf(llvm::StringRef data) {
  return updateCrc32WithZlib(0, reinterpret_cast<const uint8_t *>(data.data()),
                             data.size());
}

/// `text` raw-deflated (zip's method 8), as another tool may store a record.
std::string deflated(const std::string &text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&stream, text.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(text.data()));
  stream.avail_in = text.size();
  stream.next_out = reinterpret_cast<Bytef *>(out.data());
  stream.avail_out = out.size();
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

struct Written {
  std::string archive;
  std::vector<std::string> names, data;
};

/// An archive of an empty record, short and odd-sized ones, a large one and
/// a deflated copy, names of several lengths.
Written writeSample(uint64_t zip64From) {
  Written sample;
  sample.names = {"archive/data/0", "archive/version", "archive/data/17",
                  "archive/a-much-longer-record-name/data.pkl"};
  sample.data = {"", "3\n", randomBytes(1001, 1), randomBytes(70000, 2)};
  llvm::raw_string_ostream os(sample.archive);
  ZipWriter writer(os, zip64From);
  for (size_t i = 0; i < sample.names.size(); ++i) {
    if (i == 2)
      writer.addStored(sample.names[i], sample.data[i], crcOf(sample.data[i]));
    else
      writer.addStored(sample.names[i], sample.data[i]);
  }
  std::string text(5000, 'x');
  std::string packed = deflated(text);
  writer.addCopy(
      {"archive/code/m.py.debug_pkl", 8, crcOf(text), text.size(), packed});
  sample.names.push_back("archive/code/m.py.debug_pkl");
  sample.data.push_back(packed);
  writer.finish();
  os.flush();
  EXPECT_EQ(writer.size(), sample.archive.size());
  return sample;
}

void expectReadsBack(const Written &sample) {
  EXPECT_EQ(findZipArchiveDamage(sample.archive), std::nullopt);
  std::string why;
  auto records = readZipRecords(sample.archive, why);
  ASSERT_TRUE(records) << why;
  ASSERT_EQ(records->size(), sample.names.size());
  for (size_t i = 0; i < records->size(); ++i) {
    const ZipRecord &record = (*records)[i];
    EXPECT_EQ(record.name, sample.names[i]);
    EXPECT_EQ(record.data, sample.data[i]);
    EXPECT_EQ((record.data.data() - sample.archive.data()) % 64, 0)
        << record.name << " is not 64-byte aligned";
    if (record.method == 0) {
      EXPECT_EQ(record.crc, crcOf(sample.data[i]));
      EXPECT_EQ(record.uncompressedSize, sample.data[i].size());
    } else {
      EXPECT_EQ(record.method, 8);
      EXPECT_EQ(record.uncompressedSize, 5000u);
    }
  }
}

bool hasZip64End(llvm::StringRef archive) {
  return archive.contains(llvm::StringRef("PK\x06\x06", 4)) &&
         archive.contains(llvm::StringRef("PK\x06\x07", 4));
}

TEST(ZipWriter, RecordsReadBackAlignedWithTheirCrc) {
  Written sample = writeSample(/*zip64From=*/0xFFFFFFFF);
  expectReadsBack(sample);
  EXPECT_FALSE(hasZip64End(sample.archive));
}

// Every size and offset at or past the threshold goes into ZIP64 fields:
// with the threshold at 0 all of them, at 1000 only the large records and
// the offsets past them.
TEST(ZipWriter, Zip64FieldsWhereSizesOrOffsetsDoNotFit) {
  for (uint64_t threshold : {0ull, 1000ull, 60000ull}) {
    Written sample = writeSample(threshold);
    expectReadsBack(sample);
    EXPECT_TRUE(hasZip64End(sample.archive)) << threshold;
  }
}

TEST(ZipWriter, Zip64EndWhenRecordsDoNotFitTheClassicCount) {
  std::string archive;
  llvm::raw_string_ostream os(archive);
  ZipWriter writer(os);
  const size_t count = 0x10000 + 3;
  for (size_t i = 0; i < count; ++i)
    writer.addStored("r/" + std::to_string(i), std::to_string(i));
  writer.finish();
  os.flush();
  EXPECT_TRUE(hasZip64End(archive));
  std::string why;
  auto records = readZipRecords(archive, why);
  ASSERT_TRUE(records) << why;
  ASSERT_EQ(records->size(), count);
  EXPECT_EQ(records->back().name, "r/" + std::to_string(count - 1));
  EXPECT_EQ(records->back().data, std::to_string(count - 1));
}

TEST(ZipWriter, DamageIsStillFound) {
  Written sample = writeSample(/*zip64From=*/0xFFFFFFFF);
  std::string why;
  auto records = readZipRecords(sample.archive, why);
  ASSERT_TRUE(records) << why;
  size_t at = (*records)[2].data.data() - sample.archive.data();
  std::string damaged = sample.archive;
  damaged[at + 500] ^= 0x01;
  std::optional<std::string> damage = findZipArchiveDamage(damaged);
  ASSERT_TRUE(damage);
  EXPECT_NE(damage->find("record 'archive/data/17' does not match its CRC-32"),
            std::string::npos)
      << *damage;
  // A truncated archive has no directory to read records from.
  EXPECT_FALSE(
      readZipRecords(llvm::StringRef(sample.archive).drop_back(10), why));
}

/// Where the classic end of central directory record starts.
size_t endRecordOf(const std::string &archive) {
  return llvm::StringRef(archive).rfind(llvm::StringRef("PK\x05\x06", 4));
}

TEST(ZipWriter, EndRecordsThatDisagreeAreDamage) {
  // What a fuzzer found: LibTorch (miniz) takes the counts from the ZIP64
  // end record, the classic record said 0 entries in all; reading the
  // classic one, the CRC check saw no record while LibTorch read damaged
  // ones.
  Written forced = writeSample(/*zip64From=*/64);
  ASSERT_TRUE(hasZip64End(forced.archive));
  std::string why;
  ASSERT_TRUE(readZipRecords(forced.archive, why)) << why;
  size_t end = endRecordOf(forced.archive);
  std::string damaged = forced.archive;
  damaged[end + 10] = 0; // total entries, saturated when forced: now 0
  damaged[end + 11] = 0;
  damaged[end + 8] = 0; // entries on this disk, to match it
  damaged[end + 9] = 0;
  std::optional<std::string> damage = findZipArchiveDamage(damaged);
  ASSERT_TRUE(damage);
  EXPECT_NE(damage->find("disagree on the entries"), std::string::npos)
      << *damage;

  Written plain = writeSample(/*zip64From=*/0xFFFFFFFF);
  end = endRecordOf(plain.archive);
  damaged = plain.archive;
  damaged[end + 10] = 0; // total entries 0, entries on this disk unchanged
  damaged[end + 11] = 0;
  damage = findZipArchiveDamage(damaged);
  ASSERT_TRUE(damage);
  EXPECT_NE(damage->find("entries on its disk but 0 in all"), std::string::npos)
      << *damage;
}

} // namespace
