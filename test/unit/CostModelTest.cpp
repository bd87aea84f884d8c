//===- CostModelTest.cpp - forward and backward seconds of products -------===//
//
// A linear layer's forward multiplies by its weight transposed; its backward
// takes both products (grad @ weight, grad^T @ input) with the operands as
// stored, priced by the Gemm class. A plain matrix product's backward stays
// twice its forward.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/CostModelFile.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::memopt;

namespace {

constexpr const char *kFunction = R"mlir(
func.func @f(%x: tensor<128x64xf32>, %w: tensor<256x64xf32>,
             %wt: tensor<64x256xf32>) -> (tensor<128x256xf32>, tensor<128x256xf32>) {
  %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<128x64xf32>, tensor<256x64xf32>) -> tensor<128x256xf32>
  %z = memopt.op "aten::mm"(%x, %wt) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  return %y, %z : tensor<128x256xf32>, tensor<128x256xf32>
}
)mlir";

class CostModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<MemoptDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kFunction, &context);
    ASSERT_TRUE(module);
    auto func = *module->getOps<func::FuncOp>().begin();
    auto ops = func.getBody().front().getOps<TorchOp>();
    linear = *ops.begin();
    product = *std::next(ops.begin());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  TorchOp linear, product;
  const CostModel cost;
};

TEST_F(CostModelTest, LinearAndProductCostTheSameForward) {
  OpCost l = cost.getCost(linear), p = cost.getCost(product);
  EXPECT_EQ(l.cls, CostClass::Matmul);
  EXPECT_EQ(p.cls, CostClass::Matmul);
  EXPECT_DOUBLE_EQ(l.flops, 2.0 * 128 * 256 * 64);
  EXPECT_DOUBLE_EQ(l.flops, p.flops);
}

TEST_F(CostModelTest, LinearBackwardIsTwoGemms) {
  OpCost l = cost.getCost(linear);
  const CostCoefficients &matmul = cost.getCoefficients(CostClass::Matmul);
  const CostCoefficients &gemm = cost.getCoefficients(CostClass::Gemm);
  EXPECT_DOUBLE_EQ(
      cost.getBackwardSeconds(linear),
      matmul.overheadSeconds +
          2 * (l.flops * gemm.secondsPerFlop + l.bytes * gemm.secondsPerByte));
  EXPECT_GT(cost.getBackwardSeconds(linear), 0.0);
}

TEST_F(CostModelTest, ProductBackwardIsTwiceItsForward) {
  OpCost p = cost.getCost(product);
  const CostCoefficients &matmul = cost.getCoefficients(CostClass::Matmul);
  EXPECT_DOUBLE_EQ(cost.getBackwardSeconds(product),
                   matmul.overheadSeconds +
                       2 * (p.seconds - matmul.overheadSeconds));
}

TEST_F(CostModelTest, GemmIsAClassOfItsOwn) {
  EXPECT_EQ(stringifyCostClass(CostClass::Gemm), "Gemm");
  EXPECT_GT(cost.getCoefficients(CostClass::Gemm).secondsPerFlop, 0.0);
}

// A module's memopt.cost_model (memopt-compile --cost-model) prices its ops:
// the classes it names take its coefficients, the rest keep the built-in fit.
TEST_F(CostModelTest, ModuleFitOverridesTheBuiltinClassesItNames) {
  std::string error;
  FailureOr<DictionaryAttr> fitted = parseCostModelText(
      "// fitted elsewhere\nMEMOPT_COST_CLASS(Matmul, 1.0e-9, 0, 2.5e-6)\n",
      "fit.def", &context, error);
  ASSERT_TRUE(succeeded(fitted)) << error;
  (*module)->setAttr(kCostModelAttrName, *fitted);
  auto func = *module->getOps<func::FuncOp>().begin();
  const CostModel priced(func);
  const CostCoefficients &matmul = priced.getCoefficients(CostClass::Matmul);
  EXPECT_DOUBLE_EQ(matmul.secondsPerFlop, 1.0e-9);
  EXPECT_DOUBLE_EQ(matmul.secondsPerByte, 0.0);
  EXPECT_DOUBLE_EQ(matmul.overheadSeconds, 2.5e-6);
  EXPECT_DOUBLE_EQ(priced.getCost(product).seconds,
                   2.5e-6 + 1.0e-9 * 2.0 * 128 * 256 * 64);
  const CostCoefficients &gemm = priced.getCoefficients(CostClass::Gemm);
  const CostCoefficients &builtin =
      CostModel::getBuiltinCoefficients(CostClass::Gemm);
  EXPECT_EQ(gemm.secondsPerFlop, builtin.secondsPerFlop);
  EXPECT_EQ(gemm.overheadSeconds, builtin.overheadSeconds);
  // Without the stamp: the built-in fit.
  EXPECT_EQ(
      cost.getCoefficients(CostClass::Matmul).secondsPerFlop,
      CostModel::getBuiltinCoefficients(CostClass::Matmul).secondsPerFlop);
}

} // namespace
