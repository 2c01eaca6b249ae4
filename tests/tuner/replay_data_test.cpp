// Replay files as read (issue 12): every field is validated on load, and a bad one is one line
// naming the file, the field's path and what is allowed, with long values cut to an excerpt.
#include "tuner/replay_data.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "tuner/device_registry.h"
#include "tuner/replay_oracle.h"

namespace tuner {
namespace {

/// A valid recording of two gemm configs, as write_replay writes one.
nlohmann::json valid_doc() {
  return nlohmann::json::parse(R"({
    "format": "tuner-replay/1",
    "device": {"name": "sim:h100-sxm", "simulated": true, "cc_major": 9, "cc_minor": 0, "sm_count": 132,
               "memory_bytes": 85899345920, "driver_version": "none", "nvrtc_version": "12.4"},
    "gpu": "h100-sxm", "op": "gemm", "shape": "M=1000,N=1000,K=1000", "dtype": "f32",
    "template": "gemm_f32_simt", "template_version": "abc", "space_size": 100,
    "records": [
      {"config": {"BM": 64, "BN": 64}, "status": "ok", "time_ms": 0.12, "time_spread_ms": 0.001, "repeats": 10,
       "registers": 64, "shared_bytes": 8192, "spill_bytes": 0},
      {"config": {"BM": 128, "BN": 64}, "status": "compile_error", "error": "too many resources",
       "registers": 0, "shared_bytes": 0, "spill_bytes": 0}
    ]})");
}

/// A file of the test's own (the tests go through read_replay, as the CLI does).
std::string temp_file(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("replay_data_test_" + std::to_string(::getpid()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path.string();
}

/// The message of the invalid_argument that reading `text` throws; fails the test when none is thrown.
std::string error_of_text(const std::string& text) {
  const std::string path = temp_file(text);
  std::string message;
  try {
    read_replay(path);
    ADD_FAILURE() << "no error for " << text.substr(0, 300);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  std::filesystem::remove(path);
  return message;
}

std::string error_of(const nlohmann::json& doc) { return error_of_text(doc.dump()); }

void expect_has(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(ReplayData, AStatusOutsideTheErrorKindsIsRejectedOnLoad) {
  auto doc = valid_doc();
  doc["records"][1]["status"] = "crashed";
  const std::string e = error_of(doc);
  expect_has(e, "replay file '" + std::filesystem::temp_directory_path().string());
  expect_has(e, "records[1].status");
  expect_has(e, "\"crashed\"");
  expect_has(e, "ok, invalid_config, compile_error, compile_timeout, launch_error, runtime_fault, run_timeout, "
                "wrong_answer, unknown");
}

TEST(ReplayData, IntegersBeyondTheirRangeAreRejectedNotWrapped) {
  // 2^70 parses as a floating-point number; it used to be converted to int (-2147483648).
  std::string text = valid_doc().dump();
  const std::string from = "\"registers\":64";
  text.replace(text.find(from), from.size(), "\"registers\":1180591620717411303424");
  const std::string e = error_of_text(text);
  expect_has(e, "records[0].registers");
  expect_has(e, "an integer in 0 .. 255");

  auto doc = valid_doc();
  doc["records"][0]["shared_bytes"] = -4;
  expect_has(error_of(doc), "records[0].shared_bytes");
  doc = valid_doc();
  doc["records"][0]["repeats"] = 3.5;
  expect_has(error_of(doc), "records[0].repeats");
  doc = valid_doc();
  doc["device"]["sm_count"] = int64_t{1} << 40;
  expect_has(error_of(doc), "device.sm_count");
}

TEST(ReplayData, AnOkTimeMustBeFiniteAndAtLeastANanosecond) {
  // 5e-324 ms gave infinite GFLOP/s.
  auto doc = valid_doc();
  doc["records"][0]["time_ms"] = 5e-324;
  const std::string e = error_of(doc);
  expect_has(e, "records[0].time_ms");
  expect_has(e, "1e-06");
  doc["records"][0]["time_ms"] = 1e300;
  expect_has(error_of(doc), "records[0].time_ms");
  doc["records"][0]["time_ms"] = "0.1";
  expect_has(error_of(doc), "records[0].time_ms");
  doc["records"][0].erase("time_ms");
  expect_has(error_of(doc), "records[0].time_ms is missing");
}

TEST(ReplayData, NegativeSpreadsAndSizesAreRejected) {
  auto doc = valid_doc();
  doc["records"][0]["time_spread_ms"] = -0.5;
  expect_has(error_of(doc), "records[0].time_spread_ms");
  doc = valid_doc();
  doc["space_size"] = -1;
  const std::string e = error_of(doc);
  expect_has(e, "space_size is -1");
  expect_has(e, "allowed: an integer in 0 ..");
}

TEST(ReplayData, TheFieldPathNamesTheRecordIndex) {
  auto doc = valid_doc();
  for (int i = 0; i < 12; ++i)
    doc["records"].push_back({{"config", {{"BM", 256 + i}, {"BN", 64}}}, {"status", "ok"}, {"time_ms", 0.5}});
  doc["records"][12]["time_ms"] = -1;
  const std::string e = error_of(doc);
  expect_has(e, "records[12].time_ms is -1");
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
}

TEST(ReplayData, LongValuesAreCutToAnExcerpt) {
  // A 10 MB op used to be echoed whole to stderr by the command that loaded the file (1 MB here).
  auto doc = valid_doc();
  doc["op"] = std::string(1000 * 1000, 'x');
  const std::string e = error_of(doc);
  expect_has(e, "op is \"xxxxxxxx");
  expect_has(e, "...");
  EXPECT_LT(e.size(), 300u) << e.substr(0, 400);

  doc = valid_doc();
  doc["records"][0]["status"] = std::string(5000, 's') + "\n";
  const std::string s = error_of(doc);
  EXPECT_LT(s.size(), 400u);
  EXPECT_EQ(s.find('\n'), std::string::npos);
}

TEST(ReplayData, TheWorkloadMustParse) {
  auto doc = valid_doc();
  doc["shape"] = "M=1000,N=-3,K=1000";
  expect_has(error_of(doc), "op, shape and dtype");
  doc = valid_doc();
  doc["dtype"] = "f64";
  expect_has(error_of(doc), "op, shape and dtype");
}

TEST(ReplayData, UnknownKeysDuplicateConfigsAndWrongTypesAreRejected) {
  auto doc = valid_doc();
  doc["records"][0]["time_sm"] = 0.1;
  expect_has(error_of(doc), "records[0].\"time_sm\" is not a known key");
  doc = valid_doc();
  doc["records"][1]["config"] = doc["records"][0]["config"];
  expect_has(error_of(doc), "records[1].config");
  doc = valid_doc();
  doc["records"][0]["config"]["BM"] = "64";
  expect_has(error_of(doc), "records[0].config.\"BM\"");
  doc = valid_doc();
  doc["records"] = nlohmann::json::object();
  expect_has(error_of(doc), "records is {}");
  doc = valid_doc();
  doc["device"]["simulated"] = 1;
  expect_has(error_of(doc), "device.simulated");
  expect_has(error_of_text("[1, 2"), "is not valid JSON");
}

TEST(ReplayData, AMultiByteErrorMessageSurvivesWriteAndRead) {
  // write_replay cuts error messages to 200 bytes; a cut through a UTF-8 sequence made the writer throw.
  auto path = std::filesystem::temp_directory_path() / ("replay_data_test_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  const std::string valid = temp_file(valid_doc().dump());
  ReplayData d = read_replay(valid);
  std::filesystem::remove(valid);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_DOUBLE_EQ(d.find(R"({"BM":64,"BN":64})")->time_ms, 0.12);
  EXPECT_EQ(d.find(R"({"BM":64,"BN":64})")->registers, 64);
  d.records.begin()->second.status = "compile_error";
  d.records.begin()->second.error_message = std::string(199, 'e') + "\xC3\xA9 and more";
  write_replay(d, path.string());
  const ReplayData back = read_replay(path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(back.records.size(), 2u);
  EXPECT_EQ(back.records.begin()->second.error_message, std::string(199, 'e'));
  EXPECT_EQ(back.device.name, d.device.name);
}

TEST(ReplayData, TheCliExitsTwoOnABadFileAndLeavesNoDatabase) {
  // A bad status used to pass the load and fail later at the database's CHECK (exit 1).
  const auto dir = std::filesystem::temp_directory_path() / ("replay_cli_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto doc = valid_doc();
  doc["records"][0]["status"] = "fine";
  const auto file = dir / "bad.json";
  std::ofstream(file) << doc.dump();
  const auto db = dir / "t.db", err = dir / "err.txt";
  const std::string cmd = std::string(TUNER_BIN) + " tune --op gemm --shape M=1000,N=1000,K=1000 --device replay:" +
                          file.string() + " --trials 2 --strategy grid --db " + db.string() + " >/dev/null 2>" +
                          err.string();
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::ifstream e(err);
  std::stringstream buffer;
  buffer << e.rdbuf();
  const std::string text = buffer.str();
  expect_has(text, "records[0].status");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_FALSE(std::filesystem::exists(db)) << "nothing is written for bad input";
  std::filesystem::remove_all(dir);
}

// A knob spelled at its `absent` value (a recording made before the knob had one, or written by hand)
// names the same config as the JSON without it: the loaders re-key the records by the space's own JSON,
// so the sim-vs-real loader and the replay device find every record (the hand-built conv2d_patch_tc
// sample of stop 29 lost its PREFETCH 0 configs to this before).
TEST(ReplayData, AKnobSpelledAtItsAbsentValueFindsItsConfig) {
  const std::string orig = std::string(TUNER_SOURCE_DIR) + "/data/replay/gemm_f16_M4096_N4096_K4096_wgmma_h100_2026-11-25.json";
  std::ifstream in(orig);
  nlohmann::json doc = nlohmann::json::parse(in);
  for (auto& r : doc["records"]) {
    ASSERT_FALSE(r["config"].contains("EPILOGUE"));
    r["config"]["EPILOGUE"] = 0;  // gemm_tc_wgmma's absent values
    r["config"]["CLUSTER"] = 1;
  }
  const std::string path = temp_file(doc.dump());
  const RecordedSpace a = load_recorded_space(orig), b = load_recorded_space(path);
  EXPECT_EQ(b.outside_space, a.outside_space);
  ASSERT_EQ(b.configs.size(), a.configs.size());
  EXPECT_EQ(b.best_ms, a.best_ms);

  ReplayData raw = read_replay(path);
  const DeviceTarget t = resolve_device("replay:" + path);
  ASSERT_TRUE(t.replay);
  const std::string key = nlohmann::json(a.space.to_json(a.configs.front().config)).dump();
  EXPECT_EQ(raw.find(key), nullptr) << "as written, the key spells the absent knobs";
  ASSERT_NE(t.replay->find(key), nullptr);
  EXPECT_EQ(t.replay->find(key)->time_ms, a.configs.front().time_ms);
  EXPECT_EQ(canonicalize_records(raw, a.space), static_cast<int>(raw.records.size()));
  EXPECT_EQ(canonicalize_records(raw, a.space), 0) << "a second pass moves nothing";
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tuner
