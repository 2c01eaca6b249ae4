// cubin_info.h: reads per-kernel resource usage (registers, static shared
// memory, local memory, launch bounds) straight out of a cubin's ELF64
// sections, so the tuner never has to parse ptxas text or load the cubin on a
// GPU to learn what a kernel costs. It is responsible for bounds-checked ELF
// parsing of untrusted bytes (a corrupt cache file must never crash us). It is
// not responsible for compiling (nvrtc_builder.h), for occupancy arithmetic,
// or for anything that needs a driver.
//
// Where the figures come from (NVIDIA's cubin layout, checked against
// `ptxas -v` for sm_80, sm_90, sm_100 and sm_120 with CUDA 13):
//   registers     EIATTR_REGCOUNT for the kernel's symbol in .nv.info, else the
//                 high byte of the .text.<kernel> section's sh_info (sm_80 era).
//   shared        size of .nv.shared.<kernel>; on sm_90+ that section also holds
//                 the 1 KiB block-reserved system area (the module then has a
//                 .nv.shared.reserved.* section), which is split off into
//                 reserved_shared_bytes so static_shared_bytes is what the source
//                 declared (the `ptxas -v` "bytes smem" figure).
//   local         EIATTR_FRAME_SIZE (stack frame: local arrays plus spills) plus
//                 the size of .nv.local.<kernel> when present.
//   launch bounds EIATTR_MAX_THREADS (x*y*z), written for __launch_bounds__.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tuner {

/// Resource usage of one kernel as recorded in its cubin.
struct CubinResources {
  /// Registers per thread.
  int registers = 0;
  /// Static shared memory per block declared by the source, in bytes.
  int static_shared_bytes = 0;
  /// System-reserved shared memory the cubin folds into the kernel's shared
  /// section (1024 bytes on sm_90+, 0 on sm_80), in bytes per block.
  int reserved_shared_bytes = 0;
  /// Local memory per thread (stack frame incl. spills + .nv.local), in bytes.
  int local_bytes = 0;
  /// Max threads per block from __launch_bounds__ (EIATTR_MAX_THREADS), else 0.
  int max_threads_per_block = 0;
};

/// Parses an ELF64 cubin (as produced by nvrtcGetCUBIN) for the kernel with
/// the given extern "C" name. Returns nullopt and sets *error (when error is
/// non-null) if the bytes are not a well-formed cubin or the kernel is absent.
/// Never reads out of range, whatever the input.
std::optional<CubinResources> read_cubin_resources(std::string_view cubin, const std::string& kernel,
                                                   std::string* error);

/// True if the bytes look like a structurally valid ELF64 little-endian
/// cubin (header and section table in range). Cheap; used to validate cache
/// entries before the kernel name is known.
bool looks_like_cubin(std::string_view bytes);

}  // namespace tuner
