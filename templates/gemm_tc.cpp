#include "templates/gemm_tc.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <nlohmann/json.hpp>

namespace tuner::templates {

namespace {

std::vector<search::Knob> tc_knobs(bool reduced) {
  if (reduced) {
    return {
        {"BM", {64, 128}, "block tile rows"},
        {"BN", {64, 128}, "block tile columns"},
        {"BK", {32, 64}, "k-slab depth per pipeline stage"},
        {"WM", {32, 64}, "warp tile rows"},
        {"WN", {32, 64}, "warp tile columns"},
        {"STAGES", {2, 3, 4, 5}, "cp.async pipeline stages"},
        {"SPLIT_K", {1, 4}, "K splits reduced in fp32"},
        {"GROUP_M", {1, 8}, "block-rows rasterized together"},
        {"OUT_F32", {0, 1}, "1: C in fp32"},
    };
  }
  return {
      {"BM", {32, 64, 128, 256}, "block tile rows"},
      {"BN", {32, 64, 128, 256}, "block tile columns"},
      {"BK", {16, 32, 64}, "k-slab depth per pipeline stage"},
      {"WM", {16, 32, 64}, "warp tile rows"},
      {"WN", {16, 32, 64}, "warp tile columns"},
      {"STAGES", {2, 3, 4, 5}, "cp.async pipeline stages"},
      {"SPLIT_K", {1, 2, 4, 8}, "K splits reduced in fp32"},
      {"GROUP_M", {1, 8}, "block-rows rasterized together"},
      {"OUT_F32", {0, 1}, "1: C in fp32"},
  };
}

TcTiling tc_tiling_of(const search::ConfigView& v, DType d) {
  TcTiling t;
  t.dtype = d;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.bk = static_cast<int>(v["BK"]);
  t.wm = static_cast<int>(v["WM"]);
  t.wn = static_cast<int>(v["WN"]);
  t.stages = static_cast<int>(v["STAGES"]);
  t.split_k = static_cast<int>(v["SPLIT_K"]);
  t.group_m = static_cast<int>(v["GROUP_M"]);
  t.out_f32 = static_cast<int>(v["OUT_F32"]);
  return t;
}

std::vector<search::Constraint> tc_constraints(const GemmDims& d, const DeviceLimits& limits) {
  const int64_t k_tiles16 = (d.k + 15) / 16;
  const bool split_possible = d.batch * d.m * d.n <= kTcMaxSplitOutputElements;
  std::vector<search::Constraint> out = tc_warp_tile_constraints(limits);
  std::vector<search::Constraint> own = {
      {"shared memory <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
       [max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
         return tc_shared_bytes(tc_tiling_of(v, DType::kF16)) <= static_cast<size_t>(max);
       }},
      {"SPLIT_K == 1, or batch*M*N <= 2^21 and every split has a k-slab",
       [split_possible, k_tiles16](const search::ConfigView& v) {
         return v["SPLIT_K"] == 1 || (split_possible && v["SPLIT_K"] * v["BK"] / 16 <= k_tiles16);
       }},
  };
  out.insert(out.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  return out;
}

}  // namespace

double GemmTcTemplate::tolerance(DType d) {
  // The operands are rounded to f16/bf16 once on the host; kernel and reference read the same values,
  // so the difference is fp32 accumulation (~1e-6 relative for K up to 8192 with random signs) plus
  // the rounding of C: one f16 ulp is 2^-10 ~ 9.8e-4 of an element (2e-3 passes a one-ulp
  // disagreement), one bf16 ulp 2^-7 ~ 7.8e-3 (1e-2). An fp32 C keeps the same bounds.
  return d == DType::kBF16 ? 1e-2 : 2e-3;
}

std::string GemmTcTemplate::source_text() const { return gemm_tc_template_text(); }

std::optional<std::string> GemmTcTemplate::unsupported(const Workload& w) const {
  const GemmDims d = gemm_dims(w, batched_);
  if (auto why = tc_gemm_size_problem(name(), d, 32)) return why;
  if (d.batch * kTcMaxSplit > 65535) return "B=" + std::to_string(d.batch) + " is past the grid's z limit (B <= 8191)";
  return std::nullopt;
}

search::ConfigSpace GemmTcTemplate::space(const Workload& w, const DeviceLimits& limits) const {
  return search::ConfigSpace(tc_knobs(false), tc_constraints(gemm_dims(w, batched_), limits));
}

search::ConfigSpace GemmTcTemplate::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  const GemmDims d = gemm_dims(w, batched_);
  auto cs = tc_constraints(d, limits);
  auto knobs = tc_knobs(true);
  const bool split_possible = d.batch * d.m * d.n <= kTcMaxSplitOutputElements && d.k >= 4 * 64;
  if (!split_possible) knobs[6].values = {1};  // SPLIT_K
  // 16 configs that cover every value: square tiles, and the pipeline depth tied to the tile shape.
  cs.push_back({"reduced: BN == BM and WN == WM",
                [](const search::ConfigView& v) { return v["BN"] == v["BM"] && v["WN"] == v["WM"]; }});
  cs.push_back({"reduced: STAGES == 2 + (BM == 128) + (WM == 64) + (BK == 64)", [](const search::ConfigView& v) {
                  return v["STAGES"] == 2 + (v["BM"] == 128) + (v["WM"] == 64) + (v["BK"] == 64);
                }});
  cs.push_back({"reduced: GROUP_M == 1 iff OUT_F32 == 1 (iff SPLIT_K == 4 where split-K is possible)",
                [split_possible](const search::ConfigView& v) {
                  return (v["GROUP_M"] == 1) == (v["OUT_F32"] == 1) &&
                         (!split_possible || (v["SPLIT_K"] == 4) == (v["GROUP_M"] == 1));
                }});
  return search::ConfigSpace(std::move(knobs), std::move(cs));
}

TcTiling GemmTcTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return tc_tiling_of(search::ConfigView(space, c), d);
}

costmodel::KernelProfile GemmTcTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                 const Workload& w) const {
  const TcTiling t = tiling(space, c, w.dtype);
  const GemmDims d = gemm_dims(w, batched_);
  const int64_t grid_m = (d.m + t.bm - 1) / t.bm, grid_n = (d.n + t.bn - 1) / t.bn;
  const int64_t k_tiles = (d.k + t.bk - 1) / t.bk;
  const int64_t per_split = (k_tiles + t.split_k - 1) / t.split_k;
  const double tiles = static_cast<double>(d.batch * grid_m * grid_n);
  const double out_bytes = t.out_f32 ? 4.0 : 2.0;
  const double outputs = static_cast<double>(d.batch * d.m * d.n);
  const int warps = (t.bm / t.wm) * (t.bn / t.wn);

  costmodel::KernelProfile p;
  p.flops = 2.0 * static_cast<double>(d.batch) * static_cast<double>(d.m) * static_cast<double>(d.n) *
            static_cast<double>(d.k);
  p.dram_bytes = 2.0 * static_cast<double>(d.batch * (d.m * d.k + d.k * d.n)) + out_bytes * outputs;
  const double tile_bytes = static_cast<double>(t.bm * t.bk + t.bk * t.bn) * 2.0;
  // Every (tile, k-slab) once over all splits; split-K adds fp32 partials written and read back.
  const double split_bytes = t.split_k > 1 ? 2.0 * 4.0 * outputs * t.split_k : 0.0;
  p.global_bytes = tiles * static_cast<double>(k_tiles) * tile_bytes + out_bytes * outputs + split_bytes;
  const double stores = tiles * static_cast<double>(k_tiles) * tile_bytes;
  const double loads = tiles * static_cast<double>(k_tiles) * warps * static_cast<double>(t.wm + t.wn) * t.bk * 2.0;
  p.shared_bytes = stores + loads;
  p.shared_conflict_ways = 1;  // the XOR swizzle: conflict-free cp.async stores and ldmatrix reads
  p.blocks = d.batch * grid_m * grid_n * t.split_k;
  p.threads_per_block = tc_threads(t);
  p.dynamic_shared_bytes = static_cast<int>(tc_shared_bytes(t));
  p.ilp = (t.wm / 16) * (t.wn / 8);
  p.vector_width = (d.k % 8 == 0 && d.n % 8 == 0) ? 8 : 1;
  p.coalescing = 1.0;
  p.stages = t.stages;
  p.main_loop_iterations = per_split;
  p.l2_reuse = 1.0 + std::log2(static_cast<double>(std::min<int64_t>(t.group_m, grid_m))) / 2.0;
  p.tensor_cores = true;
  return p;
}

KernelInstance GemmTcTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                           const Workload& w) const {
  const TcTiling t = tiling(space, c, w.dtype);
  const GemmDims d = gemm_dims(w, batched_);
  KernelInstance k;
  k.profile = profile(space, c, w);
  k.source = gemm_tc_source(t);
  k.kernel_name = kTcKernelName;
  const int64_t tiles = ((d.m + t.bm - 1) / t.bm) * ((d.n + t.bn - 1) / t.bn);
  k.launch.grid = {static_cast<unsigned>(tiles), 1, static_cast<unsigned>(d.batch * t.split_k)};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  const DType out = t.out_f32 ? DType::kF32 : w.dtype;
  k.buffers = {{"A", d.batch * d.m * d.k, w.dtype, false, false},
               {"B", d.batch * d.k * d.n, w.dtype, false, false},
               {"C", d.batch * d.m * d.n, out, true, false},
               {"workspace", tc_workspace_floats(d.batch, d.m, d.n), DType::kF32, false, true}};
  k.scalar_args = {static_cast<int32_t>(d.m), static_cast<int32_t>(d.n), static_cast<int32_t>(d.k)};
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = gemm_tc_reference_source(w.dtype, t.out_f32 != 0);
  k.reference_kernel_name = kTcReferenceKernelName;
  k.reference_launch.grid = {static_cast<unsigned>((d.n + 15) / 16), static_cast<unsigned>((d.m + 15) / 16),
                             static_cast<unsigned>(d.batch)};
  k.reference_launch.block = {16, 16, 1};
  k.tolerance = tolerance(w.dtype);
  return k;
}

GemmDims gemm_dims(const Workload& w, bool batched) {
  return {batched ? w.dim("B") : 1, w.dim("M"), w.dim("N"), w.dim("K")};
}

std::optional<std::string> tc_gemm_size_problem(const std::string& name, const GemmDims& d, int min_tile) {
  constexpr double kMaxElements = 2147483647.0;  // M, N, K are int; per-batch products index with size_t
  for (auto [what, elems] : {std::pair<const char*, double>{"A (M*K)", double(d.m) * double(d.k)},
                             {"B (K*N)", double(d.k) * double(d.n)}, {"C (M*N)", double(d.m) * double(d.n)}})
    if (elems > kMaxElements)
      return std::string("matrix ") + what + " has " + std::to_string(static_cast<long long>(elems)) +
             " elements; " + name + " allows at most 2147483647";
  if (std::ceil(double(d.m) / min_tile) * std::ceil(double(d.n) / min_tile) > kMaxElements)
    return "M*N needs more than 2^31-1 blocks";
  if (d.m > 65535 * 16 || d.n > 65535 * 16) return "M or N is past the reference kernel's grid (at most 1048560)";
  return std::nullopt;
}

std::vector<search::Constraint> tc_warp_tile_constraints(const DeviceLimits& limits) {
  return {
      {"BM % WM == 0 and BN % WN == 0",
       [](const search::ConfigView& v) { return v["BM"] % v["WM"] == 0 && v["BN"] % v["WN"] == 0; }},
      // Past 256 threads the register cap falls below 128 per thread and the fragments spill.
      {"64 <= threads <= min(256, " + std::to_string(limits.max_threads_per_block) + ")",
       [max = std::min(256, limits.max_threads_per_block)](const search::ConfigView& v) {
         const int64_t threads = 32 * (v["BM"] / v["WM"]) * (v["BN"] / v["WN"]);
         return threads >= 64 && threads <= max;
       }},
      {"A and B tiles split into 16-byte chunks evenly over threads", [](const search::ConfigView& v) {
         const int64_t threads = 32 * (v["BM"] / v["WM"]) * (v["BN"] / v["WN"]);
         return (v["BM"] * v["BK"] / 8) % threads == 0 && (v["BK"] * v["BN"] / 8) % threads == 0;
       }},
  };
}

DType gemm_output_dtype(const Workload& w, const std::string& config_json) {
  try {
    const auto j = nlohmann::json::parse(config_json);
    if (j.is_object() && j.value("OUT_F32", 0) == 1) return DType::kF32;
  } catch (const nlohmann::json::exception&) {  // not a config: the workload's, as instantiate cannot say
  }
  return w.dtype;
}

DType GemmTcTemplate::output_dtype(const Workload& w, const std::string& config_json) const {
  return gemm_output_dtype(w, config_json);
}

}  // namespace tuner::templates
