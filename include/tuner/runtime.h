// tuner/runtime.h: the tuner runtime library (CMake target tuner::runtime): launch the best kernels
// tuner found, from your own program.
//
// A Runtime reads tuned records (a tuning database, or a "best configs" file written by
// `tuner export --format best`) of the built-in templates and of your own kernels (user_kernels), picks
// the best config of a workload for the GPU it runs on, compiles it once with NVRTC through tuner's
// on-disk compile cache, and launches it on your device pointers and stream. Lookups also work without
// a GPU when a recorded device is named.
//
// Error handling: no function of this API throws. Every call returns a Status; on failure the
// calling thread's last_error() holds one line saying what failed and why (the reasons of the
// library underneath: SQLite, NVRTC, the CUDA driver). The API is C++17 and passes std::string and
// std::vector across the boundary, so a program must use the same C++ standard library as the
// build of the runtime (GCC's libstdc++ on Debian).
//
// Threads: one Runtime may be used from any number of threads at once. Kernels are compiled and
// loaded once per (config, CUDA context) and kept until the Runtime is destroyed (RAII: the
// destructor unloads them and frees the runtime's workspaces; destroy it before the context).
//
// Nearest-shape rule (when no record has the exact shape): among the records of the same op and
// dtype on the same device, made with the current version of their template, candidates are ranked
// by the distance sum over dimensions of |ln(asked / tuned)| (for conv2d, R, S, stride, pad and
// dilation must match exactly), ties broken by the less recorded time per unit of the tuned shape's
// size (the product of its dimensions: a smaller problem's shorter time says nothing about its
// config), then by the shape string and the template's name; the first candidate whose config is
// valid for the asked shape on this device, and writes the output type asked for, is chosen, down
// every measured config of a database (a config tuned for one shape can break a divisibility or
// size constraint of another).
//
// Layouts (all row-major, as the tuner measured them): gemm A[M,K]·B[K,N] -> C[M,N];
// batched_gemm B such products, each operand contiguous per batch; softmax and layernorm rows of
// `cols` contiguous elements (layernorm: gamma and beta of `cols` elements); conv2d X in NHWC,
// filter in KRSC, Y in NPQK.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct CUstream_st;  // CUstream and cudaStream_t are both CUstream_st*.

// The library exports only what this header declares (it is built with hidden visibility).
#define TUNER_API __attribute__((visibility("default")))

namespace tuner {

/// What a call did.
enum class Status : int {
  kOk = 0,
  kInvalidArgument,  ///< A bad op, shape, dtype, pointer count or null pointer.
  kNotFound,         ///< No tuned config for the workload on this device (nor a nearest shape that fits).
  kNoDevice,         ///< No CUDA driver or no such GPU (lookups by a named device still work).
  kSourceError,      ///< The database or best-configs file cannot be read.
  kCompileError,     ///< NVRTC rejected the kernel.
  kLaunchError,      ///< The driver refused to load or launch the kernel.
  kInternal,         ///< Anything else (out of host memory, a bug): last_error() says what.
};

/// "ok", "invalid_argument", "not_found", ... for messages and logs.
TUNER_API const char* status_name(Status s) noexcept;

/// The calling thread's message of its last call that did not return kOk (empty when none failed).
TUNER_API std::string last_error();

enum class DType : int { kF32, kF16, kBF16 };

/// A workload as the tuner names it: op "gemm", shape "M=4096,N=4096,K=4096", dtype. For a user kernel: op is
/// its spec's name, the shape names every size of its spec, and the dtype is its spec's.
struct Problem {
  std::string op;
  std::string shape;
  DType dtype = DType::kF32;
  /// The dtype of the output buffer when it differs from `dtype` (f16 gemm writing f32, for
  /// example); empty: the same as `dtype`. Configs writing another output type are not chosen.
  std::string output_dtype;
};

/// A kernel of your own, tuned with `tuner tune --kernel FILE.cu --spec FILE.json`: the runtime reads both files
/// (and the headers beside the kernel it includes) when it opens, and looks its records up under the spec's
/// "name" as the op, with the spec's sizes as the shape ("N=1048576") and the spec's dtype. Records made from
/// other texts of the kernel, its headers or its spec are another version and are not used.
struct UserKernelFiles {
  std::string kernel;  ///< The .cu file.
  std::string spec;    ///< Its spec (JSON).
};

struct RuntimeOptions {
  /// A tuning database (tuning.db) or a "best configs" file (`tuner export --format best`).
  std::string source;
  /// The GPU kernels are launched on (cuda:N).
  int device_ordinal = 0;
  /// Look configs up for this recorded device instead of the GPU: "NVIDIA H100 80GB HBM3",
  /// "sim:h100-sxm". Empty: the GPU device_ordinal (matched by name, else by compute capability and
  /// SM count). Launching still needs a GPU.
  std::string device_name;
  /// The on-disk compile cache; empty: $TUNER_CACHE_DIR, else $XDG_CACHE_HOME/tuner/kernels, else
  /// $HOME/.cache/tuner/kernels (shared with `tuner tune`).
  std::string cache_dir;
  /// Allow the nearest tuned shape when the exact one was not tuned.
  bool nearest_shape = true;
  /// Your own kernels whose records to use besides the built-in templates' (each spec's name is its op).
  std::vector<UserKernelFiles> user_kernels;
};

/// The config a lookup chose.
struct KernelChoice {
  std::string workload;       ///< "gemm M=4096,N=4096,K=4096 f16": what was asked.
  std::string tuned_shape;    ///< The shape whose record was chosen.
  bool exact = false;         ///< tuned_shape is the asked shape.
  std::string template_name;  ///< "gemm_tc_wgmma"; a user kernel's spec name.
  std::string config;         ///< The config as JSON, knob -> value.
  std::string device;         ///< The recorded device name.
  double tuned_time_ms = 0;   ///< Its recorded time at tuned_shape (mean of its measurements).
  bool estimate = false;      ///< The time is a sim device's estimate, not a measurement.
  std::string kernel_name;    ///< The kernel's entry point.
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  int dynamic_shared_bytes = 0;
  /// Buffers the caller passes, in order: name and dtype ("A f16").
  std::vector<std::string> buffers;
};

class TUNER_API Runtime {
 public:
  /// Reads the records and finds the device; *out is set on kOk only.
  static Status open(const RuntimeOptions& options, std::unique_ptr<Runtime>* out) noexcept;
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The device configs are looked up for: the recorded name (named device) or the GPU's name.
  const std::string& device() const noexcept;
  /// Usable configs of this runtime's device read from the source (current template versions): from a database
  /// every measured config (ranked per workload, device and template); from a best-configs file its entries. Records of other devices
  /// in the source are not counted (they are never looked up).
  int64_t records() const noexcept;

  /// Chooses the config for a problem (nothing is compiled).
  Status lookup(const Problem& problem, KernelChoice* out) const noexcept;
  /// Compiles (first time) and launches the chosen config on `stream` (nullptr: the default stream)
  /// in the calling thread's current CUDA context (else the device's primary context). `buffers` are
  /// the device pointers of choice.buffers, in order; workspaces the kernel needs are the runtime's (zeroed once,
  /// as tuning checked: a kernel leaves its workspace as its next launch needs it). A user kernel's launch is its
  /// spec's grid, block and shared-memory formulas at the problem's sizes and the config's knobs, and its int scalar
  /// arguments its spec's formulas at the problem's sizes.
  /// Asynchronous like any launch: errors of the kernel itself show at the next synchronisation.
  Status launch(const Problem& problem, const std::vector<const void*>& buffers, CUstream_st* stream) noexcept;

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// C = A·B (row-major, C of the same dtype as A and B).
TUNER_API Status gemm(Runtime& rt, DType dtype, int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c,
            CUstream_st* stream = nullptr) noexcept;
/// `batch` independent products, each operand contiguous per batch.
TUNER_API Status batched_gemm(Runtime& rt, DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
                    const void* b, void* c, CUstream_st* stream = nullptr) noexcept;
/// y = softmax(x) along each row of `cols` elements.
TUNER_API Status softmax(Runtime& rt, DType dtype, int64_t rows, int64_t cols, const void* x, void* y,
               CUstream_st* stream = nullptr) noexcept;
/// y = layernorm(x) * gamma + beta along each row.
TUNER_API Status layernorm(Runtime& rt, DType dtype, int64_t rows, int64_t cols, const void* x, const void* gamma,
                 const void* beta, void* y, CUstream_st* stream = nullptr) noexcept;

struct Conv2dShape {
  int64_t n, h, w, c;   ///< Input NHWC.
  int64_t k, r, s;      ///< K filters of R x S taps (KRSC).
  int64_t stride = 1, pad = 0, dilation = 1;
};
/// Y = conv2d(X, F), forward, NHWC / KRSC / NPQK.
TUNER_API Status conv2d(Runtime& rt, DType dtype, const Conv2dShape& shape, const void* x, const void* filter, void* y,
              CUstream_st* stream = nullptr) noexcept;

}  // namespace tuner
