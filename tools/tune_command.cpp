#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "search/config_space.h"
#include "search/strategy.h"
#include "templates/registry.h"
#include "templates/user_kernel.h"
#include "tools/best_configs.h"
#include "tools/cli_common.h"
#include "tools/options.h"
#include "tuner/compile_cache.h"
#include "tuner/device_registry.h"
#include "tuner/mpi_lanes.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/replay_oracle.h"
#include "tuner/replay_data.h"
#include "tuner/template_auto.h"
#include "tuner/tuning_session.h"
#include "tuner/instance_compile.h"

namespace tuner::cli {

namespace {

/// "crash:3,hang:7" -> faults at those valid-config indices.
std::vector<std::pair<uint64_t, InjectedFault>> parse_faults(const std::string& text, uint64_t space_size) {
  std::vector<std::pair<uint64_t, InjectedFault>> out;
  if (text.empty()) return out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t colon = item.find(':');
    std::string kind = item.substr(0, colon);
    std::string num = colon == std::string::npos ? "" : item.substr(colon + 1);
    uint64_t index = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    if ((kind != "crash" && kind != "hang") || num.empty() || ec != std::errc() || end != num.data() + num.size())
      throw UsageError("bad --inject-fault item '" + item + "'; expected crash:INDEX or hang:INDEX");
    if (index >= space_size)
      throw UsageError("--inject-fault index " + num + " is outside the space (0.." + std::to_string(space_size - 1) + ")");
    out.emplace_back(index, kind == "crash" ? InjectedFault::kCrash : InjectedFault::kHang);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

/// stem + ext, else stem-2 + ext, stem-3 + ext, ...: the first name no file has (a recording is never replaced).
std::string unused_name(const std::string& stem, const std::string& ext) {
  std::error_code ec;
  std::string name = stem + ext;
  for (int n = 2; std::filesystem::exists(name, ec); ++n) name = stem + "-" + std::to_string(n) + ext;
  return name;
}

/// ", writes f32" where a best config writes its output in another type than the workload's (OUT_F32).
std::string writes_note(const db::ResultRow& r) {
  const std::string out = output_dtype_of(r).value_or(r.workload.dtype);
  return out == r.workload.dtype ? "" : ", writes " + out;
}

/// A user kernel file that does not compile at all is bad input, found before a session is stored: its
/// reference kernel is compiled from the whole file (through the compile cache the session then hits).
void check_user_reference_compiles(const templates::KernelTemplate& tmpl, const search::ConfigSpace& space,
                                   const templates::Workload& w, const DeviceTarget& device, const std::string& path) {
  // The kernel itself at reference.config is the reference: a config its own constraints refuse (a block past the
  // device's, an unrolling the sizes do not divide) would judge every trial against whatever it computes.
  if (const auto* user = dynamic_cast<const templates::UserKernelTemplate*>(&tmpl);
      user && user->spec().reference_kernel.empty()) {
    nlohmann::json ref = nlohmann::json::object();
    for (const auto& [k, v] : user->spec().reference_config) ref[k] = v;
    if (const auto why = space.violation(space.from_json(ref)))
      throw UsageError("--spec: reference.config " + ref.dump() + " breaks '" + *why + "' at " + w.shape_string() +
                       "; allowed: a config the spec's constraints and " + device.spec + "'s limits take, e.g. " +
                       space.to_json_string(space.at(0)));
  }
  const auto inst = tmpl.instantiate(space, space.at(0), w);
  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  const CompileResult ref = builder.compile(reference_request(inst, device.limits));
  if (ref.ok()) {
    // The tuned kernel is in the same file: one not in the cubin (no extern "C") failed every trial alike.
    std::string error;
    if (inst.kernel_name != inst.reference_kernel_name && !read_cubin_resources(ref.cubin, inst.kernel_name, &error))
      throw UsageError("--kernel " + path + ": " + error + " (the spec's \"kernel\"; is it declared extern \"C\"?); "
                       "allowed: an extern \"C\" __global__ function of the file");
    return;
  }
  // NVRTC's log names the file and line; its first error line is the one to read.
  throw UsageError("--kernel " + path + " does not compile (reference kernel " + inst.reference_kernel_name +
                   ", the whole file): " + first_error_line(ref.log) + "; allowed: a file NVRTC compiles for " +
                   device.limits.arch);
}

void print_progress(const TuneProgress& p) {
  const std::string rate = p.bytes > 0 ? fixed(p.bytes / (p.best_ms * 1e-3) / 1e9, 0) + " GB/s"
                                        : fixed(p.best_gflops, 0) + " GFLOP/s";
  std::string best = p.best_ms > 0 ? fixed(p.best_ms, 4) + " ms " + rate + (p.estimate ? " (estimate)" : "")
                                   : "none yet";
  const std::string expects =
      p.expected_improvement >= 0 ? "  next batch expects +" + fixed(100 * p.expected_improvement, 1) + "%" : "";
  char line[512];
  // Time before errors and the strategy's estimate: what a narrow terminal cuts off is the least needed.
  std::snprintf(line, sizeof line, "  %s%strials %lld/%lld  best %s  elapsed %.0f s  left ~%.0f s  errors %lld%s",
                p.label.c_str(), p.label.empty() ? "" : ": ", static_cast<long long>(p.done),
                static_cast<long long>(p.budget), best.c_str(), p.elapsed_s, p.eta_s,
                static_cast<long long>(p.errors_now), expects.c_str());
  // One terminal row: a line that wraps leaves its first rows behind at every \r (107 columns on an 80-column
  // terminal did).
  std::string text = line;
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && text.size() >= ws.ws_col)
    text.resize(ws.ws_col - 1);
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
}

/// "search 0.2 s, compile wait 1.1 s, ..." in the order of to_json(TunePhases), seconds with one decimal.
std::string phases_line(const TunePhases& p) {
  const std::pair<const char*, double> parts[] = {
      {"setup", p.setup_s},          {"search", p.search_s},         {"compile wait", p.compile_wait_s},
      {"module load", p.worker.module_load_s}, {"inputs", p.worker.inputs_s}, {"reference", p.worker.reference_s},
      {"check", p.worker.check_s},   {"timed runs", p.worker.timed_s}, {"worker other", p.worker_other_s},
      {"commit", p.commit_s}, {"sim delay", p.sim_delay_s}};
  std::string out;
  for (const auto& [name, s] : parts) out += (out.empty() ? "" : ", ") + std::string(name) + " " + fixed(s, 1) + " s";
  return out + " (compiling " + fixed(p.compile_cpu_s, 1) + " s on the pool, overlapped)";
}

/// --template auto: each session's template and result, in the order they ran.
nlohmann::ordered_json template_sessions_json(const std::vector<TuneSummary>& sessions) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& s : sessions)
    out.push_back({{"template", s.template_name},
                   {"template_version", s.template_hash},
                   {"session_id", s.session_id},
                   {"space_size", s.space_size},
                   {"previously_measured", s.previously_measured},
                   {"measured", s.measured_now},
                   {"errors", s.errors_now},
                   {"stop_reason", s.stop_reason},
                   {"best_ms", s.best ? nlohmann::ordered_json(s.best->trial.time_ms) : nlohmann::ordered_json(nullptr)}});
  return out;
}

}  // namespace

/// "KNOB=V,KNOB=V": the knobs --fix pins, in order.
static std::vector<std::pair<std::string, int64_t>> parse_fixed_knobs(const std::string& text) {
  std::vector<std::pair<std::string, int64_t>> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    int64_t v = 0;
    const char* first = item.data() + (eq == std::string::npos ? 0 : eq + 1);
    const auto [ptr, ec] = std::from_chars(first, item.data() + item.size(), v);
    if (ec == std::errc::result_out_of_range)
      throw UsageError("--fix '" + item + "': the value is out of range; allowed: a 64-bit integer the knob takes");
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != item.data() + item.size() || first == ptr)
      throw UsageError("--fix '" + item + "' is not KNOB=INTEGER; allowed: a comma-separated list such as BM=128,STAGES=4");
    out.emplace_back(item.substr(0, eq), v);
    at = end + 1;
  }
  return out;
}

int tune_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string op, shape, dtype, device_spec, strategy, db_path, faults_text, trials_text, replay_out, template_name;
  std::string kernel_path, spec_path, fix_text;
  int64_t trials = 0, early_stop = 0;
  int remeasure = 5;
  std::string seed_text, transfer, prior;
  uint64_t seed = 1;
  int64_t batch = 64;
  double db_timeout_s = 60, sim_delay_ms = 0, min_improvement_pct = 0;
  int workers = 1;
  int64_t threads = 0;  // signed, so that -1 is named as given
  double timeout_s = 10, min_time_ms = 1, max_time_ms = 100, max_noise_pct = 1;
  po::options_description desc("tuner tune: tune a kernel for a workload on a device");
  desc.add_options()
      ("help,h", "show this help")
      ("op", po::value(&op)->default_value(""), "operator: gemm, batched_gemm, conv2d, softmax, layernorm (required unless --kernel)")
      ("shape", po::value(&shape)->default_value(""), "named dimensions, e.g. M=4096,N=4096,K=4096 (with --kernel: overrides the spec's sizes)")
      ("kernel", po::value(&kernel_path)->default_value(""), "a CUDA file of your own to tune, with --spec (see README: user kernels)")
      ("spec", po::value(&spec_path)->default_value(""), "the JSON spec of --kernel: knobs, constraints, launch, buffers, reference")
      ("dtype", po::value(&dtype)->default_value("f32"), "element type: f32, f16, bf16")
      ("template", po::value(&template_name)->default_value("auto"), "kernel template, e.g. gemm_tc_wgmma; auto: every template that runs the workload on the device, sharing --trials (see README)")
      ("device", po::value(&device_spec)->default_value(""), "cuda:N, cuda:all, cuda:N,M,.. (identical GPUs measured in parallel), sim:<gpu> or replay:FILE (default: cuda:0 if present, else sim:h100-sxm)")
      ("workers", po::value(&workers)->default_value(1), "sim and replay devices: measure with this many workers in parallel, 1 .. 64 (cuda: one per listed GPU)")
      ("fix", po::value(&fix_text)->default_value(""), "KNOB=V,KNOB=V..: search only the configs with these knob values (one template: name it with --template); e.g. measure one config with every knob fixed")
      ("trials", po::value(&trials_text)->default_value("200"), "trial budget for this workload on this device in this database, or 'all' (the whole space)")
      ("strategy", po::value(&strategy)->default_value("xgb"), "search strategy: xgb (model-guided), bo (Bayesian optimisation, a Gaussian process), ga, random, grid")
      ("remeasure", po::value(&remeasure)->default_value(5), "measure the best K configs once more at the end, 0 (off) .. 1000")
      ("replay-out", po::value(&replay_out)->default_value(""), "write the measured space as replay data to this file (default with --trials all: <op>_<shape>_<dtype>_<template>_<device>.replay.json, never replacing a file)")
      ("prior", po::value(&prior)->default_value("auto"), "xgb: what ranks the first batch: compiled (the analytic model's best, compiled and re-ranked with their registers and spills), analytic (registers estimated), none (random); auto: compiled on cuda and replay devices, none on sim")
      ("transfer", po::value(&transfer)->default_value("auto"), "xgb: auto starts from this template's records of other shapes and GPUs; none starts cold")
      ("early-stop", po::value(&early_stop)->default_value(0), "stop after N trials without a better time, 0 (off) or more")
      ("min-improvement", po::value(&min_improvement_pct)->default_value(0), "stop when the strategy expects less than this % speed-up from its next batch (xgb and bo estimate it), 0 (off) .. 1000")
      ("seed", po::value(&seed_text)->default_value("1"), "seed of the search and of the random inputs (0 .. 2^64-1)")
      ("db", po::value(&db_path)->default_value(default_db_path()), "tuning database ($TUNER_DB or ./tuning.db)")
      ("batch", po::value(&batch)->default_value(64), "configs proposed, compiled and committed together (xgb refits after each), 1 .. 65536")
      ("db-timeout", po::value(&db_timeout_s)->default_value(60), "seconds a write waits (retrying with backoff) for a database another process holds locked, 0 .. 86400")
      ("compile-threads", po::value(&threads)->default_value(0), "NVRTC threads, 0 (one per core) .. 256")
      ("timeout", po::value(&timeout_s)->default_value(10), "seconds a measurement may run beyond its timing budget, more than 0 .. 3600")
      ("min-time-ms", po::value(&min_time_ms)->default_value(1), "cuda devices: time at least this much kernel time (and 10 runs) per config, 0 .. 60000")
      ("max-time-ms", po::value(&max_time_ms)->default_value(100), "cuda devices: stop timing a config after this much kernel time, --min-time-ms .. 60000 (default 100, or --min-time-ms when that is more)")
      ("max-noise", po::value(&max_noise_pct)->default_value(1), "cuda devices: stop once the median's 95% confidence interval is within +-this percent, 0 (time until --max-time-ms) .. 100")
      ("sim-delay-ms", po::value(&sim_delay_ms)->default_value(0), "sim and replay devices: wait this long per measurement, as a GPU would (testing and benchmarking the loop), 0 .. 60000")
      ("inject-fault", po::value(&faults_text)->default_value(""), "testing: crash:INDEX,hang:INDEX makes those configs crash or hang the worker")
      ("mpi", "run under mpirun: rank 0 tunes and keeps the database, every other rank measures what it sends on its own GPU (see README)")
      ("quiet,q", "no progress line")
      ("json", "one JSON document on stdout");
  po::variables_map vm;
  if (!parse_options("tune", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }

  // Under mpirun every rank parses the same command; MPI starts first so that a bad value ends every rank.
  std::unique_ptr<mpi::Session> mpi_session;
  if (vm.count("mpi")) {
    if (!mpi::available()) throw UsageError("--mpi: this tuner was built without MPI; install libopenmpi-dev and rebuild");
    mpi_session = std::make_unique<mpi::Session>();
  }

  // Validate everything before the database is touched.
  TuneOptions opt;
  const templates::KernelTemplate* tmpl = nullptr;
  // An empty --device took the default device without a word (a script's unset variable tuned the wrong GPU).
  if (!vm["device"].defaulted() && device_spec.empty())
    throw UsageError("--device '' is empty; allowed: cuda:N, cuda:all, sim:<gpu> or replay:FILE (leave it out for "
                     "the default)");
  try {
    if (!kernel_path.empty() || !spec_path.empty()) {
      // A user kernel: registered as a template named by its spec, then tuned like any other.
      if (kernel_path.empty() || spec_path.empty()) throw std::invalid_argument("--kernel and --spec go together");
      if (!op.empty() || !vm["template"].defaulted() || !vm["dtype"].defaulted())
        throw std::invalid_argument("--op, --template and --dtype come from the spec with --kernel; leave them out");
      const auto& user = templates::register_user_kernel(kernel_path, spec_path, shape);
      op = user.op();
      template_name = user.name();
      opt.workload = user.workload();
    } else {
      if (op.empty() && vm.count("op") && !vm["op"].defaulted())
        throw std::invalid_argument("--op '' is empty; allowed: gemm, batched_gemm, conv2d, softmax, layernorm "
                                    "(or --kernel and --spec for your own kernel)");
      if (op.empty() || shape.empty())
        throw std::invalid_argument(vm.count("shape") && !vm["shape"].defaulted() && shape.empty()
                                        ? "--shape '' is empty; allowed: the op's sizes, e.g. --shape M=1024,N=1024,K=1024"
                                        : "--op and --shape are required (or --kernel and --spec)");
      opt.workload = templates::parse_workload(op, shape, dtype);
    }
    if (template_name.empty())
      throw std::invalid_argument("--template '' names no template; allowed: auto or a template's name (README: what can be tuned)");
    if (template_name == "auto") template_name.clear();
    try {
      tmpl = &templates::find_template(op, opt.workload.dtype, nullptr, template_name);
    } catch (const std::invalid_argument&) {
      // An unknown name: list what the named device runs (an A100's list has no gemm_tc_wgmma), where it resolves.
      std::optional<DeviceTarget> d;
      try {
        d = resolve_devices(device_spec.empty() ? default_device() : device_spec).front();
      } catch (const std::exception&) {
      }
      if (d) templates::find_template(op, opt.workload.dtype, &d->limits, template_name);  // throws the device's list
      throw;
    }
    search::check_strategy_name(strategy);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  {
    auto [end, ec] = std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), seed);
    if (seed_text.empty() || ec != std::errc() || end != seed_text.data() + seed_text.size())
      throw UsageError("--seed '" + seed_text + "' is not an integer in 0 .. 18446744073709551615");
  }
  const bool all_trials = trials_text == "all";
  if (!all_trials) {
    auto [end, ec] = std::from_chars(trials_text.data(), trials_text.data() + trials_text.size(), trials);
    if (trials_text.empty() || ec != std::errc() || end != trials_text.data() + trials_text.size() || trials < 0)
      throw UsageError("--trials '" + trials_text + "' is not allowed; allowed: an integer 0 or more, or 'all'");
  }
  if (remeasure < 0 || remeasure > 1000)
    throw UsageError("--remeasure " + std::to_string(remeasure) + " is out of range; allowed: 0 (off) .. 1000");
  if (batch < 1 || batch > 65536)
    throw UsageError("--batch " + std::to_string(batch) + " is out of range; allowed: 1 .. 65536");
  if (!(sim_delay_ms >= 0 && sim_delay_ms <= 60000))
    throw UsageError("--sim-delay-ms " + as_given(sim_delay_ms) + " is out of range; allowed: 0 .. 60000");
  if (!(db_timeout_s >= 0 && db_timeout_s <= 86400))
    throw UsageError("--db-timeout " + as_given(db_timeout_s) + " is out of range; allowed: 0 .. 86400 seconds");
  if (transfer != "auto" && transfer != "none") throw UsageError("--transfer '" + transfer + "'; allowed: auto, none");
  if (prior != "auto" && prior != "compiled" && prior != "analytic" && prior != "none")
    throw UsageError("--prior '" + prior + "' is not allowed; allowed: auto, compiled, analytic, none");
  // Only xgb ranks a first batch and learns from other records: given to another strategy they did nothing.
  // `auto`, the default, means "where the strategy has one", so a script may pass it with any strategy.
  for (const char* flag : {"prior", "transfer"})
    if (vm.count(flag) && !vm[flag].defaulted() && vm[flag].as<std::string>() != "auto" && strategy != "xgb")
      throw UsageError(std::string("--") + flag + " " + vm[flag].as<std::string>() + " is for --strategy xgb; --strategy " +
                       strategy + " has no " + (flag == std::string("prior") ? "first-batch prior" : "transfer") +
                       "; allowed: drop --" + flag + ", or --strategy xgb");
  if (early_stop < 0) throw UsageError("--early-stop " + std::to_string(early_stop) + " is negative; allowed: 0 (off) or more");
  if (!(min_improvement_pct >= 0 && min_improvement_pct <= 1000))
    throw UsageError("--min-improvement " + as_given(min_improvement_pct) + " is out of range; allowed: 0 (off) .. 1000 (%)");
  if (min_improvement_pct > 0 && all_trials)
    throw UsageError("--min-improvement " + as_given(min_improvement_pct) +
                     " cannot stop --trials all, which measures every config; allowed with a trial count");
  if (min_improvement_pct > 0 && strategy != "xgb" && strategy != "bo")
    throw UsageError("--min-improvement needs a strategy that estimates its next batch's gain; --strategy " + strategy +
                     " makes no estimate; allowed: xgb, bo");
  if (!(timeout_s > 0 && timeout_s <= 3600))
    throw UsageError("--timeout " + as_given(timeout_s) + " is out of range; allowed: more than 0, at most 3600 seconds");
  if (!(min_time_ms >= 0 && min_time_ms <= 60000))
    throw UsageError("--min-time-ms " + as_given(min_time_ms) + " is out of range; allowed: 0 .. 60000");
  // A --min-time-ms above the default cap raises the cap with it: the user asked for at least that much.
  if (vm["max-time-ms"].defaulted() && min_time_ms > max_time_ms) max_time_ms = min_time_ms;
  if (!(max_time_ms >= min_time_ms && max_time_ms <= 60000))
    throw UsageError("--max-time-ms " + as_given(max_time_ms) + " is out of range; allowed: --min-time-ms (" +
                     as_given(min_time_ms) + ") .. 60000");
  if (!(max_noise_pct >= 0 && max_noise_pct <= 100))
    throw UsageError("--max-noise " + as_given(max_noise_pct) + " is out of range; allowed: 0 (off) .. 100 percent");
  if (threads < 0 || threads > 256) throw UsageError("--compile-threads " + std::to_string(threads) + " is out of range; allowed: 0 .. 256");
  DeviceTarget device;
  std::vector<DeviceTarget> all_devices;
  try {
    all_devices = resolve_devices(device_spec.empty() ? default_device() : device_spec);
    device = all_devices.front();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (workers < 1 || workers > 64)
    throw UsageError("--workers " + std::to_string(workers) + " is out of range; allowed: 1 .. 64");
  if (workers > 1 && !device.simulated)
    throw UsageError("--workers is for sim: and replay: devices; for GPUs list them: --device cuda:all or cuda:0,1");
  if (device.replay) {
    // The workload first: a replay file answers only for the workload it recorded.
    const auto& r = *device.replay;
    const std::string want = opt.workload.op + " " + opt.workload.shape_string() + " " +
                             templates::to_string(opt.workload.dtype);
    const std::string have = r.op + " " + r.shape + " " + r.dtype;
    if (want != have)
      throw UsageError("replay file '" + r.path + "' records " + have + ", not " + want +
                       "; allowed: the workload it recorded");
    // It answers for the template it recorded; otherwise the op's default for the device.
    if (template_name.empty()) template_name = r.template_name;
  }
  // --template auto: every template that runs this workload on this device shares the budget.
  std::vector<std::string> auto_templates;
  if (template_name.empty())
    for (const auto* t : templates::templates_for(op, opt.workload.dtype, device.limits))
      if (!t->unsupported(opt.workload)) auto_templates.push_back(t->name());
  if (auto_templates.size() == 1) template_name = auto_templates.front();  // the one that runs it
  if (auto_templates.size() < 2) {
    auto_templates.clear();
  } else {
    std::string names;
    for (const auto& n : auto_templates) names += (names.empty() ? "" : ", ") + n;
    const char* one_only = all_trials ? "--trials all" : !replay_out.empty() ? "--replay-out" : !faults_text.empty() ? "--inject-fault" : nullptr;
    if (one_only)
      throw UsageError(std::string(one_only) + " works on one template's space; this workload has several (" + names +
                       "): name one with --template");
  }
  try {
    tmpl = &templates::find_template(op, opt.workload.dtype, &device.limits,
                                     auto_templates.empty() ? template_name : auto_templates.front());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (auto why = tmpl->unsupported(opt.workload)) throw UsageError(*why);
  // What the worker holds cannot exceed the device's memory (a sim device estimated it): the operands and result,
  // a copy of the reference's result to check against, and the L2 flush buffer (twice the L2). (A config writing an
  // f16 GEMM's C in f32, OUT_F32, needs twice the result's bytes more; where that does not fit, it fails alone.)
  const auto* user = dynamic_cast<const templates::UserKernelTemplate*>(tmpl);
  const double buffers = user ? user->buffer_bytes(opt.workload) : templates::compulsory_bytes(opt.workload);
  const double result = user ? user->output_bytes(opt.workload)
                             : templates::output_elements(opt.workload) * templates::dtype_bytes(opt.workload.dtype);
  const double needs = buffers + result + 2 * static_cast<double>(device.gpu.l2_bytes);
  if (device.identity.memory_bytes > 0 && needs > static_cast<double>(device.identity.memory_bytes))
    throw UsageError(opt.workload.to_string() + " needs " + fixed(needs / 1e9, 1) + " GB on the GPU (its " +
                     (user ? "buffers" : "operands and result") + " " + fixed(buffers / 1e9, 1) +
                     " GB, a reference copy of the result and the L2 flush buffer); " + device.spec + " has " +
                     fixed(static_cast<double>(device.identity.memory_bytes) / 1e9, 1) + " GB; allowed: a shape whose " +
                     (user ? "buffers" : "operands and result") + " fit with those");
  opt.template_name = tmpl->name();
  if (vm.count("fix") && !vm["fix"].defaulted()) {
    if (fix_text.empty()) throw UsageError("--fix '' names no knob; allowed: a comma-separated list such as BM=128,STAGES=4");
    if (!auto_templates.empty())
      throw UsageError("--fix pins one template's knobs; this workload has several templates: name one with --template");
    opt.fixed_knobs = parse_fixed_knobs(fix_text);
  }
  if (device.replay && device.replay->template_name != tmpl->name())
    throw UsageError("replay file '" + device.replay->path + "' records template " + device.replay->template_name +
                     ", not " + tmpl->name());
  // Enumerating a space takes a while (the f32 GEMM's has 120k configs) and the session does it again:
  // only what must know the size before the session asks for it here.
  uint64_t space_size = 0;
  const bool user_kernel = !kernel_path.empty();
  if (all_trials || !faults_text.empty() || !opt.fixed_knobs.empty() || user_kernel) {
    search::ConfigSpace space = tmpl->space(opt.workload, device.limits);
    // A spec whose knobs leave nothing to launch has nothing to tune: bad input, not an empty session.
    if (user_kernel && space.size() == 0) {
      // A launch expression that fails for every config (a grid dividing by zero) is named as such.
      const auto* user = dynamic_cast<const templates::UserKernelTemplate*>(tmpl);
      if (const auto why = user ? user->launch_error(opt.workload) : std::nullopt)
        throw UsageError("--spec " + spec_path + ": the launch of " + tmpl->name() + " cannot be computed: " + *why +
                         "; allowed: launch expressions that evaluate for the knobs' values");
      // At sizes --shape gave, the sizes are the likelier culprit than the spec (R % TILE == 0 at R=3000).
      throw UsageError((shape.empty() ? "--spec " + spec_path + ": no config of "
                                      : "--shape " + shape + " (spec " + spec_path + "): no config of ") +
                       tmpl->name() + " meets the spec's constraints and " + device.spec + "'s limits" +
                       (shape.empty() ? "" : " at " + opt.workload.shape_string()) + " (" +
                       (user ? user->no_config_reason(opt.workload, device.limits) : "") + "); allowed: " +
                       (shape.empty() ? "knob values that leave at least one launchable config"
                                      : "sizes at which some config meets them, or knob values that do"));
    }
    if (user_kernel && !device.replay) check_user_reference_compiles(*tmpl, space, opt.workload, device, kernel_path);
    // A replay device answers for the configs it recorded: the session's space is those.
    // (Also without --fix: `--trials all` is the recorded configs, not the template's whole space.)
    if (device.replay) space = recorded_space(space, *device.replay);
    if (!opt.fixed_knobs.empty()) {
      search::ConfigSpace fixed = [&] {
        try {
          return search::with_knobs_fixed(space, opt.fixed_knobs);
        } catch (const std::invalid_argument& e) {
          throw UsageError("--fix " + fix_text + ": " + e.what());
        }
      }();
      const search::ConfigSpace& whole = space;  // (the messages below name what it takes)
      if (fixed.size() == 0 && whole.size() == 0)
        throw UsageError("--fix " + fix_text + ": " + tmpl->name() + " has no config" +
                         (device.replay ? " recorded in '" + device.replay->path + "' that this build's space holds"
                                        : std::string(" for this workload and device")) +
                         " to fix; allowed: a workload or recording with configs");
      if (fixed.size() == 0) {
        // Name what this workload's configs do take of each pinned knob (SPLIT_K is 1 only at some shapes): "a value
        // that meets the constraints" left the user to guess.
        std::vector<std::set<int64_t>> taken(opt.fixed_knobs.size());
        std::vector<size_t> index;
        for (const auto& [name, value] : opt.fixed_knobs) index.push_back(whole.knob_index(name));
        for (uint64_t i = 0; i < whole.size(); ++i) {
          const search::Config c = whole.at(i);
          for (size_t k = 0; k < index.size(); ++k) taken[k].insert(c[index[k]]);
        }
        std::string allowed;
        for (size_t k = 0; k < index.size(); ++k) {
          std::string values;
          for (int64_t v : taken[k]) values += (values.empty() ? "" : ", ") + std::to_string(v);
          allowed += (allowed.empty() ? "" : "; ") + opt.fixed_knobs[k].first + " in {" + values + "}";
        }
        throw UsageError("--fix " + fix_text + ": no config of " + tmpl->name() +
                         (device.replay ? " recorded in '" + device.replay->path + "'" : std::string(" for this workload and device")) +
                         " has these values together; allowed: " + allowed +
                         " (each alone; together, values that meet its constraints: README, what can be tuned)");
      }
      space = std::move(fixed);
    }
    space_size = space.size();
  }
  opt.faults = parse_faults(faults_text, space_size);
  if (all_trials) {
    trials = static_cast<int64_t>(space_size);
    if (replay_out.empty()) {
      // The default names the whole workload (dtype and template too) and never replaces a file: a recording may
      // have taken an hour of a GPU. An existing name gets -2, -3, ... before the extension.
      // A replay device is named by the GPU it recorded ("replay:NVIDIA H200"), not by the path typed.
      std::string stem = opt.workload.op + "_" + opt.workload.shape_string() + "_" +
                         templates::to_string(opt.workload.dtype) + "_" + tmpl->name() + "_" +
                         (device.replay ? device.identity.name : device.spec);
      for (char& ch : stem)
        if (ch == ':' || ch == ',' || ch == '=' || ch == '/' || ch == ' ') ch = '_';
      replay_out = unused_name(stem, ".replay.json");
    }
  }
  if (!replay_out.empty()) {
    refuse_output_over_db("--replay-out", replay_out, db_path);
    // Written over the recording the session replays, it would replace a whole-space recording (hours of a GPU)
    // by the few configs this session asked for.
    if (device_spec.rfind("replay:", 0) == 0 && same_file(replay_out, device_spec.substr(7)))
      throw UsageError("--replay-out '" + replay_out + "' is the recording --device " + device_spec +
                       " replays; writing it would replace the recording; allowed: another file");
    // Checked before anything is measured or stored: a replay file that cannot be written would otherwise fail
    // after the whole run, its trials committed and no summary printed.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path parent = fs::path(replay_out).parent_path();
    if (fs::is_directory(replay_out, ec))
      throw UsageError("--replay-out '" + replay_out + "' is a folder; allowed: a file path");
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw UsageError("--replay-out '" + replay_out + "': folder '" + parent.string() + "' does not exist");
    const std::string probe_path = replay_out + ".probe";  // the folder must take a file beside it
    const bool existed = fs::exists(probe_path, ec);
    if (!std::ofstream(probe_path, std::ios::app))
      throw UsageError("--replay-out '" + replay_out + "' cannot be written here (" + std::strerror(errno) +
                       "); allowed: a file in a folder you can write");
    if (!existed) fs::remove(probe_path, ec);
    // Nor a file the user may not write (the write refuses it, not replaces it: tuner/atomic_file.h).
    if (fs::exists(replay_out, ec) && !fs::is_symlink(replay_out, ec) && fs::is_regular_file(replay_out, ec) &&
        ::access(replay_out.c_str(), W_OK) != 0)
      throw UsageError("--replay-out '" + replay_out + "': " + std::strerror(errno) + "; allowed: a writable file path");
  }
  opt.trials = trials;
  opt.remeasure_top = remeasure;
  opt.strategy = strategy;
  opt.prior = prior;
  opt.seed = seed;
  opt.batch_size = static_cast<size_t>(batch);
  opt.db_patience_s = db_timeout_s;
  if (sim_delay_ms > 0 && !device.simulated)
    throw UsageError("--sim-delay-ms is for sim: and replay: devices, not " + device.spec);
  opt.sim_delay_ms = sim_delay_ms;
  if (all_devices.size() > 1)
    for (const auto& d : all_devices) opt.measure_devices.push_back(d.spec);
  else if (workers > 1)
    opt.measure_devices.assign(static_cast<size_t>(workers), device.spec);
  opt.compile_threads = static_cast<unsigned>(threads);
  opt.run_timeout_s = timeout_s;
  opt.early_stop = early_stop;
  opt.min_expected_improvement = min_improvement_pct / 100.0;
  opt.transfer = transfer == "auto";
  opt.settings.min_time_ms = min_time_ms;
  opt.settings.max_time_ms = max_time_ms;
  opt.settings.max_noise = max_noise_pct / 100.0;
  opt.command_line = "tuner tune";
  for (const auto& a : args) opt.command_line += " " + a;
  const bool json = vm.count("json") != 0;
  if (!vm.count("quiet") && isatty(STDERR_FILENO)) opt.on_progress = print_progress;

  if (mpi_session && mpi_session->rank() > 0)  // a measuring rank: no database, no search
    return mpi::serve(*mpi_session, opt.worker_executable.empty() ? default_worker_executable() : opt.worker_executable);
  if (mpi_session) {
    if (mpi_session->size() < 2) throw UsageError("--mpi with one rank; run it under mpirun -np N with N >= 2");
    if (device.replay) throw UsageError("--mpi measures on the ranks' devices; a replay: device needs none");
    // A rank is lost when it has not answered within a request's timeout plus a startup allowance (on a
    // GPU as a local worker's: a fresh context, the workload's inputs and reference) plus a margin.
    opt.remote_lanes = device.simulated ? mpi::remote_lanes(*mpi_session, 1.0, 2.0) : mpi::remote_lanes(*mpi_session, 60.0, 10.0);
  }

  std::unique_ptr<db::TuningDb> db;
  try {
    db = std::make_unique<db::TuningDb>(db_path);
  } catch (const db::DbError& e) {
    if (e.bad_input()) throw UsageError(e.what());
    throw;
  }
  TuneSummary sum;
  std::vector<TuneSummary> sessions;  // one per template with --template auto
  try {
    if (auto_templates.empty()) {
      sum = run_tuning(opt, device, *db);
    } else {
      sessions = run_template_auto(opt, auto_templates, device, *db);
      sum = combine_summaries(sessions, opt.trials);
    }
  } catch (...) {
    if (mpi_session && mpi::stop_all(opt.remote_lanes)) mpi_session->skip_finalize();
    throw;
  }
  if (mpi_session && mpi::stop_all(opt.remote_lanes)) mpi_session->skip_finalize();
  if (opt.on_progress) std::fprintf(stderr, "\n");
  // This workload's records on this device under the template version the run stored them under.
  const auto session_records = [&] {
    tuner::db::QueryFilter f;
    f.op = opt.workload.op;
    f.shape = opt.workload.shape_string();
    f.dtype = templates::to_string(opt.workload.dtype);
    f.device_name = device.identity.name;
    f.simulated = device.simulated;
    f.template_hashes = {sum.template_hash};
    return f;
  };
  if (!replay_out.empty()) {
    // Re-recorded from a replay device, the file names the GPU and the template version that measured the times
    // (not "replay:<GPU>", which a replay of this file would prefix again, nor this build's version).
    ReplayData data = replay_from_rows(db->history(session_records()), device.replay ? device.replay->device : device.identity,
                                       device.gpu.key, sum.space_size);
    if (device.replay) data.template_version = device.replay->template_version;
    std::error_code ec;
    if (data.records.empty()) {
      // Interrupted before a measurement: an empty recording cannot be replayed, and a file already there (a named
      // --replay-out) stays as it was.
      std::cerr << "tuner: nothing was measured: no replay data written"
                << (std::filesystem::exists(replay_out, ec) ? " ('" + replay_out + "' is left as it was)" : "") << "\n";
      replay_out.clear();
    } else {
      if (sum.interrupted && std::filesystem::exists(replay_out, ec)) {
        // A part of the space never replaces a recording already there (it may be a whole one): beside it instead.
        // Before the extension, .replay.json counted as one: x.replay.json -> x-partial.replay.json.
        const std::filesystem::path p(replay_out);
        std::string ext = p.extension().string();
        std::string base = (p.parent_path() / p.stem()).string();
        if (ext == ".json" && base.size() > 7 && base.compare(base.size() - 7, 7, ".replay") == 0) {
          base.resize(base.size() - 7);
          ext = ".replay.json";
        }
        replay_out = unused_name(base + "-partial", ext);
      }
      write_replay(data, replay_out);
      if (!json)
        std::cout << "replay data: " << data.records.size() << " of " << sum.space_size << " configs written to "
                  << replay_out << (sum.interrupted ? " (interrupted: a part of the space)" : "") << "\n";
    }
  }

  if (json) {
    nlohmann::ordered_json j;
    j["session_id"] = sum.session_id;
    j["op"] = opt.workload.op;
    j["shape"] = opt.workload.shape_string();
    j["dtype"] = templates::to_string(opt.workload.dtype);
    j["device"] = device.identity.name;
    j["estimate"] = device.estimates();
    j["template"] = sum.template_name;
    j["template_version"] = sum.template_hash;
    // On a replay of an older kernel's recording: today's version, which the records are not stored under.
    if (!sum.current_template_hash.empty()) j["current_template_version"] = sum.current_template_hash;
    j["strategy"] = opt.strategy;
    j["seed"] = opt.seed;
    j["space_size"] = sum.space_size;
    j["budget"] = trials;
    j["previously_measured"] = sum.previously_measured;
    j["measured"] = sum.measured_now;
    j["errors"] = sum.errors_now;
    j["compiled_from_cache"] = sum.compiled_from_cache;
    j["prior_compiles"] = sum.prior_compiles;
    j["prior_compile_s"] = sum.prior_compile_s;
    j["transferred"] = sum.transferred;
    j["remeasured"] = sum.remeasured;
    j["started_from_model"] = sum.started_from_model;
    j["saved_model"] = sum.saved_model;
    if (!replay_out.empty()) j["replay_out"] = replay_out;
    j["workers"] = opt.measure_devices.empty() ? 1 : static_cast<int>(opt.measure_devices.size());
    j["worker_starts"] = sum.worker_starts;
    j["lanes"] = nlohmann::ordered_json::array();
    for (const auto& l : sum.lanes)
      j["lanes"].push_back({{"device", l.device}, {"where", l.where}, {"measured", l.measured}, {"lost", l.lost}});
    j["wall_s"] = sum.wall_s;
    j["configs_per_s"] = sum.wall_s > 0 ? static_cast<double>(sum.measured_now + sum.remeasured) / sum.wall_s : 0.0;
    j["phases"] = to_json(sum.phases);
    j["measured_by_others"] = sum.measured_by_others;
    j["interrupted"] = sum.interrupted;
    j["stop_signal"] = sum.stop_signal;
    j["early_stopped"] = sum.early_stopped;
    j["expected_improvement"] =
        sum.expected_improvement >= 0 ? nlohmann::json(sum.expected_improvement) : nlohmann::json(nullptr);
    j["stop_reason"] = sum.stop_reason;
    j["best"] = sum.best ? record_json(*sum.best) : nlohmann::ordered_json(nullptr);
    // The type the best config writes its output in, as query --best and export --format best name it (an f16
    // GEMM's fastest config may write C in f32).
    if (sum.best)
      if (const auto out = output_dtype_of(*sum.best)) j["best"]["output_dtype"] = *out;
    if (!sessions.empty()) j["templates"] = template_sessions_json(sessions);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "tuned " << opt.workload.to_string() << " on " << device.spec
              << (device.estimates() ? (device.replay ? " (times are a sim device's recorded estimates, replayed)" : " (times are analytic estimates)") : device.replay ? " (times are a GPU's recorded measurements, replayed)" : "") << "\n";
    if (sessions.empty())
      std::cout << "  template " << sum.template_name << " @" << sum.template_hash << ", " << sum.space_size
                << " valid configs\n";
    if (!sum.current_template_hash.empty())
      std::cout << "  the recording measured version @" << sum.template_hash << " of " << sum.template_name
                << " (today's is @" << sum.current_template_hash
                << "): its records are stored under that version, so `query --all-versions` shows them and the "
                   "runtime, which takes today's kernels, does not use them\n";
    for (const auto& s : sessions)
      std::cout << "  template " << s.template_name << " @" << s.template_hash << ", " << s.space_size
                << " valid configs: session " << s.session_id << ", " << s.measured_now << " trials measured now, best "
                << (s.best ? fixed(s.best->trial.time_ms, 4) + " ms" : std::string("none")) << "\n";
    std::string ids = std::to_string(sum.session_id);
    if (!sessions.empty()) {
      ids.clear();
      for (const auto& x : sessions) ids += (ids.empty() ? "" : ", ") + std::to_string(x.session_id);
    }
    std::cout << (sessions.size() > 1 ? "  sessions " : "  session ") << ids << ": " << sum.measured_now << " trials measured now ("
              << sum.errors_now << " failed), " << sum.previously_measured << " already in " << db_path << ", "
              << sum.compiled_from_cache << " compiled from cache, " << sum.remeasured << " finalists re-measured, "
              << fixed(sum.wall_s, 1) << " s"
              << (sum.interrupted ? ", interrupted" : "") << (sum.early_stopped ? ", stopped early" : "")
              << (sum.stop_reason.empty() ? "" : " (" + sum.stop_reason + ")") << "\n";
    if (sum.prior_compiles > 0)
      std::cout << "  first batch ranked by the analytic model with the compiled resources of its best "
                << sum.prior_compiles << " configs (" << fixed(sum.prior_compile_s, 1) << " s compiling)\n";
    for (const auto& l : sum.lanes)
      if (l.lost) std::cout << "  " << l.where << " stopped answering; its config in flight went to another lane\n";
    if (sum.measured_by_others > 0)
      std::cout << "  " << sum.measured_by_others << " trials measured meanwhile by other processes sharing " << db_path
                << " (the budget is shared)\n";
    std::cout << "  time: " << phases_line(sum.phases) << "\n";
    if (sum.best) {
      const auto& t = sum.best->trial;
      // Memory-bound ops and user kernels are judged by bandwidth too.
      const double bandwidth = gbps(*sum.best);
      std::cout << "  best: " << fixed(t.time_ms, 4) << " ms, " << fixed(t.gflops, 1) << " GFLOP/s"
                << (bandwidth > 0 ? ", " + fixed(bandwidth, 1) + " GB/s" : "") << (t.estimate ? " (estimate)" : "")
                << writes_note(*sum.best) << "  " << t.config_json << "\n";
    } else {
      // Say why: every trial failed the same way, as often (a user kernel not declared extern "C" fails to compile
      // in every config), and the reason was only in `query --history --json`.
      std::map<std::string, int> by_status;
      std::string last_error;
      for (const auto& r : db->history(session_records())) {
        ++by_status[r.trial.status];
        if (!r.trial.error_message.empty()) last_error = r.trial.error_message;
      }
      std::string counts;
      for (const auto& [status, n] : by_status) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + status;
      // The error's last non-empty line says most (compiler logs end with the error).
      while (!last_error.empty() && (last_error.back() == '\n' || last_error.back() == ' ')) last_error.pop_back();
      if (const size_t nl = last_error.rfind('\n'); nl != std::string::npos) last_error = last_error.substr(nl + 1);
      if (last_error.size() > 240) last_error = last_error.substr(0, 240) + "...";
      std::cout << "  best: no successful trial yet" << (counts.empty() ? "" : " (" + counts + ")") << "\n";
      if (!last_error.empty()) std::cout << "  last error: " << last_error << "\n";
    }
  }
  // As shells expect of a program stopped by a signal: 130 for SIGINT, 143 for SIGTERM.
  return sum.interrupted && sum.stop_signal > 0 ? 128 + sum.stop_signal : 0;
}

}  // namespace tuner::cli
