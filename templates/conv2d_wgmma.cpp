#include "templates/conv2d_wgmma.h"

#include <algorithm>

#include "templates/conv2d.h"
#include "templates/gemm_wgmma_source.h"
#include "templates/kernel_files.h"

namespace tuner::templates {

namespace {


std::vector<search::Knob> conv_wgmma_knobs(bool reduced, int64_t sm_count) {
  const search::Knob persistent{"PERSISTENT", {0, std::max<int64_t>(sm_count, 1)},
                                "0: a CTA per work unit; else the CTAs of a persistent grid (the SM count)"};
  const search::Knob pingpong{"PINGPONG", {0, 1},
                              "1: the two consumers run alternate units whole (one's epilogue under the other's products)", 0};
  if (reduced) {
    return {
        {"BM", {64, 128}, "block tile: output pixels (tile_h * TILE_W)"},
        {"BN", {32, 64, 128}, "block tile: filters (the wgmma n)"},
        {"TILE_W", {8, 16}, "output columns of the pixel tile"},
        {"CONSUMERS", {1, 2}, "consumer warpgroups sharing the pixel rows"},
        {"STAGES", {3, 4}, "shared-buffer ring depth"},
        persistent,
        pingpong,
    };
  }
  return {
      {"BM", {64, 128, 256}, "block tile: output pixels (tile_h * TILE_W)"},
      {"BN", {32, 64, 128, 256}, "block tile: filters (the wgmma n)"},
      {"TILE_W", {8, 16, 32}, "output columns of the pixel tile"},
      {"CONSUMERS", {1, 2}, "consumer warpgroups sharing the pixel rows"},
      {"STAGES", {2, 3, 4, 6, 8}, "shared-buffer ring depth"},
      persistent,
      pingpong,
  };
}

ConvWgmmaTiling conv_wgmma_tiling_of(const search::ConfigView& v, DType d) {
  ConvWgmmaTiling t;
  t.dtype = d;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.tile_w = static_cast<int>(v["TILE_W"]);
  t.consumers = static_cast<int>(v["CONSUMERS"]);
  t.stages = static_cast<int>(v["STAGES"]);
  t.persistent_ctas = static_cast<int>(v["PERSISTENT"]);
  t.pingpong = v["PINGPONG"] != 0;
  return t;
}

int64_t rows_per_consumer(const search::ConfigView& v) {
  return conv_wgmma_rows_per_consumer(conv_wgmma_tiling_of(v, DType::kF16));
}

std::vector<search::Constraint> conv_wgmma_constraints(const ConvDims& d, const DeviceLimits& limits) {
  return {
      {"PINGPONG == 0 or (CONSUMERS == 2 and PERSISTENT != 0)",
       [](const search::ConfigView& v) { return v["PINGPONG"] == 0 || (v["CONSUMERS"] == 2 && v["PERSISTENT"] != 0); }},
      {"rows per consumer (BM, or BM / CONSUMERS without PINGPONG) a multiple of 64 (whole m64 wgmma tiles)",
       [](const search::ConfigView& v) { return rows_per_consumer(v) % 64 == 0; }},
      {"accumulators per consumer thread (rows per consumer / 64) * BN / 2 <= 128",
       [](const search::ConfigView& v) { return (rows_per_consumer(v) / 64) * v["BN"] / 2 <= 128; }},
      // TMA boxes span at most 256 elements per dimension; a strided box spans stride times its pixels.
      {"TILE_W * stride <= 256 and BM / TILE_W * stride <= 256 (TMA box dimensions)",
       [st = d.stride](const search::ConfigView& v) {
         return v["TILE_W"] * st <= 256 && v["BM"] / v["TILE_W"] * st <= 256;
       }},
      // A tile more than twice the output's width or height (or a filter tile more than twice K) computes
      // mostly rows that are never stored; a narrower one of the same BM does the same work with less waste.
      // The smallest tile (8 x 8 pixels x 32 filters) is always allowed, so no workload has an empty space.
      {"TILE_W == 8 or TILE_W < 2 * Q; BM / TILE_W <= 8 or BM / TILE_W < 2 * P; BN == 32 or BN < 2 * K",
       [p = d.p, q = d.q, k = d.k](const search::ConfigView& v) {
         const int64_t th = v["BM"] / v["TILE_W"];
         return (v["TILE_W"] == 8 || v["TILE_W"] < 2 * q) && (th <= 8 || th < 2 * p) && (v["BN"] == 32 || v["BN"] < 2 * k);
       }},
      // The ring's mbarriers (16 bytes a stage) are static shared memory on top of the dynamic.
      {"shared memory (dynamic + 16 * STAGES) <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
       [max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
         return conv_wgmma_shared_bytes(conv_wgmma_tiling_of(v, DType::kF16)) + 16 * static_cast<size_t>(v["STAGES"]) <=
                static_cast<size_t>(max);
       }},
      {"threads 128 * (1 + CONSUMERS) <= " + std::to_string(limits.max_threads_per_block),
       [max = limits.max_threads_per_block](const search::ConfigView& v) { return 128 * (1 + v["CONSUMERS"]) <= max; }},
  };
}

}  // namespace

std::string Conv2dWgmmaTemplate::source_text() const { return conv2d_wgmma_template_text(); }

std::optional<std::string> Conv2dWgmmaTemplate::unsupported(const Workload& w) const {
  if (auto why = Conv2dTemplate().unsupported(w)) return why;
  const ConvDims d = conv_dims(w);
  if (d.c % 8 != 0 || d.k % 8 != 0)
    return name() + " needs C and K to be multiples of 8 (TMA strides and 16-byte output vectors), got C=" +
           std::to_string(d.c) + ", K=" + std::to_string(d.k) + "; conv2d_igemm_tc takes any shape";
  if (d.stride > 8)
    return name() + " needs stride <= 8 (TMA element strides), got " + std::to_string(d.stride) +
           "; conv2d_igemm_tc takes any stride";
  return std::nullopt;
}

std::optional<std::string> Conv2dWgmmaTemplate::unsupported_on(const DeviceLimits& limits) const {
  if (limits.arch != "sm_90")
    return name() + " runs only on sm_90 (Hopper: wgmma, TMA, setmaxnreg), not " + limits.arch +
           "; conv2d_igemm_tc runs on sm_80 and later";
  return std::nullopt;
}

search::ConfigSpace Conv2dWgmmaTemplate::space(const Workload& w, const DeviceLimits& limits) const {
  return search::ConfigSpace(conv_wgmma_knobs(false, limits.sm_count), conv_wgmma_constraints(conv_dims(w), limits));
}

search::ConfigSpace Conv2dWgmmaTemplate::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  const ConvDims d = conv_dims(w);
  auto cs = conv_wgmma_constraints(d, limits);
  auto knobs_ = conv_wgmma_knobs(true, limits.sm_count);
  // Only the values the workload allows (every reduced value is then in some reduced config): filter
  // tiles no wider than twice K, 16-column pixel tiles where Q is wider than 8, 128-pixel tiles where
  // one of them fits the output's height.
  auto keep = [](search::Knob& k, auto ok) {
    std::vector<int64_t> v;
    for (int64_t x : k.values)
      if (ok(x)) v.push_back(x);
    k.values = v;
  };
  keep(knobs_[1], [&](int64_t bn) { return bn == 32 || bn < 2 * d.k; });
  keep(knobs_[2], [&](int64_t tw) { return tw == 8 || tw < 2 * d.q; });
  keep(knobs_[0], [&](int64_t bm) {
    for (int64_t tw : knobs_[2].values)
      if (bm / tw <= 8 || bm / tw < 2 * d.p) return true;
    return false;
  });
  const bool wide = knobs_[2].values.size() > 1;
  // At most 9 configs covering every value: the persistent grid and 4 stages with two consumers, 16-column
  // tiles with BN 64 (where offered).
  cs.push_back({"reduced: PERSISTENT != 0 iff CONSUMERS == 2 iff STAGES == 4",
                [](const search::ConfigView& v) {
                  return (v["PERSISTENT"] != 0) == (v["CONSUMERS"] == 2) && (v["STAGES"] == 4) == (v["CONSUMERS"] == 2);
                }});
  // Pingpong where two consumers take BN 64 (where it is offered), so the count stays as it was.
  const bool bn64 = std::find(knobs_[1].values.begin(), knobs_[1].values.end(), 64) != knobs_[1].values.end();
  const bool bm128 = std::find(knobs_[0].values.begin(), knobs_[0].values.end(), 128) != knobs_[0].values.end();
  if (!bn64 || !bm128) knobs_[6].values = {0};  // no reduced config would take PINGPONG 1
  cs.push_back({"reduced: BM == 128 with two consumers; PINGPONG == 1 iff CONSUMERS == 2 and BN == 64 (where offered)",
                [bn64](const search::ConfigView& v) {
                  const bool two = v["CONSUMERS"] == 2;
                  return (!two || v["BM"] == 128) && (v["PINGPONG"] == 1) == (two && bn64 && v["BN"] == 64);
                }});
  cs.push_back({"reduced: TILE_W == 16 iff BN == 64 (where 16 is offered)",
                [wide](const search::ConfigView& v) { return !wide || (v["TILE_W"] == 16) == (v["BN"] == 64); }});
  return search::ConfigSpace(std::move(knobs_), std::move(cs));
}

ConvWgmmaTiling Conv2dWgmmaTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return conv_wgmma_tiling_of(search::ConfigView(space, c), d);
}

costmodel::KernelProfile Conv2dWgmmaTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                      const Workload& w) const {
  const ConvWgmmaTiling t = tiling(space, c, w.dtype);
  const ConvDims d = conv_dims(w);
  const int64_t tile_h = t.bm / t.tile_w;
  const int64_t pixel_tiles = d.n * costmodel::ceil_div(d.p, tile_h) * costmodel::ceil_div(d.q, t.tile_w);
  const int64_t grid_n = costmodel::ceil_div(d.k, t.bn);
  const int64_t k_tiles = d.r * d.s * costmodel::ceil_div(d.c, kWgmmaBk);
  const double units = static_cast<double>(pixel_tiles * grid_n);
  const double outputs = static_cast<double>(d.n * d.p * d.q * d.k);

  costmodel::KernelProfile p;
  p.flops = 2.0 * outputs * static_cast<double>(d.r * d.s * d.c);
  p.dram_bytes = 2.0 * static_cast<double>(d.n * d.h * d.w * d.c + d.k * d.r * d.s * d.c) + 2.0 * outputs;
  // TMA fetches whole boxes (padding and rows past P, Q included) for every (unit, k-tile).
  const double stage_bytes = static_cast<double>(t.bm + t.bn) * kWgmmaBk * 2.0;
  p.global_bytes = units * static_cast<double>(k_tiles) * stage_bytes + 2.0 * outputs;
  const double reads = static_cast<double>(t.bm + t.consumers * t.bn) * kWgmmaBk * 2.0;
  p.shared_bytes = units * static_cast<double>(k_tiles) * (stage_bytes + reads) + 2.0 * 4.0 * outputs;
  p.shared_conflict_ways = 1;  // 128-byte swizzle on both operands
  p.blocks = static_cast<int64_t>(units);
  p.persistent = t.persistent_ctas > 0;
  p.threads_per_block = conv_wgmma_threads(t);
  p.dynamic_shared_bytes = static_cast<int>(conv_wgmma_shared_bytes(t));
  p.ilp = (conv_wgmma_rows_per_consumer(t) / 64) * (t.bn / 8);
  p.vector_width = 8;
  p.coalescing = 1.0;
  p.stages = t.stages;
  p.main_loop_iterations = k_tiles;
  p.l2_reuse = 1.0;
  p.tensor_cores = true;
  p.async_mma = true;
  // The ring GEMM the kernel runs: M padded to whole pixel tiles, K to whole 64-channel chunks per tap.
  p.gemm.batch = 1;
  p.gemm.m = pixel_tiles * t.bm;
  p.gemm.n = d.k;
  p.gemm.k = k_tiles * kWgmmaBk;
  p.gemm.bm = t.bm;
  p.gemm.bn = t.bn;
  p.gemm.bk = kWgmmaBk;
  p.gemm.group_m = 1;
  p.gemm.split_k = 1;
  p.gemm.elem_bytes = 2;
  p.gemm.out_bytes = 2;
  p.gemm.store_segment = 32;
  p.gemm.cluster = 1;
  p.gemm.epilogue_overlapped = t.pingpong;
  // The im2col matrix repeats input pixels; DRAM serves the input once (L2 the repeats).
  p.gemm.a_dram_share = std::min(1.0, static_cast<double>(d.n * d.h * d.w * d.c) /
                                          (static_cast<double>(p.gemm.m) * static_cast<double>(p.gemm.k)));
  p.gemm.persistent_ctas = t.persistent_ctas > 0 ? static_cast<int>(conv_wgmma_grid_x(t, d.n, d.p, d.q, d.k)) : 0;
  return p;
}

KernelInstance Conv2dWgmmaTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                                const Workload& w) const {
  KernelInstance k = conv2d_contract_instance(w);
  const ConvWgmmaTiling t = tiling(space, c, w.dtype);
  const ConvDims d = conv_dims(w);
  k.profile = profile(space, c, w);
  k.source = conv2d_wgmma_source(t, d);
  k.kernel_name = kConvWgmmaKernelName;
  k.arch_specific = true;
  k.launch.grid = {static_cast<unsigned>(conv_wgmma_grid_x(t, d.n, d.p, d.q, d.k)), 1, 1};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const auto box = [](int64_t v) { return static_cast<uint32_t>(v); };
  const int64_t tile_h = t.bm / t.tile_w;
  // X as {C, W, H, N}: tile_w x tile_h pixels, each stride apart, 64 channels (128 bytes) each.
  const TensorMapSpec x{0, {u(d.c), u(d.w), u(d.h), u(d.n)}, {u(d.c * 2), u(d.w * d.c * 2), u(d.h * d.w * d.c * 2)},
                  {box(kWgmmaBk), box(t.tile_w * d.stride), box(tile_h * d.stride), 1}, 128,
                  {1, box(d.stride), box(d.stride), 1}};
  // F as {C, S, R, K}: bn filters of one tap, 64 channels each.
  const TensorMapSpec f{1, {u(d.c), u(d.s), u(d.r), u(d.k)}, {u(d.c * 2), u(d.s * d.c * 2), u(d.r * d.s * d.c * 2)},
                  {box(kWgmmaBk), 1, 1, box(t.bn)}, 128, {}};
  k.tensor_maps = {x, f};
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = conv2d_wgmma_reference_source(w.dtype);
  return k;
}

}  // namespace tuner::templates
