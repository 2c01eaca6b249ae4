// `tuner query` on a machine other than the one that tuned: records read by their recorded device name
// (a real GPU's, or "replay:" + it for records replayed from its recording), cuda:N without a GPU
// refused with the recorded names suggested, and --best rows with their template and, for memory-bound
// ops, GB/s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;
using tuner_cli_test::slurp;
using Json = nlohmann::json;

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

class QueryAnywhere : public Cli {
 protected:
  /// A softmax tuned against the H100 recording: stored as the device "replay:NVIDIA H100 80GB HBM3".
  void tune_replay() {
    auto t = run(std::string("tune --op softmax --shape rows=4096,cols=32768 --dtype f16 --device replay:") +
                 TUNER_SOURCE_DIR + "/data/replay/softmax_f16_rows4096_cols32768_h100_2026-11-26.json --trials 8 --quiet --db " +
                 db());
    ASSERT_EQ(t.code, 0) << t.err;
  }
};

TEST_F(QueryAnywhere, RecordedDeviceNamesAnswerBestQueries) {
  tune_replay();
  // The recording file itself names the recorded device: a query by it that matches nothing does not say the
  // device has no session here (it did, listing that very device as recorded).
  const std::string by_file = "query --db " + db() + " --device replay:" + TUNER_SOURCE_DIR +
                              "/data/replay/softmax_f16_rows4096_cols32768_h100_2026-11-26.json";
  auto none = run(by_file + " --op gemm");
  EXPECT_EQ(none.err.find("has no session"), std::string::npos) << none.err;
  auto some = run(by_file + " --best --json");
  ASSERT_EQ(some.code, 0) << some.err;
  EXPECT_EQ(Json::parse(some.out).size(), 1u);
  for (const std::string& device : {std::string(kH100), "replay:" + std::string(kH100)}) {
    auto q = run("query --db " + db() + " --device '" + device + "' --best --json");
    ASSERT_EQ(q.code, 0) << device << "\n" << q.err;
    const auto rows = Json::parse(q.out);
    ASSERT_EQ(rows.size(), 1u) << device;
    EXPECT_EQ(rows[0]["device"], "replay:" + std::string(kH100)) << "replayed records keep the replay: name";
    EXPECT_EQ(rows[0]["template"], "softmax_rows");
    // GB/s: 4096 x 32768 f16 read and written once = 2 * 4096 * 32768 * 2 bytes, over the time.
    const double bytes = 2.0 * 4096 * 32768 * 2;
    EXPECT_NEAR(rows[0]["gbps"].get<double>(), bytes / (rows[0]["time_ms"].get<double>() * 1e-3) / 1e9, 1e-6);

    // One workload on the device: the one best record.
    auto one = run("query --db " + db() + " --op softmax --shape rows=4096,cols=32768 --dtype f16 --device '" +
                   device + "' --json");
    ASSERT_EQ(one.code, 0) << one.err;
    EXPECT_EQ(Json::parse(one.out)["config"], rows[0]["config"]);

    // The table: template and GB/s columns next to GFLOP/s.
    auto table = run("query --db " + db() + " --device '" + device + "' --best");
    ASSERT_EQ(table.code, 0) << table.err;
    const std::string header = table.out.substr(0, table.out.find('\n'));
    for (const char* col : {"template", "GFLOP/s", "GB/s", "device"})
      EXPECT_NE(header.find(col), std::string::npos) << col << "\n" << table.out;
    EXPECT_NE(table.out.find("softmax_rows"), std::string::npos) << table.out;
  }
  // History by name as well.
  auto h = run("query --db " + db() + " --device '" + std::string(kH100) + "' --history --json");
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_EQ(Json::parse(h.out).size(), 8u);
}

TEST_F(QueryAnywhere, CudaWithoutAGpuSuggestsTheRecordedNames) {
  if (std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1")) GTEST_SKIP() << "this machine has a CUDA driver";
  tune_replay();
  const std::string before = slurp(db());
  auto r = run("query --db " + db() + " --device cuda:0 --best");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("cuda:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("replay:" + std::string(kH100)), std::string::npos) << r.err;
  EXPECT_EQ(slurp(db()), before);
}

TEST_F(QueryAnywhere, UnknownNamesAreRefusedWithTheRecordedOnes) {
  tune_replay();
  for (const std::string& device :
       std::vector<std::string>{"NVIDIA A100-SXM4-80GB", "replay:NVIDIA A100-SXM4-80GB", "nvidia h100 80gb hbm3"}) {
    auto r = run("query --db " + db() + " --device '" + device + "' --best");
    EXPECT_EQ(r.code, 2) << device;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("'" + device + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("replay:" + std::string(kH100)), std::string::npos) << r.err;
  }
}

TEST_F(QueryAnywhere, SimRecordsKeepTheirNameAndBestShowsTheTemplate) {
  auto t = run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 4 --strategy random --quiet --db " +
               db());
  ASSERT_EQ(t.code, 0) << t.err;
  tune_replay();
  auto q = run("query --db " + db() + " --device sim:h100-sxm --best");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.out.find("gemm_f32_simt"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("softmax"), std::string::npos) << "only the sim device's records\n" << q.out;
  // Both devices, one row each (one template each); GB/s only where it means something.
  auto all = run("query --db " + db() + " --best");
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("GB/s"), std::string::npos) << all.out;
  const auto j = Json::parse(run("query --db " + db() + " --best --json").out);
  ASSERT_EQ(j.size(), 2u);
  for (const auto& r : j) {
    if (r["op"] == "gemm") {
      EXPECT_EQ(r["gbps"], 0.0);
    } else {
      EXPECT_GT(r["gbps"].get<double>(), 0.0) << r["op"];
    }
  }
}

TEST_F(QueryAnywhere, TheOneBestRecordNeedsADtypeWhereSeveralAreRecorded) {
  // With f16 and f32 records of one shape, --op --shape --device without --dtype answered with one of them.
  for (const char* dtype : {"f32", "f16"})
    ASSERT_EQ(run(std::string("tune --op gemm --shape M=64,N=64,K=64 --dtype ") + dtype +
                  " --device sim:h100-sxm --trials 2 --quiet --db " + db())
                  .code,
              0);
  const std::string one = "query --db " + db() + " --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm";
  const auto r = run(one + " --json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("records of 2 dtypes on this device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--dtype f16 or --dtype f32"), std::string::npos) << r.err;
  for (const char* dtype : {"f32", "f16"}) {
    const auto b = run(one + " --dtype " + dtype + " --json");
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_EQ(Json::parse(b.out)["dtype"], dtype);
  }
  // One dtype recorded: no --dtype needed, as before.
  const std::string other = (dir_ / "one.db").string();
  ASSERT_EQ(run("tune --op gemm --shape M=64,N=64,K=64 --dtype f16 --device sim:h100-sxm --trials 2 --quiet --db " + other)
                .code,
            0);
  const auto only = run("query --db " + other + " --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --json");
  ASSERT_EQ(only.code, 0) << only.err;
  EXPECT_EQ(Json::parse(only.out)["dtype"], "f16");
}

TEST_F(QueryAnywhere, AQueryThatMatchesNothingSaysSoTheSameWayInEveryFormat) {
  auto t = run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 4 --strategy random --quiet --db " +
               db());
  ASSERT_EQ(t.code, 0) << t.err;
  // The one record of a workload on a device: exit 1 when it does not exist, as a table and as JSON.
  const std::string one = "query --db " + db() + " --best --op gemm --shape M=64,N=64,K=32 --device sim:h100-sxm";
  auto table = run(one);
  EXPECT_EQ(table.code, 1) << table.out;
  EXPECT_NE(table.out.find("(no records match)"), std::string::npos) << table.out;
  auto json = run(one + " --json");
  EXPECT_EQ(json.code, 1);
  EXPECT_EQ(Json::parse(json.out), nullptr);
  // Lists that match nothing are empty lists (exit 0), sessions included.
  auto sessions = run("query --db " + db() + " --sessions --op softmax");
  EXPECT_EQ(sessions.code, 0);
  EXPECT_NE(sessions.out.find("(no sessions match)"), std::string::npos) << sessions.out;
  // A valid device that ran no session here: the recorded ones are named, on stderr.
  for (const char* mode : {"--best", "--history", "--sessions"}) {
    auto other = run("query --db " + db() + " " + mode + " --device sim:a100-sxm4-80gb");
    EXPECT_EQ(other.code, 0) << mode;
    EXPECT_NE(other.err.find("device 'sim:a100-sxm4-80gb' has no session in this database; recorded devices: "
                             "'sim:h100-sxm'"),
              std::string::npos)
        << mode << ": " << other.err;
  }
  EXPECT_EQ(run("query --db " + db() + " --best --device sim:h100-sxm").err, "") << "no note where records exist";
  // export and report say the same (export wrote an empty document silently; report named no device).
  for (const char* format : {"best", "jsonl"}) {
    auto e = run("export --db " + db() + " --format " + std::string(format) + " --device sim:a100-sxm4-80gb");
    EXPECT_EQ(e.code, 0) << format;
    EXPECT_NE(e.err.find("recorded devices: 'sim:h100-sxm'"), std::string::npos) << format << ": " << e.err;
  }
  auto report = run("report --db " + db() + " --device sim:a100-sxm4-80gb --out " + (dir_ / "r.html").string());
  EXPECT_EQ(report.code, 2);
  EXPECT_NE(report.err.find("recorded devices: 'sim:h100-sxm'"), std::string::npos) << report.err;
  EXPECT_EQ(std::count(report.err.begin(), report.err.end(), '\n'), 1) << report.err;
}

// A session on a recording of an older kernel version is listed (marked), with the reason it ended: --sessions
// hid it without a hint while --best and --history said what they left out, and a session that ran to its budget
// stored no reason. tune --json names the strategy and seed that query --sessions shows.
TEST_F(QueryAnywhere, SessionsOfAnOlderTemplateVersionAreListedWithWhyTheyEnded) {
  auto t = run(std::string("tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device replay:") +
               TUNER_SOURCE_DIR + "/data/replay/softmax_f16_rows4096_cols4096_h100_2026-11-25.json --trials 6 "
               "--strategy random --seed 9 --json --db " + db());
  ASSERT_EQ(t.code, 0) << t.err;
  const Json tj = Json::parse(t.out);
  ASSERT_TRUE(tj.contains("current_template_version")) << "the recording is of an older kernel version";
  EXPECT_EQ(tj["strategy"], "random");
  EXPECT_EQ(tj["seed"], 9);
  auto q = run("query --sessions --json --db " + db());
  ASSERT_EQ(q.code, 0) << q.err;
  const Json sessions = Json::parse(q.out);
  ASSERT_EQ(sessions.size(), 1u) << q.out;
  EXPECT_EQ(sessions[0]["current_version"], false);
  EXPECT_EQ(sessions[0]["reason"], tj["stop_reason"]);
  EXPECT_EQ(sessions[0]["reason"], "budget of 6 trials reached");
  EXPECT_EQ(sessions[0]["strategy"], tj["strategy"]);
  auto table = run("query --sessions --db " + db());
  EXPECT_NE(table.out.find("(older version)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("budget of 6 trials reached"), std::string::npos) << table.out;
}

TEST_F(QueryAnywhere, TablesShowWhatTellsRowsApart) {
  // A re-measured finalist's second row says so; plans name their engine; --all-versions names versions.
  ASSERT_EQ(run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 4 --remeasure 1 --quiet --db " +
                db()).code,
            0);
  const auto history = run("query --db " + db() + " --history");
  EXPECT_NE(history.out.find("purpose"), std::string::npos) << history.out;
  EXPECT_NE(history.out.find("remeasure"), std::string::npos) << history.out;
  const auto versions = run("query --db " + db() + " --best --all-versions");
  EXPECT_NE(versions.out.find("gemm_f32_simt@"), std::string::npos) << versions.out;
  ASSERT_EQ(run("plan --model gpt3-1.3b --cluster dgx-h100:1 --export megatron --out " + (dir_ / "m.sh").string() +
                " --db " + db()).code,
            0);
  const auto plans = run("query --db " + db() + " --plans");
  EXPECT_NE(plans.out.find("engine"), std::string::npos) << plans.out;
  EXPECT_NE(plans.out.find("megatron"), std::string::npos) << plans.out;
}

}  // namespace
