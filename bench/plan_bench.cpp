// Benchmark of the parallel planner (not a test): for each model and cluster,
// the time `tuner plan` takes and the throughput of its plan, beside the best
// of a grid of hand-written configurations evaluated by the same cost model --
// tp x pp x dp with tp, pp powers of two (tp <= 8) and dp the rest of the GPUs,
// micro-batch 1, 2 or 4, no/selective/full recomputation, 1F1B, ZeRO-1,
// layers split evenly as such configurations are written. The planner searches
// a superset of the grid, so its throughput must never be lower; the program
// checks that and exits 1 if it is. Then the planner's scale: planning time of a GPT of 100, 300 and
// 1,000 identical layers on 16 and 1,024 GPUs, a 1,000-layer GPT of hidden 4096 on 1,024 GPUs and Llama-3
// 405B on 16,384 GPUs. Last, the calibration table: each published run of
// calibration_runs.h, published and predicted iteration time, and the held-out runs. Prints tables and writes results/plan_bench.json.
//
//   build/bin/plan_bench [--out results/plan_bench.json] [--calibration-only 1]
//
// --calibration-only 1 prints only the calibration and held-out tables (a few seconds) and writes them to
// results/plan_bench_calibration.json unless --out says otherwise (the full benchmark's file is left alone).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/parallel/calibration_runs.h"
#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/planner.h"

using namespace tuner::parallel;

namespace {

struct Case {
  std::string label, model, cluster;
  int64_t global_batch;
};

struct GridBest {
  std::optional<Plan> plan;
  int evaluated = 0;
};

GridBest best_grid(Planner& planner) {
  GridBest g;
  const int N = planner.cluster().total_gpus();
  const int L = static_cast<int>(planner.model().layers.size());
  for (int tp = 1; tp <= 8 && tp <= planner.cluster().gpus_per_node; tp *= 2)
    for (int pp = 1; pp <= L; pp *= 2) {
      if (N % (tp * pp) != 0) continue;
      for (int mbs : {1, 2, 4})
        for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
          ParallelConfig c;
          c.tp = tp, c.pp = pp, c.dp = N / (tp * pp), c.micro_batch = mbs;
          c.schedule = Schedule::k1F1B, c.recompute = r, c.zero = 1;
          ++g.evaluated;
          auto p = planner.evaluate(c, true);
          if (p && (!g.plan || p->tokens_per_s > g.plan->tokens_per_s)) g.plan = std::move(p);
        }
    }
  return g;
}

std::string short_config(const ParallelConfig& c) {
  std::string s = "tp" + std::to_string(c.tp) + (c.cp > 1 ? " cp" + std::to_string(c.cp) : "") +
                  (c.ep > 1 ? " ep" + std::to_string(c.ep) : "") + " pp" + std::to_string(c.pp) + " dp" +
                  std::to_string(c.dp) + " mbs" + std::to_string(c.micro_batch) + " " + to_string(c.schedule);
  if (c.schedule == Schedule::kInterleaved) s += std::to_string(c.virtual_stages);
  return s + " rc:" + to_string(c.recompute) + " z" + std::to_string(c.zero);
}

}  // namespace

void write_results(const std::string& out, const nlohmann::ordered_json& results) {
  std::filesystem::create_directories(std::filesystem::path(out).parent_path().empty()
                                          ? std::filesystem::path(".")
                                          : std::filesystem::path(out).parent_path());
  std::ofstream(out) << results.dump(2) << "\n";
}

/// The calibration table (the runs the cost model was fitted to) and the held-out table (Narayanan et al. 2021:
/// with the reviewers' pins and the rest planned, and with the configuration the runs used); docs/calibration.md.
std::vector<nlohmann::ordered_json> calibration_results() {
  std::printf("\ncalibration (default cost parameters)\n%-30s %10s %10s %8s\n", "run", "published", "predicted",
              "error");
  nlohmann::ordered_json calib = nlohmann::ordered_json::array();
  double worst = 0;
  for (const PublishedRun& run : calibration_runs()) {
    const RunPrediction p = predict_run(run);
    worst = std::max(worst, std::fabs(p.error));
    std::printf("%-30s %9.2fs %9.2fs %+7.1f%%\n", run.label.c_str(), run.iteration_time_s, p.predicted_s,
                100 * p.error);
    calib.push_back({{"run", run.label}, {"source", run.source}, {"model", run.model}, {"cluster", run.cluster},
                     {"fix", run.fix}, {"published_s", run.iteration_time_s}, {"predicted_s", p.predicted_s},
                     {"error", p.error}});
  }
  std::printf("worst |error| %.1f%%\n", 100 * worst);
  std::printf("\nheld-out (not fitted): planned with --fix tp,pp,dp,recompute, and with the published configuration\n"
              "%-28s %9s %9s %7s  %-44s %9s %7s\n",
              "run", "published", "planned", "error", "planned config", "pub.cfg", "error");
  nlohmann::ordered_json held = nlohmann::ordered_json::array();
  int within = 0, within_cfg = 0;
  for (const PublishedRun& run : held_out_runs()) {
    const RunPrediction p = predict_run(run), q = predict_run(run, {}, true);
    within += std::fabs(p.error) <= 0.10, within_cfg += std::fabs(q.error) <= 0.10;
    std::printf("%-28s %8.2fs %8.2fs %+6.1f%%  %-44s %8.2fs %+6.1f%%\n", run.label.c_str(), run.iteration_time_s,
                p.predicted_s, 100 * p.error, p.config.c_str(), q.predicted_s, 100 * q.error);
    held.push_back({{"run", run.label}, {"model", run.model}, {"cluster", run.cluster}, {"fix", run.fix},
                    {"published_config", run.published_config}, {"published_s", run.iteration_time_s},
                    {"planned_s", p.predicted_s}, {"planned_config", p.config}, {"error", p.error},
                    {"published_config_s", q.predicted_s}, {"published_config_error", q.error}});
  }
  const int n = static_cast<int>(held_out_runs().size());
  std::printf("within 10%%: planned %d of %d, published configuration %d of %d\n", within, n, within_cfg, n);

  std::printf("\nheld-out FSDP (llm-foundry MPT on 8 A100-80GB, not fitted): the published configuration\n"
              "%-28s %9s %9s %7s  %-44s\n", "run", "published", "predicted", "error", "config");
  nlohmann::ordered_json fsdp = nlohmann::ordered_json::array();
  int fsdp_within = 0;
  for (const PublishedRun& run : fsdp_held_out_runs()) {
    const RunPrediction q = predict_run(run, {}, true);
    fsdp_within += std::fabs(q.error) <= 0.10;
    std::printf("%-28s %8.2fs %8.2fs %+6.1f%%  %-44s\n", run.label.c_str(), run.iteration_time_s, q.predicted_s,
                100 * q.error, q.config.c_str());
    fsdp.push_back({{"run", run.label}, {"source", run.source}, {"model", run.model}, {"cluster", run.cluster},
                    {"fix", run.fix + "," + run.published_config}, {"published_s", run.iteration_time_s},
                    {"predicted_s", q.predicted_s}, {"error", q.error}, {"note", run.note}});
  }
  const int nf = static_cast<int>(fsdp_held_out_runs().size());
  std::printf("within 10%%: %d of %d\n", fsdp_within, nf);
  return {{{"label", "calibration"}, {"runs", calib}, {"worst_abs_error", worst}},
          {{"label", "held-out"}, {"runs", held}, {"within_10pct", within}, {"within_10pct_published_config", within_cfg}},
          {{"label", "held-out-fsdp"}, {"runs", fsdp}, {"within_10pct", fsdp_within}}};
}

int main(int argc, char** argv) {
  std::string out;
  bool calibration_only = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
    else if (std::strcmp(argv[i], "--calibration-only") == 0) calibration_only = std::strcmp(argv[i + 1], "0") != 0;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const std::vector<Case> cases = {
      {"GPT-3 175B", "gpt3-175b", "dgx-h100:128", 1536},
      {"Llama-3 70B", "llama3-70b", "dgx-h100:8", 512},
      {"GPT 1T", "gpt:layers=128,hidden=25600,heads=160,seq=2048,vocab=51200", "dgx-a100:384", 3072},
      {"MoE 8x7B", "moe", "dgx-h100:8", 512},
  };
  if (out.empty()) out = calibration_only ? "results/plan_bench_calibration.json" : "results/plan_bench.json";
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  if (calibration_only) {
    for (auto& r : calibration_results()) results.push_back(std::move(r));
    write_results(out, results);
    return 0;
  }
  bool all_ok = true;
  std::printf("%-12s %-13s %5s %8s  %-38s %10s %6s  %-34s %10s %6s %6s\n", "model", "cluster", "GPUs", "plan s",
              "planner config", "tokens/s", "MFU", "best grid config", "tokens/s", "MFU", "ratio");
  for (const auto& c : cases) {
    const ModelGraph model = parse_model_spec(c.model);
    const ClusterSpec cluster = parse_cluster_spec(c.cluster);
    PlannerOptions opts;
    opts.global_batch = c.global_batch;
    Planner planner(model, cluster, opts);
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = planner.plan();
    const double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    GridBest grid = best_grid(planner);
    const double grid_tps = grid.plan ? grid.plan->tokens_per_s : 0;
    const double ratio = grid_tps > 0 ? plan.tokens_per_s / grid_tps : 0;
    const bool ok = plan.tokens_per_s >= grid_tps * (1 - 1e-12);
    all_ok = all_ok && ok;
    std::printf("%-12s %-13s %5d %8.2f  %-38s %10.0f %5.1f%%  %-34s %10.0f %5.1f%% %6.3f%s\n", c.label.c_str(),
                c.cluster.c_str(), cluster.total_gpus(), plan_s, short_config(plan.config).c_str(), plan.tokens_per_s,
                plan.mfu * 100, grid.plan ? short_config(grid.plan->config).c_str() : "(none fits)", grid_tps,
                grid.plan ? grid.plan->mfu * 100 : 0.0, ratio, ok ? "" : "  BELOW GRID");
    nlohmann::ordered_json r;
    r["label"] = c.label;
    r["model"] = c.model;
    r["cluster"] = c.cluster;
    r["gpus"] = cluster.total_gpus();
    r["global_batch"] = c.global_batch;
    r["planning_s"] = plan_s;
    r["configs_evaluated"] = plan.configs_evaluated;
    r["ilp_solves"] = plan.ilp_solves;
    r["planner"] = {{"config", describe(plan.config)},
                    {"partition", plan.partition},
                    {"iteration_time_s", plan.iteration_time_s},
                    {"tokens_per_s", plan.tokens_per_s},
                    {"tflops_per_gpu", plan.tflops_per_gpu},
                    {"mfu", plan.mfu},
                    {"peak_memory_bytes", plan.peak_memory_bytes}};
    r["grid"] = {{"configs_evaluated", grid.evaluated}};
    if (grid.plan)
      r["grid"].update({{"config", describe(grid.plan->config)},
                        {"iteration_time_s", grid.plan->iteration_time_s},
                        {"tokens_per_s", grid.plan->tokens_per_s},
                        {"tflops_per_gpu", grid.plan->tflops_per_gpu},
                        {"mfu", grid.plan->mfu},
                        {"peak_memory_bytes", grid.plan->peak_memory_bytes}});
    r["ratio"] = ratio;
    r["planner_not_below_grid"] = ok;
    results.push_back(r);
  }
  // Planner scale: planning time against the number of (identical) layers, then the two large cases
  // (a 1,000-layer GPT on 1,024 GPUs, Llama-3 405B on 16,384 GPUs), each as `tuner plan` runs it (global batch 1024).
  std::vector<std::pair<std::string, std::string>> scale_cases;
  for (const char* cluster_spec : {"dgx-h100:2", "dgx-h100:128"})
    for (int layers : {100, 300, 1000})
      scale_cases.push_back({"gpt:layers=" + std::to_string(layers) + ",hidden=1024,heads=16", cluster_spec});
  scale_cases.push_back({"gpt:layers=1000,hidden=4096,heads=32,seq=2048,vocab=51200", "dgx-h100:128"});
  scale_cases.push_back({"llama3-405b", "dgx-h100:2048"});
  std::printf("\nplanner scale (global batch 1024)\n%-58s %-13s %6s %8s %8s  %s\n", "model", "cluster", "GPUs",
              "configs", "plan s", "planner config");
  nlohmann::ordered_json scale = nlohmann::ordered_json::array();
  for (const auto& [model_spec, cluster_spec] : scale_cases) {
    const ModelGraph model = parse_model_spec(model_spec);
    const ClusterSpec cluster = parse_cluster_spec(cluster_spec);
    PlannerOptions opts;
    opts.global_batch = 1024;
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = Planner(model, cluster, opts).plan();
    const double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-58s %-13s %6d %8lld %8.2f  %s\n", model_spec.c_str(), cluster_spec.c_str(), cluster.total_gpus(),
                static_cast<long long>(plan.configs_evaluated), plan_s, short_config(plan.config).c_str());
    scale.push_back({{"model", model_spec},
                     {"layers", model.layers.size()},
                     {"cluster", cluster_spec},
                     {"gpus", cluster.total_gpus()},
                     {"planning_s", plan_s},
                     {"config", describe(plan.config)},
                     {"configs_evaluated", plan.configs_evaluated},
                     {"ilp_solves", plan.ilp_solves}});
  }
  results.push_back({{"label", "planner scale"}, {"cases", scale}});
  // Per-stage submeshes: the same search with every stage on the configuration's tp x dp, and with a shape per
  // stage (Alpa's submeshes), on models whose embedding or LM head weigh far more than a block, free and with the
  // pipeline depth pinned as a user with a 4-stage pipeline would.
  std::printf("\nper-stage submeshes (global batch 256)\n%-58s %-12s %-18s %8s %8s %9s %9s  %s\n", "model", "cluster",
              "--fix", "plan s", "plan s", "iter s", "iter s", "stages (tp x dp, layers) with per-stage shapes");
  std::printf("%-58s %-12s %-18s %8s %8s %9s %9s\n", "", "", "", "uniform", "per-stage", "uniform", "per-stage");
  nlohmann::ordered_json sub = nlohmann::ordered_json::array();
  struct SubCase {
    std::string model, cluster, fix;
  };
  for (const SubCase& sc : std::vector<SubCase>{
           {"gpt:layers=16,hidden=2048,heads=16,seq=2048,vocab=512000", "dgx-h100:2", ""},
           {"gpt:layers=16,hidden=2048,heads=16,seq=2048,vocab=512000", "dgx-h100:2", "pp=4,schedule=1f1b"},
           {"gpt:layers=24,hidden=2048,heads=16,seq=4096,vocab=1000000", "dgx-h100:2", "pp=4,schedule=1f1b"},
           {"gpt:layers=32,hidden=4096,heads=32,seq=2048,vocab=256000", "dgx-h100:4", ""}}) {
    const std::string& model_spec = sc.model;
    const std::string& cluster_spec = sc.cluster;
    const ModelGraph model = parse_model_spec(model_spec);
    const ClusterSpec cluster = parse_cluster_spec(cluster_spec);
    PlannerOptions opts;
    opts.global_batch = 256;
    opts.pins = parse_pins(sc.fix);
    opts.per_stage_submeshes = false;
    auto t0 = std::chrono::steady_clock::now();
    const Plan uni = Planner(model, cluster, opts).plan();
    const double uni_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    opts.per_stage_submeshes = true;
    t0 = std::chrono::steady_clock::now();
    const Plan per = Planner(model, cluster, opts).plan();
    const double per_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string shapes;
    nlohmann::ordered_json js = nlohmann::ordered_json::array();
    for (const StagePlan& st : per.stages) {
      shapes += (shapes.empty() ? "" : " | ") + std::to_string(st.shape.tp) + "x" + std::to_string(st.shape.dp) +
                " L" + std::to_string(st.first_layer) + "-" + std::to_string(st.end_layer - 1);
      js.push_back({{"tp", st.shape.tp}, {"dp", st.shape.dp}, {"micro_batch", st.shape.micro_batch},
                    {"first_layer", st.first_layer}, {"end_layer", st.end_layer}});
    }
    std::printf("%-58s %-12s %-18s %8.2f %8.2f %9.4f %9.4f  %s\n", model_spec.c_str(), cluster_spec.c_str(),
                sc.fix.empty() ? "-" : sc.fix.c_str(), uni_s, per_s, uni.iteration_time_s, per.iteration_time_s,
                shapes.c_str());
    std::printf("%-58s %-12s %-18s %8s %8s %9s %9s  uniform: %s; per-stage: %s\n", "", "", "", "", "", "", "",
                short_config(uni.config).c_str(), short_config(per.config).c_str());
    sub.push_back({{"model", model_spec},
                   {"cluster", cluster_spec},
                   {"fix", sc.fix},
                   {"uniform", {{"config", describe(uni.config)}, {"planning_s", uni_s},
                                {"iteration_time_s", uni.iteration_time_s}}},
                   {"per_stage", {{"config", describe(per.config)}, {"planning_s", per_s},
                                  {"iteration_time_s", per.iteration_time_s}, {"uniform_stages", per.uniform_stages},
                                  {"stages", js}}}});
  }
  results.push_back({{"label", "per-stage submeshes"}, {"cases", sub}});
  for (auto& r : calibration_results()) results.push_back(std::move(r));
  write_results(out, results);
  std::printf("\nwrote %s; planner >= best grid on every case: %s\n", out.c_str(), all_ok ? "yes" : "NO");
  return all_ok ? 0 : 1;
}
