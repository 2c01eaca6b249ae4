#include "runtime/tuned_records.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"

namespace tuner::runtime {

namespace {

/// Whether a record of (template, version) is one the catalog launches; counts it in `out` when not.
bool usable(const Catalog& catalog, const std::string& name, const std::string& version, const std::string& op,
            const std::string& dtype, const std::string& device, TunedRecords& out) {
  if (!catalog.find(name)) {
    ++out.stale;
    ++out.unknown_by_op[op + " " + dtype][device];
    return false;
  }
  if (catalog.version(name) != version) {
    ++out.stale;
    ++out.stale_by_op[op + " " + dtype][device];
    return false;
  }
  return true;
}

TunedRecords from_database(const std::string& path, const Catalog& catalog) {
  db::TuningDb store = db::TuningDb::open_existing(path);
  db::QueryFilter f;
  f.ok_only = true;
  TunedRecords out;
  // (workload, device, template, config) -> its record with the mean of its ok measurements, their count and
  // the latest trial's id: ranked as `query --best` ranks (db/tuning_db.cpp, kBestOrder).
  struct Pooled {
    TunedRecord record;
    int n = 0;
    double sum_ms = 0;
    int64_t last_id = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Pooled> configs;
  for (const auto& r : store.history(f)) {
    if (!usable(catalog, r.template_name, r.template_hash, r.workload.op, r.workload.dtype, r.device_name, out))
      continue;
    const std::string workload = r.workload.op + " " + r.workload.shape + " " + r.workload.dtype;
    auto [it, fresh] = configs.try_emplace({workload, r.device_name, r.template_name, r.trial.config_json});
    Pooled& p = it->second;
    TunedRecord& t = p.record;
    if (fresh) {
      t.op = r.workload.op;
      t.shape = r.workload.shape;
      t.dtype = r.workload.dtype;
      t.template_name = r.template_name;
      t.config_json = r.trial.config_json;
      t.estimate = r.trial.estimate;
      t.device_name = r.device_name;
      t.device_simulated = r.device_simulated;
      t.cc_major = r.device_cc_major;
      t.cc_minor = r.device_cc_minor;
      t.sm_count = r.device_sm_count;
    }
    p.sum_ms += r.trial.time_ms;
    ++p.n;
    t.time_ms = p.sum_ms / p.n;
    p.last_id = std::max(p.last_id, r.trial.id);
  }
  // Rank each group's configs and keep them all: a caller whose output type differs from the best config's (an f16
  // GEMM writing f16 where the fastest wrote f32), or a nearer shape where the best few are invalid (a softmax tuned
  // at 32,768 columns asked at 1,000), falls back down the ranking. It kept the best 8, and a lookup at a shape those
  // 8 could not run found nothing where 20 of the 32 measured configs could.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const Pooled*>> groups;
  for (const auto& [key, value] : configs)
    groups[{std::get<0>(key), std::get<1>(key), std::get<2>(key)}].push_back(&value);
  for (auto& [key, members] : groups) {
    // To 1e-9 ms, as the query's ROUND(mean, 9): equal estimates whose means differ in their last bit tie.
    const auto rounded = [](double ms) { return std::nearbyint(ms * 1e9); };  // (llround overflows past 9.2e9 ms)
    std::sort(members.begin(), members.end(), [&](const Pooled* a, const Pooled* b) {
      if (rounded(a->record.time_ms) != rounded(b->record.time_ms))
        return rounded(a->record.time_ms) < rounded(b->record.time_ms);
      if (a->n != b->n) return a->n > b->n;
      return a->last_id < b->last_id;
    });
    for (const Pooled* m : members) out.records.push_back(m->record);
  }
  return out;
}

TunedRecord from_best_entry(const nlohmann::ordered_json& e) {
  TunedRecord t;
  t.op = e.at("op").get<std::string>();
  t.shape = e.at("shape").get<std::string>();
  t.dtype = e.at("dtype").get<std::string>();
  t.template_name = e.at("template").get<std::string>();
  t.config_json = e.at("config").dump();
  t.time_ms = e.value("mean_time_ms", 0.0) > 0 ? e.at("mean_time_ms").get<double>() : e.at("time_ms").get<double>();
  t.estimate = e.value("estimate", false);
  const auto& d = e.at("device");
  t.device_name = d.at("name").get<std::string>();
  t.device_simulated = d.value("simulated", false);
  t.cc_major = d.value("cc_major", 0);
  t.cc_minor = d.value("cc_minor", 0);
  t.sm_count = d.value("sm_count", 0);
  return t;
}

TunedRecords from_best_file(const std::string& path, const std::string& text, const Catalog& catalog) {
  nlohmann::ordered_json doc;  // ordered: configs keep the knob order the tuner wrote
  try {
    doc = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("'" + path + "' is neither a tuning database nor a best-configs file (" + e.what() + ")");
  }
  if (!doc.is_object() || doc.value("format", "") != "tuner-best/1") {
    const std::string format =
        doc.is_object() && doc.contains("format") ? " is " + doc["format"].dump() : " is missing";
    throw std::runtime_error("'" + path + "' is not a best-configs file: its \"format\"" + format +
                             "; allowed: \"tuner-best/1\" (`tuner export --format best` of this version)");
  }
  if (!doc.contains("entries") || !doc["entries"].is_array())
    throw std::runtime_error("'" + path + "' is not a best-configs file: it has no \"entries\" array");
  TunedRecords out;
  size_t i = 0;
  try {
    for (; i < doc.at("entries").size(); ++i) {
      const auto& e = doc["entries"][i];
      if (!usable(catalog, e.at("template").get<std::string>(), e.at("template_version").get<std::string>(),
                  e.at("op").get<std::string>(), e.at("dtype").get<std::string>(),
                  e.at("device").at("name").get<std::string>(), out))
        continue;
      out.records.push_back(from_best_entry(e));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("'" + path + "': entry " + std::to_string(i) + " is malformed (" + e.what() + ")");
  }
  return out;
}

/// Fills each record's parsed workload, one per distinct op, shape and dtype.
TunedRecords with_workloads(TunedRecords tuned, const Catalog& catalog) {
  std::map<std::tuple<std::string, std::string, std::string>, std::shared_ptr<const templates::Workload>> parsed;
  for (auto& r : tuned.records) {
    auto [it, added] = parsed.try_emplace({r.op, r.shape, r.dtype});
    if (added) {
      try {
        it->second = std::make_shared<const templates::Workload>(catalog.parse(r.op, r.shape, r.dtype));
      } catch (const std::exception&) {
      }
    }
    r.workload = it->second;
  }
  return tuned;
}

TunedRecords read_records(const std::string& path, const Catalog& catalog) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error("cannot read '" + path + "': it is a directory; allowed: a tuning database or a "
                             "best-configs file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "': no such file or not readable");
  char head[16] = {};
  in.read(head, sizeof head);
  if (std::string(head, static_cast<size_t>(in.gcount())).rfind("SQLite format 3", 0) == 0) {
    try {
      return from_database(path, catalog);
    } catch (const db::DbError& e) {
      throw std::runtime_error(e.what());
    }
  }
  in.clear();
  in.seekg(0);
  std::ostringstream text;
  text << in.rdbuf();
  return from_best_file(path, text.str(), catalog);
}

}  // namespace

TunedRecords read_tuned_records(const std::string& path, const Catalog& catalog) {
  return with_workloads(read_records(path, catalog), catalog);
}

}  // namespace tuner::runtime
