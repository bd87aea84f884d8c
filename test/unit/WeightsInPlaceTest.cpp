//===- WeightsInPlaceTest.cpp - loading with the weights left in the file -===//
//
// loadWithWeightsInPlace on archives torch.jit.save wrote: every weight
// storage points into the archive's bytes, the state is the one
// torch.jit.load gives (values, sizes, strides, offsets, a tensor under two
// names, a view into another storage), forwards that write their state do
// not write the file behind a copy-on-write mapping, and archives whose
// classes restore themselves (__setstate__) are left to torch.jit.load.
//
//===----------------------------------------------------------------------===//
#include "../../lib/Conversion/TorchScriptImport/ImportInternal.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>

#include <fstream>
#include <sstream>

using mlir::memopt::detail::loadWithWeightsInPlace;

namespace {

torch::jit::Module makeModule() {
  torch::jit::Module module("Net");
  at::Tensor weight = at::rand({64, 64}).requires_grad_();
  at::Tensor table = at::arange(20, at::kFloat).reshape({5, 4});
  module.register_parameter("w", weight, /*is_buffer=*/false);
  module.register_buffer("running", at::zeros({64}));
  module.register_buffer("table", table);
  module.register_attribute("alias", c10::TensorType::get(), weight);
  module.register_attribute("row", c10::TensorType::get(), table.select(0, 2));
  module.define(R"(
def forward(self, x):
    self.running.add_(x.mean())
    self.w.data.mul_(0.5)
    return x @ self.w + self.alias.sum() + self.row.sum()
)");
  return module;
}

std::string saved(const torch::jit::Module &module) {
  std::ostringstream out;
  module.save(out);
  return out.str();
}

bool inside(const at::Tensor &tensor, llvm::StringRef bytes) {
  auto *data = static_cast<const char *>(tensor.storage().data());
  return data >= bytes.begin() && data < bytes.end();
}

void expectStateOf(const torch::jit::Module &loaded,
                   const torch::jit::Module &expected, llvm::StringRef bytes) {
  for (const char *name : {"w", "running", "table", "alias", "row"}) {
    at::Tensor actual = loaded.attr(name).toTensor();
    at::Tensor reference = expected.attr(name).toTensor();
    EXPECT_TRUE(inside(actual, bytes)) << name;
    EXPECT_TRUE(at::equal(actual, reference)) << name;
    EXPECT_EQ(actual.strides(), reference.strides()) << name;
    EXPECT_EQ(actual.storage_offset(), reference.storage_offset()) << name;
    EXPECT_EQ(actual.requires_grad(), reference.requires_grad()) << name;
  }
  EXPECT_TRUE(
      loaded.attr("alias").toTensor().is_same(loaded.attr("w").toTensor()));
  EXPECT_EQ(loaded.attr("row").toTensor().storage().data(),
            loaded.attr("table").toTensor().storage().data());
}

TEST(WeightsInPlace, StoragesPointIntoTheArchive) {
  torch::jit::Module module = makeModule();
  std::string archive = saved(module);
  std::shared_ptr<llvm::WritableMemoryBuffer> buffer =
      llvm::WritableMemoryBuffer::getNewUninitMemBuffer(
          archive.size(), "net.pt", llvm::Align(64));
  std::memcpy(buffer->getBufferStart(), archive.data(), archive.size());
  llvm::StringRef bytes(buffer->getBufferStart(), buffer->getBufferSize());
  std::optional<torch::jit::Module> loaded =
      loadWithWeightsInPlace(bytes, buffer);
  ASSERT_TRUE(loaded);
  // Copies that differ (a file changed between its two reads) load as before.
  std::shared_ptr<llvm::WritableMemoryBuffer> other =
      llvm::WritableMemoryBuffer::getNewUninitMemBuffer(
          archive.size(), "other.pt", llvm::Align(64));
  std::memcpy(other->getBufferStart(), archive.data(), archive.size());
  std::memset(other->getBufferStart() + archive.size() / 2, 0x5A, 64);
  EXPECT_FALSE(loadWithWeightsInPlace(bytes, other));
  std::istringstream in(archive);
  expectStateOf(*loaded, torch::jit::load(in), bytes);
  // The storages keep the bytes alive.
  std::weak_ptr<llvm::WritableMemoryBuffer> alive = buffer;
  buffer.reset();
  EXPECT_FALSE(alive.expired());
  at::Tensor x = at::rand({3, 64});
  std::istringstream again(archive);
  torch::jit::Module reference = torch::jit::load(again);
  EXPECT_TRUE(at::equal(loaded->forward({x}).toTensor(),
                        reference.forward({x}).toTensor()));
  loaded.reset();
  EXPECT_TRUE(alive.expired());
}

TEST(WeightsInPlace, ForwardsThatWriteStateLeaveTheFile) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("weights", "pt", path));
  std::string archive = saved(makeModule());
  {
    std::ofstream file(path.c_str(), std::ios::binary);
    file << archive;
  }
  // As memopt-compile reads it: a read-only mapping for the import, a
  // copy-on-write one for the weights.
  auto readOnly = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
  auto mapped = llvm::WritableMemoryBuffer::getFile(path);
  ASSERT_TRUE(readOnly && mapped);
  std::shared_ptr<llvm::WritableMemoryBuffer> weights = std::move(*mapped);
  llvm::StringRef bytes = (*readOnly)->getBuffer();
  llvm::StringRef copy(weights->getBufferStart(), weights->getBufferSize());
  std::optional<torch::jit::Module> loaded =
      loadWithWeightsInPlace(bytes, weights);
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(inside(loaded->attr("w").toTensor(), copy));
  at::Tensor before = loaded->attr("w").toTensor().clone();
  loaded->forward({at::rand({3, 64})});
  EXPECT_TRUE(at::equal(loaded->attr("w").toTensor(), before * 0.5));
  EXPECT_EQ(bytes, archive);
  auto onDisk = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(onDisk);
  EXPECT_EQ((*onDisk)->getBuffer(), archive);
  llvm::sys::fs::remove(path);
}

TEST(WeightsInPlace, ClassesThatRestoreThemselvesLoadAsBefore) {
  torch::jit::Module module("Restoring");
  module.register_parameter("w", at::rand({4}), /*is_buffer=*/false);
  module.define(R"(
def __getstate__(self) -> Tuple[Tensor]:
    return (self.w,)

def __setstate__(self, state: Tuple[Tensor]) -> None:
    self.w = state[0] * 2

def forward(self, x):
    return x * self.w
)");
  std::string archive = saved(module);
  auto buffer = std::shared_ptr<llvm::WritableMemoryBuffer>(
      llvm::WritableMemoryBuffer::getNewUninitMemBuffer(
          archive.size(), "restoring.pt", llvm::Align(64)));
  std::memcpy(buffer->getBufferStart(), archive.data(), archive.size());
  EXPECT_FALSE(loadWithWeightsInPlace(
      llvm::StringRef(buffer->getBufferStart(), buffer->getBufferSize()),
      buffer));
}

} // namespace
