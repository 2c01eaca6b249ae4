#include "tuner/cuda_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <utility>
#include <stdexcept>

#include <cuda.h>

#include "templates/launch_check.h"
#include "tuner/compile_cache.h"
#include "tuner/cublas_gemm.h"
#include "tuner/cuda_driver.h"
#include "tuner/cudnn_conv.h"
#include "tuner/host_dtype.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/runner_kernels.h"
#include "tuner/timing_stop.h"

namespace tuner {

namespace {

const CudaDriver& driver() { return cuda_driver(); }

/// Thrown inside the runner to unwind to measure(), which turns it into a result.
struct CudaFailure : std::runtime_error {
  CudaFailure(const std::string& what, std::string kind, bool lost)
      : std::runtime_error(what), kind(std::move(kind)), context_lost(lost) {}
  std::string kind;
  bool context_lost;
};

bool is_sticky(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_FAILED: case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS: case CUDA_ERROR_INVALID_ADDRESS_SPACE: case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR: case CUDA_ERROR_ASSERT: case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    // After an Xid or a lost device the context answers these to every call: a worker that kept it blamed every
    // later config ("unknown") and never measured them.
    case CUDA_ERROR_UNKNOWN: case CUDA_ERROR_CONTEXT_IS_DESTROYED: case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

/// One check per driver call: a failure becomes a CudaFailure with the driver's own message.
void check(CUresult rc, const char* call, const char* kind = "unknown") {
  if (rc == CUDA_SUCCESS) return;
  bool sticky = is_sticky(rc);
  throw CudaFailure(std::string(call) + " failed: " + cuda_error_text(rc), sticky ? "runtime_fault" : kind, sticky);
}

/// A device allocation, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    check(driver().cuMemAlloc(&ptr_, std::max<size_t>(bytes, 4)), "cuMemAlloc");
  }
  ~DeviceBuffer() { if (ptr_) driver().cuMemFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, 0)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) driver().cuMemFree(ptr_);
      ptr_ = std::exchange(o.ptr_, 0);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// A loaded module, unloaded on scope exit; its kernels by name.
class Module {
 public:
  explicit Module(const std::string& cubin) {
    check(driver().cuModuleLoadData(&mod_, cubin.data()), "cuModuleLoadData", "launch_error");
  }
  ~Module() { if (mod_) driver().cuModuleUnload(mod_); }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUfunction function(const std::string& name) const {
    CUfunction fn = nullptr;
    check(driver().cuModuleGetFunction(&fn, mod_, name.c_str()), "cuModuleGetFunction", "launch_error");
    return fn;
  }

 private:
  CUmodule mod_ = nullptr;
};

/// A pair of events timing one launch.
class EventPair {
 public:
  EventPair() {
    check(driver().cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    check(driver().cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
  }
  ~EventPair() {
    if (start_) driver().cuEventDestroy(start_);
    if (stop_) driver().cuEventDestroy(stop_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  CUevent start() const { return start_; }
  CUevent stop() const { return stop_; }

 private:
  CUevent start_ = nullptr, stop_ = nullptr;
};

/// A device buffer with guard regions on both sides, filled with kGuardWord: a kernel that writes past
/// either end of its buffer changes a guard, which the runner's checksum sees.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t payload_bytes)
      : payload_(payload_bytes), guard_(guard_bytes(payload_bytes)), whole_(payload_bytes + 2 * guard_) {
    check(driver().cuMemsetD32(whole_.get(), kGuardWord, whole_.bytes() / 4), "cuMemsetD32");
  }
  CUdeviceptr get() const { return whole_.get() + guard_; }  ///< What the kernel sees.
  size_t bytes() const { return payload_; }
  CUdeviceptr front_guard() const { return whole_.get(); }
  CUdeviceptr back_guard() const { return whole_.get() + guard_ + payload_; }
  size_t guard() const { return guard_; }

 private:
  size_t payload_, guard_;
  DeviceBuffer whole_;
};

}  // namespace

struct CudaRunner::Impl {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CudaDeviceInfo info;

  /// What one workload needs on the device, kept while requests share it: the buffers (inputs filled on
  /// the GPU, guards around all), the reference's output per output buffer, and the checksum of
  /// everything a config must not change (inputs, guards, reference copies).
  struct State {
    std::string key;
    std::vector<GuardedBuffer> buffers;
    std::vector<DeviceBuffer> reference;  ///< Per buffer; empty for inputs and workspaces.
    uint64_t baseline = 0;
  };
  /// Most recently used first; two cover templates whose configs alternate between two output types.
  std::list<State> states;
  static constexpr size_t kMaxStates = 2;

  /// The worker's own kernels per dtype (fill, compare, checksum), compiled on first use.
  std::map<templates::DType, std::unique_ptr<Module>> utility;
  DeviceBuffer scratch;  ///< Compare results and checksum sums.
  DeviceBuffer flush;    ///< Overwritten before every timed run: twice the L2.
  std::unique_ptr<CublasSgemm> cublas;
  std::unique_ptr<CudnnConv> cudnn;
  DeviceBuffer cudnn_workspace;
  std::vector<CUtensorMap> maps;  ///< The request's tensor maps over the current state's buffers.

  ~Impl() {
    cublas.reset();
    cudnn.reset();
    cudnn_workspace = DeviceBuffer();
    states.clear();
    utility.clear();
    scratch = DeviceBuffer();
    flush = DeviceBuffer();
    if (context) driver().cuDevicePrimaryCtxRelease(device);
  }

  templates::DeviceLimits limits() const {
    templates::DeviceLimits l;
    l.arch = "sm_" + std::to_string(info.cc_major * 10 + info.cc_minor);
    l.max_threads_per_block = info.max_threads_per_block;
    l.max_shared_per_block_bytes = info.max_shared_per_block_optin;
    if (info.registers_per_block > 0) l.registers_per_block = info.registers_per_block;
    return l;
  }

  static std::string key_of(const MeasureRequest& r) {
    // The reference's own bytes too: configs of one workload may need different references.
    std::string k = r.reference_kernel_name + "|" + std::to_string(r.settings.input_seed) + "|" +
                    std::to_string(std::hash<std::string>{}(r.reference_cubin));
    // The dtype too: one template's configs may differ in an output's type (gemm_tc_mma's OUT_F32).
    for (const auto& b : r.buffers)
      k += "|" + b.name + ":" + std::to_string(b.elements) + ":" + templates::to_string(b.dtype) +
           (b.output ? ":out" : b.workspace ? ":ws" : ":in");
    for (int32_t s : r.scalar_args) k += "|" + std::to_string(s);
    return k;
  }

  const Module& utility_module(templates::DType d) {
    auto& m = utility[d];
    if (!m) {
      static CompileCache cache(CompileCache::default_dir());
      NvrtcBuilder builder(&cache);
      const CompileResult cr = builder.compile({runner_kernels_source(d), kFillKernelName, limits().arch, {}});
      if (!cr.ok()) throw CudaFailure("the worker's own kernels failed to compile: " + cr.log.substr(0, 500), "unknown", false);
      m = std::make_unique<Module>(cr.cubin);
    }
    return *m;
  }

  /// Launches one of the worker's grid-stride kernels over n items.
  void launch_utility(CUfunction fn, uint64_t n, std::vector<void*> args) {
    const uint64_t blocks = std::max<uint64_t>(1, std::min<uint64_t>((n + kRunnerKernelThreads - 1) / kRunnerKernelThreads,
                                                                     static_cast<uint64_t>(std::max(1, info.sm_count)) * 16));
    check(driver().cuLaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1, kRunnerKernelThreads, 1, 1, 0, nullptr,
                                  args.data(), nullptr),
          "cuLaunchKernel (worker kernel)");
  }

  void fill_uniform(CUdeviceptr p, const templates::BufferSpec& b, uint64_t seed, unsigned index) {
    CUfunction fn = utility_module(b.dtype).function(kFillKernelName);
    unsigned long long n = static_cast<unsigned long long>(b.elements), sd = seed;
    launch_utility(fn, n, {&p, &n, &sd, &index});
  }

  /// Compares output buffer i with its reference on the GPU.
  Comparison compare(const State& st, size_t i, const templates::BufferSpec& b) {
    check(driver().cuMemsetD32(scratch.get(), 0u, 4), "cuMemsetD32");
    CUfunction fn = utility_module(b.dtype).function(kCompareKernelName);
    CUdeviceptr out = st.buffers[i].get(), ref = st.reference[i].get(), res = scratch.get();
    unsigned long long n = static_cast<unsigned long long>(b.elements);
    launch_utility(fn, n, {&out, &ref, &n, &res});
    uint32_t words[3] = {};
    check(driver().cuMemcpyDtoH(words, scratch.get(), sizeof words), "cuMemcpyDtoH (comparison)");
    float err = 0, ref_max = 0;
    std::memcpy(&err, &words[0], 4);
    std::memcpy(&ref_max, &words[1], 4);
    return comparison_from(err, ref_max, words[2] != 0);
  }

  /// The checksum of everything a config must leave alone: inputs, every guard, the reference copies.
  uint64_t integrity_checksum(const State& st, const MeasureRequest& r) {
    check(driver().cuMemsetD32(scratch.get() + 16, 0u, 2), "cuMemsetD32");
    CUfunction fn = utility_module(templates::DType::kF32).function(kChecksumKernelName);
    CUdeviceptr sum = scratch.get() + 16;
    auto add = [&](CUdeviceptr p, size_t bytes) {
      unsigned long long words = bytes / 4;
      if (words) launch_utility(fn, words, {&p, &words, &sum});
    };
    for (size_t i = 0; i < st.buffers.size(); ++i) {
      const auto& g = st.buffers[i];
      add(g.front_guard(), g.guard());
      add(g.back_guard(), g.guard());
      if (!r.buffers[i].output && !r.buffers[i].workspace) add(g.get(), g.bytes());
      if (st.reference[i].get()) add(st.reference[i].get(), st.reference[i].bytes());
    }
    uint64_t value = 0;
    check(driver().cuMemcpyDtoH(&value, sum, sizeof value), "cuMemcpyDtoH (checksum)");
    return value;
  }

  /// Arguments in the kernel contract's order: buffer pointers, tensor maps (by value), int scalars.
  void launch(CUfunction fn, const templates::LaunchGeometry& g, const std::vector<int32_t>& scalars,
              CUstream stream, std::vector<CUdeviceptr>& ptrs, std::vector<int32_t>& scalar_copy) {
    std::vector<void*> args;
    for (auto& p : ptrs) args.push_back(&p);
    for (auto& m : maps) args.push_back(&m);
    scalar_copy = scalars;
    for (auto& s : scalar_copy) args.push_back(&s);
    check(driver().cuLaunchKernel(fn, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                                  static_cast<unsigned>(g.dynamic_shared_bytes), stream, args.data(), nullptr),
          "cuLaunchKernel", "launch_error");
  }

  /// Checks a kernel's launch against this GPU's limits with the driver's own figures for the function
  /// (registers, static shared memory), and opts in to the dynamic shared memory it needs.
  void prepare_launch(CUfunction fn, const templates::LaunchGeometry& g) {
    int registers = 0, static_shared = 0;
    check(driver().cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute");
    check(driver().cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), "cuFuncGetAttribute");
    if (auto why = templates::launch_problem(g, registers, static_shared, limits()))
      throw CudaFailure("launch refused: " + *why, "launch_error", false);
    // Past 48 KiB of static plus dynamic shared memory the launch fails with CUDA_ERROR_INVALID_VALUE
    // unless the function opts in (the H100 run: 48 KiB dynamic + 4 bytes static of split-K's flag).
    if (templates::needs_shared_opt_in(g, static_shared))
      check(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, g.dynamic_shared_bytes),
            "cuFuncSetAttribute (dynamic shared memory)", "launch_error");
  }

  /// Encodes the request's tensor maps over the state's buffers (cuTensorMapEncodeTiled).
  void encode_tensor_maps(const MeasureRequest& r, const State& st) {
    maps.assign(r.tensor_maps.size(), CUtensorMap{});
    if (r.tensor_maps.empty()) return;
    for (size_t i = 0; i < r.tensor_maps.size(); ++i) {
      const auto& m = r.tensor_maps[i];
      if (m.buffer < 0 || static_cast<size_t>(m.buffer) >= st.buffers.size())
        throw CudaFailure("tensor map " + std::to_string(i) + " is malformed", "launch_error", false);
      const size_t b = static_cast<size_t>(m.buffer);
      std::string why = encode_tensor_map(m, r.buffers[b].dtype, st.buffers[b].get(), &maps[i]);
      if (why == "malformed") why = "tensor map " + std::to_string(i) + " is malformed";
      if (!why.empty()) throw CudaFailure(why, "launch_error", false);
    }
  }

  /// Compares every output with its reference (a copy baseline's output is its input, not the op's: only the
  /// integrity check applies); the first that fails makes the result a wrong answer, `when` added to its message.
  void compare_outputs(const MeasureRequest& r, const State& st, MeasureResult& res, const std::string& when) {
    for (size_t i = 0; i < st.buffers.size() && res.status == "ok" && r.vendor != kDeviceCopyBaseline; ++i) {
      if (!r.buffers[i].output) continue;
      const Comparison cmp = compare(st, i, r.buffers[i]);
      res.max_error = cmp.max_error;
      if (!cmp.passes(r.tolerance)) {
        res.status = "wrong_answer";
        res.message = "output " + r.buffers[i].name + (cmp.non_finite ? " has NaN or inf" : "") + " relative error " +
                      std::to_string(res.max_error) + " > tolerance " + std::to_string(r.tolerance) + when;
      }
    }
  }

  /// Fills every output buffer with quiet NaNs of its dtype and (when asked) zeroes every workspace.
  void poison_outputs(const MeasureRequest& r, const State& st, bool zero_workspaces) {
    for (size_t i = 0; i < st.buffers.size(); ++i) {
      if (r.buffers[i].output)
        check(driver().cuMemsetD32(st.buffers[i].get(), nan_poison_word(r.buffers[i].dtype), st.buffers[i].bytes() / 4),
              "cuMemsetD32");
      else if (r.buffers[i].workspace && zero_workspaces)
        check(driver().cuMemsetD32(st.buffers[i].get(), 0u, st.buffers[i].bytes() / 4), "cuMemsetD32");
    }
  }

  /// The state of the request's workload: found, or made (buffers, inputs, reference, baseline checksum).
  State& state_for(const MeasureRequest& r, MeasurePhases& phases) {
    const std::string key = key_of(r);
    for (auto it = states.begin(); it != states.end(); ++it)
      if (it->key == key) {
        states.splice(states.begin(), states, it);
        return states.front();
      }
    while (states.size() >= kMaxStates) states.pop_back();
    auto t0 = std::chrono::steady_clock::now();
    State st;
    for (size_t i = 0; i < r.buffers.size(); ++i) {
      const auto& b = r.buffers[i];
      st.buffers.emplace_back(padded_buffer_bytes(b.elements, b.dtype));
      const GuardedBuffer& g = st.buffers.back();
      check(driver().cuMemsetD32(g.get(), 0u, g.bytes() / 4), "cuMemsetD32");
      // Random values in (-1, 1) rounded to the buffer's dtype, never zeros (runner_kernels.h).
      if (!b.output && !b.workspace) fill_uniform(g.get(), b, r.settings.input_seed, static_cast<unsigned>(i));
    }
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (inputs)");
    if (!flush.get() && info.l2_bytes > 0) flush = DeviceBuffer(static_cast<size_t>(info.l2_bytes) * 2);
    phases.inputs_s += seconds_since(t0);

    // The reference writes each output buffer; keep a device copy of it.
    t0 = std::chrono::steady_clock::now();
    Module ref(r.reference_cubin);
    CUfunction fn = ref.function(r.reference_kernel_name);
    std::vector<CUdeviceptr> ptrs;
    for (auto& b : st.buffers) ptrs.push_back(b.get());
    std::vector<int32_t> scalars;
    poison_outputs(r, st, /*zero_workspaces=*/true);
    encode_tensor_maps(r, st);  // the reference takes the kernel's arguments, tensor maps included
    prepare_launch(fn, r.reference_launch);
    launch(fn, r.reference_launch, r.scalar_args, nullptr, ptrs, scalars);
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (reference)");
    st.reference.resize(st.buffers.size());
    for (size_t i = 0; i < st.buffers.size(); ++i) {
      if (!r.buffers[i].output) continue;
      st.reference[i] = DeviceBuffer(st.buffers[i].bytes());
      check(driver().cuMemcpyDtoD(st.reference[i].get(), st.buffers[i].get(), st.buffers[i].bytes()), "cuMemcpyDtoD");
    }
    st.baseline = integrity_checksum(st, r);
    st.key = key;
    phases.reference_s += seconds_since(t0);
    states.push_front(std::move(st));
    return states.front();
  }

  /// The call that runs the config once on the state's buffers: the kernel, or a vendor baseline (cuBLAS,
  /// cuDNN). The returned function refers to r, ptrs and scalars, which must outlive it.
  std::function<void()> launcher(const MeasureRequest& r, CUfunction fn, std::vector<CUdeviceptr>& ptrs,
                                 std::vector<int32_t>& scalars) {
    if (r.vendor == "cublas_gemm_ex") {
      // The call the host checks too (cublas_gemm_call, tests/tuner/cublas_gemm_test.cpp).
      std::string why;
      const auto call = cublas_gemm_call(ptrs.size(), r.buffers.empty() ? 0 : r.buffers[0].elements, r.scalar_args, &why);
      if (!call) throw CudaFailure("cublas_gemm_ex " + why, "unknown", false);
      return [this, &r, &ptrs, c = *call] {
        std::string e;
        if (!cublas->run_ex(ptrs[0], ptrs[1], ptrs[2], c.m, c.n, c.k, c.batch, r.buffers[0].dtype, r.buffers[2].dtype, &e))
          throw CudaFailure(e, "launch_error", false);
      };
    }
    if (r.vendor == "cudnn_conv") {
      // Buffers X, F, Y and the conv2d templates' scalars N, H, W, C, K, R, S, stride, pad, dilation, P, Q.
      if (ptrs.size() < 3 || r.scalar_args.size() < 12)
        throw CudaFailure("cudnn_conv needs buffers X, F, Y and the conv2d scalars through P and Q", "unknown", false);
      std::string err;
      if (!cudnn) cudnn = CudnnConv::create(&err);
      if (!cudnn) throw CudaFailure(err, "unknown", false);
      const auto& a = r.scalar_args;
      const ConvShape shape{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], r.buffers[0].dtype};
      // The first time per shape, plan() times cuDNN's candidates on these buffers (Y is written; the
      // checked run poisons it again) with workspace grown on demand.
      const ConvBuffers bufs{ptrs[0], ptrs[1], ptrs[2]};
      const ConvWorkspace grow = [this](size_t bytes) -> uint64_t {
        try {
          if (bytes > cudnn_workspace.bytes()) cudnn_workspace = DeviceBuffer(bytes);
          return cudnn_workspace.get();
        } catch (const CudaFailure&) {  // out of memory: that candidate is skipped
          return 0;
        }
      };
      size_t need = 0;
      if (!cudnn->plan(shape, bufs, grow, &need, &err)) {
        // A faulted candidate: the context is lost, and err names the candidate.
        check(driver().cuCtxSynchronize(), ("cuCtxSynchronize after cudnn plan (" + err + ")").c_str());
        throw CudaFailure(err, "launch_error", false);
      }
      if (need > cudnn_workspace.bytes()) cudnn_workspace = DeviceBuffer(need);
      return [this, bufs] {  // only the forward call: planning happened once, above
        std::string e;
        if (!cudnn->run(bufs, cudnn_workspace.get(), cudnn_workspace.bytes(), &e)) throw CudaFailure(e, "launch_error", false);
      };
    }
    if (r.vendor == "cublas_sgemm") {
      // The same reading as cublas_gemm_ex's, for exactly A, B, C and M, N, K of one batch entry.
      std::string why;
      const auto call = cublas_gemm_call(ptrs.size(), r.buffers.empty() ? 0 : r.buffers[0].elements, r.scalar_args, &why);
      if (ptrs.size() != 3 || r.scalar_args.size() != 3 || !call || call->batch != 1)
        throw CudaFailure("cublas_sgemm needs buffers A, B, C and scalars M, N, K of one batch entry" +
                              (why.empty() ? std::string() : ": " + why),
                          "unknown", false);
      return [this, &ptrs, c = *call] {
        std::string e;
        if (!cublas->run(ptrs[0], ptrs[1], ptrs[2], c.m, c.n, c.k, &e)) throw CudaFailure(e, "launch_error", false);
      };
    }
    if (r.vendor == kDeviceCopyBaseline) {
      // The first buffer copied into the first output, the smaller one's bytes: a memory-bound op's
      // bandwidth yardstick on the same buffers (softmax and layernorm: X read, Y written once).
      size_t out = 0;
      while (out < r.buffers.size() && !r.buffers[out].output) ++out;
      if (ptrs.empty() || out == r.buffers.size())
        throw CudaFailure("device_copy needs an input and an output buffer", "unknown", false);
      const auto bytes_of = [](const templates::BufferSpec& b) {
        return static_cast<size_t>(b.elements) * static_cast<size_t>(templates::dtype_bytes(b.dtype));
      };
      const size_t bytes = std::min(bytes_of(r.buffers[0]), bytes_of(r.buffers[out]));
      return [&ptrs, out, bytes] {
        check(driver().cuMemcpyDtoDAsync(ptrs[out], ptrs[0], bytes, nullptr), "cuMemcpyDtoDAsync");
      };
    }
    if (!r.vendor.empty()) throw CudaFailure("unknown vendor baseline '" + r.vendor + "'", "unknown", false);
    prepare_launch(fn, r.launch);
    return [this, fn, &r, &ptrs, &scalars] { launch(fn, r.launch, r.scalar_args, nullptr, ptrs, scalars); };
  }

  /// Checked run: poison outputs (NaN), zero workspaces, run once, compare with the reference on the GPU,
  /// and check that nothing outside the outputs changed (inputs, guards, reference copies).
  void checked_run(const MeasureRequest& r, State& st, const std::function<void()>& launch_once, MeasureResult& res) {
    poison_outputs(r, st, /*zero_workspaces=*/true);
    launch_once();
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (checked run)");
    compare_outputs(r, st, res, "");
    // A kernel with a workspace must leave its counters as it found them (zero): the timed runs and the runtime
    // launch it again on the same workspace. A second checked launch on the workspace as the first left it finds
    // one that does not (a split-K tile counter not reset gives the wrong split the reduction).
    const bool workspace = std::any_of(r.buffers.begin(), r.buffers.end(), [](const auto& b) { return b.workspace; });
    if (workspace && res.status == "ok" && r.vendor != kDeviceCopyBaseline) {
      poison_outputs(r, st, /*zero_workspaces=*/false);
      launch_once();
      check(driver().cuCtxSynchronize(), "cuCtxSynchronize (second checked run)");
      compare_outputs(r, st, res, " on a second launch with the workspace as the first left it (the kernel must leave "
                                  "its workspace's counters zero)");
    }
    if (integrity_checksum(st, r) != st.baseline) {
      res.status = "wrong_answer";
      res.message = (res.message.empty() ? "" : res.message + "; ") +
                    "the kernel wrote outside its output buffers (an input, a guard region or the reference changed)";
      states.remove_if([&](const State& s) { return &s == &st; });  // made afresh for the next config
    }
  }

  /// Timed runs: warm up, then batches of runs, each after an L2 flush and timed with its own events,
  /// until the stopping rule (timing_stop.h) says the median is known.
  void timed_runs(const MeasureRequest& r, const std::function<void()>& launch_once, MeasureResult& res) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int w = 0; w < r.settings.warmup_runs; ++w) launch_once();
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (warm-up)");
    const double per_run_ms = std::max(1e-3, 1e3 * seconds_since(t0) / std::max(1, r.settings.warmup_runs));
    constexpr int kBatch = 10;
    std::vector<EventPair> events(kBatch);
    std::vector<double> times;
    const auto wall_start = std::chrono::steady_clock::now();
    while (!timing_stop_reason(times, 1e3 * seconds_since(wall_start), r.settings)) {
      const double wall_left = r.settings.max_wall_ms - 1e3 * seconds_since(wall_start);
      const int n = std::max(1, std::min({kBatch, r.settings.max_repeats - static_cast<int>(times.size()),
                                          static_cast<int>(wall_left / per_run_ms)}));
      for (int j = 0; j < n; ++j) {
        if (r.settings.flush_l2 && flush.get())
          check(driver().cuMemsetD32Async(flush.get(), static_cast<unsigned>(times.size() + j), flush.bytes() / 4, nullptr),
                "cuMemsetD32Async");
        check(driver().cuEventRecord(events[j].start(), nullptr), "cuEventRecord");
        launch_once();
        check(driver().cuEventRecord(events[j].stop(), nullptr), "cuEventRecord");
      }
      check(driver().cuEventSynchronize(events[n - 1].stop()), "cuEventSynchronize");
      for (int j = 0; j < n; ++j) {
        float ms = 0;
        check(driver().cuEventElapsedTime(&ms, events[j].start(), events[j].stop()), "cuEventElapsedTime");
        times.push_back(ms);
      }
    }
    res.repeats = static_cast<int>(times.size());
    res.time_ms = percentile(times, 0.5);
    res.spread_ms = percentile(times, 0.75) - percentile(times, 0.25);
    res.phases.timed_s = seconds_since(t0);
  }

  /// One config: module, state, launcher, then the checked run and (when right) the timed runs.
  MeasureResult run(const MeasureRequest& r, const std::function<void()>& on_ready, bool& launched) {
    MeasureResult res;
    // The workload's inputs and reference first (the client's startup allowance covers them); then everything of
    // a template config's own, from its module load on, counts as the config's: a cubin that crashes or hangs the
    // driver at load is its fault, not the worker's (WorkerClient blames a worker that fails before this point).
    // A vendor baseline's library setup (cuBLAS, cuDNN and its per-shape plan) is not a config's: it stays in the
    // allowance, and the baseline's timeout starts with its runs.
    State& st = state_for(r, res.phases);
    const bool vendor = !r.vendor.empty();
    if (!vendor && on_ready) on_ready();
    auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Module> mod;
    CUfunction fn = nullptr;
    if (r.vendor.empty()) {
      mod = std::make_unique<Module>(r.cubin);
      fn = mod->function(r.kernel_name);
    } else if ((r.vendor == "cublas_gemm_ex" || r.vendor == "cublas_sgemm") && !cublas) {
      std::string err;
      cublas = CublasSgemm::create(&err);
      if (!cublas) throw CudaFailure(err, "unknown", false);
    }
    res.phases.module_load_s = seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    encode_tensor_maps(r, st);  // per config: boxes differ with the tile
    std::vector<CUdeviceptr> ptrs;
    for (auto& b : st.buffers) ptrs.push_back(b.get());
    std::vector<int32_t> scalars;
    // `launched` once a launch of the config is accepted: one the driver refuses (too much shared memory, a bad
    // block) wrote nothing, and every cached state stays valid for the next config.
    const std::function<void()> launch_once = [&launched, run = launcher(r, fn, ptrs, scalars)] {
      run();
      launched = true;
    };
    if (r.vendor == "cudnn_conv") res.detail = cudnn->planned_detail();
    res.phases.module_load_s += seconds_since(t0);
    if (vendor && on_ready) on_ready();

    t0 = std::chrono::steady_clock::now();
    checked_run(r, st, launch_once, res);
    res.phases.check_s = seconds_since(t0);
    if (res.status == "ok") timed_runs(r, launch_once, res);
    return res;
  }

};

CudaRunner::CudaRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaRunner::~CudaRunner() = default;

std::unique_ptr<CudaRunner> CudaRunner::create(int ordinal, std::string* error) {
  auto devices = cuda_devices(error);
  if (ordinal < 0 || ordinal >= static_cast<int>(devices.size())) {
    if (error && error->empty())
      *error = "no GPU cuda:" + std::to_string(ordinal) + " (" + std::to_string(devices.size()) + " present)";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->info = devices[static_cast<size_t>(ordinal)];
  try {
    check(driver().cuDeviceGet(&impl->device, ordinal), "cuDeviceGet");
    check(driver().cuDevicePrimaryCtxRetain(&impl->context, impl->device), "cuDevicePrimaryCtxRetain");
    check(driver().cuCtxSetCurrent(impl->context), "cuCtxSetCurrent");
    impl->scratch = DeviceBuffer(64);  // compare results (words 0-2) and the checksum (bytes 16-23)
  } catch (const CudaFailure& f) {
    if (error) *error = f.what();
    return nullptr;
  }
  return std::unique_ptr<CudaRunner>(new CudaRunner(std::move(impl)));
}

MeasureResult CudaRunner::measure(const MeasureRequest& request, const std::function<void()>& on_ready) {
  bool launched = false;
  try {
    check(driver().cuCtxSetCurrent(impl_->context), "cuCtxSetCurrent");  // a worker may serve several GPUs
    return impl_->run(request, on_ready, launched);
  } catch (const CudaFailure& f) {
    MeasureResult res;
    res.status = f.kind;
    res.message = f.what();
    res.context_lost = f.context_lost;
    // A config that ran and then failed may have written anywhere: make every state afresh. One that
    // never ran (a refused launch, a module that did not load) left them as they were.
    if (launched) impl_->states.clear();
    return res;
  }
}

}  // namespace tuner
