// Every config of each template's reduced space (every 5th for batched gemm f32, which is gemm_f32's
// generator) compiles with NVRTC for sm_80 and sm_90 (through the on-disk compile cache of $TUNER_CACHE_DIR), and the
// cubin's resources are within the GPU's limits: registers <= 255 and the
// register file, shared memory within the per-block limit, no spills and at
// most a 16-byte stack frame in any reduced config; every launch passes the runner's launch check
// (templates/launch_check.h) with the cubin's registers and static shared memory.
#include <gtest/gtest.h>

#include <ostream>

#include <algorithm>
#include <set>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "templates/gemm_wgmma.h"
#include "templates/gemm_wgmma_source.h"
#include "templates/launch_check.h"
#include "templates/registry.h"
#include "tests/compile_configs.h"
#include "tuner/compile_cache.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

struct CompileCase {
  const char* op;
  const char* shape;  ///< Not a multiple of any tile.
  const char* dtype;
  const char* gpu;    ///< Spec-table key: a100-sxm4-80gb (sm_80) or h100-sxm (sm_90).
  /// Local memory allowed per thread. 16 (a small stack frame, no spills) for the new templates;
  /// batched_gemm f32 reuses gemm_f32's generator and its reduced space, where ptxas spills a few
  /// configs (up to 264 bytes measured; tests/tuner/gemm_compile_test.cpp counts them, as here).
  int max_local_bytes = 16;
  const char* template_name = "";  ///< Empty: the op's default template.
  /// Compile every stride-th config of the reduced space (1: all), a sample that must hold every value of every
  /// knob (an even stride took only STAGES 1 of gemm_f32's pairs). batched_gemm f32 compiles a fifth: it is
  /// gemm_f32's generator with the batch offsets from blockIdx.z, and GemmReducedSpaceCompiles
  /// (tests/tuner/gemm_compile_test.cpp) compiles every gemm_f32 reduced config for both archs (CI time).
  size_t stride = 1;
};

std::string case_name(const ::testing::TestParamInfo<CompileCase>& info) {
  std::string n = std::string(info.param.op) + "_" + info.param.dtype + "_" +
                  (info.param.gpu[0] == 'a' ? "sm_80" : "sm_90");
  if (*info.param.template_name) n += std::string("_") + info.param.template_name;
  return n;
}

/// What ctest and gtest print for a case (instead of its raw bytes).
void PrintTo(const CompileCase& c, std::ostream* os) {
  *os << c.op << " " << c.shape << " " << c.dtype << " on " << c.gpu << (*c.template_name ? " " : "") << c.template_name;
}

class TemplateReducedSpaceCompiles : public ::testing::TestWithParam<CompileCase> {};

TEST_P(TemplateReducedSpaceCompiles, EveryConfigWithinTheDeviceLimits) {
  const CompileCase& cc = GetParam();
  const auto gpu = *costmodel::find_gpu_spec(cc.gpu);
  const auto limits = limits_of(gpu);
  const auto w = templates::parse_workload(cc.op, cc.shape, cc.dtype);
  const auto& tmpl = templates::find_template(w.op, w.dtype, &limits, cc.template_name);
  auto space = tmpl.reduced_space(w, limits);
  ASSERT_GT(space.size(), 0u);

  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  std::vector<search::Config> configs;
  const std::vector<search::Config> all = space.enumerate();
  for (size_t i = 0; i < all.size(); i += cc.stride) configs.push_back(all[i]);
  for (const auto& knob : space.knobs()) {
    std::set<int64_t> sampled, every;
    for (const auto& c : configs) sampled.insert(space.value(c, knob.name));
    for (const auto& c : all) every.insert(space.value(c, knob.name));
    EXPECT_EQ(sampled, every) << "the sample misses values of " << knob.name;
  }
  const CompiledConfigs compiled = compile_configs(tmpl, space, configs, w, limits, builder);
  const auto& instances = compiled.instances;
  auto ref = builder.compile({instances[0].reference_source, instances[0].reference_kernel_name, limits.arch, {}});
  EXPECT_TRUE(ref.ok()) << ref.log;
  EXPECT_FALSE(templates::launch_problem(instances[0].reference_launch, ref.resources.registers,
                                         ref.resources.static_shared_bytes, limits));

  for (size_t i = 0; i < instances.size(); ++i) {
    const CompileResult& r = compiled.results[i];
    const std::string cfg = tmpl.name() + " " + space.to_json_string(configs[i]);
    ASSERT_TRUE(r.ok()) << cfg << "\n" << r.log.substr(0, 4000);
    EXPECT_GT(r.resources.registers, 0) << cfg;
    EXPECT_LE(r.resources.registers, 255) << cfg;
    const int threads = static_cast<int>(instances[i].launch.block[0] * instances[i].launch.block[1]);
    EXPECT_LE(r.resources.registers * threads, gpu.registers_per_sm) << cfg;
    EXPECT_LE(r.resources.static_shared_bytes + instances[i].launch.dynamic_shared_bytes, gpu.shared_per_block_bytes)
        << cfg;
    // The launch as the runner checks it, with the cubin's registers and static shared memory; the
    // full spaces are checked without compiling in launch_check_test.cpp, with 1 KiB of static shared memory allowed.
    const auto problem =
        templates::launch_problem(instances[i].launch, r.resources.registers, r.resources.static_shared_bytes, limits);
    EXPECT_FALSE(problem) << cfg << ": " << problem.value_or("");
    EXPECT_LE(r.resources.static_shared_bytes, 1024) << cfg;
    // No spills (ptxas -v, on a fresh compile), and at most a 16-byte stack frame: ptxas gives a
    // few configs (e.g. a cached Welford layernorm row at 512 threads) an 8-byte frame without spills.
    if (r.ptxas_spill_bytes >= 0 && cc.max_local_bytes <= 16) {
      EXPECT_EQ(r.ptxas_spill_bytes, 0) << cfg << "\n" << r.log;
    }
    EXPECT_LE(r.resources.local_bytes, cc.max_local_bytes) << cfg << ": local memory\n" << r.log;
    if (tmpl.name().find("wgmma") != std::string::npos) {
      // setmaxnreg.inc blocks until the CTA's pool (the launch's registers) can pay for it: the
      // producer's 40 plus every consumer's raise must fit, or the kernel would hang.
      const int consumers = static_cast<int>(instances[i].launch.block[0]) / 128 - 1;
      templates::WgmmaTiling t;
      t.consumers = consumers;
      EXPECT_GE(r.resources.registers * threads, 128 * 40 + consumers * 128 * templates::wgmma_consumer_registers(t))
          << cfg << ": " << r.resources.registers << " registers at launch";
    }
  }
  RecordProperty("configs", static_cast<int>(instances.size()));
}

// A deterministic sample of gemm_tc_wgmma's full space on a decode shape (where every SPLIT_K value is
// offered): 24 configs, every 1/8th of the enumeration plus the first config of each SPLIT_K value,
// the first persistent one, staged epilogues (with split-K 8, with two consumers), a 12-stage ring and
// BN 32 (64-byte swizzle) twice, pingpong, and clusters along K. Each compiles for sm_90a with no spills, leaves the
// setmaxnreg pool enough registers, and passes the launch check.
TEST(WgmmaFullSpaceSample, CompilesWithoutSpillsWithinTheLimits) {
  const auto gpu = *costmodel::find_gpu_spec("h100-sxm");
  const auto limits = limits_of(gpu);
  const auto w = templates::parse_workload("gemm", "M=16,N=4096,K=4096", "f16");
  const auto& tmpl = templates::find_template(w.op, w.dtype, &limits, "gemm_tc_wgmma");
  auto space = tmpl.space(w, limits);
  const std::vector<search::Config> all = space.enumerate();
  ASSERT_GT(all.size(), 100u);
  std::vector<search::Config> sample;
  for (size_t i = 0; i < all.size() && sample.size() < 8; i += all.size() / 8) sample.push_back(all[i]);
  auto take_first = [&](const char* knob, int64_t value, const char* knob2 = nullptr, int64_t value2 = 0) {
    for (const auto& c : all) {
      const search::ConfigView v(space, c);
      if (v[knob] == value && (!knob2 || v[knob2] == value2) && std::find(sample.begin(), sample.end(), c) == sample.end()) {
        sample.push_back(c);
        return;
      }
    }
  };
  for (int64_t split : {1, 2, 4, 8}) take_first("SPLIT_K", split);
  take_first("PERSISTENT", limits.sm_count);
  // The staged epilogue with the split-K reduction and with two consumers, and the deepest ring.
  take_first("EPILOGUE", 1, "SPLIT_K", 8);
  take_first("EPILOGUE", 1, "CONSUMERS", 2);
  take_first("STAGES", 12);
  take_first("BN", 32, "EPILOGUE", 1);  // one 64-byte-swizzled B box
  take_first("BN", 32, "SPLIT_K", 4);
  // Clusters that multicast A: with 32-column tiles, with split-K, persistent.
  take_first("CLUSTER", 2, "BN", 32);
  take_first("CLUSTER", 2, "SPLIT_K", 4);
  take_first("CLUSTER", 2, "PERSISTENT", limits.sm_count);
  // Pingpong consumers; clusters along K with both epilogues and with 32-column tiles.
  take_first("PINGPONG", 1);
  take_first("CLUSTER_K", 2, "EPILOGUE", 1);
  take_first("CLUSTER_K", 2, "BN", 32);
  ASSERT_EQ(sample.size(), 24u);
  const CompiledConfigs compiled = compile_configs_cached(tmpl, space, sample, w, limits);
  for (size_t i = 0; i < sample.size(); ++i) {
    expect_launchable(compiled, i, limits, space.to_json_string(sample[i]), true);
    const CompileResult& r = compiled.results[i];
    const std::string cfg = space.to_json_string(sample[i]);
    const int threads = static_cast<int>(compiled.instances[i].launch.block[0]);
    const templates::WgmmaTiling t = templates::GemmWgmmaTemplate::tiling(space, sample[i], w.dtype);
    EXPECT_GE(r.resources.registers * threads, 128 * 40 + t.consumers * 128 * templates::wgmma_consumer_registers(t))
        << cfg;
    // The space's shared-memory constraint counts the kernel's static shared memory at most as it is.
    EXPECT_LE(static_cast<size_t>(r.resources.static_shared_bytes), templates::wgmma_static_shared_bytes(t)) << cfg;
  }
  RecordProperty("configs", static_cast<int>(sample.size()));
}

// A deterministic sample of the row templates' full spaces at the f16 shapes (4096 x 4096 and
// 4096 x 32768) for sm_90: every 64th config of the enumeration plus the first of each CACHE mode. Each
// compiles with no spills or stack frame and passes the launch check; CACHE 2 (packed words) takes fewer
// registers than CACHE 1 where both hold the same row. One arch only (CI time): the row spaces depend on
// the limits only through max_threads_per_block, 1024 on both GPUs, so an sm_80 sample would be the same
// configs; sm_80's ptxas compiles every row template's reduced space in TemplateReducedSpaceCompiles.
TEST(RowFullSpaceSample, CompilesWithoutSpillsWithinTheLimits) {
  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  CompilePool pool(builder, 0);
  int compiled = 0;
  const char* gpu_key = "h100-sxm";
  const auto limits = limits_of(*costmodel::find_gpu_spec(gpu_key));
  for (const char* op : {"softmax", "layernorm"})
    for (const char* shape : {"rows=4096,cols=4096", "rows=4096,cols=32768"}) {
      const auto w = templates::parse_workload(op, shape, "f16");
      const auto& tmpl = templates::find_template(w.op, w.dtype, &limits);
      const auto space = tmpl.space(w, limits);
      const std::vector<search::Config> all = space.enumerate();
      // Every 64th config of the space as it was before layernorm's MIN_BLOCKS (its configs at 1, in
      // the same order), and every 8th of those at MIN_BLOCKS 2.
      const auto& knobs = space.knobs();
      const bool has_min_blocks =
          std::any_of(knobs.begin(), knobs.end(), [](const search::Knob& k) { return k.name == "MIN_BLOCKS"; });
      std::vector<search::Config> base, capped_configs, sample;
      for (const auto& c : all) (has_min_blocks && space.value(c, "MIN_BLOCKS") == 2 ? capped_configs : base).push_back(c);
      for (size_t i = 0; i < base.size(); i += 64) sample.push_back(base[i]);
      for (size_t i = 0; i < capped_configs.size(); i += 8) sample.push_back(capped_configs[i]);
      for (int64_t mode : {0, 1, 2})
        for (const auto& c : all)
          if (search::ConfigView(space, c)["CACHE"] == mode) {
            if (std::find(sample.begin(), sample.end(), c) == sample.end()) sample.push_back(c);
            break;
          }
      std::vector<templates::KernelInstance> instances;
      std::vector<std::future<CompileResult>> results;
      for (const auto& c : sample) {
        instances.push_back(tmpl.instantiate(space, c, w));
        results.push_back(pool.submit({instances.back().source, instances.back().kernel_name, limits.arch, {}}));
      }
      for (size_t i = 0; i < sample.size(); ++i) {
        auto r = results[i].get();
        const std::string cfg = std::string(gpu_key) + " " + op + " " + shape + " " + space.to_json_string(sample[i]);
        ASSERT_TRUE(r.ok()) << cfg << "\n" << r.log.substr(0, 4000);
        // Layernorm's MIN_BLOCKS 2 caps registers on purpose: a few spilled bytes (24 at 4096 x 32768) are
        // its price.
        const bool capped = has_min_blocks && space.value(sample[i], "MIN_BLOCKS") == 2;
        const int allowed = capped ? 32 : 0;  // local bytes; ptxas counts spill stores and loads (2x)
        if (r.ptxas_spill_bytes >= 0) {
          EXPECT_LE(r.ptxas_spill_bytes, 2 * allowed) << cfg << "\n" << r.log;
        }
        EXPECT_LE(r.resources.local_bytes, allowed) << cfg;
        EXPECT_FALSE(templates::launch_problem(instances[i].launch, r.resources.registers,
                                               r.resources.static_shared_bytes, limits))
            << cfg;
        ++compiled;
      }
    }
  // The register saving, on one config both modes allow: 128 threads per 4096-column f16 row.
  const auto w = templates::parse_workload("softmax", "rows=4096,cols=4096", "f16");
  const auto& tmpl = templates::find_template(w.op, w.dtype, &limits);
  const auto space = tmpl.space(w, limits);
  auto regs = [&](int64_t cache_mode) {
    const auto k = tmpl.instantiate(space, {128, 1, 8, 1, cache_mode}, w);
    return builder.compile({k.source, k.kernel_name, limits.arch, {}}).resources.registers;
  };
  EXPECT_LT(regs(2), regs(1));
  RecordProperty("configs", compiled);
}

// conv2d_patch_tc's MIN_BLOCKS reaches the compiler: the stem's best config on an H100 (2026-11-26, 256 threads,
// 124 registers: two blocks per SM) fits three blocks' registers at MIN_BLOCKS 3 (at most 85 a thread).
TEST(ConvPatchMinBlocks, CapsTheRegistersForMoreBlocksPerSm) {
  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  const auto limits = limits_of(*costmodel::find_gpu_spec("h100-sxm"));
  const auto w = templates::parse_workload("conv2d", "N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3", "f16");
  const auto& tmpl = templates::find_template(w.op, w.dtype, &limits, "conv2d_patch_tc");
  const auto space = tmpl.space(w, limits);
  auto regs = [&](int64_t min_blocks) {
    const search::Config c{16, 8, 64, 32, 32, 264, 1, min_blocks};
    EXPECT_TRUE(space.is_valid(c)) << space.violation(c).value_or("");
    const auto k = tmpl.instantiate(space, c, w);
    const auto r = builder.compile({k.source, k.kernel_name, limits.arch, {}});
    EXPECT_TRUE(r.ok()) << r.log.substr(0, 2000);
    // The cap's price at 3 blocks: 32 bytes of local memory (measured with CUDA 13's ptxas); none without it.
    EXPECT_LE(r.resources.local_bytes, min_blocks == 1 ? 0 : 64) << "MIN_BLOCKS " << min_blocks;
    return r.resources.registers;
  };
  const int free = regs(1), capped = regs(3);
  EXPECT_GT(free, 85);
  EXPECT_LE(capped, 65536 / (3 * 256));
}

INSTANTIATE_TEST_SUITE_P(
    Templates, TemplateReducedSpaceCompiles,
    ::testing::Values(CompileCase{"softmax", "rows=37,cols=3000", "f32", "a100-sxm4-80gb"},
                      CompileCase{"softmax", "rows=37,cols=3000", "f32", "h100-sxm"},
                      CompileCase{"softmax", "rows=37,cols=3000", "f16", "a100-sxm4-80gb"},
                      CompileCase{"softmax", "rows=37,cols=3000", "f16", "h100-sxm"},
                      CompileCase{"softmax", "rows=37,cols=3000", "bf16", "h100-sxm"},
                      CompileCase{"layernorm", "rows=37,cols=3000", "f32", "a100-sxm4-80gb"},
                      CompileCase{"layernorm", "rows=37,cols=3000", "f32", "h100-sxm"},
                      CompileCase{"layernorm", "rows=37,cols=3000", "f16", "a100-sxm4-80gb"},
                      CompileCase{"layernorm", "rows=37,cols=3000", "f16", "h100-sxm"},
                      CompileCase{"layernorm", "rows=37,cols=3000", "bf16", "a100-sxm4-80gb"},
                      CompileCase{"gemm", "M=200,N=136,K=300", "f16", "a100-sxm4-80gb"},
                      CompileCase{"gemm", "M=200,N=136,K=300", "f16", "h100-sxm"},
                      CompileCase{"gemm", "M=200,N=136,K=300", "bf16", "a100-sxm4-80gb"},
                      CompileCase{"gemm", "M=200,N=136,K=300", "bf16", "h100-sxm"},
                      CompileCase{"gemm", "M=200,N=136,K=304", "f16", "h100-sxm", 16, "gemm_tc_wgmma"},
                      CompileCase{"gemm", "M=200,N=136,K=304", "bf16", "h100-sxm", 16, "gemm_tc_wgmma"},
                      CompileCase{"batched_gemm", "B=3,M=200,N=136,K=304", "f16", "h100-sxm", 16,
                                  "batched_gemm_tc_wgmma"},
                      CompileCase{"batched_gemm", "B=3,M=200,N=136,K=300", "f32", "a100-sxm4-80gb", 512, "", 5},
                      CompileCase{"batched_gemm", "B=3,M=200,N=136,K=300", "f32", "h100-sxm", 512, "", 5},
                      CompileCase{"batched_gemm", "B=3,M=200,N=136,K=300", "f16", "h100-sxm"},
                      CompileCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f32",
                                  "a100-sxm4-80gb"},
                      CompileCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f32",
                                  "h100-sxm"},
                      CompileCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f16",
                                  "h100-sxm"},
                      CompileCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "bf16",
                                  "a100-sxm4-80gb"},
                      CompileCase{"conv2d", "N=2,H=30,W=27,C=24,K=72,R=3,S=3,stride=2,pad=1,dilation=2", "f16",
                                  "h100-sxm", 16, "conv2d_igemm_wgmma"},
                      // gemm_f32's reduced space: its 8x8-per-thread tiles of 64 threads spill at 255 registers
                      // (40 bytes as a GEMM, up to 216 with the filter read along K), as batched_gemm's do.
                      CompileCase{"conv2d", "N=3,H=9,W=10,C=17,K=33,R=1,S=1,stride=1,pad=0", "f32", "h100-sxm", 512,
                                  "conv2d_gemm_simt"},
                      CompileCase{"conv2d", "N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3", "f16", "h100-sxm", 16,
                                  "conv2d_patch_tc"},
                      CompileCase{"conv2d", "N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3", "bf16", "a100-sxm4-80gb",
                                  16, "conv2d_patch_tc"}),
    case_name);

}  // namespace
}  // namespace tuner
