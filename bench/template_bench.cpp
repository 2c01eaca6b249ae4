// Benchmark of the kernel-template library (not a test): tunes LLM-like GEMMs
// (f16 squares, decode shapes, a short K), an fp32 GEMM, batched GEMMs and
// softmax/layernorm rows with a fixed trial budget each, and prints, per
// workload, the best time, TFLOP/s, % of the vendor library (cuBLAS for GEMMs,
// cuDNN for conv2d; softmax and layernorm: a device-to-device copy of the same
// bytes, the bandwidth a memory-bound op can approach; on a GPU: measured by the
// same protocol on the same buffers) and % of roofline (GEMMs: attained
// FLOP/s over min(peak, intensity x DRAM bandwidth), the peak of the units the template uses:
// tensor cores for gemm_tc_* and conv2d_igemm_tc, fp32 lanes otherwise; memory-bound ops: % of
// DRAM bandwidth on their compulsory bytes). Without a GPU it runs against a
// sim device and labels every figure an estimate. Rows naming a template (the
// sm_90 gemm_tc_wgmma) are skipped on devices that template cannot run on.
// Writes results/template_bench.json; each row's baseline_detail says what the vendor call ran (cuDNN:
// the graph engine or legacy algorithm that won, and how; empty for the others).
//
//   build/bin/template_bench [--device cuda:0|sim:h100-sxm] [--trials 32] [--strategy xgb] [--out FILE]
//                            [--filter TEXT]   (only rows whose "op shape dtype template" contains TEXT)
// --trials 0 tunes nothing: it times each distinct workload's vendor baseline alone (a GPU only), so
// results of `tuner tune` runs can be set beside cuBLAS/cuDNN/the device copy in one short call.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "tuner/compile_cache.h"
#include "tuner/cublas_gemm.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/tuning_session.h"
#include "tuner/worker.h"
#include "tuner/instance_compile.h"

namespace fs = std::filesystem;
using namespace tuner;

namespace {

struct Args {
  std::string device;  ///< Empty: cuda:0 if present, else sim:h100-sxm.
  int trials = 32;
  std::string strategy = "random";
  std::string out = "results/template_bench.json";
  std::string filter;  ///< Only rows whose "op shape dtype template" contains this.
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--device") a.device = argv[i + 1];
    else if (k == "--trials") a.trials = std::stoi(argv[i + 1]);
    else if (k == "--strategy") a.strategy = argv[i + 1];
    else if (k == "--out") a.out = argv[i + 1];
    else if (k == "--filter") a.filter = argv[i + 1];
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); std::exit(2); }
  }
  if (a.device.empty()) a.device = default_device();
  return a;
}

struct BenchWorkload {
  const char* op;
  const char* shape;
  const char* dtype;
  const char* group;
  const char* template_name = "";  ///< Empty: the op's default template; rows a device cannot run are skipped.
};

const std::vector<BenchWorkload>& workloads() {
  static const std::vector<BenchWorkload> w = {
      {"gemm", "M=4096,N=4096,K=4096", "f16", "square"},
      {"gemm", "M=8192,N=8192,K=8192", "f16", "square"},
      {"gemm", "M=4096,N=4096,K=4096", "f16", "square", "gemm_tc_wgmma"},
      {"gemm", "M=8192,N=8192,K=8192", "f16", "square", "gemm_tc_wgmma"},
      {"gemm", "M=4096,N=4096,K=4096", "bf16", "square", "gemm_tc_wgmma"},
      {"gemm", "M=8192,N=8192,K=8192", "bf16", "square", "gemm_tc_wgmma"},
      {"gemm", "M=4096,N=4096,K=4096", "f32", "square"},
      {"gemm", "M=16,N=4096,K=4096", "f16", "decode"},
      {"gemm", "M=32,N=4096,K=4096", "f16", "decode"},
      {"gemm", "M=64,N=4096,K=4096", "f16", "decode"},
      {"gemm", "M=128,N=4096,K=4096", "f16", "decode"},
      // Decode on Hopper: split-K and persistent grids of gemm_tc_wgmma (issue 16's geometric mean row set).
      {"gemm", "M=16,N=4096,K=4096", "f16", "decode", "gemm_tc_wgmma"},
      {"gemm", "M=32,N=4096,K=4096", "f16", "decode", "gemm_tc_wgmma"},
      {"gemm", "M=64,N=4096,K=4096", "f16", "decode", "gemm_tc_wgmma"},
      {"gemm", "M=128,N=4096,K=4096", "f16", "decode", "gemm_tc_wgmma"},
      {"gemm", "M=4096,N=4096,K=512", "f16", "short K"},
      {"gemm", "M=4096,N=4096,K=512", "f16", "short K", "gemm_tc_wgmma"},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", "attention"},
      {"batched_gemm", "B=32,M=512,N=512,K=128", "f16", "attention", "batched_gemm_tc_wgmma"},
      // ResNet-50 (batch 32): the stem, a 3x3 of stage 2, a strided 3x3 and a 1x1 of stage 3.
      {"conv2d", "N=32,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3", "f16", "resnet50"},
      {"conv2d", "N=32,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1", "f16", "resnet50"},
      {"conv2d", "N=32,H=56,W=56,C=128,K=128,R=3,S=3,stride=2,pad=1", "f16", "resnet50"},
      {"conv2d", "N=32,H=28,W=28,C=512,K=128,R=1,S=1,stride=1,pad=0", "f32", "resnet50"},
      {"softmax", "rows=4096,cols=4096", "f16", "memory"},
      {"softmax", "rows=4096,cols=32768", "f16", "memory"},
      {"layernorm", "rows=4096,cols=4096", "f16", "memory"},
      {"layernorm", "rows=4096,cols=32768", "f16", "memory"},
  };
  return w;
}

bool memory_bound(const std::string& op) { return op == "softmax" || op == "layernorm"; }

double peak_tflops(const costmodel::GpuSpec& g, bool tensor_cores) {
  return tensor_cores ? g.peak_fp16_tflops : g.peak_fp32_tflops;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const DeviceTarget device = resolve_device(args.device);
  const fs::path tmp = fs::temp_directory_path() / ("tuner_template_bench_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string label = device.simulated ? " (ESTIMATES of the analytic model, not measurements)" : "";
  std::printf("Template library on %s, %d trials per workload, strategy %s%s\n", device.identity.name.c_str(),
              args.trials, args.strategy.c_str(), label.c_str());
  std::printf("  %-12s %-48s %-5s %-22s %10s %9s %9s %10s %10s\n", "op", "shape", "dtype", "template", "best ms",
              "TFLOP/s", "GB/s", "% vendor", "% roofline");

  NvrtcBuilder builder(nullptr);
  WorkerClient worker;
  nlohmann::json rows = nlohmann::json::array();
  db::TuningDb db((tmp / "bench.db").string());
  std::vector<std::string> baselines_done;
  for (const auto& bw : workloads()) {
    TuneOptions o;
    o.workload = templates::parse_workload(bw.op, bw.shape, bw.dtype);
    o.trials = args.trials;
    o.strategy = args.strategy;
    o.seed = 3;
    o.cache_dir = CompileCache::default_dir();
    const auto& tmpl = templates::find_template(o.workload.op, o.workload.dtype, nullptr, bw.template_name);
    const std::string row_text = std::string(bw.op) + " " + bw.shape + " " + bw.dtype + " " + tmpl.name();
    if (!args.filter.empty() && row_text.find(args.filter) == std::string::npos) continue;
    if (auto why = tmpl.unsupported_on(device.limits)) {
      std::printf("  %-12s %-48s %-5s %-22s skipped: %s\n", bw.op, bw.shape, bw.dtype, tmpl.name().c_str(), why->c_str());
      continue;
    }
    o.template_name = tmpl.name();
    const bool baseline_only = args.trials == 0;
    const std::string workload_text = std::string(bw.op) + " " + bw.shape + " " + bw.dtype;
    if (baseline_only) {
      if (std::find(baselines_done.begin(), baselines_done.end(), workload_text) != baselines_done.end()) continue;
      baselines_done.push_back(workload_text);
    }
    TuneSummary sum = baseline_only ? TuneSummary{} : run_tuning(o, device, db);
    const double ms = sum.best ? sum.best->trial.time_ms : 0.0;
    auto space = tmpl.space(o.workload, device.limits);
    const auto k = tmpl.instantiate(space, space.at(0), o.workload);
    const double tflops = ms > 0 ? k.flops / (ms * 1e-3) / 1e12 : 0.0;
    const double gbps = ms > 0 ? k.bytes / (ms * 1e-3) / 1e9 : 0.0;
    const double bw_gbps = device.gpu.dram_bandwidth_gbps;
    double roofline = 0;
    if (ms > 0) {
      const double floor_ms = memory_bound(bw.op)
                                  ? k.bytes / (bw_gbps * 1e9) * 1e3
                                  : std::max(k.flops / (peak_tflops(device.gpu, k.profile.tensor_cores) * 1e12),
                                             k.bytes / (bw_gbps * 1e9)) * 1e3;
      roofline = 100.0 * floor_ms / ms;
    }
    // cuBLAS (GEMMs), cuDNN (conv2d) or the device copy (memory-bound ops) on a GPU only (a sim device has
    // no vendor model).
    double vendor_pct = -1, baseline_ms = -1;
    std::string baseline_detail;  // what the vendor call ran ("cudnn graph eng62_k2=5 (...)"), when it says
    const std::string vendor = memory_bound(bw.op) ? kDeviceCopyBaseline : vendor_baseline_for(o.workload);
    if (!device.simulated && !vendor.empty() && (ms > 0 || baseline_only)) {
      auto ref = builder.compile(reference_request(k, device.limits));
      MeasureRequest req = measure_request(device.spec, k, "", {}, ref.cubin);
      req.vendor = vendor;
      req.settings.input_seed = 3;
      auto cub = worker.measure(req, 120);
      if (cub.status == "ok") {
        baseline_ms = cub.time_ms;
        baseline_detail = cub.detail;
        vendor_pct = 100.0 * cub.time_ms / ms;
      } else {
        // Said, not swallowed: a refused vendor call once printed as a 0 ms baseline for three runs.
        baseline_detail = vendor + " failed (" + cub.status + "): " + cub.message;
        std::fprintf(stderr, "template_bench: %s %s %s: %s\n", bw.op, bw.shape, bw.dtype, baseline_detail.c_str());
      }
    }
    if (baseline_only) {
      const double bms = baseline_ms > 0 ? baseline_ms : 0.0;
      std::printf("  %-12s %-48s %-5s %-22s %10.4f %9.1f %9.0f %10s\n", bw.op, bw.shape, bw.dtype,
                  (vendor.empty() ? std::string("no baseline") : vendor).c_str(), bms,
                  bms > 0 ? k.flops / (bms * 1e-3) / 1e12 : 0.0, bms > 0 ? k.bytes / (bms * 1e-3) / 1e9 : 0.0,
                  device.simulated ? "(sim)" : "baseline");
      if (!baseline_detail.empty()) std::printf("      %s\n", baseline_detail.c_str());
      std::fflush(stdout);
      rows.push_back({{"op", bw.op}, {"shape", bw.shape}, {"dtype", bw.dtype}, {"group", bw.group},
                      {"baseline", vendor}, {"baseline_ms", bms > 0 ? nlohmann::json(bms) : nlohmann::json(nullptr)},
                      {"baseline_tflops", bms > 0 ? nlohmann::json(k.flops / (bms * 1e-3) / 1e12) : nlohmann::json(nullptr)},
                      {"baseline_gbps", bms > 0 ? nlohmann::json(k.bytes / (bms * 1e-3) / 1e9) : nlohmann::json(nullptr)},
                      {"baseline_detail", baseline_detail}});
      continue;
    }
    char pct[32] = "-";
    if (vendor_pct >= 0) std::snprintf(pct, sizeof pct, "%.1f%%", vendor_pct);
    std::printf("  %-12s %-48s %-5s %-22s %10.4f %9.1f %9.0f %10s %9.1f%%%s\n", bw.op, bw.shape, bw.dtype,
                tmpl.name().c_str(), ms, tflops, gbps, pct, roofline, memory_bound(bw.op) ? " of DRAM BW" : "");
    if (!baseline_detail.empty()) std::printf("      vendor: %s\n", baseline_detail.c_str());
    std::fflush(stdout);
    rows.push_back({{"op", bw.op}, {"shape", bw.shape}, {"dtype", bw.dtype}, {"group", bw.group},
                    {"template", tmpl.name()}, {"best_ms", ms}, {"tflops", tflops}, {"gbps", gbps},
                    {"pct_of_vendor", vendor_pct >= 0 ? nlohmann::json(vendor_pct) : nlohmann::json(nullptr)},
                    {"baseline", vendor}, {"baseline_detail", baseline_detail},
                    {"baseline_gbps", baseline_ms > 0 ? nlohmann::json(k.bytes / (baseline_ms * 1e-3) / 1e9)
                                                      : nlohmann::json(nullptr)},
                    {"pct_of_roofline", roofline}, {"memory_bound", memory_bound(bw.op)},
                    {"trials", sum.measured_now}, {"wall_s", sum.wall_s},
                    {"best_config", sum.best ? sum.best->trial.config_json : ""}});
  }
  fs::remove_all(tmp);
  nlohmann::json out = {{"device", device.identity.name}, {"estimate", device.simulated}, {"trials", args.trials},
                        {"strategy", args.strategy}, {"nvrtc_version", NvrtcBuilder::nvrtc_version()}, {"rows", rows}};
  fs::path path(args.out);
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream(path) << out.dump(2) << "\n";
  std::printf("\nresults written to %s\n", args.out.c_str());
  return 0;
}
