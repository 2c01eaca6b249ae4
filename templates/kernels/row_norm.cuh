// row_norm.cuh: what the row kernels (softmax_rows.cuh, layernorm_rows.cuh) share: the tiling
// constants, named barriers per row group, vector loads and stores of a row, and the chunk loop that
// keeps a row in registers (CACHE). The tuner defines before including an entry file: ELEM_F16 or
// ELEM_BF16 (or neither: f32), ROW_THREADS, ROWS_PER_BLOCK, VEC, ONE_PASS, CACHE, ITEMS; the entry file sets ROW_LAYERNORM.
// The statistics' merges and the thread -> column mapping are row_stats.cuh (host-tested).
#pragma once
#include "element.cuh"
#include "row_stats.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kRT = ROW_THREADS;      // threads per row
constexpr int kRPB = ROWS_PER_BLOCK;  // rows per block
constexpr int kVec = VEC;             // elements per global access
constexpr int kOnePass = ONE_PASS;    // online softmax / pairwise-merged moments (row_stats.cuh)
constexpr int kCache = CACHE;         // 0: re-read per pass; 1: fp32 registers; 2: element registers, loads first
constexpr int kItems = ITEMS;         // vectors per thread when cached
constexpr int kIsLayernorm = ROW_LAYERNORM;

constexpr int kThreads = kRT * kRPB;
constexpr int kWarpsPerRow = kRT / 32;
static_assert(kRT % 32 == 0 && kRT <= 1024, "row_threads must be whole warps");
static_assert(kThreads <= 1024, "threads per block <= 1024");
static_assert(kVec == 1 || kVec == 2 || kVec == 4 || kVec == 8, "vec must be 1, 2, 4 or 8");
static_assert(kVec * sizeof(elem_t) <= 16, "at most 16 bytes per access");
static_assert(kRPB <= 15, "one named barrier per row group");
static_assert(kCache >= 0 && kCache <= 2, "cache is 0, 1 or 2");
static_assert(kCache != 2 || kVec * sizeof(elem_t) >= 4, "CACHE 2 packs whole 32-bit words");

// Barrier of one row group (named barrier group+1; barrier 0 is __syncthreads).
__device__ __forceinline__ void row_sync(int group) {
  if constexpr (kWarpsPerRow > 1) asm volatile("bar.sync %0, %1;" : : "r"(group + 1), "r"(kRT) : "memory");
}

// Reads kVec elements at column col of a row as floats; out-of-row elements read `fill`.
__device__ __forceinline__ void load_chunk(const elem_t* __restrict__ row, int col, int cols, bool vec_ok,
                                           float fill, float (&v)[kVec]) {
  if (kVec > 1 && vec_ok && col + kVec <= cols) {
    const ElemVec<kVec> e = *reinterpret_cast<const ElemVec<kVec>*>(row + col);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = to_float(e.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = col + j < cols ? to_float(row[col + j]) : fill;
  }
}

__device__ __forceinline__ void store_chunk(elem_t* __restrict__ row, int col, int cols, bool vec_ok,
                                            const float (&v)[kVec]) {
  if (kVec > 1 && vec_ok && col + kVec <= cols) {
    ElemVec<kVec> e;
#pragma unroll
    for (int j = 0; j < kVec; ++j) e.v[j] = from_float(v[j]);
    *reinterpret_cast<ElemVec<kVec>*>(row + col) = e;
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (col + j < cols) row[col + j] = from_float(v[j]);
  }
}

// ---- CACHE 2: the row's elements packed in 32-bit words ----
constexpr int kWords = kVec * static_cast<int>(sizeof(elem_t)) / 4 > 0 ? kVec * static_cast<int>(sizeof(elem_t)) / 4 : 1;
template <int W>
struct alignas(4 * W) WordVec {
  unsigned w[W];
};

// Reads kVec elements at column col of a row as packed words (two 16-bit elements or one f32 per word);
// out-of-row elements read `fill`.
__device__ __forceinline__ void load_words(const elem_t* __restrict__ row, int col, int cols, bool vec_ok, float fill,
                                           unsigned (&w)[kWords]) {
  if (kVec > 1 && vec_ok && col + kVec <= cols) {
    const WordVec<kWords> x = *reinterpret_cast<const WordVec<kWords>*>(row + col);
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[k] = x.w[k];
  } else {
    float v[kVec];
    load_chunk(row, col, cols, vec_ok, fill, v);
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      if constexpr (sizeof(elem_t) == 2) {
        w[k] = static_cast<unsigned>(from_float(v[2 * k])) | (static_cast<unsigned>(from_float(v[2 * k + 1])) << 16);
      } else {
        w[k] = __float_as_uint(v[k]);
      }
    }
  }
}

// The floats of packed words, converted afresh at every visit: the volatile conversions cannot be merged
// with the previous visit's, so the compiler keeps the packed words alive rather than their floats (or
// one 32-bit register per 16-bit element), which would undo CACHE 2's register saving.
__device__ __forceinline__ void unpack_words(const unsigned (&w)[kWords], float (&v)[kVec]) {
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
#if defined(ELEM_F16)
    asm volatile("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %2; cvt.f32.f16 %0, lo; cvt.f32.f16 %1, hi; }"
                 : "=f"(v[2 * k]), "=f"(v[2 * k + 1]) : "r"(w[k]));
#elif defined(ELEM_BF16)
    unsigned lo, hi;
    asm volatile("{ shl.b32 %0, %2, 16; and.b32 %1, %2, 0xffff0000; }" : "=r"(lo), "=r"(hi) : "r"(w[k]));
    v[2 * k] = __uint_as_float(lo);
    v[2 * k + 1] = __uint_as_float(hi);
#else
    v[k] = __uint_as_float(w[k]);
#endif
  }
}

// The register copy of a thread's part of the row: fp32 values (CACHE 1) or the elements packed in
// words (CACHE 2: half the registers of f16/bf16). The array a mode does not use has length 1 and is dropped.
struct RowRegs {
  float f[kCache == 1 ? kItems : 1][kVec];
  unsigned w[kCache == 2 ? kItems : 1][kWords];
};

// Visits this thread's chunks of the row: from registers when cached, else from global memory.
// CACHE 1 loads a chunk on the first visit (`load`), next to its use; CACHE 2 issues every load of the
// row first, so the row's round trips overlap. f(col, values) gets only chunks that start in the row.
template <class F>
__device__ __forceinline__ void for_each_chunk(const elem_t* __restrict__ row, int cols, bool vec_ok, int t,
                                               float fill, RowRegs& regs, bool load, F f) {
  if constexpr (kCache == 2) {
    if (load) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        // Unconditional: a chunk past the row re-reads column 0 (a cache hit) rather than keep one
        // predicate per item alive until the visits (past 7 of them, ptxas spills predicates).
        const int col = row_chunk_col(i, t, kRT, kVec);
        load_words(row, col < cols ? col : 0, cols, vec_ok, fill, regs.w[i]);
      }
    }
    const int mine = row_chunks_of_thread(cols, t, kRT, kVec);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int col = row_chunk_col(i, t, kRT, kVec);
      if (i >= mine) break;
      float v[kVec];
      unpack_words(regs.w[i], v);
      f(col, v);
    }
  } else if constexpr (kCache == 1) {
    // Bounded by a count, not by one `col < cols` test per item: those predicates, shared by every
    // visit, stayed alive across the reductions and ptxas spilled them (8-120 bytes on sm_90).
    const int mine = row_chunks_of_thread(cols, t, kRT, kVec);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int col = row_chunk_col(i, t, kRT, kVec);
      if (i >= mine) break;
      if (load) load_chunk(row, col, cols, vec_ok, fill, regs.f[i]);
      f(col, regs.f[i]);
    }
  } else {
    for (int col = row_chunk_col(0, t, kRT, kVec); col < cols; col += kRT * kVec) {
      float v[kVec];
      load_chunk(row, col, cols, vec_ok, fill, v);
      f(col, v);
    }
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (or max) over the row group; every thread of the group gets the result.
template <bool kMax>
__device__ __forceinline__ float row_reduce(float v, float* scratch, int group, int t) {
  v = kMax ? warp_max(v) : warp_sum(v);
  if constexpr (kWarpsPerRow == 1) {
    return v;
  } else {
    if (t % 32 == 0) scratch[t / 32] = v;
    row_sync(group);
    float r = scratch[0];
#pragma unroll
    for (int w = 1; w < kWarpsPerRow; ++w) r = kMax ? fmaxf(r, scratch[w]) : r + scratch[w];
    row_sync(group);  // scratch is reused by the next reduction
    return r;
  }
}
