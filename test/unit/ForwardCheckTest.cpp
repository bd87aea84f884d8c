//===- ForwardCheckTest.cpp - the exporter's forward check ----------------===//
//
// checkCompiledForward on small scripted modules standing in for a source
// model and what was compiled from it: a faithful one, one that computes
// otherwise, one that fails on its first call, and models whose own forward
// cannot be compared.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/ForwardCheck.h"
#include "memopt/Conversion/RuntimeLibrary.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>

using namespace mlir::memopt;

namespace {
/// A module with a parameter `w` and a buffer `running` (the given tensors,
/// so that two modules can share them as the exporter's output shares the
/// source's) and `code` as its methods.
torch::jit::Module makeModule(const std::string &name, const at::Tensor &w,
                              const at::Tensor &running,
                              const std::string &code) {
  torch::jit::Module module(name);
  module.register_parameter("w", w, /*is_buffer=*/false);
  module.register_buffer("running", running);
  module.define(code);
  return module;
}

/// Batch norm's pattern: the forward updates a buffer in place.
const char *kSourceCode = R"(
def forward(self, x):
    self.running.add_(x.mean())
    return torch.dropout(x * self.w, 0.5, True) + self.running
)";

std::vector<ForwardCheckCall> oneCall(std::vector<int64_t> sizes = {3, 4}) {
  return {ForwardCheckCall{"inputs 3x4:f32",
                           "forward",
                           {ForwardCheckInput{std::move(sizes), at::kFloat}}}};
}

struct ForwardCheckTest : ::testing::Test {
  at::Tensor w = at::rand({4}).requires_grad_();
  at::Tensor running = at::zeros({4});
  torch::jit::Module source = makeModule("Source", w, running, kSourceCode);
};

TEST_F(ForwardCheckTest, FaithfulCompileMatchesAndStateIsPutBack) {
  // The same code over the same tensors, as one graph would compute it.
  torch::jit::Module compiled = makeModule("Compiled", w, running, R"(
def forward(self, x):
    y = x * self.w
    self.running.add_(x.mean())
    return torch.dropout(y, 0.5, True) + self.running
)");
  ForwardCheckOutcome outcome =
      checkCompiledForward(compiled, source, oneCall());
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.compared, 1u);
  EXPECT_TRUE(outcome.notCompared.empty());
  // Both forwards ran from the same running statistics, and left none.
  EXPECT_TRUE(at::equal(running, at::zeros({4})));
}

TEST_F(ForwardCheckTest, BatchNormStatisticsArePutBack) {
  // batch_norm writes its running statistics without a new tensor version.
  at::Tensor mean = at::zeros({4}), var = at::ones({4});
  const char *code = R"(
def forward(self, x):
    return torch.batch_norm(x, None, None, self.running, self.var, True, 0.1,
                            1e-5, False)
)";
  torch::jit::Module norm("Norm");
  norm.register_buffer("running", mean);
  norm.register_buffer("var", var);
  norm.define(code);
  ForwardCheckOutcome outcome = checkCompiledForward(norm, norm, oneCall());
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.compared, 1u);
  EXPECT_TRUE(at::equal(mean, at::zeros({4})));
  EXPECT_TRUE(at::equal(var, at::ones({4})));
}

TEST_F(ForwardCheckTest, OneUlpOffIsAnError) {
  torch::jit::Module compiled = makeModule("Compiled", w, running, R"(
def forward(self, x):
    self.running.add_(x.mean())
    y = torch.dropout(x * self.w, 0.5, True) + self.running
    return torch.nextafter(y, y + 1.0)
)");
  ForwardCheckOutcome outcome =
      checkCompiledForward(compiled, source, oneCall());
  EXPECT_NE(outcome.error.find("differs from the source model's"),
            std::string::npos)
      << outcome.error;
  EXPECT_NE(outcome.error.find("inputs 3x4:f32"), std::string::npos);
  EXPECT_NE(outcome.error.find("output: 12 of 12 elements differ"),
            std::string::npos)
      << outcome.error;
  EXPECT_TRUE(at::equal(running, at::zeros({4})));
}

TEST_F(ForwardCheckTest, DifferenceIsNamedInsideStructuredOutputs) {
  torch::jit::Module dictSource = makeModule("DictSource", w, running, R"(
def forward(self, x):
    return (x, {"out": x * self.w, "aux": x + 1.0})
)");
  torch::jit::Module compiled = makeModule("Compiled", w, running, R"(
def forward(self, x):
    return (x, {"out": x * self.w, "aux": x + 2.0})
)");
  ForwardCheckOutcome outcome =
      checkCompiledForward(compiled, dictSource, oneCall());
  EXPECT_NE(outcome.error.find("output[1]['aux']: 12 of 12 elements differ"),
            std::string::npos)
      << outcome.error;
}

/// A module whose forward calls the runtime's memopt::checkpoint on a
/// region graph the runtime cannot parse (as the exporter once wrote `-inf`
/// into one): built as the exporter builds graphs, since a script cannot
/// name the operator from C++.
torch::jit::Module brokenRegionModule() {
  torch::jit::Module module("BrokenRegion");
  auto graph = std::make_shared<torch::jit::Graph>();
  graph->addInput("self")->setType(module.type());
  torch::jit::Value *x = graph->addInput("x");
  x->setType(c10::TensorType::get());
  auto list = [&](const c10::TypePtr &type,
                  std::vector<torch::jit::Value *> values) {
    return graph->insertNode(graph->createList(type, values))->output();
  };
  std::vector<torch::jit::Value *> inputs = {
      graph->insertConstant(
          std::string("graph(%x : Tensor):\n  return (%undefined)\n")),
      list(c10::TensorType::get(), {x}),
      list(c10::IntType::get(), {}),
      list(c10::FloatType::get(), {}),
      list(c10::StringType::get(),
           {graph->insertConstant(std::string("keep"))}),
      graph->insertConstant(std::string("layer1..layer3"))};
  torch::jit::Node *call = graph->insertNode(
      graph->create(c10::Symbol::fromQualString("memopt::checkpoint"), inputs));
  call->output()->setType(c10::ListType::ofTensors());
  graph->registerOutput(call->output());
  auto *function = module._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*module.type()->name(), "forward"), graph);
  module.type()->addMethod(function);
  return module;
}

TEST_F(ForwardCheckTest, FailureOnFirstCallNamesTheRuntimesMessage) {
  // The runtime's own message names the region; the interpreter's
  // traceback in front of it is dropped.
  setenv("MEMOPT_RUNTIME_LIB", MEMOPT_TEST_RUNTIME_LIB, /*overwrite=*/0);
  llvm::Expected<std::string> runtime = loadRuntimeLibrary();
  ASSERT_TRUE(bool(runtime)) << llvm::toString(runtime.takeError());
  ForwardCheckOutcome outcome =
      checkCompiledForward(brokenRegionModule(), source, oneCall());
  EXPECT_EQ(outcome.error.rfind(
                "the compiled model fails on its first call (inputs "
                "3x4:f32): memopt::checkpoint(region 'layer1..layer3'): "
                "cannot parse the region graph (TorchScript IR): ",
                0),
            0u)
      << outcome.error;
  EXPECT_EQ(outcome.error.find('\n'), std::string::npos);
  EXPECT_TRUE(at::equal(running, at::zeros({4})));
}

TEST_F(ForwardCheckTest, SourceThatCannotRunOnShapeOnlyInputsIsNotCompared) {
  // Zero integers as inputs: this model needs a positive count.
  torch::jit::Module counting = makeModule("Counting", w, running, R"(
def forward(self, n):
    return torch.ones(3)[int(n.sum()) + 3]
)");
  std::vector<ForwardCheckCall> calls = {
      {"inputs 2:i64", "forward", {ForwardCheckInput{{2}, at::kLong}}}};
  ForwardCheckOutcome outcome = checkCompiledForward(counting, counting, calls);
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.compared, 0u);
  ASSERT_EQ(outcome.notCompared.size(), 1u);
  EXPECT_NE(outcome.notCompared[0].find("fails on these inputs too (source: "),
            std::string::npos)
      << outcome.notCompared[0];
  EXPECT_NE(outcome.notCompared[0].find("; compiled: "), std::string::npos)
      << outcome.notCompared[0];
}

TEST_F(ForwardCheckTest, ForwardThatWritesParametersIsNotCompared) {
  // A parameter that needs no gradient, clipped in place by forward.
  torch::jit::Module clipping =
      makeModule("Clipping", at::rand({4}), running, R"(
def forward(self, x):
    self.w.clamp_(0.0, 0.5)
    return x * self.w
)");
  ForwardCheckOutcome outcome =
      checkCompiledForward(clipping, clipping, oneCall());
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.compared, 0u);
  ASSERT_EQ(outcome.notCompared.size(), 1u);
  EXPECT_NE(outcome.notCompared[0].find("writes parameters"),
            std::string::npos);
}

TEST_F(ForwardCheckTest, InputsWrittenInPlaceAreFreshForEachRun) {
  torch::jit::Module inPlace = makeModule("InPlace", w, running, R"(
def forward(self, x):
    x.mul_(2.0)
    return x * self.w
)");
  ForwardCheckOutcome outcome =
      checkCompiledForward(inPlace, inPlace, oneCall());
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.compared, 1u);
}
} // namespace
