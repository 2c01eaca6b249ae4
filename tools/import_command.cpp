// `tuner import FILE`: records exported by `tuner export --format jsonl` (on this machine or another)
// brought into a database, without duplicates.
//
// Every line is read and checked before anything is written: a malformed line, an unknown template or a
// template version this build does not have refuses the whole file (exit 2, one line naming file, line
// and field). Only records of the templates' current versions are taken: an older version's configs
// belong to source this build cannot compile, so they could neither be re-measured nor deployed.
// The valid records are written into a scratch database, one session per (device, workload, template)
// with strategy "import" and status finished, and that database is merged into the target
// (TuningDb::merge_from): one transaction, all or nothing, and a record whose (device identity,
// workload, template version, config) is already there is skipped — importing twice adds nothing.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "costmodel/gpu_spec.h"
#include "db/scratch_db.h"
#include "templates/registry.h"
#include "tools/cli_common.h"
#include "tools/options.h"
#include "tools/version.h"
#include "tuner/device_limits.h"
#include "tuner/tuning_session.h"

namespace tuner::cli {

namespace {

using Json = nlohmann::ordered_json;

/// One validated line: where it goes and what it holds.
struct ImportRecord {
  db::DeviceIdentity device;
  db::WorkloadKey workload;
  db::TemplateVersion version;
  db::TrialRecord trial;
  double flops = 0, bytes = 0;  ///< What the config computes and moves (its template's instance), not the file's.
};

/// Reads one line's fields, each refusal naming file, line and field.
class LineReader {
 public:
  LineReader(const std::string& file, size_t line, const Json& j) : file_(file), line_(line), j_(j) {}

  [[noreturn]] void refuse(const std::string& field, const std::string& why) const {
    throw UsageError("import: " + file_ + ":" + std::to_string(line_) + ": field '" + field + "' " + why);
  }
  const Json& field(const Json& obj, const std::string& name, const std::string& path) const {
    auto it = obj.find(name);
    if (it == obj.end()) refuse(path, "is missing");
    return *it;
  }
  std::string str(const Json& obj, const std::string& name, const std::string& prefix = "") const {
    const Json& v = field(obj, name, prefix + name);
    if (!v.is_string()) refuse(prefix + name, "is not a string");
    return v.get<std::string>();
  }
  double num(const Json& obj, const std::string& name) const {
    const Json& v = field(obj, name, name);
    if (!v.is_number()) refuse(name, "is not a number");
    const double d = v.get<double>();
    if (!(d >= 0) || d > 1e300) refuse(name, "is " + v.dump() + "; allowed: a finite number >= 0");
    return d;
  }
  int64_t integer(const Json& obj, const std::string& name, const std::string& prefix = "",
                  int64_t max = INT32_MAX) const {
    const Json& v = field(obj, name, prefix + name);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > max)
      refuse(prefix + name, "is " + v.dump() + "; allowed: an integer 0.." + std::to_string(max));
    return v.get<int64_t>();
  }
  bool boolean(const Json& obj, const std::string& name, const std::string& prefix = "") const {
    const Json& v = field(obj, name, prefix + name);
    if (!v.is_boolean()) refuse(prefix + name, "is not true or false");
    return v.get<bool>();
  }
  const Json& json() const { return j_; }

 private:
  const std::string& file_;
  size_t line_;
  const Json& j_;
};

/// A line of a kernel of your own (`tune --kernel`): its template is its source file and spec, which the file does
/// not carry, so it is left out, counted by op; a file of nothing else is refused.
struct UserKernelLine {
  std::string op;
};

ImportRecord read_record(const LineReader& in) {
  const Json& j = in.json();
  if (!j.is_object()) in.refuse("format", "is missing: the line is not a JSON object");
  const std::string format = in.str(j, "format");
  if (format != kRecordsFormat)
    in.refuse("format", "is '" + format + "'; allowed: " + kRecordsFormat + " (written by `tuner export --format jsonl`)");

  ImportRecord r;
  r.workload.op = in.str(j, "op");
  r.workload.shape = in.str(j, "shape");
  r.workload.dtype = in.str(j, "dtype");
  try {
    const auto w = templates::parse_workload(r.workload.op, r.workload.shape, r.workload.dtype);
    if (w.shape_string() != r.workload.shape)
      in.refuse("shape", "is '" + r.workload.shape + "'; allowed: the canonical form '" + w.shape_string() + "'");
    if (templates::to_string(w.dtype) != r.workload.dtype)
      in.refuse("dtype", "is '" + r.workload.dtype + "'; allowed: f32, f16, bf16");
  } catch (const std::invalid_argument& e) {
    // A user kernel's records (`tune --kernel`) name its own op, one no built-in template implements (a malformed
    // gemm line is refused below, whatever its template): left out, as its source is not in the file.
    const std::string named = in.str(j, "template");
    const auto& all = templates::all_templates();
    if (std::none_of(all.begin(), all.end(), [&](const auto* t) { return t->name() == named || t->op() == r.workload.op; }))
      throw UserKernelLine{r.workload.op};
    in.refuse("op/shape/dtype", std::string("is not a workload: ") + e.what());
  }

  // The template: known by name, implementing the op, at this build's version.
  r.version.name = in.str(j, "template");
  r.version.hash = in.str(j, "template_version");
  const templates::KernelTemplate* tmpl = nullptr;
  std::string names;
  for (const auto* t : templates::all_templates()) {
    if (t->name() == r.version.name) tmpl = t;
    names += (names.empty() ? "" : ", ") + t->name();
  }
  if (!tmpl) in.refuse("template", "is '" + r.version.name + "', not a template of this build; allowed: " + names);
  if (tmpl->op() != r.workload.op)
    in.refuse("template", "is '" + r.version.name + "', which implements " + tmpl->op() + ", not " + r.workload.op);
  {
    // Nor a dtype the template does not implement (gemm_f32_simt's record relabelled f16): `tune` refuses it.
    const auto w = templates::parse_workload(r.workload.op, r.workload.shape, r.workload.dtype);
    const auto dts = tmpl->dtypes();
    if (std::find(dts.begin(), dts.end(), w.dtype) == dts.end()) {
      std::string allowed;
      for (auto d : dts) allowed += (allowed.empty() ? "" : ", ") + templates::to_string(d);
      in.refuse("dtype", "is " + r.workload.dtype + ", which " + r.version.name + " does not implement; allowed: " +
                             allowed);
    }
  }
  const std::string current = template_hash(*tmpl);
  if (r.version.hash != current)
    in.refuse("template_version", "is '" + r.version.hash + "', not this build's version of " + r.version.name +
                                      "; allowed: " + current + " (records of other template versions are refused)");

  // The device: its whole identity, as the database stores it.
  const Json& d = in.field(j, "device_identity", "device_identity");
  if (!d.is_object()) in.refuse("device_identity", "is not an object");
  const std::string p = "device_identity.";
  r.device.name = in.str(d, "name", p);
  if (r.device.name.empty()) in.refuse(p + "name", "is empty");
  r.device.simulated = in.boolean(d, "simulated", p);
  r.device.cc_major = static_cast<int>(in.integer(d, "cc_major", p));
  r.device.cc_minor = static_cast<int>(in.integer(d, "cc_minor", p));
  r.device.sm_count = static_cast<int>(in.integer(d, "sm_count", p));
  r.device.memory_bytes = in.integer(d, "memory_bytes", p, INT64_MAX);
  r.device.driver_version = in.str(d, "driver_version", p);
  r.device.nvrtc_version = in.str(d, "nvrtc_version", p);
  if (in.str(j, "device") != r.device.name)
    in.refuse("device", "is '" + in.str(j, "device") + "' but device_identity.name is '" + r.device.name + "'");
  // A simulated device is a sim: GPU of this build's spec table (with its compute capability and SM count) or a
  // replay of a recording (named after the recorded GPU).
  if (r.device.simulated && r.device.name.rfind("replay:", 0) != 0) {
    const auto spec = r.device.name.rfind("sim:", 0) == 0 ? costmodel::find_gpu_spec(r.device.name.substr(4))
                                                          : std::nullopt;
    if (!spec)
      in.refuse(p + "name", "is '" + r.device.name + "', which is no simulated device of this build; allowed: "
                            "replay:<GPU name> or sim:<gpu> with <gpu> one of " + costmodel::gpu_spec_keys());
    if (spec->cc_major != r.device.cc_major || spec->cc_minor != r.device.cc_minor || spec->sm_count != r.device.sm_count)
      in.refuse(p + "name", "is '" + r.device.name + "' with compute capability " + std::to_string(r.device.cc_major) +
                            "." + std::to_string(r.device.cc_minor) + " and " + std::to_string(r.device.sm_count) +
                            " SMs; allowed: that sim device's own, " + std::to_string(spec->cc_major) + "." +
                            std::to_string(spec->cc_minor) + " and " + std::to_string(spec->sm_count) + " SMs");
  }

  // The trial.
  auto& t = r.trial;
  const Json& config = in.field(j, "config", "config");
  if (!config.is_object() || config.empty()) in.refuse("config", "is not a non-empty JSON object of knob values");
  t.config_json = config.dump();
  // The config must be one of the template's for this workload on this device (its knobs, their values and the
  // constraints), as a session would have measured it: a config outside the space would reach the deployment
  // file (`export --format best`) unchecked. Spaces are built once per (template, workload, device).
  {
    static std::map<std::string, search::ConfigSpace> spaces;
    const std::string key = r.version.name + "|" + r.workload.op + "|" + r.workload.shape + "|" + r.workload.dtype +
                            "|" + r.device.name + "|" + std::to_string(r.device.cc_major) + "." +
                            std::to_string(r.device.cc_minor) + "|" + std::to_string(r.device.sm_count);
    auto it = spaces.find(key);
    if (it == spaces.end()) {
      const auto w = templates::parse_workload(r.workload.op, r.workload.shape, r.workload.dtype);
      const auto limits =
          limits_of_recorded(r.device.name, r.device.cc_major, r.device.cc_minor, r.device.sm_count);
      // Nor a template the device cannot run (gemm_tc_wgmma off sm_90): `tune` refuses it there, and the runtime
      // would refuse the deployed record. Checked once per key: a refusal ends the import.
      if (auto why = tmpl->unsupported_on(limits))
        in.refuse("template", "is " + r.version.name + ", which does not run on '" + r.device.name + "': " + *why);
      it = spaces.emplace(key, tmpl->space(w, limits)).first;
    }
    // The constraints only where this build knows the device's limits (a sim device, or a GPU of the spec
    // table): a GPU it does not know gets default limits (48 KiB of shared memory per block), below what the
    // session on that GPU allowed, so there only the knobs and their values are checked.
    const bool limits_known =
        spec_of_recorded(r.device.name, r.device.cc_major, r.device.cc_minor, r.device.sm_count).has_value();
    try {
      const search::Config c = it->second.from_json(config);
      if (limits_known && !it->second.index_of(c))
        in.refuse("config", "is " + t.config_json + ", which breaks " + r.version.name +
                                "'s constraints for this workload and device; allowed: a config of its space");
      // What the config computes and moves, as a session would have stored them (GFLOP/s and GB/s are shown from
      // them): a file's own numbers are checked against them, not trusted.
      const templates::KernelInstance inst =
          tmpl->instantiate(it->second, c, templates::parse_workload(r.workload.op, r.workload.shape, r.workload.dtype));
      r.flops = inst.flops, r.bytes = inst.bytes;
    } catch (const std::invalid_argument& e) {
      in.refuse("config", std::string("is not a config of ") + r.version.name + ": " + e.what());
    }
  }
  t.status = in.str(j, "status");
  if (!db::is_trial_status(t.status))
    in.refuse("status", "is '" + t.status + "'; allowed: " + db::trial_statuses());
  t.error_message = in.str(j, "error");
  t.time_ms = in.num(j, "time_ms");
  t.time_spread_ms = in.num(j, "time_spread_ms");
  t.repeats = static_cast<int>(in.integer(j, "repeats"));
  t.gflops = in.num(j, "gflops");
  t.bytes = j.contains("bytes") ? in.num(j, "bytes") : 0.0;  // files exported before schema version 6 have none
  t.estimate = in.boolean(j, "estimate");
  t.purpose = in.str(j, "purpose");
  if (t.purpose != "search" && t.purpose != "remeasure")
    in.refuse("purpose", "is '" + t.purpose + "'; allowed: search, remeasure");
  t.compile_ms = in.num(j, "compile_ms");
  t.registers = static_cast<int>(in.integer(j, "registers"));
  t.shared_bytes = static_cast<int>(in.integer(j, "shared_bytes"));
  t.spill_bytes = static_cast<int>(in.integer(j, "spill_bytes"));
  t.started_at = in.str(j, "started_at");
  t.finished_at = in.str(j, "finished_at");
  // The store writes UTC times as 2026-11-22T14:37:25.123Z; a time ordered with them must have that form
  // ("yesterday" was stored).
  const auto iso = [](const std::string& v) {
    static const std::string pattern = "9999-99-99T99:99:99";
    if (v.size() < pattern.size() + 1 || v.back() != 'Z') return false;
    for (size_t i = 0; i < pattern.size(); ++i)
      if (pattern[i] == '9' ? !std::isdigit(static_cast<unsigned char>(v[i])) : v[i] != pattern[i]) return false;
    const std::string rest = v.substr(pattern.size(), v.size() - pattern.size() - 1);  // "" or ".123"
    if (rest.empty()) return true;
    return rest.size() >= 2 && rest[0] == '.' &&
           rest.find_first_not_of("0123456789", 1) == std::string::npos;
  };
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"started_at", &t.started_at},
                                   {"finished_at", &t.finished_at}})
    if (!value->empty() && !iso(*value))
      in.refuse(key, "is '" + *value + "'; allowed: an ISO-8601 UTC time, e.g. 2026-11-22T14:37:25.123Z");
  if (t.finished_at.empty()) in.refuse("finished_at", "is empty; allowed: the ISO-8601 time the trial ended");
  if (t.status == "ok" && !(t.time_ms > 0)) in.refuse("time_ms", "is 0 for an ok trial; allowed: > 0");
  // A measurement's numbers belong to ok trials, an error to the others: as a session stores them.
  if (t.status != "ok" && (t.time_ms != 0 || t.gflops != 0))
    in.refuse(t.time_ms != 0 ? "time_ms" : "gflops",
              "is " + as_given(t.time_ms != 0 ? t.time_ms : t.gflops) + " for a " + t.status +
                  " trial; allowed: 0 (only ok trials have times)");
  if (t.status == "ok" && !t.error_message.empty())
    in.refuse("error", "is '" + t.error_message + "' for an ok trial; allowed: empty");
  // GFLOP/s and bytes follow from the workload, the config and the time; a file that says otherwise was edited.
  const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)); };
  if (t.status == "ok") {
    const double gflops = r.flops / (t.time_ms * 1e-3) / 1e9;
    if (!near(t.gflops, gflops))
      in.refuse("gflops", "is " + as_given(t.gflops) + " but " + r.version.name + "'s " + as_given(r.flops) +
                              " FLOPs in time_ms " + as_given(t.time_ms) + " are " + as_given(gflops) +
                              "; allowed: the record's own value");
  }
  // 0: none given (records stored before schema version 6 have none, and are exported so).
  if (t.bytes != 0 && !near(t.bytes, r.bytes))
    in.refuse("bytes", "is " + as_given(t.bytes) + " but this config moves " + as_given(r.bytes) +
                           " bytes; allowed: the record's own value");
  t.bytes = r.bytes;
  // Whether a time is an estimate follows from the device: a sim device's always are, a GPU's never (a replayed
  // recording keeps what the recording said). Only ok trials have times: a failed one is stored with false.
  if (t.status == "ok" && r.device.name.rfind("replay:", 0) != 0 && t.estimate != r.device.simulated)
    in.refuse("estimate", std::string("is ") + (t.estimate ? "true" : "false") + " on " + r.device.name +
                              ", whose times are " + (r.device.simulated ? "" : "not ") +
                              "estimates; allowed: " + (r.device.simulated ? "true" : "false"));
  return r;
}

/// The file's whole text; "-" reads standard input (`tuner export ... | tuner import -`).
std::string read_text(const std::string& file) {
  std::ostringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(file, std::ios::binary);
  const int why = errno;  // (before the folder check can change it)
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(file, ec);
  if (!in || folder)
    throw UsageError("import: cannot read '" + file + "': " + (folder ? std::string("it is a folder") : std::strerror(why)) +
                     "; allowed: a file written by `tuner export --format jsonl`, or - for standard input");
  text << in.rdbuf();
  return text.str();
}

/// The file's records, every line checked; lines of kernels of your own are counted by op in `user_kernels`.
std::vector<ImportRecord> read_file(const std::string& file, const std::string& whole_text,
                                    std::map<std::string, int64_t>& user_kernels) {
  std::istringstream in(whole_text);
  std::vector<ImportRecord> records;
  size_t first_user_line = 0;
  std::string first_user_op;
  std::string text;
  size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    Json j;
    try {
      j = Json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      // A file that is one JSON document over several lines is another export (`--format best`), not records.
      if (line == 1) {
        if (Json::accept(whole_text)) {
          // Say what it is where it says so itself (a best-configs file, a replay recording).
          const Json doc = Json::parse(whole_text);
          const std::string format =
              doc.is_object() && doc.contains("format") && doc["format"].is_string() ? doc["format"].get<std::string>() : "";
          const std::string kind =
              format.rfind("tuner-best/", 0) == 0     ? "a " + format + " document (`tuner export --format best`)"
              : format.rfind("tuner-replay/", 0) == 0 ? "a " + format + " document (a recording: tune with --device replay:FILE)"
              : !format.empty()                        ? "a " + format + " document"
                                                       : "one JSON document";
          throw UsageError("import: " + file + " is " + kind + ", not records; allowed: a file written by "
                           "`tuner export --format jsonl`, one " + kRecordsFormat + " record per line");
        }
      }
      throw UsageError("import: " + file + ":" + std::to_string(line) + ": not a JSON line (at byte " +
                       std::to_string(e.byte) + "); allowed: one " + kRecordsFormat + " record per line");
    }
    try {
      records.push_back(read_record(LineReader(file, line, j)));
    } catch (const UserKernelLine& u) {
      ++user_kernels[u.op];
      if (first_user_line == 0) first_user_line = line, first_user_op = u.op;
    }
  }
  if (records.empty() && !user_kernels.empty())
    throw UsageError("import: " + file + ":" + std::to_string(first_user_line) + ": field 'op' is '" +
                     first_user_op + "', a user kernel's (`tune --kernel`), as every record of the file "
                     "is: its records are not imported, as its source is not in the file; allowed: records of built-in "
                     "ops");
  return records;
}

/// What one import session holds: records of the same device, workload and template version.
using ImportSessionKey = std::tuple<std::string, bool, int, int, int, int64_t, std::string, std::string,  // device
                                    std::string, std::string, std::string,                                // workload
                                    std::string, std::string>;                                            // template

ImportSessionKey key_of(const db::DeviceIdentity& d, const db::WorkloadKey& w, const std::string& template_name,
                        const std::string& template_hash) {
  return {d.name,  d.simulated, d.cc_major, d.cc_minor, d.sm_count,     d.memory_bytes, d.driver_version,
          d.nvrtc_version, w.op, w.shape, w.dtype, template_name, template_hash};
}

/// Writes the records into a new database at path: one finished "import" session per group. A line that repeats
/// another of its group exactly (config, status, times, purpose: the same measurement, as in two exports of copies
/// of one database joined) is left out; returns how many were, per group.
std::map<ImportSessionKey, int64_t> write_scratch(const std::string& path, const std::string& file,
                                           std::vector<ImportRecord>& records) {
  db::TuningDb scratch(path);
  std::map<ImportSessionKey, std::vector<ImportRecord*>> groups;
  std::vector<ImportSessionKey> order;  // groups in the order of their first line
  std::map<ImportSessionKey, int64_t> repeated;
  for (auto& r : records) {
    const ImportSessionKey key = key_of(r.device, r.workload, r.version.name, r.version.hash);
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) order.push_back(key);
    it->second.push_back(&r);
  }
  for (const auto& key : order) {
    const auto& members = groups.at(key);
    const ImportRecord& first = *members.front();
    const int64_t device_id = scratch.upsert_device(first.device);
    const int64_t workload_id = scratch.upsert_workload(first.workload);
    const int64_t template_id = scratch.upsert_template(first.version);
    std::vector<db::TrialRecord> trials;
    std::set<std::tuple<std::string, std::string, double, std::string, std::string, std::string>> seen;
    for (const auto* r : members) {
      const auto& t = r->trial;
      if (seen.emplace(t.config_json, t.status, t.time_ms, t.started_at, t.finished_at, t.purpose).second)
        trials.push_back(t);
      else
        ++repeated[key];
    }
    // Its budget counts what a tuning session's does: the search trials, not the finalists' re-measurements (it
    // said "budget 13" of a session of 8 trials and 5 re-measurements).
    const auto searched = std::count_if(trials.begin(), trials.end(),
                                        [](const db::TrialRecord& t) { return t.purpose != "remeasure"; });
    const int64_t session = scratch.begin_session(device_id, workload_id, template_id, "import", 0,
                                                  static_cast<int64_t>(searched), "tuner import " + file);
    scratch.add_trials(session, trials);
    scratch.end_session(session, "finished", "imported from " + file);
  }
  return repeated;
}

}  // namespace

int import_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string db_path, file, format;
  po::options_description desc("tuner import: bring in records written by `tuner export --format jsonl`");
  desc.add_options()
      ("help,h", "show this help")
      ("file", po::value(&file), "the exported records (jsonl); - reads standard input")
      ("db", po::value(&db_path)->default_value(default_db_path()), "the database to import into ($TUNER_DB or ./tuning.db)")
      ("format", po::value(&format)->default_value("jsonl"), "the file's format: jsonl (the only one)")
      ("json", "one JSON document on stdout");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  if (!parse_options("import", args, desc, vm, positional)) {
    std::cout << "usage: tuner import FILE|- [--db tuning.db] [--format jsonl] [--json]\n" << desc;
    return 0;
  }
  if (!vm.count("file"))
    throw UsageError("import: no FILE given; allowed: a file written by `tuner export --format jsonl`");
  if (format != "jsonl") throw UsageError("import: --format '" + format + "' is not readable; allowed: jsonl");

  const std::string text = read_text(file);
  if (file == "-") file = "stdin";  // how messages and the import sessions name it
  std::map<std::string, int64_t> user_kernels;
  auto records = read_file(file, text, user_kernels);  // every line checked before anything is written
  int64_t user_skipped = 0;
  std::string user_ops;
  for (const auto& [op, n] : user_kernels) user_skipped += n, user_ops += (user_ops.empty() ? "" : ", ") + op;
  if (user_skipped > 0)
    std::cerr << "import: left out " << user_skipped << " record" << (user_skipped == 1 ? "" : "s")
              << " of kernels of your own (" << user_ops << "): their source is not in the file\n";
  db::MergeReport report;
  int64_t repeated_in_file = 0;
  try {
    db::ScratchDbFile scratch("tuner-import");
    if (!records.empty()) {  // an empty file adds nothing, and creates no database
      const auto repeats = write_scratch(scratch.path(), file, records);
      db::TuningDb db(db_path);
      report = db.merge_from(scratch.path());
      // Lines repeated within the file are skipped too: counted in their group and in the total, apart from the
      // records that were already in the database.
      for (auto& g : report.groups)
        if (auto it = repeats.find(key_of(g.device, g.workload, g.template_name, g.template_hash));
            it != repeats.end())
          g.duplicates += it->second, repeated_in_file += it->second;
      report.duplicates += repeated_in_file;
    } else {
      // Nothing to add and nothing created, but --db is still checked: an empty file "imported into" a folder
      // that does not exist, or into a directory, exited 0.
      namespace fs = std::filesystem;
      std::error_code ec;
      if (db_path.empty() || fs::is_directory(db_path, ec))
        throw UsageError("import: --db '" + db_path + "' is " + (db_path.empty() ? "empty" : "a directory") +
                         "; allowed: a tuner database file");
      const fs::path parent = fs::path(db_path).parent_path();
      if (!parent.empty() && !fs::is_directory(parent, ec))
        throw UsageError("import: --db '" + db_path + "': folder '" + parent.string() + "' does not exist");
      if (fs::exists(db_path, ec)) (void)db::TuningDb::open_existing(db_path);  // a tuner database of a known version
    }
  } catch (const db::DbError& e) {
    if (e.bad_input()) throw UsageError(e.what());
    throw;
  }

  if (vm.count("json")) {
    Json j;
    j["from"] = file;
    j["into"] = db_path;
    j["records"] = records.size();
    j["added"] = report.trials_added;
    j["skipped"] = report.duplicates;
    j["already_here"] = report.duplicates - repeated_in_file;
    j["repeated_in_file"] = repeated_in_file;
    j["user_kernel_records_left_out"] = user_skipped;
    j["sessions_added"] = report.sessions_added;
    j["groups"] = Json::array();
    for (const auto& g : report.groups)
      j["groups"].push_back({{"op", g.workload.op}, {"shape", g.workload.shape}, {"dtype", g.workload.dtype},
                             {"device", g.device_name}, {"template", g.template_name},
                             {"template_version", g.template_hash}, {"added", g.added}, {"skipped", g.duplicates}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (records.empty()) {  // nothing was written: say so rather than "imported into" a file that may not exist
    std::cout << "nothing imported from " << file << ": it holds no records; " << db_path
              << (std::filesystem::exists(db_path) ? " is unchanged" : " was not created") << "\n";
    return 0;
  }
  std::cout << "imported " << file << " into " << db_path << ": " << records.size() << " records, "
            << report.trials_added << " added, " << report.duplicates << " skipped ("
            << report.duplicates - repeated_in_file << " already here, " << repeated_in_file
            << " repeated in the file), " << report.sessions_added << " sessions\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : report.groups)
    rows.push_back({g.workload.op + " " + g.workload.shape + " " + g.workload.dtype, g.device_name,
                    g.template_name + "@" + g.template_hash, std::to_string(g.added), std::to_string(g.duplicates)});
  if (!rows.empty()) print_table({"workload", "device", "template", "added", "skipped"}, rows);
  return 0;
}

}  // namespace tuner::cli
