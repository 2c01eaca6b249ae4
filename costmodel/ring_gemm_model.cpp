#include "costmodel/ring_gemm_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tuner::costmodel {

namespace {

constexpr double kSectorBytes = 32;          // an L2 sector
constexpr int kPairThreadsPerRow = 4;        // an m64 wgmma accumulator row is spread over 4 threads,
constexpr int kOutputsPerThreadStore = 2;    // each storing a pair of adjacent outputs
constexpr int64_t kMaxSimulatedWaves = 4096; // the DRAM estimate walks at most this many waves, then scales

/// max(a, b) smoothed: (a^q + b^q)^(1/q), a queue's time between its bounds.
double blend(double a, double b, double q) {
  const double hi = std::max(a, b);
  if (hi <= 0) return 0;
  return hi * std::pow(std::pow(a / hi, q) + std::pow(b / hi, q), 1.0 / q);
}

struct Tile {
  int64_t row, col;
};

/// Unit u's tile within its batch entry: units are split-major within a tile, tiles rasterized GROUP_M
/// block-rows at a time (the kernel's wgmma_unit, templates/kernels/wgmma_schedule.cuh).
Tile tile_of(int64_t tile, int64_t grid_m, int64_t grid_n, int64_t group_m) {
  if (group_m <= 1) return {tile / grid_n, tile % grid_n};
  const int64_t in_group = group_m * grid_n;
  const int64_t first_row = (tile / in_group) * group_m;
  const int64_t group_rows = std::min(group_m, grid_m - first_row);
  const int64_t local = tile % in_group;
  return {first_row + local % group_rows, local / group_rows};
}

}  // namespace

double ring_gemm_dram_input_bytes(const GemmTileProfile& g, int64_t concurrent, double l2_room) {
  const int64_t grid_m = ceil_div(g.m, g.bm), grid_n = ceil_div(g.n, g.bn);
  const int64_t split = std::max(g.split_k, 1);
  const int64_t per_batch = grid_m * grid_n * split;
  const int64_t units = g.batch * per_batch;
  concurrent = std::max<int64_t>(1, std::min(concurrent, units));
  const double k_per_split = static_cast<double>(g.k) / static_cast<double>(split);
  const double a_bytes = static_cast<double>(std::min<int64_t>(g.bm, g.m)) * k_per_split * g.elem_bytes * g.a_dram_share;
  const double b_bytes = static_cast<double>(std::min<int64_t>(g.bn, g.n)) * k_per_split * g.elem_bytes;
  // Panels: A's (batch, block row, split) and B's (batch, block column, split). last[id]: the last wave
  // that touched it; footprint[w]: the bytes of distinct panels waves 0..w-1 touched.
  std::vector<int64_t> last_a(static_cast<size_t>(g.batch * grid_m * split), -1);
  std::vector<int64_t> last_b(static_cast<size_t>(g.batch * grid_n * split), -1);
  const int64_t waves = ceil_div(units, concurrent);
  const int64_t walked = std::min(waves, kMaxSimulatedWaves);
  std::vector<double> footprint(static_cast<size_t>(walked + 1), 0.0);
  double missed = 0;
  int64_t walked_units = 0;
  for (int64_t w = 0; w < walked; ++w) {
    double wave_bytes = 0;
    const auto touch = [&](std::vector<int64_t>& last, int64_t id, double bytes) {
      int64_t& seen = last[static_cast<size_t>(id)];
      if (seen == w) return;  // already counted in this wave
      // Bytes of other panels touched since its last use: L2 still holds it if they fit beside it.
      const bool hit = seen >= 0 && footprint[static_cast<size_t>(w)] - footprint[static_cast<size_t>(seen + 1)] +
                                            wave_bytes <= l2_room;
      if (!hit) missed += bytes;
      seen = w;
      wave_bytes += bytes;
    };
    for (int64_t u = w * concurrent; u < std::min(units, (w + 1) * concurrent); ++u, ++walked_units) {
      const int64_t batch = u / per_batch, in_batch = u % per_batch;
      const int64_t s = in_batch % split;
      const Tile t = tile_of(in_batch / split, grid_m, grid_n, g.group_m);
      touch(last_a, (batch * grid_m + t.row) * split + s, a_bytes);
      touch(last_b, (batch * grid_n + t.col) * split + s, b_bytes);
    }
    footprint[static_cast<size_t>(w + 1)] = footprint[static_cast<size_t>(w)] + wave_bytes;
  }
  return walked_units > 0 ? missed * static_cast<double>(units) / static_cast<double>(walked_units) : 0.0;
}

SimEstimate estimate_ring_gemm(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu,
                               const RingGemmParams& k) {
  SimEstimate e;
  e.reason = launch_limit_violation(p, r, gpu);
  if (!e.reason.empty()) return e;
  const GemmTileProfile& g = p.gemm;
  e.occupancy = occupancy(p, r, gpu);
  if (e.occupancy.blocks_per_sm <= 0) {
    e.reason = "no block fits on an SM (limited by " + e.occupancy.limiter + ")";
    return e;
  }
  e.launchable = true;
  const double clock_hz = gpu.boost_clock_ghz * 1e9;
  const double q = std::max(k.blend_exponent, 1.0);
  const int64_t split = std::max(g.split_k, 1);
  // CTAs' work units; a partial cluster's idle CTAs count (they hold an SM while loading A's share).
  const int64_t cluster = std::max(g.cluster, 1);
  const int64_t units = g.batch * ceil_div(g.m, g.bm) * (ceil_div(ceil_div(g.n, g.bn), cluster) * cluster) * split;
  const int64_t k_tiles = ceil_div(ceil_div(g.k, g.bk), split);  // the longest split's
  const int stages = std::max(p.stages, 2);

  // --- Concurrency: resident CTAs per SM, units per SM (wave quantisation), concurrent units. ---
  const int64_t slots = e.occupancy.blocks_per_sm;
  const bool persistent = g.persistent_ctas > 0;
  const int64_t ctas = persistent ? std::min<int64_t>(g.persistent_ctas, units) : units;
  const int64_t ctas_per_sm = ceil_div(ctas, gpu.sm_count);
  const int64_t concurrent = std::min<int64_t>(ctas, slots * gpu.sm_count);
  e.waves = static_cast<double>(units) / static_cast<double>(slots * gpu.sm_count);

  // --- DRAM: the panels waves of concurrent units fetch, C, and split-K partials that outgrow L2. ---
  const double l2_room = k.l2_share * static_cast<double>(gpu.l2_bytes);
  const double dram_in = ring_gemm_dram_input_bytes(g, concurrent, l2_room);
  const double outputs = static_cast<double>(g.batch * g.m * g.n);
  const double partials = split > 1 && !g.split_in_cluster ? 4.0 * outputs * static_cast<double>(split) : 0.0;
  const double dram_bytes = dram_in + outputs * g.out_bytes + (partials > l2_room ? 2.0 * partials : 0.0);
  const double dram_cycles = dram_bytes / (gpu.dram_bandwidth_gbps * 1e9 * k.dram_efficiency) * clock_hz;
  e.dram_ms = dram_cycles / clock_hz * 1e3;

  // --- One k-tile of one CTA. ---
  const double a_rows = static_cast<double>(std::min<int64_t>(g.bm, g.m));
  const double b_cols = static_cast<double>(std::min<int64_t>(g.bn, g.n));
  // What L2 serves per CTA and k-tile: A's rows once per cluster (multicast), B's columns.
  const double stage_bytes = (a_rows / static_cast<double>(cluster) + b_cols) * g.bk * g.elem_bytes;
  const double fma_per_clk = gpu.peak_fp16_tflops * 1e12 / 2.0 / (gpu.sm_count * clock_hz);
  const double mma = static_cast<double>(g.bm) * g.bn * g.bk /
                     (fma_per_clk * k.mma_efficiency * (g.epilogue_overlapped ? k.pingpong_mma_share : 1.0));
  const double transfer = stage_bytes / k.l2_bytes_per_clk_per_sm;
  const double l2_in = static_cast<double>(units) * static_cast<double>(k_tiles) * stage_bytes;
  const double miss_share = l2_in > 0 ? std::clamp(dram_in / l2_in, 0.0, 1.0) : 0.0;
  // In a cluster a stage is refilled once every CTA's consumers released it (a remote arrive) and the
  // multicast lands in each: a longer round trip.
  const double cluster_sync = static_cast<double>(cluster - 1) * k.cluster_sync_cycles;
  const double round_trip = k.ring_latency_cycles + miss_share * k.dram_latency_cycles + cluster_sync;
  const double ring = (round_trip + transfer + k.release_share * mma) / (stages - 1);
  // A fresh CTA waits for its first stage (a fresh cluster also for its CTAs to be scheduled together); a
  // persistent one refills during the previous epilogue.
  const double fill = round_trip + transfer + static_cast<double>(cluster - 1) * (persistent ? 0.0 : k.cluster_launch_cycles);

  // --- Epilogue per unit: C's store sectors (a split's share of them), split-K partials and read-back. ---
  const double tile_outputs = static_cast<double>(g.bm) * g.bn;
  const double segment = g.store_segment > 0 ? g.store_segment : kPairThreadsPerRow * kOutputsPerThreadStore;
  const double segments = tile_outputs / segment;
  const auto sectors_per_segment = [](double bytes) { return std::max(1.0, bytes / kSectorBytes); };
  double epilogue_sectors = segments * sectors_per_segment(segment * g.out_bytes) / split;
  double epilogue_trips = 1;
  if (split > 1 && g.split_in_cluster) {
    // The first CTA of the cluster stores the whole tile once the others' accumulators have landed.
    epilogue_sectors *= static_cast<double>(split);
    epilogue_trips += 1;
  } else if (split > 1) {
    const double partial_sectors = segments * sectors_per_segment(segment * 4.0);
    epilogue_sectors += partial_sectors * 2.0;  // every split writes its partial; the last reads all (on average one)
    epilogue_trips += 1;                        // the counter and the read-back wait for L2
  }
  const double epilogue = epilogue_trips * k.epilogue_latency_cycles + epilogue_sectors * k.epilogue_sector_cycles;

  // --- The busiest SM: rounds of `resident` CTAs, each k-tile the blend of shared throughput and ring. ---
  double sm_cycles = 0, compute_c = 0, l2_c = 0, latency_c = 0;
  // Pingpong: two consumers alternate, each running a unit's k-tiles then its epilogue while the other runs
  // its k-tiles, so a unit takes max(tiles, (tiles + epilogue) / 2); the epilogue each unit shows.
  const auto exposed = [&](double tiles) {
    return g.epilogue_overlapped ? std::max(0.0, (epilogue - tiles) / 2.0) : epilogue;
  };
  // One k-tile with `resident` CTAs sharing the SM: the blend of their shared throughput and the ring.
  const auto per_tile_of = [&](double resident) { return blend(resident * std::max(mma, transfer), ring, q); };
  const auto add = [&](double resident, double unit_rounds, bool fresh_fill) {
    if (resident <= 0 || unit_rounds <= 0) return;
    const double throughput = resident * std::max(mma, transfer);
    const double per_tile = per_tile_of(resident);
    const double tiles = static_cast<double>(k_tiles) * per_tile;
    const double exposed_epilogue = exposed(tiles);
    const double unit = tiles + exposed_epilogue + (fresh_fill ? fill : 0.0);
    sm_cycles += unit_rounds * unit;
    compute_c += unit_rounds * static_cast<double>(k_tiles) * resident * mma;
    l2_c += unit_rounds * static_cast<double>(k_tiles) * resident * transfer;
    latency_c += unit_rounds * (static_cast<double>(k_tiles) * std::max(0.0, per_tile - throughput) + exposed_epilogue +
                                (fresh_fill ? fill : 0.0));
  };
  if (persistent) {
    // Each CTA runs its share of the units back to back; CTAs beyond the resident slots wait a pass.
    const int64_t resident = std::min(slots, ctas_per_sm);
    const int64_t passes = ceil_div(ctas_per_sm, resident);
    const double per_cta = static_cast<double>(ceil_div(units, ctas));
    add(static_cast<double>(resident), static_cast<double>(passes) * per_cta, false);
    // A CTA's last epilogue has no other consumer's k-tiles to hide under: the rest of it shows once a pass.
    const double tail = fill + (epilogue - exposed(static_cast<double>(k_tiles) * per_tile_of(static_cast<double>(resident))));
    sm_cycles += static_cast<double>(passes) * tail;
    latency_c += static_cast<double>(passes) * tail;
  } else {
    const int64_t per_sm = ceil_div(units, gpu.sm_count);
    add(static_cast<double>(slots), static_cast<double>(per_sm / slots), true);
    add(static_cast<double>(per_sm % slots), 1.0, true);
  }
  e.compute_ms = compute_c / clock_hz * 1e3;
  e.l2_ms = l2_c / clock_hz * 1e3;
  e.latency_ms = latency_c / clock_hz * 1e3;
  e.shared_ms = 0;

  e.time_ms = blend(sm_cycles, dram_cycles, q) / clock_hz * 1e3 + kLaunchOverheadMs;
  struct Term {
    double ms;
    const char* name;
  };
  const Term terms[] = {{e.compute_ms, "compute"}, {e.l2_ms, "l2"}, {e.dram_ms, "dram"}, {e.latency_ms, "latency"}};
  e.bound = std::max_element(std::begin(terms), std::end(terms),
                             [](const Term& a, const Term& b) { return a.ms < b.ms; })->name;
  return e;
}

}  // namespace tuner::costmodel
