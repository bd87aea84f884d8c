//===- DialectTest.cpp - building memopt IR programmatically --------------===//
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::memopt;

namespace {

class DialectTest : public ::testing::Test {
protected:
  DialectTest() : builder(&context) {
    context.loadDialect<MemoptDialect, func::FuncDialect>();
  }

  /// func @f(%x: tensor<8x16xf32>) with the builder inside its body.
  func::FuncOp makeFunction(ModuleOp module, RankedTensorType xType) {
    builder.setInsertionPointToEnd(module.getBody());
    auto function = builder.create<func::FuncOp>(
        builder.getUnknownLoc(), "f",
        builder.getFunctionType({xType}, {xType}));
    builder.setInsertionPointToEnd(function.addEntryBlock());
    return function;
  }

  /// memopt.op "aten::relu"(%x)
  TorchOp makeRelu(Value x) {
    return builder.create<TorchOp>(
        builder.getUnknownLoc(), TypeRange{x.getType()}, "aten::relu",
        ValueRange{x},
        builder.getArrayAttr({OperandRefAttr::get(&context, 0)}));
  }

  std::string print(Operation *op) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    op->print(stream);
    return text;
  }

  MLIRContext context;
  OpBuilder builder;
};

TEST_F(DialectTest, BuildCheckpointRegionAndRoundTrip) {
  auto type = RankedTensorType::get({8, 16}, builder.getF32Type());
  OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
  func::FuncOp function = makeFunction(*module, type);
  Value x = function.getArgument(0);

  auto region = builder.create<CheckpointOp>(
      builder.getUnknownLoc(), TypeRange{type}, builder.getStringAttr("block1"),
      ValueRange{x},
      builder.getArrayAttr(
          {CompressPolicyAttr::get(&context, CompressionKind::bit)}));
  Block *body = builder.createBlock(&region.getBody(), {}, {type},
                                    {builder.getUnknownLoc()});
  TorchOp relu = makeRelu(body->getArgument(0));
  builder.create<YieldOp>(builder.getUnknownLoc(), relu.getResults());
  builder.setInsertionPointAfter(region);
  builder.create<func::ReturnOp>(builder.getUnknownLoc(), region.getResults());

  ASSERT_TRUE(succeeded(verify(*module)));
  std::string text = print(*module);
  EXPECT_NE(text.find("policies [#memopt.compress<bit>]"), std::string::npos)
      << text;

  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(reparsed);
  EXPECT_EQ(print(*reparsed), text);
}

TEST_F(DialectTest, VerifierRejectsPolicyCountMismatch) {
  auto type = RankedTensorType::get({4}, builder.getF32Type());
  OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
  func::FuncOp function = makeFunction(*module, type);
  auto region = builder.create<CheckpointOp>(
      builder.getUnknownLoc(), TypeRange{type}, builder.getStringAttr("r"),
      ValueRange{function.getArgument(0)}, builder.getArrayAttr({}));
  Block *body = builder.createBlock(&region.getBody(), {}, {type},
                                    {builder.getUnknownLoc()});
  builder.create<YieldOp>(builder.getUnknownLoc(), body->getArguments());

  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str();
    return success();
  });
  EXPECT_TRUE(failed(verify(region)));
  EXPECT_EQ(diagnostics, "'memopt.checkpoint' op has 1 inputs but 0 save "
                         "policies");
}

TEST_F(DialectTest, PackedTypeKnowsItsPayloadSize) {
  auto packed = PackedTensorType::get(&context, {8, 64, 3},
                                      builder.getF32Type(),
                                      CompressionKind::bit);
  EXPECT_EQ(packed.getPackedBytes(), 8 * 64 * 3 / 8);
  EXPECT_EQ(packed.getLogicalType(),
            RankedTensorType::get({8, 64, 3}, builder.getF32Type()));
  auto odd = PackedTensorType::get(&context, {9}, builder.getF16Type(),
                                   CompressionKind::bit);
  EXPECT_EQ(odd.getPackedBytes(), 2);
}

TEST_F(DialectTest, TorchOpEffectsFollowSchemaFlags) {
  auto type = RankedTensorType::get({4}, builder.getF32Type());
  OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
  func::FuncOp function = makeFunction(*module, type);
  TorchOp relu = makeRelu(function.getArgument(0));
  EXPECT_TRUE(relu.isFunctional());
  relu.setNondeterministic(true);
  EXPECT_FALSE(relu.isFunctional());
  SmallVector<SideEffects::EffectInstance<MemoryEffects::Effect>> effects;
  relu.getEffects(effects);
  bool writes = llvm::any_of(effects, [](auto &effect) {
    return isa<MemoryEffects::Write>(effect.getEffect());
  });
  EXPECT_TRUE(writes);
}

TEST_F(DialectTest, InlineCheckpointsPassRemovesRegions) {
  const char *source = R"mlir(
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = memopt.checkpoint "a" (%x) policies [#memopt.keep]
          : (tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%a: tensor<4xf32>):
        %y = memopt.op "aten::relu"(%a) [#memopt.arg<0>] : (tensor<4xf32>) -> tensor<4xf32>
        memopt.yield %y : tensor<4xf32>
      }
      return %r : tensor<4xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(createInlineCheckpoints());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  int regions = 0, ops = 0;
  module->walk([&](CheckpointOp) { ++regions; });
  module->walk([&](TorchOp) { ++ops; });
  EXPECT_EQ(regions, 0);
  EXPECT_EQ(ops, 1);
}

} // namespace
