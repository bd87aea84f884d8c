//===- PackedInputTest.cpp - conv / linear with a packed saved input ------===//
//
// The C++ API of PackedInput.h against LibTorch's own autograd: gradients
// must be bitwise equal, the binary check must name the op, and a layer whose
// weight is frozen must not pack (nor check) its input.
//
//===----------------------------------------------------------------------===//

#include "memopt/Runtime/PackedInput.h"
#include "BitwiseEqual.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <functional>
#include <string>
#include <vector>

using namespace memopt::runtime;

namespace {

at::Tensor spikes(at::IntArrayRef shape, uint64_t seed) {
  at::manual_seed(seed);
  return (at::rand(shape) < 0.4).to(at::kFloat);
}

using memopt::test::bitwiseEqual;

/// [output, d input, d weight, d bias] of `fn` for a fixed output gradient.
using Layer = std::function<at::Tensor(const at::Tensor &, const at::Tensor &,
                                       const at::Tensor &)>;
std::vector<at::Tensor> step(const Layer &fn, const at::Tensor &x,
                             const at::Tensor &w, const at::Tensor &b) {
  at::Tensor xi = x.detach().requires_grad_(true);
  at::Tensor wi = w.detach().clone().requires_grad_(true);
  at::Tensor bi = b.detach().clone().requires_grad_(true);
  at::Tensor y = fn(xi, wi, bi);
  at::manual_seed(7);
  at::Tensor g = at::randn(y.sizes());
  auto grads = torch::autograd::grad({y}, {xi, wi, bi}, {g});
  return {y.detach(), grads[0], grads[1], grads[2]};
}

void expectSame(const std::vector<at::Tensor> &eager,
                const std::vector<at::Tensor> &packed) {
  const char *names[] = {"output", "input grad", "weight grad", "bias grad"};
  for (size_t i = 0; i < eager.size(); ++i)
    EXPECT_TRUE(bitwiseEqual(eager[i], packed[i])) << names[i];
}

TEST(PackedInput, ConvChannelsLastMatchesLibTorchAutograd) {
  at::Tensor x =
      spikes({3, 4, 9, 11}, 1).contiguous(at::MemoryFormat::ChannelsLast);
  at::manual_seed(2);
  at::Tensor w = at::randn({6, 2, 3, 3});
  at::Tensor b = at::randn({6});
  for (CompressionKind kind : {CompressionKind::Bit, CompressionKind::Bool}) {
    expectSame(
        step(
            [](auto &x, auto &w, auto &b) {
              return at::conv2d(x, w, b, at::IntArrayRef{2, 1},
                                at::IntArrayRef{1, 1}, at::IntArrayRef{1, 1},
                                2);
            },
            x, w, b),
        step(
            [kind](auto &x, auto &w, auto &b) {
              return convPacked(x, w, b, {2, 1}, {1, 1}, {1, 1}, 2, kind);
            },
            x, w, b));
  }
}

TEST(PackedInput, LinearMatchesLibTorchAutograd) {
  at::manual_seed(3);
  at::Tensor w = at::randn({5, 16});
  at::Tensor b = at::randn({5});
  for (const at::Tensor &x :
       {spikes({4, 16}, 4), spikes({2, 3, 16}, 5),
        spikes({2, 16, 3}, 6).transpose(1, 2), spikes({16}, 7)}) {
    expectSame(
        step([](auto &x, auto &w, auto &b) { return at::linear(x, w, b); }, x,
             w, b),
        step(
            [](auto &x, auto &w, auto &b) {
              return linearPacked(x, w, b, CompressionKind::Bit);
            },
            x, w, b));
  }
}

TEST(PackedInput, NonBinaryInputIsRefusedWhileTheCheckIsOn) {
  ASSERT_TRUE(packedInputCheckEnabled());
  at::Tensor x = spikes({2, 3, 5, 5}, 8);
  x[0][1][2][3].fill_(0.25);
  at::Tensor w = at::ones({4, 3, 3, 3}).requires_grad_(true);
  try {
    convPacked(x, w, c10::nullopt, {1, 1}, {0, 0}, {1, 1}, 1,
               CompressionKind::Bit);
    FAIL() << "expected an error";
  } catch (const c10::Error &e) {
    EXPECT_EQ(std::string(e.what_without_backtrace())
                  .rfind("memopt: conv_packed input is not binary (values "
                         "other than 0 and 1); found 0.25 at [0, 1, 2, 3] of "
                         "a float32 tensor of shape [2, 3, 5, 5]",
                         0),
              0u)
        << e.what_without_backtrace();
  }
  setPackedInputCheck(false);
  EXPECT_NO_THROW(convPacked(x, w, c10::nullopt, {1, 1}, {0, 0}, {1, 1}, 1,
                             CompressionKind::Bit));
  setPackedInputCheck(true);
}

TEST(PackedInput, FrozenWeightSavesNothingToCheck) {
  // The input is needed only for the weight gradient: with a frozen weight
  // it is neither packed nor checked, and the input gradient is still exact.
  at::Tensor x = at::rand({2, 3, 5, 5}).requires_grad_(true);
  at::manual_seed(9);
  at::Tensor w = at::randn({4, 3, 3, 3});
  at::Tensor y = convPacked(x, w, c10::nullopt, {1, 1}, {1, 1}, {1, 1}, 1,
                            CompressionKind::Bool);
  at::Tensor g = at::ones_like(y);
  at::Tensor packedGrad = torch::autograd::grad({y}, {x}, {g})[0];
  at::Tensor eagerGrad = torch::autograd::grad(
      {at::conv2d(x, w, c10::nullopt, at::IntArrayRef{1, 1},
                  at::IntArrayRef{1, 1})},
      {x}, {g})[0];
  EXPECT_TRUE(bitwiseEqual(packedGrad, eagerGrad));
}

} // namespace
