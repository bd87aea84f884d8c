//===- WeightsInPlace.cpp - Load a model, its weights left in the file ----===//
//
// torch.jit.load copies every weight record into freshly allocated memory:
// for large models most of the import's time, and twice the weights' memory
// with the file mapped. memopt-compile maps the file a second time,
// copy-on-write, and loads an archive whose weight records hold one byte
// each: LibTorch builds every tensor (sizes, strides, offsets, sharing) on a
// storage of the right size whose data is the one-byte buffer it read the
// record into, and each storage is then pointed at its record in that
// mapping. The reader sees which record LibTorch reads into which buffer, so
// storages are matched to records by what LibTorch did, not by assuming how
// it names them. Nothing reads tensor data while loading unless a class
// defines __setstate__ (those archives load as before). Writes (a forward
// updating batch-norm statistics, or clipping its weights) copy the pages
// they touch: neither the file nor the first mapping, which the import may
// load again from, changes.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Conversion/ZipArchive.h"
#include "memopt/Conversion/ZipWriter.h"

#include <torch/csrc/jit/serialization/import.h>

#include <mutex>

using namespace mlir::memopt;
using namespace mlir::memopt::detail;

namespace {
/// An archive whose weight records hold one byte, and where each of those
/// bytes lies in it with the record it stands for.
struct StrippedArchive {
  std::string archive;
  std::unordered_map<uint64_t, llvm::StringRef> weightsAt;
};

/// Reads the stripped archive (which it owns: LibTorch may keep its reader)
/// as BufferReader does and notes, for each one-byte read of a stand-in
/// byte, the buffer LibTorch read it into.
class RecordingReader final : public caffe2::serialize::ReadAdapterInterface {
public:
  explicit RecordingReader(StrippedArchive archive)
      : stripped(std::move(archive)), reader(stripped.archive) {}
  size_t size() const override { return reader.size(); }
  size_t read(uint64_t pos, void *buf, size_t n,
              const char *what = "") const override {
    if (n == 1)
      if (auto found = stripped.weightsAt.find(pos);
          found != stripped.weightsAt.end()) {
        std::lock_guard<std::mutex> lock(mutex);
        readInto[buf] = found->second;
      }
    return reader.read(pos, buf, n, what);
  }

  /// The record whose stand-in byte was read into `buffer`, if any.
  std::optional<llvm::StringRef> recordReadInto(const void *buffer) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = readInto.find(buffer);
    if (found == readInto.end())
      return std::nullopt;
    return found->second;
  }

  size_t standIns() const { return stripped.weightsAt.size(); }

private:
  const StrippedArchive stripped;
  BufferReader reader; // reads `stripped.archive`: declared after it
  mutable std::mutex mutex;
  mutable std::unordered_map<const void *, llvm::StringRef> readInto;
};
} // namespace

/// Whether record data can back a tensor in place: stored, and not empty.
/// Its copy must also be aligned as torch.jit.save aligns records (64
/// bytes), which every dtype's kernels accept.
static bool usableInPlace(const ZipRecord &record) {
  return record.method == 0 && record.uncompressedSize > 0;
}

static std::optional<StrippedArchive> stripWeights(llvm::StringRef bytes) {
  std::string why;
  std::optional<std::vector<ZipRecord>> records = readZipRecords(bytes, why);
  if (!records)
    return std::nullopt;
  std::optional<std::string> folder = torchScriptRecordPrefix(*records);
  if (!folder)
    return std::nullopt;
  const std::string &prefix = *folder;
  StrippedArchive stripped;
  llvm::raw_string_ostream os(stripped.archive);
  ZipWriter writer(os);
  for (const ZipRecord &record : *records) {
    llvm::StringRef name = record.name;
    // A class that restores itself may read its tensors while loading.
    if (name.starts_with(prefix + "code/") && name.ends_with(".py")) {
      std::optional<std::string> code = readZipRecordData(record);
      if (!code || llvm::StringRef(*code).contains("__setstate__"))
        return std::nullopt;
    }
    if (name.starts_with(prefix + "data/") && usableInPlace(record))
      stripped.weightsAt[writer.addStored(name, llvm::StringRef("\0", 1))] =
          record.data;
    else
      writer.addCopy(record);
  }
  writer.finish();
  os.flush();
  return stripped;
}

/// `storage` made to hold `weights` (kept alive through `owner`).
static void pointAt(c10::StorageImpl &storage, llvm::StringRef weights,
                    const std::shared_ptr<void> &owner) {
  auto *reference = new std::shared_ptr<void>(owner);
  storage.set_data_ptr_noswap(c10::DataPtr(
      const_cast<char *>(weights.data()), reference,
      [](void *context) {
        delete static_cast<std::shared_ptr<void> *>(context);
      },
      c10::Device(c10::kCPU)));
}

/// The storages of every tensor in `value` (objects, lists, tuples, dicts).
static void collectStorages(const c10::IValue &value,
                            std::vector<c10::Storage> &storages,
                            std::unordered_set<const void *> &seen) {
  if (value.isPtrType() && !seen.insert(value.internalToPointer()).second)
    return;
  if (value.isTensor()) {
    const at::Tensor &tensor = value.toTensor();
    if (tensor.defined() && tensor.has_storage())
      storages.push_back(tensor.storage());
  } else if (value.isObject()) {
    c10::intrusive_ptr<c10::ivalue::Object> object = value.toObject();
    for (const c10::IValue &slot : object->slots())
      collectStorages(slot, storages, seen);
  } else if (value.isList()) {
    for (const c10::IValue &element : value.toList())
      collectStorages(element, storages, seen);
  } else if (value.isTuple()) {
    for (const c10::IValue &element : value.toTupleRef().elements())
      collectStorages(element, storages, seen);
  } else if (value.isGenericDict()) {
    for (const auto &entry : value.toGenericDict()) {
      collectStorages(entry.key(), storages, seen);
      collectStorages(entry.value(), storages, seen);
    }
  }
}

std::optional<torch::jit::Module> mlir::memopt::detail::loadWithWeightsInPlace(
    llvm::StringRef bytes,
    std::shared_ptr<llvm::WritableMemoryBuffer> weights) {
  if (!weights || weights->getBufferSize() != bytes.size())
    return std::nullopt;
  std::optional<StrippedArchive> stripped = stripWeights(bytes);
  if (!stripped || stripped->weightsAt.empty())
    return std::nullopt;
  // Each record's place in the private copy, which must hold what `bytes`
  // holds there (the file may have changed between the two reads).
  for (auto &[at, record] : stripped->weightsAt) {
    llvm::StringRef copy(weights->getBufferStart() +
                             (record.data() - bytes.data()),
                         record.size());
    if (copy != record || reinterpret_cast<uintptr_t>(copy.data()) % 64 != 0)
      return std::nullopt;
    record = copy;
  }
  std::shared_ptr<void> owner = std::move(weights);
  auto reader = std::make_shared<RecordingReader>(std::move(*stripped));
  std::optional<torch::jit::Module> module;
  try {
    module = torch::jit::load(reader, c10::Device(c10::kCPU));
  } catch (const std::exception &) {
    return std::nullopt; // this LibTorch does not load it so
  }
  // Each stand-in byte must have become exactly one storage of the state,
  // of its record's size; storages LibTorch read in full stay as they are.
  std::vector<c10::Storage> storages;
  std::unordered_set<const void *> seen;
  collectStorages(module->_ivalue(), storages, seen);
  std::vector<std::pair<c10::StorageImpl *, llvm::StringRef>> moves;
  std::unordered_set<const char *> matched;
  std::unordered_set<const c10::StorageImpl *> visited;
  for (const c10::Storage &storage : storages) {
    if (!visited.insert(storage.unsafeGetStorageImpl()).second)
      continue; // a second view of one storage
    std::optional<llvm::StringRef> record =
        reader->recordReadInto(storage.data());
    if (!record)
      continue;
    if (storage.nbytes() != record->size() ||
        !matched.insert(record->data()).second)
      return std::nullopt;
    moves.emplace_back(storage.unsafeGetStorageImpl(), *record);
  }
  if (moves.size() != reader->standIns())
    return std::nullopt; // a stand-in no storage of the state holds
  for (auto &[storage, weights] : moves)
    pointAt(*storage, weights, owner);
  return module;
}
