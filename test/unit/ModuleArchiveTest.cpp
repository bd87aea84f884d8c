//===- ModuleArchiveTest.cpp - compiled modules' archives load back -------===//
//
// writeArchiveFromSkeleton on a module with what a state holds: parameters
// and buffers, a submodule, one tensor under two names, a view into another
// tensor's storage, a constant in its code. The archive must take the fast
// path, pass the CRC check, and load with torch.jit.load as the same state
// (values, sharing, offsets) and the same forward as torch.jit.save's, with
// or without ZIP64 fields.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ModuleArchive.h"
#include "memopt/Conversion/ZipArchive.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>

#include <sstream>

using namespace mlir::memopt;

namespace {

torch::jit::Module makeModule() {
  torch::jit::Module inner("Inner");
  inner.register_parameter("scale", at::rand({4}), /*is_buffer=*/false);
  inner.define(R"(
def forward(self, x):
    return x * self.scale
)");
  torch::jit::Module outer("Outer");
  at::Tensor weight = at::rand({4}).requires_grad_();
  at::Tensor table = at::arange(20, at::kFloat).reshape({5, 4});
  outer.register_parameter("w", weight, /*is_buffer=*/false);
  outer.register_buffer("running", at::zeros({4}));
  outer.register_buffer("table", table);
  // The same tensor under a second name, and a view into another storage.
  outer.register_attribute("alias", c10::TensorType::get(), weight);
  outer.register_attribute("row", c10::TensorType::get(), table.select(0, 2));
  outer.register_attribute("steps", c10::IntType::get(), int64_t(7));
  outer.register_module("inner", inner);
  outer.define(R"(
def forward(self, x):
    self.running.add_(x.mean())
    y = self.inner.forward(x * self.w + self.alias)
    return y + self.row + self.steps + 0.5
)");
  return outer;
}

torch::jit::Module load(const std::string &archive) {
  std::istringstream in(archive);
  return torch::jit::load(in);
}

std::string torchSave(const torch::jit::Module &module) {
  std::ostringstream out;
  module.save(out);
  return out.str();
}

std::vector<std::pair<std::string, c10::IValue>>
attributes(const torch::jit::Module &module) {
  std::vector<std::pair<std::string, c10::IValue>> all;
  for (const auto &attribute : module.named_attributes(/*recurse=*/true))
    all.emplace_back(attribute.name, attribute.value);
  return all;
}

std::string printed(const c10::IValue &value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

void expectSameState(const torch::jit::Module &actual,
                     const torch::jit::Module &expected) {
  auto a = attributes(actual), e = attributes(expected);
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    const auto &[name, value] = e[i];
    EXPECT_EQ(a[i].first, name);
    if (value.isObject()) {
      EXPECT_EQ(a[i].second.type()->str(), value.type()->str()) << name;
      continue;
    }
    if (!value.isTensor()) {
      EXPECT_EQ(printed(a[i].second), printed(value)) << name;
      continue;
    }
    const at::Tensor &ta = a[i].second.toTensor(), &te = value.toTensor();
    EXPECT_TRUE(at::equal(ta, te)) << name;
    EXPECT_EQ(ta.sizes(), te.sizes()) << name;
    EXPECT_EQ(ta.strides(), te.strides()) << name;
    EXPECT_EQ(ta.storage_offset(), te.storage_offset()) << name;
    EXPECT_EQ(ta.requires_grad(), te.requires_grad()) << name;
  }
}

TEST(ModuleArchive, LoadsAsTorchJitSavesOnesWithAndWithoutZip64) {
  torch::jit::Module module = makeModule();
  ModuleSkeleton skeleton = saveModuleSkeleton(module);
  for (uint64_t zip64From : {uint64_t(0xFFFFFFFF), uint64_t(0)}) {
    torch::jit::Module saved = load(torchSave(module));
    std::string archive;
    llvm::raw_string_ostream os(archive);
    ASSERT_TRUE(writeArchiveFromSkeleton(module, skeleton, os, zip64From));
    os.flush();
    EXPECT_EQ(findZipArchiveDamage(archive), std::nullopt);
    std::string why;
    auto records = readZipRecords(archive, why);
    ASSERT_TRUE(records) << why;
    for (const ZipRecord &record : *records)
      if (llvm::StringRef(record.name).contains("/data/"))
        EXPECT_EQ((record.data.data() - archive.data()) % 64, 0) << record.name;

    torch::jit::Module loaded = load(archive);
    expectSameState(loaded, saved);
    // Sharing survives: one storage under two names, the row inside the
    // table's storage.
    auto attr = [&](const char *name) { return loaded.attr(name).toTensor(); };
    EXPECT_TRUE(attr("alias").is_same(attr("w")));
    EXPECT_EQ(attr("row").storage().data(), attr("table").storage().data());
    EXPECT_EQ(attr("row").storage_offset(), 8);

    at::Tensor x = at::rand({3, 4});
    at::Tensor expected = saved.forward({x}).toTensor();
    EXPECT_TRUE(at::equal(loaded.forward({x}).toTensor(), expected));
  }
}

TEST(ModuleArchive, WritesNoTensorDataOfTheSkeleton) {
  torch::jit::Module module = makeModule();
  ModuleSkeleton skeleton = saveModuleSkeleton(module);
  std::string archive;
  llvm::raw_string_ostream os(archive);
  writeModuleArchive(module, skeleton, os);
  os.flush();
  std::string why;
  auto records = readZipRecords(archive, why);
  ASSERT_TRUE(records) << why;
  // w (and alias), running, table (and row), inner.scale: four storages.
  size_t storages = 0;
  for (const ZipRecord &record : *records)
    storages += llvm::StringRef(record.name).contains("/data/");
  EXPECT_EQ(storages, 4u);
  expectSameState(load(archive), load(torchSave(module)));
}

} // namespace
