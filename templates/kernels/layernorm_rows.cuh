// layernorm_rows.cuh: row layernorm with gamma and beta, eps 1e-5 (ONE_PASS: per-chunk moments merged
// pairwise, row_stats.cuh). Macros: see row_norm.cuh, and PARAMS_SMEM: 0, a row group per row (gamma
// and beta read from global memory, through L2, for every row); 1, each block first copies gamma and
// beta into its dynamic shared memory (2 * PARAMS_PITCH elements) and its row groups then loop over
// rows (a persistent grid), so gamma and beta cross L2 once per block instead of once per row.
#pragma once
#define ROW_LAYERNORM 1
#include "row_norm.cuh"

constexpr float kEps = 1e-5f;
#ifndef PARAMS_SMEM
#define PARAMS_SMEM 0
#endif
#ifndef PARAMS_PITCH
#define PARAMS_PITCH 0
#endif
constexpr int kParamsSmem = PARAMS_SMEM;
constexpr int kParamsPitch = PARAMS_PITCH;  // elements from gamma's copy to beta's (cols rounded up to 16 bytes)

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

// Normalises row r into Y with gamma and beta (global or shared pointers); scratch is the row group's.
__device__ __forceinline__ void layernorm_row(const elem_t* __restrict__ X, const elem_t* gamma, const elem_t* beta,
                                              elem_t* __restrict__ Y, int r, int cols, bool vec_ok, float* scratch,
                                              int group, int t) {
  const elem_t* row = X + static_cast<size_t>(r) * cols;
  elem_t* out = Y + static_cast<size_t>(r) * cols;
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

extern "C" __global__ void __launch_bounds__(kThreads)
layernorm_rows(const elem_t* __restrict__ X, const elem_t* __restrict__ gamma, const elem_t* __restrict__ beta,
               elem_t* __restrict__ Y, int rows, int cols) {
  __shared__ float scratch_all[kRPB][kWarpsPerRow * 3 + 1];
  const int group = static_cast<int>(threadIdx.x) / kRT;
  const int t = static_cast<int>(threadIdx.x) % kRT;
  float* scratch = scratch_all[group];
  const bool vec_ok = cols % kVec == 0;
  if constexpr (kParamsSmem) {
    extern __shared__ __align__(16) unsigned char params_smem[];
    elem_t* sg = reinterpret_cast<elem_t*>(params_smem);
    elem_t* sb = sg + kParamsPitch;
    // 16-byte copies where the rows of gamma and beta are whole 16-byte units, else element by element.
    constexpr int kPer16 = 16 / static_cast<int>(sizeof(elem_t));
    if (cols % kPer16 == 0) {
      for (int i = static_cast<int>(threadIdx.x); i < cols / kPer16; i += kThreads) {
        reinterpret_cast<uint4*>(sg)[i] = reinterpret_cast<const uint4*>(gamma)[i];
        reinterpret_cast<uint4*>(sb)[i] = reinterpret_cast<const uint4*>(beta)[i];
      }
    } else {
      for (int i = static_cast<int>(threadIdx.x); i < cols; i += kThreads) {
        sg[i] = gamma[i];
        sb[i] = beta[i];
      }
    }
    __syncthreads();
    for (int r = static_cast<int>(blockIdx.x) * kRPB + group; r < rows; r += static_cast<int>(gridDim.x) * kRPB) {
      layernorm_row(X, sg, sb, Y, r, cols, vec_ok, scratch, group, t);
      row_sync(group);  // the group's scratch is free for the next row's statistics
    }
  } else {
    const int r = static_cast<int>(blockIdx.x) * kRPB + group;
    if (r >= rows) return;
    layernorm_row(X, gamma, beta, Y, r, cols, vec_ok, scratch, group, t);
  }
}
