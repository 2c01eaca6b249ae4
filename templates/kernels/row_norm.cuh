// row_norm.cuh: what the row kernels (softmax_rows.cuh, layernorm_rows.cuh) share: the tiling
// constants, named barriers per row group, vector loads and stores of a row, and the chunk loop that
// keeps a row in registers (CACHE). The tuner defines before including an entry file: ELEM_F16 or
// ELEM_BF16 (or neither: f32), ROW_THREADS, ROWS_PER_BLOCK, VEC, ONE_PASS, CACHE, ITEMS; the entry file sets ROW_LAYERNORM.
#pragma once
#include "element.cuh"

// ---- tiling, from the macros the tuner defines ----
constexpr int kRT = ROW_THREADS;      // threads per row
constexpr int kRPB = ROWS_PER_BLOCK;  // rows per block
constexpr int kVec = VEC;             // elements per global access
constexpr int kOnePass = ONE_PASS;    // online softmax / Welford
constexpr int kCache = CACHE;         // row kept in registers
constexpr int kItems = ITEMS;         // vectors per thread when cached
constexpr int kIsLayernorm = ROW_LAYERNORM;

constexpr int kThreads = kRT * kRPB;
constexpr int kWarpsPerRow = kRT / 32;
constexpr float kLowest = -3.0e38f;  // finite "minus infinity": exp(kLowest - m) is 0, never NaN
static_assert(kRT % 32 == 0 && kRT <= 1024, "row_threads must be whole warps");
static_assert(kThreads <= 1024, "threads per block <= 1024");
static_assert(kVec == 1 || kVec == 2 || kVec == 4 || kVec == 8, "vec must be 1, 2, 4 or 8");
static_assert(kVec * sizeof(elem_t) <= 16, "at most 16 bytes per access");
static_assert(kRPB <= 15, "one named barrier per row group");

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

// Visits this thread's chunks of the row: from registers when cached (loaded on the first visit
// through `load`), else from global memory. f(col, values) gets only chunks that start in the row.
template <class F>
__device__ __forceinline__ void for_each_chunk(const elem_t* __restrict__ row, int cols, bool vec_ok, int t,
                                               float fill, float (&cache)[kItems][kVec], bool load, F f) {
  if constexpr (kCache) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int col = (i * kRT + t) * kVec;
      if (col >= cols) break;
      if (load) load_chunk(row, col, cols, vec_ok, fill, cache[i]);
      f(col, cache[i]);
    }
  } else {
    for (int col = t * kVec; col < cols; col += kRT * kVec) {
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
