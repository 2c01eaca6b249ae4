// gemm_wgmma.cuh: the Hopper GEMM (sm_90a): TMA bulk tensor copies into an mbarrier-guarded ring,
// wgmma.mma_async m64nNk16 from shared memory, a producer warpgroup and CONSUMERS consumer warpgroups
// (setmaxnreg). The tuner defines before including it: ELEM_F16 or ELEM_BF16, BM, BN, CONSUMERS, STAGES,
// GROUP_M, OUT_F32, SPLIT_K, PERSISTENT, EPILOGUE, CLUSTER, PINGPONG and CLUSTER_K (0 and 1 when absent),
// CONSUMER_REGS (the consumers' setmaxnreg.inc), and the shared-memory
// descriptor geometry A_SBO, A_LBO, A_K16, A_M64, B_SBO, B_LBO, B_K16 (templates/gemm_wgmma_source.h).
// Each CTA loops over its work units (wgmma_schedule.cuh): one when the grid has a CTA per unit, several
// when the grid is persistent; the ring's phases run on across units. With CLUSTER > 1 the CTAs of a
// thread-block cluster (compile-time __cluster_dims__) take adjacent block columns of one block row:
// each loads BM / CLUSTER of A's rows and multicasts them to all, and a stage is refilled only once the
// consumers of every CTA in the cluster have released it (they arrive on each CTA's empty barrier).
// PINGPONG 1 (two consumers, a persistent grid, no split-K): each consumer runs whole units of its own,
// the CTA's even units and its odd ones, so one consumer's drain and epilogue overlap the other's
// products; a turn barrier hands the ring over (consumer 1's unit j+1 starts waiting on its k-tiles only
// once consumer 0 has waited on all of unit j's, and so on), which keeps every ring wait within one
// phase of its barrier (conv2d_wgmma.cuh's protocol, modelled on the CPU in the conv and GEMM tests).
// CLUSTER_K > 1 (a CTA per unit, no split-K, no N-cluster): the cluster's CTAs take one tile and split its
// k-tiles (wgmma_k_share); ranks 1.. store their fp32 partial accumulators into rank 0's shared memory
// (distributed shared memory) and arrive on its reduction barrier (release at cluster scope); rank 0 waits
// (acquire), adds them in rank order and stores the tile. Split-K without partials in L2 or DRAM: for
// decode shapes, whose tiles alone leave SMs idle.
#pragma once
#include "element.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kBM = BM, kBN = BN, kBK = 64;   // block tile; k-tile = the 128-byte swizzle span
constexpr int kConsumers = CONSUMERS;         // consumer warpgroups
constexpr int kStages = STAGES;               // shared-buffer ring depth
constexpr int kGroupM = GROUP_M;              // block-rows swept together
constexpr int kSplitK = SPLIT_K;              // K splits, reduced in fp32 through the workspace
constexpr int kPersistentCtas = PERSISTENT;   // 0: a CTA per work unit; else a persistent grid's CTAs
constexpr int kConsumerRegs = CONSUMER_REGS;  // setmaxnreg.inc of the consumers
constexpr int kEpilogue = EPILOGUE;           // 0: C from registers; 1: staged through shared memory
constexpr int kCluster = CLUSTER;             // CTAs per cluster along N, sharing A's rows by multicast
#ifndef PINGPONG
#define PINGPONG 0
#endif
constexpr bool kPingpong = PINGPONG != 0;     // consumers take alternate units instead of sharing rows
#ifndef CLUSTER_K
#define CLUSTER_K 1
#endif
constexpr int kClusterK = CLUSTER_K;          // CTAs per cluster along K, rank 0 summing their partials
constexpr int kClusterCtas = kCluster * kClusterK;
constexpr int kUnitConsumers = kPingpong ? 1 : kConsumers;  // consumer warpgroups per unit
// Shared-memory geometry in bytes (WgmmaSmemLayout): descriptor strides and start-address steps.
constexpr unsigned kASbo = A_SBO, kALbo = A_LBO, kAK16Step = A_K16, kAM64Step = A_M64;
constexpr unsigned kBSbo = B_SBO, kBLbo = B_LBO, kBK16Step = B_K16;
constexpr int kBBoxCols = B_BOX_COLS;          // columns per B box: 64 (128-byte swizzle) or 32 (64-byte)
constexpr unsigned kBLayout = B_SWIZZLE == 128 ? 1u : 2u;  // the descriptor's layout type: 128B or 64B swizzle
#if OUT_F32
typedef float out_t;                         // C's element type
#else
typedef elem_t out_t;
#endif
#include "tensor_map.cuh"
#include "wgmma_ptx.cuh"
__device__ __forceinline__ out_t to_out(float v) {
  if constexpr (sizeof(out_t) == 4) return v;
  else return from_float(v);
}
#include "wgmma_tile.cuh"
#include "output_tile.cuh"
#include "wgmma_schedule.cuh"

constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kRowsPerConsumer = kBM / kUnitConsumers;
constexpr int kMSub = kRowsPerConsumer / 64;      // m64 wgmma tiles per consumer
constexpr int kAcc = kBN / 2;                     // fp32 accumulators per thread per m64 tile
constexpr int kABytes = kBM * kBK * 2;            // one stage of A: kBM rows of 128 bytes
constexpr int kABoxRows = kBM / kCluster;         // A's rows each CTA of a cluster loads (and multicasts)
constexpr int kAShareBytes = kABoxRows * kBK * 2;
constexpr int kBBoxBytes = kBBoxCols * kBK * 2;   // one box of B: kBK rows of 128 (or 64) bytes
static_assert(kBLbo == kBBoxBytes && kAM64Step == 64 * kBK * 2, "the layout's strides are the boxes' sizes");
static_assert(kBBoxCols * 2 == B_SWIZZLE, "a box's k-row is one swizzle span");
constexpr int kBBytes = (kBN / kBBoxCols) * kBBoxBytes;
constexpr int kStageBytes = kABytes + kBBytes;
static_assert(kRowsPerConsumer % 64 == 0, "each consumer owns whole m64 tiles");
static_assert(!kPingpong || (kConsumers == 2 && kPersistentCtas > 0 && kSplitK == 1),
              "pingpong: two consumers, a persistent grid, no split-K (its epilogue joins the consumers)");
static_assert(kAcc % 4 == 0, "accumulators go to the cluster-K buffer as 16-byte vectors");
static_assert((kClusterK == 1 || kClusterK == 2 || kClusterK == 4) &&
                  (kClusterK == 1 || (kCluster == 1 && kSplitK == 1 && kPersistentCtas == 0 && !kPingpong)),
              "cluster_k 1, 2 or 4; above 1 only with a CTA per unit, no split-K, no N-cluster, no pingpong");
static_assert(kBN % kBBoxCols == 0 && kBN <= 256 && (kBN == 32) == (kBBoxCols == 32),
              "bn: 64-column boxes (or one 32-column box), wgmma n <= 256");
static_assert(kBM <= 256, "TMA box rows <= 256");
static_assert(kStages >= 2 && kStages <= 16, "stages 2..16");
static_assert(kSplitK >= 1 && kSplitK <= 8, "split_k 1..8 (the workspace holds 8 partial outputs)");
constexpr long long kMaxSplitOutputs = 1LL << 21;  // split-K partials exist when batch*M*N <= this
constexpr int kMaxSplit = 8;                        // partial outputs the workspace holds
static_assert(kABytes % 1024 == 0 && kBBoxBytes % 1024 == 0, "swizzle patterns stay 1024-byte aligned");
static_assert((kCluster == 1 || kCluster == 2 || kCluster == 4) && kAShareBytes % 1024 == 0,
              "cluster 1, 2 or 4; each CTA's share of A keeps the 128-byte swizzle's 1024-byte alignment");
#if CLUSTER * CLUSTER_K > 1
#define WGMMA_CLUSTER_DIMS __cluster_dims__(CLUSTER * CLUSTER_K, 1, 1)
#else
#define WGMMA_CLUSTER_DIMS
#endif

// Calls f(i, e, r, c) for each pair of fp32 accumulators a consumer thread holds whose row is inside M:
// acc[i][e] and acc[i][e + 1] of m64 tile i are C(r, c) and C(r, c + 1). Accumulator e of m64 tile i
// sits at row warp*16 + lane/4 + 8*((e/2)%2), column 8*(e/4) + 2*(lane%4) + e%2 of the consumer's rows.
template <typename F>
__device__ __forceinline__ void for_each_acc_pair(int row_base, int col0, int M, int warp, int lane, F&& f) {
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row_base + i * 64 + warp * 16 + lane / 4 + h * 8;
        if (r < M) f(i, j * 4 + h * 2, r, col0 + j * 8 + (lane % 4) * 2);
      }
}

#include "wgmma_epilogue.cuh"

// A consumer warp is done with a stage: its arrival on the stage's empty barrier in every CTA of the
// cluster (each CTA's producer refills the stage of all of them with its share of A). Lane r arrives
// on CTA r's barrier, so the cluster's arrivals go out in parallel; lanes >= kCluster do nothing.
__device__ __forceinline__ void release_stage(unsigned empty_bar, int lane) {
  if constexpr (kCluster == 1) {
    if (lane == 0) mbar_arrive(empty_bar);
  } else {
    if (lane < kCluster) mbar_arrive_cluster(empty_bar, static_cast<unsigned>(lane));
  }
}

extern "C" __global__ void __launch_bounds__(kThreads, 1) WGMMA_CLUSTER_DIMS
gemm_tc_wgmma(const elem_t* __restrict__ A, const elem_t* __restrict__ B, out_t* __restrict__ C, float* workspace,
              const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b, int M, int N, int K,
              int batches) {
  extern __shared__ __align__(1024) unsigned char wgmma_smem[];
  __shared__ __align__(8) unsigned long long full_bar[kStages];   // the stage's copies have landed
  __shared__ __align__(8) unsigned long long empty_bar[kStages];  // every consumer warp is done with it
  __shared__ __align__(8) unsigned long long turn_bar[2];  // pingpong: consumer c may wait on its unit's k-tiles
  __shared__ __align__(8) unsigned long long red_bar;      // cluster-K: the other ranks' partials have landed
  // The ring starts at the first 1024-byte boundary (the launch asks for 1024 spare bytes).
  const unsigned ring = (smem_u32(wgmma_smem) + 1023u) & ~1023u;

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      mbar_init(smem_u32(&empty_bar[s]), 4 * kUnitConsumers * kCluster);  // the unit's consumer warps, cluster-wide
    }
    if constexpr (kPingpong)
      for (int c = 0; c < 2; ++c) mbar_init(smem_u32(&turn_bar[c]), 4);
    if constexpr (kClusterK > 1) mbar_init(smem_u32(&red_bar), (kClusterK - 1) * 128 * kConsumers);
    mbar_init_fence();
  }
  // The cluster's barriers are initialised before any CTA multicasts into another or arrives on its.
  if constexpr (kClusterCtas > 1) cluster_sync();
  else __syncthreads();

  // The CTA's rank in its cluster: along N (A's share it multicasts) or along K (its share of the k-tiles).
  const int rank = kCluster > 1 ? static_cast<int>(cluster_rank()) : 0;
  const int rank_k = kClusterK > 1 ? static_cast<int>(cluster_rank()) : 0;
  // A persistent grid's units span the batch; otherwise blockIdx.z is the batch.
  const WgmmaGrid grid = wgmma_grid(M, N, K, kBM, kBN, kBK, kSplitK, kGroupM, kCluster, kPersistentCtas > 0 ? batches : 1);
  const int units = wgmma_units(grid);
  // A persistent cluster strides the units by the grid's clusters; otherwise there is one per unit.
  const int first_unit = static_cast<int>(blockIdx.x) / kClusterCtas;
  const int unit_step = kPersistentCtas > 0 ? static_cast<int>(gridDim.x) / kCluster : units;

  if (warpgroup == 0) {
    // Producer: one thread keeps the ring full over all the CTA's units (the next unit's k-tiles load
    // while the consumers store the previous one); the rest of the warpgroup idles with few registers.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // k-tiles issued so far by this CTA: the ring position
      for (int u = first_unit; u < units; u += unit_step) {
        const WgmmaUnit w = wgmma_k_share(wgmma_unit(grid, u, rank), rank_k, kClusterK);
        const int batch = static_cast<int>(blockIdx.z) + w.batch;
        const int row0 = w.block_row * kBM, col0 = w.block_col * kBN;
        // B boxes wholly past N are not fetched (their columns are never stored): TMA's zero fill is
        // documented for boxes that overlap the tensor, not for boxes entirely outside it. An idle CTA
        // of a partial cluster (col0 >= N) fetches no B, only its share of A for the others.
        const int b_boxes_left = col0 < N ? (N - col0 + kBBoxCols - 1) / kBBoxCols : 0;
        const int b_boxes = b_boxes_left < kBN / kBBoxCols ? b_boxes_left : kBN / kBBoxCols;
        // A's shares wholly past M (decode: M=16 in a 64-row tile) are not fetched by any CTA of the
        // cluster; their rows feed only outputs past M, which are never stored.
        const int rows_left = M - row0;
        const int a_shares = kCluster == 1 ? 1 : (rows_left >= kBM ? kCluster : (rows_left + kABoxRows - 1) / kABoxRows);
        const unsigned stage_tx = static_cast<unsigned>(a_shares * kAShareBytes + b_boxes * kBBoxBytes);
        for (int kt = w.kt_begin; kt < w.kt_end; ++kt, ++it) {
          const WgmmaSlot slot = wgmma_slot(it, kStages);
          if (slot.reuse) mbar_wait(smem_u32(&empty_bar[slot.stage]), slot.empty_parity);
          const unsigned bar = smem_u32(&full_bar[slot.stage]);
          const unsigned a_dst = ring + static_cast<unsigned>(slot.stage * kStageBytes);
          mbar_arrive_expect_tx(bar, stage_tx);  // out-of-bounds parts of a box count too (zero-filled)
          if constexpr (kCluster == 1) {
            tma_load_3d(a_dst, &tmap_a, bar, kt * kBK, row0, batch);
          } else if (rank < a_shares) {
            // This CTA's share of A's rows, to the same stage of every CTA in the cluster: each stage
            // receives all kABytes, a share from each CTA (some may land before this arrive; the
            // transaction count may run ahead within the phase).
            tma_load_3d_multicast(a_dst + rank * kAShareBytes, &tmap_a, bar, kt * kBK, row0 + rank * kABoxRows, batch,
                                  static_cast<unsigned short>((1u << kCluster) - 1u));
          }
          for (int j = 0; j < b_boxes; ++j)
            tma_load_3d(a_dst + kABytes + j * kBLbo, &tmap_b, bar, col0 + j * kBBoxCols, kt * kBK, batch);
        }
      }
    }
    // No CTA leaves while another of its cluster may still arrive on its barriers.
    if constexpr (kClusterCtas > 1) cluster_sync();
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int consumer = warpgroup - 1;
  const int ctid = tid % 128;
  const int warp = ctid / 32, lane = ctid % 32;
  const bool pair_ok = N % 2 == 0;
  int it = 0;  // k-tiles consumed so far by this CTA: follows the producer's count
  int round = 0;  // pingpong: units this consumer has run
  float acc[kMSub][kAcc];
  for (int u = first_unit, j = 0; u < units; u += unit_step, ++j) {
    const WgmmaUnit w = wgmma_k_share(wgmma_unit(grid, u, rank), rank_k, kClusterK);
    const int batch = static_cast<int>(blockIdx.z) + w.batch;
    const int row0 = w.block_row * kBM, col0 = w.block_col * kBN;
    if constexpr (kPingpong) {
      if (j % 2 != consumer) {  // the other consumer's unit: its k-tiles' slots pass by
        it += w.kt_end - w.kt_begin;
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

    int prev_stage = -1;  // the stage of this unit's previous k-tile, released one k-tile late
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt, ++it) {
      const WgmmaSlot slot = wgmma_slot(it, kStages);
      mbar_wait(smem_u32(&full_bar[slot.stage]), slot.full_parity);
      const unsigned stage_base = ring + static_cast<unsigned>(slot.stage * kStageBytes);
      const unsigned a_base = stage_base + static_cast<unsigned>((kPingpong ? 0 : consumer) * kRowsPerConsumer * 128);
      const unsigned b_base = stage_base + static_cast<unsigned>(kABytes);
      // A (K-major): 8-row groups kASbo apart, kAK16Step bytes per k16 step within the 128-byte row.
      // B (N-major): 8 k-row groups kBSbo apart, 64-column boxes kBLbo apart, kBK16Step per k16 step.
      wgmma_k_tile(acc, a_base, kAM64Step, kAK16Step, kALbo, kASbo, b_base, kBK16Step, kBLbo, kBSbo, kBLayout);
      // Keep this k-tile's wgmmas in flight; once the previous tile's have finished, release its stage.
      wgmma_wait<1>();
      fence_accumulators(acc);
      if (prev_stage >= 0) release_stage(smem_u32(&empty_bar[prev_stage]), lane);
      prev_stage = slot.stage;
    }
    // Every wait on the unit's k-tiles has passed: the other consumer may start waiting on its own.
    if (kPingpong && lane == 0) mbar_arrive(smem_u32(&turn_bar[1 - consumer]));
    wgmma_wait<0>();
    fence_accumulators(acc);
    // The unit's last stage is free too: the producer may refill it for the next unit meanwhile.
    if (prev_stage >= 0) release_stage(smem_u32(&empty_bar[prev_stage]), lane);
    if (kCluster > 1 && col0 >= N) continue;  // an idle CTA of a partial cluster: nothing to store
    if constexpr (kClusterK > 1) {
      // The reduction buffer, after the ring and epilogue 1's buffers, as 16-byte vectors of 4 accumulators:
      // [rank - 1][i][e / 4][consumer thread] (a warp's vectors are 512 contiguous bytes).
      constexpr int kSlotThreads = 128 * kConsumers;
      constexpr int kVecs = kMSub * kAcc / 4;  // vectors per thread (kAcc = BN / 2 is a multiple of 16)
      const unsigned red = ring + static_cast<unsigned>(kStages * kStageBytes + (kEpilogue ? kConsumers * 4 * kEpiWarpFloats * 4 : 0));
      const int me = consumer * 128 + ctid;
      if (rank_k > 0) {
        // This rank's partial into rank 0's buffer (one mapa: rank 0's window is contiguous), then the arrival
        // that releases it (cluster scope).
        const unsigned mine = cluster_addr(red, 0u) + static_cast<unsigned>(((rank_k - 1) * kVecs * kSlotThreads + me) * 16);
#pragma unroll
        for (int i = 0; i < kMSub; ++i)
#pragma unroll
          for (int e = 0; e < kAcc; e += 4)
            st_cluster_f32x4(mine + static_cast<unsigned>((i * kAcc + e) / 4 * kSlotThreads * 16), acc[i][e], acc[i][e + 1],
                             acc[i][e + 2], acc[i][e + 3]);
        mbar_arrive_release_cluster(cluster_addr(smem_u32(&red_bar), 0u));
        continue;  // rank 0 stores the tile
      }
      mbar_wait_acquire_cluster(smem_u32(&red_bar), 0u);  // one unit per CTA: the barrier's first phase
      const float4* parts = reinterpret_cast<const float4*>(wgmma_smem + (red - smem_u32(wgmma_smem))) + me;
#pragma unroll
      for (int r = 0; r < kClusterK - 1; ++r)  // in rank order: the sum repeats
#pragma unroll
        for (int i = 0; i < kMSub; ++i)
#pragma unroll
          for (int e = 0; e < kAcc; e += 4) {
            const float4 p = parts[(r * kVecs + (i * kAcc + e) / 4) * kSlotThreads];
            acc[i][e] += p.x, acc[i][e + 1] += p.y, acc[i][e + 2] += p.z, acc[i][e + 3] += p.w;
          }
    }

    const int row_base = row0 + (kPingpong ? 0 : consumer) * kRowsPerConsumer;
    // Epilogue 1's buffer: after the ring, one per consumer warp.
    float* const epi = reinterpret_cast<float*>(wgmma_smem + (ring - smem_u32(wgmma_smem)) + kStages * kStageBytes) +
                       (consumer * 4 + warp) * kEpiWarpFloats;
    (void)epi;
    if constexpr (kSplitK > 1) {
      // Every split writes its fp32 partial to workspace[split][batch][M][N]; the CTA whose split
      // arrives last at the tile's counter sums the partials in split order (deterministic), stores C
      // and resets the counter. No CTA waits for another, so no scheduling order can deadlock.
      const long long outputs = static_cast<long long>(batches) * M * N;
      float* partial = workspace + (static_cast<size_t>(w.split) * batches + batch) * M * N;
      if constexpr (kEpilogue) {
        for_each_staged_vec(epi, acc, row_base + warp * 16, col0, M, N, lane, [&](int r, int c, float4 v) {
          *reinterpret_cast<float4*>(partial + static_cast<size_t>(r) * N + c) = v;
        });
      } else {
        for_each_acc_pair(row_base, col0, M, warp, lane, [&](int i, int e, int r, int c) {
          store_pair(partial + static_cast<size_t>(r) * N + c, acc[i][e], acc[i][e + 1], c, N, pair_ok);
        });
      }
      __threadfence();
      named_barrier_sync<128 * kConsumers>();  // every consumer thread's partial is written and fenced
      __shared__ unsigned arrived;
      unsigned* counters =
          reinterpret_cast<unsigned*>(workspace + (outputs <= kMaxSplitOutputs ? kMaxSplit * outputs : 0));
      const int tile = (batch * grid.grid_m + w.block_row) * grid.grid_n + w.block_col;
      if (tid == 128) arrived = atomicAdd(&counters[tile], 1u);
      named_barrier_sync<128 * kConsumers>();  // the next unit writes `arrived` only after its first barrier
      if (arrived != kSplitK - 1) continue;
      __threadfence();
      if constexpr (kEpilogue) {
        // The partials as 16-byte vectors, summed in split order, straight to C.
#pragma unroll
        for (int i = 0; i < kMSub; ++i)
#pragma unroll
          for (int chunk = 0; chunk < kBN / kEpiCols; ++chunk)
            for_each_piece_vec(row_base + i * 64 + warp * 16, col0 + chunk * kEpiCols, M, N, lane,
                               [&](int, int, int r, int c) {
                                 float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                                 for (int s2 = 0; s2 < kSplitK; ++s2) {
                                   const float4 p = ld_cg_f32x4(workspace + (static_cast<size_t>(s2) * batches + batch) * M * N +
                                                                static_cast<size_t>(r) * N + c);
                                   s.x += p.x, s.y += p.y, s.z += p.z, s.w += p.w;
                                 }
                                 store_vec4(C + static_cast<size_t>(batch) * M * N + static_cast<size_t>(r) * N + c, s);
                               });
        if (tid == 128) counters[tile] = 0u;  // ready for the next launch
        continue;
      }
      for_each_acc_pair(row_base, col0, M, warp, lane, [&](int i, int e, int r, int c) {
        float s0 = 0.0f, s1 = 0.0f;
        for (int s2 = 0; s2 < kSplitK; ++s2) {
          const float* p = workspace + (static_cast<size_t>(s2) * batches + batch) * M * N + static_cast<size_t>(r) * N + c;
          if (c < N) s0 += ld_cg_f32(p);
          if (c + 1 < N) s1 += ld_cg_f32(p + 1);
        }
        acc[i][e] = s0;
        acc[i][e + 1] = s1;
      });
      if (tid == 128) counters[tile] = 0u;  // ready for the next launch
    }

    if constexpr (kEpilogue) {
      if constexpr (kSplitK == 1) {
        for_each_staged_vec(epi, acc, row_base + warp * 16, col0, M, N, lane, [&](int r, int c, float4 v) {
          store_vec4(C + static_cast<size_t>(batch) * M * N + static_cast<size_t>(r) * N + c, v);
        });
      }
    } else {
      for_each_acc_pair(row_base, col0, M, warp, lane, [&](int i, int e, int r, int c) {
        store_pair(C + static_cast<size_t>(batch) * M * N + static_cast<size_t>(r) * N + c, to_out(acc[i][e]),
                   to_out(acc[i][e + 1]), c, N, pair_ok);
      });
    }
  }
  if constexpr (kClusterCtas > 1) cluster_sync();
}
