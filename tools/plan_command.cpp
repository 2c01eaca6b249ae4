// `tuner plan`: parses the model and cluster specs and the pins, wires the
// tuning database's records in as kernel times, runs the parallel planner,
// logs the plan in the database and prints it (table, JSON, or an export).
// Nothing is written to the database unless a plan was found.
#include <algorithm>
#include <cmath>
#include <charconv>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/spec_json.h"
#include "search/parallel/plan_json.h"
#include "search/parallel/planner.h"
#include "tools/cli_common.h"
#include "tools/options.h"

namespace tuner::cli {

namespace {

namespace par = tuner::parallel;

/// Kernel times from the database: the best ok record of the workload on a real GPU of the cluster's
/// type (compute capability + SM count), else on its sim device ("sim:<key>", an estimate).
par::TunedLookup db_lookup(std::shared_ptr<db::TuningDb> store, const costmodel::GpuSpec& gpu) {
  return [store, gpu](const par::OpKey& key) -> std::optional<double> {
    db::QueryFilter f;
    f.op = key.op;
    f.shape = key.shape;
    f.dtype = key.dtype;
    f.ok_only = true;
    f.cc_major = gpu.cc_major;
    f.cc_minor = gpu.cc_minor;
    f.sm_count = gpu.sm_count;
    // Measurements only: a GPU of the cluster's type, or a replay of its recording. A sim device's records are the
    // kernel model's estimates, which the planner's calibrated curve replaces: mixed in for the shapes a short sim
    // session happened to tune, they made those plans look slower than the rest and steered the choice.
    f.estimate = false;
    if (auto r = store->best(f)) return r->mean_time_ms > 0 ? r->mean_time_ms / 1e3 : r->trial.time_ms / 1e3;
    return std::nullopt;
  };
}

std::string gb(double bytes) { return fixed(bytes / 1e9, 1) + " GB"; }

void print_plan(const par::Plan& plan, const par::ModelGraph& model, const par::ClusterSpec& cluster,
                int64_t global_batch, bool attention_asked) {
  const par::ParallelConfig& c = plan.config;
  std::cout << "model " << model.name << " (" << fixed(par::model_params(model) / 1e9, 2) << "B parameters, seq "
            << model.seq << ") on " << cluster.name << " (" << cluster.total_gpus() << " x " << cluster.gpu.key
            << (std::abs(static_cast<double>(cluster.memory_per_gpu_bytes) - cluster.gpu.memory_bytes()) > 1e8
                    ? " with " + gb(static_cast<double>(cluster.memory_per_gpu_bytes))  // a cluster's memory_gb
                    : std::string())
            << "), global batch " << global_batch << "\n\n";
  print_table({"tp", "cp", "ep", "pp", "dp", "micro-batch", "micro-batches", "schedule", "recompute", "zero", "seq-parallel"},
              {{std::to_string(c.tp), std::to_string(c.cp), std::to_string(c.ep), std::to_string(c.pp), std::to_string(c.dp), std::to_string(c.micro_batch),
                std::to_string(c.num_micro_batches),
                par::to_string(c.schedule) +
                    (c.schedule == par::Schedule::kInterleaved ? " v=" + std::to_string(c.virtual_stages) : ""),
                par::to_string(c.recompute), std::to_string(c.zero), plan.sequence_parallel ? "yes" : "no"}});
  bool unequal = false;
  for (const auto& sp : plan.stages) unequal = unequal || sp.gpus != plan.stages[0].gpus;
  if (unequal)
    std::cout << "\nper-stage submeshes of unequal GPU counts: each stage holds its own number of GPUs (the gpus "
                 "column, adding up to "
              << cluster.total_gpus() << ") as its own tp x dp; the pipeline micro-batch is " << c.micro_batch * c.dp
              << " sequences (the table above gives the reference shape)\n";
  else if (!plan.uniform_stages)
    std::cout << "\nper-stage submeshes: each stage runs its own tp x dp of its " << c.tp * c.dp
              << " GPUs (per context-parallel rank); the pipeline micro-batch is " << c.micro_batch * c.dp
              << " sequences (the table above gives the reference shape)\n";
  std::cout << "\n";
  std::vector<std::vector<std::string>> rows;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const auto& sp = plan.stages[s];
    std::string shard;
    for (const auto& ls : sp.sharding) {
      std::string ops;
      for (const auto& op : ls.ops)
        ops += (ops.empty() ? "" : " ") + op.op + ":" + op.strategy +
               (op.source == "tuned" ? "(t)" : op.source == "mixed" ? "(m)" : "");
      shard += (shard.empty() ? "" : "; ") + ls.layer + " x" + std::to_string(ls.count) + " [" + ops + "]";
    }
    // Interleaved: the rank's chunks of blocks (the engines' layout), not one range.
    std::string layers = std::to_string(sp.first_layer) + "-" + std::to_string(sp.end_layer - 1);
    const auto chunks = par::interleaved_chunks(plan, model, static_cast<int>(s));
    if (!chunks.empty()) {
      layers = "blocks ";
      for (size_t k = 0; k < chunks.size(); ++k)
        layers += (k ? "," : "") + std::to_string(chunks[k].first) + "-" + std::to_string(chunks[k].second);
    }
    rows.push_back({std::to_string(s), layers,
                    std::to_string(sp.gpus), std::to_string(sp.mesh.d0) + "x" + std::to_string(sp.mesh.d1),
                    std::to_string(sp.shape.tp) + "x" + std::to_string(sp.shape.dp) + " mbs " +
                        std::to_string(sp.shape.micro_batch) + (sp.memory_level > 0 ? " lean" : ""),
                    fixed(sp.time_per_micro_batch_s * 1e3, 2), gb(sp.memory.weights), gb(sp.memory.gradients),
                    gb(sp.memory.optimizer), gb(sp.memory.activations), gb(sp.memory.total()), shard});
  }
  print_table({"stage", "layers", "gpus", "mesh", "tp x dp", "ms/micro-batch", "weights", "grads", "optimizer", "activations", "peak",
               "sharding (R repl, B batch, C column, K reduction, H heads, F features, V vocab, P inside experts)"},
              rows);
  std::cout << "\n";
  print_table({"iteration s", "tokens/s", "TFLOP/s/GPU", "MFU", "peak memory", "bubble", "dp exposed s", "optimizer s"},
              {{fixed(plan.iteration_time_s, 3), fixed(plan.tokens_per_s, 0), fixed(plan.tflops_per_gpu, 1),
                // MFU counts causal attention in full (the convention); where that inflates it, the causal figure too.
                fixed(plan.mfu * 100, 1) + "%" +
                    (plan.mfu - plan.mfu_causal >= 0.01 ? " (" + fixed(plan.mfu_causal * 100, 1) + "% causal)" : ""),
                gb(plan.peak_memory_bytes) + " of " + gb(plan.memory_capacity_bytes) + " (stage " +
                    std::to_string(plan.peak_stage) + ")",
                fixed(plan.bubble_fraction * 100, 1) + "%", fixed(plan.dp_exposed_s, 3), fixed(plan.optimizer_s, 3)}});
  if (plan.mfu > 1 && plan.mfu_causal <= 1 && plan.mfu - plan.mfu_causal >= 0.01)
    std::cout << "(MFU above 100%: the convention counts causal attention in full, twice what its kernels compute; "
                 "the causal figure is the GPUs' share of peak)\n";
  // The recipe's unfused attention is what the calibration runs used; a user planning today's engines wants flash.
  if (!attention_asked && plan.attention == par::AttentionKernel::kUnfused && model.transformer_layers > 0 &&
      model.dtype != "f32")
    std::cout << "(attention runs unfused, the recipe of " << model.name
              << " (Megatron-LM before flash attention): --attention flash plans fused kernels, which read and write "
                 "no score matrix)\n";
  std::cout << "\ntime per iteration by stage, s (each row adds up to the iteration time)\n";
  std::vector<std::vector<std::string>> trows;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const par::TimeBreakdown& t = plan.stages[s].time;
    trows.push_back({std::to_string(s) + (static_cast<int>(s) == plan.critical_stage ? "*" : ""), fixed(t.compute_s, 3),
                     fixed(t.memory_bound_s, 3), fixed(t.recompute_s, 3), fixed(t.tp_comm_s, 3),
                     fixed(t.ep_comm_s, 3), fixed(t.cp_comm_s, 3), fixed(t.zero_comm_s, 3), fixed(t.reshard_s, 3), fixed(t.pp_p2p_s, 3),
                     fixed(t.pp_bubble_s, 3), fixed(t.dp_comm_s, 3), fixed(t.optimizer_s, 3), fixed(t.wait_s, 3),
                     fixed(t.total(), 3)});
  }
  print_table({"stage", "compute", "memory-bound", "recompute", "tp/sp comm", "ep a2a", "cp ring", "zero comm", "reshard", "pp p2p",
               "pp bubble",
               "dp comm", "optimizer", "wait", "total"},
              trows);
  std::cout << "(* the critical stage: the slowest per micro-batch)\n";
  std::cout << "\ncompute costs: " << plan.tuned_estimates << " of " << plan.kernel_estimates
            << " kernel estimates from tuned records, the rest analytic (estimates, not measurements);"
            << " ops marked (t) use tuned records, (m) partly\n";
  std::cout << "searched " << plan.configs_evaluated << " configurations, " << plan.ilp_solves
            << " sharding ILPs (CBC" << (plan.ilp_optimal ? ", all proven optimal" : "") << "), in "
            << fixed(plan.planning_s, 2) << " s\n";
  for (const auto& n : plan.notes) std::cout << "note: " << n << "\n";
}

}  // namespace

int plan_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string model_spec, cluster_spec, fix, db_path, export_name, out_path;
  std::string global_batch_text, attention_name;
  po::options_description desc("tuner plan: plan tensor, pipeline and data parallelism for a model on a cluster");
  desc.add_options()
      ("help,h", "show this help")
      ("model", po::value(&model_spec)->required(), "preset (gpt3-175b, llama3-70b, ...), family form (gpt:layers=..,hidden=..,heads=..), or model.json")
      ("cluster", po::value(&cluster_spec)->required(), "dgx-a100:NODES, dgx-h100:NODES, dgx-h200:NODES, or cluster.json")
      ("global-batch", po::value(&global_batch_text)->default_value("1024"), "sequences per iteration (1..16777216)")
      ("fix", po::value(&fix)->default_value(""), "pin choices: tp=..,pp=..,dp=..,cp=..,ep=..,mbs=..,schedule=gpipe|1f1b|interleaved,v=..,recompute=none|selective|full,zero=0..3,sp=0|1")
      ("attention", po::value(&attention_name)->default_value("auto"), "how attention cores run: flash (fused), unfused (Megatron-LM before flash attention), or auto (the model's recipe: unfused for gpt, flash otherwise; flash wherever the search considers context parallelism: long sequences, a pinned cp, a batch too small for the cluster)")
      ("db", po::value(&db_path)->default_value(default_db_path()), "tuning database: tuned kernel times are read from it and the plan is logged in it")
      ("json", "one JSON document on stdout")
      ("export", po::value(&export_name)->default_value(""), "print the plan as megatron arguments, deepspeed JSON or torchtitan TOML")
      ("out", po::value(&out_path)->default_value(""), "write the export to this file instead of stdout");
  po::variables_map vm;
  if (!parse_options("plan", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }
  int64_t global_batch = 0;
  {
    const std::string& v = global_batch_text;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), global_batch);
    const std::string allowed = "; allowed: 1.." + std::to_string(par::kMaxGlobalBatch) + " sequences";
    if (ec == std::errc::result_out_of_range) throw UsageError("--global-batch " + v + " is out of range" + allowed);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size())
      throw UsageError("--global-batch '" + v + "' is not an integer" + allowed);
  }
  std::optional<par::ExportFormat> format;
  if (!export_name.empty()) {
    format = par::export_format_from_string(export_name);
    if (!format) throw UsageError("--export " + export_name + " is unknown; allowed: megatron, deepspeed, torchtitan");
  }
  if (out_path.empty() && !vm["out"].defaulted()) throw UsageError("--out '' names no file; allowed: a file path");
  if (!out_path.empty() && !format) throw UsageError("--out needs --export");
  refuse_output_over_db("--out", out_path, db_path);
  for (const auto& [flag, spec] : {std::pair{"--model", model_spec}, std::pair{"--cluster", cluster_spec}})
    if (std::error_code ec; !out_path.empty() && std::filesystem::is_regular_file(spec, ec) &&
                            same_file(out_path, spec))  // (not a preset's name)
      throw UsageError("--out '" + out_path + "' is the " + flag + " file; writing the export there would replace "
                       "the spec it was planned from; allowed: another file");
  if (format && out_path.empty() && vm.count("json"))
    throw UsageError("--json with --export " + export_name + " needs --out FILE: without it the export goes to stdout");
  const auto attention = par::attention_kernel_from_string(attention_name);
  if (!attention && attention_name != "auto")
    throw UsageError("--attention " + attention_name + " is unknown; allowed: auto, flash, unfused");

  par::ModelGraph model;
  par::ClusterSpec cluster;
  par::PlannerOptions opts;
  try {
    model = par::parse_model_spec(model_spec);
    cluster = par::parse_cluster_spec(cluster_spec);
    if (fix.empty() && !vm["fix"].defaulted())
      throw par::SpecError("--fix '' names no choice; allowed: tp, pp, dp, cp, ep, mbs, schedule, v, recompute, zero, sp");
    opts.pins = par::parse_pins(fix);
    par::check_global_batch(global_batch);
  } catch (const par::SpecError& e) {
    throw UsageError(e.what());
  }
  opts.global_batch = global_batch;
  // An export plans for its engine: the ZeRO stages it runs and the bytes per parameter it keeps.
  if (format) opts.engine = par::engine_of(*format);
  // The engines run one tp and dp on every pipeline stage: an export plans uniform stages.
  if (format) opts.per_stage_submeshes = false;
  opts.attention = attention;  // unset ("auto"): the model's recipe

  // Read tuned records from an existing database; never create one before a plan exists.
  std::shared_ptr<db::TuningDb> reader;
  if (std::filesystem::exists(db_path)) {
    try {  // an older schema is read through a migrated in-memory copy; logging the plan migrates the file
      reader = std::make_shared<db::TuningDb>(db::TuningDb::open_existing(db_path));
    } catch (const db::DbError& e) {
      throw UsageError(e.what());
    }
    opts.lookup = db_lookup(reader, cluster.gpu);
  }

  par::Plan plan;
  try {
    par::Planner planner(model, cluster, opts);
    plan = planner.plan();
  } catch (const par::SpecError& e) {
    throw UsageError(e.what());
  }
  // Every reading connection closes before the plan is logged: the writer, last to close, then checkpoints its
  // WAL into the file (with a reader still open the plan stayed in plan.db-wal, lost to a copy of plan.db).
  opts.lookup = {};
  reader.reset();

  const nlohmann::ordered_json plan_json = par::plan_to_json(plan, model, cluster, global_batch);
  db::PlanRecord rec;
  rec.model = model_spec;
  rec.cluster = cluster_spec;
  nlohmann::ordered_json options{{"global_batch", global_batch},
                                 {"fix", par::to_string(opts.pins)},
                                 {"attention", par::to_string(plan.attention)},
                                 {"engine", par::to_string(opts.engine)}};
  // A model or cluster given as a file is logged by its content too: the path alone would name whatever the
  // file holds later, or nothing once it is gone.
  for (const auto& [key, spec] : {std::pair{"model_file", model_spec}, std::pair{"cluster_file", cluster_spec}})
    if (spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".json") == 0)
      options[key] = nlohmann::ordered_json::parse(par::read_spec_file(spec, key).dump());
  rec.options_json = options.dump();
  rec.plan_json = plan_json.dump();
  rec.tp = plan.config.tp;
  rec.pp = plan.config.pp;
  rec.dp = plan.config.dp;
  rec.cp = plan.config.cp;
  rec.ep = plan.config.ep;
  rec.iteration_time_s = plan.iteration_time_s;
  rec.tflops_per_gpu = plan.tflops_per_gpu;
  rec.mfu = plan.mfu;
  rec.peak_memory_bytes = static_cast<int64_t>(plan.peak_memory_bytes);
  rec.planning_s = plan.planning_s;
  // The export file is written before the plan is logged: a failed command leaves the database as it was.
  std::string export_text;
  std::vector<std::string> warnings;
  if (format) {
    export_text = par::export_plan(*format, plan, model, global_batch, &warnings);
    for (const auto& w : warnings) std::cerr << "warning: " << export_name << " export: " << w << "\n";
    if (!out_path.empty()) {
      write_output_file("--out file", out_path, export_text);
    }
  }
  try {
    db::TuningDb store(db_path);
    store.add_plan(rec);
  } catch (const db::DbError& e) {
    throw UsageError(e.what());
  }

  if (format && out_path.empty()) {
    std::cout << export_text;
    return 0;
  }
  if (vm.count("json")) {
    nlohmann::ordered_json j = plan_json;
    j["plan_id"] = rec.id;
    j["already_logged"] = rec.already_logged;
    // The engine the plan was made for (its ZeRO stages, bytes per parameter and tensor layouts) and, with
    // --export, what its export could not express.
    j["engine"] = par::to_string(opts.engine);
    if (format) j["export_warnings"] = warnings;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  print_plan(plan, model, cluster, global_batch, attention.has_value());
  std::cout << (rec.already_logged ? "already logged as plan " : "logged as plan ") << rec.id << " in " << db_path
            << "\n";
  if (!out_path.empty()) std::cout << export_name << " export written to " << out_path << "\n";
  return 0;
}

}  // namespace tuner::cli
