// `tuner query`: reads the tuning database — best configs (one row per workload, device and template),
// histories, sessions and plans. Records tuned on another machine are read here by their recorded device
// name (`--device "NVIDIA H100 80GB HBM3"`), so a database copied off a GPU machine answers anywhere.
#include <algorithm>
#include <iostream>
#include <set>

#include "tools/cli_common.h"
#include "tools/best_configs.h"
#include "tools/options.h"

namespace tuner::cli {

/// The engine a plan was made for (its --export), from its logged options; "-" for none or an old log.
std::string engine_of(const std::string& options_json) {
  const auto o = nlohmann::json::parse(options_json, nullptr, false);
  if (o.is_discarded() || !o.is_object() || !o.contains("engine") || !o["engine"].is_string()) return "-";
  return o["engine"].get<std::string>();
}

int query_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string db_path;
  RecordFilterOptions fo;
  int64_t session = 0;
  po::options_description desc("tuner query: read the tuning database");
  desc.add_options()
      ("help,h", "show this help")
      ("db", po::value(&db_path)->default_value(default_db_path()), "tuning database ($TUNER_DB or ./tuning.db)")
      ("op", po::value(&fo.op)->default_value(""), "only this operator")
      ("shape", po::value(&fo.shape)->default_value(""), "only this shape (needs --op), e.g. M=1000,N=1000,K=1000")
      ("dtype", po::value(&fo.dtype)->default_value(""), "only this dtype: f32, f16, bf16")
      ("device", po::value(&fo.device)->default_value(""),
       "only this device: cuda:N, sim:<gpu>, replay:FILE, or a device name recorded in the database "
       "(\"NVIDIA H100 80GB HBM3\" also matches records replayed from its recordings)")
      ("template", po::value(&fo.template_name)->default_value(""), "only this kernel template, e.g. gemm_tc_wgmma (default: every template)")
      ("best", "the best record of each workload, device and template (the default)")
      ("history", "every trial, oldest first")
      ("sessions", "the tuning sessions, newest first")
      ("plans", "the parallel plans logged by `tuner plan`, newest first")
      ("session", po::value(&session), "only trials of this session id")
      ("all-versions", "include records of older template versions")
      ("limit", po::value(&fo.limit)->default_value(0), "at most this many rows (0: all)")
      ("json", "one JSON document on stdout");
  po::variables_map vm;
  if (!parse_options("query", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }
  refuse_empty_values("query", vm, {"op", "shape", "dtype", "device", "template"});
  const int modes =
      static_cast<int>(vm.count("best") + vm.count("history") + vm.count("sessions") + vm.count("plans"));
  if (modes > 1) throw UsageError("choose one of --best, --history, --sessions, --plans");
  if (vm.count("plans")) {
    // Plans are not tuning records: the record filters would be ignored, so they are refused.
    for (const char* opt : {"op", "shape", "dtype", "device", "template", "session", "all-versions"})
      if (vm.count(opt) && !vm[opt].defaulted())
        throw UsageError(std::string("--") + opt + " filters tuning records, not plans; allowed with --plans: --limit, --json, --db");
  }
  if (fo.limit < 0) throw UsageError("--limit " + std::to_string(fo.limit) + " is negative; allowed: 0 or more");
  if (vm.count("session") && !vm["session"].defaulted() && session < 1)
    throw UsageError("--session " + std::to_string(session) + " is no session id; allowed: a session id (1 or more)");
  fo.all_versions = vm.count("all-versions") != 0;

  auto db = open_for_reading(db_path);
  RecordFilter rf = build_record_filter(fo, *db);
  auto& f = rf.filter;
  if (session > 0) f.session_id = session;
  const bool json = vm.count("json") != 0;
  // A session id that does not exist matches nothing, like a filter that excludes every trial: say which it is.
  const auto note_missing_session = [&] {
    if (session <= 0) return;
    const auto all = db->sessions(db::QueryFilter{});
    if (std::none_of(all.begin(), all.end(), [&](const db::SessionRow& s) { return s.id == session; }))
      std::cerr << "tuner: there is no session " << session << " in '" << db_path << "'"
                << (all.empty() ? std::string(" (it has none)")
                                : " (its sessions are " + std::to_string(all.back().id) + " .. " +
                                      std::to_string(all.front().id) + ": `tuner query --sessions` lists them)")
                << "\n";
  };

  if (vm.count("plans")) {
    auto rows = db->plans(fo.limit);
    if (json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& p : rows)
        out.push_back({{"plan_id", p.id}, {"model", p.model}, {"cluster", p.cluster},
                       {"options", nlohmann::ordered_json::parse(p.options_json)}, {"tp", p.tp}, {"cp", p.cp},
                       {"ep", p.ep}, {"pp", p.pp}, {"dp", p.dp}, {"iteration_time_s", p.iteration_time_s}, {"tflops_per_gpu", p.tflops_per_gpu},
                       {"mfu", p.mfu}, {"peak_memory_bytes", p.peak_memory_bytes}, {"planning_s", p.planning_s},
                       {"created_at", p.created_at}, {"plan", nlohmann::ordered_json::parse(p.plan_json)}});
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::vector<std::vector<std::string>> table;
    for (const auto& p : rows)
      table.push_back({std::to_string(p.id), p.model, p.cluster, std::to_string(p.tp), std::to_string(p.cp),
                       std::to_string(p.ep), std::to_string(p.pp),
                       std::to_string(p.dp), fixed(p.iteration_time_s, 3), fixed(p.tflops_per_gpu, 1),
                       fixed(p.mfu * 100, 1) + "%", fixed(p.peak_memory_bytes / 1e9, 1), fixed(p.planning_s, 2),
                       engine_of(p.options_json), p.created_at});
    print_table({"plan", "model", "cluster", "tp", "cp", "ep", "pp", "dp", "iteration s", "TFLOP/s/GPU", "MFU", "peak GB",
                 "planning s", "engine", "created"},
                table);
    if (rows.empty()) std::cout << "(no plans logged)\n";
    return 0;
  }

  if (vm.count("sessions")) {
    // A session is history whatever its template's version: every one is listed, an older version's marked
    // (the version filter hid them, with no hint, while --best and --history said what they left out).
    std::set<std::string> current;
    for (const auto& t : current_template_versions(*db)) current.insert(t.hash);
    auto is_current = [&](const db::SessionRow& s) { return current.count(s.template_hash) != 0; };
    std::vector<db::SessionRow> rows;
    for (const auto& name : rf.device_names.empty() ? std::vector<std::string>{""} : rf.device_names) {
      db::QueryFilter one = f;
      one.template_hashes.clear();
      if (!name.empty()) one.device_name = name;
      auto part = db->sessions(one);
      rows.insert(rows.end(), part.begin(), part.end());
    }
    if (rf.device_names.size() > 1) {  // newest first over every name, then the limit
      std::stable_sort(rows.begin(), rows.end(),
                       [](const db::SessionRow& a, const db::SessionRow& b) { return a.id > b.id; });
      if (fo.limit > 0 && rows.size() > static_cast<size_t>(fo.limit)) rows.resize(fo.limit);
    }
    if (rows.empty()) say_why_nothing_matched(rf);
    if (rows.empty()) note_missing_session();
    if (json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& s : rows)
        out.push_back({{"session_id", s.id}, {"op", s.workload.op}, {"shape", s.workload.shape},
                       {"dtype", s.workload.dtype}, {"device", s.device_name}, {"template", s.template_name},
                       {"template_version", s.template_hash}, {"current_version", is_current(s)},
                       {"strategy", s.strategy},
                       {"seed", s.seed}, {"budget", s.budget}, {"trials", s.trials},
                       {"search_trials", s.search_trials}, {"remeasured", s.trials - s.search_trials},
                       {"status", s.status}, {"reason", s.reason}, {"stop_reason", s.reason}, {"pid", s.pid},
                       {"host", s.host},
                       {"started_at", s.started_at}, {"finished_at", s.finished_at}});
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::vector<std::vector<std::string>> table;
    for (const auto& s : rows)
      table.push_back({std::to_string(s.id), s.workload.op + " " + s.workload.shape + " " + s.workload.dtype,
                       s.device_name, s.template_name + (is_current(s) ? "" : " (older version)"), s.strategy,
                       std::to_string(s.seed),
                       std::to_string(s.search_trials), std::to_string(s.trials - s.search_trials),
                       std::to_string(s.budget), s.status, s.started_at, s.reason});
    print_table({"session", "workload", "device", "template", "strategy", "seed", "trials", "re-measured", "budget",
                 "status", "started", "reason"},
                table);
    if (rows.empty()) std::cout << "(no sessions match)\n";
    return 0;
  }

  std::vector<db::ResultRow> rows;
  // alternative[i]: rows[i] is the best config writing the workload's own type, after a best (rows[i - 1]) that
  // writes another (best_configs.h).
  std::vector<bool> alternative;
  const bool history = vm.count("history") != 0;
  // One workload on one device with --best: the one best record, ranked across templates.
  const bool single = !history && !f.op.empty() && !f.shape.empty() && rf.single_device;
  if (history) {
    rows = run_history(*db, rf);
  } else if (single) {
    if (f.dtype.empty()) {
      // The one best record is of one dtype: with records of several and no --dtype, it picked among them.
      std::set<std::string> dtypes;
      for (const auto& r : run_best_per_workload(*db, rf)) dtypes.insert(r.workload.dtype);
      if (dtypes.size() > 1) {
        std::string list;
        for (const auto& d : dtypes) list += (list.empty() ? "" : " or ") + ("--dtype " + d);
        throw UsageError(f.op + " " + f.shape + " has records of " + std::to_string(dtypes.size()) +
                         " dtypes on this device; the best record is of one: allowed: " + list);
      }
    }
    if (auto b = run_best(*db, rf)) rows.push_back(*b);
  } else {
    for (auto& b : best_configs(*db, rf)) {
      rows.push_back(std::move(b.row));
      alternative.push_back(b.own_dtype_alternative);
    }
  }
  if (single && !rows.empty() && output_dtype_of(rows.front()).value_or(rows.front().workload.dtype) !=
                                     rows.front().workload.dtype) {
    // The fastest writes another type than the workload's (OUT_F32): the best that writes its own, as export adds.
    RecordFilter all = rf;  // (the limit keeps rows of the answer, not of this lookup)
    all.filter.limit = 0;
    for (auto& b : best_configs(*db, all))
      if (b.own_dtype_alternative && b.row.template_name == rows.front().template_name &&
          b.row.device_name == rows.front().device_name && b.row.workload.dtype == rows.front().workload.dtype) {
        rows.push_back(std::move(b.row));
        alternative = {false, true};
        break;
      }
  }
  alternative.resize(rows.size(), false);

  // A device that matches by kind but ran no session: say which devices did, whatever the output format.
  if (rows.empty()) say_why_nothing_matched(rf);
  if (rows.empty()) note_missing_session();
  if (rows.empty())
    if (const std::string note = older_versions_note(*db, rf, !history); !note.empty())
      std::cerr << "tuner: " << note << "\n";
  if (json) {
    // A best record names the type its config writes (export --format best's output_dtype): an f16 GEMM's fastest
    // config may write C in f32.
    const auto best_json = [&](const db::ResultRow& r) {
      nlohmann::ordered_json j = record_json(r, !history);
      if (!history && r.trial.status == "ok")
        if (const auto out = output_dtype_of(r)) j["output_dtype"] = *out;
      return j;
    };
    // The alternative goes inside its best's object: one object per workload, device and template, as before.
    const auto with_alternative = [&](size_t i) {
      nlohmann::ordered_json j = best_json(rows[i]);
      if (i + 1 < rows.size() && alternative[i + 1]) j["best_writing_own_dtype"] = best_json(rows[i + 1]);
      return j;
    };
    if (single) {
      std::cout << (rows.empty() ? nlohmann::ordered_json(nullptr) : with_alternative(0)).dump(2) << "\n";
    } else {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (size_t i = 0; i < rows.size(); ++i)
        if (!alternative[i]) out.push_back(with_alternative(i));
      std::cout << out.dump(2) << "\n";
    }
    return rows.empty() && single ? 1 : 0;
  }
  std::vector<std::vector<std::string>> table;
  bool any_gbps = false;
  for (const auto& r : rows) any_gbps = any_gbps || bytes_moved(r) > 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const db::ResultRow& r = rows[i];
    const auto& t = r.trial;
    const bool ok = t.status == "ok";
    // A best row shows what it is ranked by: the mean of the config's measurements (and GFLOP/s and GB/s at that
    // mean), not its latest measurement; the trial is its latest.
    const double shown_ms = !history && ok && r.mean_time_ms > 0 ? r.mean_time_ms : t.time_ms;
    const double scale = ok && shown_ms > 0 ? t.time_ms / shown_ms : 1;
    const std::string writes = !history && ok ? output_dtype_of(r).value_or(r.workload.dtype) : r.workload.dtype;
    std::vector<std::string> row = {std::to_string(t.id), r.workload.op + " " + r.workload.shape + " " + r.workload.dtype +
                                                              (writes != r.workload.dtype ? " (writes " + writes + ")"
                                                               : alternative[i] ? " (best writing " + writes + ")"
                                                                                : ""),
                                    r.device_name, r.template_name + (fo.all_versions ? "@" + r.template_hash : ""),
                                    t.status,
                                    ok ? fixed(shown_ms, 4) + (t.estimate ? "*" : "") : "-",
                                    ok ? fixed(t.gflops * scale, 1) : "-"};
    if (any_gbps) row.push_back(ok && bytes_moved(r) > 0 ? fixed(gbps(r) * scale, 1) : "-");
    if (!history) row.push_back(std::to_string(r.measurements));
    if (history) row.push_back(t.purpose);  // a finalist's second measurement is not a search trial
    row.push_back(t.config_json);
    table.push_back(std::move(row));
  }
  std::vector<std::string> header = {"trial", "workload", "device", "template", "status",
                                     history ? "time ms" : "mean ms", "GFLOP/s"};
  if (any_gbps) header.push_back("GB/s");
  if (!history) header.push_back("runs");
  if (history) header.push_back("purpose");
  header.push_back("config");
  print_table(header, table);
  if (rows.empty()) std::cout << "(no records match)\n";
  bool any_estimate = false;
  for (const auto& r : rows) any_estimate = any_estimate || r.trial.estimate;
  if (any_estimate) std::cout << "* analytic estimate of a sim device, not a measurement\n";
  return rows.empty() && single ? 1 : 0;  // as with --json: the one record asked for does not exist
}

}  // namespace tuner::cli
