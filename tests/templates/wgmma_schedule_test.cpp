// The Hopper GEMM's work schedule and mbarrier ring, on the host: templates/kernels/wgmma_schedule.cuh
// compiles as host C++ here, so the functions the kernel runs are the ones checked.
//  - Coverage: over many shapes, tilings, SM counts, GROUP_M and SPLIT_K values, with and without a
//    persistent grid, every (batch, tile, k-tile) is computed by exactly one work unit of one CTA,
//    every split of a tile is non-empty and run once, and split-K counters stay inside the workspace.
//  - The ring: a host model of one CTA (a producer thread, CONSUMERS warpgroups of 4 warps, TMA copies
//    that land at arbitrary later times, mbarriers with their phase/parity semantics) run over many
//    random interleavings for the knob values of the space; it checks that no run deadlocks, no parity
//    wait is ambiguous (the barrier is never two phases away from the one awaited), no stage is
//    overwritten while a consumer still reads it, and every k-tile reads the data issued for it. Two
//    broken variants (a unit's last stage never released; the producer not waiting for the release)
//    show the model catches both kinds of bug.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "templates/gemm_tc_source.h"
#include "templates/gemm_wgmma_source.h"
#include "templates/kernels/wgmma_schedule.cuh"

namespace tuner::templates {
namespace {

struct Shape {
  int batch, m, n, k;
};

/// The units CTA (x, z) runs, in order, as the kernel's loops visit them.
std::vector<WgmmaUnit> units_of_cta(const WgmmaGrid& g, int x, int grid_x) {
  std::vector<WgmmaUnit> out;
  for (int u = x; u < wgmma_units(g); u += grid_x) out.push_back(wgmma_unit(g, u));
  return out;
}

TEST(WgmmaSchedule, EveryTileAndKTileIsComputedExactlyOnce) {
  const std::vector<Shape> shapes = {{1, 16, 4096, 4096}, {1, 64, 4096, 512},  {1, 200, 136, 304}, {3, 130, 72, 200},
                                     {1, 1, 8, 8},        {2, 777, 1000, 64}, {1, 4096, 4096, 512}, {5, 64, 520, 1000}};
  int checked = 0;
  for (const Shape& s : shapes)
    for (int bm : {64, 128, 192, 256})
      for (int bn : {64, 128, 256})
        for (int split : {1, 2, 3, 4, 8})
          for (int group : {1, 8})
            for (int sms : {0, 1, 7, 114, 132}) {  // 0: a CTA per unit
              WgmmaTiling t;
              t.bm = bm;
              t.bn = bn;
              t.split_k = split;
              t.group_m = group;
              t.persistent_ctas = sms;
              const WgmmaGrid g = wgmma_grid(s.m, s.n, s.k, bm, bn, kWgmmaBk, split, group);
              if (split > g.k_tiles) continue;  // the space's constraint: no empty split
              const int grid_x = static_cast<int>(wgmma_grid_x(t, s.m, s.n, s.k, s.batch));
              SCOPED_TRACE(std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                           std::to_string(s.k) + " tile " + std::to_string(bm) + "x" + std::to_string(bn) + " split " +
                           std::to_string(split) + " group " + std::to_string(group) + " ctas " + std::to_string(sms));
              ASSERT_GE(grid_x, 1);
              if (sms == 0) ASSERT_EQ(grid_x, wgmma_units(g));
              else ASSERT_LE(static_cast<int64_t>(grid_x) * s.batch, std::max<int64_t>(sms, s.batch) + s.batch);
              const int64_t counters = tc_workspace_floats(s.batch, s.m, s.n) -
                                       (int64_t{s.batch} * s.m * s.n <= kTcMaxSplitOutputElements
                                            ? int64_t{kTcMaxSplit} * s.batch * s.m * s.n
                                            : 0);
              // covered[(batch, row, col)][kt] and the splits seen per tile.
              std::vector<int> covered(static_cast<size_t>(s.batch) * g.grid_m * g.grid_n * g.k_tiles, 0);
              std::vector<int> splits(static_cast<size_t>(s.batch) * g.grid_m * g.grid_n, 0);
              for (int z = 0; z < s.batch; ++z)
                for (int x = 0; x < grid_x; ++x)
                  for (const WgmmaUnit& w : units_of_cta(g, x, grid_x)) {
                    ASSERT_TRUE(w.block_row >= 0 && w.block_row < g.grid_m && w.block_col >= 0 && w.block_col < g.grid_n);
                    ASSERT_LT(w.kt_begin, w.kt_end) << "an empty split";
                    ASSERT_TRUE(w.kt_begin >= 0 && w.kt_end <= g.k_tiles);
                    const int64_t tile = (int64_t{z} * g.grid_m + w.block_row) * g.grid_n + w.block_col;
                    if (split > 1) ASSERT_LT(tile, counters) << "the split-K counter is past the workspace";
                    splits[static_cast<size_t>(tile)] += 1 << w.split;
                    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) ++covered[static_cast<size_t>(tile * g.k_tiles + kt)];
                  }
              for (int c : covered) ASSERT_EQ(c, 1);
              for (int sp : splits) ASSERT_EQ(sp, (1 << split) - 1) << "each split of a tile once";
              ++checked;
            }
  RecordProperty("schedules", checked);
  EXPECT_GT(checked, 3000);
}

TEST(WgmmaSchedule, SplitsAreBalancedAndPersistentGridsFillTheSms) {
  // 40 k-tiles over 8 splits: 5 each; 9 over 4: 2, 2, 2, 3.
  const WgmmaGrid g = wgmma_grid(64, 64, 40 * 64, 64, 64, 64, 8, 1);
  for (int s = 0; s < 8; ++s) EXPECT_EQ(wgmma_unit(g, s).kt_end - wgmma_unit(g, s).kt_begin, 5);
  const WgmmaGrid g9 = wgmma_grid(64, 64, 9 * 64, 64, 64, 64, 4, 1);
  EXPECT_EQ(wgmma_unit(g9, 3).kt_end - wgmma_unit(g9, 3).kt_begin, 3);
  // Decode M=16, N=K=4096 with 64x64 tiles and 4 splits: 256 units; persistent on 132 SMs: 132 CTAs.
  WgmmaTiling t;
  t.bm = 64;
  t.bn = 64;
  t.split_k = 4;
  EXPECT_EQ(wgmma_grid_x(t, 16, 4096, 4096, 1), 256);
  t.persistent_ctas = 132;
  EXPECT_EQ(wgmma_grid_x(t, 16, 4096, 4096, 1), 132);
  EXPECT_EQ(wgmma_grid_x(t, 16, 4096, 4096, 32), 5) << "ceil(132 / 32) CTAs per batch";
  t.split_k = 1;
  EXPECT_EQ(wgmma_grid_x(t, 16, 256, 4096, 1), 4) << "never more CTAs than units";
}

// ---- the mbarrier ring ----

/// An mbarrier: `count` arrivals and the transaction bytes expected complete a phase.
struct Barrier {
  int count = 1, pending = 1;
  int64_t tx = 0;
  int phase = 0;  // completed phases
  void arrive(int64_t expect_tx = 0) {
    tx += expect_tx;
    --pending;
    maybe_complete();
  }
  void complete_tx(int64_t bytes) {
    tx -= bytes;
    maybe_complete();
  }
  void maybe_complete() {
    if (pending == 0 && tx == 0) {
      ++phase;
      pending = count;
    }
  }
};

struct RingBugs {
  bool keep_last_stage = false;  ///< Consumers do not release a unit's last stage.
  bool skip_empty_wait = false;  ///< The producer refills a stage without waiting for its release.
};

/// One run of the ring model; returns "" or what went wrong.
std::string run_ring(const std::vector<WgmmaUnit>& units, int stages, int consumers, bool warps_in_lockstep,
                     std::mt19937& rng, RingBugs bugs = {}) {
  std::vector<Barrier> full(static_cast<size_t>(stages)), empty(static_cast<size_t>(stages));
  for (auto& b : empty) b.count = b.pending = 4 * consumers;
  std::vector<int> data(static_cast<size_t>(stages), -1);    // the k-tile (ring position) a stage holds
  std::vector<int> readers(static_cast<size_t>(stages), 0);  // consumer warps reading the stage now
  std::vector<std::pair<int, int>> in_flight;                  // TMA copies: (stage, it)
  // Flattened k-tiles: the ring position it, and whether it ends its unit.
  std::vector<bool> unit_end;
  for (const auto& u : units)
    for (int kt = u.kt_begin; kt < u.kt_end; ++kt) unit_end.push_back(kt + 1 == u.kt_end);
  const int total = static_cast<int>(unit_end.size());
  // A parity wait for the completion of phase `target`: must see the barrier at target or target+1.
  std::string error;
  auto try_wait = [&](const Barrier& b, unsigned parity, int target) {
    if (b.phase < target || b.phase > target + 1)
      error = "ambiguous parity wait: phase " + std::to_string(b.phase) + ", waiting for " + std::to_string(target);
    const bool by_parity = static_cast<unsigned>(b.phase & 1) != parity;
    if (by_parity != (b.phase > target)) error = "parity disagrees with the phase";
    return by_parity;
  };

  int produced = 0;
  // Consumer agents: a warpgroup (4 warps in lockstep) or a single warp each.
  const int agents = warps_in_lockstep ? consumers : 4 * consumers;
  const int arrivals_per_agent = warps_in_lockstep ? 4 : 1;
  struct Consumer {
    int it = 0;
    int prev_stage = -1;  // this unit's previous k-tile's stage, not yet released
    int held = -1;        // the stage it reads now
  };
  std::vector<Consumer> cons(static_cast<size_t>(agents));
  auto release = [&](int stage) {
    for (int a = 0; a < arrivals_per_agent; ++a) {
      --readers[static_cast<size_t>(stage)];
      empty[static_cast<size_t>(stage)].arrive();
    }
  };

  for (int steps = 0;; ++steps) {
    if (!error.empty()) return error;
    std::vector<int> enabled;  // 0: producer; 1: a copy lands; 2 + a: consumer agent a
    if (produced < total) {
      const WgmmaSlot s = wgmma_slot(produced, stages);
      if (!s.reuse || bugs.skip_empty_wait ||
          static_cast<unsigned>(empty[static_cast<size_t>(s.stage)].phase & 1) != s.empty_parity)
        enabled.push_back(0);
    }
    if (!in_flight.empty()) enabled.push_back(1);
    for (int a = 0; a < agents; ++a) {
      const Consumer& c = cons[static_cast<size_t>(a)];
      if (c.it < total) {
        const WgmmaSlot s = wgmma_slot(c.it, stages);
        if (static_cast<unsigned>(full[static_cast<size_t>(s.stage)].phase & 1) != s.full_parity) enabled.push_back(2 + a);
      }
    }
    if (enabled.empty()) {
      bool done = produced == total && in_flight.empty();
      for (const auto& c : cons) done = done && c.it == total;
      return done ? "" : "deadlock after " + std::to_string(steps) + " steps";
    }
    const int pick = enabled[std::uniform_int_distribution<size_t>(0, enabled.size() - 1)(rng)];
    if (pick == 0) {
      const WgmmaSlot s = wgmma_slot(produced, stages);
      if (s.reuse && !bugs.skip_empty_wait) try_wait(empty[static_cast<size_t>(s.stage)], s.empty_parity, produced / stages - 1);
      if (readers[static_cast<size_t>(s.stage)] != 0)
        return "stage " + std::to_string(s.stage) + " refilled while a consumer reads it";
      full[static_cast<size_t>(s.stage)].arrive(1);  // arrive.expect_tx; the copy's bytes come later
      in_flight.push_back({s.stage, produced});
      ++produced;
    } else if (pick == 1) {
      const size_t i = std::uniform_int_distribution<size_t>(0, in_flight.size() - 1)(rng);
      const auto [stage, it] = in_flight[i];
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
      if (readers[static_cast<size_t>(stage)] != 0) return "a copy landed in a stage a consumer reads";
      data[static_cast<size_t>(stage)] = it;
      full[static_cast<size_t>(stage)].complete_tx(1);
    } else {
      Consumer& c = cons[static_cast<size_t>(pick - 2)];
      const WgmmaSlot s = wgmma_slot(c.it, stages);
      try_wait(full[static_cast<size_t>(s.stage)], s.full_parity, c.it / stages);
      if (data[static_cast<size_t>(s.stage)] != c.it)
        return "k-tile " + std::to_string(c.it) + " read stage " + std::to_string(s.stage) + " holding k-tile " +
               std::to_string(data[static_cast<size_t>(s.stage)]);
      readers[static_cast<size_t>(s.stage)] += arrivals_per_agent;
      // wgmma_wait<1>: the previous k-tile's reads are done; release its stage (within the unit).
      if (c.prev_stage >= 0) release(c.prev_stage);
      c.prev_stage = s.stage;
      if (unit_end[static_cast<size_t>(c.it)]) {
        // wgmma_wait<0> then the unit's last stage; the epilogue follows and holds no stage.
        if (!bugs.keep_last_stage) release(c.prev_stage);
        else readers[static_cast<size_t>(c.prev_stage)] -= arrivals_per_agent;  // reads over, never released
        c.prev_stage = -1;
      }
      ++c.it;
    }
  }
}

/// The units of the busiest CTA and of the last CTA of a few workloads, for a knob combination.
std::vector<std::vector<WgmmaUnit>> ring_programs(int split, int persistent_ctas) {
  std::vector<std::vector<WgmmaUnit>> out;
  const std::vector<Shape> shapes = {{1, 16, 4096, 1024}, {1, 200, 136, 304}, {1, 1024, 1024, 192}, {2, 130, 520, 576}};
  for (const Shape& s : shapes) {
    WgmmaTiling t;
    t.bm = 64;
    t.bn = 128;
    t.split_k = split;
    t.persistent_ctas = persistent_ctas;
    const WgmmaGrid g = wgmma_grid(s.m, s.n, s.k, t.bm, t.bn, kWgmmaBk, split, 8);
    if (split > g.k_tiles) continue;
    const int grid_x = static_cast<int>(wgmma_grid_x(t, s.m, s.n, s.k, s.batch));
    out.push_back(units_of_cta(g, 0, grid_x));
    out.push_back(units_of_cta(g, grid_x - 1, grid_x));
  }
  return out;
}

TEST(WgmmaRing, NoDeadlockNoOverwriteAcrossPersistentTiles) {
  std::mt19937 rng(16);
  int runs = 0;
  for (int stages = 2; stages <= 6; ++stages)
    for (int consumers : {1, 2})
      for (int split : {1, 2, 4, 8})
        for (int ctas : {0, 7, 132})
          for (const auto& program : ring_programs(split, ctas))
            for (bool lockstep : {true, false})
              for (int rep = 0; rep < 2; ++rep) {
                const std::string e = run_ring(program, stages, consumers, lockstep, rng);
                ASSERT_EQ(e, "") << "stages " << stages << " consumers " << consumers << " split " << split << " ctas "
                                 << ctas << " units " << program.size() << (lockstep ? " lockstep" : " free warps");
                ++runs;
              }
  RecordProperty("runs", runs);
}

TEST(WgmmaRing, TheModelCatchesABrokenRing) {
  // A persistent CTA with three units of 3 k-tiles on a 2-stage ring.
  const WgmmaGrid g = wgmma_grid(64, 192, 192, 64, 64, 64, 1, 1);
  const std::vector<WgmmaUnit> units = units_of_cta(g, 0, 1);
  ASSERT_EQ(units.size(), 3u);
  std::mt19937 rng(1);
  EXPECT_EQ(run_ring(units, 2, 2, true, rng), "");
  RingBugs keep;
  keep.keep_last_stage = true;
  EXPECT_NE(run_ring(units, 2, 2, true, rng, keep).find("deadlock"), std::string::npos);
  RingBugs skip;
  skip.skip_empty_wait = true;
  int caught = 0;
  for (int rep = 0; rep < 50; ++rep) caught += run_ring(units, 2, 2, false, rng, skip) != "";
  EXPECT_GT(caught, 0) << "refilling without waiting must be caught in some interleaving";
}

}  // namespace
}  // namespace tuner::templates
