// output_tile.cuh: block rasterization (raster_block<kGroup>) and the guarded pair store
// (store_pair) that the GEMM and conv kernels share. Needs nothing else.
#pragma once

// Block rasterization: kGroup == 1 is row-major; otherwise kGroup block-rows are swept column by
// column (the last group may hold fewer rows) for L2 reuse.
template <int kGroup>
__device__ __forceinline__ void raster_block(int bid, int grid_m, int grid_n, int& block_row, int& block_col) {
  if constexpr (kGroup == 1) {
    block_row = bid / grid_n;
    block_col = bid % grid_n;
  } else {
    const int in_group = kGroup * grid_n;
    const int first_row = (bid / in_group) * kGroup;
    const int rows_left = grid_m - first_row;
    const int group_rows = rows_left < kGroup ? rows_left : kGroup;
    const int local = bid % in_group;
    block_row = first_row + local % group_rows;
    block_col = local / group_rows;
  }
}

// Outputs c and c+1 of a row of length n at dst (= &row[c]): one aligned store when pair_ok (n even,
// so c even keeps dst aligned to the pair) and both are in the row, else each one guarded.
template <class T>
__device__ __forceinline__ void store_pair(T* dst, T v0, T v1, int c, int n, bool pair_ok) {
  if (pair_ok && c + 1 < n) {
    struct alignas(2 * sizeof(T)) Pair { T x, y; };
    *reinterpret_cast<Pair*>(dst) = Pair{v0, v1};
  } else {
    if (c < n) dst[0] = v0;
    if (c + 1 < n) dst[1] = v1;
  }
}
