// The analytic model's path for row-wise kernels (softmax, layernorm): what
// decides their time on a GPU, calibrated against a whole-space recording of
// softmax f16 4096x4096 on an H100 (data/replay/, docs/benchmarks.md).
//
// A row op moves each row through DRAM once or a few times and does little
// arithmetic, so its time is the DRAM (or L2) transfer time plus the latency
// the SMs fail to hide: per SM, the busiest SM's blocks in rounds of the
// resident ones, each round as long as one row group's dependent chain —
// memory round trips (fewer with wider vectors; only scalar loads are
// batched by loop unrolling, vector and cached-row loads wait one by one,
// unless a prefetched cached row issues them all at once), per-chunk merges,
// and the warp-shuffle, barrier and cross-warp combine steps of the row
// reductions. Load/store issue counts L1 wavefronts of the vector width the
// kernel really uses (element-wise when cols % vec != 0). Resident blocks follow registers,
// threads, block slots and the shared-memory carveout the driver picks by
// default (the smallest that holds one block, which caps kernels of tiny
// shared memory at 7 blocks per SM). Re-read passes hit L2 unless the rows in
// flight outgrow it.
//
// The few parameters are physical (latency in cycles, loads per round trip,
// bandwidth share, L2 share); RowModelParams holds them so benchmarks can
// refit them on part of a recording and check the rest. Pure, deterministic.
#pragma once

#include "costmodel/analytic_model.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/kernel_profile.h"

namespace tuner::costmodel {

/// The row-op model's parameters. Defaults: the least-squares fit of log times on the first random half
/// of the H100 softmax recording (bench/sim_vs_replay_bench, split 1), rounded; docs/benchmarks.md has
/// the held-out check.
struct RowModelParams {
  double memory_latency_cycles = 750;  ///< Loaded DRAM/L2 round trip of one dependent load, SM cycles.
  double scalar_loads_per_trip = 4;    ///< Loads a VEC=1 pass batches per round trip (its loop is unrolled).
  double merge_cycles = 150;           ///< One online-softmax merge of (max, sum) pairs: two exps and FMAs.
  double shuffle_cycles = 45;          ///< One warp-shuffle reduction step (or shared-memory read + op).
  double barrier_cycles = 50;          ///< One named barrier of a row group.
  double l2_share = 1.0;               ///< Share of L2 the rows in flight may occupy before re-reads miss.
  double dram_efficiency = 0.95;       ///< Achievable share of the DRAM bandwidth.
};

/// True when the profile describes a row op (the template filled profile.row).
inline bool is_row_op(const KernelProfile& p) { return p.row.rows > 0 && p.row.cols > 0; }

/// Resident blocks per SM of a row op: occupancy() further capped by the driver's default carveout.
Occupancy row_op_occupancy(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu);

/// The estimate of a row-op launch (p must satisfy is_row_op; launch limits are checked as estimate()
/// checks them).
SimEstimate estimate_row_op(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu,
                            const RowModelParams& params = {});

}  // namespace tuner::costmodel
