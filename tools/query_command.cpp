#include <iostream>

#include "templates/registry.h"
#include "tools/cli_common.h"
#include "tools/options.h"
#include "tuner/device_registry.h"
#include "tuner/tuning_session.h"

namespace tuner::cli {

int query_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string db_path, op, shape, dtype, device_spec, template_name;
  int limit = 0;
  int64_t session = 0;
  po::options_description desc("tuner query: read the tuning database");
  desc.add_options()
      ("help,h", "show this help")
      ("db", po::value(&db_path)->default_value(default_db_path()), "tuning database ($TUNER_DB or ./tuning.db)")
      ("op", po::value(&op)->default_value(""), "only this operator")
      ("shape", po::value(&shape)->default_value(""), "only this shape (needs --op), e.g. M=1000,N=1000,K=1000")
      ("dtype", po::value(&dtype)->default_value(""), "only this dtype: f32, f16, bf16")
      ("device", po::value(&device_spec)->default_value(""), "only this device: cuda:N or sim:<gpu>")
      ("template", po::value(&template_name)->default_value(""), "only this kernel template, e.g. gemm_tc_wgmma (default: every template)")
      ("best", "the best record of each workload and device (the default)")
      ("history", "every trial, oldest first")
      ("sessions", "the tuning sessions, newest first")
      ("plans", "the parallel plans logged by `tuner plan`, newest first")
      ("session", po::value(&session)->default_value(0), "only trials of this session id")
      ("all-versions", "include records of older template versions")
      ("limit", po::value(&limit)->default_value(0), "at most this many rows (0: all)")
      ("json", "one JSON document on stdout");
  po::variables_map vm;
  if (!parse_options("query", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }
  const int modes =
      static_cast<int>(vm.count("best") + vm.count("history") + vm.count("sessions") + vm.count("plans"));
  if (modes > 1) throw UsageError("choose one of --best, --history, --sessions, --plans");
  if (limit < 0) throw UsageError("--limit " + std::to_string(limit) + " is negative; allowed: 0 or more");
  if (session < 0) throw UsageError("--session " + std::to_string(session) + " is negative; allowed: a session id (1 or more)");

  db::QueryFilter f;
  f.limit = limit;
  if (session > 0) f.session_id = session;
  try {
    if (!shape.empty() && op.empty()) throw std::invalid_argument("--shape needs --op to name its dimensions");
    if (!op.empty()) {
      templates::op_dimensions(op);  // validates the op
      f.op = op;
      if (!shape.empty()) f.shape = templates::parse_workload(op, shape, dtype.empty() ? "f32" : dtype).shape_string();
    }
    if (!dtype.empty()) f.dtype = templates::to_string(templates::dtype_from_string(dtype));
    if (!template_name.empty()) {
      std::string names;
      for (const auto* t : templates::all_templates()) {
        if (t->name() == template_name) f.template_name = template_name;
        names += (names.empty() ? "" : ", ") + t->name();
      }
      if (f.template_name.empty())
        throw std::invalid_argument("--template '" + template_name + "' is not a template; allowed: " + names);
    }
    if (!device_spec.empty()) {
      DeviceTarget d = resolve_device(device_spec);
      if (d.simulated) f.device_name = d.identity.name;
      f.simulated = d.simulated;  // a real H100 and sim:h100-sxm share CC and SM count
      f.cc_major = d.identity.cc_major;
      f.cc_minor = d.identity.cc_minor;
      f.sm_count = d.identity.sm_count;
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!vm.count("all-versions"))
    for (const auto* t : templates::all_templates()) f.template_hashes.push_back(template_hash(*t));

  std::unique_ptr<db::TuningDb> db;
  try {
    db = std::make_unique<db::TuningDb>(db::TuningDb::open_existing(db_path));
  } catch (const db::DbError& e) {
    if (e.bad_input() || e.kind() == db::DbError::Kind::kOther) throw UsageError(e.what());
    throw;
  }
  const bool json = vm.count("json") != 0;

  if (vm.count("plans")) {
    auto rows = db->plans(limit);
    if (json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& p : rows)
        out.push_back({{"plan_id", p.id}, {"model", p.model}, {"cluster", p.cluster},
                       {"options", nlohmann::ordered_json::parse(p.options_json)}, {"tp", p.tp}, {"pp", p.pp},
                       {"dp", p.dp}, {"iteration_time_s", p.iteration_time_s}, {"tflops_per_gpu", p.tflops_per_gpu},
                       {"mfu", p.mfu}, {"peak_memory_bytes", p.peak_memory_bytes}, {"planning_s", p.planning_s},
                       {"created_at", p.created_at}, {"plan", nlohmann::ordered_json::parse(p.plan_json)}});
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::vector<std::vector<std::string>> table;
    for (const auto& p : rows)
      table.push_back({std::to_string(p.id), p.model, p.cluster, std::to_string(p.tp), std::to_string(p.pp),
                       std::to_string(p.dp), fixed(p.iteration_time_s, 3), fixed(p.tflops_per_gpu, 1),
                       fixed(p.mfu * 100, 1) + "%", fixed(p.peak_memory_bytes / 1e9, 1), fixed(p.planning_s, 2),
                       p.created_at});
    print_table({"plan", "model", "cluster", "tp", "pp", "dp", "iteration s", "TFLOP/s/GPU", "MFU", "peak GB",
                 "planning s", "created"},
                table);
    if (rows.empty()) std::cout << "(no plans logged)\n";
    return 0;
  }

  if (vm.count("sessions")) {
    auto rows = db->sessions(f);
    if (json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& s : rows)
        out.push_back({{"session_id", s.id}, {"op", s.workload.op}, {"shape", s.workload.shape},
                       {"dtype", s.workload.dtype}, {"device", s.device_name}, {"strategy", s.strategy},
                       {"seed", s.seed}, {"budget", s.budget}, {"trials", s.trials}, {"status", s.status},
                       {"reason", s.reason}, {"pid", s.pid}, {"host", s.host},
                       {"started_at", s.started_at}, {"finished_at", s.finished_at}});
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::vector<std::vector<std::string>> table;
    for (const auto& s : rows)
      table.push_back({std::to_string(s.id), s.workload.op + " " + s.workload.shape + " " + s.workload.dtype,
                       s.device_name, s.strategy, std::to_string(s.seed), std::to_string(s.trials),
                       std::to_string(s.budget), s.status, s.started_at, s.reason});
    print_table({"session", "workload", "device", "strategy", "seed", "trials", "budget", "status", "started", "reason"},
                table);
    return 0;
  }

  std::vector<db::ResultRow> rows;
  const bool history = vm.count("history") != 0;
  if (history) {
    rows = db->history(f);
  } else if (!f.op.empty() && !f.shape.empty() && !device_spec.empty()) {
    if (auto b = db->best(f)) rows.push_back(*b);
  } else {
    rows = db->best_per_workload(f);
  }

  if (json) {
    // One workload on one device with --best: the record itself; otherwise an array of records.
    const bool single = !history && !f.op.empty() && !f.shape.empty() && !device_spec.empty();
    if (single) {
      std::cout << (rows.empty() ? nlohmann::ordered_json(nullptr) : record_json(rows.front())).dump(2) << "\n";
    } else {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& r : rows) out.push_back(record_json(r));
      std::cout << out.dump(2) << "\n";
    }
    return rows.empty() && single ? 1 : 0;
  }
  std::vector<std::vector<std::string>> table;
  for (const auto& r : rows) {
    const auto& t = r.trial;
    const bool ok = t.status == "ok";
    table.push_back({std::to_string(t.id), r.workload.op + " " + r.workload.shape + " " + r.workload.dtype,
                     r.device_name, t.status, ok ? fixed(t.time_ms, 4) + (t.estimate ? "*" : "") : "-",
                     ok ? fixed(t.gflops, 1) : "-", t.config_json});
  }
  print_table({"trial", "workload", "device", "status", "time ms", "GFLOP/s", "config"}, table);
  if (rows.empty()) std::cout << "(no records match)\n";
  bool any_estimate = false;
  for (const auto& r : rows) any_estimate = any_estimate || r.trial.estimate;
  if (any_estimate) std::cout << "* analytic estimate of a sim device, not a measurement\n";
  return 0;
}

}  // namespace tuner::cli
