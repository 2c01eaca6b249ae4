// The vendor baseline chosen for each workload (tuner/cublas_gemm.h); cuDNN's host side is in
// cudnn_conv_test.cpp. Running cuBLAS or cuDNN needs a GPU and is covered by
// tests/gpu/template_gpu_test.cpp.
#include "tuner/cublas_gemm.h"

#include <gtest/gtest.h>

#include "templates/registry.h"

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

// Every GEMM template's instances fit the cuBLAS call the worker makes for their baseline: M, N, K and
// the batch read back from the instance's buffers and scalars are the workload's. gemm_tc_wgmma's
// fourth scalar (the batch) once made the worker refuse it, and the bf16 baseline printed 0 on a GPU.
TEST(CublasVendor, EveryGemmTemplatesInstanceFitsTheBaselineCall) {
  templates::DeviceLimits h100;
  h100.arch = "sm_90";
  h100.max_shared_per_block_bytes = 227 * 1024;
  int checked = 0;
  for (const auto* t : templates::all_templates()) {
    if (t->op() != "gemm" && t->op() != "batched_gemm") continue;
    if (t->unsupported_on(h100)) continue;
    for (templates::DType d : t->dtypes()) {
      const bool batched = t->op() == "batched_gemm";
      const auto w = templates::parse_workload(t->op(), batched ? "B=3,M=200,N=136,K=304" : "M=200,N=136,K=304",
                                               templates::to_string(d));
      if (t->unsupported(w)) continue;
      const auto space = t->reduced_space(w, h100);
      ASSERT_GT(space.size(), 0u) << t->name();
      const auto all = space.enumerate();
      for (const search::Config& c : {all.front(), all.back()}) {
        const auto k = t->instantiate(space, c, w);
        std::string why;
        const auto call = cublas_gemm_call(k.buffers.size(), k.buffers.at(0).elements, k.scalar_args, &why);
        ASSERT_TRUE(call.has_value()) << t->name() << " " << space.to_json_string(c) << ": " << why;
        EXPECT_EQ(call->m, 200) << t->name();
        EXPECT_EQ(call->n, 136) << t->name();
        EXPECT_EQ(call->k, 304) << t->name();
        EXPECT_EQ(call->batch, batched ? 3 : 1) << t->name();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 12) << "gemm and batched_gemm: simt, mma and wgmma templates in their dtypes";
  // What the call refuses, with a reason.
  std::string why;
  EXPECT_FALSE(cublas_gemm_call(2, 64, {8, 8, 8}, &why));
  EXPECT_NE(why.find("2 buffers"), std::string::npos) << why;
  EXPECT_FALSE(cublas_gemm_call(3, 64 * 3, {8, 8, 8, 2}, &why)) << "3 batches in A, 2 in the scalar";
  EXPECT_NE(why.find("disagrees"), std::string::npos) << why;
  EXPECT_FALSE(cublas_gemm_call(3, 65, {8, 8, 8}, &why)) << "not whole batches";
  EXPECT_TRUE(cublas_gemm_call(4, 64 * 3, {8, 8, 8, 3}, &why));
}

}  // namespace
}  // namespace tuner
