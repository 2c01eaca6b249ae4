// The runtime library (include/tuner/runtime.h) through its public API only, as a user links it:
// records come from databases that `tuner tune` made on sim:h100-sxm and from the best-configs file
// `tuner export --format best` writes of them; lookups are compared with what `tuner query` says.
// Launching needs a GPU: without one, launches must fail cleanly with kNoDevice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"
#include "tuner/runtime.h"

namespace {

namespace fs = std::filesystem;
using tuner_cli_test::CmdResult;
using tuner_cli_test::slurp;

/// One database for the suite: gemm f32 at 512^3 and 2048^3, softmax f16, on sim:h100-sxm.
class RuntimeLib : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tuner_runtime_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const std::string shape : {"M=512,N=512,K=512", "M=2048,N=2048,K=2048"})
      ASSERT_EQ(run("tune --op gemm --dtype f32 --shape " + shape + " --device sim:h100-sxm --trials 8 "
                    "--strategy random --seed 3 --db " + db()).code, 0);
    ASSERT_EQ(run("tune --op softmax --dtype f16 --shape rows=4096,cols=4096 --device sim:h100-sxm --trials 8 "
                  "--strategy random --seed 3 --db " + db()).code, 0);
    ASSERT_EQ(run("tune --op gemm --dtype f16 --shape M=1024,N=1024,K=1024 --device sim:h100-sxm --trials 8 "
                  "--template gemm_tc_mma --strategy random --seed 5 --db " + db()).code, 0);
    ASSERT_EQ(run("export --format best --db " + db() + " --out " + best_file()).code, 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static CmdResult run(const std::string& args) {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    int status = std::system((std::string(TUNER_BIN) + " " + args + " >" + out + " 2>" + err).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }
  static std::string db() { return (dir_ / "t.db").string(); }
  static std::string best_file() { return (dir_ / "best.json").string(); }

  static std::unique_ptr<tuner::Runtime> open(const std::string& source, bool nearest = true,
                                              const std::string& device = "sim:h100-sxm") {
    tuner::RuntimeOptions o;
    o.source = source;
    o.device_name = device;
    o.nearest_shape = nearest;
    o.cache_dir = (dir_ / "cache").string();
    std::unique_ptr<tuner::Runtime> rt;
    EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kOk) << tuner::last_error();
    return rt;
  }

  /// The config `tuner query --best` reports for a workload.
  static nlohmann::json cli_best(const std::string& op, const std::string& shape, const std::string& dtype) {
    CmdResult r = run("query --db " + db() + " --op " + op + " --shape " + shape + " --dtype " + dtype + " --best --json");
    EXPECT_EQ(r.code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    if (j.is_array()) j = j.at(0);
    return j.at("config");
  }

  static inline fs::path dir_;
};

tuner::KernelChoice lookup_ok(tuner::Runtime& rt, const tuner::Problem& p) {
  tuner::KernelChoice c;
  EXPECT_EQ(rt.lookup(p, &c), tuner::Status::kOk) << tuner::last_error();
  return c;
}

TEST_F(RuntimeLib, ExactShapeGivesTheConfigQueryCallsBest) {
  auto rt = open(db());
  ASSERT_TRUE(rt);
  EXPECT_EQ(rt->device(), "sim:h100-sxm");
  EXPECT_GE(rt->records(), 4);       // the best few configs of each of the 4 tuned workloads
  EXPECT_LE(rt->records(), 4 * 8);
  auto c = lookup_ok(*rt, {"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""});
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.tuned_shape, "M=512,N=512,K=512");
  EXPECT_EQ(c.template_name, "gemm_f32_simt");
  EXPECT_TRUE(c.estimate);
  EXPECT_GT(c.tuned_time_ms, 0);
  EXPECT_EQ(nlohmann::json::parse(c.config), cli_best("gemm", "M=512,N=512,K=512", "f32"));
  EXPECT_EQ(c.buffers, (std::vector<std::string>{"A f32", "B f32", "C f32"}));
  // The launch covers the matrix: grid x block tile >= M and N.
  const auto cfg = nlohmann::json::parse(c.config);
  EXPECT_GE(static_cast<int64_t>(c.grid[0]) * c.grid[1] * cfg.at("BM").get<int>() * cfg.at("BN").get<int>(), 512 * 512);

  auto s = lookup_ok(*rt, {"softmax", "rows=4096,cols=4096", tuner::DType::kF16, ""});
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(nlohmann::json::parse(s.config), cli_best("softmax", "rows=4096,cols=4096", "f16"));
  EXPECT_EQ(s.buffers, (std::vector<std::string>{"X f16", "Y f16"}));
}

TEST_F(RuntimeLib, NearestTunedShapeByLogDistanceAndExactOnlyWhenAsked) {
  auto rt = open(db());
  ASSERT_TRUE(rt);
  auto near_small = lookup_ok(*rt, {"gemm", "M=600,N=640,K=500", tuner::DType::kF32, ""});
  EXPECT_FALSE(near_small.exact);
  EXPECT_EQ(near_small.tuned_shape, "M=512,N=512,K=512");
  auto near_big = lookup_ok(*rt, {"gemm", "M=1536,N=1600,K=3000", tuner::DType::kF32, ""});
  EXPECT_EQ(near_big.tuned_shape, "M=2048,N=2048,K=2048");
  EXPECT_EQ(nlohmann::json::parse(near_big.config), cli_best("gemm", "M=2048,N=2048,K=2048", "f32"));
  // 1024^3 lies as far from 512^3 as from 2048^3. The tie went to the shorter time, always the smaller problem's;
  // it goes to the record of less time per unit of its shape's size, here the larger problem's (its GEMM runs
  // nearer the peak).
  EXPECT_EQ(lookup_ok(*rt, {"gemm", "M=1024,N=1024,K=1024", tuner::DType::kF32, ""}).tuned_shape,
            "M=2048,N=2048,K=2048");

  auto exact_only = open(db(), /*nearest=*/false);
  ASSERT_TRUE(exact_only);
  tuner::KernelChoice c;
  EXPECT_EQ(exact_only->lookup({"gemm", "M=600,N=640,K=500", tuner::DType::kF32, ""}, &c), tuner::Status::kNotFound);
  EXPECT_NE(tuner::last_error().find("exact shape was not tuned"), std::string::npos) << tuner::last_error();
  // Another dtype or op was never tuned: not found, whatever the shape.
  EXPECT_EQ(rt->lookup({"gemm", "M=512,N=512,K=512", tuner::DType::kBF16, ""}, &c), tuner::Status::kNotFound);
  EXPECT_EQ(rt->lookup({"layernorm", "rows=4096,cols=4096", tuner::DType::kF16, ""}, &c), tuner::Status::kNotFound);
}

TEST_F(RuntimeLib, BestConfigsFileGivesTheSameChoicesAsTheDatabase) {
  auto from_db = open(db());
  auto from_file = open(best_file());
  ASSERT_TRUE(from_db && from_file);
  const auto doc = nlohmann::json::parse(slurp(best_file()));
  EXPECT_EQ(from_file->records(), static_cast<int64_t>(doc.at("entries").size()));
  for (const tuner::Problem& p : {tuner::Problem{"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""},
                                  tuner::Problem{"gemm", "M=1000,N=3000,K=700", tuner::DType::kF32, ""},
                                  tuner::Problem{"softmax", "rows=1024,cols=8192", tuner::DType::kF16, ""}}) {
    auto a = lookup_ok(*from_db, p), b = lookup_ok(*from_file, p);
    EXPECT_EQ(a.tuned_shape, b.tuned_shape) << p.shape;
    EXPECT_EQ(nlohmann::json::parse(a.config), nlohmann::json::parse(b.config)) << p.shape;
    EXPECT_EQ(a.kernel_name, b.kernel_name);
  }
}

// Configs that tie exactly (a sim device's estimates do, where a knob is not modelled) go where `query --best`
// puts them, from the database as from the best file: the runtime took the tied config whose JSON sorted first,
// the query the one measured more often, then the earliest. Two databases hold the same two tied records in
// opposite orders: whichever the runtime's old rule took, it disagreed with the query in one of them.
TEST_F(RuntimeLib, TiedConfigsGoWhereQueryBestPutsThem) {
  const std::string jsonl = (dir_ / "ties.jsonl").string();
  ASSERT_EQ(run("export --format jsonl --op gemm --shape M=512,N=512,K=512 --dtype f32 --db " + db() + " --out " +
                jsonl).code, 0);
  std::vector<nlohmann::ordered_json> lines;
  {
    std::ifstream in(jsonl);
    std::set<std::string> seen;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::ordered_json::parse(line);
      if (j["status"] == "ok" && seen.insert(j["config"].dump()).second) lines.push_back(j);
    }
  }
  ASSERT_GE(lines.size(), 3u);
  double fastest = 1e30;
  for (const auto& j : lines) fastest = std::min(fastest, j["time_ms"].get<double>());
  for (int k : {0, 1}) {  // GFLOP/s follows the time (import checks it)
    lines[k]["gflops"] = lines[k]["gflops"].get<double>() * lines[k]["time_ms"].get<double>() / (fastest / 2);
    lines[k]["time_ms"] = lines[k]["mean_time_ms"] = fastest / 2;
  }
  std::set<std::string> chosen;
  for (int order : {0, 1}) {
    const std::string file = (dir_ / ("ties" + std::to_string(order) + ".jsonl")).string();
    const std::string tied = (dir_ / ("ties" + std::to_string(order) + ".db")).string();
    const std::string best = (dir_ / ("ties" + std::to_string(order) + ".json")).string();
    {
      std::ofstream out(file);
      out << lines[order].dump() << "\n" << lines[1 - order].dump() << "\n";
      for (size_t k = 2; k < lines.size(); ++k) out << lines[k].dump() << "\n";
    }
    ASSERT_EQ(run("import " + file + " --db " + tied).code, 0);
    ASSERT_EQ(run("export --format best --db " + tied + " --out " + best).code, 0);
    CmdResult q = run("query --db " + tied + " --best --json --op gemm --shape M=512,N=512,K=512 --dtype f32");
    ASSERT_EQ(q.code, 0) << q.err;
    nlohmann::json want = nlohmann::json::parse(q.out);
    if (want.is_array()) want = want.at(0);
    EXPECT_EQ(want.at("config"), nlohmann::json::parse(lines[order]["config"].dump())) << "the earliest of the tie";
    chosen.insert(want.at("config").dump());
    for (const std::string& source : {tied, best}) {
      auto rt = open(source);
      ASSERT_TRUE(rt);
      auto c = lookup_ok(*rt, {"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""});
      EXPECT_EQ(nlohmann::json::parse(c.config), want.at("config")) << source;
    }
  }
  EXPECT_EQ(chosen.size(), 2u);
}

// gemm_tc's OUT_F32 knob makes an f16 GEMM write f32 or f16: a lookup gets a config writing the output
// type asked for (f16 unless Problem::output_dtype says otherwise), from the database and from the file.
TEST_F(RuntimeLib, TheChosenConfigWritesTheOutputTypeAskedFor) {
  CmdResult h = run("query --db " + db() + " --op gemm --dtype f16 --history --json");
  ASSERT_EQ(h.code, 0) << h.err;
  std::set<int> out_f32_values;
  for (const auto& t : nlohmann::json::parse(h.out))
    if (t.at("status") == "ok") out_f32_values.insert(t.at("config").at("OUT_F32").get<int>());
  ASSERT_FALSE(out_f32_values.empty());
  auto from_db = open(db());
  auto from_file = open(best_file());
  ASSERT_TRUE(from_db && from_file);
  for (const std::string out : {"f16", "f32"}) {
    const int want = out == "f32" ? 1 : 0;
    const tuner::Problem p{"gemm", "M=1024,N=1024,K=1024", tuner::DType::kF16, out == "f16" ? "" : out};
    // The file holds the best config and, where that writes another type, the best writing f16 (the
    // workload's own type); the database holds the best few of each.
    std::vector<tuner::Runtime*> sources = {from_db.get()};
    if (out == "f16") sources.push_back(from_file.get());
    for (tuner::Runtime* rt : sources) {
      tuner::KernelChoice c;
      const tuner::Status s = rt->lookup(p, &c);
      if (!out_f32_values.count(want)) {
        EXPECT_EQ(s, tuner::Status::kNotFound) << out;
        continue;
      }
      ASSERT_EQ(s, tuner::Status::kOk) << out << ": " << tuner::last_error();
      EXPECT_EQ(nlohmann::json::parse(c.config).at("OUT_F32").get<int>(), want);
      EXPECT_EQ(c.buffers.at(2), "C " + out);
    }
  }
}

// The nearest-shape tie-break divides a record's time by its shape's size; conv2d's pad=0 made that size 0, every
// key infinite, and the exact shape's config an arbitrary one of its records instead of the best.
TEST_F(RuntimeLib, AConvWithoutPaddingGetsItsBestConfig) {
  const std::string conv_db = (dir_ / "conv.db").string();
  const std::string shape = "N=2,H=14,W=14,C=32,K=32,R=1,S=1,stride=1,pad=0";
  ASSERT_EQ(run("tune --op conv2d --dtype f32 --shape " + shape + " --device sim:h100-sxm --trials 8 "
                "--strategy random --seed 4 --remeasure 0 --db " + conv_db).code, 0);
  auto rt = open(conv_db);
  ASSERT_TRUE(rt);
  const tuner::KernelChoice c = lookup_ok(*rt, {"conv2d", shape, tuner::DType::kF32, ""});
  EXPECT_TRUE(c.exact) << c.tuned_shape << " " << c.template_name;
  const CmdResult q = run("query --db " + conv_db + " --op conv2d --shape " + shape +
                          " --dtype f32 --device sim:h100-sxm --json");
  ASSERT_EQ(q.code, 0) << q.err;
  const auto best = nlohmann::json::parse(q.out);
  EXPECT_EQ(c.template_name, best.at("template"));
  EXPECT_EQ(nlohmann::json::parse(c.config), best.at("config"));
  // Another stride: its records cannot stand in, and the message says there are some (it said there were none).
  tuner::KernelChoice x;
  EXPECT_EQ(rt->lookup({"conv2d", "N=2,H=14,W=14,C=32,K=32,R=1,S=1,stride=2,pad=0", tuner::DType::kF32, ""}, &x),
            tuner::Status::kNotFound);
  EXPECT_NE(tuner::last_error().find(" of this op and dtype on this device, none with the asked R, S, stride, pad and "
                                     "dilation, which must be equal"),
            std::string::npos)
      << tuner::last_error();
}

TEST_F(RuntimeLib, RecordsOfOtherDevicesAndOldTemplateVersionsAreNotUsed) {
  auto other = open(db(), true, "sim:a100-sxm4-80gb");
  ASSERT_TRUE(other);
  tuner::KernelChoice c;
  EXPECT_EQ(other->lookup({"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""}, &c), tuner::Status::kNotFound);
  EXPECT_NE(tuner::last_error().find("sim:a100-sxm4-80gb"), std::string::npos);
  EXPECT_EQ(other->records(), 0) << "the H100 records were counted for the A100";

  nlohmann::json doc = nlohmann::json::parse(slurp(best_file()));
  for (auto& e : doc["entries"]) e["template_version"] = "0000000000000000";
  const std::string stale = (dir_ / "stale.json").string();
  std::ofstream(stale) << doc.dump();
  auto old = open(stale);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->records(), 0);
  EXPECT_EQ(old->lookup({"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""}, &c), tuner::Status::kNotFound);
  // `tuner query --all-versions` shows them: the message says where they went.
  EXPECT_NE(tuner::last_error().find("of gemm f32 on this device were left out as another template version than this "
                                     "runtime builds"),
            std::string::npos)
      << tuner::last_error();
  // Another device's old records are no reason to re-tune this one: not counted (they were, for every device).
  auto a100 = open(stale, true, "sim:a100-sxm4-80gb");
  ASSERT_TRUE(a100);
  EXPECT_EQ(a100->lookup({"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""}, &c), tuner::Status::kNotFound);
  EXPECT_EQ(tuner::last_error().find("left out"), std::string::npos) << tuner::last_error();
  // A GPU whose records are all of older versions has records: opening for it says so (it said "has no records").
  for (auto& e : doc["entries"]) e["device"]["name"] = "replay:NVIDIA H200";
  std::ofstream(stale) << doc.dump();
  tuner::RuntimeOptions o;
  o.source = stale;
  o.device_name = "NVIDIA H200";
  std::unique_ptr<tuner::Runtime> h200;
  EXPECT_EQ(tuner::Runtime::open(o, &h200), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("'NVIDIA H200' has " + std::to_string(doc["entries"].size()) + " records in '" +
                                     stale + "', all of other versions of their templates"),
            std::string::npos)
      << tuner::last_error();
}

TEST_F(RuntimeLib, BadInputGetsAStatusAndOneLineNeverAnException) {
  std::unique_ptr<tuner::Runtime> rt;
  tuner::RuntimeOptions o;
  o.device_name = "sim:h100-sxm";
  EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kInvalidArgument);
  o.source = (dir_ / "absent.db").string();
  EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kSourceError);
  EXPECT_NE(tuner::last_error().find("absent.db"), std::string::npos);
  o.source = (dir_ / "junk.json").string();
  std::ofstream(o.source) << "{\"format\": \"something-else\"}";
  EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kSourceError);
  EXPECT_NE(tuner::last_error().find("tuner-best/1"), std::string::npos);
  EXPECT_NE(tuner::last_error().find("is \"something-else\""), std::string::npos) << tuner::last_error();
  EXPECT_FALSE(rt);
  // A best file without entries said "entry 0 is malformed" with nlohmann's text; a folder, a parse error.
  std::ofstream(o.source) << "{\"format\": \"tuner-best/1\"}";
  EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kSourceError);
  EXPECT_NE(tuner::last_error().find("no \"entries\" array"), std::string::npos) << tuner::last_error();
  o.source = dir_.string();
  EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kSourceError);
  EXPECT_NE(tuner::last_error().find("it is a directory"), std::string::npos) << tuner::last_error();

  auto ok = open(db());
  ASSERT_TRUE(ok);
  tuner::KernelChoice c;
  EXPECT_EQ(ok->lookup({"fft", "n=4096", tuner::DType::kF32, ""}, &c), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("fft"), std::string::npos);
  EXPECT_EQ(ok->lookup({"gemm", "M=0,N=1,K=1", tuner::DType::kF32, ""}, &c), tuner::Status::kInvalidArgument);
  EXPECT_EQ(ok->lookup({"gemm", "M=512,N=512,K=512", static_cast<tuner::DType>(7), ""}, &c),
            tuner::Status::kInvalidArgument);
  // Launch checks the pointers before it needs a GPU.
  float x = 0;
  EXPECT_EQ(tuner::gemm(*ok, tuner::DType::kF32, 512, 512, 512, &x, nullptr, &x), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("buffer B"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(ok->launch({"gemm", "M=512,N=512,K=512", tuner::DType::kF32, ""}, {&x, &x}, nullptr),
            tuner::Status::kInvalidArgument);
  EXPECT_STREQ(tuner::status_name(tuner::Status::kNotFound), "not_found");
}

// A nearest-shape lookup fell back only through a group's best 8 configs: a softmax tuned at 32,768 columns found
// nothing at 1,000 although 20 of its 32 measured configs run there (a user test, stop 43). It falls back through
// every measured config (here at 100 columns, where the first config that runs is past the best 8); and a question no kernel can answer (an output type none writes, a shape past every
// kernel's limits) is invalid_argument naming what is allowed, not not_found.
TEST_F(RuntimeLib, TheNearestShapeFallsBackThroughEveryMeasuredConfigAndWrongQuestionsAreInvalid) {
  const std::string db2 = (dir_ / "softmax.db").string();
  ASSERT_EQ(run("tune --op softmax --dtype f16 --shape rows=4096,cols=32768 --device replay:" + std::string(TUNER_SOURCE_DIR) +
                "/data/replay/softmax_f16_rows4096_cols32768_h100_2026-11-26.json --trials 32 --strategy random "
                "--seed 1 --db " + db2).code, 0);
  auto rt = open(db2, true, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(rt);
  EXPECT_EQ(rt->records(), 32);
  const tuner::KernelChoice c = lookup_ok(*rt, {"softmax", "rows=4096,cols=100", tuner::DType::kF16, ""});
  // The chosen config's place in the ranking query gives.
  CmdResult h = run("query --db " + db2 + " --op softmax --history --json");
  ASSERT_EQ(h.code, 0) << h.err;
  std::vector<std::pair<double, nlohmann::json>> ranked;
  for (const auto& t : nlohmann::json::parse(h.out)) ranked.push_back({t.at("time_ms").get<double>(), t.at("config")});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t place = ranked.size();
  for (size_t i = 0; i < ranked.size(); ++i)
    if (ranked[i].second == nlohmann::json::parse(c.config)) place = i;
  EXPECT_GE(place, 8u) << c.config << ": the best 8 would have served";
  EXPECT_LT(place, ranked.size());

  tuner::KernelChoice x;
  auto ok = open(db());
  EXPECT_EQ(ok->lookup({"gemm", "M=1024,N=1024,K=1024", tuner::DType::kF16, "bf16"}, &x), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("no kernel of gemm f16 writes bf16; allowed output dtypes: f16, f32"),
            std::string::npos) << tuner::last_error();
  EXPECT_EQ(ok->lookup({"softmax", "rows=4096,cols=4096", tuner::DType::kF16, "f32"}, &x), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("allowed output dtypes: f16"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(ok->lookup({"gemm", "M=100000,N=100000,K=8", tuner::DType::kF32, ""}, &x), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("is past what its kernels take"), std::string::npos) << tuner::last_error();
}

TEST_F(RuntimeLib, ADeviceNameMustBeRecordedOrASimDeviceAndAGpuNameFindsItsReplayedRecords) {
  // "bogus" was accepted and failed every lookup later.
  std::unique_ptr<tuner::Runtime> rt;
  tuner::RuntimeOptions o;
  o.source = db();
  o.device_name = "bogus";
  EXPECT_EQ(tuner::Runtime::open(o, &rt), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("'bogus' has no records"), std::string::npos) << tuner::last_error();
  EXPECT_NE(tuner::last_error().find("'sim:h100-sxm'"), std::string::npos) << tuner::last_error();
  EXPECT_FALSE(rt);
  // Records tuned against an H100 recording are "replay:NVIDIA H100 80GB HBM3": the GPU's own name finds them,
  // as `tuner query --device NAME` does (it answered not_found).
  const std::string replayed = (dir_ / "replayed.db").string();
  const auto tune_replay = [&](const std::string& recording, const std::string& shape) {
    return run("tune --op softmax --shape " + shape + " --dtype f16 --device replay:" + TUNER_SOURCE_DIR +
               "/data/replay/" + recording + " --trials 8 --quiet --json --db " + replayed);
  };
  const CmdResult today = tune_replay("softmax_f16_rows4096_cols32768_h100_2026-11-26.json", "rows=4096,cols=32768");
  ASSERT_EQ(today.code, 0) << today.err;
  EXPECT_FALSE(nlohmann::json::parse(today.out).contains("current_template_version")) << "a recording of today's kernel";
  auto h100 = open(replayed, true, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100);
  tuner::KernelChoice c;
  ASSERT_EQ(h100->lookup({"softmax", "rows=4096,cols=32768", tuner::DType::kF16, ""}, &c), tuner::Status::kOk)
      << tuner::last_error();
  const CmdResult q = run("query --db " + replayed + " --op softmax --shape rows=4096,cols=32768 --dtype f16 "
                          "--device \"NVIDIA H100 80GB HBM3\" --json");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(nlohmann::json::parse(c.config), nlohmann::json::parse(q.out).at("config"));

  // A recording of an older softmax kernel: its times are that kernel's. They were stored under today's version,
  // so the runtime ranked today's kernel by them; they are stored under the recording's version now.
  const CmdResult old = tune_replay("softmax_f16_rows4096_cols4096_h100_2026-11-23.json", "rows=4096,cols=4096");
  ASSERT_EQ(old.code, 0) << old.err;
  const auto oj = nlohmann::json::parse(old.out);
  ASSERT_TRUE(oj.contains("current_template_version")) << old.out;
  EXPECT_NE(oj["template_version"], oj["current_template_version"]);
  h100 = open(replayed, true, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100);
  // The nearest current record is the other shape's: the old kernel's record of this shape is not taken.
  ASSERT_EQ(h100->lookup({"softmax", "rows=4096,cols=4096", tuner::DType::kF16, ""}, &c), tuner::Status::kOk);
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.tuned_shape, "rows=4096,cols=32768");
  const std::string q_old = "query --db " + replayed + " --op softmax --shape rows=4096,cols=4096 --dtype f16 "
                            "--device \"replay:NVIDIA H100 80GB HBM3\" --history --json";
  const CmdResult hidden = run(q_old);
  EXPECT_EQ(nlohmann::json::parse(hidden.out).size(), 0u);
  EXPECT_NE(hidden.err.find("records of other template versions match"), std::string::npos) << hidden.err;
  EXPECT_NE(hidden.err.find("--all-versions shows them"), std::string::npos) << hidden.err;
  const auto all = nlohmann::json::parse(run(q_old + " --all-versions").out);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0]["template_version"], oj["template_version"]);
}

TEST_F(RuntimeLib, WithoutAGpuLaunchesSayNoDeviceAndOpeningNeedsADeviceName) {
  std::string note;
  tuner::RuntimeOptions o;
  o.source = db();
  std::unique_ptr<tuner::Runtime> rt;
  const tuner::Status s = tuner::Runtime::open(o, &rt);
  if (s == tuner::Status::kOk) GTEST_SKIP() << "a GPU is present (" << rt->device() << "): tests/gpu cover launches";
  EXPECT_EQ(s, tuner::Status::kNoDevice);
  EXPECT_NE(tuner::last_error().find("device_name"), std::string::npos) << tuner::last_error();

  auto named = open(db());
  ASSERT_TRUE(named);
  float a = 0, b = 0, c = 0;
  EXPECT_EQ(tuner::gemm(*named, tuner::DType::kF32, 512, 512, 512, &a, &b, &c), tuner::Status::kNoDevice);
  EXPECT_NE(tuner::last_error().find("launching needs a GPU"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(tuner::last_error().find("sim:"), std::string::npos) << "a sim device cannot launch: " << tuner::last_error();
}

TEST_F(RuntimeLib, ConcurrentLookupsAgree) {
  auto rt = open(db());
  ASSERT_TRUE(rt);
  const std::vector<std::string> shapes = {"M=512,N=512,K=512", "M=700,N=800,K=900", "M=2048,N=1024,K=4096",
                                           "M=128,N=4096,K=256"};
  std::vector<std::string> first;
  for (const auto& sh : shapes) first.push_back(lookup_ok(*rt, {"gemm", sh, tuner::DType::kF32, ""}).config);
  auto fresh = open(db());
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const size_t k = static_cast<size_t>(i + t) % shapes.size();
        tuner::KernelChoice c;
        if (fresh->lookup({"gemm", shapes[k], tuner::DType::kF32, ""}, &c) != tuner::Status::kOk || c.config != first[k])
          ++mismatches[static_cast<size_t>(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
