#include "search/parallel/spec_json.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "search/parallel/op_graph.h"

namespace tuner::parallel {

namespace {

/// Where the parser is, from its callback events: the path of the value being read.
class PathTracker {
 public:
  bool on_event(nlohmann::json::parse_event_t e, const nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (e) {
      case E::object_start: frames_.push_back({false, 0, "", {}}); break;
      case E::array_start: frames_.push_back({true, 0, "", {}}); break;
      case E::key:
        if (!frames_.empty()) {
          Frame& f = frames_.back();
          f.key = parsed.is_string() ? parsed.get<std::string>() : "?";
          // A parser keeps the last of two equal keys: one of two values the user wrote would be ignored.
          if (!f.keys.insert(f.key).second && duplicate_.empty()) duplicate_ = path();
        }
        break;
      case E::object_end:
      case E::array_end:
        if (!frames_.empty()) frames_.pop_back();
        [[fallthrough]];
      case E::value:
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        break;
    }
    return true;
  }
  /// The path of the first key an object repeats; empty when none does.
  const std::string& duplicate() const { return duplicate_; }
  std::string path() const {
    std::string p;
    for (const auto& f : frames_) p = f.array ? SpecFields::at(p, f.index) : SpecFields::at(p, f.key);
    return p;
  }

 private:
  struct Frame {
    bool array;
    size_t index;
    std::string key;
    std::set<std::string> keys;  ///< An object's keys so far.
  };
  std::vector<Frame> frames_;
  std::string duplicate_;
};

}  // namespace

std::string json_excerpt(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

nlohmann::json read_spec_file(const std::string& path, const std::string& what) {
  const std::string where = what + " file '" + path + "'";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw SpecError(where + " is a directory; expected a JSON file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw SpecError("cannot read " + where + ": " + std::strerror(errno));
  std::stringstream text;
  text << f.rdbuf();
  if (f.bad()) throw SpecError("cannot read " + where);
  PathTracker tracker;
  try {
    nlohmann::json doc =
        nlohmann::json::parse(text.str(), [&](int, nlohmann::json::parse_event_t e, nlohmann::json& parsed) {
          return tracker.on_event(e, parsed);
        });
    if (!tracker.duplicate().empty())
      throw SpecError(where + ": " + tracker.duplicate() + " is given twice; allowed: each key once in an object");
    return doc;
  } catch (const nlohmann::json::out_of_range&) {
    const std::string p = tracker.path();
    throw SpecError(where + ": " + (p.empty() ? "a number" : p) +
                    " is out of range of a double; allowed: finite numbers (about +-1.8e308)");
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    if (const size_t b = msg.find("] "); b != std::string::npos) msg = msg.substr(b + 2);  // drop "[json.exception..]"
    for (char& ch : msg)
      if (ch == '\n' || ch == '\r') ch = ' ';
    throw SpecError(where + " is not valid JSON: " + msg);
  }
}

void SpecFields::fail(const std::string& path, const std::string& what) const {
  throw SpecError(prefix_ + ": " + (path.empty() ? "" : path + ": ") + what);
}

std::string SpecFields::at(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string SpecFields::at(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

void SpecFields::require_object(const nlohmann::json& j, const std::string& path, const std::string& shape) const {
  if (!j.is_object()) fail(path, "expected " + shape + ", got " + json_excerpt(j));
}

void SpecFields::only_keys(const nlohmann::json& obj, const std::string& path,
                           std::initializer_list<const char*> allowed) const {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (ok) continue;
    std::string names;
    for (const char* a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
    fail(path, "unknown key " + json_excerpt(it.key()) + "; allowed: " + names);
  }
}

int64_t SpecFields::integer(const nlohmann::json& obj, const std::string& path, const char* key, int64_t lo,
                            int64_t hi, std::optional<int64_t> fallback) const {
  const std::string p = at(path, key);
  const std::string range = "allowed: an integer in " + with_commas(lo) + ".." + with_commas(hi);
  if (!obj.contains(key)) {
    if (!fallback) fail(p, "missing; " + range);
    return *fallback;
  }
  const nlohmann::json& v = obj[key];
  long double x = 0;
  if (v.is_number_unsigned()) x = static_cast<long double>(v.get<uint64_t>());
  else if (v.is_number_integer()) x = static_cast<long double>(v.get<int64_t>());
  else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::trunc(v.get<double>()) == v.get<double>())
    x = v.get<double>();
  else fail(p, json_excerpt(v) + " is not an integer; " + range);
  if (x < lo || x > hi) fail(p, json_excerpt(v) + " is out of range; " + range);
  return static_cast<int64_t>(x);
}

double SpecFields::number(const nlohmann::json& obj, const std::string& path, const char* key, double lo,
                          bool lo_open, double hi, std::optional<double> fallback, const std::string& why_lo) const {
  const std::string p = at(path, key);
  std::ostringstream r;
  r << "allowed: a number " << (lo_open ? "> " : ">= ") << lo << (why_lo.empty() ? "" : " (" + why_lo + ")")
    << " and <= " << hi;
  if (!obj.contains(key)) {
    if (!fallback) fail(p, "missing; " + r.str());
    return *fallback;
  }
  const nlohmann::json& v = obj[key];
  if (!v.is_number()) fail(p, json_excerpt(v) + " is not a number; " + r.str());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x > hi) fail(p, json_excerpt(v) + " is too large; " + r.str());
  if (lo_open ? !(x > lo) : !(x >= lo)) fail(p, json_excerpt(v) + " is too small; " + r.str());
  return x;
}

std::string SpecFields::string(const nlohmann::json& obj, const std::string& path, const char* key,
                               std::optional<std::string> fallback, const std::string& allowed) const {
  const std::string p = at(path, key);
  if (!obj.contains(key)) {
    if (!fallback) fail(p, "missing; allowed: " + allowed);
    return *fallback;
  }
  const nlohmann::json& v = obj[key];
  if (!v.is_string()) fail(p, json_excerpt(v) + " is not a string; allowed: " + allowed);
  const std::string s = v.get<std::string>();
  if (s.size() > 256) fail(p, "a string of " + std::to_string(s.size()) + " bytes; allowed: at most 256");
  for (unsigned char ch : s)
    if (ch < 0x20 || ch == 0x7f) fail(p, json_excerpt(v) + " holds a control character; allowed: printable text");
  return s;
}

bool SpecFields::boolean(const nlohmann::json& obj, const std::string& path, const char* key, bool fallback) const {
  if (!obj.contains(key)) return fallback;
  const nlohmann::json& v = obj[key];
  if (!v.is_boolean()) fail(at(path, key), json_excerpt(v) + " is not a boolean; allowed: true, false");
  return v.get<bool>();
}

}  // namespace tuner::parallel
