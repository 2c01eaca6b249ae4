// conv2d_wgmma.cuh: forward conv2d as a Hopper implicit GEMM (sm_90a): NHWC input, KRSC filter, NPQK
// output in the input type, fp32 accumulation on wgmma.mma_async. A producer warpgroup's thread issues
// TMA tensor copies of each k-tile (64 channels of one filter tap) into an mbarrier-guarded ring: the
// A operand straight from the 4-D input (a tile_h x tile_w pixel rectangle, strided by the conv's
// stride, zero-filled where the tap falls into the padding: TMA does the im2col), the B operand from
// the 4-D filter (bn filters, K-major). CONSUMERS consumer warpgroups run wgmma on them and store
// through the staged epilogue (wgmma_epilogue.cuh), each 4-column vector to its output pixel.
// PINGPONG 1 (two consumers, a persistent grid): each consumer runs whole units of its own, the CTA's
// even units and its odd ones, so one consumer's drain and epilogue overlap the other's products; a
// turn barrier hands the ring over (consumer 1's unit j+1 starts waiting on its k-tiles only once
// consumer 0 has waited on all of unit j's, and so on), which keeps every ring wait within one phase of
// its barrier (a wait two phases early would pass on the wrong phase's parity).
// The schedule and coordinates are conv_wgmma_schedule.cuh's (shared with the CPU tests). The tuner
// defines: ELEM_F16 or ELEM_BF16, BM, BN, TILE_W, CONSUMERS, STAGES, PERSISTENT, CONSUMER_REGS,
// PINGPONG (0 when absent), B_K_MAJOR 1 (wgmma_tile.cuh's K-major B), and the conv's shape CONV_N ..
// CONV_Q (optional: without them the schedule divides by the runtime scalars).
#pragma once
#include "element.cuh"

constexpr int kBM = BM, kBN = BN, kBK = 64;  // block tile: pixels x filters x channels of one tap
constexpr int kTileW = TILE_W, kTileH = BM / TILE_W;
constexpr int kConsumers = CONSUMERS;
constexpr int kStages = STAGES;
constexpr int kPersistentCtas = PERSISTENT;   // 0: a CTA per work unit; else a persistent grid
constexpr int kConsumerRegs = CONSUMER_REGS;
#ifndef PINGPONG
#define PINGPONG 0
#endif
constexpr bool kPingpong = PINGPONG != 0;      // consumers take alternate units instead of sharing rows
constexpr int kUnitConsumers = kPingpong ? 1 : kConsumers;  // consumer warpgroups per unit
typedef elem_t out_t;
#include "tensor_map.cuh"
#include "wgmma_ptx.cuh"
__device__ __forceinline__ out_t to_out(float v) { return from_float(v); }
#include "wgmma_tile.cuh"
#include "wgmma_schedule.cuh"
#include "conv_wgmma_schedule.cuh"

constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kRowsPerConsumer = kBM / kUnitConsumers;
constexpr int kMSub = kRowsPerConsumer / 64;  // m64 wgmma tiles per consumer
constexpr int kAcc = kBN / 2;                 // fp32 accumulators per thread per m64 tile
constexpr int kABytes = kBM * kBK * 2;        // A: bm pixel rows of 128 bytes (64 channels)
constexpr int kBBytes = kBN * kBK * 2;        // B: bn filter rows of 128 bytes
constexpr int kStageBytes = kABytes + kBBytes;
// Both operands K-major, 128-byte swizzle: 8-row core-matrix groups 1024 bytes apart, 32 bytes per k16.
constexpr unsigned kSbo = 1024, kLbo = 16, kK16Step = 32, kM64Step = 64 * 128;
static_assert(kTileW * kTileH == kBM && kBM % 64 == 0 && kBM <= 256, "bm = tile_h * tile_w, whole m64 tiles");
static_assert(kRowsPerConsumer % 64 == 0, "each consumer owns whole m64 tiles");
static_assert(kBN % 32 == 0 && kBN <= 256, "bn: 32..256 filters (the wgmma n, a TMA box of bn rows)");
static_assert(kStages >= 2 && kStages <= 16, "stages 2..16");
static_assert(!kPingpong || (kConsumers == 2 && kPersistentCtas > 0), "pingpong: two consumers, a persistent grid");
static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "swizzle patterns stay 1024-byte aligned");
#if !defined(B_K_MAJOR) || !B_K_MAJOR
#error "conv2d_wgmma needs B_K_MAJOR 1: its filter tile is K-major"
#endif

#include "wgmma_epilogue.cuh"

extern "C" __global__ void __launch_bounds__(kThreads, 1)
conv2d_igemm_wgmma(const elem_t* __restrict__ X, const elem_t* __restrict__ F, elem_t* __restrict__ Y,
                   const __grid_constant__ TensorMap tmap_x, const __grid_constant__ TensorMap tmap_f, int N, int H,
                   int W, int C, int K, int R, int S, int stride, int pad, int dilation, int P, int Q) {
  extern __shared__ __align__(1024) unsigned char wgmma_smem[];
  __shared__ __align__(8) unsigned long long full_bar[kStages];   // the stage's copies have landed
  __shared__ __align__(8) unsigned long long empty_bar[kStages];  // every consumer warp is done with it
  __shared__ __align__(8) unsigned long long turn_bar[2];  // pingpong: consumer c may wait on its unit's k-tiles
  const unsigned ring = (smem_u32(wgmma_smem) + 1023u) & ~1023u;  // the launch asks for 1024 spare bytes

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      mbar_init(smem_u32(&empty_bar[s]), 4 * kUnitConsumers);
    }
    for (int c = 0; c < 2; ++c) mbar_init(smem_u32(&turn_bar[c]), 4);
    mbar_init_fence();
  }
  __syncthreads();

#ifdef CONV_N
  // The shape is compiled in (the schedule's divisions are by constants): a launch with another traps.
  if (N != CONV_N || H != CONV_H || W != CONV_W || C != CONV_C || K != CONV_K || R != CONV_R || S != CONV_S ||
      stride != CONV_STRIDE || pad != CONV_PAD || dilation != CONV_DILATION || P != CONV_P || Q != CONV_Q)
    __trap();
  const ConvWgmmaGeom g = conv_wgmma_geom(CONV_N, CONV_H, CONV_W, CONV_C, CONV_K, CONV_R, CONV_S, CONV_STRIDE, CONV_PAD,
                                          CONV_DILATION, CONV_P, CONV_Q, kTileH, kTileW, kBN);
#else
  const ConvWgmmaGeom g = conv_wgmma_geom(N, H, W, C, K, R, S, stride, pad, dilation, P, Q, kTileH, kTileW, kBN);
#endif
  const int units = conv_wgmma_units(g);
  const int unit_step = kPersistentCtas > 0 ? static_cast<int>(gridDim.x) : units;

  if (warpgroup == 0) {
    // Producer: one thread keeps the ring full over all the CTA's units.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // k-tiles issued so far: the ring position (skipped k-tiles take no slot)
      for (int u = static_cast<int>(blockIdx.x); u < units; u += unit_step) {
        const ConvWgmmaUnit w = conv_wgmma_unit(g, u);
        for (int kt = 0; kt < g.k_tiles; ++kt) {
          const ConvWgmmaTap t = conv_wgmma_tap(g, kt);
          if (conv_wgmma_box_outside(g, w, t)) continue;  // nothing to load; the consumers skip it too
          const WgmmaSlot slot = wgmma_slot(it++, kStages);
          if (slot.reuse) mbar_wait(smem_u32(&empty_bar[slot.stage]), slot.empty_parity);
          const unsigned bar = smem_u32(&full_bar[slot.stage]);
          const unsigned dst = ring + static_cast<unsigned>(slot.stage * kStageBytes);
          mbar_arrive_expect_tx(bar, static_cast<unsigned>(kStageBytes));  // zero-filled parts count too
          tma_load_4d(dst, &tmap_x, bar, t.c0, conv_wgmma_box_w(g, w, t), conv_wgmma_box_h(g, w, t), w.n);
          tma_load_4d(dst + kABytes, &tmap_f, bar, t.c0, t.s, t.r, w.k0);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int consumer = warpgroup - 1;
  const int ctid = tid % 128;
  const int warp = ctid / 32, lane = ctid % 32;
  float* const epi = reinterpret_cast<float*>(wgmma_smem + (ring - smem_u32(wgmma_smem)) + kStages * kStageBytes) +
                     (consumer * 4 + warp) * kEpiWarpFloats;
  int it = 0;  // k-tiles consumed so far: follows the producer's count (skipped k-tiles take no slot)
  int round = 0;  // pingpong: units this consumer has run
  float acc[kMSub][kAcc];
  for (int u = static_cast<int>(blockIdx.x), j = 0; u < units; u += unit_step, ++j) {
    const ConvWgmmaUnit w = conv_wgmma_unit(g, u);
    if (kPingpong) {
      if (j % 2 != consumer) {  // the other consumer's unit: its k-tiles' slots pass by
        it += conv_wgmma_loaded_k_tiles(g, w);
        continue;
      }
      // Consumer 1's round r follows consumer 0's round r; consumer 0's round r, consumer 1's round r - 1.
      if (consumer == 1) mbar_wait(smem_u32(&turn_bar[1]), static_cast<unsigned>(round & 1));
      else if (round > 0) mbar_wait(smem_u32(&turn_bar[0]), static_cast<unsigned>((round - 1) & 1));
      ++round;
    }
#pragma unroll
    for (int i = 0; i < kMSub; ++i)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) acc[i][e] = 0.0f;

    int prev_stage = -1;  // the stage of the previous multiplied k-tile, released one k-tile late
    // A skipped k-tile must not occupy a ring slot: were it one, the consumers would hold the previous
    // k-tile's stage (released one k-tile late) across the run of skipped slots, and a run of STAGES - 1
    // of them (a tap missing the tile, C >= 64 * (STAGES - 1)) would deadlock the ring.
    for (int kt = 0; kt < g.k_tiles; ++kt) {
      if (conv_wgmma_box_outside(g, w, conv_wgmma_tap(g, kt))) continue;  // the producer skipped it too
      const WgmmaSlot slot = wgmma_slot(it++, kStages);
      mbar_wait(smem_u32(&full_bar[slot.stage]), slot.full_parity);
      const unsigned stage_base = ring + static_cast<unsigned>(slot.stage * kStageBytes);
      const unsigned a_base = stage_base + static_cast<unsigned>((kPingpong ? 0 : consumer) * kRowsPerConsumer * 128);
      const unsigned b_base = stage_base + static_cast<unsigned>(kABytes);
      wgmma_k_tile(acc, a_base, kM64Step, kK16Step, kLbo, kSbo, b_base, kK16Step, kLbo, kSbo, 1u);
      wgmma_wait<1>();
      fence_accumulators(acc);
      if (prev_stage >= 0 && lane == 0) mbar_arrive(smem_u32(&empty_bar[prev_stage]));
      prev_stage = slot.stage;
    }
    // Every wait on the unit's k-tiles has passed: the other consumer may start waiting on its own.
    if (kPingpong && lane == 0) mbar_arrive(smem_u32(&turn_bar[1 - consumer]));
    wgmma_wait<0>();
    fence_accumulators(acc);
    if (prev_stage >= 0 && lane == 0) mbar_arrive(smem_u32(&empty_bar[prev_stage]));

    // Local rows of the tile (all bm of them "inside"): each vector goes to its pixel's output row, or
    // nowhere past P or Q.
    for_each_staged_vec(epi, acc, (kPingpong ? 0 : consumer) * kRowsPerConsumer + warp * 16, w.k0, kBM, g.k, lane,
                        [&](int r, int c, float4 v) {
                          const long long row = conv_wgmma_out_row(g, w, r);
                          if (row >= 0) store_vec4(Y + row * g.k + c, v);
                        });
  }
}
