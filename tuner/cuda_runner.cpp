#include "tuner/cuda_runner.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>
#include <random>
#include <stdexcept>

#include <cuda.h>

#include "tuner/cublas_gemm.h"
#include "tuner/cudnn_conv.h"
#include "tuner/host_dtype.h"

namespace tuner {

namespace {

#define TUNER_STR2(x) #x
#define TUNER_STR(x) TUNER_STR2(x)

// Every driver entry point we use; the name is the macro-expanded symbol (cuMemAlloc -> cuMemAlloc_v2).
#define TUNER_CUDA_FUNCTIONS(X)                                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)           \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                          \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData)          \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuMemAlloc) X(cuMemFree)         \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD32) X(cuMemsetD32Async) X(cuLaunchKernel)             \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)  \
  X(cuGetErrorName) X(cuGetErrorString)

struct Driver {
#define TUNER_DECLARE(fn) decltype(&::fn) fn = nullptr;
  TUNER_CUDA_FUNCTIONS(TUNER_DECLARE)
#undef TUNER_DECLARE
  /// Optional (CUDA 12+ drivers): only instances with TMA tensor maps need it.
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  void* handle = nullptr;
  std::string error;  ///< Why the driver is unusable; empty when loaded and initialised.
  int version = 0;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.handle) {
      d.error = "no CUDA driver on this machine (libcuda.so.1 not found); use a sim: device instead";
      return d;
    }
#define TUNER_RESOLVE(fn)                                                             \
  d.fn = reinterpret_cast<decltype(&::fn)>(dlsym(d.handle, TUNER_STR(fn)));           \
  if (!d.fn && d.error.empty()) d.error = std::string("CUDA driver lacks ") + TUNER_STR(fn);
    TUNER_CUDA_FUNCTIONS(TUNER_RESOLVE)
#undef TUNER_RESOLVE
    d.cuTensorMapEncodeTiled =
        reinterpret_cast<decltype(&::cuTensorMapEncodeTiled)>(dlsym(d.handle, "cuTensorMapEncodeTiled"));
    if (!d.error.empty()) return d;
    CUresult rc = d.cuInit(0);
    if (rc != CUDA_SUCCESS) {
      const char* name = nullptr;
      d.cuGetErrorName(rc, &name);
      d.error = std::string("CUDA driver failed to initialise (") + (name ? name : "?") + ")";
      return d;
    }
    d.cuDriverGetVersion(&d.version);
    return d;
  }();
  return d;
}

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
      return true;
    default:
      return false;
  }
}

/// One check per driver call: a failure becomes a CudaFailure with the driver's own message.
void check(CUresult rc, const char* call, const char* kind = "unknown") {
  if (rc == CUDA_SUCCESS) return;
  const Driver& d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  d.cuGetErrorName(rc, &name);
  d.cuGetErrorString(rc, &text);
  bool sticky = is_sticky(rc);
  throw CudaFailure(std::string(call) + " failed: " + (name ? name : "?") + " (" + (text ? text : "") + ")",
                    sticky ? "runtime_fault" : kind, sticky);
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

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

/// A loaded module and its kernel, unloaded on scope exit.
class Module {
 public:
  Module(const std::string& cubin, const std::string& kernel) {
    check(driver().cuModuleLoadData(&mod_, cubin.data()), "cuModuleLoadData", "launch_error");
    check(driver().cuModuleGetFunction(&fn_, mod_, kernel.c_str()), "cuModuleGetFunction", "launch_error");
  }
  ~Module() { if (mod_) driver().cuModuleUnload(mod_); }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUfunction fn() const { return fn_; }

 private:
  CUmodule mod_ = nullptr;
  CUfunction fn_ = nullptr;
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

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

std::vector<CudaDeviceInfo> cuda_devices(std::string* error) {
  const Driver& d = driver();
  std::vector<CudaDeviceInfo> out;
  if (!d.error.empty()) {
    if (error) *error = d.error;
    return out;
  }
  try {
    int count = 0;
    check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    for (int i = 0; i < count; ++i) {
      CUdevice dev;
      check(d.cuDeviceGet(&dev, i), "cuDeviceGet");
      CudaDeviceInfo info;
      info.ordinal = i;
      char name[256] = {};
      check(d.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
      info.name = name;
      auto attr = [&](CUdevice_attribute a) {
        int v = 0;
        check(d.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
        return v;
      };
      info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
      info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
      info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
      info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
      info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
      info.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
      info.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
      size_t mem = 0;
      check(d.cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem");
      info.memory_bytes = static_cast<int64_t>(mem);
      info.driver_version = version_string(d.version);
      out.push_back(info);
    }
    if (count == 0 && error) *error = "the CUDA driver reports no GPU";
  } catch (const CudaFailure& f) {
    if (error) *error = f.what();
    out.clear();
  }
  return out;
}

struct CudaRunner::Impl {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CudaDeviceInfo info;
  // Inputs, reference output and L2-flush buffer, kept while consecutive requests share a workload.
  std::string inputs_key;
  std::vector<DeviceBuffer> buffers;
  std::vector<std::vector<double>> reference;  ///< Each output buffer's reference values, as doubles.
  DeviceBuffer flush;
  std::unique_ptr<CublasSgemm> cublas;
  std::unique_ptr<CudnnConv> cudnn;
  DeviceBuffer cudnn_workspace;
  std::vector<CUtensorMap> maps;  ///< The request's tensor maps over the current buffers.

  ~Impl() {
    cublas.reset();
    cudnn.reset();
    cudnn_workspace = DeviceBuffer();
    buffers.clear();
    flush = DeviceBuffer();
    if (context) driver().cuDevicePrimaryCtxRelease(device);
  }

  static std::string key_of(const MeasureRequest& r) {
    std::string k = r.reference_kernel_name + "|" + std::to_string(r.settings.input_seed);
    // The dtype too: one template's configs may differ in an output's type (gemm_tc_mma's OUT_F32).
    for (const auto& b : r.buffers) k += "|" + b.name + ":" + std::to_string(b.elements) + ":" + templates::to_string(b.dtype);
    for (int32_t s : r.scalar_args) k += "|" + std::to_string(s);
    return k;
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

  /// Encodes the request's tensor maps over the current buffers (cuTensorMapEncodeTiled).
  void encode_tensor_maps(const MeasureRequest& r) {
    maps.assign(r.tensor_maps.size(), CUtensorMap{});
    if (r.tensor_maps.empty()) return;
    if (!driver().cuTensorMapEncodeTiled)
      throw CudaFailure("the CUDA driver lacks cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)", "launch_error", false);
    for (size_t i = 0; i < r.tensor_maps.size(); ++i) {
      const auto& m = r.tensor_maps[i];
      const size_t rank = m.dims.size();
      const bool shape_ok = rank >= 1 && rank <= 5 && m.box.size() == rank && m.strides_bytes.size() + 1 == rank &&
                            m.buffer >= 0 && static_cast<size_t>(m.buffer) < buffers.size();
      if (!shape_ok) throw CudaFailure("tensor map " + std::to_string(i) + " is malformed", "launch_error", false);
      const templates::DType dt = r.buffers[static_cast<size_t>(m.buffer)].dtype;
      const CUtensorMapDataType type = dt == templates::DType::kF16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                       : dt == templates::DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
      const CUtensorMapSwizzle swizzle = m.swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                         : m.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                         : m.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                                 : CU_TENSOR_MAP_SWIZZLE_NONE;
      cuuint64_t dims[5], strides[4];
      cuuint32_t box[5], element_strides[5];
      for (size_t d = 0; d < rank; ++d) {
        dims[d] = m.dims[d];
        box[d] = m.box[d];
        element_strides[d] = 1;
        if (d + 1 < rank) strides[d] = m.strides_bytes[d];
      }
      check(driver().cuTensorMapEncodeTiled(&maps[i], type, static_cast<cuuint32_t>(rank),
                                            reinterpret_cast<void*>(buffers[static_cast<size_t>(m.buffer)].get()), dims,
                                            strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            "cuTensorMapEncodeTiled", "launch_error");
    }
  }

  /// Fills every output buffer with quiet NaNs of its dtype (whole words; buffers are padded to 4 bytes).
  void poison_outputs(const MeasureRequest& r) {
    for (size_t i = 0; i < buffers.size(); ++i)
      if (r.buffers[i].output)
        check(driver().cuMemsetD32(buffers[i].get(), nan_poison_word(r.buffers[i].dtype), buffers[i].bytes() / 4),
              "cuMemsetD32");
  }

  /// Output buffer i as doubles.
  std::vector<double> read_back(size_t i, const templates::BufferSpec& spec) {
    std::string bytes(buffers[i].bytes(), '\0');
    check(driver().cuMemcpyDtoH(bytes.data(), buffers[i].get(), bytes.size()), "cuMemcpyDtoH");
    return decode_elements(bytes.data(), static_cast<size_t>(spec.elements), spec.dtype);
  }

  void prepare_inputs(const MeasureRequest& r) {
    std::string key = key_of(r);
    if (key == inputs_key) return;
    inputs_key.clear();
    buffers.clear();
    reference.clear();
    std::mt19937_64 rng(r.settings.input_seed);
    for (const auto& b : r.buffers) {
      buffers.emplace_back(padded_buffer_bytes(b.elements, b.dtype));
      if (b.workspace) {
        check(driver().cuMemsetD32(buffers.back().get(), 0u, buffers.back().bytes() / 4), "cuMemsetD32");
        continue;
      }
      if (b.output) continue;
      // Random values in [-1, 1] generated in fp32, rounded to the buffer's dtype, never zeros.
      const std::string host = encode_elements(random_inputs(static_cast<size_t>(b.elements), b.dtype, rng), b.dtype);
      check(driver().cuMemcpyHtoD(buffers.back().get(), host.data(), host.size()), "cuMemcpyHtoD");
    }
    // The reference writes each output buffer; keep a host copy of it.
    Module ref(r.reference_cubin, r.reference_kernel_name);
    std::vector<CUdeviceptr> ptrs;
    for (auto& b : buffers) ptrs.push_back(b.get());
    std::vector<int32_t> scalars;
    poison_outputs(r);
    encode_tensor_maps(r);  // the reference takes the kernel's arguments, tensor maps included
    launch(ref.fn(), r.reference_launch, r.scalar_args, nullptr, ptrs, scalars);
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (reference)");
    reference.resize(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (!r.buffers[i].output) continue;
      reference[i] = read_back(i, r.buffers[i]);
    }
    if (!flush.get() && info.l2_bytes > 0) flush = DeviceBuffer(static_cast<size_t>(info.l2_bytes) * 2);
    inputs_key = key;
  }

  MeasureResult run(const MeasureRequest& r) {
    MeasureResult res;
    prepare_inputs(r);
    encode_tensor_maps(r);  // per config: boxes differ with the tile
    std::vector<CUdeviceptr> ptrs;
    for (auto& b : buffers) ptrs.push_back(b.get());
    std::vector<int32_t> scalars;
    std::unique_ptr<Module> mod;
    std::function<void()> launch_once;
    if (r.vendor == "cublas_gemm_ex") {
      // Buffers A, B, C (a trailing workspace is ignored), scalars M, N, K; the batch count from A's size.
      if (ptrs.size() < 3 || r.scalar_args.size() != 3)
        throw CudaFailure("cublas_gemm_ex needs buffers A, B, C and scalars M, N, K", "unknown", false);
      std::string err;
      if (!cublas) cublas = CublasSgemm::create(&err);
      if (!cublas) throw CudaFailure(err, "unknown", false);
      const int64_t mk = int64_t{r.scalar_args[0]} * r.scalar_args[2];
      const int batch = static_cast<int>(mk > 0 ? r.buffers[0].elements / mk : 1);
      launch_once = [&, batch] {
        std::string e;
        if (!cublas->run_ex(ptrs[0], ptrs[1], ptrs[2], r.scalar_args[0], r.scalar_args[1], r.scalar_args[2], batch,
                            r.buffers[0].dtype, r.buffers[2].dtype, &e))
          throw CudaFailure(e, "launch_error", false);
      };
    } else if (r.vendor == "cudnn_conv") {
      // Buffers X, F, Y and the conv2d templates' scalars N, H, W, C, K, R, S, stride, pad, dilation, P, Q.
      if (ptrs.size() < 3 || r.scalar_args.size() < 12)
        throw CudaFailure("cudnn_conv needs buffers X, F, Y and the conv2d scalars through P and Q", "unknown", false);
      std::string err;
      if (!cudnn) cudnn = CudnnConv::create(&err);
      if (!cudnn) throw CudaFailure(err, "unknown", false);
      const auto& a = r.scalar_args;
      const ConvShape shape{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], r.buffers[0].dtype};
      size_t need = 0;
      if (!cudnn->plan(shape, &need, &err)) throw CudaFailure(err, "launch_error", false);
      if (need > cudnn_workspace.bytes()) cudnn_workspace = DeviceBuffer(need);
      launch_once = [&] {  // only the forward call: planning happened once, above
        std::string e;
        if (!cudnn->run(ptrs[0], ptrs[1], ptrs[2], cudnn_workspace.get(), cudnn_workspace.bytes(), &e))
          throw CudaFailure(e, "launch_error", false);
      };
    } else if (r.vendor == "cublas_sgemm") {
      if (ptrs.size() != 3 || r.scalar_args.size() != 3)
        throw CudaFailure("cublas_sgemm needs buffers A, B, C and scalars M, N, K", "unknown", false);
      std::string err;
      if (!cublas) cublas = CublasSgemm::create(&err);
      if (!cublas) throw CudaFailure(err, "unknown", false);
      launch_once = [&] {
        std::string e;
        if (!cublas->run(ptrs[0], ptrs[1], ptrs[2], r.scalar_args[0], r.scalar_args[1], r.scalar_args[2], &e))
          throw CudaFailure(e, "launch_error", false);
      };
    } else {
      mod = std::make_unique<Module>(r.cubin, r.kernel_name);
      if (r.launch.dynamic_shared_bytes > 48 * 1024)
        check(driver().cuFuncSetAttribute(mod->fn(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          r.launch.dynamic_shared_bytes),
              "cuFuncSetAttribute", "launch_error");
      launch_once = [&] { launch(mod->fn(), r.launch, r.scalar_args, nullptr, ptrs, scalars); };
    }

    // Checked run: poison outputs (NaN), run once, compare with the reference.
    poison_outputs(r);
    launch_once();
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (checked run)");
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (!r.buffers[i].output) continue;
      const Comparison cmp = compare_outputs(read_back(i, r.buffers[i]), reference[i]);
      res.max_error = cmp.max_error;
      if (!cmp.passes(r.tolerance)) {
        res.status = "wrong_answer";
        res.message = "output " + r.buffers[i].name + (cmp.non_finite ? " has NaN or inf" : "") + " relative error " +
                      std::to_string(res.max_error) + " > tolerance " + std::to_string(r.tolerance);
        return res;
      }
    }

    // Timed runs: warm up, then flush L2 before each run and time each launch with events.
    for (int w = 0; w < r.settings.warmup_runs; ++w) launch_once();
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (warm-up)");
    EventPair ev;
    std::vector<double> times;
    double total = 0;
    auto wall_start = std::chrono::steady_clock::now();
    while (true) {
      double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start).count();
      int n = static_cast<int>(times.size());
      if (n >= r.settings.max_repeats) break;
      if (n >= r.settings.min_repeats && total >= r.settings.min_time_ms) break;
      if (n >= 1 && wall >= r.settings.max_wall_ms) break;  // a slow config: fewer runs, not a timeout
      if (r.settings.flush_l2 && flush.get())
        check(driver().cuMemsetD32Async(flush.get(), static_cast<unsigned>(n), flush.bytes() / 4, nullptr), "cuMemsetD32Async");
      check(driver().cuEventRecord(ev.start(), nullptr), "cuEventRecord");
      launch_once();
      check(driver().cuEventRecord(ev.stop(), nullptr), "cuEventRecord");
      check(driver().cuEventSynchronize(ev.stop()), "cuEventSynchronize");
      float ms = 0;
      check(driver().cuEventElapsedTime(&ms, ev.start(), ev.stop()), "cuEventElapsedTime");
      times.push_back(ms);
      total += ms;
    }
    res.repeats = static_cast<int>(times.size());
    res.time_ms = percentile(times, 0.5);
    res.spread_ms = percentile(times, 0.75) - percentile(times, 0.25);
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
  } catch (const CudaFailure& f) {
    if (error) *error = f.what();
    return nullptr;
  }
  return std::unique_ptr<CudaRunner>(new CudaRunner(std::move(impl)));
}

MeasureResult CudaRunner::measure(const MeasureRequest& request) {
  try {
    check(driver().cuCtxSetCurrent(impl_->context), "cuCtxSetCurrent");  // a worker may serve several GPUs
    MeasureResult res = impl_->run(request);
    // A wrong kernel may have written outside its output: regenerate inputs and reference next time.
    if (res.status != "ok") impl_->inputs_key.clear();
    return res;
  } catch (const CudaFailure& f) {
    MeasureResult res;
    res.status = f.kind;
    res.message = f.what();
    res.context_lost = f.context_lost;
    impl_->inputs_key.clear();
    return res;
  }
}

}  // namespace tuner
