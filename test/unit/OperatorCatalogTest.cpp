//===- OperatorCatalogTest.cpp - consistency of the operator catalog ------===//
#include "memopt/Analysis/OperatorCatalog.h"

#include "llvm/ADT/StringSet.h"
#include "gtest/gtest.h"

using namespace mlir::memopt;

namespace {

TEST(OperatorCatalog, NamesAreQualifiedAndUnique) {
  llvm::StringSet<> seen;
  for (const OperatorInfo &info : getOperatorCatalog()) {
    EXPECT_TRUE(info.name.starts_with("aten::") ||
                info.name.starts_with("prim::"))
        << info.name.str();
    EXPECT_TRUE(seen.insert(info.name).second) << "listed twice: "
                                               << info.name.str();
    EXPECT_TRUE(isCataloged(info.name));
    EXPECT_EQ(&lookupOperator(info.name), &info);
  }
}

TEST(OperatorCatalog, OperatorsWithoutARowGetTheDefaults) {
  const OperatorInfo &aten = lookupOperator("aten::not_an_operator");
  EXPECT_FALSE(isCataloged("aten::not_an_operator"));
  EXPECT_EQ(aten.cost, CostClass::Elementwise);
  EXPECT_EQ(aten.flops, FlopRule::PerOutput);
  EXPECT_EQ(aten.flopsPerElement, 1);
  EXPECT_EQ(aten.binary, BinaryRule::None);
  EXPECT_EQ(aten.layout, LayoutRule::Inherit);
  EXPECT_EQ(aten.workspace, WorkspaceRule::None);
  EXPECT_EQ(aten.simulator, SimulatorRule::Default);
  const OperatorInfo &prim = lookupOperator("prim::NotAnOperator");
  EXPECT_EQ(prim.cost, CostClass::View);
  EXPECT_EQ(prim.flops, FlopRule::None);
}

// The columns are independent facts, but some combinations are
// contradictions: a row that has one is a typing mistake.
TEST(OperatorCatalog, ColumnsAgree) {
  for (const OperatorInfo &info : getOperatorCatalog()) {
    std::string name = info.name.str();
    switch (info.flops) {
    case FlopRule::Convolution:
    case FlopRule::TransposedConvolution:
      EXPECT_EQ(info.cost, CostClass::Conv) << name;
      break;
    case FlopRule::Matmul:
    case FlopRule::MatmulAnyRank:
    case FlopRule::AddMatmul:
    case FlopRule::Attention:
      EXPECT_TRUE(info.cost == CostClass::Matmul ||
                  info.cost == CostClass::BatchedMatmul)
          << name;
      break;
    case FlopRule::PerInput:
      EXPECT_TRUE(info.cost == CostClass::BatchNorm ||
                  info.cost == CostClass::Normalization ||
                  info.cost == CostClass::Softmax ||
                  info.cost == CostClass::Reduction ||
                  info.cost == CostClass::Pooling ||
                  info.cost == CostClass::MaxPooling)
          << name;
      break;
    case FlopRule::PerOutput:
      EXPECT_EQ(info.cost, CostClass::Elementwise) << name;
      break;
    case FlopRule::Recurrent:
      // Gate products every step; measured by the probe, batch-first
      // output a transpose.
      EXPECT_EQ(info.cost, CostClass::Matmul) << name;
      EXPECT_EQ(info.workspace, WorkspaceRule::Recurrent) << name;
      EXPECT_EQ(info.layout, LayoutRule::BatchFirstAt8) << name;
      break;
    case FlopRule::None:
      EXPECT_TRUE(info.cost == CostClass::View ||
                  info.cost == CostClass::Copy)
          << name;
      break;
    }
    EXPECT_GT(info.flopsPerElement, 0) << name;
    if (info.workspace == WorkspaceRule::Convolution ||
        info.workspace == WorkspaceRule::GeneralConvolution) {
      EXPECT_EQ(info.cost, CostClass::Conv) << name;
    }
    if (info.isPermutation() || info.layout == LayoutRule::Dense) {
      EXPECT_EQ(info.binary, BinaryRule::Subset) << name;
    }
    if (info.simulator == SimulatorRule::Dropout ||
        info.simulator == SimulatorRule::IdentityDropout) {
      EXPECT_NE(info.name.find("dropout"), llvm::StringRef::npos) << name;
    }
    if (info.workspace == WorkspaceRule::Measured) {
      // Run alone by the kernel probe: a computation, not a view.
      EXPECT_NE(info.cost, CostClass::View) << name;
      EXPECT_NE(info.flops, FlopRule::None) << name;
    }
    if (info.savedRow == SavedRowKey::DropoutAt4) {
      EXPECT_EQ(info.flops, FlopRule::Attention) << name;
    }
  }
}

TEST(OperatorCatalog, OneOperatorIsClassifiedOnce) {
  // aten::transpose used to be classified in three files; its row now
  // carries all three facts.
  const OperatorInfo &transpose = lookupOperator("aten::transpose");
  EXPECT_EQ(transpose.cost, CostClass::View);
  EXPECT_EQ(transpose.binary, BinaryRule::Subset);
  EXPECT_EQ(transpose.layout, LayoutRule::Transpose);
  EXPECT_TRUE(transpose.isPermutation());
}

} // namespace
