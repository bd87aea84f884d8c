//===- ArchiveWriter.cpp - A module's archive without LibTorch's writer ---===//
//
// torch.jit.save checksums every weight byte by byte (miniz's table CRC,
// under 1 GB/s): CPU time that grows with the weights. The exporter already
// saves a skeleton of the module (same classes and code, empty tensors) for
// the reload check; the archive is that skeleton's records with data.pkl
// pickled again from the real state, as LibTorch's ScriptModuleSerializer
// pickles it (its Pickler, a fresh TypeNameUniquer, storages named 0, 1, ...
// in the order they are met), and one stored record per storage,
// checksummed by carry-less multiplication (Crc32.h). The procedure is
// proven on each module before anything is written: pickled this way, the
// skeleton must give the skeleton archive's data.pkl byte for byte, or the
// caller saves through LibTorch.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ModuleArchive.h"
#include "memopt/Conversion/ZipWriter.h"

#include "llvm/ADT/STLExtras.h"

#include <ATen/Functions.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/type_name_uniquer.h>

#include <sstream>
#include <streambuf>

using namespace mlir;
using namespace mlir::memopt;

/// `value` with every tensor of it and its submodules replaced by an empty
/// one of the same dtype; objects keep their types.
static c10::IValue withEmptyTensors(const c10::IValue &value) {
  if (value.isTensor()) {
    const at::Tensor &tensor = value.toTensor();
    return tensor.defined() ? at::empty({0}, tensor.options()) : tensor;
  }
  if (!value.isObject() || !value.toObject()->type()->is_module())
    return value;
  c10::intrusive_ptr<c10::ivalue::Object> object = value.toObject();
  size_t slots = object->slots().size();
  auto copy = c10::ivalue::Object::create(
      c10::StrongTypePtr(object->compilation_unit(), object->type()), slots);
  for (size_t i = 0; i < slots; ++i)
    copy->setSlot(i, withEmptyTensors(object->getSlot(i)));
  return copy;
}

ModuleSkeleton
mlir::memopt::saveModuleSkeleton(const torch::jit::Module &module) {
  ModuleSkeleton skeleton{
      torch::jit::Module(withEmptyTensors(module._ivalue()).toObject()), ""};
  std::ostringstream bytes;
  skeleton.module.save(bytes);
  skeleton.archive = bytes.str();
  return skeleton;
}

namespace {
/// A std::ostream's buffer that writes to an llvm::raw_ostream, so that
/// LibTorch's writer writes straight to the output.
class RawOstreamBuffer final : public std::streambuf {
public:
  explicit RawOstreamBuffer(llvm::raw_ostream &os) : os(os) {}

protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      char byte = traits_type::to_char_type(c);
      os.write(&byte, 1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char *data, std::streamsize size) override {
    os.write(data, size);
    return size;
  }

private:
  llvm::raw_ostream &os;
};
/// A module's state pickled as torch.jit.save pickles it into data.pkl: the
/// bytes, and the storages in the order they are named (storage i is the
/// record data/i).
struct PickledModuleState {
  std::string bytes;
  std::vector<at::Tensor> storages;
};
} // namespace

static PickledModuleState pickleModuleState(const c10::IValue &state) {
  PickledModuleState pickled;
  torch::jit::TypeNameUniquer uniquer;
  std::vector<c10::ClassTypePtr> memoizedTypes;
  size_t names = 0;
  torch::jit::Pickler pickler(
      [&](const char *data, size_t size) { pickled.bytes.append(data, size); },
      /*tensor_table=*/nullptr,
      [&](const c10::ClassTypePtr &type) {
        return uniquer.getUniqueName(type);
      },
      &memoizedTypes,
      [&](const at::Tensor &) { return std::to_string(names++); });
  pickler.protocol();
  pickler.pushIValue(state);
  pickler.stop();
  pickled.storages = pickler.tensorData();
  return pickled;
}

bool mlir::memopt::writeArchiveFromSkeleton(const torch::jit::Module &module,
                                            const ModuleSkeleton &skeleton,
                                            llvm::raw_ostream &output,
                                            uint64_t zip64From) {
  std::string why;
  std::optional<std::vector<ZipRecord>> records =
      readZipRecords(skeleton.archive, why);
  if (!records)
    return false;
  std::optional<std::string> prefix = torchScriptRecordPrefix(*records);
  if (!prefix)
    return false;
  const std::string dataPickle = *prefix + "data.pkl";
  const std::string dataDir = *prefix + "data/";
  auto found = llvm::find_if(*records, [&](const ZipRecord &record) {
    return record.name == dataPickle;
  });
  if (found == records->end() || found->method != 0 ||
      pickleModuleState(skeleton.module._ivalue()).bytes != found->data)
    return false;

  PickledModuleState state = pickleModuleState(module._ivalue());
  // Written as LibTorch orders them: the storages, then data.pkl.
  ZipWriter writer(output, zip64From);
  for (const ZipRecord &record : *records) {
    llvm::StringRef name = record.name;
    if (name.starts_with(dataDir))
      continue;
    if (name != dataPickle) {
      writer.addCopy(record);
      continue;
    }
    for (size_t i = 0; i < state.storages.size(); ++i) {
      torch::jit::WriteableTensorData data =
          torch::jit::getWriteableTensorData(state.storages[i]);
      writer.addStored(dataDir + std::to_string(i),
                       llvm::StringRef(static_cast<const char *>(data.data()),
                                       data.sizeInBytes()));
    }
    writer.addStored(dataPickle, state.bytes);
  }
  writer.finish();
  return true;
}

void mlir::memopt::writeModuleArchive(const torch::jit::Module &module,
                                      const ModuleSkeleton &skeleton,
                                      llvm::raw_ostream &output) {
  if (writeArchiveFromSkeleton(module, skeleton, output))
    return;
  RawOstreamBuffer buffer(output);
  std::ostream stream(&buffer);
  module.save(stream);
}
