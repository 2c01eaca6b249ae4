// row_stats.cuh: the one-pass row statistics of the row kernels (softmax_rows.cuh, layernorm_rows.cuh)
// and their thread -> column mapping, as plain float math that compiles both as device code (NVRTC,
// nvcc) and as host C++: the CPU tests (tests/templates/row_stats_test.cpp) include this file directly
// and check the merges against a two-pass double reference and the mapping for exact coverage.
//
//  - Online softmax: a (max, sum of exp(x - max)) pair per chunk, merged by rescaling both sums to the
//    larger max. The max never drops below kRowLowest (finite), so masked -inf inputs and the -inf that
//    pads a row's tail give exp(-inf) = 0, never (-inf) - (-inf) = NaN. A fully masked row (every
//    element -inf) has sum 0, and its output is NaN, as in PyTorch.
//  - One-pass moments (layernorm): a (count, mean, M2) triple per chunk, M2 taken about the chunk's own
//    mean (two passes over registers), merged with Chan et al.'s pairwise formula. Unlike a running
//    sum and sum of squares it does not cancel for rows of large mean and small spread, and M2 stays >= 0.
//  - Mapping: vector i of thread t of a row group reads columns (i*row_threads + t)*vec .. +vec-1
//    (consecutive threads read consecutive vectors: coalesced).
// Not responsible for loads, stores or cross-thread reductions (row_norm.cuh).
#pragma once

#if defined(__CUDACC__)
#define ROW_HD __host__ __device__ __forceinline__
#define ROW_UNROLL _Pragma("unroll")
#else
#include <cmath>
#define ROW_HD inline
#define ROW_UNROLL
#endif

constexpr float kRowLowest = -3.0e38f;  // finite floor of a running max: exp(kRowLowest - m) is 0, never NaN

ROW_HD float row_exp(float x) {
#if defined(__CUDA_ARCH__)
  return __expf(x);
#else
  return std::exp(x);
#endif
}

// a / b for counts and sums (b a positive count up to 2^24): the fast 2-ulp division on the device,
// whose IEEE division would call a slow-path subroutine with a stack frame.
ROW_HD float row_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdividef(a, b);
#else
  return a / b;
#endif
}

ROW_HD float row_neg_inf() {
#if defined(__CUDA_ARCH__)
  return __int_as_float(0xff800000);
#else
  return -INFINITY;
#endif
}

// ---- online softmax ----
struct SoftmaxStat {
  float m;  // running max, >= kRowLowest
  float s;  // sum of exp(x - m) over the elements seen
};

ROW_HD SoftmaxStat softmax_stat_empty() { return {kRowLowest, 0.0f}; }

// The pair of one chunk of N values; elements past the row read -inf (they add 0).
template <int N>
ROW_HD SoftmaxStat softmax_chunk(const float (&v)[N]) {
  float m = kRowLowest;
ROW_UNROLL
  for (int j = 0; j < N; ++j) m = fmaxf(m, v[j]);
  float s = 0.0f;
ROW_UNROLL
  for (int j = 0; j < N; ++j) s += row_exp(v[j] - m);
  return {m, s};
}

// a := a merged with b. Both maxes are finite, so the differences are <= 0 or -inf: no NaN.
ROW_HD void softmax_merge(SoftmaxStat& a, const SoftmaxStat& b) {
  const float m = fmaxf(a.m, b.m);
  a.s = a.s * row_exp(a.m - m) + b.s * row_exp(b.m - m);
  a.m = m;
}

// ---- one-pass moments (mean and M2 = sum of squared deviations) ----
struct MomentStat {
  float n;     // elements seen
  float mean;  // their mean
  float m2;    // sum of (x - mean)^2, >= 0
};

ROW_HD MomentStat moment_stat_empty() { return {0.0f, 0.0f, 0.0f}; }

// The moments of the first `valid` of N values (0 <= valid <= N): mean first, then M2 about it.
template <int N>
ROW_HD MomentStat moment_chunk(const float (&v)[N], int valid) {
  if (valid <= 0) return moment_stat_empty();
  float sum = 0.0f;
ROW_UNROLL
  for (int j = 0; j < N; ++j) sum += j < valid ? v[j] : 0.0f;
  const float n = static_cast<float>(valid < N ? valid : N);
  const float mean = row_div(sum, n);
  float m2 = 0.0f;
ROW_UNROLL
  for (int j = 0; j < N; ++j) {
    const float d = j < valid ? v[j] - mean : 0.0f;
    m2 += d * d;
  }
  return {n, mean, m2};
}

// a := a merged with b (Chan, Golub, LeVeque): exact in real arithmetic, no cancellation of large sums.
ROW_HD void moment_merge(MomentStat& a, const MomentStat& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return;
  const float delta = b.mean - a.mean;
  const float fb = row_div(b.n, n);
  a.mean += delta * fb;
  a.m2 += b.m2 + delta * delta * a.n * fb;
  a.n = n;
}

// ---- thread -> column mapping ----
// First column of vector i of thread t in a row group of rt threads reading vec elements per access.
ROW_HD int row_chunk_col(int i, int t, int rt, int vec) { return (i * rt + t) * vec; }
// Vectors per thread that cover `cols` columns: the register cache's length.
ROW_HD int row_chunk_count(int cols, int rt, int vec) { return (cols + rt * vec - 1) / (rt * vec); }
// Chunks of thread t that start in the row: the i with row_chunk_col(i, t, rt, vec) < cols.
ROW_HD int row_chunks_of_thread(int cols, int t, int rt, int vec) {
  const int first = row_chunk_col(0, t, rt, vec);
  return first < cols ? (cols - first + rt * vec - 1) / (rt * vec) : 0;
}
// Elements of the vector at column col that lie in the row.
ROW_HD int row_chunk_valid(int col, int cols, int vec) {
  const int left = cols - col;
  return left < 0 ? 0 : (left < vec ? left : vec);
}
