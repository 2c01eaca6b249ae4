#include "tools/cli_common.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace tuner::cli {

std::string default_db_path() {
  if (const char* env = std::getenv("TUNER_DB"); env && *env) return env;
  return "tuning.db";
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

nlohmann::ordered_json record_json(const db::ResultRow& row) {
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
  j["estimate"] = t.estimate;
  j["purpose"] = t.purpose;
  j["measurements"] = row.measurements;
  j["mean_time_ms"] = row.mean_time_ms;
  j["error"] = t.error_message;
  j["compile_ms"] = t.compile_ms;
  j["registers"] = t.registers;
  j["shared_bytes"] = t.shared_bytes;
  j["spill_bytes"] = t.spill_bytes;
  j["template"] = row.template_name;
  j["template_version"] = row.template_hash;
  j["session_id"] = t.session_id;
  j["trial_id"] = t.id;
  j["finished_at"] = t.finished_at;
  return j;
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
