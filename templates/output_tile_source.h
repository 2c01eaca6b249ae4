// How a tiled kernel finds and writes its output tile: the CUDA snippet shared
// by gemm_f32, gemm_tc_mma, gemm_tc_wgmma and conv2d_igemm_tc, and the one
// host helper every source generator uses to fill its placeholders.
//
// raster_block: linear block index -> (block row, block column), row-major
// when the group is 1, otherwise `group` block-rows swept column by column
// (Triton's grouped ordering) so that consecutive blocks share A's rows and
// B's columns in L2.
// store_pair: two adjacent outputs of a row (columns c, c+1 of n) as one
// aligned store when the row length is even, else guarded single stores.
#pragma once

#include <string>
#include <string_view>

namespace tuner::templates {

/// Defines `template <int kGroup> __device__ void raster_block(int bid, int grid_m, int grid_n,
/// int& block_row, int& block_col)` and `template <class T> __device__ void store_pair(T* dst, T v0,
/// T v1, int c, int n, bool pair_ok)`; needs nothing before it.
std::string output_tile_source();

/// Replaces every occurrence of `key` in `text` with `value` (the generators' @NAME@ placeholders).
void replace_all(std::string& text, std::string_view key, const std::string& value);

}  // namespace tuner::templates
