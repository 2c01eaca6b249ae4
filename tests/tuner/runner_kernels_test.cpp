// The measurement worker's own kernels (tuner/runner_kernels.h): their host twins, and their
// source compiling with NVRTC for sm_80 and sm_90 in every dtype. On a GPU, gpu_tests compare
// the kernels with the twins.
#include "tuner/runner_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tuner/compile_cache.h"
#include "tuner/cubin_info.h"
#include "tuner/host_dtype.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

TEST(UniformInput, DeterministicInRangeNeverZeroInAnyDtype) {
  std::set<float> distinct;
  for (uint64_t i = 0; i < 20000; ++i) {
    const float v = uniform_input(7, 1, i);
    EXPECT_EQ(v, uniform_input(7, 1, i));
    ASSERT_GT(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_NE(f16_bits_to_f32(f32_to_f16_bits(v)), 0.0f) << i;
    ASSERT_NE(bf16_bits_to_f32(f32_to_bf16_bits(v)), 0.0f) << i;
    distinct.insert(v);
  }
  EXPECT_GT(distinct.size(), 19000u);
  // Seeds and buffers give other streams.
  int same_seed = 0, same_buffer = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    same_seed += uniform_input(7, 1, i) == uniform_input(8, 1, i);
    same_buffer += uniform_input(7, 1, i) == uniform_input(7, 2, i);
  }
  EXPECT_LT(same_seed, 5);
  EXPECT_LT(same_buffer, 5);
  // Roughly uniform: mean near 0, a quarter of the values in each quarter of the range.
  double mean = 0;
  int low = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float v = uniform_input(3, 0, i);
    mean += v;
    low += v < -0.5f;
  }
  EXPECT_NEAR(mean / 100000, 0.0, 0.01);
  EXPECT_NEAR(low / 100000.0, 0.25, 0.01);
}

TEST(WordChecksum, AnyOneChangedWordChangesIt) {
  std::vector<uint32_t> words(1000);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u);
  const uint64_t base = word_checksum(words.data(), words.size());
  for (size_t i : {size_t{0}, size_t{1}, size_t{499}, size_t{999}})
    for (uint32_t delta : {1u, 0x80000000u, 0xffffffffu}) {
      auto w = words;
      w[i] += delta;
      EXPECT_NE(word_checksum(w.data(), w.size()), base) << i << " " << delta;
    }
  auto swapped = words;
  std::swap(swapped[3], swapped[4]);  // positions count, not just values
  EXPECT_NE(word_checksum(swapped.data(), swapped.size()), base);
}

TEST(GuardBytes, AnEighthWithinBoundsInWholeUnits) {
  EXPECT_EQ(guard_bytes(4), 64u << 10);
  EXPECT_EQ(guard_bytes(size_t{8} << 20), 1u << 20);
  EXPECT_EQ(guard_bytes(size_t{1} << 30), 16u << 20);
  for (size_t p : {size_t{1000}, size_t{12345678}, size_t{999999999}}) EXPECT_EQ(guard_bytes(p) % 256, 0u);
}

TEST(ComparisonFrom, MatchesTheHostComparison) {
  const std::vector<double> ref = {0.5, -2.0, 1.0}, out = {0.5, -2.001, 1.0};
  const Comparison host = compare_outputs(out, ref);
  const Comparison twin = comparison_from(0.001, 2.0, false);
  EXPECT_NEAR(host.max_error, twin.max_error, 1e-12);
  EXPECT_FALSE(comparison_from(0.001, 2.0, true).passes(1.0));
  EXPECT_TRUE(comparison_from(0.001, 2.0, false).passes(1e-3));
}

TEST(RunnerKernels, CompileForSm80AndSm90InEveryDtype) {
  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  for (const char* arch : {"sm_80", "sm_90"})
    for (auto d : {templates::DType::kF32, templates::DType::kF16, templates::DType::kBF16}) {
      const auto r = builder.compile({runner_kernels_source(d), kFillKernelName, arch, {}});
      ASSERT_TRUE(r.ok()) << arch << " " << templates::to_string(d) << "\n" << r.log;
      for (const char* k : {kFillKernelName, kCompareKernelName, kChecksumKernelName}) {
        std::string error;
        const auto res = read_cubin_resources(r.cubin, k, &error);
        ASSERT_TRUE(res.has_value()) << k << ": " << error;
        EXPECT_LE(res->registers * static_cast<int>(kRunnerKernelThreads), 65536) << k;
        EXPECT_EQ(res->local_bytes, 0) << k << " spills";
      }
    }
}

}  // namespace
}  // namespace tuner
