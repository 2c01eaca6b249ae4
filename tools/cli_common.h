// What the subcommands of the `tuner` program share: the usage error that
// becomes exit code 2, option helpers, JSON for records, plain tables, and the
// record filter that `query` and `export` both take (--op/--shape/--dtype/
// --device/--template), with --device resolved against the devices a database
// has recorded. It does not open databases for writing or run tuning.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/tuning_db.h"

namespace tuner::cli {

/// Bad input at the command line: printed as one line on stderr, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// $TUNER_DB or ./tuning.db.
std::string default_db_path();

/// Writes an output file whole or not at all (tuner/atomic_file.h): a file that cannot be opened is the user's bad
/// input (UsageError "cannot write WHAT 'PATH': why"), a failed write (a full disk) exit 1, naming that the file is
/// as it was.
void write_output_file(const std::string& what, const std::string& path, const std::string& text);

/// Whether two paths name one file, under any name (a link, `sub/../`), also when one does not exist yet.
bool same_file(const std::string& a, const std::string& b);

/// Refuses (UsageError, exit 2) an output file that is the database at db_path or one of its -wal, -shm or
/// -journal files, under any name (a link, a relative path): writing it would destroy every record.
void refuse_output_over_db(const std::string& flag, const std::string& out, const std::string& db_path);

/// A tuned record as JSON: op, shape, dtype, device, config, status, time_ms, gflops, gbps (memory-bound
/// ops; 0 otherwise) and the rest. `measurements` and `mean_time_ms` describe a config's pooled measurements, which
/// only a best query computes: a trial listed on its own (`aggregate` false, as in `query --history`) leaves them out.
nlohmann::ordered_json record_json(const db::ResultRow& row, bool aggregate = true);

/// Bytes a record's kernel must move at the least, for GB/s: the count stored with the trial (its template's; a
/// user kernel's spec "bytes"), else, for records stored before schema version 6, read once and written once by
/// the shape (softmax, layernorm). GEMM and conv records are judged by GFLOP/s: 0, as for anything unknown.
double bytes_moved(const db::ResultRow& r);
/// bytes_moved / the trial's time in GB/s (1e9 bytes per second); 0 when either is 0 or the trial is not ok.
double gbps(const db::ResultRow& r);

/// The filter options `query` and `export` share, as given on the command line.
struct RecordFilterOptions {
  std::string op;             ///< --op: only this operator (empty: any).
  std::string shape;          ///< --shape: only this shape (needs op).
  std::string dtype;          ///< --dtype: f32, f16, bf16 (empty: any).
  std::string device;         ///< --device: cuda:N, sim:<gpu>, replay:FILE or a recorded device name.
  std::string template_name;  ///< --template: one kernel template (empty: any).
  bool all_versions = false;  ///< --all-versions: also records of older template versions.
  int limit = 0;              ///< --limit: at most this many rows (0: all).
};

/// A filter ready to run: the store's filter, and, when --device named recorded devices by name, the exact
/// names to run it for (the store matches one name per query; the rows are combined).
struct RecordFilter {
  db::QueryFilter filter;
  std::vector<std::string> device_names;  ///< Empty: filter as it is (no name, or a sim/cuda match).
  bool single_device = false;             ///< --device was given (one best record per workload makes sense).
  /// When --device is a valid device that no session in the database ran on (matched by its kind, not by
  /// a recorded name): one line naming the recorded devices, for a query that finds nothing.
  std::string unrecorded_note;
  /// When --template names a built-in template that does not implement --op: one line saying so, for a query that
  /// finds nothing.
  std::string template_note;
};

/// For a record query that found nothing: the filter's notes (an unrecorded device, a template of another op) on
/// stderr, one line each.
void say_why_nothing_matched(const RecordFilter& rf);

/// For a record query that found nothing: a line saying that records of older template versions match (the
/// kernels changed since they were measured) and that --all-versions shows them; empty when none do.
/// `ok_only`: count ok records only (a best query shows nothing else, so failed older trials would not show either).
std::string older_versions_note(const db::TuningDb& db, const RecordFilter& f, bool ok_only);

/// Device names recorded in a database (those of its sessions; every trial belongs to one), sorted.
std::vector<std::string> recorded_device_names(const db::TuningDb& db);

/// The versions records are shown for without --all-versions: each built-in template's current one, and
/// for a template this build does not know (a user kernel, registered only while it is tuned) the newest
/// version recorded in the database.
std::vector<db::TemplateVersion> current_template_versions(const db::TuningDb& db);

/// Validates the options and builds the filter. --device is matched, in order: a name recorded in the
/// database exactly ("NVIDIA H100 80GB HBM3", "replay:NVIDIA H100 80GB HBM3", "sim:h100-sxm"); a bare GPU
/// name also matches the records replayed from recordings of that GPU ("replay:" + name); then sim:<gpu>,
/// replay:FILE (the recording's device) and cuda:N (compute capability and SM count of that GPU). A cuda:N
/// without a GPU, or a name nothing recorded, is a UsageError that lists the recorded names.
RecordFilter build_record_filter(const RecordFilterOptions& o, const db::TuningDb& db);
/// Compares two strings with their runs of digits as numbers ("M=512,.." before "M=2048,.."): -1, 0 or 1.
int natural_compare(std::string_view a, std::string_view b);

/// Runs f as history() (oldest first) or best_per_workload(), once per device name when it has several.
std::vector<db::ResultRow> run_history(const db::TuningDb& db, const RecordFilter& f);
std::vector<db::ResultRow> run_best_per_workload(const db::TuningDb& db, const RecordFilter& f);
/// The single best record (best()) over every device name of f.
std::optional<db::ResultRow> run_best(const db::TuningDb& db, const RecordFilter& f);

/// Opens an existing database read-only for a reading command; a missing or unusable file is a UsageError.
std::unique_ptr<db::TuningDb> open_for_reading(const std::string& path);

/// Prints rows as a left-aligned text table with a header.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// "%.*f" without the iostream dance.
std::string fixed(double v, int digits);
/// A number as the user would write it: "1", "-1", "0.5", "1e+30" (%g), for messages about a given value.
std::string as_given(double v);

int devices_command(const std::vector<std::string>& args);
int tune_command(const std::vector<std::string>& args);
int query_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
int db_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);
int import_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int version_command(const std::vector<std::string>& args);

}  // namespace tuner::cli
