// The Hopper conv2d (conv2d_igemm_wgmma) without a GPU: its contract, what it refuses, its tensor maps
// against TMA's limits and the stage the kernel expects, and the whole computation emulated on the CPU:
// the TMA boxes read from the instance's own tensor-map specs (dims, strides, box, element strides,
// zero fill), the schedule and coordinates from the kernel's own conv_wgmma_schedule.cuh, the skipped
// k-tiles and the epilogue's row mapping, against a direct convolution.
#include "templates/conv2d_wgmma.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "templates/conv2d.h"
#include "templates/kernels/conv_wgmma_schedule.cuh"
#include "templates/kernels/wgmma_schedule.cuh"
#include "templates/registry.h"
#include "template_checks.h"
#include "wgmma_pingpong_ring.h"

namespace tuner::templates {
namespace {

TEST(Conv2dWgmmaTemplate, ContractHoldsOnResNetAndRaggedShapes) {
  Conv2dWgmmaTemplate t;
  for (const char* dt : {"f16", "bf16"}) {
    check_template_contract(t, parse_workload("conv2d", "N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1", dt), 9);
    check_template_contract(t, parse_workload("conv2d", "N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1", dt), 9);
    check_template_contract(t, parse_workload("conv2d", "N=2,H=30,W=27,C=24,K=72,R=3,S=3,stride=2,pad=1,dilation=2", dt),
                            9);
  }
}

TEST(Conv2dWgmmaTemplate, TinyOutputsStillHaveConfigs) {
  Conv2dWgmmaTemplate t;
  const auto limits = h100_test_limits();
  for (const char* shape : {"N=1,H=1,W=1,C=8,K=8,R=1,S=1,stride=1,pad=0", "N=3,H=7,W=7,C=512,K=72,R=1,S=1,stride=1,pad=0",
                            "N=2,H=15,W=13,C=24,K=40,R=3,S=3,stride=2,pad=1,dilation=2"}) {
    const auto w = parse_workload("conv2d", shape, "f16");
    ASSERT_EQ(t.unsupported(w), std::nullopt) << shape;
    EXPECT_GT(t.reduced_space(w, limits).size(), 0u) << shape;
    const auto full = t.space(w, limits);
    EXPECT_TRUE(full.is_valid(search::Config{64, 32, 8, 1, 2, 0, 0})) << shape << ": the smallest tile is always offered";
  }
}

TEST(Conv2dWgmmaTemplate, RefusesWhatTmaCannotAddressAndNamesTheAlternative) {
  Conv2dWgmmaTemplate t;
  auto stem = t.unsupported(parse_workload("conv2d", "N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3", "f16"));
  ASSERT_TRUE(stem.has_value());
  EXPECT_NE(stem->find("C=3"), std::string::npos) << *stem;
  EXPECT_NE(stem->find("conv2d_igemm_tc"), std::string::npos) << *stem;
  EXPECT_TRUE(t.unsupported(parse_workload("conv2d", "N=1,H=8,W=8,C=16,K=20,R=1,S=1,stride=1,pad=0", "f16")).has_value()) << "K=20";
  auto far = t.unsupported(parse_workload("conv2d", "N=1,H=64,W=64,C=16,K=16,R=1,S=1,stride=9,pad=0", "f16"));
  ASSERT_TRUE(far.has_value());
  EXPECT_NE(far->find("stride <= 8"), std::string::npos) << *far;
  DeviceLimits a100 = h100_test_limits();
  a100.arch = "sm_80";
  ASSERT_TRUE(t.unsupported_on(a100).has_value());
  EXPECT_EQ(t.unsupported_on(h100_test_limits()), std::nullopt);
  // Built without a GPU: conv2d_igemm_tc stays the default; this one is chosen by name, on Hopper.
  const auto h100 = h100_test_limits();
  EXPECT_EQ(find_template("conv2d", DType::kF16, &h100).name(), "conv2d_igemm_tc");
  EXPECT_EQ(find_template("conv2d", DType::kBF16, &h100, "conv2d_igemm_wgmma").name(), "conv2d_igemm_wgmma");
  EXPECT_THROW(find_template("conv2d", DType::kF32, &h100, "conv2d_igemm_wgmma"), std::invalid_argument);
}

TEST(Conv2dWgmmaTemplate, TensorMapsFitTmaAndFillTheStageTheKernelExpects) {
  Conv2dWgmmaTemplate t;
  const auto limits = h100_test_limits();
  for (const char* shape : {"N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1",
                            "N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1",
                            "N=2,H=15,W=13,C=24,K=40,R=3,S=3,stride=3,pad=2,dilation=2"}) {
    const auto w = parse_workload("conv2d", shape, "f16");
    const auto space = t.space(w, limits);
    ASSERT_GT(space.size(), 0u) << shape;
    for (const auto& c : space.enumerate()) {
      const auto k = t.instantiate(space, c, w);
      const ConvWgmmaTiling tl = Conv2dWgmmaTemplate::tiling(space, c, w.dtype);
      const std::string cfg = std::string(shape) + " " + space.to_json_string(c);
      ASSERT_EQ(k.tensor_maps.size(), 2u) << cfg;
      uint64_t smem_bytes[2] = {0, 0};
      for (int i = 0; i < 2; ++i) {
        const TensorMapSpec& m = k.tensor_maps[i];
        EXPECT_EQ(m.buffer, i) << cfg;
        ASSERT_EQ(m.dims.size(), 4u) << cfg;
        EXPECT_EQ(m.swizzle_bytes, 128) << cfg;
        EXPECT_EQ(m.box[0] * 2, 128u) << "the inner box spans the swizzle exactly: " << cfg;
        for (auto s : m.strides_bytes) EXPECT_EQ(s % 16, 0u) << cfg;
        uint64_t loaded = 2;
        for (size_t d = 0; d < 4; ++d) {
          const uint32_t stride = m.element_strides.empty() ? 1 : m.element_strides[d];
          EXPECT_LE(m.box[d], 256u) << cfg;
          EXPECT_GE(stride, 1u);
          EXPECT_LE(stride, 8u);
          EXPECT_EQ(m.box[d] % stride, 0u) << "a strided box is its pixels times the stride: " << cfg;
          loaded *= m.box[d] / stride;
        }
        smem_bytes[i] = loaded;
      }
      EXPECT_EQ(smem_bytes[0], static_cast<uint64_t>(tl.bm) * 128) << "A: bm pixel rows of 128 bytes: " << cfg;
      EXPECT_EQ(smem_bytes[1], static_cast<uint64_t>(tl.bn) * 128) << "B: bn filter rows of 128 bytes: " << cfg;
      EXPECT_EQ(static_cast<size_t>(k.launch.dynamic_shared_bytes),
                tl.stages * (smem_bytes[0] + smem_bytes[1]) + 1024 + tl.consumers * 4 * 16 * 40 * 4)
          << cfg;
      EXPECT_LE(k.launch.dynamic_shared_bytes, limits.max_shared_per_block_bytes) << cfg;
      EXPECT_TRUE(k.arch_specific);
      EXPECT_NE(k.reference_source.find("TENSOR_MAP_ARGS 1"), std::string::npos) << "the reference takes the maps";
      EXPECT_NE(k.source.find("#define B_K_MAJOR 1\n"), std::string::npos) << "K-major filters: wgmma trans-b 0";
    }
  }
}

/// The box TMA writes to shared memory for `coords` (innermost first): box[d] / stride[d] elements per
/// dimension, innermost fastest, element i of dimension d at coords[d] + i * stride[d], zero outside the
/// tensor. `data` holds the tensor densely (strides_bytes / 2 elements apart).
std::vector<double> tma_box(const TensorMapSpec& m, const std::vector<double>& data, const std::vector<int64_t>& coords) {
  const size_t rank = m.dims.size();
  std::vector<int64_t> n(rank), stride(rank), pitch(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    stride[d] = m.element_strides.empty() ? 1 : m.element_strides[d];
    n[d] = m.box[d] / stride[d];
    if (d > 0) pitch[d] = static_cast<int64_t>(m.strides_bytes[d - 1] / 2);
  }
  std::vector<double> out;
  std::vector<int64_t> i(rank, 0);
  for (bool more = true; more;) {
    double v = 0;
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t x = coords[d] + i[d] * stride[d];
      inside = inside && x >= 0 && x < static_cast<int64_t>(m.dims[d]);
      offset += x * pitch[d];
    }
    if (inside) v = data[static_cast<size_t>(offset)];
    out.push_back(v);
    more = false;
    for (size_t d = 0; d < rank && !more; ++d) {
      if (++i[d] < n[d]) more = true;
      else i[d] = 0;
    }
  }
  return out;
}

struct EmulationCase {
  const char* shape;
  search::Config config;  // BM BN TILE_W CONSUMERS STAGES PERSISTENT PINGPONG
  bool skips = false;     // some tap misses a whole tile (a box wholly in the padding)
};

// The kernel's computation on the CPU with small integer inputs (exact in double): per unit and k-tile,
// the A and B boxes as the tensor maps describe them (skipped where the schedule says the tap misses
// the tile: the test checks that box is all zero), a bm x bn x 64 product, and the epilogue's stores
// through conv_wgmma_out_row. Every output is stored once and equals the direct convolution.
TEST(ConvWgmmaSchedule, EmulatedTmaBoxesComputeTheConvolution) {
  Conv2dWgmmaTemplate t;
  const std::vector<EmulationCase> cases = {
      {"N=2,H=9,W=11,C=16,K=24,R=3,S=3,stride=1,pad=1", {64, 32, 16, 1, 3, 0, 0}},
      {"N=1,H=10,W=40,C=16,K=32,R=3,S=3,stride=1,pad=1", {64, 32, 16, 1, 3, 0, 0}},  // 4 x 16 tiles, 3 x 3 of them
      {"N=1,H=15,W=13,C=72,K=40,R=3,S=3,stride=2,pad=1,dilation=2", {64, 32, 8, 1, 3, 0, 0}},
      {"N=2,H=30,W=30,C=8,K=72,R=5,S=3,stride=3,pad=2", {128, 64, 16, 2, 4, 0, 0}},
      {"N=2,H=30,W=30,C=8,K=72,R=5,S=3,stride=3,pad=2", {128, 64, 16, 2, 4, 132, 1}},  // pingpong: same boxes
      {"N=1,H=7,W=7,C=136,K=16,R=1,S=1,stride=1,pad=0", {64, 32, 8, 1, 3, 132, 0}},
      {"N=1,H=20,W=9,C=24,K=8,R=3,S=3,stride=2,pad=0", {64, 32, 8, 1, 3, 0, 0}},
      {"N=2,H=6,W=6,C=16,K=16,R=3,S=3,stride=1,pad=4", {64, 32, 8, 1, 3, 132, 0}, true},
      // The last tile column and row hold one pixel each: the taps s = 2 and r = 2 miss them (2 chunks each).
      {"N=1,H=9,W=9,C=128,K=32,R=3,S=3,stride=1,pad=1", {64, 32, 8, 1, 3, 0, 0}, true},
  };
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);
  for (const auto& ec : cases) {
    const auto w = parse_workload("conv2d", ec.shape, "f16");
    const auto space = t.space(w, h100_test_limits());
    ASSERT_TRUE(space.is_valid(ec.config)) << ec.shape << ": " << *space.violation(ec.config);
    const auto k = t.instantiate(space, ec.config, w);
    const ConvWgmmaTiling tl = Conv2dWgmmaTemplate::tiling(space, ec.config, w.dtype);
    const int N = static_cast<int>(w.dim("N")), H = static_cast<int>(w.dim("H")), W = static_cast<int>(w.dim("W"));
    const int C = static_cast<int>(w.dim("C")), K = static_cast<int>(w.dim("K")), R = static_cast<int>(w.dim("R"));
    const int S = static_cast<int>(w.dim("S")), st = static_cast<int>(w.dim("stride"));
    const int pad = static_cast<int>(w.dim("pad")), dil = static_cast<int>(w.dim("dilation"));
    const int P = static_cast<int>(conv_output_p(w)), Q = static_cast<int>(conv_output_q(w));
    // The scalars the kernel gets are the instance's.
    ASSERT_EQ(k.scalar_args, (std::vector<int32_t>{N, H, W, C, K, R, S, st, pad, dil, P, Q}));
    std::vector<double> x(static_cast<size_t>(N) * H * W * C), f(static_cast<size_t>(K) * R * S * C);
    for (auto& v : x) v = small(rng);
    for (auto& v : f) v = small(rng);

    const ConvWgmmaGeom g = conv_wgmma_geom(N, H, W, C, K, R, S, st, pad, dil, P, Q, tl.bm / tl.tile_w, tl.tile_w, tl.bn);
    ASSERT_EQ(conv_wgmma_units(g), conv_wgmma_unit_count(tl, N, P, Q, K));
    std::vector<double> y(static_cast<size_t>(N) * P * Q * K, 0.0);
    std::vector<int> stores(y.size(), 0);
    int skipped = 0;
    // A persistent grid strides the units by its CTAs; every CTA's share together is every unit once.
    const long long grid = static_cast<long long>(k.launch.grid[0]);
    for (long long cta = 0; cta < grid; ++cta)
      for (long long u = cta; u < conv_wgmma_units(g); u += tl.persistent_ctas > 0 ? grid : conv_wgmma_units(g)) {
        const ConvWgmmaUnit unit = conv_wgmma_unit(g, u);
        std::vector<double> acc(static_cast<size_t>(tl.bm) * tl.bn, 0.0);
        for (int kt = 0; kt < g.k_tiles; ++kt) {
          const ConvWgmmaTap tap = conv_wgmma_tap(g, kt);
          const auto a = tma_box(k.tensor_maps[0], x,
                                 {tap.c0, conv_wgmma_box_w(g, unit, tap), conv_wgmma_box_h(g, unit, tap), unit.n});
          const auto b = tma_box(k.tensor_maps[1], f, {tap.c0, tap.s, tap.r, unit.k0});
          ASSERT_EQ(a.size(), static_cast<size_t>(tl.bm) * 64);
          ASSERT_EQ(b.size(), static_cast<size_t>(tl.bn) * 64);
          if (conv_wgmma_box_outside(g, unit, tap)) {
            ++skipped;
            for (double v : a) ASSERT_EQ(v, 0.0) << "a skipped k-tile's box holds only padding: " << ec.shape;
            continue;
          }
          for (int m = 0; m < tl.bm; ++m)
            for (int j = 0; j < tl.bn; ++j) {
              double s = 0;
              for (int ci = 0; ci < 64; ++ci) s += a[static_cast<size_t>(m) * 64 + ci] * b[static_cast<size_t>(j) * 64 + ci];
              acc[static_cast<size_t>(m) * tl.bn + j] += s;
            }
        }
        for (int m = 0; m < tl.bm; ++m) {
          const long long row = conv_wgmma_out_row(g, unit, m);
          if (row < 0) continue;
          for (int j = 0; j < tl.bn && unit.k0 + j < K; ++j) {
            y[static_cast<size_t>(row) * K + unit.k0 + j] = acc[static_cast<size_t>(m) * tl.bn + j];
            ++stores[static_cast<size_t>(row) * K + unit.k0 + j];
          }
        }
      }
    const std::vector<double> ref = direct_conv(w, x, f);
    for (size_t o = 0; o < y.size(); ++o) {
      ASSERT_EQ(stores[o], 1) << ec.shape << " output " << o << " stored " << stores[o] << " times";
      ASSERT_EQ(y[o], ref[o]) << ec.shape << " output " << o;
    }
    // Padding wider than the filter: taps that miss whole tiles are skipped, and the result still holds.
    if (ec.skips) {
      EXPECT_GT(skipped, 0) << ec.shape;
    }
  }
}

// ---- the mbarrier ring with skipped k-tiles ----

/// How the kernel's producer and consumers treat a k-tile whose box misses the tile.
enum class SkipPolicy {
  kTakesNoSlot,  // conv2d_wgmma.cuh: neither side touches the ring, `it` does not advance
  kTakesSlot,    // its first version: the producer arrived on the slot's full barrier with no bytes, each
                 // consumer warp arrived on its empty barrier at once, the previous stage still held
};

struct RingTile {
  bool outside;   // conv_wgmma_box_outside
  bool unit_end;  // the unit's last k-tile: the consumers release their held stage after it
};

/// The schedule of a ring test's shape {N, H, W, C, K, R, S, stride, pad, dilation, tile_h, tile_w, bn}.
ConvWgmmaGeom ring_test_geom(const std::vector<int>& v) {
  const int P = (v[1] + 2 * v[8] - v[9] * (v[5] - 1) - 1) / v[7] + 1;
  const int Q = (v[2] + 2 * v[8] - v[9] * (v[6] - 1) - 1) / v[7] + 1;
  return conv_wgmma_geom(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], P, Q, v[10], v[11], v[12]);
}

/// One CTA's k-tiles in the kernel's order (its units blockIdx.x, + step, ...).
std::vector<RingTile> ring_program(const ConvWgmmaGeom& g, long long cta, long long step) {
  std::vector<RingTile> out;
  for (long long u = cta; u < conv_wgmma_units(g); u += step) {
    const ConvWgmmaUnit unit = conv_wgmma_unit(g, u);
    for (int kt = 0; kt < g.k_tiles; ++kt)
      out.push_back({conv_wgmma_box_outside(g, unit, conv_wgmma_tap(g, kt)), kt + 1 == g.k_tiles});
  }
  return out;
}

/// Runs the producer thread and the 4 * consumers consumer warps of one CTA over `program`, in a random
/// interleaving, with the kernel's stage and parity functions (wgmma_slot) and its barrier counts (full:
/// 1 arrival, empty: 4 * consumers). Returns "" when every k-tile was produced and consumed, else what
/// went wrong: a deadlock, a refill of a stage a warp still reads, or an ambiguous parity wait.
std::string run_conv_ring(const std::vector<RingTile>& program, int stages, int consumers, SkipPolicy policy,
                          std::mt19937& rng) {
  // The ring positions: with kTakesNoSlot only the fetched k-tiles, a unit's end moving to its last one
  // (the kernel's release after the k-loop); a unit with none fetched touches the ring not at all.
  std::vector<RingTile> slots;
  for (const RingTile& t : program) {
    if (policy == SkipPolicy::kTakesSlot || !t.outside) slots.push_back(t);
    else if (t.unit_end && !slots.empty()) slots.back().unit_end = true;
  }
  const int total = static_cast<int>(slots.size());
  const size_t S = static_cast<size_t>(stages);
  std::vector<RingBarrier> full(S), empty(S);
  for (auto& b : empty) b.count = b.pending = 4 * consumers;
  std::vector<int> readers(S, 0);
  std::string error;
  auto done_waiting = [&](const RingBarrier& b, unsigned parity, int target) {
    if (b.phase < target || b.phase > target + 1) error = "ambiguous parity wait";
    return static_cast<unsigned>(b.phase & 1) != parity;
  };
  struct Warp {
    int it = 0, prev_stage = -1;
  };
  std::vector<Warp> warps(static_cast<size_t>(4 * consumers));
  int produced = 0;
  auto release = [&](int stage) {
    --readers[static_cast<size_t>(stage)];
    empty[static_cast<size_t>(stage)].arrive();
  };
  for (int steps = 0;; ++steps) {
    if (!error.empty()) return error;
    std::vector<int> enabled;  // -1: the producer; w >= 0: consumer warp w
    if (produced < total) {
      const WgmmaSlot s = wgmma_slot(produced, stages);
      if (!s.reuse || done_waiting(empty[static_cast<size_t>(s.stage)], s.empty_parity, produced / stages - 1))
        enabled.push_back(-1);
    }
    for (size_t w = 0; w < warps.size(); ++w)
      if (warps[w].it < total) {
        const WgmmaSlot s = wgmma_slot(warps[w].it, stages);
        if (done_waiting(full[static_cast<size_t>(s.stage)], s.full_parity, warps[w].it / stages))
          enabled.push_back(static_cast<int>(w));
      }
    if (!error.empty()) return error;
    if (enabled.empty()) {
      bool done = produced == total;
      for (const Warp& w : warps) done = done && w.it == total;
      return done ? "" : "deadlock after " + std::to_string(steps) + " steps";
    }
    const int pick = enabled[std::uniform_int_distribution<size_t>(0, enabled.size() - 1)(rng)];
    if (pick < 0) {
      const WgmmaSlot s = wgmma_slot(produced, stages);
      if (readers[static_cast<size_t>(s.stage)] != 0) return "stage " + std::to_string(s.stage) + " refilled while read";
      full[static_cast<size_t>(s.stage)].arrive();  // arrive.expect_tx, then the copies land (or no bytes)
      ++produced;
      continue;
    }
    Warp& w = warps[static_cast<size_t>(pick)];
    const RingTile t = slots[static_cast<size_t>(w.it)];
    const WgmmaSlot s = wgmma_slot(w.it, stages);
    if (t.outside) {
      empty[static_cast<size_t>(s.stage)].arrive();  // kTakesSlot: read nothing, released at once
    } else {
      ++readers[static_cast<size_t>(s.stage)];
      if (w.prev_stage >= 0) release(w.prev_stage);  // wgmma_wait<1>: the previous k-tile's reads are done
      w.prev_stage = s.stage;
    }
    if (t.unit_end) {
      if (w.prev_stage >= 0) release(w.prev_stage);  // wgmma_wait<0>, then the unit's last stage
      w.prev_stage = -1;
    }
    ++w.it;
  }
}

// Taps that miss a tile come in runs (all chunks of a tap, whole filter rows): the ring must neither
// deadlock nor refill a stage still read, for every STAGES and CONSUMERS value, for the busiest and the
// last CTA of one-unit and persistent grids. The kernel's first version, whose skipped k-tiles took ring
// slots while the consumers held the previous stage, deadlocked on such runs (STAGES - 1 skipped slots
// after a multiplied k-tile): the model must see that, or it checks nothing.
TEST(ConvWgmmaRing, SkippedKTilesNeitherDeadlockNorOverwrite) {
  const std::vector<std::vector<int>> shapes = {
      // N H W C K R S stride pad dilation, tile_h tile_w bn
      {1, 9, 9, 128, 32, 3, 3, 1, 1, 1, 8, 8, 32},     // one-pixel last tile row and column: 2-chunk runs
      {2, 6, 6, 16, 16, 3, 3, 1, 4, 1, 8, 8, 32},      // padding wider than the filter: whole rows missed
      {1, 17, 33, 256, 64, 3, 3, 1, 1, 1, 4, 16, 64},  // 4-chunk runs at the last row and column
      {1, 15, 13, 72, 40, 3, 3, 2, 1, 2, 8, 8, 32},
      {1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 8, 8, 64},    // ResNet: no tap misses a tile
  };
  std::mt19937 rng(11);
  int old_deadlocks = 0, runs = 0;
  for (const auto& v : shapes) {
    const ConvWgmmaGeom g = ring_test_geom(v);
    const long long units = conv_wgmma_units(g);
    for (long long grid : {units, std::min<long long>(units, 3), 1LL}) {
      for (long long cta : {0LL, grid - 1}) {
        const auto program = ring_program(g, cta, grid);
        for (int stages : {2, 3, 4, 6, 8})
          for (int consumers : {1, 2}) {
            ++runs;
            const std::string e = run_conv_ring(program, stages, consumers, SkipPolicy::kTakesNoSlot, rng);
            ASSERT_EQ(e, "") << "shape " << v[1] << "x" << v[2] << " C " << v[3] << " grid " << grid << " cta " << cta
                             << " stages " << stages << " consumers " << consumers;
            if (!run_conv_ring(program, stages, consumers, SkipPolicy::kTakesSlot, rng).empty()) ++old_deadlocks;
          }
      }
    }
  }
  EXPECT_GT(runs, 100);
  EXPECT_GT(old_deadlocks, 0) << "the model no longer sees the first version's deadlock";
}


// PINGPONG's consumers run alternate units of a persistent CTA on the one ring: with the turn barriers no
// ring wait is ambiguous, none deadlocks and no stage is refilled while read, for every STAGES, odd and
// even unit counts, units whose taps all miss (no slots) and the ragged shapes above. Without the turns,
// consumer 1 would wait on its first k-tile's stage while that barrier is phases behind: the model must
// see that too.
TEST(ConvWgmmaRing, PingpongConsumersTakeTurnsOnTheRing) {
  const std::vector<std::vector<int>> shapes = {
      {1, 9, 9, 128, 32, 3, 3, 1, 1, 1, 8, 8, 32},
      {2, 6, 6, 16, 16, 3, 3, 1, 4, 1, 8, 8, 32},
      {1, 17, 33, 256, 64, 3, 3, 1, 1, 1, 4, 16, 64},
      {4, 56, 56, 64, 64, 3, 3, 1, 1, 1, 16, 16, 64},
  };
  std::mt19937 rng(5);
  int runs = 0, unordered_failures = 0;
  for (const auto& v : shapes) {
    const ConvWgmmaGeom g = ring_test_geom(v);
    const long long units = conv_wgmma_units(g);
    for (long long grid : {std::min<long long>(units, 3), std::min<long long>(units, 2), 1LL}) {
      for (long long cta : {0LL, grid - 1}) {
        std::vector<int> loaded;
        for (long long u = cta; u < units; u += grid) {
          const ConvWgmmaUnit unit = conv_wgmma_unit(g, static_cast<int>(u));
          int n = 0;
          for (int kt = 0; kt < g.k_tiles; ++kt) n += conv_wgmma_box_outside(g, unit, conv_wgmma_tap(g, kt)) ? 0 : 1;
          ASSERT_EQ(conv_wgmma_loaded_k_tiles(g, unit), n);
          loaded.push_back(n);
        }
        for (int stages : {2, 3, 4, 6, 8}) {
          ++runs;
          ASSERT_EQ(run_pingpong_ring(loaded, stages, true, rng), "")
              << "shape " << v[1] << "x" << v[2] << " grid " << grid << " cta " << cta << " stages " << stages;
          if (loaded.size() > 1 && !run_pingpong_ring(loaded, stages, false, rng).empty()) ++unordered_failures;
        }
      }
    }
  }
  // Units with no slot at all (every tap outside) and a single unit.
  for (const std::vector<int>& loaded : std::vector<std::vector<int>>{{0, 3, 0, 0, 5}, {9}, {0}, {1, 1, 1, 1, 1, 1, 1}})
    for (int stages : {2, 4}) {
      ++runs;
      ASSERT_EQ(run_pingpong_ring(loaded, stages, true, rng), "") << "stages " << stages;
    }
  EXPECT_GT(runs, 60);
  EXPECT_GT(unordered_failures, 0) << "the model no longer sees why the turns are there";
}

}  // namespace
}  // namespace tuner::templates
