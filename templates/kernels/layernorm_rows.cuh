// layernorm_rows.cuh: row layernorm with gamma and beta, eps 1e-5 (ONE_PASS: Welford). Macros: see
// row_norm.cuh.
#pragma once
#define ROW_LAYERNORM 1
#include "row_norm.cuh"

constexpr float kEps = 1e-5f;

// Welford merge of (count, mean, M2) with (n2, mean2, M2_2).
__device__ __forceinline__ void merge_welford(float& n, float& mean, float& m2, float n2, float mean2, float m22) {
  const float nn = n + n2;
  if (nn == 0.0f) return;
  const float delta = mean2 - mean;
  const float f = n2 / nn;
  mean += delta * f;
  m2 += m22 + delta * delta * n * f;
  n = nn;
}

extern "C" __global__ void __launch_bounds__(kThreads)
layernorm_rows(const elem_t* __restrict__ X, const elem_t* __restrict__ gamma, const elem_t* __restrict__ beta,
               elem_t* __restrict__ Y, int rows, int cols) {
  __shared__ float scratch_all[kRPB][kWarpsPerRow * 3 + 1];
  const int group = static_cast<int>(threadIdx.x) / kRT;
  const int t = static_cast<int>(threadIdx.x) % kRT;
  const int r = static_cast<int>(blockIdx.x) * kRPB + group;
  if (r >= rows) return;
  float* scratch = scratch_all[group];
  const elem_t* row = X + static_cast<size_t>(r) * cols;
  elem_t* out = Y + static_cast<size_t>(r) * cols;
  const bool vec_ok = cols % kVec == 0;
  float cache[kItems][kVec];
  float mean = 0.0f, var = 0.0f;
  if constexpr (kOnePass) {
    float n = 0.0f, m2 = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, true, [&](int col, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        if (col + j < cols) {
          n += 1.0f;
          const float d = v[j] - mean;
          mean += __fdividef(d, n);
          m2 += d * (v[j] - mean);
        }
      }
    });
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float n2 = __shfl_xor_sync(0xffffffffu, n, o);
      const float mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
      const float m22 = __shfl_xor_sync(0xffffffffu, m2, o);
      merge_welford(n, mean, m2, n2, mean2, m22);
    }
    if constexpr (kWarpsPerRow > 1) {
      if (t % 32 == 0) {
        scratch[3 * (t / 32)] = n; scratch[3 * (t / 32) + 1] = mean; scratch[3 * (t / 32) + 2] = m2;
      }
      row_sync(group);
      n = scratch[0]; mean = scratch[1]; m2 = scratch[2];
#pragma unroll
      for (int w = 1; w < kWarpsPerRow; ++w) merge_welford(n, mean, m2, scratch[3 * w], scratch[3 * w + 1], scratch[3 * w + 2]);
    }
    var = m2 / static_cast<float>(cols);
  } else {
    float sum = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, true, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) sum += v[j];  // out-of-row elements read 0
    });
    mean = row_reduce<false>(sum, scratch, group, t) / static_cast<float>(cols);
    float sq = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, false, [&](int col, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float d = col + j < cols ? v[j] - mean : 0.0f;
        sq += d * d;
      }
    });
    var = row_reduce<false>(sq, scratch, group, t) / static_cast<float>(cols);
  }
  const float rstd = rsqrtf(var + kEps);
  for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, false, [&](int col, const float (&v)[kVec]) {
    float g[kVec], b[kVec], y[kVec];
    load_chunk(gamma, col, cols, vec_ok, 0.0f, g);
    load_chunk(beta, col, cols, vec_ok, 0.0f, b);
#pragma unroll
    for (int j = 0; j < kVec; ++j) y[j] = (v[j] - mean) * rstd * g[j] + b[j];
    store_chunk(out, col, cols, vec_ok, y);
  });
}
