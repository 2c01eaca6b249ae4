// `tuner export`: the records of a tuning database written out for other programs and other machines.
//   jsonl  one "tuner-records/1" record per line: the fields of `query --json` plus what `tuner import`
//          needs to rebuild the record exactly (device identity, started_at); every trial the filter matches
//   csv    a header row and one row per trial, in the style of CUTLASS's profiler CSV (RFC 4180 quoting)
//   best   one "tuner-best/1" JSON document: the best config per workload x device x template, for deployment,
//          and the best writing the workload's own output type where the fastest writes another (best_configs.h)
// The store's ResultRow carries only part of a device's identity (no memory size, driver or NVRTC
// version), so the full identity of each trial's device is read here with one read-only SELECT.
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "tools/best_configs.h"
#include "tools/cli_common.h"
#include "tools/options.h"
#include "tools/version.h"

namespace tuner::cli {

namespace {

nlohmann::ordered_json identity_json(const db::DeviceIdentity& d) {
  return {{"name", d.name},           {"simulated", d.simulated},       {"cc_major", d.cc_major},
          {"cc_minor", d.cc_minor},   {"sm_count", d.sm_count},         {"memory_bytes", d.memory_bytes},
          {"driver_version", d.driver_version}, {"nvrtc_version", d.nvrtc_version}};
}

const db::DeviceIdentity& device_of(const std::map<int64_t, db::DeviceIdentity>& devices, const db::ResultRow& r) {
  auto it = devices.find(r.trial.id);
  if (it == devices.end())  // a trial stored between the two reads: not possible for rows read before
    throw std::runtime_error("export: trial " + std::to_string(r.trial.id) + " has no device row");
  return it->second;
}

std::string jsonl(const std::vector<db::ResultRow>& rows, const std::map<int64_t, db::DeviceIdentity>& devices) {
  std::string out;
  for (const auto& r : rows) {
    nlohmann::ordered_json j;
    j["format"] = kRecordsFormat;
    const nlohmann::ordered_json record = record_json(r);
    for (const auto& [k, v] : record.items()) j[k] = v;
    j["started_at"] = r.trial.started_at;
    j["device_identity"] = identity_json(device_of(devices, r));
    out += j.dump() + "\n";
  }
  return out;
}

/// RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string number(double v) { return nlohmann::json(v).dump(); }

std::string csv(const std::vector<db::ResultRow>& rows) {
  const std::vector<std::string> header = {
      "op", "shape", "dtype", "device", "template", "template_version", "config", "status", "time_ms",
      "time_spread_ms", "repeats", "gflops", "bytes", "gbps", "estimate", "purpose", "registers", "shared_bytes",
      "spill_bytes", "compile_ms", "error", "session_id", "trial_id", "started_at", "finished_at"};
  std::string out;
  for (size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + header[i];
  out += "\r\n";  // RFC 4180 line ends
  for (const auto& r : rows) {
    const auto& t = r.trial;
    // The bytes stored with the trial, as jsonl and query --json give them (bytes_moved is 0 for GEMMs and convs,
    // which are judged by GFLOP/s: only the gbps column follows it).
    const double bytes = t.bytes > 0 ? t.bytes : bytes_moved(r);
    const std::vector<std::string> cells = {
        r.workload.op, r.workload.shape, r.workload.dtype, r.device_name, r.template_name, r.template_hash,
        t.config_json, t.status, number(t.time_ms), number(t.time_spread_ms), std::to_string(t.repeats),
        number(t.gflops), number(bytes), number(gbps(r)),
        t.estimate ? "true" : "false", t.purpose, std::to_string(t.registers), std::to_string(t.shared_bytes),
        std::to_string(t.spill_bytes), number(t.compile_ms), t.error_message, std::to_string(t.session_id),
        std::to_string(t.id), t.started_at, t.finished_at};
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += "\r\n";
  }
  return out;
}

std::string best_document(const std::vector<BestConfig>& best,
                          const std::map<int64_t, db::DeviceIdentity>& devices) {
  nlohmann::ordered_json doc;
  doc["format"] = kBestFormat;
  doc["producer"] = std::string("tuner ") + kProgramVersion;
  doc["entries"] = nlohmann::ordered_json::array();
  for (const auto& b : best) {
    const db::ResultRow& r = b.row;
    const std::string& output_dtype = b.output_dtype;
    const auto& t = r.trial;
    doc["entries"].push_back({{"op", r.workload.op},
                              {"shape", r.workload.shape},
                              {"dtype", r.workload.dtype},
                              {"output_dtype", output_dtype},
                              {"template", r.template_name},
                              {"template_version", r.template_hash},
                              {"config", nlohmann::ordered_json::parse(t.config_json)},
                              {"time_ms", t.time_ms},
                              {"mean_time_ms", r.mean_time_ms},
                              {"measurements", r.measurements},
                              {"gflops", t.gflops},
                              {"gbps", gbps(r)},
                              {"estimate", t.estimate},
                              {"device", identity_json(device_of(devices, r))},
                              {"measured_at", t.finished_at}});
  }
  return doc.dump(2) + "\n";
}

}  // namespace

int export_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string db_path, format, out_path;
  RecordFilterOptions fo;
  po::options_description desc("tuner export: write a tuning database's records out");
  desc.add_options()
      ("help,h", "show this help")
      ("db", po::value(&db_path)->default_value(default_db_path()), "tuning database ($TUNER_DB or ./tuning.db)")
      ("format", po::value(&format)->required(),
       "jsonl (every trial, one record per line, for `tuner import`), csv (every trial, one row each) or "
       "best (the best config per workload, device and template, as one JSON document)")
      ("out", po::value(&out_path)->default_value(""), "write to this file (default or -: stdout)")
      ("op", po::value(&fo.op)->default_value(""), "only this operator")
      ("shape", po::value(&fo.shape)->default_value(""), "only this shape (needs --op)")
      ("dtype", po::value(&fo.dtype)->default_value(""), "only this dtype: f32, f16, bf16")
      ("device", po::value(&fo.device)->default_value(""), "only this device, as `tuner query --device` takes it")
      ("template", po::value(&fo.template_name)->default_value(""), "only this kernel template")
      ("all-versions", "include records of older template versions (import refuses them)");
  po::variables_map vm;
  if (!parse_options("export", args, desc, vm)) {
    std::cout << "usage: tuner export --format jsonl|csv|best [--db tuning.db] [--out FILE] [filters]\n" << desc;
    return 0;
  }
  refuse_empty_values("export", vm, {"op", "shape", "dtype", "device", "template", "out"});
  if (format != "jsonl" && format != "csv" && format != "best")
    throw UsageError("export: --format '" + format + "' is not a format; allowed: jsonl, csv, best");
  fo.all_versions = vm.count("all-versions") != 0;

  if (out_path == "-") out_path.clear();  // stdout, as `import -` reads stdin
  refuse_output_over_db("export: --out", out_path, db_path);
  auto db = open_for_reading(db_path);
  const RecordFilter rf = build_record_filter(fo, *db);
  std::string text;
  size_t exported = 0;
  if (format == "best") {
    const auto best = best_configs(*db, rf);
    exported = best.size();
    text = best_document(best, db->trial_devices());
  } else {
    const auto rows = run_history(*db, rf);
    exported = rows.size();
    text = format == "csv" ? csv(rows) : jsonl(rows, db->trial_devices());
  }
  // A device that matches by kind but ran no session: say which devices did, as query does.
  if (exported == 0) say_why_nothing_matched(rf);
  if (exported == 0)
    if (const std::string note = older_versions_note(*db, rf, format == "best"); !note.empty())
      std::cerr << "tuner: " << note << "\n";
  if (out_path.empty()) {
    std::cout << text << std::flush;
    return 0;
  }
  write_output_file("export --out", out_path, text);
  return 0;
}

}  // namespace tuner::cli
