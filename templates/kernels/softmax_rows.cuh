// softmax_rows.cuh: row softmax (fp32 math; ONE_PASS: online softmax, row_stats.cuh). Macros: see
// row_norm.cuh. Masked (-inf) inputs give 0; a row of only -inf gives NaN, as in PyTorch.
#pragma once
#define ROW_LAYERNORM 0
#include "row_norm.cuh"

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
  const float fill = row_neg_inf();  // past the row's end: adds exp(-inf) = 0
  RowRegs regs;
  SoftmaxStat st = softmax_stat_empty();
  if constexpr (kOnePass) {
    for_each_chunk(row, cols, vec_ok, t, fill, regs, true,
                   [&](int, const float (&v)[kVec]) { softmax_merge(st, softmax_chunk(v)); });
    // Merge the pairs of the group: first across the warp, then across warps.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      softmax_merge(st, {__shfl_xor_sync(0xffffffffu, st.m, o), __shfl_xor_sync(0xffffffffu, st.s, o)});
    if constexpr (kWarpsPerRow > 1) {
      if (t % 32 == 0) { scratch[2 * (t / 32)] = st.m; scratch[2 * (t / 32) + 1] = st.s; }
      row_sync(group);
      st = {scratch[0], scratch[1]};
#pragma unroll
      for (int w = 1; w < kWarpsPerRow; ++w) softmax_merge(st, {scratch[2 * w], scratch[2 * w + 1]});
    }
  } else {
    for_each_chunk(row, cols, vec_ok, t, fill, regs, true, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) st.m = fmaxf(st.m, v[j]);
    });
    st.m = row_reduce<true>(st.m, scratch, group, t);
    for_each_chunk(row, cols, vec_ok, t, fill, regs, false, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) st.s += row_exp(v[j] - st.m);
    });
    st.s = row_reduce<false>(st.s, scratch, group, t);
  }
  const float inv = row_div(1.0f, st.s);  // a fully masked row: 1/0 = inf, its output NaN
  for_each_chunk(row, cols, vec_ok, t, fill, regs, false, [&](int col, const float (&v)[kVec]) {
    float y[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) y[j] = row_exp(v[j] - st.m) * inv;
    store_chunk(out, col, cols, vec_ok, y);
  });
}
