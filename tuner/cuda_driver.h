// cuda_driver.h: the CUDA driver API as tuner uses it: libcuda.so.1 loaded once with dlopen and
// every entry point resolved by name, so one binary runs (and explains itself) on machines without
// a driver. Shared by the measurement worker (cuda_runner.cpp) and the runtime library (runtime/).
// Only .cpp files include this header: it brings in cuda.h.
#pragma once

#include <string>

#include <cuda.h>

#include "templates/kernel_template.h"

namespace tuner {

// Every driver entry point we use; the name is the macro-expanded symbol (cuMemAlloc -> cuMemAlloc_v2).
#define TUNER_CUDA_FUNCTIONS(X)                                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)           \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                          \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice)             \
  X(cuCtxSynchronize) X(cuModuleLoadData)                                                          \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuMemAlloc)  \
  X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD32) X(cuMemsetD32Async)     \
  X(cuMemcpyDtoDAsync)                                                                               \
  X(cuLaunchKernel)                                                                                  \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)  \
  X(cuGetErrorName) X(cuGetErrorString)

struct CudaDriver {
#define TUNER_DECLARE(fn) decltype(&::fn) fn = nullptr;
  TUNER_CUDA_FUNCTIONS(TUNER_DECLARE)
#undef TUNER_DECLARE
  /// Optional (CUDA 12+ drivers): only instances with TMA tensor maps need it.
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  void* handle = nullptr;
  std::string error;  ///< Why the driver is unusable; empty when loaded and initialised.
  int version = 0;    ///< cuDriverGetVersion, e.g. 13000.
};

/// The driver, loaded and initialised on first use (thread-safe); check error before calling through.
const CudaDriver& cuda_driver();

/// "CUDA_ERROR_INVALID_VALUE (invalid argument)" for a driver result.
std::string cuda_error_text(CUresult rc);

/// Encodes one tiled tensor map (cuTensorMapEncodeTiled) as a template describes it (TensorMapSpec)
/// over the buffer at `base` of element type `dtype`. Returns empty on success, else one line why.
std::string encode_tensor_map(const templates::TensorMapSpec& m, templates::DType dtype, CUdeviceptr base,
                              CUtensorMap* out);

/// "13.0" for cuDriverGetVersion's 13000.
std::string cuda_version_string(int version);

}  // namespace tuner
