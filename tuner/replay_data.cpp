#include "tuner/replay_data.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tuner {

namespace {

constexpr const char* kFormat = "tuner-replay/1";

nlohmann::json identity_json(const db::DeviceIdentity& d) {
  return {{"name", d.name},         {"simulated", d.simulated},         {"cc_major", d.cc_major},
          {"cc_minor", d.cc_minor}, {"sm_count", d.sm_count},           {"memory_bytes", d.memory_bytes},
          {"driver_version", d.driver_version}, {"nvrtc_version", d.nvrtc_version}};
}

db::DeviceIdentity identity_from(const nlohmann::json& j) {
  db::DeviceIdentity d;
  d.name = j.at("name").get<std::string>();
  d.simulated = j.at("simulated").get<bool>();
  d.cc_major = j.at("cc_major").get<int>();
  d.cc_minor = j.at("cc_minor").get<int>();
  d.sm_count = j.at("sm_count").get<int>();
  d.memory_bytes = j.at("memory_bytes").get<int64_t>();
  d.driver_version = j.at("driver_version").get<std::string>();
  d.nvrtc_version = j.at("nvrtc_version").get<std::string>();
  return d;
}

}  // namespace

const ReplayRecord* ReplayData::find(const std::string& config_json) const {
  auto it = records.find(config_json);
  return it == records.end() ? nullptr : &it->second;
}

ReplayData read_replay(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("replay file '" + path + "' cannot be read");
  ReplayData d;
  d.path = path;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    const std::string format = j.at("format").get<std::string>();
    if (format != kFormat)
      throw std::invalid_argument("format '" + format + "' is not " + std::string(kFormat));
    d.device = identity_from(j.at("device"));
    d.gpu_key = j.at("gpu").get<std::string>();
    d.op = j.at("op").get<std::string>();
    d.shape = j.at("shape").get<std::string>();
    d.dtype = j.at("dtype").get<std::string>();
    d.template_name = j.at("template").get<std::string>();
    d.template_version = j.at("template_version").get<std::string>();
    d.space_size = j.at("space_size").get<int64_t>();
    for (const auto& r : j.at("records")) {
      ReplayRecord rec;
      rec.status = r.at("status").get<std::string>();
      rec.error_message = r.value("error", "");
      rec.time_ms = r.value("time_ms", 0.0);
      rec.time_spread_ms = r.value("time_spread_ms", 0.0);
      rec.repeats = r.value("repeats", 0);
      rec.registers = r.value("registers", 0);
      rec.shared_bytes = r.value("shared_bytes", 0);
      rec.spill_bytes = r.value("spill_bytes", 0);
      rec.estimate = r.value("estimate", false);
      if (rec.status == "ok" && !(rec.time_ms > 0))
        throw std::invalid_argument("an ok record has time_ms " + std::to_string(rec.time_ms));
      d.records.emplace(r.at("config").dump(), std::move(rec));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("replay file '" + path + "' is malformed: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("replay file '" + path + "' is malformed: " + e.what());
  }
  return d;
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
      j["error"] = r.error_message.substr(0, 200);
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
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write replay file '" + tmp + "'");
    // One record per line keeps committed replay files diffable.
    f << "{\n";
    bool first = true;
    for (auto it = out.begin(); it != out.end(); ++it) {
      if (!first) f << ",\n";
      first = false;
      f << "  " << nlohmann::json(it.key()).dump() << ": ";
      if (it.key() == "records") {
        f << "[";
        for (size_t i = 0; i < it.value().size(); ++i) f << (i ? ",\n    " : "\n    ") << it.value()[i].dump();
        f << "\n  ]";
      } else {
        f << it.value().dump();
      }
    }
    f << "\n}\n";
    if (!f.flush()) throw std::runtime_error("cannot write replay file '" + tmp + "' (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

}  // namespace tuner
