#include "templates/gemm_wgmma.h"

#include <algorithm>
#include <cmath>

#include "templates/gemm_tc.h"

namespace tuner::templates {

namespace {

std::vector<search::Knob> wgmma_knobs(bool reduced, int64_t sm_count) {
  const search::Knob split{"SPLIT_K", reduced ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{1, 2, 4, 8},
                           "K splits reduced in fp32 (the CTA of the last split to finish sums them)"};
  const search::Knob persistent{"PERSISTENT", {0, std::max<int64_t>(sm_count, 1)},
                                "0: a CTA per work unit; else the CTAs of a persistent grid (the SM count)"};
  // Added after the first recordings: 0 (absent from their configs) is the kernel they measured.
  const search::Knob epilogue{"EPILOGUE", {0, 1},
                              "0: accumulators stored to C from registers; 1: staged through shared memory, "
                              "stored as 16-byte row vectors (whole sectors)",
                              0};
  // 4 (for BN <= 64, not persistent) was offered from stop 28 to stop 34: on an H100 the best 4-CTA config of
  // five whole-space recordings was 1.33-2.4x the best (docs/benchmarks.md, "Stop 34").
  const search::Knob cluster{"CLUSTER", {1, 2},
                             "CTAs per thread-block cluster along N: adjacent block columns share A's rows, each "
                             "CTA loading 1/CLUSTER of them and multicasting to all",
                             1};
  // Added at stop 32: 0 (absent from earlier records) is the cooperative kernel they measured.
  const search::Knob pingpong{"PINGPONG", {0, 1},
                              "1: the two consumers run alternate units whole (one's epilogue under the other's "
                              "products); persistent grids without split-K",
                              0};
  // 4 was offered at stop 32 and dropped at stop 34: on an H100 its best decode config was 1.43-2.1x each
  // grid's best (docs/benchmarks.md, "Stop 34").
  const search::Knob cluster_k{"CLUSTER_K", {1, 2},
                               "CTAs per cluster along K: one tile, its k-tiles split among them, rank 0 summing the "
                               "others' accumulators from distributed shared memory (split-K without partials; a CTA "
                               "per unit, offered where the tiles leave SMs idle)",
                               1};
  if (reduced) {
    return {
        {"BM", {64, 128, 256}, "block tile rows"},
        {"BN", {64, 128, 256}, "block tile columns (the wgmma n)"},
        {"CONSUMERS", {1, 2}, "consumer warpgroups sharing the block rows"},
        {"STAGES", {2, 3, 4, 12}, "shared-buffer ring depth"},
        {"GROUP_M", {1, 8}, "block-rows rasterized together"},
        {"OUT_F32", {0, 1}, "1: C in fp32"},
        split,
        persistent,
        epilogue,
        {"CLUSTER", {1, 2}, cluster.doc, 1},
        pingpong,
        {"CLUSTER_K", {1, 2}, cluster_k.doc, 1},
    };
  }
  return {
      {"BM", {64, 128, 192, 256}, "block tile rows"},
      {"BN", {32, 64, 128, 192, 256}, "block tile columns (the wgmma n; 32: one 64-byte-swizzled B box)"},
      {"CONSUMERS", {1, 2}, "consumer warpgroups sharing the block rows"},
      {"STAGES", {2, 3, 4, 5, 6, 8, 10, 12, 16}, "shared-buffer ring depth (deep rings keep small tiles' loads in flight)"},
      {"GROUP_M", {1, 8}, "block-rows rasterized together"},
      {"OUT_F32", {0, 1}, "1: C in fp32"},
      split,
      persistent,
      epilogue,
      cluster,
      pingpong,
      cluster_k,
  };
}

WgmmaTiling wgmma_tiling_of(const search::ConfigView& v, DType d) {
  WgmmaTiling t;
  t.dtype = d;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.consumers = static_cast<int>(v["CONSUMERS"]);
  t.stages = static_cast<int>(v["STAGES"]);
  t.group_m = static_cast<int>(v["GROUP_M"]);
  t.out_f32 = static_cast<int>(v["OUT_F32"]);
  t.split_k = static_cast<int>(v["SPLIT_K"]);
  t.persistent_ctas = static_cast<int>(v["PERSISTENT"]);
  t.epilogue = static_cast<int>(v["EPILOGUE"]);
  t.cluster = static_cast<int>(v["CLUSTER"]);
  t.pingpong = static_cast<int>(v["PINGPONG"]);
  t.cluster_k = static_cast<int>(v["CLUSTER_K"]);
  return t;
}

int64_t gemm_rows_per_consumer(const search::ConfigView& v) { return wgmma_rows_per_consumer(wgmma_tiling_of(v, DType::kF16)); }

/// Whether split-K may be offered at all: the workspace holds partials for batch*M*N <= 2^21 outputs.
bool wgmma_split_possible(const GemmDims& d) { return d.batch * d.m * d.n <= kTcMaxSplitOutputElements; }

/// Whether the tiles of a BM x BN tiling leave SMs idle (cluster-K is offered only then).
bool wgmma_tiles_leave_sms_idle(const GemmDims& d, int64_t bm, int64_t bn, int64_t sm_count) {
  return d.batch * ((d.m + bm - 1) / bm) * ((d.n + bn - 1) / bn) < sm_count;
}

std::vector<search::Constraint> wgmma_constraints(const GemmDims& d, const DeviceLimits& limits) {
  const int64_t k_tiles = (d.k + kWgmmaBk - 1) / kWgmmaBk;
  const bool split_possible = wgmma_split_possible(d);
  return {
      {"CLUSTER_K == 1, or CLUSTER == 1, SPLIT_K == 1, PERSISTENT == 0, PINGPONG == 0, CLUSTER_K <= ceil(K/64) and "
       "batch * tiles < the SM count (" + std::to_string(limits.sm_count) + ")",
       [d, k_tiles, sms = limits.sm_count](const search::ConfigView& v) {
         return v["CLUSTER_K"] == 1 ||
                (v["CLUSTER"] == 1 && v["SPLIT_K"] == 1 && v["PERSISTENT"] == 0 && v["PINGPONG"] == 0 &&
                 v["CLUSTER_K"] <= k_tiles && wgmma_tiles_leave_sms_idle(d, v["BM"], v["BN"], sms));
       }},
      {"SPLIT_K == 1, or batch*M*N <= 2^21 (the workspace's partials) and SPLIT_K <= ceil(K/64) (no empty split)",
       [split_possible, k_tiles](const search::ConfigView& v) {
         return v["SPLIT_K"] == 1 || (split_possible && v["SPLIT_K"] <= k_tiles);
       }},
      // A 32-column tile is for short M (decode: enough CTAs without split-K); with a tall one A's box is
      // most of every stage and B's columns are read by 4x the CTAs, which wider tiles never lose to.
      {"BN >= 64, or BM <= 128 (32-column tiles for short M)",
       [](const search::ConfigView& v) { return v["BN"] >= 64 || v["BM"] <= 128; }},
      {"PINGPONG == 0 or (CONSUMERS == 2, PERSISTENT != 0 and SPLIT_K == 1)",
       [](const search::ConfigView& v) {
         return v["PINGPONG"] == 0 || (v["CONSUMERS"] == 2 && v["PERSISTENT"] != 0 && v["SPLIT_K"] == 1);
       }},
      {"rows per consumer (BM, or BM / CONSUMERS without PINGPONG) a multiple of 64 (whole m64 wgmma tiles)",
       [](const search::ConfigView& v) { return v["BM"] % v["CONSUMERS"] == 0 && gemm_rows_per_consumer(v) % 64 == 0; }},
      // 128 fp32 accumulators per consumer thread leave room for addresses within 232 registers.
      {"accumulators per consumer thread (rows per consumer / 64) * BN / 2 <= 128",
       [](const search::ConfigView& v) { return (gemm_rows_per_consumer(v) / 64) * v["BN"] / 2 <= 128; }},
      {"shared memory (dynamic + static) <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
       [max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
         const WgmmaTiling t = wgmma_tiling_of(v, DType::kF16);
         return wgmma_shared_bytes(t) + wgmma_static_shared_bytes(t) <= static_cast<size_t>(max);
       }},
      // A cluster's CTAs take adjacent block columns: with fewer columns than CTAs some would only load.
      {"CLUSTER <= ceil(N / BN) (every CTA of a cluster has a block column)",
       [n = d.n](const search::ConfigView& v) { return v["CLUSTER"] <= (n + v["BN"] - 1) / v["BN"]; }},
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

search::ConfigSpace GemmWgmmaTemplate::space(const Workload& w, const DeviceLimits& limits) const {
  return search::ConfigSpace(wgmma_knobs(false, limits.sm_count), wgmma_constraints(gemm_dims(w, batched_), limits));
}

search::ConfigSpace GemmWgmmaTemplate::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  const GemmDims d = gemm_dims(w, batched_);
  auto cs = wgmma_constraints(d, limits);
  auto knobs = wgmma_knobs(true, limits.sm_count);
  const bool split_possible = wgmma_split_possible(d) && d.k >= 4 * kWgmmaBk;
  if (!split_possible)
    for (auto& k : knobs)
      if (k.name == "SPLIT_K") k.values = {1};
  // 22 configs that cover every value: the ring depth tied to the tile size, GROUP_M to OUT_F32, split-K
  // (where the workload allows it) to OUT_F32 too, the persistent grid to BN == 128 and 2-CTA clusters
  // to the persistent grid where N has two block columns (so none adds configs: the reduced space
  // compiles as many sources as before).
  cs.push_back({"reduced: STAGES == 2 + (BM+BN <= 320) + (BM+BN <= 256), and 12 for 64x64 tiles",
                [](const search::ConfigView& v) {
                  const int64_t sum = v["BM"] + v["BN"];
                  return v["STAGES"] == (sum <= 128 ? 12 : 2 + (sum <= 320) + (sum <= 256));
                }});
  cs.push_back({"reduced: EPILOGUE == 1 iff BM >= BN",
                [](const search::ConfigView& v) { return (v["EPILOGUE"] == 1) == (v["BM"] >= v["BN"]); }});
  cs.push_back({"reduced: GROUP_M == 1 iff OUT_F32 == 1 (iff SPLIT_K == 4 where split-K is possible)",
                [split_possible](const search::ConfigView& v) {
                  return (v["GROUP_M"] == 1) == (v["OUT_F32"] == 1) &&
                         (!split_possible || (v["SPLIT_K"] == 4) == (v["OUT_F32"] == 1));
                }});
  cs.push_back({"reduced: PERSISTENT != 0 iff BN == 128",
                [](const search::ConfigView& v) { return (v["PERSISTENT"] != 0) == (v["BN"] == 128); }});
  // Pingpong takes the persistent two-consumer 128 x 128 tile without split-K (so the count stays).
  cs.push_back({"reduced: PINGPONG == 1 iff CONSUMERS == 2, PERSISTENT != 0, BM == 128 and SPLIT_K == 1",
                [](const search::ConfigView& v) {
                  return (v["PINGPONG"] == 1) ==
                         (v["CONSUMERS"] == 2 && v["PERSISTENT"] != 0 && v["BM"] == 128 && v["SPLIT_K"] == 1);
                }});
  // Cluster-K takes the 64 x 256 tile without split-K (a CTA per unit in the reduced space), where the workload
  // offers it; the 64 x 64 decode tiles keep their configs without it.
  const bool cluster_k_offered = wgmma_tiles_leave_sms_idle(d, 64, 256, limits.sm_count) && d.k > kWgmmaBk;
  if (!cluster_k_offered)
    for (auto& k : knobs)
      if (k.name == "CLUSTER_K") k.values = {1};
  cs.push_back({"reduced: CLUSTER_K == 2 iff BM == 64, BN == 256 and SPLIT_K == 1 (where cluster-K is offered)",
                [cluster_k_offered](const search::ConfigView& v) {
                  return (v["CLUSTER_K"] == 2) ==
                         (cluster_k_offered && v["BM"] == 64 && v["BN"] == 256 && v["SPLIT_K"] == 1);
                }});
  cs.push_back({"reduced: CLUSTER == 2 iff PERSISTENT != 0 and N has two block columns",
                [n = d.n](const search::ConfigView& v) {
                  return (v["CLUSTER"] == 2) == (v["PERSISTENT"] != 0 && n > v["BN"]);
                }});
  return search::ConfigSpace(std::move(knobs), std::move(cs));
}

WgmmaTiling GemmWgmmaTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return wgmma_tiling_of(search::ConfigView(space, c), d);
}

costmodel::KernelProfile GemmWgmmaTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                    const Workload& w) const {
  const WgmmaTiling t = tiling(space, c, w.dtype);
  const GemmDims d = gemm_dims(w, batched_);
  const int64_t grid_m = (d.m + t.bm - 1) / t.bm, grid_n = (d.n + t.bn - 1) / t.bn;
  const int64_t k_tiles = (d.k + kWgmmaBk - 1) / kWgmmaBk;
  const int splits = t.split_k * std::max(t.cluster_k, 1);           // split-K or cluster-K
  const int64_t per_split = (k_tiles + splits - 1) / splits;         // the longest split's k-tiles
  const int64_t cluster_cols = (grid_n + t.cluster - 1) / t.cluster * t.cluster;  // idle CTAs of a partial cluster
  const double tiles = static_cast<double>(d.batch * grid_m * grid_n);
  const double out_bytes = t.out_f32 ? 4.0 : 2.0;
  const double outputs = static_cast<double>(d.batch * d.m * d.n);
  // Split-K: every split writes its fp32 partial and the last one reads them all back.
  const double split_bytes = t.split_k > 1 ? 2.0 * 4.0 * outputs * t.split_k : 0.0;

  costmodel::KernelProfile p;
  p.flops = 2.0 * static_cast<double>(d.batch) * static_cast<double>(d.m) * static_cast<double>(d.n) *
            static_cast<double>(d.k);
  p.dram_bytes = 2.0 * static_cast<double>(d.batch * (d.m * d.k + d.k * d.n)) + out_bytes * outputs;
  // TMA fetches whole boxes: every (tile, k-tile) once, out-of-bounds parts included; A once per
  // cluster (each CTA fetches its share and multicasts it).
  const double tile_bytes = static_cast<double>(t.bm + t.bn) * kWgmmaBk * 2.0;
  const double fetched = static_cast<double>(t.bm) / t.cluster * static_cast<double>(cluster_cols) +
                         static_cast<double>(t.bn) * static_cast<double>(grid_n);
  p.global_bytes = static_cast<double>(d.batch * grid_m) * static_cast<double>(k_tiles) * fetched * kWgmmaBk * 2.0 +
                   out_bytes * outputs + split_bytes;
  // Shared traffic: the TMA writes, then each consumer's wgmma reads its A rows and all of B.
  const double reads = static_cast<double>(t.bm + (t.pingpong ? 1 : t.consumers) * t.bn) * kWgmmaBk * 2.0;
  p.shared_bytes = tiles * static_cast<double>(k_tiles) * (tile_bytes + reads);
  if (t.epilogue) p.shared_bytes += 2.0 * 4.0 * outputs * t.split_k;  // each output staged: written, read back
  p.shared_conflict_ways = 1;  // 128-byte swizzle on both sides
  // Work units (tile, split); a persistent grid runs them in rounds of its CTAs just as the hardware
  // would run one CTA per unit, but fills each unit's ring while the previous unit's epilogue runs.
  p.blocks = d.batch * grid_m * cluster_cols * splits;
  p.persistent = t.persistent_ctas > 0;
  p.threads_per_block = wgmma_threads(t);
  p.dynamic_shared_bytes = static_cast<int>(wgmma_shared_bytes(t));
  p.ilp = (wgmma_rows_per_consumer(t) / 64) * (t.bn / 8);  // m16n8 tiles in flight per consumer warp per k16
  p.vector_width = 8;
  p.coalescing = 1.0;
  p.stages = t.stages;
  p.main_loop_iterations = per_split;
  p.l2_reuse = 1.0 + std::log2(static_cast<double>(std::min<int64_t>(t.group_m, grid_m))) / 2.0;
  p.tensor_cores = true;
  p.async_mma = true;
  p.gemm.batch = d.batch;
  p.gemm.m = d.m;
  p.gemm.n = d.n;
  p.gemm.k = d.k;
  p.gemm.bm = t.bm;
  p.gemm.bn = t.bn;
  p.gemm.bk = kWgmmaBk;
  p.gemm.group_m = t.group_m;
  p.gemm.split_k = splits;
  p.gemm.split_in_cluster = t.cluster_k > 1;  // the partials go through distributed shared memory
  p.gemm.elem_bytes = 2;
  p.gemm.out_bytes = t.out_f32 ? 4 : 2;
  p.gemm.store_segment = t.epilogue ? 32 : 8;
  p.gemm.cluster = t.cluster;
  p.gemm.epilogue_overlapped = t.pingpong != 0;
  // The whole grid's CTAs when persistent (its units span the batch).
  p.gemm.persistent_ctas = t.persistent_ctas > 0 ? static_cast<int>(wgmma_grid_x(t, d.m, d.n, d.k, d.batch)) : 0;
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
  // With CLUSTER > 1 the kernel carries __cluster_dims__: a plain launch forms the clusters, and the
  // grid's x is a multiple of them.
  k.launch.grid = {static_cast<unsigned>(wgmma_grid_x(t, d.m, d.n, d.k, d.batch)), 1,
                   static_cast<unsigned>(wgmma_grid_z(t, d.batch))};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  const DType out = t.out_f32 ? DType::kF32 : w.dtype;
  k.buffers = {{"A", d.batch * d.m * d.k, w.dtype, false, false},
               {"B", d.batch * d.k * d.n, w.dtype, false, false},
               {"C", d.batch * d.m * d.n, out, true, false},
               {"workspace", tc_workspace_floats(d.batch, d.m, d.n), DType::kF32, false, true}};
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  // A as {K, M, batch}, box {64, BM / CLUSTER, 1}; B as {N, K, batch}, box {64, 64, 1} (BN 32: {32, 64, 1}, 64-byte
  // swizzle); 2-byte elements.
  const WgmmaSmemLayout l = wgmma_smem_layout(t.bn);
  k.tensor_maps = {{0, {u(d.k), u(d.m), u(d.batch)}, {u(d.k * 2), u(d.m * d.k * 2)},
                    {static_cast<uint32_t>(kWgmmaBk), static_cast<uint32_t>(t.bm / t.cluster), 1}, 128, {}},
                   {1, {u(d.n), u(d.k), u(d.batch)}, {u(d.n * 2), u(d.k * d.n * 2)},
                    {static_cast<uint32_t>(l.b_box_cols), static_cast<uint32_t>(kWgmmaBk), 1}, l.b_swizzle, {}}};
  k.scalar_args = {static_cast<int32_t>(d.m), static_cast<int32_t>(d.n), static_cast<int32_t>(d.k),
                   static_cast<int32_t>(d.batch)};
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

DType GemmWgmmaTemplate::output_dtype(const Workload& w, const std::string& config_json) const {
  return gemm_output_dtype(w, config_json);
}

}  // namespace tuner::templates
