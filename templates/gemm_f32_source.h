// The C++ side of the fp32 SIMT GEMM kernel template (the kernel is
// templates/kernels/gemm_f32.cuh, its reference gemm_f32_reference.cuh).
//
// This file is responsible for turning a GemmTiling (block tile, register
// tile, k-slab depth, global vector width, shared-memory stages, padding,
// block rasterization, warp tiling, fragment double buffering and cp.async)
// into the #define macros of the kernel file (the source
// NVRTC compiles: templates/kernel_files.h), the same for the naive reference
// kernel used to check results, and the small pieces
// of arithmetic (threads per block, dynamic shared-memory bytes) a launcher
// needs. It is NOT responsible for deciding which tilings are legal (the search
// space's constraint list does that; the exact divisibility the kernel needs is
// listed below so the two agree), for compiling, loading or launching the
// kernel, nor for raising the dynamic shared-memory limit above 48 KiB
// (cudaFuncAttributeMaxDynamicSharedMemorySize is the launcher's job).
//
// Kernel contract (C = A*B, all row-major, A is MxK, B is KxN, C is MxN):
//   extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
//   gemm_f32(const float* __restrict__ A, const float* __restrict__ B,
//            float* __restrict__ C, int M, int N, int K);
//   grid  = 1-D, ceil(M/bm) * ceil(N/bn) blocks (group_m rasterization inside);
//   block = 1-D, gemm_threads(t) threads (kThreads; kMinBlocks is an occupancy
//           hint from a register estimate, e.g. 2 for 128x128 with 8x8 per thread);
//   dynamic shared memory = gemm_shared_bytes(t) bytes (no static __shared__).
// Any positive M, N, K are correct: loads outside the matrices read 0, stores
// outside are skipped, and no out-of-bounds address is ever read. Vector
// (float2/float4) global loads and stores are used only when the whole vector
// is in bounds and the leading dimension and base pointer are aligned (checked
// once, uniformly, at run time); otherwise element-wise predicated accesses.
//
// Divisibility the generated kernel needs (static_asserts in the source fail
// the compile with a clear message when violated):
//   bm % tm == 0, bn % tn == 0            (thread grid (bm/tm) x (bn/tn))
//   bk % vec == 0, bn % vec == 0          (a global vector never straddles a slab row)
//   tm, tn in {1,2,4,8,16}; vec in {1,2,4}; stages in {1,2}; pad >= 0; group_m >= 1
//   threads = (bm/tm)*(bn/tn) in [1, 1024]
//   warp_n in {0,1,2,4,8,16,32}; with warp_n > 0 the warp tile wm x wn = (32/warp_n)*tm x
//   warp_n*tn divides bm x bn; cp_async needs stages == 2 and sm_80+
// (bm*bk) % (threads*vec) == 0 and (bk*bn) % (threads*vec) == 0 are NOT
// required: when they fail, the last round of loads is guarded per thread
// (the guard compiles away when they hold). The tuner may still require them
// for performance. bm and bn need not be multiples of 16 for correctness.
//
// Thread -> output mapping (templates/kernels/gemm_f32_layout.cuh, where the kernel and the CPU
// tests share it): the block tile is split into wm x wn thread-group tiles of whole warps (wm = bm
// and wn = bn: one group, the original layout); inside a group the threads form (wm/tm) x (wn/tn)
// lanes, n fastest, and a thread's tm x tn register tile is interleaved in float4-wide runs
// (vm = min(tm, 4) rows, vn = min(tn, 4) columns) so the compute loop reads shared memory with
// float4 loads that the lanes of a warp share (broadcast) or spread over distinct banks.
//   g = tid / group_threads, lane = tid % group_threads,
//   register row i -> (g / (bn/wn))*wm + (i/vm)*(wm/tm)*vm + (lane / (wn/tn))*vm + i%vm,
//   register col j -> (g % (bn/wn))*wn + (j/vn)*(wn/tn)*vn + (lane % (wn/tn))*vn + j%vn.
//
// Shared layout: As[stage][k][m] (A transposed, rows of bm+pad floats) then
// Bs[stage][k][n] (rows of bn+pad floats); stages==2 double-buffers through
// registers with one __syncthreads per k-slab, stages==1 is
// load / sync / compute / sync. cp_async (stages == 2, sm_80+) copies the B slabs
// global -> shared with cp.async instead of through registers (A still goes through
// registers, to be transposed). frag_db double-buffers the per-k-step A/B fragments in
// registers (k-step kk+1 read from shared memory while kk's FMAs run).
#pragma once

#include <cstddef>
#include <string>

namespace tuner::templates {

/// Compile-time shape of one gemm_f32 kernel. Every field has a default.
struct GemmTiling {
  int bm = 64;       ///< Block tile rows of C (16..256); threads = (bm/tm)*(bn/tn).
  int bn = 64;       ///< Block tile cols of C (16..256).
  int tm = 4;        ///< Per-thread register tile rows (1,2,4,8,16).
  int tn = 4;        ///< Per-thread register tile cols (1,2,4,8,16).
  int bk = 16;       ///< K-slab depth staged in shared memory per step (8,16,32,64).
  int vec = 4;       ///< Global load width in floats: 1, 2 or 4 (float/float2/float4).
  int stages = 2;    ///< Shared buffers: 1 = load,sync,compute,sync; 2 = double buffering.
  int pad = 0;       ///< Extra floats per shared row against bank conflicts (0,1,2,4).
  int group_m = 1;   ///< Block rasterization: 1 = row-major; G>1 = G block-rows swept together.
  /// Warp tiling: lanes along n of a one-warp thread group (1, 2, 4, 8, 16 or 32; the tile is
  /// (32/warp_n)*tm x warp_n*tn); 0 = one group for the whole block (no warp tiling).
  int warp_n = 0;
  bool frag_db = false;   ///< Double-buffer the k-step fragments in registers.
  bool cp_async = false;  ///< B slabs global -> shared by cp.async (needs stages == 2, sm_80+).

  int wm() const { return warp_n > 0 ? (32 / warp_n) * tm : bm; }  ///< Thread-group tile rows.
  int wn() const { return warp_n > 0 ? warp_n * tn : bn; }         ///< Thread-group tile cols.
};

inline constexpr const char* kGemmKernelName = "gemm_f32";
inline constexpr const char* kGemmReferenceKernelName = "gemm_f32_reference";
/// Block edge (threads) of the reference kernel's 2-D launch: 16x16 threads,
/// gridDim = (ceil(N/16), ceil(M/16)).
inline constexpr int kGemmReferenceBlockDim = 16;

/// Source of gemm_f32 for tiling `t`: the tiling as #define macros and
/// `#include "gemm_f32.cuh"` (templates/kernel_files.h); NVRTC compiles it with
/// the kernel files as named headers, nvcc with -I templates/kernels.
std::string gemm_f32_source(const GemmTiling& t);

/// Source of the naive reference kernel gemm_f32_reference(A, B, C, M, N, K):
/// one thread per C element (blockIdx.x/threadIdx.x over N, blockIdx.y/threadIdx.y
/// over M), accumulating in double, writing float. Independent of any tiling.
std::string gemm_f32_reference_source();

inline constexpr const char* kGemmBatchedKernelName = "gemm_f32_batched";
inline constexpr const char* kGemmBatchedReferenceKernelName = "gemm_f32_batched_reference";

/// gemm_f32_source(t) for packed strided batches: the kernel, named gemm_f32_batched with the same
/// arguments, first moves A, B and C to batch blockIdx.z (A + z*M*K, B + z*K*N, C + z*M*N); launch
/// it with gridDim.z = batch. The alignment checks of the vector paths see the moved pointers.
std::string gemm_f32_batched_source(const GemmTiling& t);
/// The reference for batches: gemm_f32_reference with the same moves by blockIdx.z.
/// The 1x1 conv2d kernel (conv2d_gemm_simt): the same tiling with B transposed (the KRSC filter is
/// K x C) and conv2d_igemm's arguments (CONV_1X1 in gemm_f32.cuh). cp_async must be off.
std::string conv2d_gemm_f32_source(const GemmTiling& t);
std::string gemm_f32_batched_reference_source();

/// Threads per block: (bm/tm)*(bn/tn).
int gemm_threads(const GemmTiling& t);

/// Dynamic shared memory the kernel needs, in bytes:
/// stages * bk * ((bm+pad) + (bn+pad)) * sizeof(float).
size_t gemm_shared_bytes(const GemmTiling& t);

/// The text of gemm_f32.cuh and the files it includes, independent of the
/// tiling; hash it to version the template. Does not include the reference.
std::string gemm_f32_template_text();

}  // namespace tuner::templates
