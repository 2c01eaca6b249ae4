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
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tuner::db {

/// Any failure of the store (open, schema, statement); the message names the file and SQLite's reason.
/// The kind tells a caller what it can do: wait and retry (busy), refuse the file as bad input
/// (corrupt, read-only, not a tuner database, newer schema), or give up on a fault of the run (full, other).
class DbError : public std::runtime_error {
 public:
  enum class Kind {
    kOther,     ///< Any other failure.
    kBusy,      ///< Another connection holds the lock (SQLITE_BUSY / SQLITE_LOCKED) beyond the waits.
    kCorrupt,   ///< The file is damaged (SQLITE_CORRUPT) or not an SQLite/tuner database.
    kReadOnly,  ///< The file or its directory cannot be written, or was opened read-only.
    kFull,      ///< The disk or a quota is full (SQLITE_FULL, I/O errors while writing).
    kNewer,     ///< The schema is newer than this tuner.
    kBadPath,   ///< The path names no usable file (empty, a directory).
  };
  explicit DbError(const std::string& what, Kind kind = Kind::kOther) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }
  /// True for problems with the file given (exit 2 at the command line), not with the run.
  bool bad_input() const {
    return kind_ == Kind::kCorrupt || kind_ == Kind::kReadOnly || kind_ == Kind::kNewer || kind_ == Kind::kBadPath;
  }

 private:
  Kind kind_;
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

/// Every status a trial may have (the trials table's CHECK constraint holds the same list).
inline constexpr const char* kTrialStatuses[] = {"ok",           "invalid_config", "compile_error",
                                                 "compile_timeout", "launch_error",  "runtime_fault",
                                                 "run_timeout",  "wrong_answer",   "unknown"};
/// Whether s is one of kTrialStatuses. (Inline: replay files are read by code that does not link the store.)
inline bool is_trial_status(const std::string& s) {
  for (const char* t : kTrialStatuses)
    if (s == t) return true;
  return false;
}
/// kTrialStatuses, comma separated (for "allowed:" in messages).
inline std::string trial_statuses() {
  std::string out;
  for (const char* t : kTrialStatuses) out += (out.empty() ? "" : ", ") + std::string(t);
  return out;
}

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
  /// Compulsory DRAM bytes of the kernel instance as its template counts them (any status; 0: unknown, as in
  /// records stored before schema version 6).
  double bytes = 0;
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
  std::optional<bool> estimate;            ///< Only analytic estimates (true) or only measurements (false).
  std::vector<std::string> template_hashes;  ///< Only these template versions (current ones); empty: any.
  std::string template_name;               ///< Only this template (any version the hashes allow); empty: any.
  std::optional<int64_t> session_id;
  int64_t exclude_session_id = 0;          ///< Not the trials of this session (0: none excluded).
  int64_t after_trial_id = 0;              ///< Only trials with a larger id (what others added since).
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
  std::string driver_version;  ///< Of the device record the trial ran under ("" on sim devices).
  std::string nvrtc_version;   ///< The NVRTC that compiled it.
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
  int cp = 1;                  ///< Context-parallel degree (schema 5; older plans: from their plan JSON, else 1).
  int ep = 1;                  ///< Expert-parallel degree (schema 5; older plans: 1).
  double iteration_time_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  int64_t peak_memory_bytes = 0;
  double planning_s = 0;       ///< Wall time the planner took.
  std::string created_at;      ///< Filled by the store.
  bool already_logged = false; ///< Set by add_plan: an identical plan was logged before (id and created_at are its).
};

/// A tuning session as stored.
struct SessionRow {
  int64_t id = 0;
  std::string strategy;
  uint64_t seed = 0;
  int64_t budget = 0;
  std::string status;  ///< "running", "finished", "interrupted", "failed" or "killed".
  std::string reason;  ///< Why it ended: the budget, the space exhausted, an early stop, a signal, a failure.
  std::string started_at;
  std::string finished_at;
  int64_t trials = 0;         ///< Every trial it stored (search trials and re-measurements).
  int64_t search_trials = 0;  ///< Of them, the search's (what the budget counts).
  WorkloadKey workload;
  std::string device_name;
  std::string template_name;  ///< The template it tuned, and its version.
  std::string template_hash;
  int64_t pid = 0;     ///< The process that ran it, and its host.
  std::string host;
};

/// What claim_configs() granted: which of the offered configs this session may measure now.
struct ClaimResult {
  std::vector<bool> claimed;   ///< Per offered config: claimed (true), or measured or claimed by another (false).
  int64_t budget_left = 0;     ///< Budget minus stored search trials minus live claims, after this claim.
};

/// What merge_from() brought in, per (workload, device, template version).
struct MergeGroup {
  WorkloadKey workload;
  std::string device_name;
  DeviceIdentity device;   ///< The whole identity (one GPU name may come with several drivers or NVRTCs).
  std::string template_name, template_hash;
  int64_t added = 0;       ///< Trials added (search and re-measurements).
  int64_t duplicates = 0;  ///< Trials left out: their config was already here for the same target.
};

/// Now as ISO-8601 UTC with milliseconds, as trials and sessions store times: 2026-11-22T14:37:25.123Z.
std::string now_iso8601();

struct MergeReport {
  std::vector<MergeGroup> groups;
  int64_t trials_added = 0, duplicates = 0, sessions_added = 0, plans_added = 0;
};

class TuningDb {
 public:
  /// Current schema version written by this build.
  static constexpr int kSchemaVersion = 6;

  /// Opens (creating if absent) the database at path (":memory:" allowed); migrates older schemas.
  /// Throws DbError with one clear line when the path is unreadable or not a tuner database.
  explicit TuningDb(const std::string& path);
  /// Opens an existing database read-only; throws DbError if it does not exist. A file of an older schema version
  /// is read through an in-memory copy migrated to this one (the file is not changed).
  static TuningDb open_existing(const std::string& path);
  ~TuningDb();
  TuningDb(TuningDb&&) noexcept;
  TuningDb& operator=(TuningDb&&) noexcept;

  int schema_version() const;

  /// Every op with a workload in the database, sorted (built-in ops and user kernels' ops).
  std::vector<std::string> recorded_ops() const;

  /// The whole identity of the device each trial was measured on (name, kind, cc, SMs, memory, driver and NVRTC
  /// versions), by trial id: what an export carries so that an import rebuilds the record exactly.
  std::map<int64_t, DeviceIdentity> trial_devices() const;

  /// Returns the id of the matching row, inserting it first if absent.
  int64_t upsert_device(const DeviceIdentity& d);
  int64_t upsert_workload(const WorkloadKey& w);
  int64_t upsert_template(const TemplateVersion& t);

  /// Starts a session (status "running") owned by the calling process (pid, host and start time are
  /// stored); returns its id. Sessions of dead processes of this host are reaped first.
  int64_t begin_session(int64_t device_id, int64_t workload_id, int64_t template_id,
                        const std::string& strategy, uint64_t seed, int64_t budget,
                        const std::string& command_line);
  /// Ends a session as "finished", "interrupted" or "failed" (with its reason) and releases its claims.
  void end_session(int64_t session_id, const std::string& status, const std::string& reason = "");
  /// Marks "running" sessions whose process has died (this host only) as "killed" and releases their
  /// claims. Returns how many it marked.
  int reap_dead_sessions();

  /// Claims, in one short write transaction, the configs (config_json) this session will measure next,
  /// for the session's device, workload and template. The budget is the database's: stored search trials
  /// plus every live claim count against it, so processes sharing a database share it. A config already
  /// measured or claimed by another session is refused; claims stop when the budget is used up. A claim
  /// ends when its trial is stored (add_trials) or its session ends or is reaped.
  ClaimResult claim_configs(int64_t session_id, const std::vector<std::string>& configs, int64_t budget);
  /// Claims a second measurement of a measured config (a finalist re-measured at the end of a session): true
  /// when this session may take it, false when the config already has two or more ok measurements or another
  /// session holds its re-measure claim. Processes finishing together then split the finalists instead of
  /// re-measuring the same ones. The claim ends with the session; it is not counted in the budget.
  bool claim_remeasure(int64_t session_id, const std::string& config_json);
  /// The budget minus the stored search trials and the live claims of the session's device, workload and
  /// template: how many configs may still be claimed.
  int64_t budget_left(int64_t session_id, int64_t budget) const;
  /// The live search claims other sessions hold on this session's device, workload and template (configs they are
  /// measuring now, counted in the budget), and those sessions' processes as (host, pid), ascending.
  int64_t claims_of_others(int64_t session_id,
                           std::vector<std::pair<std::string, int64_t>>* processes = nullptr) const;

  /// Appends a batch of trials to a session in one transaction (all or nothing); fills ids; releases the
  /// session's claims of the stored configs.
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
  /// Each template name's newest version, by name: the version of its latest session (a user kernel's text tuned
  /// last), else the last one recorded.
  std::vector<TemplateVersion> latest_template_versions() const;
  /// The shapes recorded for this op, newest first (none: the op is not recorded; ops of user kernels are known
  /// only to their records, whose shapes name their sizes).
  std::vector<std::string> shapes_of_op(const std::string& op) const;

  /// Stores a trained cost model; returns its id.
  int64_t add_cost_model(CostModelRecord& m);
  /// The newest cost model of this kind for this op and template, if any.
  std::optional<CostModelRecord> latest_cost_model(const std::string& kind, const std::string& op,
                                                   const std::string& template_name) const;

  /// Logs a plan; returns its id. A plan identical to one already logged (same model, cluster, options,
  /// degrees and predictions; the planner's own wall time aside) is not logged again: its id is returned
  /// and p.already_logged set.
  int64_t add_plan(PlanRecord& p);
  /// Logged plans, newest first (limit 0: all).
  std::vector<PlanRecord> plans(int limit = 0) const;

  /// Brings in the records of the database at other_path (this schema version or an older one; it is only read): devices,
  /// workloads and template versions as needed, the trials of every config this database does not have
  /// for the same device identity, workload and template version (all measurements of such a config,
  /// under copies of their sessions), and plans not logged here yet. One transaction: all or nothing.
  /// Merging the same file twice adds nothing. Cost models are not merged (the next xgb session refits).
  MergeReport merge_from(const std::string& other_path);

  /// Result of SQLite's PRAGMA integrity_check: "ok", or its findings one per line.
  std::string integrity_check() const;

  /// How long a write waits for a database another process holds locked: each attempt waits SQLite's
  /// busy timeout (5 s), then the write is retried with growing pauses until this many seconds have
  /// passed (default 60); then DbError of kind kBusy.
  void set_write_patience(double seconds);

 private:
  struct Impl;
  explicit TuningDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner::db
