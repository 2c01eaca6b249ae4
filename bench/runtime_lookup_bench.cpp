// Benchmark of the runtime library's lookups (not a test): how long an application waits for
// Runtime::open and for the first lookup of a shape it has not asked before (the lookup compares the asked
// shape with every record of its op and dtype and checks the chosen config's constraints at the new shape),
// and for a repeated lookup (cached). Without --db it builds its database from every whole-space recording
// under data/replay/ (`tuner tune --device replay:FILE --trials all`, the tuner binary beside this one), so
// the lookups run against real H100/H200 records: thousands of gemm configs, the case that was slow.
//
// New shapes are drawn per recorded workload: each size dimension of a recorded shape times 2^u, u uniform
// in [-2, 2], rounded up to a multiple of 8 (conv2d's R, S, stride, pad and dilation kept), under --seed.
//
//   build/bin/runtime_lookup_bench [--replay-dir data/replay] [--db FILE] [--device NAME] [--shapes 40]
//                                  [--seed 1] [--out results/runtime_lookup_bench.json]
//
// Shapes are drawn from the recordings of --replay-dir also with --db (a database of your own answers for the
// workloads recorded there). Prints one row per op and dtype (lookups that found a config; of those the first
// lookup's median / p90 / max and the repeated lookup) and the message of the first that found none, and writes
// the results JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tuner/runtime.h"

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Nearest rank: the smallest value with at least q of the values at or below it.
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Removes the scratch folder however main returns.
struct Scratch {
  fs::path dir;
  ~Scratch() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

struct Recorded {
  std::string op, shape, dtype;
};

tuner::DType dtype_of(const std::string& s) {
  return s == "f16" ? tuner::DType::kF16 : s == "bf16" ? tuner::DType::kBF16 : tuner::DType::kF32;
}

/// A shape near `shape`: its size dimensions scaled by 2^u, u in [-2, 2], rounded up to a multiple of 8.
std::string nearby(const std::string& shape, std::mt19937_64& rng) {
  static const std::set<std::string> fixed = {"R", "S", "stride", "pad", "dilation"};
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::stringstream in(shape);
  std::string item, out;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    int64_t v = std::stoll(item.substr(eq + 1));
    if (!fixed.count(name)) {
      const double scaled = static_cast<double>(v) * std::exp2(u(rng));
      v = std::max<int64_t>(8, (static_cast<int64_t>(std::ceil(scaled)) + 7) / 8 * 8);
    }
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(v);
  }
  return out;
}

}  // namespace

int run(int argc, char** argv) {
  std::string replay_dir = "data/replay", db, device = "replay:NVIDIA H100 80GB HBM3",
              out_path = "results/runtime_lookup_bench.json";
  int shapes = 40;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "runtime_lookup_bench: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--replay-dir") replay_dir = v;
    else if (a == "--db") db = v;
    else if (a == "--device") device = v;
    else if (a == "--shapes") shapes = std::atoi(v.c_str());
    else if (a == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--out") out_path = v;
    else {
      std::fprintf(stderr, "runtime_lookup_bench: unknown flag '%s'; allowed: --replay-dir, --db, --device, "
                   "--shapes, --seed, --out\n", a.c_str());
      return 2;
    }
  }
  if (shapes < 1 || shapes > 10000) {
    std::fprintf(stderr, "runtime_lookup_bench: --shapes %d; allowed: 1 .. 10000\n", shapes);
    return 2;
  }
  if (!fs::is_directory(replay_dir)) {
    std::fprintf(stderr, "runtime_lookup_bench: --replay-dir '%s' is not a folder; allowed: a folder of replay "
                 "recordings (data/replay)\n", replay_dir.c_str());
    return 2;
  }

  // The recorded workloads, and the database of them.
  std::vector<Recorded> recorded;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(replay_dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const bool build_db = db.empty();
  const fs::path tuner_bin = fs::absolute(fs::path(argv[0]).parent_path() / "tuner");
  // `--trials all` writes a replay file into the working directory: run it in a scratch one.
  Scratch scratch;
  if (build_db) {
    scratch.dir = fs::temp_directory_path() / ("runtime_lookup_bench_" + std::to_string(::getpid()));
    fs::create_directories(scratch.dir);
    db = (scratch.dir / "tuning.db").string();
  }
  for (const auto& f : files) {
    nlohmann::json j;
    try {
      std::ifstream in(f);
      j = nlohmann::json::parse(in);
      recorded.push_back({j.at("op"), j.at("shape"), j.at("dtype")});
    } catch (const nlohmann::json::exception&) {
      std::fprintf(stderr, "runtime_lookup_bench: %s is not a replay recording; left out\n", f.c_str());
      continue;
    }
    if (!build_db) continue;
    const std::string cmd = "cd " + shell_quoted(scratch.dir.string()) + " && " + shell_quoted(tuner_bin.string()) +
                            " tune --op " + shell_quoted(recorded.back().op) + " --shape " + shell_quoted(recorded.back().shape) +
                            " --dtype " + shell_quoted(recorded.back().dtype) + " --template " +
                            shell_quoted(j.value("template", "")) + " --device " +
                            shell_quoted("replay:" + fs::absolute(f).string()) + " --trials all --db " + shell_quoted(db) +
                            " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "runtime_lookup_bench: could not replay %s\n", f.c_str());
  }

  tuner::RuntimeOptions options;
  options.source = db;
  options.device_name = device;
  std::unique_ptr<tuner::Runtime> rt;
  const auto t_open = Clock::now();
  if (tuner::Runtime::open(options, &rt) != tuner::Status::kOk) {
    std::fprintf(stderr, "runtime_lookup_bench: %s\n", tuner::last_error().c_str());
    return 1;
  }
  const double open_ms = ms_since(t_open);

  // Per op and dtype: first lookups of new shapes, then each again (cached). Times are of the lookups that found a
  // config; one that finds none (records of an older template version, of another GPU) is counted and its message
  // shown, not timed.
  std::map<std::string, std::vector<Recorded>> by_workload;
  for (const auto& r : recorded) by_workload[r.op + " " + r.dtype].push_back(r);
  std::mt19937_64 rng(seed);
  nlohmann::json rows = nlohmann::json::array();
  std::printf("runtime_lookup_bench: %lld records on %s, open %.1f ms\n\n", static_cast<long long>(rt->records()),
              device.c_str(), open_ms);
  std::printf("%-18s %9s %9s %9s %9s %11s\n", "op dtype", "found", "first p50", "first p90", "first max",
              "repeat");
  std::printf("%-18s %9s %9s %9s %9s %11s\n", "", "", "ms", "ms", "ms", "us");
  std::vector<std::string> notes;
  for (const auto& [key, recs] : by_workload) {
    std::vector<tuner::Problem> problems;
    std::set<std::string> seen;
    // Small recorded sizes have few distinct neighbours: stop drawing after 100 tries per shape asked.
    for (int tries = 0; static_cast<int>(problems.size()) < shapes && tries < 100 * shapes; ++tries) {
      const Recorded& r = recs[rng() % recs.size()];
      tuner::Problem p{r.op, nearby(r.shape, rng), dtype_of(r.dtype), ""};
      if (seen.insert(p.shape).second) problems.push_back(p);
    }
    std::vector<double> first;
    std::vector<const tuner::Problem*> found;
    std::string why;  // the first failed lookup's message
    for (const auto& p : problems) {
      tuner::KernelChoice c;
      const auto t0 = Clock::now();
      const bool ok = rt->lookup(p, &c) == tuner::Status::kOk;
      const double ms = ms_since(t0);
      if (ok) first.push_back(ms), found.push_back(&p);
      else if (why.empty()) why = tuner::last_error();
    }
    const auto t_repeat = Clock::now();
    for (const tuner::Problem* p : found) {
      tuner::KernelChoice c;
      rt->lookup(*p, &c);
    }
    const double repeat_us = found.empty() ? 0 : ms_since(t_repeat) * 1000.0 / static_cast<double>(found.size());
    const std::string count = std::to_string(found.size()) + "/" + std::to_string(problems.size());
    nlohmann::json row = {{"workload", key}, {"shapes", problems.size()}, {"found", found.size()}};
    if (found.empty()) {
      std::printf("%-18s %9s %9s %9s %9s %11s\n", key.c_str(), count.c_str(), "-", "-", "-", "-");
    } else {
      std::printf("%-18s %9s %9.2f %9.2f %9.2f %11.1f\n", key.c_str(), count.c_str(), percentile(first, 0.5),
                  percentile(first, 0.9), percentile(first, 1.0), repeat_us);
      row.update({{"first_ms_p50", percentile(first, 0.5)}, {"first_ms_p90", percentile(first, 0.9)},
                  {"first_ms_max", percentile(first, 1.0)}, {"repeat_us", repeat_us}});
    }
    if (!why.empty()) {
      row["not_found"] = why;
      notes.push_back(key + ": " + why);
    }
    rows.push_back(row);
  }
  for (const auto& n : notes) std::printf("  %s\n", n.c_str());
  const nlohmann::json out = {{"bench", "runtime_lookup_bench"}, {"device", device}, {"records", rt->records()},
                              {"open_ms", open_ms}, {"seed", seed}, {"rows", rows}};
  const fs::path out_dir = fs::path(out_path).parent_path();
  if (!out_dir.empty()) fs::create_directories(out_dir);
  std::ofstream file(out_path);
  file << out.dump(2) << "\n";
  if (!file) {
    std::fprintf(stderr, "runtime_lookup_bench: cannot write %s\n", out_path.c_str());
    return 1;
  }
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_lookup_bench: %s\n", e.what());
    return 1;
  }
}
