// `tuner export`, `tuner import` and `tuner version` as users run them: records tuned into one database,
// exported, imported into another, read back the same; csv and best-configs exports; every refusal of
// import (exit 2, one line naming file, line and field, the database untouched).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

/// The cells of one RFC 4180 line (quoted cells unquoted, doubled quotes undoubled).
std::vector<std::string> csv_fields_of(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;
using Json = nlohmann::json;

class ExportImport : public Cli {
 protected:
  std::string a_db() const { return (dir_ / "a.db").string(); }
  std::string b_db() const { return (dir_ / "b.db").string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  /// A small gemm tuned on sim:h100-sxm into a.db: 6 search trials and 5 re-measurements.
  void tune_a() {
    auto t = run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 6 --strategy random --seed 5 "
                 "--quiet --db " + a_db());
    ASSERT_EQ(t.code, 0) << t.err;
  }
  Json query_json(const std::string& db, const std::string& args) {
    auto q = run("query --db " + db + " " + args + " --json");
    EXPECT_EQ(q.code, 0) << q.err;
    return Json::parse(q.out);
  }
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) out.push_back(l);
    return out;
  }
  /// A record without the ids that legitimately differ between databases (trial and session ids).
  static Json without_ids(Json j) {
    for (auto& r : j) {
      r.erase("trial_id");
      r.erase("session_id");
    }
    return j;
  }
};

// Every field of `query --json` a record must keep through export and import; only the ids may differ.
const char* const kKeptFields[] = {"op", "shape", "dtype", "device", "config", "status", "time_ms", "time_spread_ms",
                                   "repeats", "gflops", "gbps", "bytes", "estimate", "purpose", "measurements",
                                   "mean_time_ms", "error", "compile_ms", "registers", "shared_bytes",
                                   "spill_bytes", "template", "template_version", "finished_at"};

TEST_F(ExportImport, JsonlRoundTripRebuildsEveryRecordAndImportingTwiceAddsNothing) {
  tune_a();
  auto e = run("export --db " + a_db() + " --format jsonl --out " + file("a.jsonl"));
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(e.out.empty());
  const auto exported = lines(slurp(file("a.jsonl")));
  ASSERT_EQ(exported.size(), 6u + 5u);  // 6 search trials, the default 5 finalists re-measured
  for (const auto& l : exported) {
    const auto j = Json::parse(l);
    EXPECT_EQ(j["format"], "tuner-records/1");
    for (const char* key : {"name", "simulated", "cc_major", "cc_minor", "sm_count", "memory_bytes",
                            "driver_version", "nvrtc_version"})
      EXPECT_TRUE(j["device_identity"].contains(key)) << key;
    EXPECT_TRUE(j.contains("started_at"));
  }

  auto i = run("import " + file("a.jsonl") + " --db " + b_db() + " --json");
  ASSERT_EQ(i.code, 0) << i.err;
  const auto ij = Json::parse(i.out);
  EXPECT_EQ(ij["records"], 11);
  EXPECT_EQ(ij["added"], 11);
  EXPECT_EQ(ij["skipped"], 0);
  EXPECT_EQ(ij["sessions_added"], 1);

  // History and best records: equal field by field, ids aside.
  for (const std::string& mode : std::vector<std::string>{"--history", "--best"}) {
    const Json a = query_json(a_db(), mode), b = query_json(b_db(), mode);
    ASSERT_EQ(a.size(), b.size()) << mode;
    ASSERT_FALSE(a.empty()) << mode;
    EXPECT_DOUBLE_EQ(a[0]["bytes"].get<double>(), 3.0 * 64 * 64 * 4) << "the template's compulsory bytes, stored";
    for (size_t r = 0; r < a.size(); ++r)
      for (const char* key : kKeptFields) {
        // A trial of the history has no pooled count or mean; best records have.
        if (mode == "--history" && (std::string(key) == "measurements" || std::string(key) == "mean_time_ms")) continue;
        ASSERT_TRUE(a[r].contains(key)) << key;
        EXPECT_EQ(a[r][key], b[r][key]) << mode << " row " << r << " field " << key;
      }
    EXPECT_EQ(without_ids(a), without_ids(b)) << mode << ": a field outside the list differs";
  }
  // The single best record of the workload on the device, and the device's whole identity.
  const std::string one = "--op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --best";
  Json a1 = query_json(a_db(), one), b1 = query_json(b_db(), one);
  a1.erase("trial_id"), a1.erase("session_id"), b1.erase("trial_id"), b1.erase("session_id");
  EXPECT_EQ(a1, b1);
  auto re = run("export --db " + b_db() + " --format jsonl");
  ASSERT_EQ(re.code, 0) << re.err;
  // --out - is stdout too (it wrote a file named '-').
  const auto dash = run("export --db " + b_db() + " --format jsonl --out -");
  EXPECT_EQ(dash.out, re.out);
  EXPECT_FALSE(std::filesystem::exists("-"));
  const auto reexported = lines(re.out);
  ASSERT_EQ(reexported.size(), exported.size());
  for (size_t r = 0; r < exported.size(); ++r) {
    auto x = Json::parse(exported[r]), y = Json::parse(reexported[r]);
    for (auto* j : {&x, &y}) j->erase("trial_id"), j->erase("session_id");
    EXPECT_EQ(x, y) << "line " << r + 1;
  }
  // The import's session: strategy import, finished.
  const Json sessions = query_json(b_db(), "--sessions");
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0]["strategy"], "import");
  EXPECT_EQ(sessions[0]["status"], "finished");
  EXPECT_EQ(sessions[0]["trials"], 11);
  // Its budget is its search trials, as the tuned session's (it counted the re-measurements: 11).
  EXPECT_EQ(sessions[0]["budget"], 6);
  EXPECT_EQ(sessions[0]["search_trials"], 6);
  EXPECT_EQ(sessions[0]["reason"], "imported from " + file("a.jsonl"));

  // Twice: nothing added, the database unchanged.
  const std::string before = query_json(b_db(), "--history").dump();
  auto again = run("import " + file("a.jsonl") + " --db " + b_db() + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out)["added"], 0);
  EXPECT_EQ(Json::parse(again.out)["skipped"], 11);
  EXPECT_EQ(query_json(b_db(), "--history").dump(), before);
  EXPECT_EQ(query_json(b_db(), "--sessions").size(), 1u);
  // Back into the database it came from: nothing either.
  auto home = run("import " + file("a.jsonl") + " --db " + a_db() + " --json");
  ASSERT_EQ(home.code, 0) << home.err;
  EXPECT_EQ(Json::parse(home.out)["added"], 0);
  // The text report says what happened.
  auto text = run("import " + file("a.jsonl") + " --db " + b_db());
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("0 added, 11 skipped"), std::string::npos) << text.out;
  // "-" reads standard input, so an export pipes straight into another database.
  const std::string c_db = file("c.db");
  auto piped = run("import - --db " + c_db + " --json < " + file("a.jsonl"));
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(Json::parse(piped.out)["from"], "stdin");
  EXPECT_EQ(Json::parse(piped.out)["added"], 11);
  EXPECT_EQ(query_json(c_db, "--history").size(), query_json(b_db(), "--history").size());
  // Two exports joined (of copies of one database): each measurement once, the repeats counted as skipped.
  std::ofstream(file("twice.jsonl")) << slurp(file("a.jsonl")) << slurp(file("a.jsonl"));
  auto twice = run("import " + file("twice.jsonl") + " --db " + file("e.db") + " --json");
  ASSERT_EQ(twice.code, 0) << twice.err;
  const Json tj = Json::parse(twice.out);
  EXPECT_EQ(tj["added"], 11);
  EXPECT_EQ(tj["skipped"], 11);
  EXPECT_EQ(tj["repeated_in_file"], 11);
  EXPECT_EQ(tj["already_here"], 0);
  // Each group counts its own repeats (they were in the total and in no group).
  int64_t group_skipped = 0;
  for (const auto& g : tj["groups"]) group_skipped += g["skipped"].get<int64_t>();
  EXPECT_EQ(group_skipped, 11) << tj.dump();
  auto twice_text = run("import " + file("twice.jsonl") + " --db " + file("e2.db"));
  EXPECT_NE(twice_text.out.find("11 added, 11 skipped (0 already here, 11 repeated in the file)"), std::string::npos)
      << twice_text.out;
  EXPECT_EQ(without_ids(query_json(file("e.db"), "--best")), without_ids(query_json(b_db(), "--best")))
      << "measurements counted twice";
  std::ofstream(file("bad.jsonl")) << "{\"x\":\n";
  auto broken = run("import - --db " + file("d.db") + " < " + file("bad.jsonl"));
  EXPECT_EQ(broken.code, 2);
  EXPECT_NE(broken.err.find("import: stdin:1: not a JSON line"), std::string::npos) << broken.err;
  EXPECT_FALSE(std::filesystem::exists(file("d.db"))) << "nothing created";
}

// What import checks must not refuse what this build and earlier ones export: failed trials of a sim device
// (stored with estimate false), records stored before schema version 6 (bytes 0), and one GPU under two drivers,
// each with a line repeated in the file (counted once per identity, not once per name).
TEST_F(ExportImport, ImportTakesFailedTrialsOldRecordsAndRepeatsOfTwoIdentities) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=256 --dtype f16 --device sim:h100-sxm --trials 6 --strategy grid "
                "--remeasure 0 --inject-fault crash:1,hang:2 --timeout 1 --quiet --db " + a_db()).code,
            0);
  ASSERT_EQ(run("export --db " + a_db() + " --format jsonl --out " + file("f.jsonl")).code, 0);
  const auto all = lines(slurp(file("f.jsonl")));
  ASSERT_EQ(all.size(), 6u);
  int failed = 0;
  for (const auto& l : all) failed += Json::parse(l)["status"] != "ok";
  EXPECT_EQ(failed, 2);
  auto back = run("import " + file("f.jsonl") + " --db " + b_db() + " --json");
  ASSERT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(Json::parse(back.out)["added"], 6);
  // An ok record with bytes 0 (stored before schema version 6) imports; its bytes come from its config.
  Json old = Json::parse(all[0]);
  ASSERT_EQ(old["status"], "ok");
  old["bytes"] = 0.0;
  std::ofstream(file("old.jsonl")) << old.dump() << "\n";
  auto o = run("import " + file("old.jsonl") + " --db " + file("old.db") + " --json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(query_json(file("old.db"), "--history")[0]["bytes"], Json::parse(all[0])["bytes"]);
  // Two identities of one GPU name, each line twice.
  Json other = Json::parse(all[0]);
  other["device_identity"]["nvrtc_version"] = "12.9";
  std::ofstream(file("two.jsonl")) << all[0] << "\n" << all[0] << "\n" << other.dump() << "\n" << other.dump() << "\n";
  auto two = run("import " + file("two.jsonl") + " --db " + file("two.db") + " --json");
  ASSERT_EQ(two.code, 0) << two.err;
  const Json tj = Json::parse(two.out);
  EXPECT_EQ(tj["added"], 2);
  EXPECT_EQ(tj["repeated_in_file"], 2);
  EXPECT_EQ(tj["skipped"], 2);
  ASSERT_EQ(tj["groups"].size(), 2u);
  for (const auto& g : tj["groups"]) EXPECT_EQ(g["skipped"], 1) << tj.dump();
}

TEST_F(ExportImport, FiltersNarrowTheExport) {
  tune_a();
  auto none = run("export --db " + a_db() + " --format jsonl --op softmax");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_TRUE(none.out.empty());
  auto dev = run("export --db " + a_db() + " --format jsonl --device sim:h100-sxm --op gemm --dtype f32");
  ASSERT_EQ(dev.code, 0) << dev.err;
  EXPECT_EQ(lines(dev.out).size(), 11u);
  auto bad = run("export --db " + a_db() + " --format xml");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("'xml'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("jsonl, csv, best"), std::string::npos) << bad.err;
}

TEST_F(ExportImport, CsvHasAHeaderAndOneRowPerTrialWithTheConfigQuoted) {
  tune_a();
  auto e = run("export --db " + a_db() + " --format csv");
  ASSERT_EQ(e.code, 0) << e.err;
  auto rows = lines(e.out);
  for (auto& r : rows)
    if (!r.empty() && r.back() == '\r') r.pop_back();  // RFC 4180 line ends
  ASSERT_EQ(rows.size(), 1u + 11u);
  EXPECT_EQ(rows[0].rfind("op,shape,dtype,device,template,template_version,config,status,time_ms,", 0), 0u) << rows[0];
  // Row 1 is the first trial: its shape and config quoted per RFC 4180 (quotes doubled); the config's
  // knobs in their stored order (ordered_json keeps it).
  const auto history = nlohmann::ordered_json::parse(run("query --db " + a_db() + " --history --json").out);
  std::string config = history[0]["config"].dump(), quoted = "\"";
  for (char c : config) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  quoted += "\"";
  EXPECT_EQ(rows[1].rfind("gemm,\"M=64,N=64,K=64\",f32,sim:h100-sxm,gemm_f32_simt,", 0), 0u) << rows[1];
  EXPECT_NE(rows[1].find("," + quoted + ",ok,"), std::string::npos) << rows[1] << "\n" << quoted;
  // The bytes column is the count stored with the trial, as in query --json (it was 0 for every GEMM).
  const std::vector<std::string> header = csv_fields_of(rows[0]);
  const size_t col = std::find(header.begin(), header.end(), "bytes") - header.begin();
  ASSERT_LT(col, header.size());
  const double stored = history[0]["bytes"].get<double>();
  EXPECT_GT(stored, 0);
  EXPECT_DOUBLE_EQ(std::stod(csv_fields_of(rows[1]).at(col)), stored) << rows[1];
}

TEST_F(ExportImport, BestIsAVersionedDocumentOfWhatQueryBestShows) {
  tune_a();
  auto e = run("export --db " + a_db() + " --format best --out " + file("best.json"));
  ASSERT_EQ(e.code, 0) << e.err;
  const auto doc = Json::parse(slurp(file("best.json")));
  EXPECT_EQ(doc["format"], "tuner-best/1");
  EXPECT_EQ(doc["producer"], "tuner 0.5.0");
  const auto best = query_json(a_db(), "--best");
  ASSERT_EQ(doc["entries"].size(), best.size());
  ASSERT_EQ(best.size(), 1u);  // one workload, one device, one template
  const auto& entry = doc["entries"][0];
  for (const char* key : {"op", "shape", "dtype", "template", "template_version", "config", "time_ms",
                          "mean_time_ms", "measurements", "gflops", "estimate"})
    EXPECT_EQ(entry[key], best[0][key]) << key;
  EXPECT_EQ(entry["output_dtype"], "f32");  // gemm_f32_simt writes f32: no second entry
  EXPECT_EQ(entry["device"]["name"], "sim:h100-sxm");
  EXPECT_EQ(entry["device"]["sm_count"], 132);
  EXPECT_EQ(entry["device"]["simulated"], true);
}

TEST_F(ExportImport, ImportRefusesBadFilesWithOneLineAndLeavesTheDatabaseUnchanged) {
  tune_a();
  ASSERT_EQ(run("export --db " + a_db() + " --format jsonl --out " + file("a.jsonl")).code, 0);
  const auto good = lines(slurp(file("a.jsonl")));
  ASSERT_GE(good.size(), 3u);
  const Json first = Json::parse(good[0]);
  const auto write = [&](const std::string& name, const std::string& bad_line) {
    // Two good lines, then the bad one (line 3): all or nothing.
    std::ofstream(file(name)) << good[0] << "\n" << good[1] << "\n" << bad_line << "\n";
    return file(name);
  };
  const auto edited = [&](auto edit) {
    Json j = first;
    edit(j);
    return j.dump();
  };
  struct Case {
    std::string path;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {write("notjson.jsonl", "{\"format\": \"tuner-records/1\", "), {"notjson.jsonl:3", "not a JSON line"}},
      {write("missing.jsonl", edited([](Json& j) { j.erase("time_ms"); })), {"missing.jsonl:3", "'time_ms'", "missing"}},
      {write("type.jsonl", edited([](Json& j) { j["registers"] = "many"; })), {"type.jsonl:3", "'registers'"}},
      {write("format.jsonl", edited([](Json& j) { j["format"] = "tuner-records/9"; })),
       {"format.jsonl:3", "'format'", "tuner-records/1"}},
      {write("template.jsonl", edited([](Json& j) { j["template"] = "gemm_magic"; })),
       {"template.jsonl:3", "'template'", "gemm_magic", "gemm_f32_simt"}},
      {write("version.jsonl", edited([](Json& j) { j["template_version"] = "0123456789abcdef"; })),
       {"version.jsonl:3", "'template_version'", "0123456789abcdef", "other template versions are refused"}},
      {write("shape.jsonl", edited([](Json& j) { j["shape"] = "M=0,N=64,K=64"; })), {"shape.jsonl:3", "M=0"}},
      {write("device.jsonl", edited([](Json& j) { j["device_identity"].erase("sm_count"); })),
       {"device.jsonl:3", "'device_identity.sm_count'"}},
      {write("purpose.jsonl", edited([](Json& j) { j["purpose"] = "guess"; })), {"purpose.jsonl:3", "'purpose'", "guess"}},
      {write("when.jsonl", edited([](Json& j) { j["finished_at"] = "yesterday"; })),
       {"when.jsonl:3", "'finished_at'", "yesterday", "ISO-8601"}},
      // An unknown status reached the database's CHECK constraint: exit 1 and SQLite's message.
      {write("status.jsonl", edited([](Json& j) { j["status"] = "great"; })),
       {"status.jsonl:3", "'status'", "great", "allowed: ok, invalid_config"}},
      {write("config.jsonl", edited([](Json& j) { j["config"] = 7; })), {"config.jsonl:3", "'config'"}},
      {write("knob.jsonl", edited([](Json& j) { j["config"]["BM"] = 129; })),
       {"knob.jsonl:3", "'config'", "'BM' = 129", "allowed: "}},
      // Simulated devices this build does not have were imported, and shown with no spec table behind them.
      {write("simname.jsonl", edited([](Json& j) {
         j["device"] = "sim:whatever";
         j["device_identity"]["name"] = "sim:whatever";
       })),
       {"simname.jsonl:3", "'device_identity.name'", "sim:whatever", "h100-sxm"}},
      {write("simcc.jsonl", edited([](Json& j) {
         j["device"] = "sim:a100-sxm4-80gb";
         j["device_identity"]["name"] = "sim:a100-sxm4-80gb";
       })),
       {"simcc.jsonl:3", "'device_identity.name'", "sim:a100-sxm4-80gb", "8.0 and 108 SMs"}},
      {file("absent.jsonl"), {"absent.jsonl", "cannot read"}},
      // Numbers that do not follow from the record were stored as given: 1e12 GFLOP/s showed in `query`.
      {write("gflops.jsonl", edited([](Json& j) { j["gflops"] = 1e12; })),
       {"gflops.jsonl:3", "'gflops'", "1e+12", "FLOPs in time_ms"}},
      {write("bytes.jsonl", edited([](Json& j) { j["bytes"] = 1; })), {"bytes.jsonl:3", "'bytes'", "is 1 but"}},
      {write("estimate.jsonl", edited([](Json& j) { j["estimate"] = false; })),
       {"estimate.jsonl:3", "'estimate'", "sim:h100-sxm", "allowed: true"}},
      {write("errtime.jsonl", edited([](Json& j) { j["status"] = "runtime_fault"; })),
       {"errtime.jsonl:3", "'time_ms'", "runtime_fault", "only ok trials"}},
      {write("okerror.jsonl", edited([](Json& j) { j["error"] = "boom"; })), {"okerror.jsonl:3", "'error'", "boom"}},
  };
  ASSERT_EQ(first["status"], "ok");
  ASSERT_EQ(first["device"], "sim:h100-sxm");
  // Into an existing database (unchanged afterwards) and into a new one (never created).
  ASSERT_EQ(run("import " + file("a.jsonl") + " --db " + b_db()).code, 0);
  const std::string before = slurp(b_db());
  for (const auto& c : cases) {
    for (const std::string& target : {b_db(), file("new.db")}) {
      auto r = run("import " + c.path + " --db " + target);
      EXPECT_EQ(r.code, 2) << c.path << "\n" << r.err;
      EXPECT_TRUE(r.out.empty()) << c.path;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      for (const auto& needle : c.needles) EXPECT_NE(r.err.find(needle), std::string::npos) << needle << "\n" << r.err;
    }
  }
  // A recording is named as one (it was guessed to be a best-configs file).
  auto replay = run("import " + std::string(TUNER_SOURCE_DIR) +
                    "/data/replay/softmax_f16_rows4096_cols4096_h100_2026-11-23.json --db " + b_db());
  EXPECT_EQ(replay.code, 2);
  EXPECT_NE(replay.err.find("is a tuner-replay/1 document (a recording: tune with --device replay:FILE), not records"),
            std::string::npos)
      << replay.err;
  // An empty file adds nothing and creates nothing.
  std::ofstream(file("empty.jsonl")) << "";
  auto empty = run("import " + file("empty.jsonl") + " --db " + file("new.db") + " --json");
  EXPECT_EQ(empty.code, 0) << empty.err;
  EXPECT_EQ(Json::parse(empty.out)["records"], 0);
  EXPECT_FALSE(std::filesystem::exists(file("new.db")));
  auto told = run("import " + file("empty.jsonl") + " --db " + file("new.db"));
  EXPECT_EQ(told.code, 0) << told.err;
  EXPECT_NE(told.out.find("nothing imported from " + file("empty.jsonl") + ": it holds no records; " +
                          file("new.db") + " was not created"),
            std::string::npos)
      << told.out;
  // ... but its --db is still checked: a folder that does not exist, or a directory, is bad input.
  for (const std::string& bad : {file("no/such/dir/x.db"), dir_.string()}) {
    auto r = run("import " + file("empty.jsonl") + " --db " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
  }
  auto csv = run("import " + file("a.jsonl") + " --format csv --db " + b_db());
  EXPECT_EQ(csv.code, 2);
  EXPECT_NE(csv.err.find("'csv'"), std::string::npos) << csv.err;
  EXPECT_EQ(slurp(b_db()), before) << "a refused import changed the database";
  EXPECT_FALSE(std::filesystem::exists(file("new.db"))) << "a refused import created the database";
}

TEST_F(ExportImport, ImportRefusesATemplateTheRecordsDeviceCannotRun) {
  // A Hopper-only record relabelled as an A100's was imported, and `export --format best` shipped it.
  const auto t = run("tune --op gemm --shape M=64,N=64,K=64 --dtype f16 --template gemm_tc_wgmma --device sim:h100-sxm "
                     "--trials 2 --remeasure 0 --quiet --db " + a_db());
  ASSERT_EQ(t.code, 0) << t.err;
  ASSERT_EQ(run("export --db " + a_db() + " --format jsonl --out " + file("w.jsonl")).code, 0);
  Json j = Json::parse(lines(slurp(file("w.jsonl"))).at(0));
  j["device"] = "sim:a100-sxm4-80gb";
  auto& id = j["device_identity"];
  id["name"] = "sim:a100-sxm4-80gb", id["cc_major"] = 8, id["cc_minor"] = 0, id["sm_count"] = 108;
  std::ofstream(file("a100.jsonl")) << j.dump() << "\n";
  const auto r = run("import " + file("a100.jsonl") + " --db " + b_db());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("field 'template' is gemm_tc_wgmma, which does not run on 'sim:a100-sxm4-80gb'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(b_db()));
  // Nor a dtype the template does not implement: gemm_tc_wgmma's f16 record relabelled f32.
  Json f = Json::parse(lines(slurp(file("w.jsonl"))).at(0));
  f["dtype"] = "f32";
  std::ofstream(file("f32.jsonl")) << f.dump() << "\n";
  const auto d = run("import " + file("f32.jsonl") + " --db " + b_db());
  EXPECT_EQ(d.code, 2) << d.err;
  EXPECT_NE(d.err.find("field 'dtype' is f32, which gemm_tc_wgmma does not implement; allowed: f16, bf16"),
            std::string::npos) << d.err;
  EXPECT_FALSE(std::filesystem::exists(b_db()));
  // Unchanged, it imports.
  EXPECT_EQ(run("import " + file("w.jsonl") + " --db " + b_db()).code, 0);
}

TEST_F(ExportImport, VersionNamesTheProgramTemplatesNvrtcAndDriver) {
  auto v = run("--version");
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(v.out.rfind("tuner 0.5.0\n", 0), 0u) << v.out;
  EXPECT_NE(v.out.find("nvrtc: "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("cuda driver: "), std::string::npos) << v.out;
  if (!std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1")) {
    EXPECT_NE(v.out.find("cuda driver: no driver"), std::string::npos) << v.out;
  }
  EXPECT_EQ(run("version").out, v.out);

  auto j = run("version --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const auto vj = Json::parse(j.out);
  EXPECT_EQ(vj["version"], "0.5.0");
  EXPECT_FALSE(vj["nvrtc_version"].get<std::string>().empty());
  ASSERT_GE(vj["templates"].size(), 1u);
  for (const auto& t : vj["templates"]) {
    EXPECT_NE(v.out.find(t["name"].get<std::string>()), std::string::npos) << t;
    EXPECT_NE(v.out.find(t["version"].get<std::string>()), std::string::npos) << t;
  }
  // The hash it prints is the version records are stored under.
  tune_a();
  const auto best = query_json(a_db(), "--best");
  ASSERT_EQ(best.size(), 1u);
  bool found = false;
  for (const auto& t : vj["templates"])
    found = found || (t["name"] == best[0]["template"] && t["version"] == best[0]["template_version"]);
  EXPECT_TRUE(found) << best[0]["template"] << "@" << best[0]["template_version"];
}

}  // namespace
