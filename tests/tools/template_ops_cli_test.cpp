// Every op and dtype of the template library tunes end to end with the real
// `tuner` binary against sim:h100-sxm, and `tuner query --best --json`
// returns the record.
#include <gtest/gtest.h>

#include <ostream>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {

struct OpCase {
  const char* op;
  const char* shape;
  const char* dtype;
  const char* template_name;
  bool by_name = false;  ///< Ask for template_name with --template rather than get it as the default.
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// What ctest and gtest print for a case (instead of its raw bytes).
void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.op << " " << c.shape << " " << c.dtype << " -> " << c.template_name;
}

class TemplateOpsCli : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tuner_ops_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Runs `tuner <args>`; returns the exit code, stdout in *out and stderr in *err.
  int run(const std::string& args, std::string* out, std::string* err) const {
    const auto o = dir_ / "stdout", e = dir_ / "stderr";
    const std::string cmd = std::string(TUNER_BIN) + " " + args + " >" + o.string() + " 2>" + e.string();
    const int status = std::system(cmd.c_str());
    *out = slurp(o);
    *err = slurp(e);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::filesystem::path dir_;
};

TEST_P(TemplateOpsCli, TunesOnTheSimDeviceAndQueriesTheBestRecord) {
  const OpCase& c = GetParam();
  const std::string db = (dir_ / "t.db").string();
  const std::string workload =
      std::string("--op ") + c.op + " --shape " + c.shape + " --dtype " + c.dtype + " --device sim:h100-sxm";
  const std::string chosen = c.by_name ? std::string(" --template ") + c.template_name : "";
  std::string out, err;
  ASSERT_EQ(run("tune " + workload + chosen + " --trials 2 --strategy random --seed 4 --quiet --json --db " + db, &out, &err), 0)
      << err;
  auto t = nlohmann::json::parse(out);
  EXPECT_EQ(t["measured"], 2);
  EXPECT_EQ(t["template"], c.template_name) << t.dump();
  ASSERT_EQ(run("query --db " + db + " --op " + c.op + " --shape " + c.shape + " --dtype " + c.dtype +
                    " --device sim:h100-sxm --best --json",
                &out, &err),
            0)
      << err;
  auto q = nlohmann::json::parse(out);
  EXPECT_EQ(q["op"], c.op);
  EXPECT_EQ(q["dtype"], c.dtype);
  EXPECT_EQ(q["status"], "ok") << q.dump();
  EXPECT_TRUE(q["estimate"].get<bool>());
  EXPECT_GT(q["time_ms"].get<double>(), 0.0);
  EXPECT_FALSE(q["config"].empty());
  EXPECT_EQ(q["template"], c.template_name) << q.dump();
}

TEST_F(TemplateOpsCli, QueryRanksEveryTemplateTogetherUnlessOneIsNamed) {
  const std::string db = (dir_ / "t.db").string();
  const std::string workload = "--op gemm --shape M=2048,N=2048,K=2048 --dtype f16 --device sim:h100-sxm";
  std::string out, err;
  for (const char* tmpl : {"gemm_tc_mma", "gemm_tc_wgmma"})
    ASSERT_EQ(run("tune " + workload + " --template " + tmpl + " --trials 3 --strategy random --remeasure 0 --quiet --db " + db,
                  &out, &err), 0) << err;
  double best_of[2] = {0, 0};
  int i = 0;
  for (const char* tmpl : {"gemm_tc_mma", "gemm_tc_wgmma"}) {
    ASSERT_EQ(run("query --db " + db + " " + workload + " --template " + tmpl + " --best --json", &out, &err), 0) << err;
    auto q = nlohmann::json::parse(out);
    EXPECT_EQ(q["template"], tmpl);
    best_of[i++] = q["time_ms"].get<double>();
  }
  ASSERT_EQ(run("query --db " + db + " " + workload + " --best --json", &out, &err), 0) << err;
  auto q = nlohmann::json::parse(out);
  EXPECT_DOUBLE_EQ(q["time_ms"].get<double>(), std::min(best_of[0], best_of[1])) << q.dump();
  EXPECT_EQ(q["template"], best_of[0] < best_of[1] ? "gemm_tc_mma" : "gemm_tc_wgmma");
  EXPECT_EQ(run("query --db " + db + " --template gemm_tc_nothing", &out, &err), 2);
  EXPECT_NE(err.find("allowed: gemm_f32_simt"), std::string::npos) << err;
}

// --template auto (the default) tunes every template that runs the workload on the device: each gets
// ceil(N / 2T) trials, then the rest goes to the one whose best is fastest.
TEST_F(TemplateOpsCli, TheDefaultTemplateAutoSharesTheBudgetAndGivesTheRestToTheFastest) {
  const std::string db = (dir_ / "t.db").string();
  const std::string workload = "--op gemm --shape M=2048,N=2048,K=2048 --dtype f16 --device sim:h100-sxm";
  const std::string tune = "tune " + workload + " --strategy random --seed 2 --remeasure 0 --quiet --json --db " + db;
  std::string out, err;
  ASSERT_EQ(run(tune + " --trials 4", &out, &err), 0) << err;
  auto t = nlohmann::json::parse(out);
  EXPECT_EQ(t["measured"], 4);
  ASSERT_EQ(t["templates"].size(), 3u) << t.dump();
  EXPECT_EQ(t["templates"][0]["template"], "gemm_tc_mma");
  EXPECT_EQ(t["templates"][1]["template"], "gemm_tc_wgmma");
  EXPECT_EQ(t["templates"][0]["measured"], 1);
  EXPECT_EQ(t["templates"][1]["measured"], 1);
  const double mma = t["templates"][0]["best_ms"], wgmma = t["templates"][1]["best_ms"];
  const std::string faster = mma < wgmma ? "gemm_tc_mma" : "gemm_tc_wgmma";
  EXPECT_EQ(t["templates"][2]["template"], faster) << "the rest goes to the template whose best is fastest";
  EXPECT_EQ(t["templates"][2]["measured"], 2);
  EXPECT_EQ(t["space_size"], t["templates"][0]["space_size"].get<int>() + t["templates"][1]["space_size"].get<int>());
  EXPECT_LE(t["best"]["time_ms"].get<double>(), std::min(mma, wgmma));
  EXPECT_EQ(t["template"], t["best"]["template"]);
  EXPECT_NE(t["stop_reason"].get<std::string>().find("budget of 4 trials reached"), std::string::npos) << t.dump();
  // query --best ranks both templates' records together.
  ASSERT_EQ(run("query --db " + db + " " + workload + " --best --json", &out, &err), 0) << err;
  auto q = nlohmann::json::parse(out);
  EXPECT_DOUBLE_EQ(q["time_ms"].get<double>(), t["best"]["time_ms"].get<double>());
  // The budget is a target for the database, as with one template: a rerun measures nothing new, a larger
  // budget continues.
  ASSERT_EQ(run(tune + " --trials 4", &out, &err), 0) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["measured"], 0);
  ASSERT_EQ(run(tune + " --trials 6", &out, &err), 0) << err;
  t = nlohmann::json::parse(out);
  EXPECT_EQ(t["measured"], 2);
  EXPECT_EQ(t["previously_measured"], 4);
  // A budget smaller than one trial per template is not exceeded.
  const std::string db3 = (dir_ / "t3.db").string();
  ASSERT_EQ(run("tune " + workload + " --strategy random --seed 2 --remeasure 0 --quiet --json --trials 1 --db " + db3,
                &out, &err), 0) << err;
  t = nlohmann::json::parse(out);
  EXPECT_EQ(t["measured"], 1);
  EXPECT_EQ(t["templates"][1]["measured"], 0);
  // An early stop ends its template's exploration share, not the run: the second template still gets its share
  // (it used to get none, so auto never saw the faster template); a template that stopped early gets no more
  // trials, and once every one has, the run ends below its budget.
  const std::string db4 = (dir_ / "t4.db").string();
  ASSERT_EQ(run("tune " + workload + " --strategy random --seed 2 --remeasure 0 --quiet --json --trials 40 "
                "--early-stop 1 --db " + db4, &out, &err), 0) << err;
  t = nlohmann::json::parse(out);
  ASSERT_EQ(t["templates"].size(), 2u) << t.dump();
  EXPECT_GT(t["templates"][0]["measured"].get<int>(), 0) << t.dump();
  EXPECT_GT(t["templates"][1]["measured"].get<int>(), 0) << t.dump();
  EXPECT_TRUE(t["early_stopped"].get<bool>()) << t.dump();
  EXPECT_LT(t["measured"].get<int>(), 40) << t.dump();
  EXPECT_NE(t["stop_reason"].get<std::string>().find("early stop"), std::string::npos) << t.dump();
  // With re-measuring, the fastest template's finalists get a round of their own with no search trial left: it
  // says so (it said "budget of N trials reached").
  const std::string db5 = (dir_ / "t5.db").string();
  ASSERT_EQ(run("tune " + workload + " --strategy random --seed 2 --remeasure 2 --quiet --json --trials 40 "
                "--early-stop 1 --db " + db5, &out, &err), 0) << err;
  t = nlohmann::json::parse(out);
  ASSERT_EQ(t["templates"].size(), 3u) << t.dump();
  EXPECT_EQ(t["templates"][2]["measured"], 0) << t.dump();
  EXPECT_EQ(t["templates"][2]["stop_reason"], "finalists re-measured (no search trials left for it)") << t.dump();
  // What works on one template's space alone asks for one by name, and touches nothing.
  const std::string db2 = (dir_ / "t2.db").string();
  EXPECT_EQ(run("tune " + workload + " --trials all --strategy grid --quiet --db " + db2, &out, &err), 2);
  EXPECT_NE(err.find("--trials all works on one template's space"), std::string::npos) << err;
  EXPECT_NE(err.find("gemm_tc_mma, gemm_tc_wgmma"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(db2));
  // Where one template runs (sm_80 has no wgmma), auto is that template's plain session.
  ASSERT_EQ(run("tune --op gemm --shape M=2048,N=2048,K=2048 --dtype f16 --device sim:a100-sxm4-80gb --trials 2 "
                "--strategy random --remeasure 0 --quiet --json --db " + db, &out, &err), 0) << err;
  t = nlohmann::json::parse(out);
  EXPECT_EQ(t["template"], "gemm_tc_mma");
  EXPECT_FALSE(t.contains("templates"));
}

TEST_F(TemplateOpsCli, TheHopperTemplateIsRefusedWhereItCannotRun) {
  const std::string db = (dir_ / "t.db").string();
  std::string out, err;
  EXPECT_EQ(run("tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --device sim:a100-sxm4-80gb --template "
                "gemm_tc_wgmma --trials 2 --quiet --db " + db, &out, &err), 2);
  EXPECT_NE(err.find("sm_80"), std::string::npos) << err;
  EXPECT_EQ(run("tune --op gemm --shape M=256,N=250,K=256 --dtype f16 --device sim:h100-sxm --template "
                "gemm_tc_wgmma --trials 2 --quiet --db " + db, &out, &err), 2);
  EXPECT_NE(err.find("N=250"), std::string::npos) << err;
  EXPECT_EQ(run("tune --op gemm --shape M=256,N=256,K=256 --dtype f16 --device sim:h100-sxm --template gemm_f32_simt "
                "--trials 2 --quiet --db " + db, &out, &err), 2);
  EXPECT_NE(err.find("allowed: auto (every one the device runs), gemm_tc_mma, gemm_tc_wgmma"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(db)) << "bad input touches no database";
}

INSTANTIATE_TEST_SUITE_P(
    Ops, TemplateOpsCli,
    ::testing::Values(OpCase{"softmax", "rows=300,cols=5000", "f32", "softmax_rows"},
                      OpCase{"softmax", "rows=300,cols=5000", "f16", "softmax_rows"},
                      OpCase{"softmax", "rows=300,cols=5000", "bf16", "softmax_rows"},
                      OpCase{"layernorm", "rows=300,cols=5000", "f32", "layernorm_rows"},
                      OpCase{"layernorm", "rows=300,cols=5000", "f16", "layernorm_rows"},
                      OpCase{"layernorm", "rows=300,cols=5000", "bf16", "layernorm_rows"},
                      OpCase{"gemm", "M=500,N=300,K=200", "f16", "gemm_tc_mma"},
                      OpCase{"gemm", "M=500,N=300,K=200", "bf16", "gemm_tc_mma"},
                      OpCase{"gemm", "M=500,N=304,K=200", "f16", "gemm_tc_wgmma", true},
                      OpCase{"batched_gemm", "B=4,M=100,N=72,K=64", "bf16", "batched_gemm_tc_wgmma", true},
                      OpCase{"batched_gemm", "B=4,M=100,N=70,K=33", "f32", "batched_gemm_f32_simt"},
                      OpCase{"batched_gemm", "B=4,M=100,N=72,K=64", "f16", "batched_gemm_tc_mma", true},
                      OpCase{"batched_gemm", "B=4,M=100,N=72,K=64", "bf16", "batched_gemm_tc_mma", true},
                      OpCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1", "f32", "conv2d_igemm_simt"},
                      // 294 taps: past conv2d_patch_tc's 256, so auto is conv2d_igemm_tc alone.
                      OpCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=7,S=7,stride=2,pad=3", "f16", "conv2d_igemm_tc"},
                      OpCase{"conv2d", "N=2,H=15,W=13,C=16,K=20,R=3,S=3,stride=2,pad=1", "bf16", "conv2d_igemm_tc"},
                      OpCase{"conv2d", "N=2,H=15,W=13,C=24,K=40,R=3,S=3,stride=2,pad=1", "f16", "conv2d_igemm_wgmma", true},
                      OpCase{"conv2d", "N=2,H=15,W=13,C=6,K=20,R=3,S=3,stride=2,pad=1", "f16", "conv2d_patch_tc", true},
                      OpCase{"conv2d", "N=2,H=14,W=14,C=64,K=96,R=1,S=1,stride=1,pad=0", "f32", "conv2d_gemm_simt", true}),
    [](const auto& info) {
      return std::string(info.param.op) + "_" + info.param.dtype +
             (info.param.by_name ? std::string("_by_name_") + info.param.template_name : "");
    });

}  // namespace
