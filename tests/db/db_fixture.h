// What the store's tests share: a scratch directory, file bytes, sample devices, workloads and trials, and
// a database with one device, workload, template and a running session.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "db/tuning_db.h"

namespace tuner::db::test {

namespace fs = std::filesystem;

/// A fresh directory under the test temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::path(testing::TempDir()) / "tuning_db_test_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    if (!made) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

/// One A100 session with one ok trial of gemm_f32_simt ({"BM":16}: 0.25 ms, compiled in 50 ms, 40 registers) as
/// SQL every schema version accepts: the records of a file an older tuner wrote (create_schema_at_version first).
inline constexpr const char* kOneOldTrialSql = R"sql(
    INSERT INTO devices (id, name, simulated, cc_major, cc_minor, sm_count, memory_bytes, driver_version, nvrtc_version)
      VALUES (1, 'NVIDIA A100-SXM4-40GB', 0, 8, 0, 108, 42000000000, '12.4', '12.4');
    INSERT INTO workloads (id, op, shape, dtype) VALUES (1, 'gemm', 'M=64,N=64,K=64', 'f32');
    INSERT INTO templates (id, name, hash) VALUES (1, 'gemm_f32_simt', 'abc');
    INSERT INTO sessions (id, device_id, workload_id, template_id, strategy, seed, budget, command_line, status,
                          started_at, finished_at)
      VALUES (1, 1, 1, 1, 'random', 3, 10, 'tuner tune', 'finished', '2025-01-01T00:00:00.000Z',
              '2025-01-01T00:01:00.000Z');
    INSERT INTO trials (session_id, device_id, workload_id, template_id, config_json, status, compile_ms, registers,
                        time_ms, gflops, started_at, finished_at)
      VALUES (1, 1, 1, 1, '{"BM":16}', 'ok', 50.0, 40, 0.25, 2.1, '2025-01-01T00:00:10.000Z',
              '2025-01-01T00:00:11.000Z');
  )sql";

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

/// True for "2026-11-22T14:37:25.123Z": digits where the pattern has 9.
inline bool is_iso8601_ms(const std::string& s) {
  const std::string pattern = "9999-99-99T99:99:99.999Z";
  if (s.size() != pattern.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (pattern[i] == '9' ? !std::isdigit(static_cast<unsigned char>(s[i])) : s[i] != pattern[i]) return false;
  }
  return true;
}

inline DeviceIdentity h100() {
  return {"NVIDIA H100 80GB HBM3", false, 9, 0, 132, 85'000'000'000, "13.0", "13.0"};
}

inline DeviceIdentity sim_h100() { return {"sim:h100-sxm", true, 9, 0, 132, 80'000'000'000, "none", "13.0"}; }

inline WorkloadKey gemm() { return {"gemm", "M=1000,N=1000,K=1000", "f32"}; }

inline TrialRecord ok_trial(const std::string& config, double time_ms) {
  TrialRecord t;
  t.config_json = config;
  t.status = "ok";
  t.time_ms = time_ms;
  t.gflops = 2.0 / time_ms;
  t.repeats = 10;
  return t;
}

inline TrialRecord failed_trial(const std::string& config, const std::string& status) {
  TrialRecord t;
  t.config_json = config;
  t.status = status;
  t.error_message = "boom";
  return t;
}

/// A database with one device, workload and template, and a running session.
struct Fixture {
  explicit Fixture(const std::string& path = ":memory:", const std::string& template_hash = "h1")
      : db(path),
        device(db.upsert_device(h100())),
        workload(db.upsert_workload(gemm())),
        tmpl(db.upsert_template({"gemm_f32_simt", template_hash})),
        session(db.begin_session(device, workload, tmpl, "random", 42, 100, "tuner tune gemm")) {}
  TuningDb db;
  int64_t device, workload, tmpl, session;
};

}  // namespace tuner::db::test
