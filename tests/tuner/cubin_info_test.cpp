// Tests for tuner/cubin_info.h: real cubins from NVRTC, plus malformed input.
#include "tuner/cubin_info.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

const char* kTwoKernels = R"(
extern "C" __global__ void __launch_bounds__(128) with_shared(float* out) {
  __shared__ float s[100];
  s[threadIdx.x % 100] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x * 3) % 100];
}
extern "C" __global__ void plain(float* out) { out[threadIdx.x] = 1.0f; }
)";

std::string compile_cubin(const std::string& arch) {
  const CompileResult r = NvrtcBuilder().compile({kTwoKernels, "with_shared", arch, {}});
  EXPECT_EQ(r.status, "ok") << r.log;
  return r.cubin;
}

TEST(CubinInfo, ReadsEachKernelOfAMultiKernelCubin) {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const std::string cubin = compile_cubin(arch);
    EXPECT_TRUE(looks_like_cubin(cubin));
    std::string error;
    auto a = read_cubin_resources(cubin, "with_shared", &error);
    ASSERT_TRUE(a) << error;
    EXPECT_EQ(a->static_shared_bytes, 400);  // 100 floats
    EXPECT_EQ(a->max_threads_per_block, 128);
    EXPECT_GT(a->registers, 0);
    EXPECT_EQ(a->local_bytes, 0);
    EXPECT_EQ(a->reserved_shared_bytes, arch == "sm_90" ? 1024 : 0);
    auto b = read_cubin_resources(cubin, "plain", &error);
    ASSERT_TRUE(b) << error;
    EXPECT_EQ(b->static_shared_bytes, 0);
    EXPECT_EQ(b->max_threads_per_block, 0);
    EXPECT_GT(b->registers, 0);
  }
}

TEST(CubinInfo, UnknownKernelIsAnErrorNamingIt) {
  const std::string cubin = compile_cubin("sm_90");
  std::string error;
  EXPECT_FALSE(read_cubin_resources(cubin, "missing_kernel", &error));
  EXPECT_NE(error.find("missing_kernel"), std::string::npos) << error;
  // A prefix of a real name is not that kernel.
  EXPECT_FALSE(read_cubin_resources(cubin, "with", &error));
  EXPECT_FALSE(read_cubin_resources(cubin, "", nullptr));
}

TEST(CubinInfo, GarbageIsRejected) {
  std::string error;
  EXPECT_FALSE(read_cubin_resources("", "k", &error));
  EXPECT_FALSE(error.empty());
  EXPECT_FALSE(read_cubin_resources("this is not an ELF file at all, just text", "k", &error));
  EXPECT_FALSE(looks_like_cubin("\x7f" "ELF"));
  std::string zeros(4096, '\0');
  EXPECT_FALSE(read_cubin_resources(zeros, "k", &error));
}

TEST(CubinInfo, TruncatedCubinNeverCrashes) {
  const std::string cubin = compile_cubin("sm_90");
  for (std::size_t n = 0; n < cubin.size(); n += (n < 256 ? 1 : 61)) {
    std::string error;
    // A copy, so reading past the prefix would be caught by sanitizers/valgrind.
    const std::string prefix = cubin.substr(0, n);
    auto r = read_cubin_resources(prefix, "with_shared", &error);
    if (!r) {
      EXPECT_FALSE(error.empty()) << "prefix " << n;
    }
  }
  std::string error;
  EXPECT_FALSE(read_cubin_resources(cubin.substr(0, cubin.size() / 2), "with_shared", &error));
}

TEST(CubinInfo, CorruptedBytesNeverCrash) {
  const std::string cubin = compile_cubin("sm_80");
  std::mt19937 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = cubin;
    std::uniform_int_distribution<std::size_t> pos(0, bad.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    const int flips = 1 + trial % 8;
    for (int f = 0; f < flips; ++f) {
      // Bias half of the flips into the ELF header and section table, where they hurt most.
      std::size_t at = pos(rng);
      if (f % 2 == 0 && trial % 2 == 0) at = pos(rng) % 64;
      bad[at] = static_cast<char>(byte(rng));
    }
    std::string error;
    (void)read_cubin_resources(bad, "with_shared", &error);
    (void)looks_like_cubin(bad);
  }
  SUCCEED();
}

}  // namespace
}  // namespace tuner
