//===- CompressionTest.cpp - Spike compression of saved tensors -----------===//
//
// Every payload is compared with a naive scalar encoder written here from the
// documented formats, and every round trip must restore the input bitwise.
//
//===----------------------------------------------------------------------===//

#include "memopt/Runtime/Compression.h"
#include "BitwiseEqual.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

using namespace memopt::runtime;

namespace {

// Two threads make at::parallel_for split the larger cases into chunks.
struct TwoThreads : ::testing::Environment {
  void SetUp() override { at::set_num_threads(2); }
};
const auto *const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new TwoThreads);

std::vector<float> logicalValues(const at::Tensor &x) {
  at::Tensor f = x.to(at::kFloat).contiguous();
  return std::vector<float>(f.data_ptr<float>(),
                            f.data_ptr<float>() + f.numel());
}

uint8_t referenceUInt8(float v) {
  if (std::isnan(v) || v <= 0.0f)
    return 0;
  return v >= 255.0f ? 255 : static_cast<uint8_t>(std::trunc(v));
}

/// The payload bytes (or indices) as the format documentation describes.
std::vector<int64_t> referencePayload(const at::Tensor &x,
                                      CompressionKind kind) {
  const std::vector<float> v = logicalValues(x);
  std::vector<int64_t> out;
  if (kind == CompressionKind::Bit)
    out.assign((v.size() + 7) / 8, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    const bool one = v[i] != 0.0f;
    if (kind == CompressionKind::Bit)
      out[i / 8] |= static_cast<int64_t>(one) << (i % 8);
    else if (kind == CompressionKind::Bool)
      out.push_back(one);
    else if (kind == CompressionKind::UInt8)
      out.push_back(referenceUInt8(v[i]));
    else if (one)
      out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

std::vector<int64_t> payloadValues(const at::Tensor &payload) {
  at::Tensor p = payload.to(at::kLong).contiguous();
  return std::vector<int64_t>(p.data_ptr<int64_t>(),
                              p.data_ptr<int64_t>() + p.numel());
}

using memopt::test::bitwiseEqual;

at::Tensor floats(std::vector<float> values, at::ScalarType dtype) {
  return at::tensor(values, at::kFloat).to(dtype);
}

std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const c10::Error &e) {
    return e.msg();
  }
  return "<no error>";
}

const char *const kShapeCases[] = {
    "rows",     "odd",   "large",  "transposed", "strided",
    "expanded", "empty", "scalar", "largeT",     "permuted4d"};

at::Tensor makeInput(int shapeCase, CompressionKind kind,
                     at::ScalarType dtype) {
  at::manual_seed(1234 + shapeCase);
  const int64_t high = kind == CompressionKind::UInt8 ? 256 : 2;
  auto values = [&](at::IntArrayRef shape) {
    return at::randint(0, high, shape, at::kFloat).to(dtype);
  };
  switch (shapeCase) {
  case 0:
    return values({8, 64});
  case 1:
    return values({3, 5, 7});
  case 2:
    return values({1000003});
  case 3:
    return values({64, 33}).t();
  case 4:
    return values({50, 20}).slice(1, 1, 20, 3);
  case 5:
    return values({1, 17}).expand({5, 17});
  case 6:
    return values({0, 4});
  case 7:
    return values({});
  case 8:
    return values({700, 301}).t();
  default:
    return values({2, 3, 4, 5}).permute({3, 1, 0, 2});
  }
}

using RoundTripParam = std::tuple<CompressionKind, at::ScalarType, int>;

class RoundTrip : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(RoundTrip, MatchesReferenceAndRestoresBitwise) {
  const auto [kind, dtype, shapeCase] = GetParam();
  const at::Tensor x = makeInput(shapeCase, kind, dtype);
  const PackedTensor packed = compressTensor(x, kind, /*check=*/true);
  EXPECT_EQ(packed.data.scalar_type(), packedScalarType(kind, x.numel()));
  EXPECT_EQ(packed.data.dim(), 1);
  EXPECT_EQ(payloadValues(packed.data), referencePayload(x, kind));
  EXPECT_EQ(packed.shape, x.sizes().vec());
  EXPECT_EQ(packed.dtype, dtype);

  const at::Tensor unchecked = compressTensor(x, kind, false).data;
  EXPECT_TRUE(at::equal(unchecked, packed.data));

  const at::Tensor y = decompressTensor(packed);
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_TRUE(bitwiseEqual(y, x));
}

INSTANTIATE_TEST_SUITE_P(
    AllKindsDtypesShapes, RoundTrip,
    ::testing::Combine(::testing::Values(CompressionKind::Bit,
                                         CompressionKind::Bool,
                                         CompressionKind::UInt8,
                                         CompressionKind::Sparse),
                       ::testing::Values(at::kFloat, at::kHalf, at::kBFloat16),
                       ::testing::Range(0, 10)),
    [](const ::testing::TestParamInfo<RoundTripParam> &info) {
      return std::string(compressionKindName(std::get<0>(info.param))) + "_" +
             c10::toString(std::get<1>(info.param)) + "_" +
             kShapeCases[std::get<2>(info.param)];
    });

TEST(Compression, BitPayloadIsOneThirtySecondOfFloat32) {
  const at::Tensor x = at::randint(0, 2, {16, 1024}, at::kFloat);
  const PackedTensor packed = compressTensor(x, CompressionKind::Bit, true);
  EXPECT_EQ(packed.data.nbytes() * 32, x.nbytes());
  const at::Tensor h = x.to(at::kHalf);
  EXPECT_EQ(compressTensor(h, CompressionKind::Bit, true).data.nbytes() * 16,
            h.nbytes());
  // Odd sizes round up to whole bytes.
  EXPECT_EQ(compressTensor(x.narrow(1, 0, 9), CompressionKind::Bit, true)
                .data.numel(),
            (16 * 9 + 7) / 8);
}

TEST(Compression, BitOrderIsLittleWithZeroPadding) {
  const at::Tensor x =
      floats({1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1}, at::kFloat);
  const at::Tensor p = compressTensor(x, CompressionKind::Bit, true).data;
  EXPECT_EQ(payloadValues(p), (std::vector<int64_t>{0x01, 0x86, 0x01}));
}

TEST(Compression, CheckReportsFirstInvalidValue) {
  at::Tensor x = at::zeros({8, 64});
  x[0][17] = 0.5;
  x[3][2] = 7;
  EXPECT_EQ(errorOf([&] { compressTensor(x, CompressionKind::Bit, true); }),
            "memopt: compress(bit): value 0.5 at flat index 17 of a float32 "
            "tensor of shape [8, 64] is not 0 or 1");
  EXPECT_EQ(errorOf([&] { compressTensor(x, CompressionKind::Sparse, true); }),
            "memopt: compress(sparse): value 0.5 at flat index 17 of a "
            "float32 tensor of shape [8, 64] is not 0 or 1");
  // The flat index is logical: in x.t(), x[3][2] (flat 2 * 8 + 3) comes
  // before x[0][17] (flat 17 * 8), unlike in memory.
  EXPECT_EQ(
      errorOf([&] { compressTensor(x.t(), CompressionKind::Bool, true); }),
      "memopt: compress(bool): value 7 at flat index 19 of a float32 "
      "tensor of shape [64, 8] is not 0 or 1");
}

TEST(Compression, CheckFindsFirstAcrossParallelChunks) {
  // Two threads split the elements in halves and each half stops at its first
  // invalid value: the smaller index must win whichever half reports last.
  // Repeated because which half reports last depends on scheduling.
  at::Tensor x = at::ones({1000000}, at::kBFloat16);
  x[3] = 2;
  x[450000] = 0.5;
  x[999999] = -1;
  for (int run = 0; run < 50; ++run) {
    ASSERT_EQ(findFirstInvalid(x, CompressionKind::Bit), 3) << run;
    ASSERT_EQ(findFirstInvalid(x, CompressionKind::UInt8), 450000) << run;
  }
  EXPECT_EQ(errorOf([&] { compressTensor(x, CompressionKind::Bit, true); }),
            "memopt: compress(bit): value 2 at flat index 3 of a "
            "bfloat16 tensor of shape [1000000] is not 0 or 1");
  EXPECT_EQ(errorOf([&] { compressTensor(x, CompressionKind::Sparse, true); }),
            "memopt: compress(sparse): value 2 at flat index 3 of a "
            "bfloat16 tensor of shape [1000000] is not 0 or 1");
}

TEST(Compression, CheckUInt8Messages) {
  auto message = [](std::vector<float> v, at::ScalarType dtype) {
    return errorOf([&] {
      compressTensor(floats(v, dtype), CompressionKind::UInt8, true);
    });
  };
  EXPECT_EQ(message({3, 255, 256}, at::kFloat),
            "memopt: compress(uint8): value 256 at flat index 2 of a float32 "
            "tensor of shape [3] is not an integer in [0, 255]");
  EXPECT_EQ(message({0, -1}, at::kHalf),
            "memopt: compress(uint8): value -1 at flat index 1 of a float16 "
            "tensor of shape [2] is not an integer in [0, 255]");
  EXPECT_EQ(message({2.5f}, at::kFloat),
            "memopt: compress(uint8): value 2.5 at flat index 0 of a float32 "
            "tensor of shape [1] is not an integer in [0, 255]");
  EXPECT_EQ(message({1, NAN}, at::kFloat),
            "memopt: compress(uint8): value nan at flat index 1 of a float32 "
            "tensor of shape [2] is not an integer in [0, 255]");
  // Half precision values are printed as the exact value they hold.
  EXPECT_EQ(message({0.1f}, at::kHalf),
            "memopt: compress(uint8): value 0.099975586 at flat index 0 of a "
            "float16 tensor of shape [1] is not an integer in [0, 255]");
}

TEST(Compression, UncheckedBinaryKindsMapNonZeroToOne) {
  const std::vector<float> in = {0.5f, -3, NAN, -0.0f, 0, 1, INFINITY, 1e-30f};
  const std::vector<float> expected = {1, 1, 1, 0, 0, 1, 1, 1};
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16})
    for (auto kind : {CompressionKind::Bit, CompressionKind::Bool,
                      CompressionKind::Sparse}) {
      const at::Tensor y =
          decompressTensor(compressTensor(floats(in, dtype), kind, false));
      // 1e-30 underflows to 0 in float16; every other value keeps its class.
      std::vector<float> want = expected;
      if (dtype == at::kHalf)
        want[7] = 0;
      EXPECT_TRUE(bitwiseEqual(y, floats(want, dtype)))
          << compressionKindName(kind) << " " << dtype;
    }
}

TEST(Compression, UncheckedUInt8ClampsAndTruncates) {
  const std::vector<float> in = {3.7f, -2, 300, NAN, 255, 0.2f, 254.9f, 7};
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
    const at::Tensor x = floats(in, dtype);
    std::vector<float> want;
    for (float v : logicalValues(x))
      want.push_back(referenceUInt8(v));
    const at::Tensor y =
        decompressTensor(compressTensor(x, CompressionKind::UInt8, false));
    EXPECT_TRUE(bitwiseEqual(y, floats(want, dtype))) << dtype;
  }
}

TEST(Compression, NegativeZeroIsValidAndRestoresAsZero) {
  const at::Tensor x = floats({-0.0f, 1, 0}, at::kFloat);
  EXPECT_TRUE(isBinary(x));
  const at::Tensor y =
      decompressTensor(compressTensor(x, CompressionKind::Bit, true));
  EXPECT_TRUE(bitwiseEqual(y, floats({0, 1, 0}, at::kFloat)));
}

TEST(Compression, ZeroDimAndEmpty) {
  for (auto kind : {CompressionKind::Bit, CompressionKind::Bool,
                    CompressionKind::UInt8, CompressionKind::Sparse}) {
    const at::Tensor scalar = at::scalar_tensor(1.0, at::kHalf);
    const at::Tensor y = decompressTensor(compressTensor(scalar, kind, true));
    EXPECT_EQ(y.dim(), 0);
    EXPECT_EQ(y.item<float>(), 1.0f);
    const PackedTensor empty = compressTensor(at::empty({4, 0, 3}), kind, true);
    EXPECT_EQ(empty.data.numel(), 0);
    EXPECT_EQ(decompressTensor(empty).sizes(), at::IntArrayRef({4, 0, 3}));
  }
}

TEST(Compression, IsBinaryAndFindFirstInvalid) {
  EXPECT_TRUE(isBinary(floats({0, 1, 1, 0}, at::kHalf)));
  EXPECT_FALSE(isBinary(floats({0, 1, 2}, at::kFloat)));
  EXPECT_TRUE(isBinary(at::empty({0})));
  EXPECT_EQ(findFirstInvalid(floats({0, 1, 0.25f, 3}, at::kFloat),
                             CompressionKind::Bit),
            2);
  EXPECT_EQ(findFirstInvalid(floats({0, 1, 200, 3}, at::kBFloat16),
                             CompressionKind::UInt8),
            -1);
}

TEST(Compression, PackedScalarTypes) {
  EXPECT_EQ(packedScalarType(CompressionKind::Bit, 10), at::kByte);
  EXPECT_EQ(packedScalarType(CompressionKind::Bool, 10), at::kBool);
  EXPECT_EQ(packedScalarType(CompressionKind::UInt8, 10), at::kByte);
  EXPECT_EQ(packedScalarType(CompressionKind::Sparse, (int64_t(1) << 31) - 1),
            at::kInt);
  EXPECT_EQ(packedScalarType(CompressionKind::Sparse, int64_t(1) << 31),
            at::kLong);
}

TEST(Compression, SparseFrom2Pow31ElementsUsesInt64Indices) {
  // 2^31 logical elements without the memory: every row views the same
  // 2^16-element base row, whose only one sits at its last position.
  at::Tensor row = at::zeros({1 << 16}, at::kHalf);
  row[(1 << 16) - 1] = 1;
  const at::Tensor x = row.as_strided({1 << 15, 1 << 16}, {0, 1});
  const at::Tensor p = compressTensor(x, CompressionKind::Sparse, true).data;
  ASSERT_EQ(p.scalar_type(), at::kLong);
  ASSERT_EQ(p.numel(), 1 << 15);
  const int64_t *idx = p.data_ptr<int64_t>();
  for (int64_t r = 0; r < p.numel(); ++r)
    ASSERT_EQ(idx[r], (r << 16) + (1 << 16) - 1) << r;
}

TEST(Compression, DecompressAcceptsInt64SparseIndices) {
  PackedTensor p{at::tensor(std::vector<int64_t>{4, 0}),
                 CompressionKind::Sparse,
                 {2, 3},
                 at::kBFloat16};
  EXPECT_TRUE(
      bitwiseEqual(decompressTensor(p),
                   floats({1, 0, 0, 0, 1, 0}, at::kBFloat16).view({2, 3})));
}

TEST(Compression, ArgumentErrors) {
  EXPECT_EQ(errorOf([] { parseCompressionKind("bits"); }),
            "memopt: unknown compression kind 'bits' (expected bit, bool, "
            "uint8 or sparse)");
  EXPECT_EQ(errorOf([] {
              compressTensor(at::zeros({2}, at::kLong), CompressionKind::Bit,
                             false);
            }),
            "memopt: compress(bit): expected a float32, float16 or bfloat16 "
            "tensor, got int64");
  EXPECT_EQ(errorOf([] {
              compressTensor(at::empty({2}, at::device(at::kMeta)),
                             CompressionKind::Bit, false);
            }),
            "memopt: compress(bit): tensors on meta are not supported (CPU or "
            "CUDA only)");
  PackedTensor shortBits{
      at::zeros({3}, at::kByte), CompressionKind::Bit, {8, 8}, at::kFloat};
  EXPECT_EQ(errorOf([&] { decompressTensor(shortBits); }),
            "memopt: decompress(bit): payload holds 3 elements, shape [8, 8] "
            "needs 8");
  PackedTensor wrongType{
      at::zeros({4}, at::kByte), CompressionKind::Bool, {4}, at::kFloat};
  EXPECT_EQ(errorOf([&] { decompressTensor(wrongType); }),
            "memopt: decompress(bool): payload dtype is uint8, expected bool");
  PackedTensor outside{at::tensor(std::vector<int32_t>{1, 9, 2}),
                       CompressionKind::Sparse,
                       {3, 3},
                       at::kHalf};
  EXPECT_EQ(errorOf([&] { decompressTensor(outside); }),
            "memopt: decompress(sparse): index 9 at position 1 is outside "
            "[0, 9)");
  PackedTensor badDtype{
      at::zeros({1}, at::kByte), CompressionKind::UInt8, {1}, at::kDouble};
  EXPECT_EQ(errorOf([&] { decompressTensor(badDtype); }),
            "memopt: decompress(uint8): expected a float32, float16 or "
            "bfloat16 tensor, got float64");
}

} // namespace
