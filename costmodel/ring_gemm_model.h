// The analytic model's path for GEMMs whose k-tiles stream through a
// shared-memory ring (a TMA producer fills STAGES buffers, asynchronous wgmma
// consumers drain them: gemm_tc_wgmma), derived from and checked against the
// whole-space H100 recordings of f16 4096^3 and 8192^3 (data/replay/).
//
// What decides such a kernel's time, per SM, in SM cycles:
//  - a k-tile's throughput cost: the larger of its MMA time (the tensor peak
//    at an achievable share) and its TMA transfer from L2 into shared memory
//    (per-SM L2 read bandwidth); CTAs resident together share both;
//  - the ring's latency bound (Little's law): a stage released after its
//    k-tile's MMAs is refilled one round trip plus its transfer later, and the
//    consumer needs it STAGES-1 k-tiles on, so a k-tile takes at least
//    (latency + transfer + release lag) / (STAGES - 1); loads that miss L2
//    pay DRAM's extra latency. The two bounds blend (a p-norm: a loaded
//    pipeline sits above both); in a 2-CTA N-cluster (CLUSTER: A multicast; not cluster-K) a stage
//    waits for both CTAs' release, a longer round trip, and a fresh cluster
//    for both CTAs to be scheduled;
//  - per work unit, the epilogue (store sectors: a thread stores a pair of
//    outputs, so f16 pairs fill half a 32-byte sector and f32 pairs a whole
//    one) and, without a persistent grid, the fill of a fresh CTA's ring;
//    split-K adds the fp32 partials' writes and the last split's read-back;
//  - wave quantisation: the busiest SM's units (tiles x splits over the SMs),
//    in rounds of the resident CTAs, or a persistent CTA's share of them;
//  - DRAM: A and B panels a wave of concurrent units touches, fetched again
//    unless L2 still holds them from an earlier wave (the GROUP_M raster keeps
//    a wave's panels few), plus C; it blends with the SM time.
// The parameters are physical (bandwidths, latencies, shares) and live in
// RingGemmParams so benchmarks can refit them on part of a recording and
// judge the rest. Pure and deterministic. Not responsible for mma.sync GEMMs
// (the generic path in analytic_model.cpp) nor row ops (row_op_model.h).
#pragma once

#include "costmodel/analytic_model.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/kernel_profile.h"

namespace tuner::costmodel {

/// The ring-GEMM model's parameters. Defaults: the coordinate-search fit of log times on every
/// gemm_tc_wgmma recording at once (bench/sim_vs_replay_bench --joint 1: f16 4096^3 and 8192^3 on an H100,
/// 4096^3 and decode M=64 on an H200, each weighing the same), from the previous values (the fit on the
/// H100 4096^3 recording alone), rounded; the epilogue latency sits at its bound (it also carries a fresh
/// CTA's start, which weighs most on decode). Left-one-out, fitted on the other three: 4096^3 0.92 / 0.94,
/// 8192^3 0.85, decode 0.22 (no other recording says what limits 64-row tiles). The two cluster terms came
/// at stop 34 from the five H100 recordings with clusters (batched, short K, 2048x8192x2048, 512x1024x4096,
/// decode M=16), the others fixed: a grid of both, by Spearman and first pick; 4-CTA clusters had left the
/// space by then. Same-config pairs measured 2-CTA clusters 9-36% slower there, where the model without
/// them saw none. Then pingpong_mma_share (new) and l2_share (0.8 before) on a grid over the nine
/// wgmma GEMM recordings: first picks 1.36x -> 1.00x on 2048x8192x2048 (where the model credited pingpong
/// with ~20% that same-config pairs did not show, and saw no gain from GROUP_M's raster where the real
/// one was 10%), 1.05x -> 1.04x on 4096^3, the rest unchanged but H200 4096^3 (1.01x -> 1.02x).
struct RingGemmParams {
  double l2_bytes_per_clk_per_sm = 128;   ///< L2 -> shared memory (TMA) bandwidth per SM with all SMs loading, bytes per cycle.
  double mma_efficiency = 0.8;           ///< Share of the tensor-core peak a k-tile's wgmmas reach.
  double ring_latency_cycles = 1200;      ///< A stage's release to its refill's first bytes when they hit L2, SM cycles.
  double dram_latency_cycles = 300;      ///< Extra latency of a k-tile load that misses L2, SM cycles.
  double release_share = 0.16;            ///< Share of a k-tile's MMA time that passes before its stage is released (wgmma.wait<1>).
  double blend_exponent = 2.5;             ///< Exponent of the p-norm that blends two bounds (ring and throughput; SM and DRAM).
  double epilogue_latency_cycles = 8000; ///< A unit's epilogue round trip (stores, and the split-K read-back), SM cycles.
  double epilogue_sector_cycles = 4;     ///< SM cycles per 32-byte sector the epilogue stores or reads.
  double l2_share = 0.3;                 ///< Share of L2 that keeps A and B panels from one wave to a later one.
  double dram_efficiency = 0.56;          ///< Achievable share of the DRAM bandwidth.
  double cluster_sync_cycles = 800;      ///< Added to a k-tile's round trip in a 2-CTA cluster: its stage is refilled once both CTAs released it.
  double pingpong_mma_share = 0.7;       ///< Share of the MMA rate a pingpong CTA keeps (one consumer's k-tiles at a time); fitted on GEMM recordings, applied to conv2d_igemm_wgmma's pingpong too.
  double cluster_launch_cycles = 4000;   ///< Added to a fresh (not persistent) 2-CTA cluster's first fill: its CTAs are scheduled together.
};

/// True when the profile describes a producer-ring GEMM (the template filled profile.gemm).
inline bool is_ring_gemm(const KernelProfile& p) {
  return p.async_mma && p.gemm.m > 0 && p.gemm.n > 0 && p.gemm.k > 0 && p.gemm.bm > 0 && p.gemm.bn > 0 &&
         p.gemm.bk > 0;
}

/// Bytes of A and B the kernel reads from DRAM: each wave of `concurrent` units (in launch order, the
/// GROUP_M raster) fetches the panels it touches unless they were touched within the last `l2_room`
/// bytes of panels (a reuse-distance estimate of L2 hits).
double ring_gemm_dram_input_bytes(const GemmTileProfile& g, int64_t concurrent, double l2_room);

/// The estimate of a ring-GEMM launch (p must satisfy is_ring_gemm; launch limits as estimate() checks).
SimEstimate estimate_ring_gemm(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu,
                               const RingGemmParams& params = {});

}  // namespace tuner::costmodel
