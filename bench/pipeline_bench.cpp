// Benchmark of the tuning pipeline (not a test): NVRTC configs compiled per
// second cold and from the cache, trials per second end to end on a sim device
// (cold, resumed, warm cache), measured configs per second of the tuning loop
// with its per-phase breakdown for gemm f32 (gemm_f32_simt), f16 mma
// (gemm_tc_mma) and f16 wgmma (gemm_tc_wgmma) GEMMs on cuda:0 where present,
// else on sim:h100-sxm, and on cuda:0 the tuned GEMM's GFLOP/s against cuBLAS
// SGEMM measured by the same protocol in the same run. Prints tables and writes
// results/pipeline_bench.json.
//
//   build/bin/pipeline_bench [--configs 24] [--trials 48] [--loop-trials 64] [--gpu-trials 64] [--out FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "templates/gemm_f32.h"
#include "tuner/compile_cache.h"
#include "tuner/compile_pool.h"
#include "tuner/cuda_runner.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/tuning_session.h"
#include "tuner/worker.h"
#include "tuner/instance_compile.h"

namespace fs = std::filesystem;
using namespace tuner;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Args {
  int configs = 24;
  int trials = 48;
  int gpu_trials = 64;
  int loop_trials = 64;
  std::string out = "results/pipeline_bench.json";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--configs") a.configs = std::stoi(argv[i + 1]);
    else if (k == "--trials") a.trials = std::stoi(argv[i + 1]);
    else if (k == "--gpu-trials") a.gpu_trials = std::stoi(argv[i + 1]);
    else if (k == "--loop-trials") a.loop_trials = std::stoi(argv[i + 1]);
    else if (k == "--out") a.out = argv[i + 1];
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); std::exit(2); }
  }
  return a;
}

nlohmann::json compile_throughput(const Args& args, const fs::path& tmp) {
  templates::GemmF32Template tmpl;
  auto w = templates::parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
  auto gpu = resolve_device("sim:h100-sxm");
  auto space = tmpl.space(w, gpu.limits);
  search::Rng rng(1);
  std::vector<CompileRequest> reqs;
  for (int i = 0; i < args.configs; ++i) {
    auto k = tmpl.instantiate(space, space.sample(rng), w);
    reqs.push_back({k.source, k.kernel_name, gpu.limits.arch, {}});
  }
  CompileCache cache((tmp / "cache-compile").string());
  NvrtcBuilder builder(&cache);
  CompilePool pool(builder, 0);
  auto pass = [&] {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::future<CompileResult>> fs;
    for (const auto& r : reqs) fs.push_back(pool.submit(r));
    int hits = 0;
    for (auto& f : fs) hits += f.get().from_cache;
    return std::make_pair(seconds_since(t0), hits);
  };
  auto [cold_s, cold_hits] = pass();
  auto [warm_s, warm_hits] = pass();
  std::printf("\nNVRTC compile throughput (gemm_f32_simt, %d random configs, sm_90, %u threads)\n", args.configs, pool.size());
  std::printf("  %-12s %10s %12s %10s\n", "pass", "seconds", "configs/s", "cache hits");
  std::printf("  %-12s %10.2f %12.1f %10d\n", "cold", cold_s, args.configs / cold_s, cold_hits);
  std::printf("  %-12s %10.3f %12.1f %10d\n", "from cache", warm_s, args.configs / warm_s, warm_hits);
  return {{"configs", args.configs}, {"threads", pool.size()}, {"cold_s", cold_s}, {"cold_configs_per_s", args.configs / cold_s},
          {"cached_s", warm_s}, {"cached_configs_per_s", args.configs / warm_s}};
}

TuneOptions tune_options(const std::string& shape, int trials, const fs::path& cache) {
  TuneOptions o;
  o.workload = templates::parse_workload("gemm", shape, "f32");
  o.trials = trials;
  o.strategy = "random";
  o.seed = 3;
  o.cache_dir = cache.string();
  return o;
}

nlohmann::json sim_end_to_end(const Args& args, const fs::path& tmp) {
  auto device = resolve_device("sim:h100-sxm");
  const fs::path cache = tmp / "cache-e2e";
  auto timed = [&](const std::string& db_name) {
    db::TuningDb db((tmp / db_name).string());
    return run_tuning(tune_options("M=1000,N=1000,K=1000", args.trials, cache), device, db);
  };
  auto cold = timed("a.db");
  auto resumed = timed("a.db");
  auto warm = timed("b.db");
  std::printf("\nEnd to end on sim:h100-sxm (gemm M=1000,N=1000,K=1000, %d trials, random, seed 3)\n", args.trials);
  std::printf("  %-28s %9s %9s %10s %9s\n", "run", "seconds", "measured", "trials/s", "vs cold");
  auto row = [&](const char* name, const TuneSummary& s) {
    std::printf("  %-28s %9.2f %9lld %10.1f %8.1fx\n", name, s.wall_s, static_cast<long long>(s.measured_now),
                s.measured_now / s.wall_s, cold.wall_s / s.wall_s);
  };
  row("cold cache, new database", cold);
  row("same database again", resumed);
  row("warm cache, new database", warm);
  return {{"trials", args.trials}, {"cold_s", cold.wall_s}, {"cold_trials_per_s", cold.measured_now / cold.wall_s},
          {"resumed_s", resumed.wall_s}, {"warm_cache_s", warm.wall_s},
          {"warm_trials_per_s", warm.measured_now / warm.wall_s}, {"warm_speedup", cold.wall_s / warm.wall_s},
          {"resume_ratio", resumed.wall_s / cold.wall_s},
          {"best_estimate_gflops", cold.best ? cold.best->trial.gflops : 0.0}};
}

/// Measured configs per second of the loop, cold compile cache and warm, with where the time went.
nlohmann::json loop_throughput(const Args& args, const fs::path& tmp) {
  std::string why;
  const bool gpu = !cuda_devices(&why).empty();
  auto device = resolve_device(gpu ? "cuda:0" : "sim:h100-sxm");
  struct Case {
    const char* shape;
    const char* dtype;
    const char* tmpl;
  };
  const Case cases[] = {{"M=1024,N=1024,K=1024", "f32", "gemm_f32_simt"},
                        {"M=4096,N=4096,K=4096", "f16", "gemm_tc_mma"},
                        {"M=4096,N=4096,K=4096", "f16", "gemm_tc_wgmma"}};
  std::printf("\nTuning loop on %s: measured configs/s (%d random configs, batch 64, seed 3; %s)\n",
              device.spec.c_str(), args.loop_trials, gpu ? "GPU times" : "sim estimates, no GPU here");
  std::printf("  %-14s %-5s %-5s %8s %9s %8s %8s %8s %8s %8s %8s %8s %8s\n", "template", "dtype", "cache", "configs",
              "configs/s", "compile", "load", "inputs", "ref", "check", "timed", "other", "commit");
  nlohmann::json rows = nlohmann::json::array();
  for (const Case& c : cases) {
    for (const char* cache : {"cold", "warm"}) {
      db::TuningDb db((tmp / (std::string("loop_") + c.tmpl + "_" + cache + ".db")).string());
      TuneOptions o = tune_options(c.shape, args.loop_trials, tmp / (std::string("cache-loop-") + c.tmpl));
      o.workload = templates::parse_workload("gemm", c.shape, c.dtype);
      o.template_name = c.tmpl;
      o.remeasure_top = 0;
      TuneSummary s;
      try {
        s = run_tuning(o, device, db);
      } catch (const std::exception& e) {
        std::printf("  %-14s %-5s %-5s skipped: %s\n", c.tmpl, c.dtype, cache, e.what());
        continue;
      }
      const auto& p = s.phases;
      const double rate = s.measured_now / std::max(s.wall_s, 1e-9);
      std::printf("  %-14s %-5s %-5s %8lld %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", c.tmpl, c.dtype,
                  cache, static_cast<long long>(s.measured_now), rate, p.compile_wait_s, p.worker.module_load_s,
                  p.worker.inputs_s, p.worker.reference_s, p.worker.check_s, p.worker.timed_s, p.worker_other_s,
                  p.commit_s);
      rows.push_back({{"template", c.tmpl}, {"shape", c.shape}, {"dtype", c.dtype}, {"cache", cache},
                      {"configs", s.measured_now}, {"wall_s", s.wall_s}, {"configs_per_s", rate},
                      {"phases", nlohmann::json(to_json(p))}});
    }
  }
  std::printf("  (seconds per phase; compile = waiting for NVRTC, other = requests, worker starts and timeouts)\n");
  return {{"device", device.spec}, {"estimate", !gpu}, {"rows", rows}};
}

nlohmann::json gpu_vs_cublas(const Args& args, const fs::path& tmp) {
  std::string why;
  if (cuda_devices(&why).empty()) {
    std::printf("\ncuda:0: skipped (%s)\n", why.c_str());
    return {{"skipped", why}};
  }
  auto device = resolve_device("cuda:0");
  nlohmann::json rows = nlohmann::json::array();
  std::printf("\nTuned gemm_f32_simt vs cuBLAS SGEMM on %s (%d trials each, random, seed 3)\n", device.identity.name.c_str(), args.gpu_trials);
  std::printf("  %-26s %10s %10s %9s %7s %8s %9s\n", "shape", "tuned GF/s", "cuBLAS GF/s", "% cuBLAS", "trials", "wall s", "trials/s");
  templates::GemmF32Template tmpl;
  NvrtcBuilder builder(nullptr);
  WorkerClient worker;
  for (const char* shape : {"M=4096,N=4096,K=4096", "M=1000,N=1000,K=1000", "M=4096,N=4096,K=256", "M=64,N=8192,K=8192"}) {
    db::TuningDb db((tmp / "gpu.db").string());
    auto sum = run_tuning(tune_options(shape, args.gpu_trials, tmp / "cache-gpu"), device, db);
    auto w = templates::parse_workload("gemm", shape, "f32");
    auto space = tmpl.space(w, device.limits);
    auto k = tmpl.instantiate(space, space.at(0), w);
    auto ref = builder.compile(reference_request(k, device.limits));
    MeasureRequest req = measure_request(device.spec, k, "", {}, ref.cubin);
    req.vendor = "cublas_sgemm";
    req.settings.input_seed = 3;
    auto cub = worker.measure(req, 60);
    const double tuned = sum.best ? sum.best->trial.gflops : 0.0;
    const double vendor = cub.status == "ok" ? k.flops / (cub.time_ms * 1e-3) / 1e9 : 0.0;
    std::printf("  %-26s %10.0f %10.0f %8.1f%% %7lld %8.1f %9.2f%s\n", shape, tuned, vendor,
                vendor > 0 ? 100 * tuned / vendor : 0.0, static_cast<long long>(sum.measured_now), sum.wall_s,
                sum.measured_now / sum.wall_s, cub.status == "ok" ? "" : ("  cuBLAS: " + cub.message).c_str());
    rows.push_back({{"shape", shape}, {"tuned_gflops", tuned}, {"cublas_gflops", vendor},
                    {"pct_of_cublas", vendor > 0 ? 100 * tuned / vendor : 0.0}, {"trials", sum.measured_now},
                    {"wall_s", sum.wall_s}, {"best_config", sum.best ? sum.best->trial.config_json : ""}});
  }
  return {{"device", device.identity.name}, {"rows", rows}};
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  const fs::path tmp = fs::temp_directory_path() / ("tuner_pipeline_bench_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  nlohmann::json out;
  out["machine_threads"] = std::thread::hardware_concurrency();
  out["nvrtc_version"] = NvrtcBuilder::nvrtc_version();
  out["compile"] = compile_throughput(args, tmp);
  out["sim_end_to_end"] = sim_end_to_end(args, tmp);
  out["loop"] = loop_throughput(args, tmp);
  out["gpu"] = gpu_vs_cublas(args, tmp);
  fs::remove_all(tmp);
  fs::path path(args.out);
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream(path) << out.dump(2) << "\n";
  std::printf("\nresults written to %s\n", args.out.c_str());
  return 0;
}
