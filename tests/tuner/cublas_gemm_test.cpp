// The vendor baseline chosen for each workload (tuner/cublas_gemm.h); cuDNN's host side is in
// cudnn_conv_test.cpp. Running cuBLAS or cuDNN needs a GPU and is covered by
// tests/gpu/template_gpu_test.cpp.
#include "tuner/cublas_gemm.h"

#include <gtest/gtest.h>

namespace tuner {
namespace {

TEST(CublasVendor, SgemmForF32GemmGemmExForHalfAndBatchedNoneElsewhere) {
  using templates::parse_workload;
  EXPECT_EQ(vendor_baseline_for(parse_workload("gemm", "M=8,N=8,K=8", "f32")), "cublas_sgemm");
  EXPECT_EQ(vendor_baseline_for(parse_workload("gemm", "M=8,N=8,K=8", "f16")), "cublas_gemm_ex");
  EXPECT_EQ(vendor_baseline_for(parse_workload("gemm", "M=8,N=8,K=8", "bf16")), "cublas_gemm_ex");
  EXPECT_EQ(vendor_baseline_for(parse_workload("batched_gemm", "B=2,M=8,N=8,K=8", "f32")), "cublas_gemm_ex");
  EXPECT_EQ(vendor_baseline_for(parse_workload("batched_gemm", "B=2,M=8,N=8,K=8", "bf16")), "cublas_gemm_ex");
  EXPECT_EQ(vendor_baseline_for(parse_workload("softmax", "rows=8,cols=8", "f16")), "");
  EXPECT_EQ(vendor_baseline_for(parse_workload("conv2d", "N=1,H=8,W=8,C=8,K=8,R=3,S=3,stride=1,pad=1", "f16")), "cudnn_conv");
}

}  // namespace
}  // namespace tuner
