// Every config of the GEMM template's reduced space compiles with NVRTC for
// sm_80 and sm_90, and its resources are read from the cubin.
#include <gtest/gtest.h>

#include <future>

#include "costmodel/gpu_spec.h"
#include "templates/gemm_f32.h"
#include "tuner/compile_pool.h"
#include "tuner/nvrtc_builder.h"

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
  CompilePool pool(builder, 0);
  std::vector<std::future<CompileResult>> results;
  std::vector<templates::KernelInstance> instances;
  for (const auto& c : space.enumerate()) {
    instances.push_back(tmpl.instantiate(space, c, w));
    results.push_back(pool.submit({instances.back().source, instances.back().kernel_name, limits.arch, {}}));
  }
  auto ref = builder.compile({instances[0].reference_source, instances[0].reference_kernel_name, limits.arch, {}});
  EXPECT_TRUE(ref.ok()) << ref.log;

  int spilling = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    auto r = results[i].get();
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
  RecordProperty("configs", static_cast<int>(results.size()));
  RecordProperty("spilling", spilling);
}

INSTANTIATE_TEST_SUITE_P(Archs, GemmReducedSpaceCompiles, ::testing::Values("a100-sxm4-80gb", "h100-sxm"),
                         [](const auto& info) { return std::string(info.param[0] == 'a' ? "sm_80" : "sm_90"); });

}  // namespace
}  // namespace tuner
