// gemm_wgmma.cuh: the Hopper GEMM (sm_90a): TMA bulk tensor copies into an mbarrier-guarded ring,
// wgmma.mma_async m64nNk16 from shared memory, a producer warpgroup and CONSUMERS consumer warpgroups
// (setmaxnreg). The tuner defines before including it: ELEM_F16 or ELEM_BF16, BM, BN, CONSUMERS, STAGES,
// GROUP_M, OUT_F32, CONSUMER_REGS (the consumers' setmaxnreg.inc), and the shared-memory descriptor
// geometry A_SBO, A_LBO, A_K16, A_M64, B_SBO, B_LBO, B_K16 (templates/gemm_wgmma_source.h).
#pragma once
#include "element.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kBM = BM, kBN = BN, kBK = 64;   // block tile; k-tile = the 128-byte swizzle span
constexpr int kConsumers = CONSUMERS;         // consumer warpgroups
constexpr int kStages = STAGES;               // shared-buffer ring depth
constexpr int kGroupM = GROUP_M;              // block-rows swept together
constexpr int kConsumerRegs = CONSUMER_REGS;  // setmaxnreg.inc of the consumers
// Shared-memory geometry in bytes (WgmmaSmemLayout): descriptor strides and start-address steps.
constexpr unsigned kASbo = A_SBO, kALbo = A_LBO, kAK16Step = A_K16, kAM64Step = A_M64;
constexpr unsigned kBSbo = B_SBO, kBLbo = B_LBO, kBK16Step = B_K16;
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

constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kRowsPerConsumer = kBM / kConsumers;
constexpr int kMSub = kRowsPerConsumer / 64;      // m64 wgmma tiles per consumer
constexpr int kAcc = kBN / 2;                     // fp32 accumulators per thread per m64 tile
constexpr int kABytes = kBM * kBK * 2;            // one stage of A: kBM rows of 128 bytes
constexpr int kBBoxBytes = 64 * kBK * 2;          // one 64-column box of B: kBK rows of 128 bytes
static_assert(kBLbo == kBBoxBytes && kAM64Step == 64 * kBK * 2, "the layout's strides are the boxes' sizes");
constexpr int kBBytes = (kBN / 64) * kBBoxBytes;
constexpr int kStageBytes = kABytes + kBBytes;
static_assert(kRowsPerConsumer % 64 == 0, "each consumer owns whole m64 tiles");
static_assert(kBN % 64 == 0 && kBN <= 256, "bn: 64-column boxes, wgmma n <= 256");
static_assert(kBM <= 256, "TMA box rows <= 256");
static_assert(kStages >= 2 && kStages <= 6, "stages 2..6");
static_assert(kABytes % 1024 == 0 && kBBoxBytes % 1024 == 0, "swizzle patterns stay 1024-byte aligned");

extern "C" __global__ void __launch_bounds__(kThreads, 1)
gemm_tc_wgmma(const elem_t* __restrict__ A, const elem_t* __restrict__ B, out_t* __restrict__ C,
              const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char wgmma_smem[];
  __shared__ __align__(8) unsigned long long full_bar[kStages];   // the stage's copies have landed
  __shared__ __align__(8) unsigned long long empty_bar[kStages];  // every consumer warp is done with it
  // The ring starts at the first 1024-byte boundary (the launch asks for 1024 spare bytes).
  const unsigned ring = (smem_u32(wgmma_smem) + 1023u) & ~1023u;

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      mbar_init(smem_u32(&empty_bar[s]), 4 * kConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();

  const int batch = static_cast<int>(blockIdx.z);
  const int grid_m = (M + kBM - 1) / kBM;
  const int grid_n = (N + kBN - 1) / kBN;
  const int bid = static_cast<int>(blockIdx.x);
  int block_row, block_col;
  raster_block<kGroupM>(bid, grid_m, grid_n, block_row, block_col);
  const int row0 = block_row * kBM, col0 = block_col * kBN;
  const int k_tiles = (K + kBK - 1) / kBK;

  if (warpgroup == 0) {
    // Producer: one thread keeps the ring full; the rest of the warpgroup idles with few registers.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      // B boxes wholly past N are not fetched (their columns are never stored): TMA's zero fill is
      // documented for boxes that overlap the tensor, not for boxes entirely outside it.
      const int b_boxes_left = (N - col0 + 63) / 64;
      const int b_boxes = b_boxes_left < kBN / 64 ? b_boxes_left : kBN / 64;
      const unsigned stage_tx = static_cast<unsigned>(kABytes + b_boxes * kBBoxBytes);
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        if (kt >= kStages) mbar_wait(smem_u32(&empty_bar[s]), static_cast<unsigned>((kt / kStages - 1) & 1));
        const unsigned bar = smem_u32(&full_bar[s]);
        const unsigned a_dst = ring + static_cast<unsigned>(s * kStageBytes);
        mbar_arrive_expect_tx(bar, stage_tx);  // out-of-bounds parts of a box count too (zero-filled)
        tma_load_3d(a_dst, &tmap_a, bar, kt * kBK, row0, batch);
        for (int j = 0; j < b_boxes; ++j)
          tma_load_3d(a_dst + kABytes + j * kBLbo, &tmap_b, bar, col0 + j * 64, kt * kBK, batch);
      }
    }
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int consumer = warpgroup - 1;
  const int ctid = tid % 128;
  const int warp = ctid / 32, lane = ctid % 32;
  float acc[kMSub][kAcc];
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[i][e] = 0.0f;

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kStages;
    mbar_wait(smem_u32(&full_bar[s]), static_cast<unsigned>((kt / kStages) & 1));
    const unsigned a_base = ring + static_cast<unsigned>(s * kStageBytes + consumer * kRowsPerConsumer * 128);
    const unsigned b_base = ring + static_cast<unsigned>(s * kStageBytes + kABytes);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      // A (K-major): 8-row groups kASbo apart, kAK16Step bytes per k16 step within the 128-byte row.
      // B (N-major): 8 k-row groups kBSbo apart, 64-column boxes kBLbo apart, kBK16Step per k16 step.
      const unsigned long long db = smem_desc(b_base + kk * kBK16Step, kBLbo, kBSbo);
#pragma unroll
      for (int i = 0; i < kMSub; ++i)
        wgmma_tile(acc[i], smem_desc(a_base + i * kAM64Step + kk * kAK16Step, kALbo, kASbo), db);
    }
    wgmma_commit();
    // Keep this k-tile's wgmmas in flight; once the previous tile's have finished, release its stage.
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < kMSub; ++i)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) fence_operand(acc[i][e]);
    if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&empty_bar[(kt - 1) % kStages]));
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) fence_operand(acc[i][e]);

  // Accumulator e of m64 tile i: row warp*16 + lane/4 + 8*((e/2)%2), column 8*(e/4) + 2*(lane%4) + e%2.
  const bool pair_ok = N % 2 == 0;
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + consumer * kRowsPerConsumer + i * 64 + warp * 16 + lane / 4 + h * 8;
        const int c = col0 + j * 8 + (lane % 4) * 2;
        if (r >= M) continue;
        store_pair(C + static_cast<size_t>(batch) * M * N + static_cast<size_t>(r) * N + c,
                   to_out(acc[i][j * 4 + h * 2]), to_out(acc[i][j * 4 + h * 2 + 1]), c, N, pair_ok);
      }
}
