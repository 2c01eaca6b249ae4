// softmax_rows.cuh: row softmax (fp32 math; ONE_PASS: online softmax). Macros: see row_norm.cuh.
#pragma once
#define ROW_LAYERNORM 0
#include "row_norm.cuh"

// Online-softmax merge of two (max, sum-of-exp) pairs.
__device__ __forceinline__ void merge_ms(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
  m = mn;
}

extern "C" __global__ void __launch_bounds__(kThreads)
softmax_rows(const elem_t* __restrict__ X, elem_t* __restrict__ Y, int rows, int cols) {
  __shared__ float scratch_all[kRPB][kWarpsPerRow * 2 + 1];
  const int group = static_cast<int>(threadIdx.x) / kRT;
  const int t = static_cast<int>(threadIdx.x) % kRT;
  const int r = static_cast<int>(blockIdx.x) * kRPB + group;
  if (r >= rows) return;  // the group's named barrier counts only its own threads
  float* scratch = scratch_all[group];
  const elem_t* row = X + static_cast<size_t>(r) * cols;
  elem_t* out = Y + static_cast<size_t>(r) * cols;
  const bool vec_ok = cols % kVec == 0;
  float cache[kItems][kVec];
  float m = kLowest, s = 0.0f;
  if constexpr (kOnePass) {
    for_each_chunk(row, cols, vec_ok, t, kLowest, cache, true, [&](int, const float (&v)[kVec]) {
      float cm = v[0];
#pragma unroll
      for (int j = 1; j < kVec; ++j) cm = fmaxf(cm, v[j]);
      float cs = 0.0f;
#pragma unroll
      for (int j = 0; j < kVec; ++j) cs += __expf(v[j] - cm);
      merge_ms(m, s, cm, cs);
    });
    // Merge the pairs of the group: first across the warp, then across warps.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
      merge_ms(m, s, m2, s2);
    }
    if constexpr (kWarpsPerRow > 1) {
      if (t % 32 == 0) { scratch[2 * (t / 32)] = m; scratch[2 * (t / 32) + 1] = s; }
      row_sync(group);
      m = scratch[0];
      s = scratch[1];
#pragma unroll
      for (int w = 1; w < kWarpsPerRow; ++w) merge_ms(m, s, scratch[2 * w], scratch[2 * w + 1]);
    }
  } else {
    for_each_chunk(row, cols, vec_ok, t, kLowest, cache, true, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[j]);
    });
    m = row_reduce<true>(m, scratch, group, t);
    for_each_chunk(row, cols, vec_ok, t, kLowest, cache, false, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) s += __expf(v[j] - m);
    });
    s = row_reduce<false>(s, scratch, group, t);
  }
  const float inv = 1.0f / s;
  for_each_chunk(row, cols, vec_ok, t, kLowest, cache, false, [&](int col, const float (&v)[kVec]) {
    float y[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) y[j] = __expf(v[j] - m) * inv;
    store_chunk(out, col, cols, vec_ok, y);
  });
}
