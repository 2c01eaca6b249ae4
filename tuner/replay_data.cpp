#include "tuner/replay_data.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"
#include "templates/workload.h"
#include "tuner/atomic_file.h"

namespace tuner {

namespace {

constexpr const char* kFormat = "tuner-replay/1";

nlohmann::json identity_json(const db::DeviceIdentity& d) {
  return {{"name", d.name},         {"simulated", d.simulated},         {"cc_major", d.cc_major},
          {"cc_minor", d.cc_minor}, {"sm_count", d.sm_count},           {"memory_bytes", d.memory_bytes},
          {"driver_version", d.driver_version}, {"nvrtc_version", d.nvrtc_version}};
}

// Validation of a file as read: every field is checked where it is read, and the first bad one
// becomes one line naming the field's path (records[12].time_ms), a short excerpt of its value and
// what is allowed. Values are echoed as JSON (escaped, ASCII) and cut, so a line stays a line.

constexpr size_t kExcerptChars = 60;
constexpr double kMinOkTimeMs = 1e-6;   // 1 ns: nothing a GPU launches is faster.
constexpr double kMaxTimeMs = 3.6e6;    // One hour: the longest --timeout.
constexpr int64_t kMaxRegisters = 255;  // Per thread, on every architecture.
constexpr int64_t kMaxSharedBytes = int64_t{1} << 24;
constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

/// The first `n` bytes of `s`, cut back to a UTF-8 boundary (a cut sequence would not dump as JSON).
std::string utf8_prefix(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

/// A bad field: thrown inside the reader, turned into the one line by read_replay.
struct FieldError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

[[noreturn]] void bad_field(const std::string& path, const nlohmann::json* value, const std::string& allowed) {
  throw FieldError(path + (value ? " is " + replay_excerpt(value->dump(-1, ' ', true)) : std::string(" is missing")) +
                   "; allowed: " + allowed);
}

/// An object key for a message: escaped and cut.
std::string key_excerpt(const std::string& key) { return replay_excerpt(nlohmann::json(key).dump(-1, ' ', true)); }

/// A field of an object: required (missing is an error) or optional (nullptr when absent).
const nlohmann::json* member(const nlohmann::json& obj, const std::string& path, const char* key, bool required,
                             const std::string& allowed) {
  auto it = obj.find(key);
  if (it != obj.end()) return &*it;
  if (required) bad_field(path + key, nullptr, allowed);
  return nullptr;
}

void require_object(const nlohmann::json& j, const std::string& path, std::initializer_list<const char*> keys) {
  std::string names;
  for (const char* k : keys) names += (names.empty() ? "" : ", ") + std::string(k);
  if (!j.is_object()) bad_field(path.empty() ? "the document" : path, &j, "an object with " + names);
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known)
      throw FieldError((path.empty() ? "" : path + ".") + key_excerpt(it.key()) + " is not a known key; allowed: " +
                       names);
  }
}

std::string get_string(const nlohmann::json& obj, const std::string& path, const char* key, size_t max_len,
                       bool required = true, bool one_line = true) {
  const std::string allowed = "a string of at most " + std::to_string(max_len) + " characters" +
                              (one_line ? " without control characters" : "");
  const nlohmann::json* v = member(obj, path, key, required, allowed);
  if (!v) return {};
  if (!v->is_string()) bad_field(path + key, v, allowed);
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) bad_field(path + key, v, allowed);
  if (one_line)
    for (unsigned char c : s)
      if (c < 0x20 || c == 0x7f) bad_field(path + key, v, allowed);
  return s;
}

int64_t get_int(const nlohmann::json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
                std::optional<int64_t> fallback = std::nullopt) {
  const std::string allowed = "an integer in " + std::to_string(lo) + " .. " + std::to_string(hi);
  const nlohmann::json* v = member(obj, path, key, !fallback, allowed);
  if (!v) return *fallback;
  // Integers beyond 64 bits parse as floating point: rejected here, never converted.
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) bad_field(path + key, v, allowed);
    return static_cast<int64_t>(u);
  }
  if (!v->is_number_integer()) bad_field(path + key, v, allowed);
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) bad_field(path + key, v, allowed);
  return i;
}

double get_number(const nlohmann::json& obj, const std::string& path, const char* key, double lo, double hi,
                  std::optional<double> fallback, const std::string& unit) {
  std::ostringstream allowed;
  allowed << "a number of " << unit << " in " << lo << " .. " << hi;
  const nlohmann::json* v = member(obj, path, key, !fallback, allowed.str());
  if (!v) return *fallback;
  if (!v->is_number()) bad_field(path + key, v, allowed.str());
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) bad_field(path + key, v, allowed.str());
  return d;
}

bool get_bool(const nlohmann::json& obj, const std::string& path, const char* key, std::optional<bool> fallback) {
  const nlohmann::json* v = member(obj, path, key, !fallback, "true or false");
  if (!v) return *fallback;
  if (!v->is_boolean()) bad_field(path + key, v, "true or false");
  return v->get<bool>();
}

db::DeviceIdentity identity_from(const nlohmann::json& j) {
  require_object(j, "device",
                 {"name", "simulated", "cc_major", "cc_minor", "sm_count", "memory_bytes", "driver_version",
                  "nvrtc_version"});
  const std::string p = "device.";
  db::DeviceIdentity d;
  d.name = get_string(j, p, "name", 256);
  d.simulated = get_bool(j, p, "simulated", std::nullopt);
  d.cc_major = static_cast<int>(get_int(j, p, "cc_major", 0, 99));
  d.cc_minor = static_cast<int>(get_int(j, p, "cc_minor", 0, 99));
  d.sm_count = static_cast<int>(get_int(j, p, "sm_count", 0, 100000));
  d.memory_bytes = get_int(j, p, "memory_bytes", 0, int64_t{1} << 50);
  d.driver_version = get_string(j, p, "driver_version", 64);
  d.nvrtc_version = get_string(j, p, "nvrtc_version", 64);
  return d;
}

/// A record's config: an object of knob name -> integer value.
void check_config(const nlohmann::json& c, const std::string& path) {
  const std::string allowed = "an object of at most 64 knobs, each a name of 1 .. 64 characters with an integer value";
  if (!c.is_object() || c.size() > 64) bad_field(path, &c, allowed);
  for (auto it = c.begin(); it != c.end(); ++it) {
    if (it.key().empty() || it.key().size() > 64) bad_field(path, &c, allowed);
    if (!it.value().is_number_integer()) bad_field(path + "." + key_excerpt(it.key()), &it.value(), "an integer");
  }
}

ReplayRecord record_from(const nlohmann::json& r, const std::string& p) {
  require_object(r, p.substr(0, p.size() - 1),
                 {"config", "status", "error", "time_ms", "time_spread_ms", "repeats", "registers", "shared_bytes",
                  "spill_bytes", "estimate"});
  ReplayRecord rec;
  const nlohmann::json* st = member(r, p, "status", true, db::trial_statuses());
  if (!st->is_string()) bad_field(p + "status", st, db::trial_statuses());
  rec.status = st->get<std::string>();
  if (!db::is_trial_status(rec.status)) bad_field(p + "status", st, db::trial_statuses());
  rec.error_message = get_string(r, p, "error", 4096, false, false);
  const bool ok = rec.status == "ok";
  rec.time_ms = ok ? get_number(r, p, "time_ms", kMinOkTimeMs, kMaxTimeMs, std::nullopt, "ms (an ok record)")
                   : get_number(r, p, "time_ms", 0, kMaxTimeMs, 0.0, "ms");
  rec.time_spread_ms = get_number(r, p, "time_spread_ms", 0, kMaxTimeMs, 0.0, "ms");
  rec.repeats = static_cast<int>(get_int(r, p, "repeats", 0, kMaxInt, 0));
  rec.registers = static_cast<int>(get_int(r, p, "registers", 0, kMaxRegisters, 0));
  rec.shared_bytes = static_cast<int>(get_int(r, p, "shared_bytes", 0, kMaxSharedBytes, 0));
  rec.spill_bytes = static_cast<int>(get_int(r, p, "spill_bytes", 0, kMaxInt, 0));
  rec.estimate = get_bool(r, p, "estimate", false);
  return rec;
}

}  // namespace

std::string replay_excerpt(std::string_view text) {
  if (text.size() <= kExcerptChars) return std::string(text);
  return utf8_prefix(text, kExcerptChars) + "...";
}

int canonicalize_records(ReplayData& d, const search::ConfigSpace& space) {
  std::map<std::string, ReplayRecord> out;
  int moved = 0;
  for (auto& [json, rec] : d.records) {
    std::string key = json;
    try {
      // The stable key: the space's JSON with its keys sorted (nlohmann::json), as the writer and the loaders key it.
      key = nlohmann::json(space.to_json(space.from_json(nlohmann::json::parse(json)))).dump();
    } catch (const std::exception&) {
      // Not a config of this space: kept as it is (the loaders count it outside the space).
    }
    moved += key != json ? 1 : 0;
    out.emplace(std::move(key), std::move(rec));
  }
  d.records = std::move(out);
  return moved;
}

const ReplayRecord* ReplayData::find(const std::string& config_json) const {
  auto it = records.find(config_json);
  return it == records.end() ? nullptr : &it->second;
}

ReplayData parse_replay(std::string_view text, const std::string& path) {
  const std::string where = "replay file '" + path + "'";
  ReplayData d;
  d.path = path;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(where + " is not valid JSON: " + e.what());
  }
  try {
    require_object(j, "", {"format", "device", "gpu", "op", "shape", "dtype", "template", "template_version",
                           "space_size", "records"});
    const std::string format = get_string(j, "", "format", 64);
    if (format != kFormat) bad_field("format", &j["format"], std::string("\"") + kFormat + "\"");
    d.device = identity_from(*member(j, "", "device", true, "an object"));
    d.gpu_key = get_string(j, "", "gpu", 64);
    d.op = get_string(j, "", "op", 64);
    d.shape = get_string(j, "", "shape", 256);
    d.dtype = get_string(j, "", "dtype", 16);
    try {
      (void)templates::parse_workload(d.op, d.shape, d.dtype);
    } catch (const std::invalid_argument& e) {
      throw FieldError("op, shape and dtype are no workload (" + std::string(e.what()) +
                       "); allowed: a workload as `tuner tune --op --shape --dtype` takes it");
    }
    d.template_name = get_string(j, "", "template", 64);
    d.template_version = get_string(j, "", "template_version", 64);
    d.space_size = get_int(j, "", "space_size", 0, std::numeric_limits<int64_t>::max());
    const nlohmann::json* records = member(j, "", "records", true, "an array of records");
    if (!records->is_array()) bad_field("records", records, "an array of records");
    std::map<std::string, size_t> first_index;
    for (size_t i = 0; i < records->size(); ++i) {
      const std::string p = "records[" + std::to_string(i) + "].";
      const nlohmann::json& r = (*records)[i];
      ReplayRecord rec = record_from(r, p);
      const nlohmann::json& config = *member(r, p, "config", true, "an object of knob -> integer");
      check_config(config, p + "config");
      std::string key = config.dump();
      auto [it, fresh] = first_index.emplace(key, i);
      if (!fresh)
        bad_field(p + "config", &config, "one record per config (records[" + std::to_string(it->second) + "] has it)");
      d.records.emplace(std::move(key), std::move(rec));
    }
  } catch (const FieldError& e) {
    throw std::invalid_argument(where + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(where + " is malformed: " + e.what());
  }
  return d;
}

ReplayData read_replay(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument("replay file '" + path + "' is a directory; allowed: a recording file (tuner-replay/1 "
                                "JSON, e.g. one of data/replay/)");
  std::ifstream in(path, std::ios::binary);
  const auto unreadable = [&] {
    return std::invalid_argument("replay file '" + path + "' cannot be read: " + std::strerror(errno) +
                                 "; allowed: a recording file (tuner-replay/1 JSON, e.g. one of data/replay/)");
  };
  if (!in) throw unreadable();
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw unreadable();
  return parse_replay(text.str(), path);
}

ReplayData replay_from_rows(const std::vector<db::ResultRow>& rows, const db::DeviceIdentity& device,
                            const std::string& gpu_key, int64_t space_size) {
  ReplayData d;
  d.device = device;
  d.gpu_key = gpu_key;
  d.space_size = space_size;
  std::map<std::string, int> ok_count;
  for (const auto& row : rows) {
    if (d.op.empty()) {
      d.op = row.workload.op;
      d.shape = row.workload.shape;
      d.dtype = row.workload.dtype;
      d.template_name = row.template_name;
      d.template_version = row.template_hash;
    }
    const auto& t = row.trial;
    // The config's JSON as the space writes it is already stable; re-dump to the canonical form.
    const std::string key = nlohmann::json::parse(t.config_json).dump();
    auto [it, fresh] = d.records.try_emplace(key);
    ReplayRecord& rec = it->second;
    if (t.status != "ok") {
      if (fresh) {
        rec.status = t.status;
        rec.error_message = t.error_message;
        rec.registers = t.registers;
        rec.shared_bytes = t.shared_bytes;
        rec.spill_bytes = t.spill_bytes;
      }
      continue;
    }
    int& n = ok_count[key];
    rec.time_ms = (rec.time_ms * n + t.time_ms) / (n + 1);
    rec.time_spread_ms = std::max(rec.time_spread_ms, t.time_spread_ms);
    rec.repeats += t.repeats;
    ++n;
    rec.status = "ok";
    rec.error_message.clear();
    rec.registers = t.registers;
    rec.shared_bytes = t.shared_bytes;
    rec.spill_bytes = t.spill_bytes;
    rec.estimate = t.estimate;
  }
  return d;
}

void write_replay(const ReplayData& d, const std::string& path) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& [config, r] : d.records) {
    nlohmann::json j{{"config", nlohmann::json::parse(config)}, {"status", r.status}};
    if (r.status == "ok") {
      j["time_ms"] = r.time_ms;
      j["time_spread_ms"] = r.time_spread_ms;
      j["repeats"] = r.repeats;
    } else {
      j["error"] = utf8_prefix(r.error_message, 200);
    }
    j["registers"] = r.registers;
    j["shared_bytes"] = r.shared_bytes;
    j["spill_bytes"] = r.spill_bytes;
    if (r.estimate) j["estimate"] = true;
    records.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["format"] = kFormat;
  out["device"] = identity_json(d.device);
  out["gpu"] = d.gpu_key;
  out["op"] = d.op;
  out["shape"] = d.shape;
  out["dtype"] = d.dtype;
  out["template"] = d.template_name;
  out["template_version"] = d.template_version;
  out["space_size"] = d.space_size;
  out["records"] = std::move(records);
  // One record per line keeps committed replay files diffable.
  std::string f = "{\n";
  bool first = true;
  for (auto it = out.begin(); it != out.end(); ++it) {
    if (!first) f += ",\n";
    first = false;
    f += "  " + nlohmann::json(it.key()).dump() + ": ";
    if (it.key() == "records") {
      f += "[";
      for (size_t i = 0; i < it.value().size(); ++i) f += (i ? ",\n    " : "\n    ") + it.value()[i].dump();
      f += "\n  ]";
    } else {
      f += it.value().dump();
    }
  }
  f += "\n}\n";
  if (const std::string why = write_file_atomically(path, f); !why.empty())
    throw std::runtime_error("cannot write replay file '" + path + "': " + why);
}

}  // namespace tuner
