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
#include "wgmma_pingpong_ring.h"

namespace tuner::templates {
namespace {

struct Shape {
  int batch, m, n, k;
};

/// The units CTA (x, z) runs, in order, as the kernel's loops visit them.
std::vector<WgmmaUnit> units_of_cta(const WgmmaGrid& g, int x, int grid_x, bool persistent) {
  std::vector<WgmmaUnit> out;
  const int step = persistent ? grid_x / g.cluster : wgmma_units(g);
  for (int u = x / g.cluster; u < wgmma_units(g); u += step) out.push_back(wgmma_unit(g, u, x % g.cluster));
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
            for (int cluster : {1, 2, 4})
            for (int sms : {0, 1, 7, 114, 132}) {  // 0: a cluster per unit
              if (cluster == 4 && group == 8) continue;
              WgmmaTiling t;
              t.bm = bm;
              t.bn = bn;
              t.split_k = split;
              t.group_m = group;
              t.persistent_ctas = sms;
              t.cluster = cluster;
              const bool persistent = sms > 0;
              const WgmmaGrid g =
                  wgmma_grid(s.m, s.n, s.k, bm, bn, kWgmmaBk, split, group, cluster, persistent ? s.batch : 1);
              if (split > g.k_tiles) continue;  // the space's constraint: no empty split
              const int grid_x = static_cast<int>(wgmma_grid_x(t, s.m, s.n, s.k, s.batch));
              const int grid_z = static_cast<int>(wgmma_grid_z(t, s.batch));
              SCOPED_TRACE(std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                           std::to_string(s.k) + " tile " + std::to_string(bm) + "x" + std::to_string(bn) + " split " +
                           std::to_string(split) + " group " + std::to_string(group) + " cluster " +
                           std::to_string(cluster) + " ctas " + std::to_string(sms));
              ASSERT_GE(grid_x, cluster);
              ASSERT_EQ(grid_x % cluster, 0) << "whole clusters";
              if (!persistent) {
                ASSERT_EQ(grid_x, wgmma_units(g) * cluster);
                ASSERT_EQ(grid_z, s.batch);
              } else {
                ASSERT_EQ(grid_z, 1) << "a persistent grid's units span the batch";
                ASSERT_LE(grid_x, std::max(sms / cluster, 1) * cluster);
                ASSERT_LE(grid_x / cluster, wgmma_units(g)) << "never more clusters than units";
              }
              const int64_t counters = tc_workspace_floats(s.batch, s.m, s.n) -
                                       (int64_t{s.batch} * s.m * s.n <= kTcMaxSplitOutputElements
                                            ? int64_t{kTcMaxSplit} * s.batch * s.m * s.n
                                            : 0);
              // covered[(batch, row, col)][kt] and the splits seen per tile.
              std::vector<int> covered(static_cast<size_t>(s.batch) * g.grid_m * g.grid_n * g.k_tiles, 0);
              std::vector<int> splits(static_cast<size_t>(s.batch) * g.grid_m * g.grid_n, 0);
              for (int z = 0; z < grid_z; ++z)
                for (int x = 0; x < grid_x; ++x)
                  for (const WgmmaUnit& w : units_of_cta(g, x, grid_x, persistent)) {
                    const int batch = z + w.batch;
                    ASSERT_TRUE(batch >= 0 && batch < s.batch);
                    ASSERT_TRUE(w.block_row >= 0 && w.block_row < g.grid_m && w.block_col >= 0);
                    // A partial cluster's idle CTAs: past N, within the cluster's columns.
                    if (w.block_col >= g.grid_n) {
                      ASSERT_LT(w.block_col, g.col_groups * cluster);
                      continue;
                    }
                    ASSERT_LT(w.kt_begin, w.kt_end) << "an empty split";
                    ASSERT_TRUE(w.kt_begin >= 0 && w.kt_end <= g.k_tiles);
                    const int64_t tile = (int64_t{batch} * g.grid_m + w.block_row) * g.grid_n + w.block_col;
                    if (split > 1) {
                      ASSERT_LT(tile, counters) << "the split-K counter is past the workspace";
                    }
                    splits[static_cast<size_t>(tile)] += 1 << w.split;
                    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) ++covered[static_cast<size_t>(tile * g.k_tiles + kt)];
                  }
              for (int c : covered) ASSERT_EQ(c, 1);
              for (int sp : splits) ASSERT_EQ(sp, (1 << split) - 1) << "each split of a tile once";
              ++checked;
            }
  RecordProperty("schedules", checked);
  EXPECT_GT(checked, 7000);
}

// Cluster-K: the ranks of a cluster split each unit's k-tiles as split-K splits a tile; every k-tile of the
// unit is multiplied by exactly one rank, in order, and every rank has some when ck <= the unit's k-tiles.
TEST(WgmmaSchedule, ClusterKSharesCoverEachUnitsKTilesOnce) {
  for (int k : {64, 128, 200, 256, 520, 4096})
    for (int split : {1, 2})
      for (int ck : {2, 4}) {
        const WgmmaGrid g = wgmma_grid(64, 4096, k, 64, 64, kWgmmaBk, split, 1);
        for (int u = 0; u < wgmma_units(g); u += 7) {
          const WgmmaUnit w = wgmma_unit(g, u);
          int next = w.kt_begin;
          for (int r = 0; r < ck; ++r) {
            const WgmmaUnit s = wgmma_k_share(w, r, ck);
            EXPECT_EQ(s.kt_begin, next) << "k " << k << " unit " << u << " rank " << r;
            EXPECT_GE(s.kt_end, s.kt_begin);
            if (ck <= w.kt_end - w.kt_begin) {
              EXPECT_GT(s.kt_end, s.kt_begin) << "rank " << r << " has no k-tile";
            }
            EXPECT_EQ(s.block_row, w.block_row);
            EXPECT_EQ(s.block_col, w.block_col);
            next = s.kt_end;
          }
          EXPECT_EQ(next, w.kt_end);
        }
      }
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
  EXPECT_EQ(wgmma_grid_x(t, 16, 4096, 4096, 32), 132) << "the units of all 32 batch entries share the grid";
  EXPECT_EQ(wgmma_grid_z(t, 32), 1);
  t.split_k = 1;
  EXPECT_EQ(wgmma_grid_x(t, 16, 256, 4096, 1), 4) << "never more CTAs than units";
  // Clusters of 2 along N: 64 column groups of decode M=64 with 32-column tiles... 128 tiles, 64 clusters.
  t.bn = 32;
  t.cluster = 2;
  t.persistent_ctas = 0;
  EXPECT_EQ(wgmma_grid_x(t, 64, 4096, 4096, 1), 128);
  t.bn = 64;
  t.cluster = 4;
  EXPECT_EQ(wgmma_grid_x(t, 64, 4160, 4096, 1), 68) << "65 block columns: 17 clusters of 4, 3 CTAs idle";
  t.cluster = 2;
  t.persistent_ctas = 133;
  EXPECT_EQ(wgmma_grid_x(t, 64, 4096, 4096, 1), 64) << "32 units of 2 CTAs";
  EXPECT_EQ(wgmma_grid_x(t, 4096, 4096, 4096, 1), 132) << "66 clusters of 2 in 133 CTAs";
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
  bool release_own_cta_only = false;  ///< A cluster's consumers release a stage only on their own CTA's barrier.
};

/// One run of the ring model over the `ctas` CTAs of a cluster (1: no cluster); returns "" or what went
/// wrong. Each CTA's producer issues, per k-tile, its share of A multicast to every CTA of the cluster
/// and its own B: ctas + 1 copies land in each CTA's stage (ctas A shares and one B), each completing
/// one transaction unit on that CTA's full barrier, in any order, also before that CTA's own producer
/// has armed the barrier for the phase. Every consumer warp of the cluster releases a stage on every
/// CTA's empty barrier (4 * consumers * ctas arrivals a phase); a producer waits on its own.
std::string run_ring(const std::vector<WgmmaUnit>& units, int stages, int consumers, bool warps_in_lockstep,
                     std::mt19937& rng, RingBugs bugs = {}, int ctas = 1) {
  const size_t S = static_cast<size_t>(stages), P = static_cast<size_t>(ctas) + 1;  // pieces per stage
  const auto at = [S](int cta, int stage) { return static_cast<size_t>(cta) * S + static_cast<size_t>(stage); };
  std::vector<Barrier> full(S * static_cast<size_t>(ctas)), empty(S * static_cast<size_t>(ctas));
  for (auto& b : empty) b.count = b.pending = 4 * consumers * (bugs.release_own_cta_only ? 1 : ctas);
  // pieces[at(cta, stage) * P + p]: the k-tile (ring position) of the last copy p landed there (A share
  // of producer p < ctas, or B); readers: consumer warps of that CTA reading the stage now.
  std::vector<int> pieces(S * static_cast<size_t>(ctas) * P, -1);
  std::vector<int> readers(S * static_cast<size_t>(ctas), 0);
  struct Copy {
    int dst, stage, piece, it;
  };
  std::vector<Copy> in_flight;
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

  std::vector<int> produced(static_cast<size_t>(ctas), 0);
  // Consumer agents per CTA: a warpgroup (4 warps in lockstep) or a single warp each.
  const int agents = warps_in_lockstep ? consumers : 4 * consumers;
  const int arrivals_per_agent = warps_in_lockstep ? 4 : 1;
  struct Consumer {
    int cta = 0;
    int it = 0;
    int prev_stage = -1;  // this unit's previous k-tile's stage, not yet released
  };
  std::vector<Consumer> cons(static_cast<size_t>(agents * ctas));
  for (size_t a = 0; a < cons.size(); ++a) cons[a].cta = static_cast<int>(a) / agents;
  auto release = [&](int cta, int stage) {
    for (int a = 0; a < arrivals_per_agent; ++a) {
      --readers[at(cta, stage)];
      for (int r = 0; r < ctas; ++r)
        if (!bugs.release_own_cta_only || r == cta) empty[at(r, stage)].arrive();
    }
  };

  for (int steps = 0;; ++steps) {
    if (!error.empty()) return error;
    std::vector<int> enabled;  // r < ctas: producer r; ctas: a copy lands; ctas + 1 + a: consumer agent a
    for (int r = 0; r < ctas; ++r)
      if (produced[static_cast<size_t>(r)] < total) {
        const WgmmaSlot s = wgmma_slot(produced[static_cast<size_t>(r)], stages);
        if (!s.reuse || bugs.skip_empty_wait || static_cast<unsigned>(empty[at(r, s.stage)].phase & 1) != s.empty_parity)
          enabled.push_back(r);
      }
    if (!in_flight.empty()) enabled.push_back(ctas);
    for (size_t a = 0; a < cons.size(); ++a) {
      const Consumer& c = cons[a];
      if (c.it < total) {
        const WgmmaSlot s = wgmma_slot(c.it, stages);
        if (static_cast<unsigned>(full[at(c.cta, s.stage)].phase & 1) != s.full_parity)
          enabled.push_back(ctas + 1 + static_cast<int>(a));
      }
    }
    if (enabled.empty()) {
      bool done = in_flight.empty();
      for (int n : produced) done = done && n == total;
      for (const auto& c : cons) done = done && c.it == total;
      return done ? "" : "deadlock after " + std::to_string(steps) + " steps";
    }
    const int pick = enabled[std::uniform_int_distribution<size_t>(0, enabled.size() - 1)(rng)];
    if (pick < ctas) {
      int& n = produced[static_cast<size_t>(pick)];
      const WgmmaSlot s = wgmma_slot(n, stages);
      if (s.reuse && !bugs.skip_empty_wait) try_wait(empty[at(pick, s.stage)], s.empty_parity, n / stages - 1);
      for (int r = 0; r < ctas; ++r)
        if (readers[at(r, s.stage)] != 0)
          return "stage " + std::to_string(s.stage) + " refilled while a consumer reads it";
      // arrive.expect_tx for all the stage's pieces; the copies' units come later (or came already).
      full[at(pick, s.stage)].arrive(static_cast<int64_t>(P));
      for (int r = 0; r < ctas; ++r) in_flight.push_back({r, s.stage, pick, n});
      in_flight.push_back({pick, s.stage, ctas, n});
      ++n;
    } else if (pick == ctas) {
      const size_t i = std::uniform_int_distribution<size_t>(0, in_flight.size() - 1)(rng);
      const Copy cp = in_flight[i];
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
      if (readers[at(cp.dst, cp.stage)] != 0) return "a copy landed in a stage a consumer reads";
      pieces[at(cp.dst, cp.stage) * P + static_cast<size_t>(cp.piece)] = cp.it;
      full[at(cp.dst, cp.stage)].complete_tx(1);
    } else {
      Consumer& c = cons[static_cast<size_t>(pick - ctas - 1)];
      const WgmmaSlot s = wgmma_slot(c.it, stages);
      try_wait(full[at(c.cta, s.stage)], s.full_parity, c.it / stages);
      for (size_t p = 0; p < P; ++p) {
        const int held = pieces[at(c.cta, s.stage) * P + p];
        if (held != c.it)
          return "k-tile " + std::to_string(c.it) + " read stage " + std::to_string(s.stage) + " of CTA " +
                 std::to_string(c.cta) + " whose piece " + std::to_string(p) + " holds k-tile " + std::to_string(held);
      }
      readers[at(c.cta, s.stage)] += arrivals_per_agent;
      // wgmma_wait<1>: the previous k-tile's reads are done; release its stage (within the unit).
      if (c.prev_stage >= 0) release(c.cta, c.prev_stage);
      c.prev_stage = s.stage;
      if (unit_end[static_cast<size_t>(c.it)]) {
        // wgmma_wait<0> then the unit's last stage; the epilogue follows and holds no stage.
        if (!bugs.keep_last_stage) release(c.cta, c.prev_stage);
        else readers[at(c.cta, c.prev_stage)] -= arrivals_per_agent;  // reads over, never released
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
    const WgmmaGrid g = wgmma_grid(s.m, s.n, s.k, t.bm, t.bn, kWgmmaBk, split, 8, 1, persistent_ctas > 0 ? s.batch : 1);
    if (split > g.k_tiles) continue;
    const int grid_x = static_cast<int>(wgmma_grid_x(t, s.m, s.n, s.k, s.batch));
    out.push_back(units_of_cta(g, 0, grid_x, persistent_ctas > 0));
    out.push_back(units_of_cta(g, grid_x - 1, grid_x, persistent_ctas > 0));
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

// PINGPONG (gemm_wgmma.cuh, persistent grids without split-K): the CTA's even units are consumer 0's,
// its odd ones consumer 1's, each run whole, with the turn barriers conv2d_wgmma.cuh uses. Over the units
// the kernel's own schedule gives the busiest and the last CTA of each workload, no ring wait is
// ambiguous, none deadlocks and no stage is refilled while read; without the turns the model fails
// (so it sees why they are there).
TEST(WgmmaRing, PingpongConsumersTakeTurnsOverAPersistentCtasUnits) {
  std::mt19937 rng(32);
  int runs = 0, unordered_failures = 0;
  for (int ctas : {7, 132})
    for (const auto& program : ring_programs(1, ctas)) {
      std::vector<int> loaded;
      for (const WgmmaUnit& u : program) loaded.push_back(u.kt_end - u.kt_begin);
      for (int stages : {2, 3, 4, 5, 8, 12, 16})
        for (int rep = 0; rep < 3; ++rep) {
          ++runs;
          ASSERT_EQ(run_pingpong_ring(loaded, stages, true, rng), "")
              << "ctas " << ctas << " units " << loaded.size() << " stages " << stages;
          if (loaded.size() > 1 && !run_pingpong_ring(loaded, stages, false, rng).empty()) ++unordered_failures;
        }
    }
  EXPECT_GT(runs, 100);
  EXPECT_GT(unordered_failures, 0) << "the model no longer sees why the turns are there";
}

TEST(WgmmaRing, ClustersThatMulticastANeitherDeadlockNorOverwrite) {
  // 2 and 4 CTAs per cluster: every producer multicasts its share of A into every CTA's stage, so a
  // stage is refilled only when the consumers of all of them are done with it.
  std::mt19937 rng(29);
  int runs = 0;
  for (int ctas : {2, 4})
    for (int stages : {2, 3, 5})
      for (int consumers : {1, 2})
        for (int split : {1, 4})
          for (int persistent : {0, 7})
            for (const auto& program : ring_programs(split, persistent))
              for (bool lockstep : {true, false}) {
                const std::string e = run_ring(program, stages, consumers, lockstep, rng, {}, ctas);
                ASSERT_EQ(e, "") << ctas << " CTAs, stages " << stages << " consumers " << consumers << " split "
                                 << split << " units " << program.size() << (lockstep ? " lockstep" : " free warps");
                ++runs;
              }
  RecordProperty("runs", runs);
}

TEST(WgmmaRing, TheClusterModelCatchesConsumersThatReleaseOnlyTheirOwnCta) {
  // A persistent CTA's three units of 3 k-tiles, on a 2-stage ring, in a 2-CTA cluster. With consumers
  // that release a stage only to their own CTA's producer, the peer's producer multicasts its share of
  // A into a stage they may still read: some interleaving must show it.
  const WgmmaGrid g = wgmma_grid(64, 192, 192, 64, 64, 64, 1, 1);
  const std::vector<WgmmaUnit> units = units_of_cta(g, 0, 1, true);
  std::mt19937 rng(3);
  EXPECT_EQ(run_ring(units, 2, 1, false, rng, {}, 2), "");
  RingBugs own;
  own.release_own_cta_only = true;
  int caught = 0;
  for (int rep = 0; rep < 200; ++rep) caught += run_ring(units, 2, 1, false, rng, own, 2) != "";
  EXPECT_GT(caught, 0);
}

TEST(WgmmaRing, TheModelCatchesABrokenRing) {
  // A persistent CTA with three units of 3 k-tiles on a 2-stage ring.
  const WgmmaGrid g = wgmma_grid(64, 192, 192, 64, 64, 64, 1, 1);
  const std::vector<WgmmaUnit> units = units_of_cta(g, 0, 1, true);
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
