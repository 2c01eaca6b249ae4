#include "tuner/cublas_gemm.h"

#include <dlfcn.h>

#include <cublas_v2.h>

namespace tuner {

namespace {

cudaDataType cuda_type(templates::DType d) {
  switch (d) {
    case templates::DType::kF16: return CUDA_R_16F;
    case templates::DType::kBF16: return CUDA_R_16BF;
    case templates::DType::kF32: break;
  }
  return CUDA_R_32F;
}

}  // namespace

std::string vendor_baseline_for(const templates::Workload& w) {
  if (w.op == "gemm") return w.dtype == templates::DType::kF32 ? "cublas_sgemm" : "cublas_gemm_ex";
  if (w.op == "batched_gemm") return "cublas_gemm_ex";
  if (w.op == "conv2d") return "cudnn_conv";
  return "";
}

std::optional<CublasGemmCall> cublas_gemm_call(size_t buffers, int64_t a_elements, const std::vector<int32_t>& scalars,
                                               std::string* why) {
  const auto fail = [why](std::string text) -> std::optional<CublasGemmCall> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  if (buffers < 3 || scalars.size() < 3 || scalars.size() > 4)
    return fail("needs buffers A, B, C and scalars M, N, K [, batch]; got " + std::to_string(buffers) + " buffers and " +
                std::to_string(scalars.size()) + " scalars");
  CublasGemmCall c;
  c.m = scalars[0];
  c.n = scalars[1];
  c.k = scalars[2];
  if (c.m <= 0 || c.n <= 0 || c.k <= 0) return fail("M, N and K must be positive");
  const int64_t mk = int64_t{c.m} * c.k;
  c.batch = static_cast<int>(a_elements / mk);
  if (c.batch < 1 || c.batch * mk != a_elements)
    return fail("A holds " + std::to_string(a_elements) + " elements, not a whole number of M x K batches");
  if (scalars.size() == 4 && scalars[3] != c.batch)
    return fail("the batch scalar " + std::to_string(scalars[3]) + " disagrees with A's " + std::to_string(c.batch));
  return c;
}

struct CublasSgemm::Impl {
  void* lib = nullptr;
  cublasHandle_t handle = nullptr;
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  // The C symbols (C++ overloads of these names exist, so the types are spelled out).
  using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                      const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                      const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                    int, const void*, const void*, cudaDataType, int, long long,
                                                    const void*, cudaDataType, int, long long, const void*, void*,
                                                    cudaDataType, int, long long, int, cublasComputeType_t,
                                                    cublasGemmAlgo_t);
  GemmExFn gemm_ex = nullptr;
  GemmStridedBatchedExFn gemm_strided_batched_ex = nullptr;
  ~Impl() {
    if (handle && destroy) destroy(handle);
    if (lib) dlclose(lib);
  }
};

CublasSgemm::CublasSgemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CublasSgemm::~CublasSgemm() = default;

std::unique_ptr<CublasSgemm> CublasSgemm::create(std::string* error) {
  auto impl = std::make_unique<Impl>();
  for (const char* name : {"libcublas.so.13", "libcublas.so", TUNER_CUDA_HOME "/lib64/libcublas.so.13"}) {
    impl->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (impl->lib) break;
  }
  if (!impl->lib) {
    *error = "cuBLAS (libcublas.so.13) not found";
    return nullptr;
  }
  impl->create = reinterpret_cast<decltype(impl->create)>(dlsym(impl->lib, "cublasCreate_v2"));
  impl->destroy = reinterpret_cast<decltype(impl->destroy)>(dlsym(impl->lib, "cublasDestroy_v2"));
  impl->sgemm = reinterpret_cast<decltype(impl->sgemm)>(dlsym(impl->lib, "cublasSgemm_v2"));
  impl->gemm_ex = reinterpret_cast<decltype(impl->gemm_ex)>(dlsym(impl->lib, "cublasGemmEx"));
  impl->gemm_strided_batched_ex =
      reinterpret_cast<decltype(impl->gemm_strided_batched_ex)>(dlsym(impl->lib, "cublasGemmStridedBatchedEx"));
  if (!impl->create || !impl->destroy || !impl->sgemm || !impl->gemm_ex || !impl->gemm_strided_batched_ex) {
    *error = "cuBLAS lacks cublasCreate_v2/cublasSgemm_v2/cublasGemmEx/cublasGemmStridedBatchedEx";
    return nullptr;
  }
  if (cublasStatus_t st = impl->create(&impl->handle); st != CUBLAS_STATUS_SUCCESS) {
    *error = "cublasCreate failed with status " + std::to_string(static_cast<int>(st));
    return nullptr;
  }
  return std::unique_ptr<CublasSgemm>(new CublasSgemm(std::move(impl)));
}

bool CublasSgemm::run(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k, std::string* error) {
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major view: C^T (n x m) = B^T (n x k) · A^T (k x m), leading dimensions n, k, n.
  cublasStatus_t st = impl_->sgemm(impl_->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                                   reinterpret_cast<const float*>(b), n, reinterpret_cast<const float*>(a), k,
                                   &beta, reinterpret_cast<float*>(c), n);
  if (st != CUBLAS_STATUS_SUCCESS) {
    *error = "cublasSgemm failed with status " + std::to_string(static_cast<int>(st));
    return false;
  }
  return true;
}

}  // namespace tuner

namespace tuner {

bool CublasSgemm::run_ex(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k, int batch, templates::DType in,
                         templates::DType out, std::string* error) {
  const float alpha = 1.0f, beta = 0.0f;
  const auto* pa = reinterpret_cast<const void*>(a);
  const auto* pb = reinterpret_cast<const void*>(b);
  auto* pc = reinterpret_cast<void*>(c);
  // Column-major view as in run(): C^T (n x m) = B^T (n x k) · A^T (k x m); batch strides k*n, m*k, m*n.
  cublasStatus_t st =
      batch == 1 ? impl_->gemm_ex(impl_->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, pb, cuda_type(in), n, pa,
                                  cuda_type(in), k, &beta, pc, cuda_type(out), n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                 : impl_->gemm_strided_batched_ex(impl_->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, pb,
                                                  cuda_type(in), n, static_cast<long long>(k) * n, pa, cuda_type(in), k,
                                                  static_cast<long long>(m) * k, &beta, pc, cuda_type(out), n,
                                                  static_cast<long long>(m) * n, batch, CUBLAS_COMPUTE_32F,
                                                  CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    *error = std::string(batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx") + " failed with status " +
             std::to_string(static_cast<int>(st));
    return false;
  }
  return true;
}

}  // namespace tuner
