// GPU tests of the runtime library (label "gpu"): configs tuned on cuda:0 by `tuner tune` are looked
// up and launched through tuner::gemm / tuner::softmax on device memory of the test's own, in the
// primary context the CUDA runtime would use, and the results are checked on the host. They skip
// with a reason on a machine without a CUDA driver or GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tuner/cuda_devices.h"
#include "tuner/cuda_driver.h"
#include "tuner/runtime.h"

namespace {

namespace fs = std::filesystem;

class GpuRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (tuner::cuda_devices(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    dir_ = fs::temp_directory_path() / ("tuner_runtime_gpu_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const auto& d = tuner::cuda_driver();
    CUdevice dev;
    ASSERT_EQ(d.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(d.cuDevicePrimaryCtxRetain(&ctx_, dev), CUDA_SUCCESS);
    ASSERT_EQ(d.cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (ctx_) {
      CUdevice dev;
      tuner::cuda_driver().cuDeviceGet(&dev, 0);
      tuner::cuda_driver().cuDevicePrimaryCtxRelease(dev);
    }
    fs::remove_all(dir_);
  }
  std::string db() const { return (dir_ / "gpu.db").string(); }
  int tune(const std::string& args) const {
    return std::system((std::string(TUNER_BIN) + " tune --device cuda:0 --db " + db() + " " + args + " >/dev/null").c_str());
  }
  CUdeviceptr upload(const std::vector<float>& host) const {
    CUdeviceptr p = 0;
    EXPECT_EQ(tuner::cuda_driver().cuMemAlloc(&p, host.size() * 4), CUDA_SUCCESS);
    EXPECT_EQ(tuner::cuda_driver().cuMemcpyHtoD(p, host.data(), host.size() * 4), CUDA_SUCCESS);
    return p;
  }
  std::vector<float> download(CUdeviceptr p, size_t n) const {
    std::vector<float> out(n);
    EXPECT_EQ(tuner::cuda_driver().cuMemcpyDtoH(out.data(), p, n * 4), CUDA_SUCCESS);
    return out;
  }

  fs::path dir_;
  CUcontext ctx_ = nullptr;
};

TEST_F(GpuRuntime, TunedGemmLaunchesOnTheCallersPointersAndIsRightOnANearbyShape) {
  ASSERT_EQ(tune("--op gemm --dtype f32 --shape M=512,N=512,K=512 --trials 16 --strategy random --seed 1"), 0);
  tuner::RuntimeOptions o;
  o.source = db();
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kOk) << tuner::last_error();
  const int64_t m = 300, n = 520, k = 257;  // not the tuned shape: the nearest rule picks 512^3's config
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 13) - 6) / 8;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 11) - 5) / 8;
  CUdeviceptr da = upload(a), db_ = upload(b), dc = upload(std::vector<float>(size_t(m * n), NAN));
  ASSERT_EQ(tuner::gemm(*rt, tuner::DType::kF32, m, n, k, reinterpret_cast<void*>(da), reinterpret_cast<void*>(db_),
                        reinterpret_cast<void*>(dc), nullptr),
            tuner::Status::kOk)
      << tuner::last_error();
  ASSERT_EQ(tuner::cuda_driver().cuCtxSynchronize(), CUDA_SUCCESS);
  auto c = download(dc, size_t(m * n));
  double worst = 0;
  for (int64_t i = 0; i < m; i += 7)
    for (int64_t j = 0; j < n; j += 5) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p) ref += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
      worst = std::fmax(worst, std::fabs(ref - c[size_t(i * n + j)]));
    }
  EXPECT_LT(worst, 1e-3);
  for (CUdeviceptr p : {da, db_, dc}) tuner::cuda_driver().cuMemFree(p);
}

TEST_F(GpuRuntime, SoftmaxRowsSumToOne) {
  ASSERT_EQ(tune("--op softmax --dtype f32 --shape rows=256,cols=1000 --trials 8 --strategy random --seed 1"), 0);
  tuner::RuntimeOptions o;
  o.source = db();
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kOk) << tuner::last_error();
  std::vector<float> x(256 * 1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) / 3;
  CUdeviceptr dx = upload(x), dy = upload(std::vector<float>(x.size(), NAN));
  ASSERT_EQ(tuner::softmax(*rt, tuner::DType::kF32, 256, 1000, reinterpret_cast<void*>(dx), reinterpret_cast<void*>(dy)),
            tuner::Status::kOk)
      << tuner::last_error();
  ASSERT_EQ(tuner::cuda_driver().cuCtxSynchronize(), CUDA_SUCCESS);
  auto y = download(dy, x.size());
  for (int r = 0; r < 256; r += 15) {
    double sum = 0;
    for (int j = 0; j < 1000; ++j) sum += y[size_t(r * 1000 + j)];
    EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << r;
  }
  for (CUdeviceptr p : {dx, dy}) tuner::cuda_driver().cuMemFree(p);
}

/// IEEE half from float (round to nearest even; the test's values are normal halves) and back.
uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = int((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) return uint16_t(sign);  // (zero: the test's values are 0 or normal)
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return uint16_t(h);
}
double from_half(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double v = exp == 0 ? std::ldexp(double(mant), -24) : std::ldexp(double(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

// A record replayed from an H100 recording (stored under "replay:NVIDIA H100 80GB HBM3") is what the runtime
// launches on a real H100: the recording's best config, right on another shape. On another GPU the records are
// another device's, and the lookup must say so instead of launching them.
TEST_F(GpuRuntime, AReplayedH100RecordLaunchesOnARealH100) {
  const std::string file =
      std::string(TUNER_SOURCE_DIR) + "/data/replay/softmax_f16_rows4096_cols32768_h100_2026-11-26.json";
  ASSERT_EQ(std::system((std::string(TUNER_BIN) + " tune --op softmax --dtype f16 --shape rows=4096,cols=32768 "
                         "--device replay:" + file + " --trials all --db " + db() + " >/dev/null")
                            .c_str()),
            0);
  tuner::RuntimeOptions o;
  o.source = db();
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kOk) << tuner::last_error();
  const int64_t rows = 512, cols = 32768;  // a nearby shape: the recording's 4096 rows are 256 MB
  tuner::KernelChoice choice;
  const tuner::Status found = rt->lookup({"softmax", "rows=512,cols=32768", tuner::DType::kF16, ""}, &choice);
  if (rt->device() != "NVIDIA H100 80GB HBM3") {
    EXPECT_EQ(found, tuner::Status::kNotFound) << "another GPU (" << rt->device() << ") took an H100's records";
    GTEST_SKIP() << "the GPU is " << rt->device() << ", not the recording's H100: only the refusal was checked";
  }
  ASSERT_EQ(found, tuner::Status::kOk) << tuner::last_error();
  EXPECT_EQ(choice.device, "replay:NVIDIA H100 80GB HBM3");
  EXPECT_EQ(choice.tuned_shape, "rows=4096,cols=32768");
  std::vector<uint16_t> x(size_t(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = to_half(float(int(i % 17) - 8) / 3);
  CUdeviceptr dx = 0, dy = 0;
  ASSERT_EQ(tuner::cuda_driver().cuMemAlloc(&dx, x.size() * 2), CUDA_SUCCESS);
  ASSERT_EQ(tuner::cuda_driver().cuMemAlloc(&dy, x.size() * 2), CUDA_SUCCESS);
  ASSERT_EQ(tuner::cuda_driver().cuMemcpyHtoD(dx, x.data(), x.size() * 2), CUDA_SUCCESS);
  ASSERT_EQ(tuner::softmax(*rt, tuner::DType::kF16, rows, cols, reinterpret_cast<void*>(dx), reinterpret_cast<void*>(dy)),
            tuner::Status::kOk)
      << tuner::last_error();
  ASSERT_EQ(tuner::cuda_driver().cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<uint16_t> y(x.size());
  ASSERT_EQ(tuner::cuda_driver().cuMemcpyDtoH(y.data(), dy, y.size() * 2), CUDA_SUCCESS);
  for (int64_t r = 0; r < rows; r += 37) {
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += from_half(y[size_t(r * cols + j)]);
    EXPECT_NEAR(sum, 1.0, 2e-2) << "row " << r;  // 32,768 halves, each rounded
  }
  for (CUdeviceptr p : {dx, dy}) tuner::cuda_driver().cuMemFree(p);
}

TEST_F(GpuRuntime, AUserKernelTunedOnTheGpuLaunchesThroughTheRuntime) {
  // The example with its factor in a header beside it: the runtime compiles the kernel with its own headers.
  const std::string ex = std::string(TUNER_SOURCE_DIR) + "/examples/user_kernel/";
  std::string text;
  {
    std::ifstream in(ex + "saxpy.cu");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = text.find("2.5f * x[j]");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 4, "SAXPY_A");
  const std::string kernel = (dir_ / "saxpy.cu").string();
  std::ofstream(kernel) << "#include \"saxpy_factor.h\"\n" << text;
  std::ofstream((dir_ / "saxpy_factor.h").string()) << "#define SAXPY_A 2.5f\n";
  ASSERT_EQ(tune("--kernel " + kernel + " --spec " + ex + "saxpy.json --trials 8 --strategy random --seed 1"), 0);
  tuner::RuntimeOptions o;
  o.source = db();
  o.user_kernels = {{kernel, ex + "saxpy.json"}};
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kOk) << tuner::last_error();
  const int n = 100003;  // not the tuned size (the spec's 1048576): the nearest rule, and a ragged last block
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[size_t(i)] = float(i % 29) / 4, y[size_t(i)] = float(i % 7) - 3;
  CUdeviceptr dx = upload(x), dy = upload(y), dout = upload(std::vector<float>(size_t(n), NAN));
  const tuner::Problem p{"saxpy_user", "N=" + std::to_string(n), tuner::DType::kF32, ""};
  ASSERT_EQ(rt->launch(p, {reinterpret_cast<void*>(dx), reinterpret_cast<void*>(dy), reinterpret_cast<void*>(dout)},
                       nullptr),
            tuner::Status::kOk)
      << tuner::last_error();
  ASSERT_EQ(tuner::cuda_driver().cuCtxSynchronize(), CUDA_SUCCESS);
  const auto out = download(dout, size_t(n));
  for (int i = 0; i < n; ++i)
    ASSERT_FLOAT_EQ(out[size_t(i)], 2.5f * x[size_t(i)] + y[size_t(i)]) << "element " << i;
  for (CUdeviceptr q : {dx, dy, dout}) tuner::cuda_driver().cuMemFree(q);
}

}  // namespace
