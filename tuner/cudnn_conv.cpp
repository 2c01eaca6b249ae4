#include "tuner/cudnn_conv.h"

#include <dlfcn.h>

#include <map>

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define TUNER_HAVE_CUDNN 1
#endif

namespace tuner {

#ifdef TUNER_HAVE_CUDNN

namespace {

#define TUNER_CUDNN_FUNCTIONS(X)                                                                             \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)                        \
  X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor)               \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)          \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionMathType)     \
  X(cudnnGetConvolution2dForwardOutputDim) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnConvolutionForward)

cudnnDataType_t cudnn_type(templates::DType d) {
  switch (d) {
    case templates::DType::kF16: return CUDNN_DATA_HALF;
    case templates::DType::kBF16: return CUDNN_DATA_BFLOAT16;
    case templates::DType::kF32: break;
  }
  return CUDNN_DATA_FLOAT;
}

std::string key_of(const ConvShape& s) {
  std::string k = templates::to_string(s.dtype);
  for (int v : {s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.stride, s.pad, s.dilation}) k += "," + std::to_string(v);
  return k;
}

}  // namespace

struct CudnnConv::Impl {
#define TUNER_DECLARE(fn) decltype(&::fn) fn = nullptr;
  TUNER_CUDNN_FUNCTIONS(TUNER_DECLARE)
#undef TUNER_DECLARE
  void* lib = nullptr;
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t f = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::map<std::string, cudnnConvolutionFwdAlgoPerf_t> algos;  ///< Per shape key.
  std::string described;                                        ///< Key of the shape the descriptors hold.
  const cudnnConvolutionFwdAlgoPerf_t* planned = nullptr;       ///< The algorithm of the shape last planned.

  ~Impl() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (f) cudnnDestroyFilterDescriptor(f);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
    if (handle) cudnnDestroy(handle);
    if (lib) dlclose(lib);
  }

  bool ok(cudnnStatus_t st, const char* call, std::string* error) const {
    if (st == CUDNN_STATUS_SUCCESS) return true;
    *error = std::string(call) + " failed: " + cudnnGetErrorString(st);
    return false;
  }

  /// Points the descriptors at a shape (NHWC / KRSC / NPQK, fp32 compute).
  bool describe(const ConvShape& s, std::string* error) {
    const std::string key = key_of(s);
    if (key == described) return true;
    described.clear();
    const cudnnDataType_t t = cudnn_type(s.dtype);
    if (!ok(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, t, s.n, s.c, s.h, s.w), "cudnnSetTensor4dDescriptor", error) ||
        !ok(cudnnSetFilter4dDescriptor(f, t, CUDNN_TENSOR_NHWC, s.k, s.c, s.r, s.s), "cudnnSetFilter4dDescriptor", error) ||
        !ok(cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, s.stride, s.stride, s.dilation, s.dilation,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "cudnnSetConvolution2dDescriptor", error) ||
        !ok(cudnnSetConvolutionMathType(conv, s.dtype == templates::DType::kF32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
            "cudnnSetConvolutionMathType", error))
      return false;
    int n = 0, k = 0, p = 0, q = 0;
    if (!ok(cudnnGetConvolution2dForwardOutputDim(conv, x, f, &n, &k, &p, &q), "cudnnGetConvolution2dForwardOutputDim",
            error))
      return false;
    if (n != s.n || k != s.k || p != s.p || q != s.q) {  // cuDNN would write past the buffers
      *error = "cuDNN's output " + std::to_string(n) + "x" + std::to_string(p) + "x" + std::to_string(q) + "x" +
               std::to_string(k) + " differs from the template's " + std::to_string(s.n) + "x" + std::to_string(s.p) +
               "x" + std::to_string(s.q) + "x" + std::to_string(s.k);
      return false;
    }
    if (!ok(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, t, n, k, p, q), "cudnnSetTensor4dDescriptor", error))
      return false;
    described = key;
    return true;
  }
};

CudnnConv::CudnnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnConv::~CudnnConv() = default;

std::unique_ptr<CudnnConv> CudnnConv::create(std::string* error) {
  auto impl = std::make_unique<Impl>();
  for (const char* name : {"libcudnn.so.9", "libcudnn.so", TUNER_CUDA_HOME "/lib64/libcudnn.so.9"}) {
    impl->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (impl->lib) break;
  }
  if (!impl->lib) {
    *error = "cuDNN (libcudnn.so.9) not found";
    return nullptr;
  }
#define TUNER_RESOLVE(fn)                                                        \
  impl->fn = reinterpret_cast<decltype(&::fn)>(dlsym(impl->lib, #fn));           \
  if (!impl->fn) {                                                               \
    *error = std::string("cuDNN lacks ") + #fn;                                  \
    return nullptr;                                                              \
  }
  TUNER_CUDNN_FUNCTIONS(TUNER_RESOLVE)
#undef TUNER_RESOLVE
  if (!impl->ok(impl->cudnnCreate(&impl->handle), "cudnnCreate", error) ||
      !impl->ok(impl->cudnnCreateTensorDescriptor(&impl->x), "cudnnCreateTensorDescriptor", error) ||
      !impl->ok(impl->cudnnCreateTensorDescriptor(&impl->y), "cudnnCreateTensorDescriptor", error) ||
      !impl->ok(impl->cudnnCreateFilterDescriptor(&impl->f), "cudnnCreateFilterDescriptor", error) ||
      !impl->ok(impl->cudnnCreateConvolutionDescriptor(&impl->conv), "cudnnCreateConvolutionDescriptor", error))
    return nullptr;
  return std::unique_ptr<CudnnConv>(new CudnnConv(std::move(impl)));
}

bool CudnnConv::plan(const ConvShape& shape, size_t* workspace_bytes, std::string* error) {
  Impl& m = *impl_;
  if (!m.describe(shape, error)) return false;
  auto it = m.algos.find(m.described);
  if (it == m.algos.end()) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    if (!m.ok(m.cudnnFindConvolutionForwardAlgorithm(m.handle, m.x, m.f, m.conv, m.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                     &returned, perf),
              "cudnnFindConvolutionForwardAlgorithm", error))
      return false;
    // Sorted fastest first; take the fastest that ran (for f32, one that used plain FMAs: no TF32).
    const cudnnConvolutionFwdAlgoPerf_t* best = nullptr;
    for (int i = 0; i < returned && !best; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          (shape.dtype != templates::DType::kF32 || perf[i].mathType == CUDNN_FMA_MATH))
        best = &perf[i];
    if (!best) {
      *error = "cuDNN has no forward algorithm for conv2d " + m.described;
      return false;
    }
    it = m.algos.emplace(m.described, *best).first;
  }
  m.planned = nullptr;
  if (!m.ok(m.cudnnSetConvolutionMathType(m.conv, it->second.mathType), "cudnnSetConvolutionMathType", error))
    return false;
  m.planned = &it->second;
  *workspace_bytes = it->second.memory;
  return true;
}

bool CudnnConv::run(uint64_t x, uint64_t f, uint64_t y, uint64_t workspace, size_t workspace_bytes, std::string* error) {
  Impl& m = *impl_;
  if (!m.planned) {
    *error = "cudnn_conv: run() before a successful plan()";
    return false;
  }
  if (workspace_bytes < m.planned->memory) {
    *error = "cuDNN needs " + std::to_string(m.planned->memory) + " workspace bytes, got " + std::to_string(workspace_bytes);
    return false;
  }
  const float one = 1.0f, zero = 0.0f;  // beta 0: Y (NaN-poisoned by the runner) is never read
  return m.ok(m.cudnnConvolutionForward(m.handle, &one, m.x, reinterpret_cast<const void*>(x), m.f,
                                        reinterpret_cast<const void*>(f), m.conv, m.planned->algo,
                                        reinterpret_cast<void*>(workspace), workspace_bytes, &zero, m.y,
                                        reinterpret_cast<void*>(y)),
              "cudnnConvolutionForward", error);
}

#else  // built without cuDNN's headers: the baseline reports that it is missing

struct CudnnConv::Impl {};
CudnnConv::CudnnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnConv::~CudnnConv() = default;
std::unique_ptr<CudnnConv> CudnnConv::create(std::string* error) {
  *error = "cuDNN (libcudnn.so.9) not found: tuner was built without cuDNN's headers";
  return nullptr;
}
bool CudnnConv::plan(const ConvShape&, size_t*, std::string* error) {
  *error = "built without cuDNN";
  return false;
}
bool CudnnConv::run(uint64_t, uint64_t, uint64_t, uint64_t, size_t, std::string* error) {
  *error = "built without cuDNN";
  return false;
}

#endif

}  // namespace tuner
