// Launch parameters against the device limits, on a machine without a GPU.
//
// The H100 run found every gemm_tc_mma config with 48 KiB of dynamic shared memory and split-K's 4-byte
// static flag refused by cuLaunchKernel (CUDA_ERROR_INVALID_VALUE): past the 48 KiB default the launch
// needs the opt-in attribute. These tests check the rules of templates/launch_check.h themselves, and
// every config of every template's reduced and full space, on large and odd workloads, against the
// sm_80 and sm_90 limits: grid and block dimensions, threads, shared memory (dynamic plus the static
// bytes a template may declare) against the opt-in maximum, and the reference kernel's launch too.
// Registers come from real cubins in template_compile_test.cpp (reduced spaces); here the geometry.
#include "templates/launch_check.h"

#include <gtest/gtest.h>

#include <ostream>

#include "costmodel/gpu_spec.h"
#include "templates/registry.h"
#include "tuner/device_registry.h"

namespace tuner::templates {
namespace {

/// Static shared memory a template's kernel may declare on top of its dynamic shared memory (split-K's
/// arrival flag, wgmma's mbarriers, which the 1024-byte alignment of its ring pads to 1 KiB); template_compile_test.cpp
/// checks every compiled config is within it.
constexpr int kStaticSharedAllowance = 1024;

LaunchGeometry geometry(std::array<unsigned, 3> grid, std::array<unsigned, 3> block, int shared) {
  LaunchGeometry g;
  g.grid = grid;
  g.block = block;
  g.dynamic_shared_bytes = shared;
  return g;
}

TEST(LaunchCheck, NamesTheParameterOutOfRange) {
  const DeviceLimits h100 = limits_of(*costmodel::find_gpu_spec("h100-sxm"));
  EXPECT_FALSE(launch_problem(geometry({2147483647u, 65535, 65535}, {1024, 1, 1}, 0), 32, 0, h100));
  EXPECT_NE(launch_problem(geometry({1, 65536, 1}, {128, 1, 1}, 0), 32, 0, h100).value_or(""), "");
  EXPECT_NE(launch_problem(geometry({1, 1, 65536}, {128, 1, 1}, 0), 32, 0, h100).value_or("").find("grid z"),
            std::string::npos);
  EXPECT_NE(launch_problem(geometry({1, 1, 1}, {1025, 1, 1}, 0), 32, 0, h100).value_or("").find("block x"),
            std::string::npos);
  EXPECT_NE(launch_problem(geometry({1, 1, 1}, {32, 32, 2}, 0), 32, 0, h100).value_or("").find("threads"),
            std::string::npos);
  EXPECT_NE(launch_problem(geometry({1, 1, 1}, {16, 1, 65}, 0), 32, 0, h100).value_or("").find("block z"),
            std::string::npos);
  EXPECT_NE(launch_problem(geometry({0, 1, 1}, {16, 1, 1}, 0), 32, 0, h100).value_or("").find("grid x"),
            std::string::npos);
  // Shared memory: the opt-in maximum (227 KiB on the H100) holds static and dynamic bytes together.
  EXPECT_FALSE(launch_problem(geometry({1, 1, 1}, {128, 1, 1}, 227 * 1024), 32, 0, h100));
  EXPECT_NE(launch_problem(geometry({1, 1, 1}, {128, 1, 1}, 227 * 1024), 32, 4, h100).value_or("").find("shared"),
            std::string::npos);
  // Registers: per thread rounded up to 8, per whole warp; 65536 per block.
  EXPECT_FALSE(launch_problem(geometry({1, 1, 1}, {256, 1, 1}, 0), 255, 0, h100));
  EXPECT_FALSE(launch_problem(geometry({1, 1, 1}, {512, 1, 1}, 0), 128, 0, h100));
  EXPECT_NE(launch_problem(geometry({1, 1, 1}, {512, 1, 1}, 0), 129, 0, h100).value_or("").find("registers"),
            std::string::npos);
  EXPECT_NE(launch_problem(geometry({1, 1, 1}, {32, 1, 1}, 0), 256, 0, h100).value_or("").find("registers"),
            std::string::npos);
}

TEST(LaunchCheck, PastFortyEightKibOfSharedMemoryTheLaunchMustOptIn) {
  // The failing H100 config: BM=BN=BK=64, 3 stages -> 49152 dynamic bytes, plus 4 static bytes.
  const LaunchGeometry g = geometry({12, 1, 4}, {128, 1, 1}, 3 * (64 * 64 + 64 * 64) * 2);
  EXPECT_EQ(g.dynamic_shared_bytes, 49152);
  EXPECT_FALSE(needs_shared_opt_in(g, 0));
  EXPECT_TRUE(needs_shared_opt_in(g, 4));
  EXPECT_TRUE(needs_shared_opt_in(geometry({1, 1, 1}, {128, 1, 1}, 49153), 0));
  EXPECT_FALSE(needs_shared_opt_in(geometry({1, 1, 1}, {128, 1, 1}, 0), 49152));  // static alone needs none
}

struct SpaceCase {
  const char* op;
  const char* shape;
  const char* dtype;
};

void PrintTo(const SpaceCase& c, std::ostream* os) { *os << c.op << " " << c.shape << " " << c.dtype; }

class EverySpaceConfig : public ::testing::TestWithParam<SpaceCase> {};

TEST_P(EverySpaceConfig, LaunchesWithinTheLimitsOfSm80AndSm90) {
  const SpaceCase& sc = GetParam();
  const Workload w = parse_workload(sc.op, sc.shape, sc.dtype);
  int checked = 0;
  for (const char* gpu : {"a100-sxm4-80gb", "h100-sxm"}) {
    const DeviceLimits limits = limits_of(*costmodel::find_gpu_spec(gpu));
    for (const KernelTemplate* t : all_templates()) {
      if (t->op() != w.op) continue;
      const auto dtypes = t->dtypes();
      if (std::find(dtypes.begin(), dtypes.end(), w.dtype) == dtypes.end()) continue;
      if (t->unsupported(w) || t->unsupported_on(limits)) continue;
      // conv2d_gemm_simt launches gemm_f32_simt's configs on the conv's GEMM (its own tests check the
      // launch is gemm_f32's): enumerating gemm_f32's 100,000-config space again here costs 20 s of CI.
      if (t->name() == "conv2d_gemm_simt") continue;
      for (bool reduced : {true, false}) {
        // batched_gemm_f32_simt launches gemm_f32_simt's configs with the batch in grid z (B <= 65535, its
        // unsupported() says): its full space is gemm_f32's, checked by the gemm f32 case of the same shape.
        if (!reduced && t->name() == "batched_gemm_f32_simt") continue;
        const search::ConfigSpace space = reduced ? t->reduced_space(w, limits) : t->space(w, limits);
        for (const auto& c : space.enumerate()) {
          const KernelInstance k = t->instantiate(space, c, w);
          const auto problem = launch_problem(k.launch, 0, kStaticSharedAllowance, limits);
          ASSERT_FALSE(problem) << gpu << " " << t->name() << (reduced ? " reduced " : " full ")
                                << space.to_json_string(c) << ": " << *problem;
          const auto ref_problem = launch_problem(k.reference_launch, 0, 0, limits);
          ASSERT_FALSE(ref_problem) << gpu << " " << t->name() << " reference: " << *ref_problem;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0) << "no template runs " << sc.op << " " << sc.dtype;
  RecordProperty("configs", checked);
}

INSTANTIATE_TEST_SUITE_P(
    Templates, EverySpaceConfig,
    ::testing::Values(SpaceCase{"gemm", "M=8192,N=8192,K=8192", "f32"}, SpaceCase{"gemm", "M=200,N=136,K=300", "f32"},
                      SpaceCase{"gemm", "M=8192,N=8192,K=8192", "f16"}, SpaceCase{"gemm", "M=16,N=4096,K=4096", "bf16"},
                      SpaceCase{"gemm", "M=200,N=136,K=304", "f16"}, SpaceCase{"gemm", "M=1,N=1,K=8", "f16"},
                      SpaceCase{"batched_gemm", "B=1024,M=64,N=64,K=64", "f16"},
                      SpaceCase{"batched_gemm", "B=32,M=512,N=512,K=128", "bf16"},
                      SpaceCase{"batched_gemm", "B=3,M=200,N=136,K=300", "f32"},
                      SpaceCase{"conv2d", "N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3", "f16"},
                      SpaceCase{"conv2d", "N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0", "f32"},
                      SpaceCase{"softmax", "rows=1048576,cols=64", "f16"}, SpaceCase{"softmax", "rows=3,cols=65536", "f32"},
                      SpaceCase{"layernorm", "rows=4096,cols=32768", "bf16"}, SpaceCase{"layernorm", "rows=200000,cols=7", "f32"}),
    [](const ::testing::TestParamInfo<SpaceCase>& info) {
      std::string n = std::string(info.param.op) + "_" + info.param.shape + "_" + info.param.dtype;
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

}  // namespace
}  // namespace tuner::templates
