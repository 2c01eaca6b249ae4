// The tuning database: every device, workload, template version, session and
// trial that tuner has seen, stored in SQLite (WAL mode).
//
// This header is the only view the rest of the project has of the store; it
// speaks in plain records (strings and numbers) and knows nothing of search,
// templates or CUDA. The schema is versioned (table schema_version) and
// migrated forward on open; a batch of trials is committed in one transaction,
// so a process killed at any moment leaves a consistent database.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tuner::db {

/// Any failure of the store (open, schema, statement); the message names the file and SQLite's reason.
class DbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A GPU's identity. Real GPUs are matched on compute capability + SM count (+ name), sim ones on name.
struct DeviceIdentity {
  std::string name;            ///< "NVIDIA H100 80GB HBM3" or "sim:h100-sxm".
  bool simulated = false;      ///< True for sim: devices (their times are estimates).
  int cc_major = 0;            ///< Compute capability, e.g. 9.
  int cc_minor = 0;            ///< e.g. 0.
  int sm_count = 0;            ///< Streaming multiprocessors.
  int64_t memory_bytes = 0;    ///< Global memory size in bytes.
  std::string driver_version;  ///< e.g. "13.0"; "none" for sim devices.
  std::string nvrtc_version;   ///< e.g. "13.0".
};

/// An operator instance: op name, canonical shape string ("M=1000,N=1000,K=1000") and dtype ("f32").
struct WorkloadKey {
  std::string op;
  std::string shape;
  std::string dtype;
};

/// A kernel template at one version of its source.
struct TemplateVersion {
  std::string name;  ///< e.g. "gemm_f32_simt".
  std::string hash;  ///< Hash of the template's source text; changes whenever the template does.
};

/// One measured (or failed) config.
struct TrialRecord {
  int64_t id = 0;                 ///< Assigned by the store.
  int64_t session_id = 0;         ///< Assigned by add_trials.
  std::string config_json;        ///< Stable JSON of knob -> value (ConfigSpace::to_json_string).
  std::string status = "ok";      ///< ok, invalid_config, compile_error, compile_timeout, launch_error,
                                  ///< runtime_fault, run_timeout, wrong_answer, unknown.
  std::string error_message;      ///< Empty when ok.
  double compile_ms = 0;          ///< NVRTC time in ms (0 when served from the compile cache).
  int registers = 0;              ///< Registers per thread, from the cubin.
  int shared_bytes = 0;           ///< Shared memory per block in bytes (static + dynamic).
  int spill_bytes = 0;            ///< Local memory per thread in bytes (spills/stack), from the cubin.
  double time_ms = 0;             ///< Median kernel time in ms (0 unless ok).
  double time_spread_ms = 0;      ///< Spread of the timed runs in ms (max - min around the median's sample).
  int repeats = 0;                ///< Timed runs behind the median.
  double gflops = 0;              ///< FLOPs / median time, in GFLOP/s (0 unless ok).
  bool estimate = false;          ///< True when the time came from a sim device's analytic model.
  std::string purpose = "search"; ///< "search", or "remeasure" for a finalist measured again at the end.
  std::string started_at;         ///< ISO-8601 UTC; filled by the store when empty.
  std::string finished_at;        ///< ISO-8601 UTC; filled by the store when empty.
};

/// Which rows a query selects; an empty field matches everything.
struct QueryFilter {
  std::string op;
  std::string shape;
  std::string dtype;
  std::string device_name;                 ///< Exact device name (sim devices: "sim:h100-sxm").
  std::optional<int> cc_major, cc_minor;   ///< Match real GPUs on compute capability...
  std::optional<int> sm_count;             ///< ...and SM count.
  std::optional<bool> simulated;           ///< Only sim devices (true) or only real GPUs (false).
  std::vector<std::string> template_hashes;  ///< Only these template versions (current ones); empty: any.
  std::string template_name;               ///< Only this template (any version the hashes allow); empty: any.
  std::optional<int64_t> session_id;
  bool ok_only = false;                    ///< Only status == "ok".
  int limit = 0;                           ///< 0: no limit.
};

/// A trial joined with what it was measured for, as queries return it.
struct ResultRow {
  TrialRecord trial;
  WorkloadKey workload;
  std::string device_name;
  bool device_simulated = false;
  int device_cc_major = 0, device_cc_minor = 0, device_sm_count = 0;
  std::string template_name;
  std::string template_hash;
  int measurements = 1;        ///< ok measurements of this config (best queries; > 1 after re-measuring).
  double mean_time_ms = 0;     ///< Their mean in ms (best queries rank configs by it).
};

/// A trained cost model as stored, so a later session starts from it.
struct CostModelRecord {
  int64_t id = 0;
  std::string kind;            ///< "xgb-rank".
  std::string op;              ///< The op it was trained for.
  std::string template_name;
  std::string feature_names;   ///< JSON array of the feature columns the model reads, in order.
  int64_t rows = 0;            ///< Training rows.
  int64_t session_id = 0;      ///< The session that trained it (0: none).
  std::string model;           ///< The model's bytes (opaque to the store).
  std::string created_at;      ///< Filled by the store.
};

/// A parallel plan as logged by `tuner plan`.
struct PlanRecord {
  int64_t id = 0;
  std::string model;           ///< Model spec as given (preset, family form or file name).
  std::string cluster;         ///< Cluster spec as given.
  std::string options_json;    ///< The planner's options (global batch, pins, ...).
  std::string plan_json;       ///< The whole plan with its predictions.
  int tp = 1, pp = 1, dp = 1;
  double iteration_time_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  int64_t peak_memory_bytes = 0;
  double planning_s = 0;       ///< Wall time the planner took.
  std::string created_at;      ///< Filled by the store.
};

/// A tuning session as stored.
struct SessionRow {
  int64_t id = 0;
  std::string strategy;
  uint64_t seed = 0;
  int64_t budget = 0;
  std::string status;  ///< "running", "finished", "interrupted".
  std::string started_at;
  std::string finished_at;
  int64_t trials = 0;
  WorkloadKey workload;
  std::string device_name;
};

class TuningDb {
 public:
  /// Current schema version written by this build.
  static constexpr int kSchemaVersion = 3;

  /// Opens (creating if absent) the database at path (":memory:" allowed); migrates older schemas.
  /// Throws DbError with one clear line when the path is unreadable or not a tuner database.
  explicit TuningDb(const std::string& path);
  /// Opens an existing database read-only; throws DbError if it does not exist.
  static TuningDb open_existing(const std::string& path);
  ~TuningDb();
  TuningDb(TuningDb&&) noexcept;
  TuningDb& operator=(TuningDb&&) noexcept;

  int schema_version() const;

  /// Returns the id of the matching row, inserting it first if absent.
  int64_t upsert_device(const DeviceIdentity& d);
  int64_t upsert_workload(const WorkloadKey& w);
  int64_t upsert_template(const TemplateVersion& t);

  /// Starts a session (status "running"); returns its id.
  int64_t begin_session(int64_t device_id, int64_t workload_id, int64_t template_id,
                        const std::string& strategy, uint64_t seed, int64_t budget,
                        const std::string& command_line);
  /// Marks a session "finished" or "interrupted" with its end time.
  void end_session(int64_t session_id, const std::string& status);

  /// Appends a batch of trials to a session in one transaction (all or nothing); fills ids.
  void add_trials(int64_t session_id, std::vector<TrialRecord>& trials);

  /// config_json of every trial (any status) for this device, workload and template version.
  std::vector<std::string> measured_configs(int64_t device_id, int64_t workload_id, int64_t template_id) const;
  /// Number of trials (any status) for this device, workload and template version.
  int64_t count_trials(int64_t device_id, int64_t workload_id, int64_t template_id) const;

  /// Best ok config matching the filter: configs ranked by the mean time of their ok measurements
  /// (a re-measured finalist counts all of its measurements); the row is its latest measurement.
  std::optional<ResultRow> best(const QueryFilter& f) const;
  /// Trials matching the filter in insertion order.
  std::vector<ResultRow> history(const QueryFilter& f) const;
  /// Best ok config per (workload, device, template) matching the filter, ranked as best() ranks.
  std::vector<ResultRow> best_per_workload(const QueryFilter& f) const;
  /// Sessions, newest first.
  std::vector<SessionRow> sessions(const QueryFilter& f) const;

  /// Stores a trained cost model; returns its id.
  int64_t add_cost_model(CostModelRecord& m);
  /// The newest cost model of this kind for this op and template, if any.
  std::optional<CostModelRecord> latest_cost_model(const std::string& kind, const std::string& op,
                                                   const std::string& template_name) const;

  /// Logs a plan; returns its id.
  int64_t add_plan(PlanRecord& p);
  /// Logged plans, newest first (limit 0: all).
  std::vector<PlanRecord> plans(int limit = 0) const;

  /// Result of SQLite's PRAGMA integrity_check: "ok", or its findings one per line.
  std::string integrity_check() const;

 private:
  struct Impl;
  explicit TuningDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner::db
