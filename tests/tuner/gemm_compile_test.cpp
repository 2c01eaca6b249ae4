// Every config of the GEMM template's reduced space compiles with NVRTC for
// sm_80 and sm_90, and its resources are read from the cubin; a sample of its
// full space compiles within the launch limits, and the configs a user would
// pick for a large SGEMM (warp tiles, double-buffered fragments, cp.async) do
// so without spills.
#include <gtest/gtest.h>

#include <algorithm>

#include "costmodel/gpu_spec.h"
#include "templates/gemm_f32.h"
#include "tests/compile_configs.h"
#include "tuner/device_limits.h"

namespace tuner {
namespace {

class GemmReducedSpaceCompiles : public ::testing::TestWithParam<const char*> {};

TEST_P(GemmReducedSpaceCompiles, EveryConfigWithinTheDeviceLimits) {
  const auto gpu = *costmodel::find_gpu_spec(GetParam());
  templates::DeviceLimits limits;
  limits.arch = gpu.arch();
  limits.max_shared_per_block_bytes = gpu.shared_per_block_bytes;
  templates::GemmF32Template tmpl;
  auto w = templates::parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
  auto space = tmpl.reduced_space(w, limits);
  ASSERT_GT(space.size(), 0u);

  NvrtcBuilder builder(nullptr);  // no cache: really compile
  const CompiledConfigs compiled = compile_configs(tmpl, space, space.enumerate(), w, limits, builder);
  const auto& instances = compiled.instances;
  auto ref = builder.compile({instances[0].reference_source, instances[0].reference_kernel_name, limits.arch, {}});
  EXPECT_TRUE(ref.ok()) << ref.log;

  int spilling = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    const CompileResult& r = compiled.results[i];
    const std::string cfg = space.to_json_string(space.at(i));
    ASSERT_TRUE(r.ok()) << cfg << "\n" << r.log;
    EXPECT_GT(r.cubin.size(), 1000u) << cfg;
    EXPECT_GT(r.resources.registers, 0) << cfg;
    EXPECT_LE(r.resources.registers, gpu.max_registers_per_thread) << cfg;
    // All shared memory is dynamic in this template.
    EXPECT_EQ(r.resources.static_shared_bytes, 0) << cfg;
    EXPECT_LE(instances[i].launch.dynamic_shared_bytes, gpu.shared_per_block_bytes) << cfg;
    // Registers x threads must fit the register file, or the launch would fail.
    EXPECT_LE(r.resources.registers * static_cast<int>(instances[i].launch.block[0]), gpu.registers_per_sm) << cfg;
    if (r.resources.local_bytes > 0) ++spilling;
    if (r.ptxas_spill_bytes > 0) {
      EXPECT_GT(r.resources.local_bytes, 0) << cfg << ": ptxas spills, cubin shows none";
    }
  }
  RecordProperty("configs", static_cast<int>(instances.size()));
  RecordProperty("spilling", spilling);
}

// The large-SGEMM picks: 128x128 (8x8 per thread, 256 threads) in every combination of the new knobs,
// BK 16, 128x64 and 64x128 (8x4 and 4x8, 256 threads), 128x256 (512 threads, at most 128 registers).
const char* const kPicks[] = {
    R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":0,"FRAG_DB":0,"CP_ASYNC":0})",
    R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":0})",
    R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":4,"FRAG_DB":1,"CP_ASYNC":0})",
    R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":1,"CP_ASYNC":1})",
    R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":16,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":1})",
    R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":16,"VEC":4,"STAGES":2,"PAD":0,"GROUP_M":8,"WARP_N":8,"FRAG_DB":1,"CP_ASYNC":1})",
    R"({"BM":128,"BN":64,"TM":8,"TN":4,"BK":16,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":1,"CP_ASYNC":1})",
    R"({"BM":64,"BN":128,"TM":4,"TN":8,"BK":16,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":4,"FRAG_DB":1,"CP_ASYNC":0})",
    R"({"BM":128,"BN":256,"TM":8,"TN":8,"BK":16,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":1})",
};

class GemmFullSpaceSample : public ::testing::TestWithParam<const char*> {};

// Every 1/12th of the full space's enumeration at 4096^3, the first config of each value of the warp
// tiling, fragment and cp.async knobs, and the picks: each compiles, fits the register file and the
// launch check; the picks neither spill nor use local memory. The figures are printed for the record.
TEST_P(GemmFullSpaceSample, CompilesWithinTheLimitsAndThePicksDoNotSpill) {
  const auto gpu = *costmodel::find_gpu_spec(GetParam());
  const auto limits = limits_of(gpu);
  templates::GemmF32Template tmpl;
  const auto w = templates::parse_workload("gemm", "M=4096,N=4096,K=4096", "f32");
  const auto space = tmpl.space(w, limits);
  const std::vector<search::Config> all = space.enumerate();
  std::vector<search::Config> sample;
  for (const char* pick : kPicks) {
    sample.push_back(space.from_json(nlohmann::json::parse(pick)));
    ASSERT_TRUE(space.is_valid(sample.back())) << pick << ": " << space.violation(sample.back()).value_or("");
  }
  const size_t picks = sample.size();
  for (size_t i = 0; i < all.size(); i += all.size() / 12) sample.push_back(all[i]);
  for (const char* knob : {"WARP_N", "FRAG_DB", "CP_ASYNC"})
    for (int64_t value : space.knobs()[space.knob_index(knob)].values) {
      auto it = std::find_if(all.begin(), all.end(),
                             [&](const search::Config& c) { return search::ConfigView(space, c)[knob] == value; });
      ASSERT_NE(it, all.end()) << knob << "=" << value << " is in no config";
      sample.push_back(*it);
    }
  const CompiledConfigs compiled = compile_configs_cached(tmpl, space, sample, w, limits);
  for (size_t i = 0; i < sample.size(); ++i) {
    const std::string cfg = space.to_json_string(sample[i]);
    expect_launchable(compiled, i, limits, cfg, i < picks, 0);  // the picks: no spills, no local memory
    const CompileResult& r = compiled.results[i];
    const int threads = static_cast<int>(compiled.instances[i].launch.block[0]);
    EXPECT_LE(r.resources.registers * threads, gpu.registers_per_sm) << cfg;
    EXPECT_EQ(r.resources.static_shared_bytes, 0) << cfg;
    std::printf("%s %s: %d registers, %d local bytes, %d shared bytes, %d threads\n", limits.arch.c_str(),
                cfg.c_str(), r.resources.registers, r.resources.local_bytes, compiled.instances[i].launch.dynamic_shared_bytes,
                threads);
  }
  RecordProperty("configs", static_cast<int>(sample.size()));
}

INSTANTIATE_TEST_SUITE_P(Archs, GemmFullSpaceSample, ::testing::Values("a100-sxm4-80gb", "h100-sxm"),
                         [](const auto& info) { return std::string(info.param[0] == 'a' ? "sm_80" : "sm_90"); });

INSTANTIATE_TEST_SUITE_P(Archs, GemmReducedSpaceCompiles, ::testing::Values("a100-sxm4-80gb", "h100-sxm"),
                         [](const auto& info) { return std::string(info.param[0] == 'a' ? "sm_80" : "sm_90"); });

}  // namespace
}  // namespace tuner
