// cuDNN's conv baseline on the host (tuner/cudnn_conv.h, tuner/cudnn_conv_graph.h): every entry point
// tuner resolves is in libcudnn.so.9, a failure to initialise is one line, the engine filter keeps
// TF32 off f32, a graph plan's output agrees with the legacy one within a rounding step and not
// beyond, and the graph API's operation (which needs no handle) accepts the workload's layouts.
// Running cuDNN needs a GPU: tests/gpu/template_gpu_test.cpp (GpuVendor).
#include "tuner/cudnn_conv.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "tuner/host_dtype.h"

#if __has_include(<cudnn.h>)
#include "tuner/cudnn_conv_graph.h"
#define TUNER_TEST_HAVE_CUDNN 1
#endif

namespace tuner {
namespace {

TEST(CudnnVendor, EveryEntryPointResolvesAndAFailureIsOneLine) {
  std::string error;
  auto conv = CudnnConv::create(&error);
  if (conv) GTEST_SKIP() << "cuDNN initialised (a GPU is present): covered by the gpu tests";
  if (error.find("not found") != std::string::npos) GTEST_SKIP() << error;
  // The library is here: every symbol resolved, and only creating a handle (no GPU) failed.
  EXPECT_EQ(error.find("lacks"), std::string::npos) << error;
  EXPECT_NE(error.find("cudnnCreate"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(CudnnVendor, LibcudnnHasEveryLegacyAndGraphEntryPoint) {
  std::string error;
  const auto missing = cudnn_missing_entry_points(&error);
  if (!error.empty()) GTEST_SKIP() << error;
  std::string names;
  for (const auto& m : missing) names += m + " ";
  EXPECT_TRUE(missing.empty()) << "libcudnn lacks " << names;
}

TEST(CudnnVendor, OutputsAgreeWithinARoundingStepOfTheDtypeAndNotAtFivePercent) {
  using templates::DType;
  const std::vector<float> want = {1.0f, -0.5f, 0.25f, 0.0f};
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    // One step of the dtype at the largest value: 2^-23 (f32), 2^-10 (f16), 2^-7 (bf16) of it.
    const float ulp = d == DType::kF32 ? std::ldexp(1.0f, -23) : d == DType::kF16 ? std::ldexp(1.0f, -10) : std::ldexp(1.0f, -7);
    const std::string w = encode_elements(want, d);
    const std::string one_step = encode_elements({1.0f + ulp, -0.5f, 0.25f, 0.0f}, d);
    const std::string five_pct = encode_elements({1.0f, -0.5f, 0.25f, 0.05f}, d);
    const double step = relative_difference(one_step.data(), w.data(), want.size(), d);
    EXPECT_NEAR(step, ulp, 1e-9) << templates::to_string(d);  // |(1 + ulp) - 1| / max |want| (1)
    EXPECT_LE(step, cudnn_agreement_tolerance(d)) << templates::to_string(d);
    EXPECT_GT(relative_difference(five_pct.data(), w.data(), want.size(), d), cudnn_agreement_tolerance(d))
        << templates::to_string(d);
    EXPECT_EQ(relative_difference(w.data(), w.data(), want.size(), d), 0.0) << templates::to_string(d);
  }
  // A NaN on either side never agrees; an all-zero reference compares absolute differences.
  const std::string nan = encode_elements({1.0f, std::numeric_limits<float>::quiet_NaN()}, DType::kF16);
  const std::string ones = encode_elements({1.0f, 1.0f}, DType::kF16);
  EXPECT_TRUE(std::isinf(relative_difference(nan.data(), ones.data(), 2, DType::kF16)));
  EXPECT_TRUE(std::isinf(relative_difference(ones.data(), nan.data(), 2, DType::kF16)));
  const std::string zeros = encode_elements({0.0f, 0.0f}, DType::kF32);
  const std::string small = encode_elements({0.0f, 0.5f}, DType::kF32);
  EXPECT_DOUBLE_EQ(relative_difference(small.data(), zeros.data(), 2, DType::kF32), 0.5);
}

TEST(CudnnVendor, RelativeDifferenceSpansChunksOfTheOutput) {
  // 200000 elements: the one wrong element sits past the first 65536-element chunk the comparison decodes.
  std::vector<float> want(200000, 0.5f), got = want;
  got[150001] = 0.75f;
  const std::string w = encode_elements(want, templates::DType::kF32), g = encode_elements(got, templates::DType::kF32);
  EXPECT_DOUBLE_EQ(relative_difference(g.data(), w.data(), want.size(), templates::DType::kF32), 0.5);  // 0.25 / 0.5
}

#ifdef TUNER_TEST_HAVE_CUDNN

TEST(CudnnVendor, F32RefusesTensorCoreEnginesAndNoDtypeTakesDownConvertedInputs) {
  using templates::DType;
  const int tc = CUDNN_NUMERICAL_NOTE_TENSOR_CORE, down = CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
  const int winograd = CUDNN_NUMERICAL_NOTE_WINOGRAD, nondet = CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
  // f32: tensor cores mean TF32, refused wherever the note stands in the list.
  EXPECT_NE(cudnn_engine_refusal(DType::kF32, {tc}), "");
  EXPECT_NE(cudnn_engine_refusal(DType::kF32, {winograd, nondet, tc}), "");
  EXPECT_EQ(cudnn_engine_refusal(DType::kF32, {}), "");
  EXPECT_EQ(cudnn_engine_refusal(DType::kF32, {winograd, nondet}), "");
  // f16/bf16: tensor cores are the point; down-converted inputs are refused for every dtype.
  for (DType d : {DType::kF16, DType::kBF16}) {
    EXPECT_EQ(cudnn_engine_refusal(d, {tc}), "") << templates::to_string(d);
    EXPECT_EQ(cudnn_engine_refusal(d, {tc, nondet}), "") << templates::to_string(d);
    EXPECT_NE(cudnn_engine_refusal(d, {tc, down}), "") << templates::to_string(d);
  }
  EXPECT_NE(cudnn_engine_refusal(DType::kF32, {down}), "");
}

TEST(CudnnVendor, GraphOperationTakesNhwcLayoutsAndRefusesAWrongOutputSize) {
  CudnnApi api;
  std::string error;
  if (!api.load(&error)) GTEST_SKIP() << error;
  ASSERT_TRUE(api.has_graph()) << api.graph_missing;
  using templates::DType;
  // The four ResNet-50 shapes of docs/gpu-runs/2026-11-25-h100 (p, q = (h + 2 pad - r) / stride + 1).
  const ConvShape shapes[] = {
      {32, 224, 224, 3, 64, 7, 7, 2, 3, 1, 112, 112, DType::kF16},  // stem: (224 + 6 - 7) / 2 + 1
      {32, 56, 56, 64, 64, 3, 3, 1, 1, 1, 56, 56, DType::kF16},     // (56 + 2 - 3) / 1 + 1
      {32, 56, 56, 128, 128, 3, 3, 2, 1, 1, 28, 28, DType::kF16},   // (56 + 2 - 3) / 2 + 1
      {32, 28, 28, 512, 128, 1, 1, 1, 0, 1, 28, 28, DType::kF32},   // 1x1
      {2, 15, 13, 16, 24, 3, 3, 2, 1, 2, 7, 6, DType::kBF16},       // dilated: (15 + 2 - 5) / 2 + 1, (13 + 2 - 5) / 2 + 1
  };
  for (const ConvShape& s : shapes) {
    std::vector<BackendDescriptor> d;
    EXPECT_TRUE(graph_conv_operation(api, s, 16, &d, &error)) << s.h << "x" << s.w << " C=" << s.c << ": " << error;
    EXPECT_EQ(d.size(), 5u);
    // One row more in Y than the convolution makes: cuDNN's own check must refuse the operation.
    ConvShape wrong = s;
    wrong.p += 1;
    std::vector<BackendDescriptor> w;
    error.clear();
    EXPECT_FALSE(graph_conv_operation(api, wrong, 16, &w, &error)) << s.h << "x" << s.w << " C=" << s.c;
    EXPECT_NE(error.find("cudnnBackendFinalize(convolution forward) failed"), std::string::npos) << error;
  }
}

TEST(CudnnVendor, AlignmentIsTheLargestPowerOfTwoUpTo16DividingEveryPointer) {
  EXPECT_EQ(conv_alignment({0x1000, 0x2000, 0x3000}), 16);  // all 4 KiB-aligned: capped at 16
  EXPECT_EQ(conv_alignment({0x1000, 0x2008, 0x3000}), 8);   // 0x2008 = 8 * 1025
  EXPECT_EQ(conv_alignment({0x1002, 0x2000, 0x3004}), 2);   // 0x1002 = 2 * 2049
  EXPECT_EQ(conv_alignment({0x1001, 0x2000, 0x3000}), 1);
}

#endif  // TUNER_TEST_HAVE_CUDNN

}  // namespace
}  // namespace tuner
