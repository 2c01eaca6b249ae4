// GPU tests (label "gpu"): every config of the GEMM reduced space is correct
// on shapes that are not tile multiples, and timings repeat. They skip with a
// reason on a machine without a CUDA driver or GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "templates/gemm_f32.h"
#include "templates/registry.h"
#include "tests/compile_configs.h"
#include "tuner/cuda_runner.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/tuning_session.h"
#include "tuner/worker.h"

namespace tuner {
namespace {

class GpuGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_devices(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    device_ = resolve_device("cuda:0");
  }

  /// The measurement request of one config compiled with NVRTC for the GPU.
  MeasureRequest request(const templates::KernelInstance& k, const CompileResult& kernel, const CompileResult& ref) const {
    return measure_request(device_.spec, k, kernel.cubin,
                           {kernel.resources.registers, kernel.resources.static_shared_bytes, kernel.resources.local_bytes},
                           ref.cubin);
  }

  /// gemm f32 256^3, the first reduced-space config: its instance, reference and kernel compiled.
  struct SmallGemm {
    templates::KernelInstance k;
    CompileResult ref, good;
  };
  SmallGemm small_gemm() const {
    templates::GemmF32Template tmpl;
    auto w = templates::parse_workload("gemm", "M=256,N=256,K=256", "f32");
    auto space = tmpl.reduced_space(w, device_.limits);
    SmallGemm g{tmpl.instantiate(space, space.at(0), w), {}, {}};
    NvrtcBuilder builder(nullptr);
    g.ref = builder.compile({g.k.reference_source, g.k.reference_kernel_name, device_.limits.arch, {}});
    g.good = builder.compile({g.k.source, g.k.kernel_name, device_.limits.arch, {}});
    return g;
  }

  /// Runs each config (from `configs_of`, given the shape's space) checked against the reference on
  /// shapes that are not tile multiples, with N % 4 != 0 (the element paths) and degenerate M or N.
  template <class ConfigsOf>
  void expect_correct_on_irregular_shapes(bool reduced, ConfigsOf configs_of) const {
    templates::GemmF32Template tmpl;
    NvrtcBuilder builder(nullptr);
    WorkerClient worker(TUNER_BIN);
    for (const char* shape : {"M=257,N=131,K=67", "M=1000,N=1000,K=1000", "M=1,N=300,K=5", "M=129,N=1,K=1024"}) {
      auto w = templates::parse_workload("gemm", shape, "f32");
      auto space = reduced ? tmpl.reduced_space(w, device_.limits) : tmpl.space(w, device_.limits);
      const std::vector<search::Config> configs = configs_of(space);
      const CompiledConfigs compiled = compile_configs(tmpl, space, configs, w, device_.limits, builder);
      const auto& ks = compiled.instances;
      auto ref = builder.compile({ks[0].reference_source, ks[0].reference_kernel_name, device_.limits.arch, {}});
      ASSERT_TRUE(ref.ok()) << ref.log;
      for (size_t i = 0; i < ks.size(); ++i) {
        const CompileResult& cr = compiled.results[i];
        ASSERT_TRUE(cr.ok()) << cr.log;
        auto req = request(ks[i], cr, ref);
        req.settings.min_time_ms = 1;
        req.settings.min_repeats = 2;
        auto res = worker.measure(req, 30);
        EXPECT_EQ(res.status, "ok") << shape << " " << space.to_json_string(configs[i]) << ": " << res.message;
        EXPECT_LE(res.max_error, ks[i].tolerance);
      }
    }
  }

  DeviceTarget device_;
};

TEST_F(GpuGemm, EveryReducedSpaceConfigIsCorrectOnIrregularShapes) {
  expect_correct_on_irregular_shapes(true, [](const search::ConfigSpace& space) { return space.enumerate(); });
}

// The warp-tiling, fragment double-buffering and cp.async knobs in the combinations the reduced space
// ties away: 8x4-lane warps (WARP_N 4), each knob alone on the whole-block layout, cp.async at BK 32
// (4 B vectors per thread) and with 128x256 tiles (512 threads), warp tiles with float2 and scalar
// global loads and a 4x2 register tile.
TEST_F(GpuGemm, WarpTileFragmentAndCpAsyncConfigsAreCorrectOnIrregularShapes) {
  expect_correct_on_irregular_shapes(false, [](const search::ConfigSpace& space) {
    std::vector<search::Config> out;
    for (const char* json : {
             R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":4,"FRAG_DB":1,"CP_ASYNC":1})",
             R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":8,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":0,"FRAG_DB":0,"CP_ASYNC":1})",
             R"({"BM":128,"BN":128,"TM":8,"TN":8,"BK":16,"VEC":4,"STAGES":1,"PAD":0,"GROUP_M":1,"WARP_N":0,"FRAG_DB":1,"CP_ASYNC":0})",
             R"({"BM":64,"BN":128,"TM":4,"TN":8,"BK":32,"VEC":4,"STAGES":2,"PAD":0,"GROUP_M":4,"WARP_N":4,"FRAG_DB":1,"CP_ASYNC":1})",
             R"({"BM":128,"BN":64,"TM":8,"TN":4,"BK":16,"VEC":2,"STAGES":1,"PAD":4,"GROUP_M":1,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":0})",
             R"({"BM":128,"BN":256,"TM":8,"TN":8,"BK":16,"VEC":4,"STAGES":2,"PAD":4,"GROUP_M":8,"WARP_N":8,"FRAG_DB":0,"CP_ASYNC":1})",
             R"({"BM":64,"BN":64,"TM":4,"TN":2,"BK":16,"VEC":1,"STAGES":2,"PAD":4,"GROUP_M":1,"WARP_N":4,"FRAG_DB":0,"CP_ASYNC":0})"}) {
      out.push_back(space.from_json(nlohmann::json::parse(json)));
      EXPECT_TRUE(space.is_valid(out.back())) << json << ": " << space.violation(out.back()).value_or("");
    }
    return out;
  });
}

TEST_F(GpuGemm, APoisonedOrWrongKernelIsCaught) {
  // A kernel that writes nothing leaves the poisoned (NaN) output: it must be a wrong answer.
  templates::GemmF32Template tmpl;
  auto w = templates::parse_workload("gemm", "M=256,N=256,K=256", "f32");
  auto space = tmpl.reduced_space(w, device_.limits);
  auto k = tmpl.instantiate(space, space.at(0), w);
  NvrtcBuilder builder(nullptr);
  auto lazy = builder.compile({"extern \"C\" __global__ void gemm_f32() {}", "gemm_f32", device_.limits.arch, {}});
  auto ref = builder.compile({k.reference_source, k.reference_kernel_name, device_.limits.arch, {}});
  ASSERT_TRUE(lazy.ok() && ref.ok());
  WorkerClient worker(TUNER_BIN);
  auto res = worker.measure(request(k, lazy, ref), 30);
  EXPECT_EQ(res.status, "wrong_answer") << res.message;
}

// A wrong kernel that only leaves its output poisoned does not cost the next config its inputs and
// reference; one that writes past its output changes a guard region: a wrong answer that says so, and
// the next config gets the workload made afresh.
TEST_F(GpuGemm, GuardRegionsCatchOutOfBoundsWritesAndKeepInputsOtherwise) {
  const SmallGemm g = small_gemm();
  const auto& [k, ref, good] = g;
  NvrtcBuilder builder(nullptr);
  auto lazy = builder.compile({"extern \"C\" __global__ void gemm_f32() {}", "gemm_f32", device_.limits.arch, {}});
  auto past = builder.compile({"extern \"C\" __global__ void gemm_f32(const float*, const float*, float* C, int M, int N, int) {"
                               " C[static_cast<long long>(M) * N + threadIdx.x] = 1.0f; }",
                               "gemm_f32", device_.limits.arch, {}});
  ASSERT_TRUE(ref.ok() && good.ok() && lazy.ok() && past.ok()) << past.log;
  WorkerClient worker(TUNER_BIN);
  auto first = worker.measure(request(k, good, ref), 30);
  ASSERT_EQ(first.status, "ok") << first.message;
  EXPECT_GT(first.phases.inputs_s + first.phases.reference_s, 0);
  auto none = worker.measure(request(k, lazy, ref), 30);
  EXPECT_EQ(none.status, "wrong_answer");
  EXPECT_EQ(none.message.find("outside"), std::string::npos) << none.message;
  auto again = worker.measure(request(k, good, ref), 30);
  EXPECT_EQ(again.status, "ok") << again.message;
  EXPECT_EQ(again.phases.inputs_s + again.phases.reference_s, 0) << "inputs were made again after a wrong answer";
  auto oob = worker.measure(request(k, past, ref), 30);
  EXPECT_EQ(oob.status, "wrong_answer");
  EXPECT_NE(oob.message.find("outside its output"), std::string::npos) << oob.message;
  auto after = worker.measure(request(k, good, ref), 30);
  EXPECT_EQ(after.status, "ok") << after.message;
  EXPECT_GT(after.phases.inputs_s, 0) << "a touched guard must make the workload afresh";
}

// A split-K config with 48 KiB of dynamic shared memory and split-K's 4 static bytes: the H100 run
// refused it (CUDA_ERROR_INVALID_VALUE) until the runner opted in past the 48 KiB default.
TEST_F(GpuGemm, FortyEightKibOfDynamicSharedMemoryPlusStaticLaunches) {
  auto w = templates::parse_workload("gemm", "M=200,N=136,K=300", "f16");
  const auto& tmpl = templates::find_template("gemm", w.dtype, &device_.limits, "gemm_tc_mma");
  auto space = tmpl.space(w, device_.limits);
  const search::Config c = space.from_json(nlohmann::json::parse(
      R"({"BM":64,"BN":64,"BK":64,"WM":32,"WN":32,"STAGES":3,"SPLIT_K":4,"GROUP_M":1,"OUT_F32":1})"));
  auto k = tmpl.instantiate(space, c, w);
  ASSERT_EQ(k.launch.dynamic_shared_bytes, 49152);
  NvrtcBuilder builder(nullptr);
  auto kernel = builder.compile({k.source, k.kernel_name, device_.limits.arch, {}});
  auto ref = builder.compile({k.reference_source, k.reference_kernel_name, device_.limits.arch, {}});
  ASSERT_TRUE(kernel.ok() && ref.ok());
  WorkerClient worker(TUNER_BIN);
  auto res = worker.measure(request(k, kernel, ref), 30);
  EXPECT_EQ(res.status, "ok") << res.message;
}

TEST_F(GpuGemm, RepeatedMeasurementsAgreeWithinOnePercent) {
  templates::GemmF32Template tmpl;
  auto w = templates::parse_workload("gemm", "M=2048,N=2048,K=2048", "f32");
  auto space = tmpl.space(w, device_.limits);
  search::Config c{128, 128, 8, 8, 8, 4, 2, 4, 8, 0, 0, 0};
  ASSERT_TRUE(space.is_valid(c));
  auto k = tmpl.instantiate(space, c, w);
  NvrtcBuilder builder(nullptr);
  auto kernel = builder.compile({k.source, k.kernel_name, device_.limits.arch, {}});
  auto ref = builder.compile({k.reference_source, k.reference_kernel_name, device_.limits.arch, {}});
  ASSERT_TRUE(kernel.ok() && ref.ok());
  WorkerClient worker(TUNER_BIN);
  std::vector<double> medians;
  for (int i = 0; i < 10; ++i) {
    auto res = worker.measure(request(k, kernel, ref), 60);
    ASSERT_EQ(res.status, "ok") << res.message;
    EXPECT_GE(res.repeats, 10);
    medians.push_back(res.time_ms);
  }
  std::sort(medians.begin(), medians.end());
  const double mid = medians[medians.size() / 2];
  EXPECT_LT((medians.back() - medians.front()) / mid, 0.01) << "min " << medians.front() << " max " << medians.back();
}

TEST_F(GpuGemm, InjectedFaultingAndHangingKernelsAreIsolated) {
  const SmallGemm g = small_gemm();
  const auto& [k, ref, good] = g;
  NvrtcBuilder builder(nullptr);
  WorkerClient worker(TUNER_BIN);
  for (auto fault : {InjectedFault::kCrash, InjectedFault::kHang}) {
    auto bad = builder.compile({fault_kernel_source(k.kernel_name, fault), k.kernel_name, device_.limits.arch, {}});
    ASSERT_TRUE(bad.ok()) << bad.log;
    auto res = worker.measure(request(k, bad, ref), 5);
    EXPECT_EQ(res.status, fault == InjectedFault::kCrash ? "runtime_fault" : "run_timeout") << res.message;
    auto after = worker.measure(request(k, good, ref), 30);
    EXPECT_EQ(after.status, "ok") << after.message;
  }
}

}  // namespace
}  // namespace tuner
