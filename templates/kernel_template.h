// The kernel-template interface: what every tunable kernel gives the tuner.
//
// A template owns its knobs and constraints (a ConfigSpace built for one
// workload and one device's limits) and, for a config, an instance: the CUDA
// source, the kernel's name, its launch geometry, the buffers and scalar
// arguments it takes, its FLOP and byte counts, the KernelProfile the cost
// models read, and a reference kernel with a tolerance to check it against.
// Templates know nothing of NVRTC, the driver or the database: the tuner
// compiles and runs what they describe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/kernel_profile.h"
#include "search/config_space.h"
#include "templates/workload.h"

namespace tuner::templates {

/// The device limits a config space is constrained by.
struct DeviceLimits {
  std::string arch = "sm_90";             ///< NVRTC architecture.
  int max_threads_per_block = 1024;
  int max_shared_per_block_bytes = 48 * 1024;  ///< Opt-in maximum of dynamic shared memory per block.
  int max_registers_per_thread = 255;
  int registers_per_block = 64 * 1024;          ///< 32-bit registers a block may hold (sm_80, sm_90).
  std::array<unsigned, 3> max_grid{2147483647u, 65535u, 65535u};
  std::array<unsigned, 3> max_block{1024u, 1024u, 64u};
  /// Streaming multiprocessors: the CTAs of a persistent grid (the H100 SXM's 132 unless known).
  int sm_count = 132;
};

struct LaunchGeometry {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  int dynamic_shared_bytes = 0;
};

/// A device buffer a kernel takes, in argument order (pointers first, then scalars).
struct BufferSpec {
  std::string name;      ///< "A", "B", "C".
  int64_t elements = 0;
  DType dtype = DType::kF32;
  bool output = false;   ///< Written by the kernel: poisoned before a checked run and compared.
  /// Scratch the kernel needs zeroed before its first launch and leaves zeroed (split-K partials and
  /// tile counters): zeroed by the runner, neither filled with random values nor compared.
  bool workspace = false;
};

/// A TMA tensor map the runner encodes (cuTensorMapEncodeTiled) over one of the instance's buffers
/// and passes by value (a 128-byte CUtensorMap) after the pointers: tiled, no interleave, out-of-bounds
/// elements zero-filled, 256-byte L2 promotion, the buffer's dtype as the element type.
struct TensorMapSpec {
  int buffer = 0;                      ///< Index into KernelInstance::buffers.
  std::vector<uint64_t> dims;          ///< Elements per dimension, innermost first (rank 1..5).
  std::vector<uint64_t> strides_bytes; ///< Byte strides of dimensions 1..rank-1 (multiples of 16).
  std::vector<uint32_t> box;           ///< Box elements per dimension (each <= 256).
  int swizzle_bytes = 0;               ///< 0 (none), 32, 64 or 128.
  /// Traversal step per dimension (1..8; the first is always 1): a box dimension of n * stride elements
  /// loads n of them, stride apart. Empty: all 1.
  std::vector<uint32_t> element_strides;
};

struct KernelInstance {
  std::string source;                  ///< Complete CUDA C++ source.
  std::string kernel_name;             ///< extern "C" name.
  /// Compile for the architecture-specific target (sm_90a rather than sm_90): wgmma, setmaxnreg.
  bool arch_specific = false;
  LaunchGeometry launch;
  std::vector<BufferSpec> buffers;     ///< Kernel arguments 0..n-1 (device pointers).
  std::vector<TensorMapSpec> tensor_maps;  ///< Kernel arguments after the pointers (CUtensorMap by value).
  std::vector<int32_t> scalar_args;    ///< Kernel arguments after the pointers and tensor maps (int).
  double flops = 0;                    ///< Useful FLOPs (for GFLOP/s).
  double bytes = 0;                    ///< Compulsory DRAM bytes (for % of bandwidth).
  costmodel::KernelProfile profile;    ///< What the cost models read.
  /// Named headers both sources include by these names, (name, text): a user kernel's own headers by absolute path,
  /// read once when the kernel was registered (tuner's kernel files are always there besides).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string reference_source;        ///< Reference kernel, same arguments, written to its own output.
  std::string reference_kernel_name;
  LaunchGeometry reference_launch;
  double tolerance = 1e-4;             ///< Max |out - ref| / max |ref| that passes (NaN never passes).
};

class KernelTemplate {
 public:
  virtual ~KernelTemplate() = default;
  /// Unique template name, e.g. "gemm_f32_simt".
  virtual std::string name() const = 0;
  /// The op it implements, e.g. "gemm".
  virtual std::string op() const = 0;
  /// The dtypes it implements.
  virtual std::vector<DType> dtypes() const = 0;
  /// The template's fixed source text; its hash versions every record the template produces.
  virtual std::string source_text() const = 0;
  /// Why the template cannot run this workload (sizes past its index or launch limits); nullopt if it can.
  virtual std::optional<std::string> unsupported(const Workload& w) const = 0;
  /// Why the template cannot run on a device with these limits (an instruction set it needs); nullopt if it can.
  virtual std::optional<std::string> unsupported_on(const DeviceLimits& limits) const {
    (void)limits;
    return std::nullopt;
  }
  /// Knobs and constraints for one workload on one device.
  virtual search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const = 0;
  /// A small space (tens of configs) that covers every knob value: compiled in CI, checked on GPUs.
  virtual search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const = 0;
  /// What the cost models read of a valid config, without generating its source (cheap: the search
  /// scores thousands of candidates with it).
  virtual costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                           const Workload& w) const = 0;
  /// The instance of a valid config of `space` (its profile equals profile(space, c, w)).
  virtual KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                                     const Workload& w) const = 0;
  /// The dtype a recorded config (its knobs as JSON text) writes its output in, from the knobs alone (no space is
  /// built: `query --best` asks it of every row): the workload's unless a knob says otherwise. Agrees with
  /// instantiate()'s output buffer (tests/templates/output_dtype_test.cpp).
  virtual DType output_dtype(const Workload& w, const std::string& config_json) const {
    (void)config_json;
    return w.dtype;
  }
};

/// The NVRTC architecture an instance compiles for on a device: limits.arch, or its
/// architecture-specific variant ("sm_90a") when the instance needs one.
inline std::string compile_arch(const KernelInstance& k, const DeviceLimits& limits) {
  return k.arch_specific ? limits.arch + "a" : limits.arch;
}

}  // namespace tuner::templates
