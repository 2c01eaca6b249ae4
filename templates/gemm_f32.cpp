#include "templates/gemm_f32.h"

#include <algorithm>
#include <cmath>

#include "templates/kernel_files.h"
#include "templates/kernels/gemm_f32_layout.cuh"

namespace tuner::templates {

namespace {

// Warp tiling as one knob: the lanes along n of a one-warp thread group, 4 (8x4 lanes) or 8 (4x8); the
// shapes a warp of 32 lanes could take besides read more shared-memory wavefronts per k-step (2x16 and
// 16x2 three per float4 run pair, 1x32 and 32x1 five: f32_warp_kstep_wavefronts), and groups of 2 to
// 16 warps sit between one warp and the whole block.
constexpr const char* kWarpNDoc =
    "warp tiling: lanes along n of a one-warp thread group, tile (32/WARP_N)*TM x WARP_N*TN; 0 = none "
    "(the whole block is one group)";

std::vector<search::Knob> gemm_knobs(bool reduced) {
  if (reduced) {
    return {
        {"BM", {32, 128}, "block tile rows (L)"},
        {"BN", {64, 128}, "block tile columns (L)"},
        {"TM", {4, 8}, "register tile rows per thread (V)"},
        {"TN", {4, 8}, "register tile columns per thread (V)"},
        {"BK", {8, 16}, "k-slab depth in shared memory (S)"},
        {"VEC", {1, 4}, "floats per global load"},
        {"STAGES", {1, 2}, "shared-memory buffers"},
        {"PAD", {0, 4}, "padding floats per shared row"},
        {"GROUP_M", {1, 8}, "block-rows rasterized together"},
        {"WARP_N", {0, 8}, kWarpNDoc},
        {"FRAG_DB", {0, 1}, "double-buffer the k-step fragments in registers"},
        {"CP_ASYNC", {0, 1}, "B slabs global -> shared by cp.async (sm_80+)"},
    };
  }
  return {
      {"BM", {16, 32, 64, 128, 256}, "block tile rows (L)"},
      {"BN", {16, 32, 64, 128, 256}, "block tile columns (L)"},
      {"TM", {1, 2, 4, 8, 16}, "register tile rows per thread (V)"},
      {"TN", {1, 2, 4, 8, 16}, "register tile columns per thread (V)"},
      {"BK", {8, 16, 32, 64}, "k-slab depth in shared memory (S)"},
      {"VEC", {1, 2, 4}, "floats per global load"},
      {"STAGES", {1, 2}, "shared-memory buffers"},
      {"PAD", {0, 4}, "padding floats per shared row"},
      {"GROUP_M", {1, 4, 8}, "block-rows rasterized together"},
      {"WARP_N", {0, 4, 8}, kWarpNDoc},
      {"FRAG_DB", {0, 1}, "double-buffer the k-step fragments in registers"},
      {"CP_ASYNC", {0, 1}, "B slabs global -> shared by cp.async (sm_80+)"},
  };
}

/// Whether the NVRTC architecture ("sm_80", "sm_90a") is at least sm_<cc>.
bool arch_at_least(const std::string& arch, int cc) {
  int n = 0;
  for (char ch : arch.substr(arch.find('_') + 1)) {
    if (ch < '0' || ch > '9') break;
    n = n * 10 + (ch - '0');
  }
  return n >= cc;
}

GemmTiling gemm_tiling_of(const search::ConfigView& v) {
  GemmTiling t;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.tm = static_cast<int>(v["TM"]);
  t.tn = static_cast<int>(v["TN"]);
  t.bk = static_cast<int>(v["BK"]);
  t.vec = static_cast<int>(v["VEC"]);
  t.stages = static_cast<int>(v["STAGES"]);
  t.pad = static_cast<int>(v["PAD"]);
  t.group_m = static_cast<int>(v["GROUP_M"]);
  t.warp_n = static_cast<int>(v["WARP_N"]);
  t.frag_db = v["FRAG_DB"] != 0;
  t.cp_async = v["CP_ASYNC"] != 0;
  return t;
}

std::vector<search::Constraint> gemm_constraints(const DeviceLimits& limits) {
  std::vector<search::Constraint> cs = {
      {"TM * TN <= 64 (the accumulators fit in registers)",
       [](const search::ConfigView& v) { return v["TM"] * v["TN"] <= 64; }},
      {"BM % TM == 0 and BN % TN == 0", [](const search::ConfigView& v) {
         return v["BM"] % v["TM"] == 0 && v["BN"] % v["TN"] == 0;
       }},
      {"32 <= threads per block <= " + std::to_string(limits.max_threads_per_block),
       [max = limits.max_threads_per_block](const search::ConfigView& v) {
         int64_t threads = (v["BM"] / v["TM"]) * (v["BN"] / v["TN"]);
         return threads >= 32 && threads <= max;
       }},
      {"BK % VEC == 0 and BN % VEC == 0", [](const search::ConfigView& v) {
         return v["BK"] % v["VEC"] == 0 && v["BN"] % v["VEC"] == 0;
       }},
      {"A and B tiles split evenly over threads x VEC", [](const search::ConfigView& v) {
         int64_t threads = (v["BM"] / v["TM"]) * (v["BN"] / v["TN"]);
         int64_t per = threads * v["VEC"];
         return (v["BM"] * v["BK"]) % per == 0 && (v["BK"] * v["BN"]) % per == 0;
       }},
      // Each slab passes through registers on its way to shared memory; past 64 floats per thread the
      // kernel spills heavily and ptxas takes up to 16 s per config (measured), for configs that lose.
      {"(BM*BK + BK*BN) / threads <= 64 floats staged per thread", [](const search::ConfigView& v) {
         int64_t threads = (v["BM"] / v["TM"]) * (v["BN"] / v["TN"]);
         return (v["BM"] * v["BK"] + v["BK"] * v["BN"]) <= 64 * threads;
       }},
      {"shared memory <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
       [max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
         return gemm_shared_bytes(gemm_tiling_of(v)) <= static_cast<size_t>(max);
       }},
      {"the warp tile (32/WARP_N)*TM x WARP_N*TN divides the block tile and is smaller than it",
       [](const search::ConfigView& v) {
         if (v["WARP_N"] == 0) return true;
         const int64_t wm = (32 / v["WARP_N"]) * v["TM"], wn = v["WARP_N"] * v["TN"];
         return v["BM"] % wm == 0 && v["BN"] % wn == 0 && wm * wn < v["BM"] * v["BN"];
       }},
      // A k-step of TM*TN FMAs issues in about TM*TN cycles per warp; below 32 it cannot cover the
      // ~30-cycle shared-memory latency that the second fragment buffer is there to hide.
      {"FRAG_DB needs TM * TN >= 32 (a k-step long enough to hide the next one's shared reads)",
       [](const search::ConfigView& v) { return v["FRAG_DB"] == 0 || v["TM"] * v["TN"] >= 32; }},
      {"CP_ASYNC needs STAGES == 2 (it fills the other buffer while one is computed)",
       [](const search::ConfigView& v) { return v["CP_ASYNC"] == 0 || v["STAGES"] == 2; }},
      // cp.async of 4 or 8 bytes issues 2 to 4 times the instructions of the register path's float4.
      {"CP_ASYNC copies 16 bytes: VEC == 4 and PAD % 4 == 0",
       [](const search::ConfigView& v) { return v["CP_ASYNC"] == 0 || (v["VEC"] == 4 && v["PAD"] % 4 == 0); }},
      {"CP_ASYNC needs sm_80 or newer (device " + limits.arch + ")",
       [sm80 = arch_at_least(limits.arch, 80)](const search::ConfigView& v) { return v["CP_ASYNC"] == 0 || sm80; }},
  };
  return cs;
}

}  // namespace

std::optional<std::string> GemmF32Template::unsupported(const Workload& w) const {
  const int64_t M = w.dim("M"), N = w.dim("N"), K = w.dim("K");
  constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;  // the kernel takes M, N, K as int
  for (auto [name, elems] : {std::pair<const char*, double>{"A (M*K)", double(M) * double(K)},
                             {"B (K*N)", double(K) * double(N)}, {"C (M*N)", double(M) * double(N)}})
    if (elems > static_cast<double>(kMaxElements))
      return std::string("matrix ") + name + " has " + std::to_string(static_cast<long long>(elems)) +
             " elements; gemm_f32 allows at most 2147483647";
  if (M > 65535 * 16)
    return "M=" + std::to_string(M) + " is past the reference kernel's grid (M <= 1048560)";
  return std::nullopt;
}

std::string GemmF32Template::source_text() const {
  return kernel_files_text({"gemm_f32.cuh", "gemm_f32_reference.cuh"});
}

search::ConfigSpace GemmF32Template::space(const Workload&, const DeviceLimits& limits) const {
  return search::ConfigSpace(gemm_knobs(false), gemm_constraints(limits));
}

search::ConfigSpace GemmF32Template::reduced_space(const Workload&, const DeviceLimits& limits) const {
  auto cs = gemm_constraints(limits);
  // Keep the reduced space to tens of configs: tie the secondary knobs together.
  cs.push_back({"reduced: TN == TM", [](const search::ConfigView& v) { return v["TN"] == v["TM"]; }});
  cs.push_back({"reduced: PAD == 4 iff STAGES == 2",
                [](const search::ConfigView& v) { return (v["PAD"] == 4) == (v["STAGES"] == 2); }});
  cs.push_back({"reduced: GROUP_M == 8 iff VEC == 4",
                [](const search::ConfigView& v) { return (v["GROUP_M"] == 8) == (v["VEC"] == 4); }});
  cs.push_back({"reduced: WARP_N == 8 iff TM == 8 and BK == 16",
                [](const search::ConfigView& v) { return (v["WARP_N"] == 8) == (v["TM"] == 8 && v["BK"] == 16); }});
  cs.push_back({"reduced: FRAG_DB == 1 iff WARP_N == 8",
                [](const search::ConfigView& v) { return (v["FRAG_DB"] == 1) == (v["WARP_N"] == 8); }});
  cs.push_back({"reduced: CP_ASYNC == 1 iff WARP_N == 8, STAGES == 2 and VEC == 4",
                [](const search::ConfigView& v) {
                  return (v["CP_ASYNC"] == 1) == (v["WARP_N"] == 8 && v["STAGES"] == 2 && v["VEC"] == 4);
                }});
  return search::ConfigSpace(gemm_knobs(true), std::move(cs));
}

GemmTiling GemmF32Template::tiling(const search::ConfigSpace& space, const search::Config& c) {
  return gemm_tiling_of(search::ConfigView(space, c));
}

costmodel::KernelProfile GemmF32Template::profile(const search::ConfigSpace& space, const search::Config& c,
                                                  const Workload& w) const {
  const GemmTiling t = tiling(space, c);
  const int64_t M = w.dim("M"), N = w.dim("N"), K = w.dim("K");
  const int64_t grid_m = (M + t.bm - 1) / t.bm, grid_n = (N + t.bn - 1) / t.bn;
  const int threads = gemm_threads(t);
  const int64_t slabs = (K + t.bk - 1) / t.bk;
  const double blocks = static_cast<double>(grid_m * grid_n);

  costmodel::KernelProfile p;
  p.flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  p.dram_bytes = 4.0 * static_cast<double>(M * K + K * N + M * N);
  const double tile_elems = static_cast<double>(t.bm * t.bk + t.bk * t.bn);
  p.global_bytes = blocks * static_cast<double>(slabs) * tile_elems * 4.0 + 4.0 * static_cast<double>(M * N);
  const double shared_store_bytes = blocks * static_cast<double>(slabs) * tile_elems * 4.0;
  // Fragment reads as the banks serve them: 128-byte wavefronts per warp and k-step, fewer where a
  // warp's lanes share (broadcast) or spread their float4 runs (warp tiling, gemm_f32_layout.cuh).
  // Every warp of a block reads the same pattern at another offset: warp 0 stands for all.
  const F32Layout lay{t.bm, t.bn, t.tm, t.tn, t.wm(), t.wn(), t.bk, t.vec};
  const int warps = (threads + 31) / 32;
  const double wavefronts = f32_warp_kstep_wavefronts(lay, 0, t.bm + t.pad, t.bn + t.pad);
  const double shared_load_bytes = blocks * static_cast<double>(slabs) * warps * t.bk * wavefronts * 128.0;
  p.shared_bytes = shared_store_bytes + shared_load_bytes;
  // A is stored transposed (As[k][m]): the BK/VEC threads that read one row of A write one column of
  // As, BM+PAD floats apart. Without padding and with BM a multiple of 32 they hit the same bank.
  const double writers_per_row = std::max(1, t.bk / t.vec);
  const double store_ways = t.pad == 0 && t.bm % 32 == 0 ? std::min(32.0, writers_per_row)
                                                           : std::max(1.0, writers_per_row / 8.0);
  const double a_store_share = static_cast<double>(t.bm) / (t.bm + t.bn) * shared_store_bytes;
  p.shared_conflict_ways = (a_store_share * store_ways + (p.shared_bytes - a_store_share)) / p.shared_bytes;
  p.blocks = grid_m * grid_n;
  p.threads_per_block = threads;
  p.dynamic_shared_bytes = static_cast<int>(gemm_shared_bytes(t));
  p.ilp = t.tm * t.tn;
  // Shared read instructions per k-step: float4 runs when the row strides keep them aligned.
  const int run_m = std::min(t.tm, 4), run_n = std::min(t.tn, 4);
  p.shared_loads_per_step = ((t.bm + t.pad) % run_m == 0 ? t.tm / run_m : t.tm) +
                            ((t.bn + t.pad) % run_n == 0 ? t.tn / run_n : t.tn);
  // The kernel takes the vector path only when the leading dimensions are multiples of VEC.
  p.vector_width = (K % t.vec == 0 && N % t.vec == 0) ? t.vec : 1;
  p.coalescing = 1.0;
  p.stages = t.stages;
  p.main_loop_iterations = slabs;
  p.l2_reuse = 1.0 + std::log2(static_cast<double>(std::min<int64_t>(t.group_m, grid_m))) / 2.0;
  p.tensor_cores = false;
  return p;
}

KernelInstance GemmF32Template::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                            const Workload& w) const {
  const GemmTiling t = tiling(space, c);
  const int64_t M = w.dim("M"), N = w.dim("N"), K = w.dim("K");
  KernelInstance k;
  k.profile = profile(space, c, w);
  k.source = gemm_f32_source(t);
  k.kernel_name = kGemmKernelName;
  k.launch.grid = {static_cast<unsigned>(k.profile.blocks), 1, 1};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  k.buffers = {{"A", M * K, DType::kF32, false, false},
               {"B", K * N, DType::kF32, false, false},
               {"C", M * N, DType::kF32, true, false}};
  k.scalar_args = {static_cast<int32_t>(M), static_cast<int32_t>(N), static_cast<int32_t>(K)};
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = gemm_f32_reference_source();
  k.reference_kernel_name = kGemmReferenceKernelName;
  k.reference_launch.grid = {static_cast<unsigned>((N + 15) / 16), static_cast<unsigned>((M + 15) / 16), 1};
  k.reference_launch.block = {16, 16, 1};
  k.tolerance = 1e-4;
  return k;
}

}  // namespace tuner::templates
