// The driver loader (cuda_driver.h) and the GPU list (cuda_devices.h).
#include "tuner/cuda_driver.h"

#include <dlfcn.h>

#include <stdexcept>

#include "tuner/cuda_devices.h"
#include "tuner/stop_signals.h"

namespace tuner {

#define TUNER_STR2(x) #x
#define TUNER_STR(x) TUNER_STR2(x)

const CudaDriver& cuda_driver() {
  static const CudaDriver d = [] {
    CudaDriver d;
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
    // The driver's threads start here: they must never take SIGINT/SIGTERM (stop_signals.h).
    const CUresult rc = [&] {
      StopSignalsBlocked blocked;
      return d.cuInit(0);
    }();
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

std::string cuda_error_text(CUresult rc) {
  const CudaDriver& d = cuda_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(rc, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(rc, &text);
  return std::string(name ? name : ("CUresult " + std::to_string(static_cast<int>(rc))).c_str()) + " (" +
         (text ? text : "") + ")";
}

std::string encode_tensor_map(const templates::TensorMapSpec& m, templates::DType dtype, CUdeviceptr base,
                              CUtensorMap* out) {
  const CudaDriver& d = cuda_driver();
  if (!d.cuTensorMapEncodeTiled) return "the CUDA driver lacks cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)";
  const size_t rank = m.dims.size();
  if (rank < 1 || rank > 5 || m.box.size() != rank || m.strides_bytes.size() + 1 != rank ||
      (!m.element_strides.empty() && m.element_strides.size() != rank))
    return "malformed";
  const CUtensorMapDataType type = dtype == templates::DType::kF16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : dtype == templates::DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                      : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUtensorMapSwizzle swizzle = m.swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : m.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : m.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                             : CU_TENSOR_MAP_SWIZZLE_NONE;
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], element_strides[5];
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = m.dims[i];
    box[i] = m.box[i];
    element_strides[i] = m.element_strides.empty() ? 1 : m.element_strides[i];
    if (i + 1 < rank) strides[i] = m.strides_bytes[i];
  }
  CUresult rc = d.cuTensorMapEncodeTiled(out, type, static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(base), dims,
                                         strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return rc == CUDA_SUCCESS ? std::string() : "cuTensorMapEncodeTiled failed: " + cuda_error_text(rc);
}

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

namespace {

/// One device's figures; throws std::runtime_error naming the failed call.
CudaDeviceInfo read_device(const CudaDriver& d, int ordinal) {
  auto ok = [](CUresult rc, const char* call) {
    if (rc != CUDA_SUCCESS) throw std::runtime_error(std::string(call) + " failed: " + cuda_error_text(rc));
  };
  CUdevice dev;
  ok(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  CudaDeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  ok(d.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    ok(d.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  size_t mem = 0;
  ok(d.cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem");
  info.memory_bytes = static_cast<int64_t>(mem);
  info.driver_version = cuda_version_string(d.version);
  return info;
}

}  // namespace

std::vector<CudaDeviceInfo> cuda_devices(std::string* error) {
  const CudaDriver& d = cuda_driver();
  std::vector<CudaDeviceInfo> out;
  if (!d.error.empty()) {
    if (error) *error = d.error;
    return out;
  }
  try {
    int count = 0;
    CUresult rc = d.cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS) throw std::runtime_error("cuDeviceGetCount failed: " + cuda_error_text(rc));
    for (int i = 0; i < count; ++i) out.push_back(read_device(d, i));
    if (count == 0 && error) *error = "the CUDA driver reports no GPU";
  } catch (const std::runtime_error& e) {
    if (error) *error = e.what();
    out.clear();
  }
  return out;
}

}  // namespace tuner
