// cuBLAS as the vendor baseline, loaded with dlopen (libcublas.so.13) so the
// tuner starts on machines without it: SGEMM ("cublas_sgemm") for fp32 GEMMs,
// GemmEx / GemmStridedBatchedEx ("cublas_gemm_ex") for f16/bf16 GEMMs (fp32
// accumulation, C in its buffer's type) and for batched GEMMs of any dtype.
// Row-major C = A·B is computed as the column-major C^T = B^T·A^T; FP32 math
// (no TF32), like the templates. Used inside the measurement worker, on the
// worker's current CUDA context.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "templates/workload.h"

namespace tuner {

/// The vendor baseline of a workload as MeasureRequest::vendor names it: "cublas_sgemm" (gemm f32),
/// "cublas_gemm_ex" (gemm f16/bf16, batched_gemm any dtype), "cudnn_conv" (conv2d, tuner/cudnn_conv.h),
/// "" when there is none.
std::string vendor_baseline_for(const templates::Workload& w);

/// The GEMM a cuBLAS baseline runs for a template's instance, read the way the worker reads it: M, N,
/// K from the first three scalars (a fourth, gemm_tc_wgmma's, is the batch count and must agree), the
/// batch count from A's elements / (M·K); buffers A, B, C first (a trailing workspace is ignored).
struct CublasGemmCall {
  int m = 0, n = 0, k = 0, batch = 1;
};
/// nullopt with *why when the instance's buffers and scalars do not fit the call.
std::optional<CublasGemmCall> cublas_gemm_call(size_t buffers, int64_t a_elements, const std::vector<int32_t>& scalars,
                                               std::string* why);

class CublasSgemm {
 public:
  /// nullptr with *error set when cuBLAS cannot be loaded or initialised.
  static std::unique_ptr<CublasSgemm> create(std::string* error);
  ~CublasSgemm();
  CublasSgemm(const CublasSgemm&) = delete;
  CublasSgemm& operator=(const CublasSgemm&) = delete;

  /// Enqueues C = A·B (row-major, device pointers) on the default stream; false with *error on failure.
  bool run(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k, std::string* error);
  /// Enqueues batch x (C = A·B) on packed strided row-major batches with cublasGemmEx (batch 1) or
  /// cublasGemmStridedBatchedEx; A and B of type `in`, C of type `out`, fp32 compute.
  bool run_ex(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k, int batch, templates::DType in,
              templates::DType out, std::string* error);

 private:
  struct Impl;
  explicit CublasSgemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner
