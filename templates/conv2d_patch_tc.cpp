#include "templates/conv2d_patch_tc.h"

#include <algorithm>

#include "templates/conv2d.h"
#include "templates/kernel_files.h"
#include "templates/kernels/conv_patch_layout.cuh"

namespace tuner::templates {

namespace {

std::vector<search::Knob> conv_patch_knobs(bool reduced, int64_t sm_count) {
  const int64_t sm = std::max<int64_t>(sm_count, 1);
  if (reduced) {
    return {
        {"TP", {4, 8}, "output rows of the pixel tile"},
        {"TQ", {8, 16}, "output columns of the pixel tile"},
        {"BN", {32, 64}, "filters per block"},
        {"WM", {32, 64}, "warp tile rows (pixels)"},
        {"WN", {16, 32}, "warp tile columns (filters)"},
        {"PERSISTENT", {0, 4 * sm}, "0: a block per pixel tile; else the blocks in all, looping over the tiles"},
        {"PREFETCH", {0, 1}, "1: the next tile's patch loaded into registers during this tile's products", 0},
        {"MIN_BLOCKS", {1}, "blocks per SM the registers must allow (__launch_bounds__)", 1},
    };
  }
  return {
      {"TP", {1, 2, 4, 8, 16}, "output rows of the pixel tile"},
      {"TQ", {8, 16, 32}, "output columns of the pixel tile"},
      {"BN", {16, 32, 64}, "filters per block"},
      {"WM", {16, 32, 64}, "warp tile rows (pixels)"},
      {"WN", {16, 32}, "warp tile columns (filters)"},
      {"PERSISTENT", {0, sm, 2 * sm, 3 * sm, 4 * sm, 8 * sm},
       "0: a block per pixel tile; else the blocks in all, looping over the tiles"},
      // Added after the first GPU run: 0 and 1 (absent from its records) are the kernel it measured.
      {"PREFETCH", {0, 1}, "1: the next tile's patch loaded into registers during this tile's products", 0},
      {"MIN_BLOCKS", {1, 2, 3}, "blocks per SM the registers must allow (__launch_bounds__)", 1},
  };
}

ConvPatchTiling conv_patch_tiling_of(const search::ConfigView& v, DType d) {
  ConvPatchTiling t;
  t.dtype = d;
  t.tp = static_cast<int>(v["TP"]);
  t.tq = static_cast<int>(v["TQ"]);
  t.bn = static_cast<int>(v["BN"]);
  t.wm = static_cast<int>(v["WM"]);
  t.wn = static_cast<int>(v["WN"]);
  t.persistent_ctas = static_cast<int>(v["PERSISTENT"]);
  t.prefetch = v["PREFETCH"] != 0;
  t.min_blocks = static_cast<int>(v["MIN_BLOCKS"]);
  return t;
}

ConvPatchGeom geom_of(const ConvPatchTiling& t, const ConvDims& d) {
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  return conv_patch_geom(i(d.n), i(d.h), i(d.w), i(d.c), i(d.k), i(d.r), i(d.s), i(d.stride), i(d.pad), i(d.dilation),
                         i(d.p), i(d.q), t.tp, t.tq, t.bn);
}

std::vector<search::Constraint> conv_patch_constraints(const Workload& w, const DeviceLimits& limits) {
  const ConvDims d = conv_dims(w);
  return {
      {"TP * TQ is 32..256 pixels and a multiple of WM; BN a multiple of WN",
       [](const search::ConfigView& v) {
         const int64_t bm = v["TP"] * v["TQ"];
         return bm >= 32 && bm <= 256 && bm % v["WM"] == 0 && v["BN"] % v["WN"] == 0;
       }},
      {"threads 32 * (TP * TQ / WM) * (BN / WN) <= 512",
       [](const search::ConfigView& v) { return 32 * (v["TP"] * v["TQ"] / v["WM"]) * (v["BN"] / v["WN"]) <= 512; }},
      // MIN_BLOCKS > 1 caps the registers so that many blocks fit an SM (2,048 threads, 64 Ki registers): only
      // where their shared memory fits too (228 KiB per SM on sm_80 and sm_90), and never below 64 registers.
      {"MIN_BLOCKS == 1 or (MIN_BLOCKS blocks fit an SM's threads and shared memory, at >= 64 registers a thread)",
       [w](const search::ConfigView& v) {
         if (v["MIN_BLOCKS"] == 1) return true;
         const ConvPatchTiling t = conv_patch_tiling_of(v, w.dtype);
         const int64_t threads = Conv2dPatchTcTemplate::threads(t) * v["MIN_BLOCKS"];
         return threads <= 1024 &&
                (Conv2dPatchTcTemplate::shared_bytes(t, w) + 1024) * v["MIN_BLOCKS"] <= 228 * 1024;
       }},
      // A tile more than twice the output's width or height (or a filter tile more than twice K) computes
      // mostly pixels that are never stored; the smallest (4 x 8 pixels x 16 filters) is always allowed.
      {"TQ == 8 or TQ < 2 * Q; TP <= 4 or TP < 2 * P; BN == 16 or BN < 2 * K",
       [p = d.p, q = d.q, k = d.k](const search::ConfigView& v) {
         return (v["TQ"] == 8 || v["TQ"] < 2 * q) && (v["TP"] <= 4 || v["TP"] < 2 * p) && (v["BN"] == 16 || v["BN"] < 2 * k);
       }},
      // A block that runs one tile has no next tile to prefetch.
      {"PREFETCH == 0 or (PERSISTENT != 0 and the patch fits " + std::to_string(Conv2dPatchTcTemplate::kMaxPatchRegs) +
           " registers per thread)",
       [w](const search::ConfigView& v) {
         const ConvPatchTiling t = conv_patch_tiling_of(v, w.dtype);
         return !t.prefetch ||
                (t.persistent_ctas != 0 && Conv2dPatchTcTemplate::patch_regs(t, w) <= Conv2dPatchTcTemplate::kMaxPatchRegs);
       }},
      {"shared memory <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
       [w, max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
         return Conv2dPatchTcTemplate::shared_bytes(conv_patch_tiling_of(v, w.dtype), w) <= max;
       }},
  };
}

}  // namespace

std::string Conv2dPatchTcTemplate::source_text() const {
  return kernel_files_text({"conv2d_patch_tc.cuh", "conv_patch_layout.cuh", "conv2d_reference.cuh"});
}

std::optional<std::string> Conv2dPatchTcTemplate::unsupported(const Workload& w) const {
  if (auto why = Conv2dTemplate().unsupported(w)) return why;
  const ConvDims d = conv_dims(w);
  if (d.c % 8 == 0)
    return name() + " is for inputs whose channels straddle 16-byte loads (C not a multiple of 8), got C=" +
           std::to_string(d.c) + "; conv2d_igemm_wgmma and conv2d_igemm_tc load whole 8-channel chunks";
  if (d.kg() > kMaxTaps)
    return name() + " keeps a pixel's R*S*C taps in shared memory: at most " + std::to_string(kMaxTaps) + ", got " +
           std::to_string(d.kg()) + "; conv2d_igemm_tc takes any shape";
  return std::nullopt;
}

search::ConfigSpace Conv2dPatchTcTemplate::space(const Workload& w, const DeviceLimits& limits) const {
  return search::ConfigSpace(conv_patch_knobs(false, limits.sm_count), conv_patch_constraints(w, limits));
}

search::ConfigSpace Conv2dPatchTcTemplate::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  const ConvDims d = conv_dims(w);
  auto knobs_ = conv_patch_knobs(true, limits.sm_count);
  auto cs = conv_patch_constraints(w, limits);
  // Only the values the workload allows: filter tiles no wider than twice K, 8-row tiles where P > 4.
  auto keep = [](search::Knob& k, auto ok) {
    std::vector<int64_t> v;
    for (int64_t x : k.values)
      if (ok(x)) v.push_back(x);
    k.values = v;
  };
  keep(knobs_[0], [&](int64_t tp) { return tp == 4 || tp < 2 * d.p; });
  keep(knobs_[1], [&](int64_t tq) { return tq == 8 || tq < 2 * d.q; });
  keep(knobs_[2], [&](int64_t bn) { return bn < 2 * d.k; });
  if (knobs_[2].values.empty()) knobs_[2].values = {16};
  // A handful covering every value: the wide warp tile with the wide filter tile, the tall warp tile with
  // the tall pixel tile, prefetching on the persistent grid where the patch fits the registers.
  const bool wide_n = knobs_[2].values.size() > 1, tall = knobs_[0].values.size() > 1;
  cs.push_back({"reduced: WN == 32 iff BN == 64, WM == 64 iff TP == 8 (where offered); PREFETCH == 1 iff PERSISTENT != 0 "
                "and the patch fits the registers",
                [wide_n, tall, w](const search::ConfigView& v) {
                  ConvPatchTiling t = conv_patch_tiling_of(v, w.dtype);
                  t.prefetch = true;
                  const bool can = v["PERSISTENT"] != 0 && patch_regs(t, w) <= kMaxPatchRegs;
                  return (!wide_n || (v["WN"] == 32) == (v["BN"] == 64)) && (!tall || (v["WM"] == 64) == (v["TP"] == 8)) &&
                         (v["PREFETCH"] == 1) == can;
                }});
  search::ConfigSpace reduced(knobs_, cs);
  // Where no reduced config can prefetch, PREFETCH = 1 leaves the reduced knobs (each value is in some config).
  bool prefetches = false;
  for (const auto& c : reduced.enumerate()) prefetches = prefetches || search::ConfigView(reduced, c)["PREFETCH"] == 1;
  if (prefetches) return reduced;
  knobs_[6].values = {0};
  return search::ConfigSpace(std::move(knobs_), std::move(cs));
}

ConvPatchTiling Conv2dPatchTcTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return conv_patch_tiling_of(search::ConfigView(space, c), d);
}

std::string Conv2dPatchTcTemplate::source(const ConvPatchTiling& t) {
  KernelSource s("conv2d_patch_tc.cuh", "conv2d_patch (few input channels, tensor cores); one tiling.");
  s.element(t.dtype);
  s.define("TP", t.tp).define("TQ", t.tq).define("BN", t.bn).define("WM", t.wm).define("WN", t.wn);
  s.define("PREFETCH", t.prefetch ? 1 : 0).define("PATCH_REGS", t.prefetch ? t.patch_regs : 1);
  s.define("MIN_BLOCKS", t.min_blocks);
  if (t.c > 0)
    s.define("CONV_C", t.c).define("CONV_R", t.r).define("CONV_S", t.s).define("CONV_STRIDE", t.stride)
        .define("CONV_DILATION", t.dilation);
  return s.str();
}

int Conv2dPatchTcTemplate::patch_regs(const ConvPatchTiling& t, const Workload& w) {
  const ConvPatchGeom g = geom_of(t, conv_dims(w));
  return conv_patch_ceil_div(g.ph * g.pw * g.c, threads(t));
}

int Conv2dPatchTcTemplate::threads(const ConvPatchTiling& t) { return 32 * (t.tp * t.tq / t.wm) * (t.bn / t.wn); }

int Conv2dPatchTcTemplate::shared_bytes(const ConvPatchTiling& t, const Workload& w) {
  return conv_patch_smem(geom_of(t, conv_dims(w))).bytes;
}

costmodel::KernelProfile Conv2dPatchTcTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                        const Workload& w) const {
  const ConvPatchTiling t = tiling(space, c, w.dtype);
  const ConvDims d = conv_dims(w);
  const ConvPatchGeom g = geom_of(t, d);
  const int64_t bm = t.tp * t.tq;
  const int64_t pixel_tiles = d.n * g.tiles_p * g.tiles_q;
  const double units = static_cast<double>(pixel_tiles * g.tiles_k);
  const double grid = static_cast<double>(conv_patch_grid_x(g, t.persistent_ctas) * g.tiles_k);
  const double outputs = static_cast<double>(d.m() * d.k);
  const double patch_bytes = 2.0 * g.ph * g.pw * d.c;
  const double tile_bytes = 2.0 * static_cast<double>(bm * g.kp);  // the im2col tile
  const int warps = threads(t) / 32;

  costmodel::KernelProfile p;
  p.flops = 2.0 * outputs * static_cast<double>(d.kg());
  p.dram_bytes = 2.0 * static_cast<double>(d.n * d.h * d.w * d.c + d.k * d.kg()) + 2.0 * outputs;
  p.global_bytes = units * patch_bytes + grid * 2.0 * t.bn * d.kg() + 2.0 * outputs;
  // Per unit: the patch written, the im2col tile gathered from it element by element and written, then
  // read by ldmatrix (A by each column of warps, B by each row).
  p.shared_bytes = units * (patch_bytes + 2.0 * tile_bytes +
                            static_cast<double>(warps) * (t.wm + t.wn) * g.kp * 2.0);
  p.shared_conflict_ways = 1;
  // A persistent grid is its CTAs, each running ceil(tiles / grid x) units: the model's resident blocks are
  // those CTAs (a small grid leaves SMs with few warps: measured 2x slower at 2 CTAs per SM than at 4).
  const int64_t grid_x = conv_patch_grid_x(g, t.persistent_ctas);
  p.blocks = t.persistent_ctas > 0 ? grid_x * g.tiles_k : static_cast<int64_t>(units);
  p.persistent = t.persistent_ctas > 0;
  p.threads_per_block = threads(t);
  p.dynamic_shared_bytes = conv_patch_smem(g).bytes;
  p.ilp = (t.wm / 16) * (t.wn / 8);
  // Per k-step of a warp: its ldmatrix loads, and its share of the im2col build (a 2-byte shared load per
  // tap of the tile, and a 16-byte load of the offsets per 4 taps), which runs before the products.
  const double steps = g.kp / 16.0;
  p.shared_loads_per_step = (t.wm / 16) + (t.wn / 16) + 1.25 * static_cast<double>(bm * g.kp) / threads(t) / steps;
  p.vector_width = 1;  // the patch is copied element by element
  p.coalescing = 1.0;
  // One global phase per unit (the patch), exposed unless the next tile's patch is prefetched.
  p.stages = t.prefetch ? 2 : 1;
  p.main_loop_iterations = t.persistent_ctas > 0 ? costmodel::ceil_div(pixel_tiles, grid_x) : 1;
  p.l2_reuse = 1.0;
  p.tensor_cores = true;
  return p;
}

KernelInstance Conv2dPatchTcTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                                  const Workload& w) const {
  KernelInstance k = conv2d_contract_instance(w);
  ConvPatchTiling t = tiling(space, c, w.dtype);
  t.patch_regs = patch_regs(t, w);
  const ConvDims d = conv_dims(w);
  t.c = static_cast<int>(d.c), t.r = static_cast<int>(d.r), t.s = static_cast<int>(d.s);
  t.stride = static_cast<int>(d.stride), t.dilation = static_cast<int>(d.dilation);
  const ConvPatchGeom g = geom_of(t, conv_dims(w));
  k.profile = profile(space, c, w);
  k.source = source(t);
  k.kernel_name = kConvPatchKernelName;
  k.launch.grid = {static_cast<unsigned>(conv_patch_grid_x(g, t.persistent_ctas)), static_cast<unsigned>(g.tiles_k), 1};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  return k;
}

}  // namespace tuner::templates
