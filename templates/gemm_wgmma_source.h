// The C++ side of the Hopper GEMM template (gemm_tc_wgmma, sm_90a; the kernel
// is templates/kernels/gemm_wgmma.cuh, configured by #define macros):
// C = A·B with A [M x K] and B [K x N] row-major in f16 or bf16, fp32
// accumulation on wgmma.mma_async, C in the input type or fp32; optionally
// batched (packed strided batches, the batch in blockIdx.z).
//
// The kernel is warp-specialised. Warpgroup 0 is the producer: it gives up
// registers (setmaxnreg.dec) and one thread issues TMA bulk tensor copies
// (cp.async.bulk.tensor.3d) of the A tile (bm x 64) and of B in 64 x 64 boxes
// into a `stages`-deep ring of shared buffers, each guarded by a pair of
// mbarriers (full: the copies' bytes have landed; empty: every consumer warp
// is done reading). Warpgroups 1..consumers take registers (setmaxnreg.inc),
// each owns bm/consumers rows of the block tile, and per 64-deep k-tile
// issues 4 x (bm/consumers/64) wgmma.m64n{bn}k16 reading both operands from
// shared memory through matrix descriptors. One k-tile's wgmmas stay in
// flight (wgmma.wait_group 1) while the next tile's are issued; a stage is
// released when the wgmmas that read it have completed. B boxes wholly past N
// are not fetched (the stage's expected bytes shrink to match).
//
// Work units (templates/kernels/wgmma_schedule.cuh, host and device code):
// a batch's work is ceil(M/bm) * ceil(ceil(N/bn) / cluster) cluster tiles
// times split_k K splits. Without persistence the grid has one cluster per
// unit and blockIdx.z is the batch; with it (persistent_ctas = the device's
// SM count) the grid is about persistent_ctas CTAs (a multiple of cluster,
// z = 1) whose clusters loop over the units of all batch entries, u =
// cluster id, + clusters, ...; the producer runs ahead into the next unit
// while the consumers store the previous one, and the ring's mbarrier phases
// continue across units (the k-tile count `it` runs over all the CTA's
// units). Clusters (cluster 2 or 4 in the kernel; the space offers 2 since stop 34; compile-time __cluster_dims__ along x):
// the CTAs of one take adjacent block columns of one block row; each TMA-loads
// bm / cluster of A's rows and multicasts them to every CTA of the cluster, so
// A crosses L2 once per cluster; consumers release a stage on the empty
// barrier of every CTA in the cluster, and a cluster barrier at the start and
// the end keeps every CTA's barriers alive while others use them. Split-K (split_k > 1) is gemm_tc's: each
// split writes an fp32 partial to the workspace and the CTA whose split
// arrives last at the tile's counter sums them in split order and stores C.
//
// Shared layouts are the ones TMA's 128-byte swizzle writes and wgmma's
// 128-byte-swizzle descriptors read: A is K-major (row r of the tile at r*128
// bytes, 16-byte chunks XOR-ed with r % 8), descriptor SBO 1024 (8-row
// groups), advanced 32 bytes per k16 step; B is N-major (MN-major, transposed
// operand) in 64-column boxes of 64 k-rows each, descriptor SBO 1024 (8 k-row
// groups) and LBO 64*128 = 8192 (the next 64 columns), advanced 2048 bytes
// per k16 step. Every stage buffer is 1024-byte aligned (the swizzle repeats
// every 1024 bytes of address).
//
// Kernel contract:
//   gemm_tc_wgmma(const elem_t* A, const elem_t* B, out_t* C, float* workspace, TensorMap tmap_a,
//                 TensorMap tmap_b, int M, int N, int K, int batch)
//   tmap_a: A as a 3-D tensor {K, M, batch}, box {64, bm / cluster, 1}; tmap_b: B as {N, K, batch}, box
//   {64, 64, 1}; both 128-byte swizzle, out-of-bounds elements zero-filled (this is what makes any
//   M and any N, K that are multiples of 8 correct: TMA strides must be 16-byte multiples).
//   grid = (wgmma_grid_x(t, M, N, K, batch), 1, wgmma_grid_z(t, batch)); block = 128 * (1 + consumers) threads;
//   workspace: gemm_tc's (tc_workspace_floats: split-K partials, then tile counters; zero before the
//   first launch, left zero), used only when split_k > 1;
//   dynamic shared memory = stages * (bm*64 + 64*bn) * 2 + 1024 bytes (the 1024 aligns the ring),
//   plus, with epilogue 1, kWgmmaEpilogueWarpBytes per consumer warp after the ring.
// Epilogue 0 stores each consumer thread's accumulator pairs straight to C (4 bytes per thread per
// row for f16: half of every 32-byte sector a warp's store touches is wasted). Epilogue 1 has each
// consumer warp stage its 16 x 32 pieces of the tile in a shared buffer of its own (fp32, rows padded
// to 40 floats so both the pair writes and the vector reads are free of bank conflicts) and store
// them as 4-column row vectors, 8 lanes per row: whole sectors, for C and for split-K's partials, whose
// reduction then reads 16-byte vectors too. It needs N % 4 == 0 (the template asks N % 8 == 0).
// Pingpong (two consumers, a persistent grid, no split-K) gives each consumer whole units, the CTA's
// even and its odd ones, so one consumer's epilogue runs while the other multiplies; turn mbarriers
// hand the ring from one to the other unit by unit (conv2d_wgmma's protocol).
// Cluster-K (cluster_k 2 or 4 in the kernel, the space offering 2 since stop 34; a CTA per unit, no split-K, no N-cluster): the cluster's CTAs take one tile and
// split its k-tiles; ranks 1.. send their fp32 accumulators to rank 0's shared memory (distributed shared
// memory, an mbarrier released at cluster scope), and rank 0 adds them in rank order and stores C: split-K
// without partials in the workspace, for shapes whose tiles leave SMs idle (decode). Its buffer follows the
// ring and epilogue 1's buffers: (cluster_k - 1) * consumers * 128 threads * accumulators * 4 bytes.
#pragma once

#include <cstdint>
#include <string>

#include "templates/workload.h"

namespace tuner::templates {

struct WgmmaTiling {
  DType dtype = DType::kF16;  ///< f16 or bf16 operands.
  int bm = 128, bn = 128;     ///< Block tile; bm / consumers is a multiple of 64, bn 32 or a multiple of 64 (<= 256).
  int consumers = 2;          ///< Consumer warpgroups (1 or 2).
  int stages = 4;             ///< Shared-buffer ring depth (2..16).
  int group_m = 8;            ///< Block rasterization.
  int out_f32 = 0;            ///< 1: C is fp32; 0: C in the input type.
  int split_k = 1;            ///< K splits reduced in fp32 through the workspace (1: none; <= 8).
  int persistent_ctas = 0;    ///< 0: one CTA per work unit; else about this many CTAs (the SM count) in all.
  int epilogue = 0;           ///< 0: C stored from registers; 1: staged through shared memory (16-byte rows).
  int cluster = 1;            ///< CTAs per thread-block cluster along N sharing A by TMA multicast (1, 2, 4; the space offers 1, 2).
  int pingpong = 0;           ///< 1: the two consumers run alternate units whole (persistent, no split-K).
  int cluster_k = 1;          ///< CTAs per cluster along K (1, 2, 4; the space offers 1, 2): one tile, its k-tiles split, summed in DSMEM.
};

/// The shared-memory geometry of one ring stage as the kernel's TMA destinations and wgmma
/// descriptors encode it, in bytes (one place: the generator bakes it into the source, and the tests
/// check it against the 128-byte-swizzled layout TMA writes). A stage holds A (bm rows of 128 bytes)
/// at offset 0, then B's 64-column boxes (64 k-rows of 128 bytes each) one b_lbo apart.
struct WgmmaSmemLayout {
  int a_sbo = 1024;       ///< A (K-major): between 8-row core-matrix groups.
  int a_lbo = 16;         ///< A: not used by K-major 128-byte swizzle (encoded as 1, as CUTLASS does).
  int a_k16_step = 32;    ///< A: start-address step per k16 (16 halves along the row).
  int a_m64_step = 8192;  ///< A: between a consumer's m64 tiles (64 rows).
  int b_box_cols = 64;    ///< B: columns per TMA box (one k-row of a box is b_swizzle bytes).
  int b_swizzle = 128;    ///< B: the swizzle of its boxes and descriptors, in bytes (128, or 64 for bn 32).
  int b_sbo = 1024;       ///< B (N-major): between 8-k-row groups.
  int b_lbo = 8192;       ///< B: between column boxes, the TMA destination stride too.
  int b_k16_step = 2048;  ///< B: start-address step per k16 (16 k-rows).
};
/// The layout for a block tile of bn columns: 64-column boxes with 128-byte swizzle, or for bn 32 one
/// 32-column box (64-byte k-rows) with 64-byte swizzle: SBO 512, k16 step 1024, LBO the box (4096).
WgmmaSmemLayout wgmma_smem_layout(int bn = 64);

inline constexpr const char* kWgmmaKernelName = "gemm_tc_wgmma";
inline constexpr int kWgmmaBk = 64;       ///< k-tile depth: 64 halves = the 128-byte swizzle span.
inline constexpr int kWgmmaBoxCols = 64;  ///< Columns of B per TMA box (32 when bn is 32).
/// Epilogue 1's shared buffer per consumer warp: 16 rows of 32 fp32 outputs padded to 40.
inline constexpr int kWgmmaEpilogueWarpBytes = 16 * 40 * 4;

int wgmma_threads(const WgmmaTiling& t);
size_t wgmma_shared_bytes(const WgmmaTiling& t);
/// The kernel's static shared memory at most: the ring's full and empty mbarriers (16 bytes a stage), the turn
/// and reduction barriers and split-K's counter, rounded up to the dynamic array's 1024-byte alignment; a block's
/// dynamic and static shared memory share its limit.
size_t wgmma_static_shared_bytes(const WgmmaTiling& t);
/// Block rows each consumer multiplies: bm with pingpong (a unit is one consumer's), else bm / consumers.
int wgmma_rows_per_consumer(const WgmmaTiling& t);
/// fp32 accumulators each consumer thread holds: (rows per consumer / 64) * bn / 2.
int wgmma_accumulators(const WgmmaTiling& t);
/// Registers a consumer thread gets with setmaxnreg.inc (the producer keeps 40).
int wgmma_consumer_registers(const WgmmaTiling& t);

/// The grid's x: cluster CTAs per work unit (cluster tiles * split_k) of a batch entry, or, persistent,
/// the CTAs of at most persistent_ctas / cluster clusters looping over the units of all batch entries
/// (at least one cluster, at most one per unit); always a multiple of the cluster.
int64_t wgmma_grid_x(const WgmmaTiling& t, int64_t m, int64_t n, int64_t k, int64_t batch);
/// The grid's z: the batch for a cluster per unit, 1 for a persistent grid.
int64_t wgmma_grid_z(const WgmmaTiling& t, int64_t batch);

std::string gemm_wgmma_source(const WgmmaTiling& t);
/// The reference kernel (gemm_tc's, double accumulation) with this kernel's arguments.
std::string gemm_wgmma_reference_source(DType d, bool out_f32);
std::string gemm_wgmma_template_text();

}  // namespace tuner::templates
