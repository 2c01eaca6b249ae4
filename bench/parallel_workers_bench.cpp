// Benchmark (not a test) of measuring with several workers at once: configs/s of the tuning loop with
// 1, 2 and 4 workers on a device whose every measurement takes a fixed time (--sim-delay-ms), on the
// H100 softmax recording (replay: nothing compiled) and on sim:h100-sxm (NVRTC compiles each config,
// the analytic model answers in the worker processes). Scaling = configs/s with N / (N x configs/s
// with 1). Run from the repository root (the recording's default path is relative). Prints a table and
// writes results/parallel_workers_bench.json.
//
//   build/bin/parallel_workers_bench [--delay-ms 20] [--sim-delay-ms 100] [--trials 96] [--sim-trials 32] [--replay FILE] [--out FILE]
#include <unistd.h>

#include <chrono>
#include <tuple>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "tuner/device_registry.h"
#include "tuner/tuning_session.h"

namespace fs = std::filesystem;
using namespace tuner;

namespace {

struct Args {
  double delay_ms = 20;       // replay rows
  double sim_delay_ms = 100;  // sim rows: each also has a worker round trip and a cached compile
  int trials = 96;
  int sim_trials = 32;
  std::string replay = "data/replay/softmax_f16_rows4096_cols4096_h100_2026-11-23.json";
  std::string out = "results/parallel_workers_bench.json";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--delay-ms") a.delay_ms = std::stod(argv[i + 1]);
    else if (k == "--sim-delay-ms") a.sim_delay_ms = std::stod(argv[i + 1]);
    else if (k == "--trials") a.trials = std::stoi(argv[i + 1]);
    else if (k == "--sim-trials") a.sim_trials = std::stoi(argv[i + 1]);
    else if (k == "--replay") a.replay = argv[i + 1];
    else if (k == "--out") a.out = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      std::exit(2);
    }
  }
  return a;
}

struct Row {
  std::string device, mode;
  int workers = 1;
  int64_t measured = 0;
  double wall_s = 0, configs_per_s = 0;
};

Row run_once(const std::string& device_spec, const templates::Workload& w, int workers, int trials, double delay_ms,
             const fs::path& dir, const std::string& tag) {
  const DeviceTarget device = resolve_device(device_spec);
  TuneOptions opt;
  opt.workload = w;
  opt.trials = trials;
  opt.strategy = "random";
  opt.batch_size = 16;
  opt.remeasure_top = 0;
  opt.sim_delay_ms = delay_ms;
  opt.cache_dir = (dir / "cache").string();
  if (workers > 1) opt.measure_devices.assign(static_cast<size_t>(workers), device.spec);
  const std::string path = (dir / (tag + std::to_string(workers) + ".db")).string();
  fs::remove(path);
  db::TuningDb db(path);
  const TuneSummary s = run_tuning(opt, device, db);
  return {device.identity.name, "workers", workers, s.measured_now, s.wall_s, s.measured_now / s.wall_s};
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const fs::path dir = fs::temp_directory_path() / ("tuner_parallel_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string replay = "replay:" + args.replay;
  const auto softmax = templates::parse_workload("softmax", "rows=4096,cols=4096", "f16");
  const auto gemm = templates::parse_workload("gemm", "M=256,N=256,K=256", "f32");

  std::vector<Row> rows;
  std::printf("measurement lanes with a fixed delay per measurement: %.0f ms replay, %.0f ms sim (batch 16, random)\n",
              args.delay_ms, args.sim_delay_ms);
  std::printf("  %-34s %8s %9s %8s %11s %9s\n", "device", "workers", "measured", "wall s", "configs/s", "scaling");
  nlohmann::json out_rows = nlohmann::json::array();
  for (const auto& [spec, w, trials, tag] :
       {std::tuple{replay, softmax, args.trials, std::string("r")}, std::tuple{std::string("sim:h100-sxm"), gemm, args.sim_trials, std::string("s")}}) {
    double one = 0;
    // A cold compile cache for the sim rows' first run would charge NVRTC to one worker count only:
    // warm it with the 1-worker run's configs first (same seed, same configs).
    if (tag == "s") run_once(spec, w, 1, trials, 0, dir, "warm");
    for (int n : {1, 2, 4}) {
      const double delay = tag == "s" ? args.sim_delay_ms : args.delay_ms;
      Row r = run_once(spec, w, n, trials, delay, dir, tag);
      if (n == 1) one = r.configs_per_s;
      const double scaling = one > 0 ? r.configs_per_s / (n * one) : 0;
      std::printf("  %-34s %8d %9lld %8.2f %11.1f %9.2f\n", r.device.c_str(), n, static_cast<long long>(r.measured),
                  r.wall_s, r.configs_per_s, scaling);
      out_rows.push_back({{"device", r.device}, {"workers", n}, {"measured", r.measured}, {"wall_s", r.wall_s},
                          {"configs_per_s", r.configs_per_s}, {"scaling", scaling}, {"delay_ms", tag == "s" ? args.sim_delay_ms : args.delay_ms}});
    }
  }
  fs::remove_all(dir);
  nlohmann::json out{{"machine_threads", std::thread::hardware_concurrency()}, {"rows", out_rows}};
  fs::path path(args.out);
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream(path) << out.dump(2) << "\n";
  std::printf("\nresults written to %s\n", args.out.c_str());
  return 0;
}
