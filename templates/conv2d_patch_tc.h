// The conv2d forward template for few input channels (conv2d_patch_tc; f16 and bf16, NHWC/KRSC/NPQK,
// any stride, padding and dilation; C not a multiple of 8 and at most 256 taps R*S*C): the stem
// convolution (C = 3) that the TMA template cannot address and the general tensor-core template
// gathers tap by tap. A block copies its pixels' input patch to shared memory once, builds the whole
// im2col tile from it and runs mma.sync against a filter tile that stays in shared memory
// (templates/kernels/conv2d_patch_tc.cuh, layout in conv_patch_layout.cuh). Knobs, constraints,
// launch geometry, cost-model profile and the reference check (conv2d_igemm's contract).
//
// Knobs: TP x TQ output pixels (rows x columns of one image) x BN filters per block, WM x WN warp tile,
// PERSISTENT (0: a block per pixel tile; else the blocks in all, a multiple of the SM count, looping
// over the pixel tiles so each loads the filter tile once), PREFETCH (the next tile's patch loaded into
// registers while this tile's products run), MIN_BLOCKS (1-3 blocks per SM that the registers must
// allow: the block's phases run one after another, so an SM overlaps them only across blocks).
#pragma once

#include <string>

#include "templates/kernel_template.h"

namespace tuner::templates {

struct ConvPatchTiling {
  DType dtype = DType::kF16;
  int tp = 8, tq = 16, bn = 64;  ///< Block tile: output rows x columns x filters.
  int wm = 32, wn = 32;          ///< Warp tile.
  int persistent_ctas = 0;       ///< 0, or the blocks of the persistent grid in all.
  bool prefetch = false;         ///< The next tile's patch through registers.
  int patch_regs = 1;            ///< Patch elements per thread when prefetching (from the workload).
  int min_blocks = 1;            ///< Blocks per SM the registers must allow (__launch_bounds__'s second value).
  /// The filter's shape, compiled in (from the workload; 0: taken at run time only): C, R, S, stride, dilation.
  int c = 0, r = 0, s = 0, stride = 0, dilation = 0;
};

inline constexpr const char* kConvPatchKernelName = "conv2d_patch";

class Conv2dPatchTcTemplate final : public KernelTemplate {
 public:
  std::string name() const override { return "conv2d_patch_tc"; }
  std::string op() const override { return "conv2d"; }
  std::vector<DType> dtypes() const override { return {DType::kF16, DType::kBF16}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override;
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;

  static ConvPatchTiling tiling(const search::ConfigSpace& space, const search::Config& c, DType d);
  /// The CUDA source of one tiling (the kernel file with its macros; the filter's shape compiled in when set).
  static std::string source(const ConvPatchTiling& t);
  /// Threads per block and dynamic shared memory of a tiling on workload w.
  static int threads(const ConvPatchTiling& t);
  static int shared_bytes(const ConvPatchTiling& t, const Workload& w);
  /// Patch elements each thread holds when prefetching: ceil(patch elements / threads).
  static int patch_regs(const ConvPatchTiling& t, const Workload& w);
  static constexpr int kMaxPatchRegs = 16;  ///< ptxas spilled 8 bytes at 21 (sm_80)
  /// Taps R*S*C this template takes at most (the im2col row and the filter tile stay in shared memory).
  static constexpr int kMaxTaps = 256;
};

}  // namespace tuner::templates
