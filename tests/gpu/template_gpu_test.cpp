// GPU tests (label "gpu") of the template library: every config of each new
// template's reduced space is correct (within its dtype's tolerance, NaN never
// passing) on shapes that are not tile multiples, and cuBLAS GemmEx /
// GemmStridedBatchedEx and cuDNN's convolution run as vendor baselines on the
// same buffers, as does the device copy that memory-bound ops are held to. They skip
// with a reason on a machine without a CUDA driver or GPU.
#include <gtest/gtest.h>

#include <ostream>

#include <future>
#include <vector>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "tuner/compile_pool.h"
#include "tuner/cublas_gemm.h"
#include "tuner/cuda_runner.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/tuning_session.h"
#include "tuner/worker.h"

namespace tuner {
namespace {

struct GpuCase {
  const char* op;
  const char* shape;
  const char* dtype;
  const char* template_name = "";  ///< Empty: the op's default template.
};

/// What ctest and gtest print for a case (instead of its raw bytes).
void PrintTo(const GpuCase& c, std::ostream* os) {
  *os << c.op << " " << c.shape << " " << c.dtype << (*c.template_name ? " " : "") << c.template_name;
}

/// Skips without a GPU; device_ is cuda:0.
template <class Base>
class OnGpu : public Base {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_devices(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    device_ = resolve_device("cuda:0");
  }
  DeviceTarget device_;
};

class GpuTemplates : public OnGpu<::testing::TestWithParam<GpuCase>> {};
class GpuVendorBase : public OnGpu<::testing::Test> {};

TEST_P(GpuTemplates, EveryReducedSpaceConfigIsCorrect) {
  const auto w = templates::parse_workload(GetParam().op, GetParam().shape, GetParam().dtype);
  const auto& tmpl = templates::find_template(w.op, w.dtype, nullptr, GetParam().template_name);
  if (auto why = tmpl.unsupported_on(device_.limits)) GTEST_SKIP() << *why;
  auto space = tmpl.reduced_space(w, device_.limits);
  ASSERT_GT(space.size(), 0u);
  NvrtcBuilder builder(nullptr);
  CompilePool pool(builder, 0);
  WorkerClient worker(TUNER_BIN);
  std::vector<templates::KernelInstance> ks;
  std::vector<std::future<CompileResult>> compiled;
  for (const auto& c : space.enumerate()) {
    ks.push_back(tmpl.instantiate(space, c, w));
    compiled.push_back(
        pool.submit({ks.back().source, ks.back().kernel_name, templates::compile_arch(ks.back(), device_.limits), {}}));
  }
  for (size_t i = 0; i < ks.size(); ++i) {
    auto ref = builder.compile({ks[i].reference_source, ks[i].reference_kernel_name, device_.limits.arch, {}});
    ASSERT_TRUE(ref.ok()) << ref.log;
    auto cr = compiled[i].get();
    ASSERT_TRUE(cr.ok()) << cr.log;
    auto req = measure_request(device_.spec, ks[i], cr.cubin,
                               {cr.resources.registers, cr.resources.static_shared_bytes, cr.resources.local_bytes},
                               ref.cubin);
    req.settings.min_time_ms = 1;
    req.settings.min_repeats = 2;
    auto res = worker.measure(req, 60);
    EXPECT_EQ(res.status, "ok") << w.to_string() << " " << space.to_json_string(space.at(i)) << ": " << res.message;
    EXPECT_LE(res.max_error, ks[i].tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Templates, GpuTemplates,
    ::testing::Values(GpuCase{"softmax", "rows=37,cols=3001", "f32"}, GpuCase{"softmax", "rows=37,cols=3000", "f16"},
                      GpuCase{"softmax", "rows=5,cols=40000", "bf16"},
                      GpuCase{"layernorm", "rows=37,cols=3001", "f32"}, GpuCase{"layernorm", "rows=37,cols=3000", "f16"},
                      GpuCase{"layernorm", "rows=5,cols=40000", "bf16"},
                      // The row lengths (CACHE 2: a warp per 4096-column row, 512 threads per
                      // 32768-column row), one column, and a length no vector width or warp divides.
                      GpuCase{"softmax", "rows=300,cols=4096", "f16"}, GpuCase{"softmax", "rows=20,cols=32768", "f16"},
                      GpuCase{"layernorm", "rows=300,cols=4096", "f16"},
                      GpuCase{"layernorm", "rows=20,cols=32768", "f16"}, GpuCase{"softmax", "rows=9,cols=1", "f16"},
                      GpuCase{"layernorm", "rows=9,cols=1", "f32"}, GpuCase{"layernorm", "rows=33,cols=33", "bf16"},
                      GpuCase{"gemm", "M=200,N=136,K=300", "f16"}, GpuCase{"gemm", "M=200,N=131,K=301", "f16"},
                      GpuCase{"gemm", "M=77,N=136,K=520", "bf16"},
                      // Hopper only (skips elsewhere): partial tiles in M, N and K through TMA's zero fill.
                      GpuCase{"gemm", "M=200,N=136,K=304", "f16", "gemm_tc_wgmma"},
                      GpuCase{"gemm", "M=77,N=264,K=520", "bf16", "gemm_tc_wgmma"},
                      GpuCase{"batched_gemm", "B=3,M=130,N=72,K=200", "f16", "batched_gemm_tc_wgmma"},
                      GpuCase{"batched_gemm", "B=3,M=200,N=136,K=300", "f32"},
                      GpuCase{"batched_gemm", "B=3,M=200,N=136,K=300", "f16"},
                      GpuCase{"batched_gemm", "B=2,M=65,N=127,K=257", "bf16"},
                      GpuCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f32"},
                      GpuCase{"conv2d", "N=3,H=9,W=10,C=17,K=33,R=1,S=1,stride=1,pad=0", "f16"},
                      GpuCase{"conv2d", "N=2,H=15,W=13,C=16,K=20,R=3,S=3,stride=2,pad=1,dilation=2", "f16"},
                      GpuCase{"conv2d", "N=1,H=16,W=16,C=8,K=24,R=5,S=3,stride=3,pad=2", "bf16"},
                      // Hopper only, built without a GPU: TMA's im2col boxes (strided, dilated, the padding
                      // zero-filled, channels past C in a 64-channel chunk), pixel tiles past P and Q, filter
                      // tiles past K, taps that miss whole tiles (pad 4).
                      GpuCase{"conv2d", "N=2,H=15,W=13,C=24,K=40,R=3,S=3,stride=2,pad=1,dilation=2", "f16",
                              "conv2d_igemm_wgmma"},
                      GpuCase{"conv2d", "N=2,H=30,W=27,C=72,K=136,R=3,S=3,stride=1,pad=1", "bf16", "conv2d_igemm_wgmma"},
                      GpuCase{"conv2d", "N=2,H=6,W=6,C=16,K=16,R=3,S=3,stride=1,pad=4", "f16", "conv2d_igemm_wgmma"},
                      // One-pixel last tile row and column: taps of 2 channel chunks each miss whole tiles
                      // between multiplied ones (the first version's ring deadlocked on such runs).
                      GpuCase{"conv2d", "N=1,H=9,W=9,C=128,K=32,R=3,S=3,stride=1,pad=1", "f16", "conv2d_igemm_wgmma"},
                      GpuCase{"conv2d", "N=3,H=9,W=10,C=136,K=72,R=1,S=1,stride=1,pad=0", "f16", "conv2d_igemm_wgmma"},
                      // More units than a persistent grid's CTAs (384 and 256 over 132), so PINGPONG's two
                      // consumers take turns on the ring over several units each; the second with pad 4, whose
                      // taps miss whole tiles (units with fewer k-tiles than others).
                      GpuCase{"conv2d", "N=16,H=30,W=27,C=72,K=136,R=3,S=3,stride=1,pad=1", "f16", "conv2d_igemm_wgmma"},
                      GpuCase{"conv2d", "N=64,H=6,W=6,C=16,K=72,R=3,S=3,stride=1,pad=4", "bf16", "conv2d_igemm_wgmma"},
                      // The 1x1 f32 conv as gemm_f32 with the filter transposed (built without a GPU):
                      // a ragged C and K (scalar loads) and a vector-aligned one.
                      GpuCase{"conv2d", "N=3,H=9,W=10,C=17,K=33,R=1,S=1,stride=1,pad=0", "f32", "conv2d_gemm_simt"},
                      GpuCase{"conv2d", "N=2,H=14,W=14,C=64,K=96,R=1,S=1,stride=1,pad=0", "f32", "conv2d_gemm_simt"},
                      // Few channels (built without a GPU): the stem's 7x7/2 with C = 3 and K past the filter
                      // tile, a dilated C = 6, a single channel with stride 3 and an odd K (scalar stores).
                      GpuCase{"conv2d", "N=2,H=23,W=29,C=3,K=20,R=7,S=7,stride=2,pad=3", "f16", "conv2d_patch_tc"},
                      GpuCase{"conv2d", "N=2,H=15,W=13,C=6,K=40,R=3,S=3,stride=2,pad=1,dilation=2", "bf16",
                              "conv2d_patch_tc"},
                      GpuCase{"conv2d", "N=3,H=9,W=10,C=1,K=9,R=5,S=3,stride=3,pad=2", "f16", "conv2d_patch_tc"},
                      // More pixel tiles (1,024 of 4 x 8) than a persistent grid's CTAs (528): each CTA runs
                      // several, so the prefetch of the next tile's patch is exercised.
                      GpuCase{"conv2d", "N=8,H=128,W=128,C=3,K=24,R=7,S=7,stride=2,pad=3", "f16", "conv2d_patch_tc"}),
    [](const auto& info) {
      std::string n = std::string(info.param.op) + "_" + info.param.dtype + "_" + info.param.shape +
                      (*info.param.template_name ? std::string("_") + info.param.template_name : "");
      for (auto& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

/// A gemm_tc_wgmma config by its knobs; PERSISTENT 1 stands for the device's SM count.
struct WgmmaCase {
  const char* op;
  const char* shape;
  const char* dtype;
  int bm, bn, consumers, stages, group_m, out_f32, split_k, persistent;
  int epilogue = 0;  ///< 1: staged through shared memory
  int cluster = 1;   ///< CTAs per cluster sharing A by TMA multicast
  int pingpong = 0;  ///< 1: the two consumers run alternate units whole
  int cluster_k = 1; ///< CTAs per cluster along K, reduced through distributed shared memory
};

class GpuWgmmaKnobs : public GpuVendorBase {};

// Split-K and the persistent grid of gemm_tc_wgmma against the reference: decode shapes (M 16..128,
// N=K=4096 and a short K), every split count, persistent grids with several units per CTA (so the
// ring's phases run on across tiles) with and without split-K, odd M and N, bf16, fp32 output, and
// batches (a persistent grid over all batch entries' units), the staged epilogue and deep rings, and
// clusters that multicast A, pingpong consumers and clusters along K. Each config runs twice on the same workspace (the checked run
// and the timed runs): split-K's tile counters must be left zero by the first launch.
TEST_F(GpuWgmmaKnobs, SplitKAndPersistentConfigsAreCorrect) {
  const std::vector<WgmmaCase> cases = {
      {"gemm", "M=16,N=4096,K=4096", "f16", 64, 64, 1, 6, 8, 0, 1, 0},
      {"gemm", "M=16,N=4096,K=4096", "f16", 64, 64, 1, 6, 8, 0, 4, 1},
      {"gemm", "M=16,N=4096,K=4096", "f16", 64, 128, 1, 5, 8, 0, 8, 0},
      {"gemm", "M=32,N=4096,K=4096", "bf16", 64, 64, 1, 6, 1, 0, 2, 1},
      {"gemm", "M=64,N=4096,K=4096", "f16", 64, 128, 1, 5, 8, 1, 4, 1},
      {"gemm", "M=128,N=4096,K=4096", "f16", 128, 64, 2, 5, 8, 0, 2, 1},
      {"gemm", "M=128,N=4096,K=4096", "f16", 128, 128, 2, 4, 8, 0, 1, 1},
      {"gemm", "M=4096,N=4096,K=512", "f16", 128, 256, 2, 4, 8, 0, 1, 1},
      {"gemm", "M=4096,N=4096,K=512", "bf16", 128, 128, 2, 4, 1, 1, 1, 1},
      {"gemm", "M=1000,N=2048,K=256", "f16", 64, 64, 1, 4, 8, 0, 2, 1},  // 1024 units on the SMs
      {"gemm", "M=77,N=264,K=520", "bf16", 64, 64, 1, 3, 8, 0, 8, 1},     // odd M, N; 9 k-tiles / 8 splits
      {"gemm", "M=777,N=1000,K=200", "f16", 128, 192, 2, 4, 8, 1, 2, 1},
      {"batched_gemm", "B=3,M=520,N=1032,K=200", "f16", 64, 128, 1, 4, 8, 0, 2, 1},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", 128, 128, 2, 2, 8, 0, 1, 1},
      // The staged epilogue (16-byte row vectors) and deep rings: split-K partials and their reduction,
      // pieces cut by N (264, 1000: not multiples of 32) and M, fp32 and 2-byte C, batches.
      {"gemm", "M=16,N=4096,K=4096", "f16", 64, 64, 1, 12, 8, 0, 2, 0, 1},
      {"gemm", "M=77,N=264,K=520", "bf16", 64, 64, 1, 10, 8, 0, 8, 1, 1},
      {"gemm", "M=777,N=1000,K=200", "f16", 128, 192, 2, 4, 8, 1, 2, 1, 1},
      {"gemm", "M=1000,N=2048,K=256", "bf16", 64, 64, 1, 12, 1, 1, 1, 1, 1},
      {"gemm", "M=4096,N=4096,K=512", "f16", 128, 256, 2, 4, 8, 0, 1, 1, 1},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", 128, 128, 2, 2, 8, 0, 1, 1, 1},
      {"batched_gemm", "B=3,M=520,N=1032,K=200", "f16", 64, 128, 1, 4, 8, 1, 1, 0, 1},
      // BN 32: one 32-column B box with 64-byte swizzle (decode: 128 CTAs at N=4096 without split-K);
      // N=264 and 1000 leave a partial last box, B=3 batches, 2 consumers, both epilogues.
      {"gemm", "M=64,N=4096,K=4096", "f16", 64, 32, 1, 16, 1, 0, 1, 0, 1},
      {"gemm", "M=16,N=4096,K=4096", "bf16", 64, 32, 1, 12, 8, 1, 2, 1, 0},
      {"gemm", "M=77,N=264,K=520", "f16", 64, 32, 1, 6, 8, 0, 4, 1, 1},
      {"gemm", "M=777,N=1000,K=200", "bf16", 128, 32, 2, 8, 8, 0, 1, 0, 0},
      {"batched_gemm", "B=3,M=520,N=1032,K=200", "f16", 64, 32, 1, 10, 1, 1, 1, 1, 1},
      // Clusters multicasting A (2 CTAs; 4 until stop 34), decode (M=16: A's shares past M are not fetched), split-K,
      // partial last clusters (N=264 and 1000: idle CTAs that only load), persistent grids over batches.
      {"gemm", "M=64,N=4096,K=4096", "f16", 64, 32, 1, 16, 1, 0, 1, 0, 1, 2},
      {"gemm", "M=16,N=4096,K=4096", "f16", 64, 64, 1, 12, 1, 0, 2, 0, 1, 2},
      {"gemm", "M=128,N=4096,K=4096", "bf16", 128, 64, 2, 8, 8, 0, 1, 1, 1, 2},
      {"gemm", "M=77,N=264,K=520", "bf16", 64, 64, 1, 10, 8, 0, 8, 0, 1, 2},
      {"gemm", "M=777,N=1000,K=200", "f16", 128, 32, 2, 8, 8, 1, 1, 0, 0, 2},
      {"gemm", "M=777,N=1000,K=200", "f16", 128, 192, 2, 4, 8, 0, 2, 1, 1, 2},
      {"gemm", "M=4096,N=4096,K=512", "f16", 128, 256, 2, 4, 8, 0, 1, 1, 1, 2},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", 128, 128, 2, 2, 8, 0, 1, 1, 1, 2},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", 256, 128, 2, 2, 1, 0, 1, 0, 1, 2},
      {"batched_gemm", "B=3,M=520,N=1032,K=200", "f16", 64, 128, 1, 4, 8, 0, 2, 1, 1, 2},
      // PINGPONG: consumers alternate over several units per CTA (512 units of the batched row over 132 CTAs;
      // 1024 and 256 of the GEMMs), both epilogues, fp32 C, partial tiles (777 x 1000, B=3 520 x 1032),
      // 64-row units, 2-CTA clusters and shallow rings (the turns keep each wait within one phase).
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", 128, 128, 2, 5, 1, 0, 1, 1, 1, 1, 1},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", 128, 128, 2, 2, 8, 0, 1, 1, 0, 1, 1},
      {"gemm", "M=4096,N=4096,K=512", "f16", 128, 128, 2, 4, 8, 0, 1, 1, 1, 2, 1},
      {"gemm", "M=1000,N=2048,K=256", "bf16", 128, 64, 2, 3, 8, 0, 1, 1, 0, 1, 1},
      {"gemm", "M=777,N=1000,K=200", "bf16", 64, 256, 2, 4, 8, 1, 1, 1, 1, 1, 1},
      {"batched_gemm", "B=3,M=520,N=1032,K=200", "f16", 128, 128, 2, 4, 8, 1, 1, 1, 1, 2, 1},
      // CLUSTER_K: 2 ranks per tile summed through distributed shared memory: decode (M=16 in a 64-row
      // tile, 32-column tiles), two consumers, both epilogues, fp32 C, bf16, odd M and N, 2 k-tiles over 2
      // ranks (one each), batches.
      {"gemm", "M=64,N=4096,K=4096", "f16", 64, 64, 1, 12, 1, 0, 1, 0, 1, 1, 0, 2},
      {"gemm", "M=16,N=4096,K=4096", "f16", 64, 64, 1, 8, 8, 1, 1, 0, 1, 1, 0, 2},
      {"gemm", "M=32,N=2048,K=4096", "bf16", 64, 32, 1, 16, 1, 0, 1, 0, 0, 1, 0, 2},
      {"gemm", "M=128,N=4096,K=4096", "f16", 128, 64, 2, 6, 8, 0, 1, 0, 1, 1, 0, 2},
      {"gemm", "M=77,N=264,K=520", "bf16", 64, 64, 1, 6, 8, 1, 1, 0, 0, 1, 0, 2},
      {"gemm", "M=200,N=136,K=128", "f16", 64, 64, 1, 4, 1, 0, 1, 0, 1, 1, 0, 2},
      {"batched_gemm", "B=3,M=130,N=72,K=200", "f16", 64, 64, 1, 4, 8, 0, 1, 0, 1, 1, 0, 2},
  };
  NvrtcBuilder builder(nullptr);
  WorkerClient worker(TUNER_BIN);
  for (const WgmmaCase& g : cases) {
    const auto w = templates::parse_workload(g.op, g.shape, g.dtype);
    const auto& tmpl = templates::find_template(w.op, w.dtype, &device_.limits,
                                                w.op == "gemm" ? "gemm_tc_wgmma" : "batched_gemm_tc_wgmma");
    auto space = tmpl.space(w, device_.limits);
    const nlohmann::json j = {{"BM", g.bm},          {"BN", g.bn},           {"CONSUMERS", g.consumers},
                              {"STAGES", g.stages},  {"GROUP_M", g.group_m}, {"OUT_F32", g.out_f32},
                              {"SPLIT_K", g.split_k}, {"PERSISTENT", g.persistent ? device_.limits.sm_count : 0},
                              {"EPILOGUE", g.epilogue},  {"CLUSTER", g.cluster}, {"PINGPONG", g.pingpong},
                              {"CLUSTER_K", g.cluster_k}};
    const search::Config c = space.from_json(j);
    const std::string cfg = w.to_string() + " " + j.dump();
    ASSERT_TRUE(space.is_valid(c)) << cfg << ": " << space.violation(c).value_or("");
    const auto k = tmpl.instantiate(space, c, w);
    auto cr = builder.compile({k.source, k.kernel_name, templates::compile_arch(k, device_.limits), {}});
    ASSERT_TRUE(cr.ok()) << cfg << "\n" << cr.log;
    auto ref = builder.compile({k.reference_source, k.reference_kernel_name, device_.limits.arch, {}});
    ASSERT_TRUE(ref.ok()) << ref.log;
    auto req = measure_request(device_.spec, k, cr.cubin,
                               {cr.resources.registers, cr.resources.static_shared_bytes, cr.resources.local_bytes},
                               ref.cubin);
    req.settings.min_time_ms = 1;
    req.settings.min_repeats = 2;
    auto res = worker.measure(req, 60);
    EXPECT_EQ(res.status, "ok") << cfg << ": " << res.message;
    EXPECT_LE(res.max_error, k.tolerance) << cfg;
  }
}

TEST_F(GpuVendorBase, AHalfOutputLeftPoisonedIsAWrongAnswer) {
  // A kernel that writes nothing leaves the 0x7E00 (f16) / 0x7FC0 (bf16) NaNs: never a pass.
  for (const char* dtype : {"f16", "bf16"}) {
    const auto w = templates::parse_workload("softmax", "rows=33,cols=1001", dtype);
    const auto& tmpl = templates::find_template(w.op, w.dtype);
    auto space = tmpl.reduced_space(w, device_.limits);
    auto k = tmpl.instantiate(space, space.at(0), w);
    NvrtcBuilder builder(nullptr);
    auto lazy = builder.compile({"extern \"C\" __global__ void " + k.kernel_name + "() {}", k.kernel_name,
                                 device_.limits.arch, {}});
    auto ref = builder.compile({k.reference_source, k.reference_kernel_name, device_.limits.arch, {}});
    ASSERT_TRUE(lazy.ok() && ref.ok()) << ref.log;
    WorkerClient worker(TUNER_BIN);
    auto res = worker.measure(measure_request(device_.spec, k, lazy.cubin, {}, ref.cubin), 30);
    EXPECT_EQ(res.status, "wrong_answer") << dtype << ": " << res.message;
  }
}

class GpuVendor : public GpuVendorBase {
 protected:
  /// The vendor baseline `vendor` measured on the buffers of g's first reduced config; *bytes gets the
  /// instance's compulsory bytes.
  MeasureResult measure_baseline(const GpuCase& g, const std::string& vendor, double* bytes = nullptr) {
    const auto w = templates::parse_workload(g.op, g.shape, g.dtype);
    const auto& tmpl = templates::find_template(w.op, w.dtype);
    auto space = tmpl.reduced_space(w, device_.limits);
    auto k = tmpl.instantiate(space, space.at(0), w);
    if (bytes) *bytes = k.bytes;
    NvrtcBuilder builder(nullptr);
    auto ref = builder.compile({k.reference_source, k.reference_kernel_name, device_.limits.arch, {}});
    EXPECT_TRUE(ref.ok()) << ref.log;
    auto req = measure_request(device_.spec, k, "", {}, ref.cubin);
    req.vendor = vendor;
    req.settings.min_time_ms = 1;
    WorkerClient worker(TUNER_BIN);
    return worker.measure(req, 60);
  }
};

TEST_F(GpuVendor, CublasGemmExAndCudnnMatchTheReference) {
  for (const GpuCase& g : {GpuCase{"gemm", "M=200,N=136,K=304", "f16"}, GpuCase{"gemm", "M=64,N=256,K=128", "bf16"},
                           GpuCase{"batched_gemm", "B=3,M=100,N=72,K=64", "f16"},
                           GpuCase{"batched_gemm", "B=3,M=100,N=70,K=33", "f32"},
                           GpuCase{"conv2d", "N=2,H=15,W=13,C=16,K=24,R=3,S=3,stride=2,pad=1,dilation=2", "f16"},
                           GpuCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=1,pad=1", "f32"}}) {
    const auto res = measure_baseline(g, vendor_baseline_for(templates::parse_workload(g.op, g.shape, g.dtype)));
    EXPECT_EQ(res.status, "ok") << g.op << " " << g.shape << " " << g.dtype << ": " << res.message;
  }
}

TEST_F(GpuVendor, CudnnChoiceOnTheResNetShapesMatchesTheReferenceAndSaysWhatRan) {
  // The four ResNet-50 convolutions template_bench sets beside cuDNN (docs/gpu-runs/2026-11-25-h100).
  // plan() times up to 16 graph-API plans and the legacy Find's algorithm; whichever won must pass the
  // worker's checked run against the reference, and the graph path must have made plans on this GPU.
  for (const GpuCase& g : {GpuCase{"conv2d", "N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3", "f16"},
                           GpuCase{"conv2d", "N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1", "f16"},
                           GpuCase{"conv2d", "N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1", "f16"},
                           GpuCase{"conv2d", "N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0", "f32"}}) {
    const auto res = measure_baseline(g, "cudnn_conv");
    EXPECT_EQ(res.status, "ok") << g.shape << " " << g.dtype << ": " << res.message << " [" << res.detail << "]";
    EXPECT_GT(res.time_ms, 0) << g.shape;
    EXPECT_EQ(res.detail.rfind("cudnn ", 0), 0u) << g.shape << ": " << res.detail;
    EXPECT_EQ(res.detail.find("graph path:"), std::string::npos) << g.shape << ": " << res.detail;
    std::printf("  %s %s: %.4f ms, %s\n", g.shape, g.dtype, res.time_ms, res.detail.c_str());
  }
}

TEST_F(GpuVendor, DeviceCopyBaselineTimesTheRowOpsBytes) {
  // The yardstick of softmax and layernorm (template_bench's "% vendor" on their rows): X copied into Y.
  for (const GpuCase& g : {GpuCase{"softmax", "rows=4096,cols=4096", "f16"}, GpuCase{"layernorm", "rows=64,cols=32768", "f16"}}) {
    double bytes = 0;
    const auto res = measure_baseline(g, kDeviceCopyBaseline, &bytes);
    EXPECT_EQ(res.status, "ok") << g.op << " " << g.shape << ": " << res.message;
    ASSERT_GT(res.time_ms, 0);
    // Far below the DRAM peak would mean the copy did not run as one transfer.
    EXPECT_GT(bytes / (res.time_ms * 1e-3), 0.3 * device_.gpu.dram_bandwidth_gbps * 1e9) << g.op << " " << g.shape;
  }
}

}  // namespace
}  // namespace tuner
