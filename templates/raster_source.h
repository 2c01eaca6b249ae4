// The CUDA snippet every tiled GEMM template uses to place its block on the
// output grid (block rasterization): linear block index -> (block row, block
// column), row-major when GROUP_M == 1, otherwise GROUP_M block-rows swept
// column by column (Triton's grouped ordering) so that consecutive blocks
// share A's rows and B's columns in L2. One definition for gemm_f32,
// gemm_tc_mma and gemm_tc_wgmma.
#pragma once

#include <string>

namespace tuner::templates {

/// Defines `template <int kGroup> __device__ void raster_block(int bid, int grid_m, int grid_n,
/// int& block_row, int& block_col)`; needs nothing before it.
std::string raster_source();

}  // namespace tuner::templates
