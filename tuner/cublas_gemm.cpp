#include "tuner/cublas_gemm.h"

#include <dlfcn.h>

#include <cublas_v2.h>

namespace tuner {

struct CublasSgemm::Impl {
  void* lib = nullptr;
  cublasHandle_t handle = nullptr;
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
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
  if (!impl->create || !impl->destroy || !impl->sgemm) {
    *error = "cuBLAS lacks cublasCreate_v2/cublasSgemm_v2";
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
