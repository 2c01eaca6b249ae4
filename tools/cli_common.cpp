#include "tools/cli_common.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>

#include "templates/registry.h"
#include "tuner/atomic_file.h"
#include "tuner/device_registry.h"
#include "tuner/tuning_session.h"

namespace tuner::cli {

std::string default_db_path() {
  if (const char* env = std::getenv("TUNER_DB"); env && *env) return env;
  return "tuning.db";
}

std::string as_given(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void write_output_file(const std::string& what, const std::string& path, const std::string& text) {
  bool could_not_open = false;
  if (const std::string why = write_file_atomically(path, text, &could_not_open); !why.empty()) {
    if (could_not_open) throw UsageError("cannot write " + what + " '" + path + "': " + why + "; allowed: a writable file path");
    throw std::runtime_error("writing " + what + " '" + path + "' failed: " + why + "; the file is as it was");
  }
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec, ec2;
  const bool same = fs::equivalent(a, b, ec);
  if (!ec) return same;
  // One of them does not exist yet: compare where the names lead.
  const fs::path x = fs::weakly_canonical(a, ec), y = fs::weakly_canonical(b, ec2);
  return !ec && !ec2 && x == y;
}

void refuse_output_over_db(const std::string& flag, const std::string& out, const std::string& db_path) {
  if (out.empty() || out == "-") return;
  if (!db_path.empty() && db_path != ":memory:")
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      const std::string file = db_path + suffix;
      if (same_file(out, file))
        throw UsageError(flag + " '" + out + "' is " + (*suffix ? "a file of " : "") + "the tuning database (--db " +
                         db_path + "); writing it would destroy the records; allowed: another file");
    }
  // Another database (a second tuning database, another project's), or a file SQLite keeps beside one (its -wal
  // holds commits not yet in the file): no export or report is ever meant to replace them.
  const auto sqlite = [](const std::string& file) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return false;  // (a FIFO would block a read)
    std::ifstream in(file, std::ios::binary);
    char head[16] = {};
    return in && in.read(head, sizeof head) && std::string(head, sizeof head) == std::string("SQLite format 3\0", 16);
  };
  if (sqlite(out))
    throw UsageError(flag + " '" + out + "' is an SQLite database (another tuning database?); writing it would "
                     "destroy it; allowed: another file");
  // By the name given and by where it leads (a link is written through).
  std::error_code ec;
  const std::string real = std::filesystem::weakly_canonical(out, ec).string();
  for (const std::string& name : {out, ec ? out : real})
    for (const std::string suffix : {"-wal", "-shm", "-journal"})
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          sqlite(name.substr(0, name.size() - suffix.size())))
        throw UsageError(flag + " '" + out + "' is " + (name == out ? "" : "a link to ") +
                         "a file SQLite keeps beside the database '" + name.substr(0, name.size() - suffix.size()) +
                         "'; writing it would damage the database; allowed: another file");
}

void say_why_nothing_matched(const RecordFilter& rf) {
  for (const std::string* note : {&rf.unrecorded_note, &rf.template_note})
    if (!note->empty()) std::cerr << "tuner: " << *note << "\n";
}

nlohmann::ordered_json record_json(const db::ResultRow& row, bool aggregate) {
  nlohmann::ordered_json j;
  const auto& t = row.trial;
  j["op"] = row.workload.op;
  j["shape"] = row.workload.shape;
  j["dtype"] = row.workload.dtype;
  j["device"] = row.device_name;
  j["config"] = nlohmann::ordered_json::parse(t.config_json);
  j["status"] = t.status;
  j["time_ms"] = t.time_ms;
  j["time_spread_ms"] = t.time_spread_ms;
  j["repeats"] = t.repeats;
  j["gflops"] = t.gflops;
  j["gbps"] = gbps(row);  // memory-bound ops and user kernels; else 0
  j["bytes"] = t.bytes;   // as stored (0: not recorded)
  j["estimate"] = t.estimate;
  j["purpose"] = t.purpose;
  if (aggregate) {
    j["measurements"] = row.measurements;
    j["mean_time_ms"] = row.mean_time_ms;
  }
  j["error"] = t.error_message;
  j["compile_ms"] = t.compile_ms;
  j["registers"] = t.registers;
  j["shared_bytes"] = t.shared_bytes;
  j["spill_bytes"] = t.spill_bytes;
  j["template"] = row.template_name;
  j["template_version"] = row.template_hash;
  j["driver_version"] = row.driver_version;
  j["nvrtc_version"] = row.nvrtc_version;
  j["session_id"] = t.session_id;
  j["trial_id"] = t.id;
  j["finished_at"] = t.finished_at;
  return j;
}

double bytes_moved(const db::ResultRow& r) {
  const db::WorkloadKey& w = r.workload;
  if (w.op == "gemm" || w.op == "batched_gemm" || w.op == "conv2d") return 0;
  if (r.trial.bytes > 0) return r.trial.bytes;
  if (!templates::is_row_op(w.op)) return 0;
  try {
    return templates::compulsory_bytes(templates::parse_workload(w.op, w.shape, w.dtype));
  } catch (const std::exception&) {
    return 0;
  }
}

double gbps(const db::ResultRow& r) {
  const double bytes = bytes_moved(r), time_ms = r.trial.time_ms;
  if (r.trial.status != "ok" || bytes <= 0 || time_ms <= 0) return 0;
  return bytes / (time_ms * 1e-3) / 1e9;
}

std::vector<std::string> recorded_device_names(const db::TuningDb& db) {
  std::set<std::string> names;
  for (const auto& s : db.sessions(db::QueryFilter{})) names.insert(s.device_name);
  return {names.begin(), names.end()};
}

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  if (names.empty()) return "(none: the database has no records)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

/// Fills f's device part from --device; see build_record_filter.
void match_device(const std::string& spec, const db::TuningDb& db, RecordFilter& f) {
  const auto recorded = recorded_device_names(db);
  const auto is_recorded = [&](const std::string& n) {
    return std::find(recorded.begin(), recorded.end(), n) != recorded.end();
  };
  if (is_recorded(spec) || is_recorded("replay:" + spec)) {
    if (is_recorded(spec)) f.device_names.push_back(spec);
    // A bare GPU name also answers with what was replayed from recordings of that GPU.
    if (spec.rfind("replay:", 0) != 0 && spec.rfind("sim:", 0) != 0 && is_recorded("replay:" + spec))
      f.device_names.push_back("replay:" + spec);
    return;
  }
  const bool replay = spec.rfind("replay:", 0) == 0;
  const bool cuda = spec.rfind("cuda:", 0) == 0;
  const bool sim = spec.rfind("sim:", 0) == 0;
  if (replay && !std::filesystem::exists(spec.substr(7)))
    throw UsageError("--device '" + spec + "' is neither a recording file nor a device recorded in the database; "
                     "recorded devices: " + quoted_list(recorded));
  if (!replay && !cuda && !sim)
    throw UsageError("--device '" + spec + "' is no device recorded in the database; allowed: cuda:N, sim:<gpu>, "
                     "replay:FILE or a recorded name: " + quoted_list(recorded));
  DeviceTarget d;
  try {
    d = resolve_device(spec);
  } catch (const std::invalid_argument& e) {
    if (!cuda) throw UsageError(e.what());
    throw UsageError(std::string(e.what()) + "; to read records of a GPU that is not here, pass its recorded name: " +
                     quoted_list(recorded));
  }
  // A replay file names its recorded GPU: recorded under that name, it is no unrecorded device.
  if (!is_recorded(d.identity.name))
    f.unrecorded_note = "device '" + spec + "' has no session in this database; recorded devices: " + quoted_list(recorded);
  if (d.simulated) {  // sim:<gpu>, or replay:FILE (stored as "replay:<recording GPU>")
    f.filter.device_name = d.identity.name;
    f.filter.simulated = true;
    return;
  }
  f.filter.simulated = false;  // a real H100 and sim:h100-sxm share CC and SM count
  f.filter.cc_major = d.identity.cc_major;
  f.filter.cc_minor = d.identity.cc_minor;
  f.filter.sm_count = d.identity.sm_count;
}

}  // namespace

namespace {

bool is_builtin_op(const std::string& op) {
  try {
    templates::op_dimensions(op);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace

std::vector<db::TemplateVersion> current_template_versions(const db::TuningDb& db) {
  std::vector<db::TemplateVersion> out;
  for (const auto* t : templates::all_templates()) out.push_back({t->name(), template_hash(*t)});
  for (const auto& t : db.latest_template_versions())
    if (std::none_of(out.begin(), out.end(), [&](const db::TemplateVersion& b) { return b.name == t.name; }))
      out.push_back(t);
  return out;
}

RecordFilter build_record_filter(const RecordFilterOptions& o, const db::TuningDb& db) {
  RecordFilter out;
  auto& f = out.filter;
  f.limit = o.limit;
  try {
    if (!o.shape.empty() && o.op.empty()) throw std::invalid_argument("--shape needs --op to name its dimensions");
    if (!o.op.empty()) {
      f.op = o.op;
      if (!is_builtin_op(o.op)) {
        // A user kernel's op is known by its records: its sizes are named as a recorded shape names them (the
        // spec's order), so --shape is checked and written as the records write it. A spec whose sizes were
        // renamed records shapes of other names: the recorded shape with --shape's names, else the newest.
        const std::vector<std::string> shapes = db.shapes_of_op(o.op);
        if (!shapes.empty()) {
          auto sorted_names = [](std::string_view shape) {
            std::vector<std::string> n = templates::shape_dimension_names(shape);
            std::sort(n.begin(), n.end());
            return n;
          };
          std::string chosen = shapes.front();
          for (const auto& s : shapes)
            if (!o.shape.empty() && sorted_names(s) == sorted_names(o.shape)) {
              chosen = s;
              break;
            }
          templates::register_op_dimensions(o.op, templates::shape_dimension_names(chosen));
        }
      }
      try {
        templates::op_dimensions(o.op);  // validates the op
      } catch (const std::invalid_argument& e) {
        // A misspelt user op: the ops of user kernels this database recorded are allowed too.
        std::string user;
        for (const auto& op : db.recorded_ops())
          if (!is_builtin_op(op)) user += (user.empty() ? "" : ", ") + op;
        throw std::invalid_argument(std::string(e.what()) +
                                    (user.empty() ? "" : "; or a user kernel's op recorded here: " + user));
      }
      if (!o.shape.empty())
        f.shape = templates::parse_workload(o.op, o.shape, o.dtype.empty() ? "f32" : o.dtype).shape_string();
    }
    if (!o.dtype.empty()) f.dtype = templates::to_string(templates::dtype_from_string(o.dtype));
    if (!o.template_name.empty()) {
      std::string names;
      for (const auto& t : current_template_versions(db)) {
        if (t.name == o.template_name) f.template_name = o.template_name;
        names += (names.empty() ? "" : ", ") + t.name;
      }
      if (f.template_name.empty())
        throw std::invalid_argument("--template '" + o.template_name + "' is not a template; allowed: " + names);
      if (!o.op.empty())
        for (const templates::KernelTemplate* t : templates::all_templates())
          if (t->name() == o.template_name && t->op() != o.op) {
            std::set<std::string> of_op;  // of the asked dtype, or of every dtype when none is asked
            for (const templates::KernelTemplate* u : templates::all_templates()) {
              const std::vector<templates::DType> dtypes = u->dtypes();  // (by value: one vector for both ends)
              if (u->op() == o.op &&
                  (o.dtype.empty() ||
                   std::count(dtypes.begin(), dtypes.end(), templates::dtype_from_string(o.dtype)) > 0))
                of_op.insert(u->name());
            }
            std::string names;
            for (const auto& n : of_op) names += (names.empty() ? "" : ", ") + n;
            out.template_note = "template '" + o.template_name + "' implements " + t->op() + ", not " + o.op +
                                "; the templates of " + o.op + (o.dtype.empty() ? "" : " " + o.dtype) + ": " +
                                (names.empty() ? std::string("none") : names);
          }
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!o.device.empty()) {
    match_device(o.device, db, out);
    out.single_device = true;
  }
  if (!o.all_versions)
    for (const auto& t : current_template_versions(db)) f.template_hashes.push_back(t.hash);
  return out;
}

namespace {

/// Runs query once per device name of f (or once), combining the rows.
template <typename Query>
std::vector<db::ResultRow> per_name(const RecordFilter& f, Query query) {
  if (f.device_names.size() <= 1) {
    db::QueryFilter one = f.filter;
    if (!f.device_names.empty()) one.device_name = f.device_names.front();
    return query(one);
  }
  std::vector<db::ResultRow> rows;
  for (const auto& name : f.device_names) {
    db::QueryFilter one = f.filter;
    one.device_name = name;
    auto part = query(one);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

}  // namespace

std::string older_versions_note(const db::TuningDb& db, const RecordFilter& f, bool ok_only) {
  if (f.filter.template_hashes.empty()) return "";  // --all-versions was given
  RecordFilter any = f;
  any.filter.template_hashes.clear();
  any.filter.limit = 0;
  const std::set<std::string> current(f.filter.template_hashes.begin(), f.filter.template_hashes.end());
  size_t n = 0;
  for (const auto& r : run_history(db, any))  // only what the version filter left out
    n += !current.count(r.template_hash) && (!ok_only || r.trial.status == "ok");
  if (n == 0) return "";
  return std::to_string(n) + " record" + (n == 1 ? " of another template version matches" :
                                                   "s of other template versions match") +
         " (the kernel changed since it was measured; a user kernel's current text is the one tuned last); "
         "--all-versions shows them";
}

std::vector<db::ResultRow> run_history(const db::TuningDb& db, const RecordFilter& f) {
  auto rows = per_name(f, [&](const db::QueryFilter& q) { return db.history(q); });
  if (f.device_names.size() > 1) {  // back to insertion order, then the limit over all of them
    std::stable_sort(rows.begin(), rows.end(),
                     [](const db::ResultRow& a, const db::ResultRow& b) { return a.trial.id < b.trial.id; });
    if (f.filter.limit > 0 && rows.size() > static_cast<size_t>(f.filter.limit)) rows.resize(f.filter.limit);
  }
  return rows;
}

int natural_compare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      // Without leading zeros a longer run of digits is the larger number (shapes never have them).
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
      if (const int c = x.compare(y); c != 0) return c < 0 ? -1 : 1;
      i = ie, j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
    ++i, ++j;
  }
  if (i == a.size() && j == b.size()) return 0;
  return i == a.size() ? -1 : 1;
}

std::vector<db::ResultRow> run_best_per_workload(const db::TuningDb& db, const RecordFilter& f) {
  // In the workloads' order with their sizes compared as numbers (M=512 before M=2048, C=64 before C=128), then
  // the limit: the database orders shapes as text.
  RecordFilter all = f;
  all.filter.limit = 0;
  auto rows = per_name(all, [&](const db::QueryFilter& q) { return db.best_per_workload(q); });
  std::stable_sort(rows.begin(), rows.end(), [](const db::ResultRow& a, const db::ResultRow& b) {
    if (a.workload.op != b.workload.op) return a.workload.op < b.workload.op;
    if (const int c = natural_compare(a.workload.shape, b.workload.shape); c != 0) return c < 0;
    return a.workload.dtype < b.workload.dtype;
  });
  if (f.filter.limit > 0 && rows.size() > static_cast<size_t>(f.filter.limit)) rows.resize(f.filter.limit);
  return rows;
}

std::optional<db::ResultRow> run_best(const db::TuningDb& db, const RecordFilter& f) {
  auto rows = per_name(f, [&](const db::QueryFilter& q) {
    std::vector<db::ResultRow> one;
    if (auto b = db.best(q)) one.push_back(*b);
    return one;
  });
  if (rows.empty()) return std::nullopt;
  return *std::min_element(rows.begin(), rows.end(), [](const db::ResultRow& a, const db::ResultRow& b) {
    return a.mean_time_ms < b.mean_time_ms;
  });
}

std::unique_ptr<db::TuningDb> open_for_reading(const std::string& path) {
  try {
    return std::make_unique<db::TuningDb>(db::TuningDb::open_existing(path));
  } catch (const db::DbError& e) {
    if (e.bad_input() || e.kind() == db::DbError::Kind::kOther) throw UsageError(e.what());
    throw;
  }
}

void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t c = 0; c < width.size(); ++c) {
      std::string cell = c < r.size() ? r[c] : "";
      out += cell;
      if (c + 1 < width.size()) out += std::string(width[c] - cell.size() + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::cout << out << "\n";
  };
  line(header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& r : rows) line(r);
}

}  // namespace tuner::cli
