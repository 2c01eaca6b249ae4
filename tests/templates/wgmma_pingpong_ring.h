// wgmma_pingpong_ring.h: a host model of one CTA's mbarrier ring under PINGPONG, shared by the tests of
// the two Hopper kernels that have it (conv2d_wgmma.cuh, gemm_wgmma.cuh): a producer thread, two consumer
// warpgroups of 4 warps that run alternate units whole, TMA copies that land at arbitrary later times,
// and mbarriers with their phase/parity semantics, run in random interleavings. It reports a deadlock, an
// ambiguous parity wait (a barrier two phases from the one awaited) or a stage refilled while read.
// The ring positions are the kernels' own wgmma_slot (wgmma_schedule.cuh, compiled as host C++).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "templates/kernels/wgmma_schedule.cuh"

namespace tuner::templates {

/// An mbarrier: `count` arrivals complete a phase.
struct RingBarrier {
  int count = 1, pending = 1, phase = 0;  // phases completed so far
  void arrive() {
    if (--pending == 0) ++phase, pending = count;
  }
};

/// One persistent CTA under PINGPONG: consumer c (warps 4c .. 4c + 3) runs the CTA's units j with j % 2 == c
/// whole, passing the other's slots by (`it` += their loaded k-tiles), the empty barriers count one
/// consumer's 4 warps, and, when `turns`, the kernel's turn barriers (4 arrivals each) order the
/// consumers: consumer 1's round r waits for consumer 0's round r to have passed all its full waits,
/// consumer 0's round r > 0 for consumer 1's round r - 1. `loaded[j]`: unit j's fetched k-tiles.
inline std::string run_pingpong_ring(const std::vector<int>& loaded, int stages, bool turns, std::mt19937& rng) {
  int total = 0;
  for (int n : loaded) total += n;
  const size_t S = static_cast<size_t>(stages);
  std::vector<RingBarrier> full(S), empty(S), turn(2);
  for (auto& b : empty) b.count = b.pending = 4;
  for (auto& b : turn) b.count = b.pending = 4;
  std::vector<int> readers(S, 0);
  std::string error;
  auto done_waiting = [&](const RingBarrier& b, unsigned parity, int target) {
    if (b.phase < target || b.phase > target + 1) error = "ambiguous parity wait";
    return static_cast<unsigned>(b.phase & 1) != parity;
  };
  const int units = static_cast<int>(loaded.size());
  struct Warp {
    int consumer = 0, j = 0, k = -1, it = 0, round = 0, prev_stage = -1;  // k -1: before the turn wait
  };
  std::vector<Warp> warps(8);
  for (int w = 0; w < 8; ++w) {
    Warp& x = warps[static_cast<size_t>(w)];
    x.consumer = x.j = w / 4;
    if (x.j < units && x.j == 1) x.it = loaded[0];
  }
  auto release = [&](int stage) {
    --readers[static_cast<size_t>(stage)];
    empty[static_cast<size_t>(stage)].arrive();
  };
  int produced = 0;
  for (int steps = 0;; ++steps) {
    std::vector<int> enabled;
    if (produced < total) {
      const WgmmaSlot s = wgmma_slot(produced, stages);
      if (!s.reuse || done_waiting(empty[static_cast<size_t>(s.stage)], s.empty_parity, produced / stages - 1))
        enabled.push_back(-1);
    }
    for (int w = 0; w < 8; ++w) {
      const Warp& x = warps[static_cast<size_t>(w)];
      if (x.j >= units) continue;
      if (x.k < 0) {  // the turn wait
        bool go = true;
        if (turns && x.consumer == 1) go = done_waiting(turn[1], static_cast<unsigned>(x.round & 1), x.round);
        else if (turns && x.round > 0) go = done_waiting(turn[0], static_cast<unsigned>((x.round - 1) & 1), x.round - 1);
        if (go) enabled.push_back(w);
      } else if (x.k < loaded[static_cast<size_t>(x.j)]) {
        const WgmmaSlot s = wgmma_slot(x.it, stages);
        if (done_waiting(full[static_cast<size_t>(s.stage)], s.full_parity, x.it / stages)) enabled.push_back(w);
      } else {
        enabled.push_back(w);  // the unit's end: signal, drain, epilogue
      }
    }
    if (!error.empty()) return error;
    if (enabled.empty()) {
      bool done = produced == total;
      for (const Warp& x : warps) done = done && x.j >= units;
      return done ? "" : "deadlock after " + std::to_string(steps) + " steps";
    }
    const int pick = enabled[std::uniform_int_distribution<size_t>(0, enabled.size() - 1)(rng)];
    if (pick < 0) {
      const WgmmaSlot s = wgmma_slot(produced, stages);
      if (readers[static_cast<size_t>(s.stage)] != 0) return "stage " + std::to_string(s.stage) + " refilled while read";
      full[static_cast<size_t>(s.stage)].arrive();
      ++produced;
      continue;
    }
    Warp& x = warps[static_cast<size_t>(pick)];
    if (x.k < 0) {
      x.k = 0, ++x.round;
    } else if (x.k < loaded[static_cast<size_t>(x.j)]) {
      const WgmmaSlot s = wgmma_slot(x.it, stages);
      ++readers[static_cast<size_t>(s.stage)];
      if (x.prev_stage >= 0) release(x.prev_stage);
      x.prev_stage = s.stage;
      ++x.it, ++x.k;
    } else {
      if (turns) turn[static_cast<size_t>(1 - x.consumer)].arrive();
      if (x.prev_stage >= 0) release(x.prev_stage);
      x.prev_stage = -1;
      // The next unit is the other consumer's: its slots pass by; then this consumer's own.
      if (x.j + 1 < units) x.it += loaded[static_cast<size_t>(x.j + 1)];
      x.j += 2, x.k = -1;
    }
  }
}

}  // namespace tuner::templates
