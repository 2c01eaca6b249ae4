// gemm_example: multiply two matrices with the best GEMM tuner found for this GPU.
//
//   gemm_example <tuning.db | best.json> [M N K] [--dtype f32|f16] [--device-name NAME]
//
// Looks the config up (exact shape, else the nearest tuned one) and prints it. With a GPU it then
// allocates A, B and C with the CUDA runtime, launches tuner::gemm on a stream, checks a sample of
// C against the host, and prints the time. Without a GPU, give --device-name (a recorded device,
// e.g. "sim:h100-sxm" or "NVIDIA H100 80GB HBM3") to see the lookup; the launch is then skipped.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tuner/runtime.h>

namespace {

int fail(const char* what, tuner::Status s) {
  std::fprintf(stderr, "gemm_example: %s: %s: %s\n", what, tuner::status_name(s), tuner::last_error().c_str());
  return 1;
}

/// Runs C = A·B on the GPU and checks 64 entries of C; returns the process exit code.
int launch_and_check(tuner::Runtime& rt, tuner::DType dtype, int64_t m, int64_t n, int64_t k) {
  const size_t elem = dtype == tuner::DType::kF32 ? 4 : 2;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 4;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i % 5) - 2) / 4;
  auto to_device = [&](const std::vector<float>& host) {
    void* p = nullptr;
    cudaMalloc(&p, host.size() * elem);
    if (dtype == tuner::DType::kF32) {
      cudaMemcpy(p, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    } else {
      std::vector<__half> h(host.size());
      for (size_t i = 0; i < host.size(); ++i) h[i] = __float2half(host[i]);
      cudaMemcpy(p, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
    }
    return p;
  };
  void* da = to_device(a);
  void* db = to_device(b);
  void* dc = nullptr;
  cudaMalloc(&dc, static_cast<size_t>(m * n) * elem);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  if (auto s = tuner::gemm(rt, dtype, m, n, k, da, db, dc, stream); s != tuner::Status::kOk) return fail("gemm", s);
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaEventRecord(t0, stream);
  for (int i = 0; i < 10; ++i) tuner::gemm(rt, dtype, m, n, k, da, db, dc, stream);
  cudaEventRecord(t1, stream);
  if (cudaStreamSynchronize(stream) != cudaSuccess) {
    std::fprintf(stderr, "gemm_example: the kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, t0, t1);
  std::vector<float> c(static_cast<size_t>(m * n));
  if (dtype == tuner::DType::kF32) {
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  } else {
    std::vector<__half> h(c.size());
    cudaMemcpy(h.data(), dc, h.size() * 2, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < h.size(); ++i) c[i] = __half2float(h[i]);
  }
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const int64_t i = (s * 7919) % m, j = (s * 104729) % n;
    double ref = 0;
    for (int64_t p = 0; p < k; ++p) ref += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
    worst = std::fmax(worst, std::fabs(ref - c[size_t(i * n + j)]) / (1 + std::fabs(ref)));
  }
  const double tflops = 2.0 * m * n * k / (ms / 10 * 1e-3) / 1e12;
  std::printf("launched: %.4f ms per GEMM (%.1f TFLOP/s), worst relative error of 64 sampled entries %.2e\n",
              ms / 10, tflops, worst);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return worst < (dtype == tuner::DType::kF32 ? 1e-3 : 2e-2) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string dtype_name = "f32", device_name;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--dtype" && i + 1 < argc) dtype_name = argv[++i];
    else if (arg == "--device-name" && i + 1 < argc) device_name = argv[++i];
    else pos.push_back(arg);
  }
  if (pos.size() != 1 && pos.size() != 4) {
    std::fprintf(stderr, "usage: gemm_example <tuning.db|best.json> [M N K] [--dtype f32|f16] [--device-name NAME]\n");
    return 2;
  }
  if (dtype_name != "f32" && dtype_name != "f16") {
    std::fprintf(stderr, "gemm_example: --dtype '%s' is not allowed; allowed: f32, f16\n", dtype_name.c_str());
    return 2;
  }
  const tuner::DType dtype = dtype_name == "f32" ? tuner::DType::kF32 : tuner::DType::kF16;
  const int64_t m = pos.size() == 4 ? std::atoll(pos[1].c_str()) : 1024;
  const int64_t n = pos.size() == 4 ? std::atoll(pos[2].c_str()) : 1024;
  const int64_t k = pos.size() == 4 ? std::atoll(pos[3].c_str()) : 1024;

  tuner::RuntimeOptions options;
  options.source = pos[0];
  options.device_name = device_name;
  std::unique_ptr<tuner::Runtime> rt;
  if (auto s = tuner::Runtime::open(options, &rt); s != tuner::Status::kOk) return fail("open", s);

  const std::string shape = "M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
  tuner::KernelChoice c;
  if (auto s = rt->lookup({"gemm", shape, dtype, ""}, &c); s != tuner::Status::kOk) return fail("lookup", s);
  std::printf("device:   %s (%lld records)\n", rt->device().c_str(), static_cast<long long>(rt->records()));
  std::printf("workload: %s\n", c.workload.c_str());
  std::printf("chosen:   %s %s, tuned at %s (%s), %.4f ms there%s\n", c.template_name.c_str(), c.config.c_str(),
              c.tuned_shape.c_str(), c.exact ? "exact" : "nearest", c.tuned_time_ms, c.estimate ? " (estimate)" : "");
  std::printf("launch:   %s grid %u,%u,%u block %u,%u,%u, %d B dynamic shared memory\n", c.kernel_name.c_str(),
              c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.dynamic_shared_bytes);

  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0 || !device_name.empty()) {
    std::printf("launch skipped: %s\n", device_name.empty() ? "no GPU" : "configs were looked up for a named device");
    return 0;
  }
  return launch_and_check(*rt, dtype, m, n, k);
}
