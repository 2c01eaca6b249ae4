// The C++ side of the fp32 SIMT GEMM kernel template (the kernel is
// templates/kernels/gemm_f32.cuh, its reference gemm_f32_reference.cuh).
//
// This file is responsible for turning a GemmTiling (block tile, register
// tile, k-slab depth, global vector width, shared-memory stages, padding and
// block rasterization) into the #define macros of the kernel file (the source
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
// (bm*bk) % (threads*vec) == 0 and (bk*bn) % (threads*vec) == 0 are NOT
// required: when they fail, the last round of loads is guarded per thread
// (the guard compiles away when they hold). The tuner may still require them
// for performance. bm and bn need not be multiples of 16 for correctness.
//
// Thread -> output mapping (interleaved in float4-wide runs, to keep the
// shared-memory reads of the compute loop free of bank conflicts):
//   tid = threadIdx.x, tx = tid % (bn/tn), ty = tid / (bn/tn);
//   vm = min(tm, 4), vn = min(tn, 4);
//   register row i (0 <= i < tm) is block row (i/vm)*(bm/tm)*vm + ty*vm + i%vm,
//   register col j (0 <= j < tn) is block col (j/vn)*(bn/tn)*vn + tx*vn + j%vn.
//
// Shared layout: As[stage][k][m] (A transposed, rows of bm+pad floats) then
// Bs[stage][k][n] (rows of bn+pad floats); stages==2 double-buffers through
// registers with one __syncthreads per k-slab, stages==1 is
// load / sync / compute / sync.
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
