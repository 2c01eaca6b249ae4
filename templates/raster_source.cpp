#include "templates/raster_source.h"

namespace tuner::templates {

std::string raster_source() {
  return R"cuda(
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
)cuda";
}

}  // namespace tuner::templates
