// cuDNN's conv baseline on the host (tuner/cudnn_conv.h, tuner/cudnn_conv_graph.h): every entry point
// tuner resolves is in libcudnn.so.9, a failure to initialise is one line, the engine filter keeps
// TF32 off f32, a graph plan's output agrees with the legacy one within a rounding step and not
// beyond, the graph API's operation (which needs no handle) accepts the workload's layouts, and (cuDNN
// 9.8+, on an H100's device properties, no GPU) heuristics and plan finalizing give one plan per tag.
// Running cuDNN needs a GPU: tests/gpu/template_gpu_test.cpp (GpuVendor).
#include "tuner/cudnn_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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
  // A reduction narrower than the fp32 the graph asks for: refused for every dtype.
  const int reduced = CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16})
    EXPECT_NE(cudnn_engine_refusal(d, {tc, reduced}), "") << templates::to_string(d);
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
    // cuDNN's own reason follows the status, on the same line.
    EXPECT_NE(error.find(") failed: CUDNN_STATUS_BAD_PARAM ("), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

// An H100 SXM as a cuDNN device-property descriptor (the keys cuDNN 9.19 asks for; the values are the
// H100's CUDA device attributes): heuristics run and plans finalize on it without a GPU (cuDNN 9.8+).
constexpr const char* kH100Properties =
    R"({"maxGridSize": [2147483647, 65535, 65535], "maxBlockSize": [1024, 1024, 64], "regsPerBlock": 65536,)"
    R"("multiProcessorCount": 132, "warpSize": 32, "maxSharedMemoryPerBlock": 49152,)"
    R"("maxSharedMemoryPerBlockOptin": 232448, "reservedSharedMemoryPerBlock": 1024, "maxRegistersPerSM": 65536,)"
    R"("maxCtasPerSM": 32, "maxThreadsPerBlock": 1024, "maxThreadsPerSM": 2048, "pciDeviceId": 8960,)"
    R"("isTccDriver": 0, "supportCoopLaunch": 1, "totalGlobalMem": 85017362432, "smClockRateKHz": 1980000,)"
    R"("memClockRateKHz": 2619000, "l2CacheSize": 52428800, "cudaDeviceId": 0, "deviceVer": 900,)"
    R"("driverVer": 12080, "deviceName": "NVIDIA H100 80GB HBM3"})";

/// The H100's device properties, finalized; false with *error where this cuDNN cannot make them.
bool h100_properties(const CudnnApi& api, BackendDescriptor* out, std::string* error) {
  cudnnBackendDescriptor_t d = nullptr;
  if (!api.ok(api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &d), "create device properties",
              error))
    return false;
  *out = BackendDescriptor(&api, d);
  const std::string json = kH100Properties;
  return api.ok(api.cudnnBackendSetAttribute(d, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                             static_cast<int64_t>(json.size() + 1), json.c_str()),
                "set device properties", error) &&
         api.ok(api.cudnnBackendFinalize(d), "finalize device properties", error);
}

TEST(CudnnVendor, GraphPlansForAnH100FinalizeWithoutAGpuOnePerTagWithinTheEngineFilter) {
  CudnnApi api;
  std::string error;
  if (!api.load(&error)) GTEST_SKIP() << error;
  ASSERT_TRUE(api.has_graph()) << api.graph_missing;
  BackendDescriptor props;
  if (!h100_properties(api, &props, &error)) GTEST_SKIP() << "no deviceless planning in this cuDNN: " << error;
  using templates::DType;
  const ConvShape shapes[] = {
      {32, 224, 224, 3, 64, 7, 7, 2, 3, 1, 112, 112, DType::kF16},
      {32, 56, 56, 64, 64, 3, 3, 1, 1, 1, 56, 56, DType::kF16},
      {32, 56, 56, 128, 128, 3, 3, 2, 1, 1, 28, 28, DType::kF16},
      {32, 28, 28, 512, 128, 1, 1, 1, 0, 1, 28, 28, DType::kF32},
      // GpuVendor's small cases (dilated; C=6 rows of 24 bytes), and bf16.
      {2, 15, 13, 16, 24, 3, 3, 2, 1, 2, 7, 6, DType::kF16},
      {2, 15, 13, 6, 20, 3, 3, 1, 1, 1, 15, 13, DType::kF32},
      {2, 15, 13, 16, 24, 3, 3, 2, 1, 2, 7, 6, DType::kBF16},
  };
  for (const ConvShape& s : shapes) {
    const std::string what = std::to_string(s.h) + "x" + std::to_string(s.w) + " C=" + std::to_string(s.c) + " " +
                             templates::to_string(s.dtype);
    std::string note;
    error.clear();
    // No time budget in the way: the list is the heuristics' alone.
    const auto plans = graph_conv_plans(api, GraphTarget{nullptr, props.get()}, s, 16, 16, 1e9, &note, &error);
    ASSERT_FALSE(plans.empty()) << what << ": " << error;
    EXPECT_LE(plans.size(), 16u) << what;
    EXPECT_EQ(note.find("not finalized"), std::string::npos) << what << ": " << note;
    std::vector<std::string> tags;
    std::vector<int64_t> engines;
    for (const auto& p : plans) {
      EXPECT_EQ(p->tag().rfind("eng" + std::to_string(p->engine()), 0), 0u) << what << ": " << p->tag();
      EXPECT_EQ(std::count(tags.begin(), tags.end(), p->tag()), 0) << what << ": " << p->tag() << " twice";
      tags.push_back(p->tag());
      if (std::find(engines.begin(), engines.end(), p->engine()) == engines.end()) engines.push_back(p->engine());
      // Every plan passed the filter: no TF32 on f32, nothing down-converted or reduced narrower.
      EXPECT_EQ(cudnn_engine_refusal(s.dtype, p->numerical_notes()), "") << what << ": " << p->tag();
    }
    std::printf("  %s: %zu plans of %zu engines (%s)\n", what.c_str(), plans.size(), engines.size(), note.c_str());
    // Heuristics propose several knob variants of the best engines; each is a plan of its own.
    if (s.dtype == DType::kF16 && s.stride == 1) {
      EXPECT_GT(plans.size(), engines.size()) << what << ": " << note;
    }
  }
  // max_plans bounds the list, taken in the heuristics' order.
  std::string note;
  const auto all = graph_conv_plans(api, GraphTarget{nullptr, props.get()}, shapes[1], 16, 16, 1e9, &note, &error);
  const auto two = graph_conv_plans(api, GraphTarget{nullptr, props.get()}, shapes[1], 16, 2, 1e9, &note, &error);
  ASSERT_EQ(two.size(), 2u);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(two[0]->tag(), all[0]->tag());
  EXPECT_EQ(two[1]->tag(), all[1]->tag());
  // Neither a handle nor device properties: no plan, and a reason.
  error.clear();
  EXPECT_TRUE(graph_conv_plans(api, GraphTarget{}, shapes[1], 16, 16, 1e9, &note, &error).empty());
  EXPECT_FALSE(error.empty());
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
