// layernorm_rows.cuh: row layernorm with gamma and beta, eps 1e-5 (ONE_PASS: per-chunk moments merged
// pairwise, row_stats.cuh). Macros: see row_norm.cuh, and MIN_BLOCKS: the blocks per SM the compiler
// must leave registers for (__launch_bounds__): 2 caps a 512-thread block at 64 registers, which lets
// two 32,768-column rows share an SM (88 registers otherwise, one block per SM).
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
// Without MIN_BLOCKS the bounds stay as they were: an explicit minimum of 1 changes ptxas's register
// choice (a 512-thread block spilled 32 bytes at 128 registers where it used 109 without).
#if MIN_BLOCKS > 1
#define LAYERNORM_BOUNDS __launch_bounds__(kThreads, MIN_BLOCKS)
#else
#define LAYERNORM_BOUNDS __launch_bounds__(kThreads)
#endif
#pragma once
#define ROW_LAYERNORM 1
#include "row_norm.cuh"

constexpr float kEps = 1e-5f;

// The moments of the row group: this thread's, merged across the warp, then across warps.
__device__ __forceinline__ MomentStat group_moments(MomentStat st, float* scratch, int group, int t) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    moment_merge(st, {__shfl_xor_sync(0xffffffffu, st.n, o), __shfl_xor_sync(0xffffffffu, st.mean, o),
                      __shfl_xor_sync(0xffffffffu, st.m2, o)});
  if constexpr (kWarpsPerRow > 1) {
    if (t % 32 == 0) {
      scratch[3 * (t / 32)] = st.n; scratch[3 * (t / 32) + 1] = st.mean; scratch[3 * (t / 32) + 2] = st.m2;
    }
    row_sync(group);
    st = {scratch[0], scratch[1], scratch[2]};
#pragma unroll
    for (int w = 1; w < kWarpsPerRow; ++w) moment_merge(st, {scratch[3 * w], scratch[3 * w + 1], scratch[3 * w + 2]});
  }
  return st;
}

extern "C" __global__ void LAYERNORM_BOUNDS
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
  RowRegs regs;
  float mean = 0.0f, var = 0.0f;
  if constexpr (kOnePass) {
    MomentStat st = moment_stat_empty();
    for_each_chunk(row, cols, vec_ok, t, 0.0f, regs, true, [&](int col, const float (&v)[kVec]) {
      moment_merge(st, moment_chunk(v, row_chunk_valid(col, cols, kVec)));
    });
    st = group_moments(st, scratch, group, t);
    mean = st.mean;
    var = row_div(st.m2, static_cast<float>(cols));
  } else {
    float sum = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, regs, true, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) sum += v[j];  // out-of-row elements read 0
    });
    mean = row_div(row_reduce<false>(sum, scratch, group, t), static_cast<float>(cols));
    float sq = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, regs, false, [&](int col, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float d = col + j < cols ? v[j] - mean : 0.0f;
        sq += d * d;
      }
    });
    var = row_div(row_reduce<false>(sq, scratch, group, t), static_cast<float>(cols));
  }
  const float rstd = rsqrtf(var + kEps);
  for_each_chunk(row, cols, vec_ok, t, 0.0f, regs, false, [&](int col, const float (&v)[kVec]) {
    float g[kVec], b[kVec], y[kVec];
    load_chunk(gamma, col, cols, vec_ok, 0.0f, g);
    load_chunk(beta, col, cols, vec_ok, 0.0f, b);
#pragma unroll
    for (int j = 0; j < kVec; ++j) y[j] = (v[j] - mean) * rstd * g[j] + b[j];
    store_chunk(out, col, cols, vec_ok, y);
  });
}
