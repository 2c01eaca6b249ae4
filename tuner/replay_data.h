// Replay data: a recorded measurement of a whole config space (or of the
// part that was measured), so search strategies can be compared offline on
// the device `replay:<path>`, in the spirit of Kernel Tuner's simulation mode.
//
// `tuner tune --strategy grid --trials all` writes such a file from the
// database; a replay device answers each measurement from it without
// compiling or running anything. The file is JSON:
//
//   {"format": "tuner-replay/1", "device": {identity of the recording GPU}, "gpu": "<spec-table key>",
//    "op": "gemm", "shape": "M=..,N=..,K=..", "dtype": "f32", "template": "gemm_f32_simt",
//    "template_version": "<hash>", "space_size": 33294,
//    "records": [{"config": {knob: value}, "status": "ok", "time_ms": 0.12, ...}, ...]}
//
// This file knows the format, not the tuning loop or the database's queries.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/tuning_db.h"
#include "search/config_space.h"

namespace tuner {

/// One recorded config.
struct ReplayRecord {
  std::string status = "ok";   ///< As TrialRecord::status.
  std::string error_message;
  double time_ms = 0;          ///< Mean of the config's ok measurements.
  double time_spread_ms = 0;
  int repeats = 0;
  int registers = 0, shared_bytes = 0, spill_bytes = 0;
  bool estimate = false;       ///< The recording came from a sim device.
};

struct ReplayData {
  std::string path;            ///< Where it was read from.
  db::DeviceIdentity device;   ///< The GPU it was recorded on.
  std::string gpu_key;         ///< Its spec-table key (limits of the space).
  std::string op, shape, dtype;
  std::string template_name, template_version;
  int64_t space_size = 0;      ///< Valid configs of the recorded space.
  std::map<std::string, ReplayRecord> records;  ///< Keyed by the config's stable JSON.

  /// The record of a config (its stable JSON), if it was recorded.
  const ReplayRecord* find(const std::string& config_json) const;
};

/// Reads a replay file; throws std::invalid_argument with one line naming the file, the first bad
/// field's path (`records[12].time_ms`), a short excerpt of its value and what is allowed. Every
/// field is checked: status one of the trial error kinds, integers in range, times finite (an ok
/// record's at least 1e-6 ms), spreads and sizes not negative, strings short and one line, op,
/// shape and dtype a workload, no unknown keys, one record per config.
ReplayData read_replay(const std::string& path);

/// Re-keys the records by the JSON `space` writes for their configs: a knob at its `absent` value is left
/// out (a file written before the knob had one, or by hand, may spell it). Records that are no config of
/// the space keep their keys; a record whose key another already has is dropped. Returns how many moved.
int canonicalize_records(ReplayData& d, const search::ConfigSpace& space);

/// read_replay on text already read; `path` names it in messages.
ReplayData parse_replay(std::string_view text, const std::string& path);

/// At most 60 characters of a value for a message (cut on a UTF-8 boundary), "..." when cut.
std::string replay_excerpt(std::string_view text);

/// Builds replay data from database rows of one workload, device and template version (several
/// measurements of a config are averaged over the ok ones).
ReplayData replay_from_rows(const std::vector<db::ResultRow>& rows, const db::DeviceIdentity& device,
                            const std::string& gpu_key, int64_t space_size);

/// Writes replay data atomically (temporary file, then rename); throws std::runtime_error on failure.
void write_replay(const ReplayData& data, const std::string& path);

}  // namespace tuner
