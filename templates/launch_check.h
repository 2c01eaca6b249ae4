// Launch-parameter checks: whether a kernel instance's launch geometry, with
// the resources its cubin reports, can be launched on a device with given
// limits. One function serves the runner (which refuses a bad launch with a
// message naming the parameter before the driver answers
// CUDA_ERROR_INVALID_VALUE) and the CPU tests that check every config of every
// template's spaces against the sm_80 and sm_90 limits, so an out-of-range
// launch parameter is found on a machine without a GPU.
//
// The rules are the CUDA driver's (cuLaunchKernel, cuFuncSetAttribute):
//   grid    x <= 2^31-1, y and z <= 65535, every dimension >= 1;
//   block   x, y <= 1024, z <= 64, x*y*z <= the device's maximum threads;
//   shared  static + dynamic <= the opt-in maximum per block; past the 48 KiB
//           default (static + dynamic > 48 KiB) the launch needs the opt-in
//           attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set to
//           at least the dynamic bytes (needs_shared_opt_in);
//   registers (per thread, rounded up to 8) x (threads, rounded up to whole
//           warps) <= the registers per block, and per thread <= the maximum.
#pragma once

#include <optional>
#include <string>

#include "templates/kernel_template.h"

namespace tuner::templates {

/// Static shared memory a launch may carry without the opt-in attribute, with the dynamic bytes.
inline constexpr int kDefaultSharedPerBlockBytes = 48 * 1024;

/// Why `g` cannot be launched with `registers` per thread and `static_shared_bytes` of static shared
/// memory (from the cubin; 0 when unknown: then only what the geometry decides is checked) on a
/// device with `limits`; nullopt when it can.
std::optional<std::string> launch_problem(const LaunchGeometry& g, int registers, int static_shared_bytes,
                                          const DeviceLimits& limits);

/// Whether the launch needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES raised to its dynamic bytes:
/// static + dynamic shared memory past the 48 KiB default.
inline bool needs_shared_opt_in(const LaunchGeometry& g, int static_shared_bytes) {
  return g.dynamic_shared_bytes > 0 && static_shared_bytes + g.dynamic_shared_bytes > kDefaultSharedPerBlockBytes;
}

}  // namespace tuner::templates
