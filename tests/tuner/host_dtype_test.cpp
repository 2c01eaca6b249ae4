// Host-side f16/bf16 conversion, NaN poisoning and output comparison (tuner/host_dtype.h).
#include "tuner/host_dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace tuner {
namespace {

using templates::DType;

TEST(HostDtype, HalfConversionIsExactOnRepresentableValuesAndRoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);      // largest finite half
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);      // the tie above it rounds to even: inf
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -26)), 0x0000);  // below half of it: zero
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0); 1 + 3*2^-11 rounds up.
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()))));
  // Every finite half survives the round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(f32_to_f16_bits(f16_bits_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(HostDtype, Bf16ConversionRoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(bf16_bits_to_f32(0xC040), -3.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1.0); 1 + 3*2^-8 rounds up to 1 + 2^-6.
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HostDtype, PoisonWordsDecodeToNaNInEveryDtype) {
  EXPECT_EQ(nan_poison_word(DType::kF32), 0x7FC00000u);
  EXPECT_EQ(nan_poison_word(DType::kF16), 0x7E007E00u);
  EXPECT_EQ(nan_poison_word(DType::kBF16), 0x7FC07FC0u);
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    const size_t bytes = padded_buffer_bytes(3, d);  // 3 elements: 12 bytes f32, 6 -> 8 for 2-byte types
    EXPECT_EQ(bytes, d == DType::kF32 ? 12u : 8u);
    std::vector<uint32_t> words(bytes / 4, nan_poison_word(d));
    for (double v : decode_elements(words.data(), 3, d)) EXPECT_TRUE(std::isnan(v)) << to_string(d);
  }
}

TEST(HostDtype, EncodeDecodeRoundTripsAndRandomInputsAreNeverZero) {
  std::mt19937_64 rng(7);
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    auto v = random_inputs(4096, d, rng);
    const std::string bytes = encode_elements(v, d);
    EXPECT_EQ(bytes.size(), v.size() * static_cast<size_t>(dtype_bytes(d)));
    auto back = decode_elements(bytes.data(), v.size(), d);
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_NE(v[i], 0.0f);
      ASSERT_LE(std::fabs(v[i]), 1.0f);
      ASSERT_EQ(back[i], static_cast<double>(v[i])) << to_string(d);  // values are representable in d
    }
  }
}

TEST(HostDtype, ComparisonIsRelativeToTheLargestReferenceAndNaNNeverPasses) {
  // max |out - ref| = 0.02, max |ref| = 4: relative error 0.005.
  Comparison c = compare_outputs({1.0, -3.98, 0.5}, {1.0, -4.0, 0.5});
  EXPECT_FALSE(c.non_finite);
  EXPECT_NEAR(c.max_error, 0.005, 1e-12);
  EXPECT_TRUE(c.passes(1e-2));
  EXPECT_FALSE(c.passes(1e-3));
  Comparison nan = compare_outputs({1.0, std::nan("")}, {1.0, 2.0});
  EXPECT_TRUE(nan.non_finite);
  EXPECT_FALSE(nan.passes(1e30));
  EXPECT_FALSE(compare_outputs({1.0}, {1.0, 2.0}).passes(1.0)) << "a short output never passes";
}

}  // namespace
}  // namespace tuner
