// The tuning loop: one session of `tuner tune` from a workload, a device and
// a budget to trials in the database, as named stages (tuning_session.cpp
// runs them; each lives in a tuner/session_*.h file of its own):
//
//   resume -> transfer -> { propose -> compile -> measure -> commit } per batch -> finish
//
// propose claims the strategy's configs in the database, compile queues them
// on the NVRTC pool (ahead of measurement, through the on-disk cache), measure
// checks and times each in a worker process, commit stores the batch in one
// transaction and lets the strategy observe() the results.
//
// `trials` is the budget for (workload, device, template version) in that
// database: a rerun continues to the budget and never re-measures a config the
// database already has. Processes that share a database share the budget: each
// claims its configs in the database before compiling them, so none measures
// a config another has measured or is measuring, and each learns what the
// others measured. SIGINT/SIGTERM end the session after the current config,
// with what was measured committed; a session that fails is marked failed with
// its reason.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"
#include "templates/kernel_template.h"
#include "tuner/device_registry.h"
#include "tuner/measure_protocol.h"
#include "tuner/template_version.h"
#include "tuner/worker.h"

namespace tuner {

/// Progress after each trial, for terminals.
struct TuneProgress {
  int64_t done = 0;            ///< Trials in the database for this workload/device/template.
  int64_t budget = 0;          ///< The --trials budget.
  int64_t measured_now = 0;    ///< Trials of this session.
  int64_t errors_now = 0;      ///< Failed trials of this session.
  double best_ms = 0;          ///< Best ok time so far (0: none yet).
  double best_gflops = 0;
  /// Bytes a memory-bound op (softmax, layernorm) must move at the least: the progress line shows GB/s for them
  /// (0: judged by GFLOP/s).
  double bytes = 0;
  double elapsed_s = 0;
  double eta_s = 0;            ///< Estimated seconds left.
  bool estimate = false;       ///< Times are sim estimates.
  /// What the strategy expects its latest batch to add to the best (0.05: 5% faster); negative when it
  /// has no estimate (search::SearchStrategy::expected_improvement, what --min-improvement compares).
  double expected_improvement = -1;
  std::string label;           ///< --template auto: the template in work (done and budget are the run's).
};

struct TuneOptions {
  templates::Workload workload;
  std::string template_name;       ///< Empty: the op's default template for the device (templates/registry.h).
  /// Knobs pinned to one value each (`tune --fix`): the session searches only the configs with them.
  std::vector<std::pair<std::string, int64_t>> fixed_knobs;
  int64_t trials = 200;            ///< Budget of trials for this workload on this device (all sessions).
  std::string strategy = "random";
  /// xgb: what ranks the first batch before anything is measured. "compiled": the analytic model ranks the
  /// space, the best AnnealingParams::prior_refine configs are compiled (through the session's pool and
  /// cache; a replay device gives the recording's resources) and re-ranked with their real registers and
  /// spills; "analytic": registers estimated, nothing compiled; "none": a random first batch; "auto"
  /// (the default): compiled on cuda and replay devices, none on sim devices, whose measurements are the
  /// analytic model's estimates (the prior would be the answer, and the search would go untested).
  std::string prior = "auto";
  uint64_t seed = 1;               ///< Seeds the strategy (and the inputs' RNG).
  size_t batch_size = 64;          ///< Configs proposed, compiled and committed together (the xgb plan size).
  unsigned compile_threads = 0;    ///< NVRTC threads; 0: one per core.
  double run_timeout_s = 10;       ///< Seconds a measurement may take beyond its timing budget.
  bool transfer = true;            ///< xgb: also train on this template's records of other shapes and GPUs.
  int64_t early_stop = 0;          ///< Stop after this many trials of the session without a better time (0: off).
  /// Stop when the strategy expects less than this relative speed-up from its next batch (0.01: 1%;
  /// 0: off). Only a strategy that estimates it (bo) can trigger it.
  double min_expected_improvement = 0;
  int remeasure_top = 5;           ///< Measure the best K configs once more at the end (0: off).
  MeasureSettings settings;
  /// Injected faults by valid-config index of the space (tests of the isolation path).
  std::vector<std::pair<uint64_t, InjectedFault>> faults;
  std::string worker_executable;   ///< Empty: default_worker_executable().
  std::string cache_dir;           ///< Empty: CompileCache::default_dir().
  std::string command_line;        ///< Stored with the session.
  double db_patience_s = 60;       ///< How long a write waits for a database another process holds locked.
  /// Devices measured on in parallel, one worker process each, all of the target's identity (cuda:all,
  /// cuda:0,2,5, or --workers N copies of a sim device); empty: the target device alone. With several,
  /// the worker phases of the summary add up over the workers.
  std::vector<std::string> measure_devices;
  /// More lanes measured on besides the local ones (MPI ranks, tuner/mpi_lanes.h); the loop uses them
  /// from its lane threads and leaves a lost one.
  std::vector<std::shared_ptr<Measurer>> remote_lanes;
  double sim_delay_ms = 0;         ///< sim:/replay: devices: wait this long per measurement, as a GPU would take
                                   ///< (to exercise concurrency and the loop's throughput without a GPU).
  std::function<void(const TuneProgress&)> on_progress;
};

/// Where a session's wall time went, in seconds (the phases of `tune --json`). Loop phases add up to
/// about the session's wall time; compile_cpu_s is the pool's compile time, which overlaps the rest.
struct TunePhases {
  double setup_s = 0;         ///< Strategy, history and transfer records, fitting on them, opening the session.
  double search_s = 0;        ///< Proposing batches, instantiating configs and refitting the model.
  double compile_wait_s = 0;  ///< Waiting for NVRTC results the measurement needed.
  MeasurePhases worker;       ///< The worker's own phases (module load, inputs, reference, checked run, timed runs).
  double worker_other_s = 0;  ///< Round trips beyond the worker's phases: requests, worker starts, timeouts.
  double commit_s = 0;        ///< Database writes (one transaction per batch) and the model's save.
  double sim_delay_s = 0;     ///< --sim-delay-ms waits of sim:/replay: devices (a GPU's time stood in for).
  double compile_cpu_s = 0;   ///< Sum of compile times on the pool's threads (overlapping; not in the sum).
  double loop_total() const {
    return setup_s + search_s + compile_wait_s + worker.total() + worker_other_s + commit_s + sim_delay_s;
  }
  TunePhases& operator+=(const TunePhases& o) {
    setup_s += o.setup_s;
    search_s += o.search_s;
    compile_wait_s += o.compile_wait_s;
    worker += o.worker;
    worker_other_s += o.worker_other_s;
    commit_s += o.commit_s;
    sim_delay_s += o.sim_delay_s;
    compile_cpu_s += o.compile_cpu_s;
    return *this;
  }
};

/// The phases as `tune --json` and pipeline_bench write them (seconds, one key per phase).
nlohmann::ordered_json to_json(const TunePhases& p);

struct TuneSummary {
  int64_t session_id = 0;
  int64_t space_size = 0;          ///< Valid configs in the space.
  int64_t previously_measured = 0; ///< Trials already in the database when the session began.
  int64_t measured_now = 0;
  int64_t errors_now = 0;
  int64_t compiled_from_cache = 0;
  int64_t prior_compiles = 0;      ///< Configs compiled (or read from the cache) to rank the first batch.
  double prior_compile_s = 0;      ///< Seconds the first proposal waited for them (part of phases.search_s).
  int64_t transferred = 0;         ///< Records of other workloads/GPUs the model started from.
  int64_t remeasured = 0;          ///< Finalists measured again at the end.
  int64_t started_from_model = 0;  ///< Id of the saved cost model the search started from (0: none).
  int64_t saved_model = 0;         ///< Id of the cost model this session saved (0: none).
  int worker_starts = 0;
  struct Lane {
    std::string device;       ///< The device spec its requests name.
    std::string where;        ///< "local", or the MPI rank and host.
    int64_t measured = 0;     ///< Configs it measured in this session.
    bool lost = false;        ///< Stopped answering; its config in flight went to another lane.
  };
  std::vector<Lane> lanes;
  double wall_s = 0;
  TunePhases phases;
  int64_t measured_by_others = 0;  ///< Search trials other processes sharing the database stored meanwhile.
  bool interrupted = false;
  int stop_signal = 0;             ///< SIGINT or SIGTERM when interrupted by one (the CLI exits 128 + it).
  bool early_stopped = false;      ///< Ended by --early-stop or --min-improvement before the budget.
  /// The strategy's last estimate of what its next batch would add (0.05: 5% faster); negative when it made
  /// none (SearchStrategy::expected_improvement).
  double expected_improvement = -1;
  /// Why the session ended: "budget of N trials reached", "space exhausted", "early stop: ...",
  /// "expected improvement ...", "stopped by signal ..." (also the session's reason in the database).
  std::string stop_reason;
  std::string template_name;
  /// The version the session's records are stored under: the template's today, or on a replay device the
  /// version the recording measured (its times are that kernel's, not today's).
  std::string template_hash;
  /// Today's version when template_hash is a replayed recording's older one; empty otherwise.
  std::string current_template_hash;
  std::optional<db::ResultRow> best;  ///< Best ok record for this workload/device/template.
};

/// Source of a kernel that faults ("crash") or spins forever ("hang") under a given name: what a
/// real GPU runs in place of a config with an injected fault.
std::string fault_kernel_source(const std::string& kernel_name, InjectedFault fault);

/// The worker request that checks and times one compiled instance on a device (`cubin` empty for
/// vendor baselines; resources as read from the cubin feed the sim model).
MeasureRequest measure_request(const std::string& device, const templates::KernelInstance& k, const std::string& cubin,
                               const costmodel::KernelResources& resources, const std::string& reference_cubin);

/// Runs one tuning session. Throws only for programmer errors and database failures.
TuneSummary run_tuning(const TuneOptions& options, const DeviceTarget& device, db::TuningDb& db);

}  // namespace tuner
