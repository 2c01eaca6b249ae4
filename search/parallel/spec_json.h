// Reading the planner's JSON spec files (model and cluster graphs) with errors
// a user can act on: one line naming the file, the field path
// ("layers[3].ops[0].type") and what is allowed, as a SpecError.
//
// Reading a file (a missing one, a directory, text that is not JSON, a number
// no double holds) and typed access to fields with ranges. What the fields mean
// is model_spec.cpp's and cluster_spec.cpp's.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tuner::parallel {

/// Parses the JSON file at `path`; `what` ("model", "cluster") starts the messages. Throws SpecError when the
/// file cannot be read (missing, a directory) or is not JSON, naming the field being read when a number is
/// out of range of a double.
nlohmann::json read_spec_file(const std::string& path, const std::string& what);

/// Typed fields of one spec document; every error is "<prefix>: <path>: <what is wrong>; allowed: ...".
class SpecFields {
 public:
  explicit SpecFields(std::string prefix) : prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const;
  /// "path.key" (or "key" at the top).
  static std::string at(const std::string& path, const std::string& key);
  static std::string at(const std::string& path, size_t index);

  /// An object, else fail(path, "expected <shape>").
  void require_object(const nlohmann::json& j, const std::string& path, const std::string& shape) const;
  /// Rejects keys outside `allowed`, naming them all.
  void only_keys(const nlohmann::json& obj, const std::string& path, std::initializer_list<const char*> allowed) const;
  /// An integer (an integral number) in [lo, hi]; `fallback` when absent (required when nullopt).
  int64_t integer(const nlohmann::json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
                  std::optional<int64_t> fallback) const;
  /// A finite number in (lo, hi] when lo_open, else [lo, hi]; `fallback` when absent (required when nullopt).
  /// `why_lo`, when given, follows the lower bound in the message ("> 2 (why_lo)").
  double number(const nlohmann::json& obj, const std::string& path, const char* key, double lo, bool lo_open,
                double hi, std::optional<double> fallback, const std::string& why_lo = "") const;
  /// A string of at most 256 bytes; `fallback` when absent (required when nullopt).
  std::string string(const nlohmann::json& obj, const std::string& path, const char* key,
                     std::optional<std::string> fallback, const std::string& allowed = "a string") const;
  bool boolean(const nlohmann::json& obj, const std::string& path, const char* key, bool fallback) const;

 private:
  std::string prefix_;
};

/// `v` as JSON text cut to about 40 bytes, for messages.
std::string json_excerpt(const nlohmann::json& v);
/// 1048576 -> "1,048,576".
std::string with_commas(int64_t v);

}  // namespace tuner::parallel
