#include "templates/gemm_wgmma.h"

#include <algorithm>
#include <cmath>

#include "templates/gemm_tc.h"

namespace tuner::templates {

namespace {

std::vector<search::Knob> wgmma_knobs(bool reduced) {
  if (reduced) {
    return {
        {"BM", {64, 128, 256}, "block tile rows"},
        {"BN", {64, 128, 256}, "block tile columns (the wgmma n)"},
        {"CONSUMERS", {1, 2}, "consumer warpgroups sharing the block rows"},
        {"STAGES", {2, 3, 4, 5}, "shared-buffer ring depth"},
        {"GROUP_M", {1, 8}, "block-rows rasterized together"},
        {"OUT_F32", {0, 1}, "1: C in fp32"},
    };
  }
  return {
      {"BM", {64, 128, 192, 256}, "block tile rows"},
      {"BN", {64, 128, 192, 256}, "block tile columns (the wgmma n)"},
      {"CONSUMERS", {1, 2}, "consumer warpgroups sharing the block rows"},
      {"STAGES", {2, 3, 4, 5, 6}, "shared-buffer ring depth"},
      {"GROUP_M", {1, 8}, "block-rows rasterized together"},
      {"OUT_F32", {0, 1}, "1: C in fp32"},
  };
}

WgmmaTiling tiling_of(const search::ConfigView& v, DType d) {
  WgmmaTiling t;
  t.dtype = d;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.consumers = static_cast<int>(v["CONSUMERS"]);
  t.stages = static_cast<int>(v["STAGES"]);
  t.group_m = static_cast<int>(v["GROUP_M"]);
  t.out_f32 = static_cast<int>(v["OUT_F32"]);
  return t;
}

std::vector<search::Constraint> wgmma_constraints(const DeviceLimits& limits) {
  return {
      {"BM / CONSUMERS is a multiple of 64 (whole m64 wgmma tiles per consumer)",
       [](const search::ConfigView& v) { return (v["BM"] / v["CONSUMERS"]) % 64 == 0 && v["BM"] % v["CONSUMERS"] == 0; }},
      // 128 fp32 accumulators per consumer thread leave room for addresses within 232 registers.
      {"accumulators per consumer thread (BM / CONSUMERS / 64) * BN / 2 <= 128",
       [](const search::ConfigView& v) { return (v["BM"] / v["CONSUMERS"] / 64) * v["BN"] / 2 <= 128; }},
      {"shared memory <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
       [max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
         return wgmma_shared_bytes(tiling_of(v, DType::kF16)) <= static_cast<size_t>(max);
       }},
      {"threads 128 * (1 + CONSUMERS) <= " + std::to_string(limits.max_threads_per_block),
       [max = limits.max_threads_per_block](const search::ConfigView& v) { return 128 * (1 + v["CONSUMERS"]) <= max; }},
  };
}

}  // namespace

std::string GemmWgmmaTemplate::source_text() const { return gemm_wgmma_template_text(); }

std::optional<std::string> GemmWgmmaTemplate::unsupported(const Workload& w) const {
  const GemmDims d = gemm_dims(w, batched_);
  if (d.n % 8 != 0 || d.k % 8 != 0)
    return name() + " needs N and K to be multiples of 8 (TMA row strides are multiples of 16 bytes), got N=" +
           std::to_string(d.n) + ", K=" + std::to_string(d.k) + "; " + fallback() + " takes any shape";
  if (auto why = tc_gemm_size_problem(name(), d, 64)) return why;  // TMA coordinates are int32 too
  if (d.batch > 65535) return "B=" + std::to_string(d.batch) + " is past the grid's z limit (B <= 65535)";
  return std::nullopt;
}

std::optional<std::string> GemmWgmmaTemplate::unsupported_on(const DeviceLimits& limits) const {
  if (limits.arch != "sm_90")
    return name() + " runs only on sm_90 (Hopper: wgmma, TMA, setmaxnreg), not " + limits.arch +
           "; " + fallback() + " runs on sm_80 and later";
  return std::nullopt;
}

search::ConfigSpace GemmWgmmaTemplate::space(const Workload&, const DeviceLimits& limits) const {
  return search::ConfigSpace(wgmma_knobs(false), wgmma_constraints(limits));
}

search::ConfigSpace GemmWgmmaTemplate::reduced_space(const Workload&, const DeviceLimits& limits) const {
  auto cs = wgmma_constraints(limits);
  // 22 configs that cover every value: the ring depth tied to the tile size, GROUP_M to OUT_F32.
  cs.push_back({"reduced: STAGES == 2 + (BM+BN <= 320) + (BM+BN <= 256) + (BM+BN <= 128)",
                [](const search::ConfigView& v) {
                  const int64_t sum = v["BM"] + v["BN"];
                  return v["STAGES"] == 2 + (sum <= 320) + (sum <= 256) + (sum <= 128);
                }});
  cs.push_back({"reduced: GROUP_M == 1 iff OUT_F32 == 1",
                [](const search::ConfigView& v) { return (v["GROUP_M"] == 1) == (v["OUT_F32"] == 1); }});
  return search::ConfigSpace(wgmma_knobs(true), std::move(cs));
}

WgmmaTiling GemmWgmmaTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return tiling_of(search::ConfigView(space, c), d);
}

costmodel::KernelProfile GemmWgmmaTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                    const Workload& w) const {
  const WgmmaTiling t = tiling(space, c, w.dtype);
  const GemmDims d = gemm_dims(w, batched_);
  const int64_t grid_m = (d.m + t.bm - 1) / t.bm, grid_n = (d.n + t.bn - 1) / t.bn;
  const int64_t k_tiles = (d.k + kWgmmaBk - 1) / kWgmmaBk;
  const double tiles = static_cast<double>(d.batch * grid_m * grid_n);
  const double out_bytes = t.out_f32 ? 4.0 : 2.0;
  const double outputs = static_cast<double>(d.batch * d.m * d.n);

  costmodel::KernelProfile p;
  p.flops = 2.0 * static_cast<double>(d.batch) * static_cast<double>(d.m) * static_cast<double>(d.n) *
            static_cast<double>(d.k);
  p.dram_bytes = 2.0 * static_cast<double>(d.batch * (d.m * d.k + d.k * d.n)) + out_bytes * outputs;
  // TMA fetches whole boxes: every (tile, k-tile) once, out-of-bounds parts included.
  const double tile_bytes = static_cast<double>(t.bm + t.bn) * kWgmmaBk * 2.0;
  p.global_bytes = tiles * static_cast<double>(k_tiles) * tile_bytes + out_bytes * outputs;
  // Shared traffic: the TMA writes, then each consumer's wgmma reads its A rows and all of B.
  const double reads = static_cast<double>(t.bm + t.consumers * t.bn) * kWgmmaBk * 2.0;
  p.shared_bytes = tiles * static_cast<double>(k_tiles) * (tile_bytes + reads);
  p.shared_conflict_ways = 1;  // 128-byte swizzle on both sides
  p.blocks = d.batch * grid_m * grid_n;
  p.threads_per_block = wgmma_threads(t);
  p.dynamic_shared_bytes = static_cast<int>(wgmma_shared_bytes(t));
  p.ilp = (t.bm / t.consumers / 64) * (t.bn / 8);  // m16n8 tiles in flight per consumer warp per k16
  p.vector_width = 8;
  p.coalescing = 1.0;
  p.stages = t.stages;
  p.main_loop_iterations = k_tiles;
  p.l2_reuse = 1.0 + std::log2(static_cast<double>(std::min<int64_t>(t.group_m, grid_m))) / 2.0;
  p.tensor_cores = true;
  p.async_mma = true;
  return p;
}

KernelInstance GemmWgmmaTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                              const Workload& w) const {
  const WgmmaTiling t = tiling(space, c, w.dtype);
  const GemmDims d = gemm_dims(w, batched_);
  KernelInstance k;
  k.profile = profile(space, c, w);
  k.source = gemm_wgmma_source(t);
  k.kernel_name = kWgmmaKernelName;
  k.arch_specific = true;
  const int64_t tiles = ((d.m + t.bm - 1) / t.bm) * ((d.n + t.bn - 1) / t.bn);
  k.launch.grid = {static_cast<unsigned>(tiles), 1, static_cast<unsigned>(d.batch)};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  const DType out = t.out_f32 ? DType::kF32 : w.dtype;
  k.buffers = {{"A", d.batch * d.m * d.k, w.dtype, false, false},
               {"B", d.batch * d.k * d.n, w.dtype, false, false},
               {"C", d.batch * d.m * d.n, out, true, false}};
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  // A as {K, M, batch}, box {64, BM, 1}; B as {N, K, batch}, box {64, 64, 1}; 2-byte elements.
  k.tensor_maps = {{0, {u(d.k), u(d.m), u(d.batch)}, {u(d.k * 2), u(d.m * d.k * 2)},
                    {static_cast<uint32_t>(kWgmmaBk), static_cast<uint32_t>(t.bm), 1}, 128},
                   {1, {u(d.n), u(d.k), u(d.batch)}, {u(d.n * 2), u(d.k * d.n * 2)},
                    {static_cast<uint32_t>(kWgmmaBoxCols), static_cast<uint32_t>(kWgmmaBk), 1}, 128}};
  k.scalar_args = {static_cast<int32_t>(d.m), static_cast<int32_t>(d.n), static_cast<int32_t>(d.k)};
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = gemm_wgmma_reference_source(w.dtype, t.out_f32 != 0);
  k.reference_kernel_name = kTcReferenceKernelName;
  k.reference_launch.grid = {static_cast<unsigned>((d.n + 15) / 16), static_cast<unsigned>((d.m + 15) / 16),
                             static_cast<unsigned>(d.batch)};
  k.reference_launch.block = {16, 16, 1};
  k.tolerance = GemmTcTemplate::tolerance(w.dtype);
  return k;
}

}  // namespace tuner::templates
