#include "costmodel/row_op_model.h"

#include <algorithm>
#include <cmath>

namespace tuner::costmodel {

namespace {

constexpr double kDependentOpCycles = 4;       // a dependent FP32 add/max (the per-element chain of a stat pass)
constexpr double kMomentMergeCycles = 40;      // one pairwise (count, mean, M2) merge: a division and five dependent FP32 ops
constexpr double kL1WavefrontBytes = 128;      // an SM's L1 serves one 128-byte wavefront of a warp's access per cycle
constexpr int kShuffleSteps = 5;               // log2(32) butterfly steps of a warp reduction

}  // namespace

Occupancy row_op_occupancy(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu) {
  Occupancy o = occupancy(p, r, gpu);
  const int smem = r.static_shared_bytes + p.dynamic_shared_bytes;
  if (smem <= 0 || gpu.shared_carveouts_kb.empty() || o.blocks_per_sm <= 0) return o;
  // With no carveout preference set, the driver gives the kernel the smallest carveout that holds one
  // block (the rest of the array stays L1): a kernel of a few hundred bytes of shared memory gets 8 KB,
  // room for 7 blocks of 1 KB reserved + its own. The recording's strongest effect (ROWS_PER_BLOCK=1 is
  // up to 2x slower than 4 at 64-256 threads per row) matches this cap and nothing else we know.
  const int need = smem + kReservedSharedPerBlock;
  int carveout = gpu.shared_per_sm_bytes;
  for (int kb : gpu.shared_carveouts_kb)
    if (kb * 1024 >= need) { carveout = std::min(carveout, kb * 1024); break; }
  const int by_carveout = carveout / need;
  if (by_carveout < o.blocks_per_sm) {
    o.blocks_per_sm = by_carveout;
    o.limiter = "shared memory carveout";
    o.occupancy = static_cast<double>(o.blocks_per_sm * o.warps_per_block * gpu.warp_size) / gpu.max_threads_per_sm;
  }
  return o;
}

SimEstimate estimate_row_op(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu,
                            const RowModelParams& k) {
  SimEstimate e;
  e.reason = launch_limit_violation(p, r, gpu);
  if (!e.reason.empty()) return e;
  const RowOpProfile& row = p.row;
  e.occupancy = row_op_occupancy(p, r, gpu);
  if (e.occupancy.blocks_per_sm <= 0 || row.rows <= 0 || row.cols <= 0) {
    e.reason = "no block fits on an SM (limited by " + e.occupancy.limiter + ")";
    return e;
  }
  e.launchable = true;
  const double clock_hz = gpu.boost_clock_ghz * 1e9;
  const int64_t rt = std::max(row.row_threads, 1), rpb = std::max(row.rows_per_block, 1);
  const int64_t vec = std::max(row.vec, 1);

  // --- Waves: the busiest SM's blocks (quantised over the SMs), in rounds of the resident ones. ---
  const int64_t blocks = ceil_div(row.rows, rpb);
  const int64_t per_sm = ceil_div(blocks, gpu.sm_count);
  const int64_t resident = std::min<int64_t>(e.occupancy.blocks_per_sm, per_sm);
  // A partial last round counts by its share: a finished block's slot takes the next block at once.
  const double rounds = static_cast<double>(per_sm) / static_cast<double>(resident);
  e.waves = static_cast<double>(blocks) / (static_cast<double>(e.occupancy.blocks_per_sm) * gpu.sm_count);

  // --- One row group's dependent chain, in cycles: what a round lasts when nothing hides it. ---
  const int64_t chunks = ceil_div(row.cols, rt * vec);  // vector loads per thread per pass
  const int passes = row.global_reads();
  const int stat_passes = row.one_pass ? 1 : 2;
  // Memory round trips. Only a pass of scalar loads (VEC=1: straight-line guarded loads) lets the compiler
  // unroll the loop and batch its loads; a vector load sits behind the run-time vec_ok branch and a cached
  // row's unrolled loop behind its early exit, so those passes wait for each load before the next. A
  // prefetched cached row (CACHE 2) issues all its loads before the first use: one round trip.
  const double per_trip = (row.vec == 1 && !row.cache) ? std::max(1.0, k.scalar_loads_per_trip) : 1.0;
  const double trips_per_pass = std::ceil(static_cast<double>(chunks) / std::min(per_trip, static_cast<double>(chunks)));
  double round_trips = row.cache ? (row.prefetch ? 1.0 : static_cast<double>(chunks)) : passes * trips_per_pass;
  if (row.layernorm && row.cache)  // gamma and beta are still read in the output pass
    round_trips += static_cast<double>(chunks);
  double chain = round_trips * k.memory_latency_cycles;
  // Per-chunk dependent arithmetic of the statistics: a chunk's own statistics (a dependent op per
  // element, two for the moments' mean and M2) and one merge into the running ones, else one dependent
  // add or max per element and stat pass.
  const double merge = row.layernorm ? kMomentMergeCycles : k.merge_cycles;
  double per_chunk = 0;
  if (row.one_pass)
    per_chunk = merge + (row.layernorm ? 2 : 1) * vec * kDependentOpCycles;
  else
    per_chunk = stat_passes * vec * kDependentOpCycles;
  chain += static_cast<double>(chunks) * per_chunk;
  // Reductions: a butterfly over the warp (merges in one-pass); with several warps per row, two
  // barriers and every thread combining each warp's partial from shared memory in turn.
  const double combine_step = row.one_pass ? merge : 0.0;
  const double warp_reduce = kShuffleSteps * (k.shuffle_cycles + combine_step);
  const double cross_warp =
      rt > 32 ? 2 * k.barrier_cycles + static_cast<double>(rt / 32) * (k.shuffle_cycles + combine_step) : 0.0;
  chain += stat_passes == 1 ? (warp_reduce + cross_warp) : 2 * (warp_reduce + cross_warp);
  e.latency_ms = rounds * chain / clock_hz * 1e3;

  // --- Transfer: compulsory DRAM bytes plus the re-reads that miss L2, and the L2 traffic itself. ---
  const double row_bytes = static_cast<double>(row.cols) * row.elem_bytes;
  const double rows_on_sm = static_cast<double>(std::min(per_sm * rpb, row.rows));
  const double in_flight = static_cast<double>(std::min(resident * rpb * gpu.sm_count, row.rows)) * row_bytes;
  // The rows in flight are re-read before L2 evicts them unless they outgrow it: the share that does
  // not fit misses.
  const double l2_room = k.l2_share * static_cast<double>(gpu.l2_bytes);
  const double miss = in_flight > l2_room ? (in_flight - l2_room) / in_flight : 0.0;
  const double dram_bytes = rows_on_sm * row_bytes * (2.0 + (passes - 1) * miss);
  const double l2_bytes = rows_on_sm * row_bytes * (passes + 1.0 + (row.layernorm ? 2.0 : 0.0));
  e.dram_ms = dram_bytes / (gpu.dram_bandwidth_gbps * 1e9 * k.dram_efficiency / gpu.sm_count) * 1e3;
  e.l2_ms = l2_bytes / (gpu.l2_bandwidth_gbps * 1e9 / gpu.sm_count) * 1e3;
  e.shared_ms = 0;
  // Load/store issue: every global access of a warp (row reads, gamma and beta, the output write) is
  // one or more 128-byte L1 wavefronts, one per cycle; element-wise accesses (cols % vec != 0) take
  // vec times the instructions of vector ones and fill half a wavefront (f16).
  const double accesses = rows_on_sm * static_cast<double>(row.cols) * (passes + 1.0 + (row.layernorm ? 2.0 : 0.0));
  const double warp_bytes = 32.0 * row.vector_width() * row.elem_bytes;
  const double wavefronts = accesses / (32.0 * row.vector_width()) * std::ceil(warp_bytes / kL1WavefrontBytes);
  e.compute_ms = wavefronts / clock_hz * 1e3;

  // Transfer and exposed latency add: a round's chain is latency the other resident rows' transfers do
  // not cover once the row groups wait on the same round trips.
  const double transfer = std::max({e.dram_ms, e.l2_ms, e.compute_ms});
  e.time_ms = transfer + e.latency_ms + kLaunchOverheadMs;
  e.bound = e.latency_ms > transfer ? "latency"
                                    : (e.compute_ms >= transfer ? "compute" : (e.dram_ms >= e.l2_ms ? "dram" : "l2"));
  return e;
}

}  // namespace tuner::costmodel
