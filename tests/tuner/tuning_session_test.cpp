// The tuning loop against a sim device: budget and resume, no re-measurement,
// fault isolation inside a session, and replay under a seed.
#include "tuner/tuning_session.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fstream>

#include <nlohmann/json.hpp>

#include "templates/gemm_tc_source.h"
#include "templates/registry.h"
#include "tuner/compile_cache.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

class TuningSession : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner_session_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TuneOptions options(int64_t trials, uint64_t seed = 3) const {
    TuneOptions o;
    o.workload = templates::parse_workload("gemm", "M=1000,N=1000,K=1000", "f32");
    o.trials = trials;
    o.strategy = "random";
    o.seed = seed;
    o.batch_size = 4;
    o.remeasure_top = 0;  // the re-measurement of finalists has its own test
    o.worker_executable = TUNER_BIN;
    return o;
  }
  std::string db_path(const std::string& name) const { return (dir_ / name).string(); }

  std::vector<db::ResultRow> history(db::TuningDb& db) const {
    db::QueryFilter f;
    f.op = "gemm";
    return db.history(f);
  }

  std::filesystem::path dir_;
};

TEST_F(TuningSession, FillsTheBudgetAndResumesWithoutRemeasuring) {
  auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db(db_path("a.db"));
  auto first = run_tuning(options(6), device, db);
  EXPECT_EQ(first.measured_now, 6);
  EXPECT_EQ(first.previously_measured, 0);
  ASSERT_TRUE(first.best.has_value());
  EXPECT_TRUE(first.best->trial.estimate);
  EXPECT_GT(first.best->trial.gflops, 0);

  auto again = run_tuning(options(6), device, db);  // the budget is already met
  EXPECT_EQ(again.measured_now, 0);
  EXPECT_EQ(again.previously_measured, 6);

  auto more = run_tuning(options(10), device, db);  // continue to a larger budget
  EXPECT_EQ(more.measured_now, 4);
  auto rows = history(db);
  ASSERT_EQ(rows.size(), 10u);
  std::set<std::string> configs;
  for (const auto& r : rows) configs.insert(r.trial.config_json);
  EXPECT_EQ(configs.size(), 10u) << "a config was measured twice";
  for (const auto& r : rows) {
    EXPECT_GT(r.trial.registers, 0);
    EXPECT_GT(r.trial.shared_bytes, 0);
  }
}

TEST_F(TuningSession, ReplaysTheSameConfigsUnderTheSameSeed) {
  auto device = resolve_device("sim:a100-sxm4-80gb");
  db::TuningDb a(db_path("a.db")), b(db_path("b.db")), c(db_path("c.db"));
  run_tuning(options(5, 11), device, a);
  run_tuning(options(5, 11), device, b);
  run_tuning(options(5, 12), device, c);
  auto ha = history(a), hb = history(b), hc = history(c);
  ASSERT_EQ(ha.size(), 5u);
  ASSERT_EQ(hb.size(), 5u);
  bool same_as_c = true;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(ha[i].trial.config_json, hb[i].trial.config_json);
    EXPECT_EQ(ha[i].trial.time_ms, hb[i].trial.time_ms);  // the sim model is deterministic
    same_as_c = same_as_c && ha[i].trial.config_json == hc[i].trial.config_json;
  }
  EXPECT_FALSE(same_as_c);
}

TEST_F(TuningSession, InjectedCrashAndHangBecomeErrorRecordsAndTheSessionGoesOn) {
  auto device = resolve_device("sim:h100-sxm");
  // Find which configs the seed will propose first, then fault two of them.
  db::TuningDb probe(db_path("probe.db"));
  run_tuning(options(4), device, probe);
  const auto& tmpl = templates::find_template("gemm", templates::DType::kF32);
  auto space = tmpl.space(options(1).workload, device.limits);
  auto probe_rows = history(probe);
  ASSERT_EQ(probe_rows.size(), 4u);
  const uint64_t crash = *space.index_of(space.from_json(nlohmann::json::parse(probe_rows[1].trial.config_json)));
  const uint64_t hang = *space.index_of(space.from_json(nlohmann::json::parse(probe_rows[2].trial.config_json)));

  db::TuningDb db(db_path("faults.db"));
  auto opt = options(4);
  opt.faults = {{crash, InjectedFault::kCrash}, {hang, InjectedFault::kHang}};
  opt.run_timeout_s = 1.0;
  auto sum = run_tuning(opt, device, db);
  EXPECT_EQ(sum.measured_now, 4);
  EXPECT_EQ(sum.errors_now, 2);
  EXPECT_EQ(sum.worker_starts, 3);  // the first worker, one after the crash, one after the hang
  auto rows = history(db);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].trial.status, "ok");
  EXPECT_EQ(rows[1].trial.status, "runtime_fault");
  EXPECT_EQ(rows[2].trial.status, "run_timeout");
  EXPECT_EQ(rows[3].trial.status, "ok");
  EXPECT_FALSE(rows[1].trial.error_message.empty());
}

TEST_F(TuningSession, AMissingWorkerFailsTheSessionWithItsReasonWithoutRecordingTrials) {
  auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db(db_path("noworker.db"));
  auto opt = options(4);
  opt.worker_executable = "/nonexistent/tuner";
  EXPECT_THROW(run_tuning(opt, device, db), std::runtime_error);
  EXPECT_TRUE(history(db).empty()) << "an infrastructure failure was stored as a trial outcome";
  db::QueryFilter f;
  auto sessions = db.sessions(f);
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].status, "failed") << "a session that ended with an error must not look interrupted or running";
  EXPECT_NE(sessions[0].reason.find("/nonexistent/tuner"), std::string::npos) << sessions[0].reason;
  EXPECT_FALSE(sessions[0].finished_at.empty());
  EXPECT_EQ(sessions[0].pid, static_cast<int64_t>(getpid()));
}

// A worker that dies (or stalls) before any config starts is broken machinery, not a bad config: each config was
// stored as runtime_fault and, counted against the budget, never measured again by a working worker.
TEST_F(TuningSession, AWorkerThatDiesBeforeRunningAConfigFailsTheSessionAndBlamesNoConfig) {
  auto device = resolve_device("sim:h100-sxm");
  int n = 0;
  for (const std::string body : {"kill -SEGV $$", "exit 3", "exec sleep 1000"}) {
    SCOPED_TRACE(body);
    const auto script = dir_ / ("broken" + std::to_string(n) + ".sh");
    std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    db::TuningDb db(db_path("broken" + std::to_string(n++) + ".db"));
    auto opt = options(6);
    opt.worker_executable = script.string();
    opt.run_timeout_s = 1;
    try {
      (void)run_tuning(opt, device, db);
      ADD_FAILURE() << "a worker that runs nothing did not fail the session";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("failed twice before running a config"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(history(db).empty()) << "a config was blamed for the worker's failure";
    const auto sessions = db.sessions({});
    ASSERT_EQ(sessions.size(), 1u);
    EXPECT_EQ(sessions[0].status, "failed");
    // The same budget with a working worker measures every trial.
    opt.worker_executable = TUNER_BIN;
    EXPECT_EQ(run_tuning(opt, device, db).measured_now, 6);
  }
}

TEST_F(TuningSession, EarlyStopEndsAfterNTrialsWithoutImprovement) {
  auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db(db_path("early.db"));
  auto opt = options(40, 21);
  opt.early_stop = 3;
  auto sum = run_tuning(opt, device, db);
  ASSERT_TRUE(sum.early_stopped);
  auto rows = history(db);
  ASSERT_EQ(static_cast<int64_t>(rows.size()), sum.measured_now);
  ASSERT_GE(rows.size(), 4u);
  ASSERT_LT(rows.size(), 40u);
  // The best time was set before the last three trials, and none of them beat it.
  double best_before = 0;
  for (size_t i = 0; i + 3 < rows.size(); ++i)
    if (rows[i].trial.status == "ok" && (best_before == 0 || rows[i].trial.time_ms < best_before))
      best_before = rows[i].trial.time_ms;
  for (size_t i = rows.size() - 3; i < rows.size(); ++i)
    EXPECT_FALSE(rows[i].trial.status == "ok" && rows[i].trial.time_ms < best_before);
  // ...and the trial just before them did improve it (otherwise the stop would have come earlier).
  EXPECT_DOUBLE_EQ(rows[rows.size() - 4].trial.time_ms, best_before);
}

TEST_F(TuningSession, XgbStartsFromRecordsOfOtherShapesAndGpusUnlessToldNot) {
  auto h100 = resolve_device("sim:h100-sxm");
  auto a100 = resolve_device("sim:a100-sxm4-80gb");
  db::TuningDb db(db_path("transfer.db"));
  auto other = options(6, 5);
  other.workload = templates::parse_workload("gemm", "M=512,N=256,K=128", "f32");
  run_tuning(other, h100, db);  // 6 records of another shape on H100
  run_tuning(options(3, 5), a100, db);  // 3 records of this shape on another GPU

  auto cold = options(2, 5);
  cold.strategy = "xgb";
  cold.transfer = false;
  db::TuningDb cold_db(db_path("cold.db"));
  EXPECT_EQ(run_tuning(cold, h100, cold_db).transferred, 0);

  auto warm = options(4, 5);
  warm.strategy = "xgb";
  auto sum = run_tuning(warm, h100, db);
  EXPECT_EQ(sum.transferred, 9);  // every record but this workload's own on this GPU
  EXPECT_EQ(sum.measured_now, 4);
  auto again = run_tuning(options(6, 5), h100, db);  // own records never count as transferred
  EXPECT_EQ(again.transferred, 0);
}

// Records made on a replay device ("replay:NVIDIA H100 80GB HBM3") are a GPU's: the transfer stage finds its spec
// by compute capability and SM count. It took the name for a sim spec's and skipped every one of them.
TEST_F(TuningSession, RecordsOfAReplayedGpuAreTransferred) {
  const std::string dir = std::string(TUNER_SOURCE_DIR) + "/data/replay/";
  auto other = resolve_device("replay:" + dir + "gemm_f16_M4096_N4096_K512_wgmma_h100_2026-11-26.json");
  auto target = resolve_device("replay:" + dir + "gemm_f16_M2048_N8192_K2048_wgmma_h100_2026-11-26.json");
  db::TuningDb db(db_path("replay_transfer.db"));
  auto first = options(12, 5);
  first.workload = templates::parse_workload("gemm", "M=4096,N=4096,K=512", "f16");
  first.template_name = "gemm_tc_wgmma";
  first.prior = "none";
  ASSERT_EQ(run_tuning(first, other, db).measured_now, 12);
  auto warm = first;
  warm.workload = templates::parse_workload("gemm", "M=2048,N=8192,K=2048", "f16");
  warm.strategy = "xgb";
  warm.trials = 2;
  const auto sum = run_tuning(warm, target, db);
  EXPECT_EQ(sum.transferred, 12);
  EXPECT_EQ(sum.measured_now, 2);
}

TEST_F(TuningSession, RemeasuresTheTopKOnceAndKeepsBothMeasurements) {
  auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db(db_path("remeasure.db"));
  auto opt = options(8);
  opt.remeasure_top = 3;
  auto sum = run_tuning(opt, device, db);
  EXPECT_EQ(sum.measured_now, 8);
  EXPECT_EQ(sum.remeasured, 3);
  const auto rows = history(db);
  ASSERT_EQ(rows.size(), 11u);
  std::vector<std::pair<double, std::string>> search;
  std::set<std::string> remeasured;
  for (const auto& r : rows) {
    if (r.trial.purpose == "search") search.emplace_back(r.trial.time_ms, r.trial.config_json);
    else remeasured.insert(r.trial.config_json);
  }
  std::sort(search.begin(), search.end());
  EXPECT_EQ(remeasured, (std::set<std::string>{search[0].second, search[1].second, search[2].second}));
  ASSERT_TRUE(sum.best.has_value());
  EXPECT_EQ(sum.best->measurements, 2);

  // The budget counts search trials only, and finalists are not re-measured twice.
  auto again = run_tuning(opt, device, db);
  EXPECT_EQ(again.previously_measured, 8);
  EXPECT_EQ(again.measured_now, 0);
  EXPECT_EQ(again.remeasured, 0);
}

TEST_F(TuningSession, XgbSavesItsModelAndTheNextSessionStartsFromIt) {
  auto device = resolve_device("sim:h100-sxm");
  db::TuningDb db(db_path("model.db"));
  auto first = options(12, 7);
  first.strategy = "xgb";
  auto sum = run_tuning(first, device, db);
  EXPECT_GT(sum.saved_model, 0);
  EXPECT_EQ(sum.started_from_model, 0);
  const auto stored = db.latest_cost_model("xgb-rank", "gemm", sum.template_name);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->id, sum.saved_model);
  EXPECT_FALSE(stored->model.empty());
  EXPECT_EQ(stored->session_id, sum.session_id);

  auto next = options(4, 7);
  next.strategy = "xgb";
  next.workload = templates::parse_workload("gemm", "M=300,N=200,K=100", "f32");
  EXPECT_EQ(run_tuning(next, device, db).started_from_model, sum.saved_model);
  next.transfer = false;  // --transfer none: neither records nor models of other sessions
  next.workload = templates::parse_workload("gemm", "M=301,N=200,K=100", "f32");
  EXPECT_EQ(run_tuning(next, device, db).started_from_model, 0);
}

// The H100 run found every OUT_F32=1 config of gemm_tc_mma "wrong" (NaN): the session compiled one
// reference for the workload, from config 0 (OUT_F32=0), which writes halves into the fp32 C. A
// worker wrapper records the requests; each must carry the reference of its own C type.
TEST_F(TuningSession, EachConfigGetsTheReferenceOfItsOwnOutputType) {
  const auto log = dir_ / "requests.jsonl";
  const auto wrapper = dir_ / "tee_worker.sh";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\ntee -a '" << log.string() << "' | exec '" << TUNER_BIN << "' \"$@\"\n";
  }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  auto o = options(6, 5);
  o.workload = templates::parse_workload("gemm", "M=200,N=136,K=300", "f16");
  o.worker_executable = wrapper.string();
  db::TuningDb db(db_path("ref.db"));
  auto sum = run_tuning(o, resolve_device("sim:h100-sxm"), db);
  ASSERT_EQ(sum.template_name, "gemm_tc_mma");
  ASSERT_EQ(sum.measured_now, 6);

  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  std::map<bool, std::string> expected;  // C is fp32 -> the reference cubin for that C
  for (bool f32 : {false, true}) {
    auto r = builder.compile({templates::gemm_tc_reference_source(templates::DType::kF16, f32),
                              templates::kTcReferenceKernelName, "sm_90", {}});
    ASSERT_TRUE(r.ok()) << r.log;
    expected[f32] = r.cubin;
  }
  ASSERT_NE(expected[false], expected[true]);
  std::ifstream in(log);
  std::string line;
  std::map<bool, int> seen;
  while (std::getline(in, line)) {
    const auto req = measure_request_from_json(nlohmann::json::parse(line));
    ASSERT_GE(req.buffers.size(), 3u);
    const bool c_f32 = req.buffers[2].dtype == templates::DType::kF32;
    ++seen[c_f32];
    EXPECT_EQ(req.reference_cubin, expected[c_f32]) << "C in " << templates::to_string(req.buffers[2].dtype)
                                                    << " was given another type's reference";
  }
  EXPECT_GT(seen[false], 0);
  EXPECT_GT(seen[true], 0) << "the sample should hold OUT_F32=1 configs";
}

TEST(FaultKernels, NameTheKernelTheyReplace) {
  EXPECT_NE(fault_kernel_source("gemm_f32", InjectedFault::kCrash).find("void gemm_f32()"), std::string::npos);
  EXPECT_NE(fault_kernel_source("gemm_f32", InjectedFault::kHang).find("while"), std::string::npos);
}

// An injected crash must fault on a GPU (the H100 run showed the old kernel's store to 0x10 completing
// silently): it traps, and both fault kernels compile for sm_80 and sm_90 under the config's name.
TEST(FaultKernels, TheCrashKernelTrapsAndBothCompile) {
  EXPECT_NE(fault_kernel_source("gemm_tc", InjectedFault::kCrash).find("__trap()"), std::string::npos);
  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  for (const char* arch : {"sm_80", "sm_90"})
    for (auto f : {InjectedFault::kCrash, InjectedFault::kHang}) {
      auto r = builder.compile({fault_kernel_source("gemm_tc", f), "gemm_tc", arch, {}});
      EXPECT_TRUE(r.ok()) << arch << " " << to_string(f) << "\n" << r.log;
    }
}

}  // namespace
}  // namespace tuner
