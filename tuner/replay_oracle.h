// A replay recording joined with the config space it was recorded from, so
// that benchmarks and tests can hold the sim device's analytic model against
// real measurements and search strategies can run against real times.
//
// Each ok record becomes a config of the template's space with its measured
// time, the KernelProfile the template gives it and the resources the
// recording stores (registers, shared memory, spills: what the sim reads from
// a cubin). Knows the replay format through replay_data.h; runs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/analytic_model.h"
#include "costmodel/gpu_spec.h"
#include "search/config_space.h"
#include "templates/kernel_template.h"
#include "tuner/replay_data.h"

namespace tuner {

struct RecordedConfig {
  search::Config config;
  uint64_t index = 0;                   ///< Its index in the space.
  double time_ms = 0;                   ///< The recorded (real) time.
  costmodel::KernelProfile profile;     ///< The template's profile of the config.
  costmodel::KernelResources resources; ///< Registers, static shared memory and local bytes as recorded.
};

struct RecordedSpace {
  ReplayData data;
  templates::Workload workload;
  const templates::KernelTemplate* tmpl = nullptr;
  costmodel::GpuSpec gpu;               ///< The recording GPU's spec-table entry (what its sim device reads).
  search::ConfigSpace space;            ///< The template's space on that GPU today, restricted to the recorded configs.
  std::vector<RecordedConfig> configs;  ///< The ok records that are configs of the space, in index order.
  size_t not_ok = 0;                    ///< Records with another status (failed on the GPU).
  size_t outside_space = 0;             ///< Records the space no longer holds (the template changed).
  double best_ms = 0;                   ///< The fastest recorded time.
  bool version_matches = true;          ///< The recording's template version is today's.

  /// "softmax rows=4096,cols=4096 f16 on h100-sxm (softmax_rows)".
  std::string label() const;
  /// The recorded time of every config of the space (0: not recorded or not ok), by space index.
  std::vector<double> time_by_index() const;
};

/// The resources a replay record stores (registers, static + dynamic shared memory, local bytes) as the
/// analytic model reads them: static shared memory without the profile's dynamic part.
costmodel::KernelResources record_resources(const ReplayRecord& r, const costmodel::KernelProfile& p);

/// The space restricted to the configs the recording holds (any status): what a replay oracle can answer.
/// A template that gained knob values since the recording keeps only the recorded configs.
search::ConfigSpace recorded_space(const search::ConfigSpace& space, const ReplayData& data);

/// Reads a replay file and joins it with its template's space (restricted to the recorded configs); throws std::invalid_argument naming the
/// file and what is wrong (unreadable, unknown GPU, template or workload, no ok record in the space).
RecordedSpace load_recorded_space(const std::string& path);

/// The replay files (*.json) in a folder, sorted by name; empty when the folder does not exist.
std::vector<std::string> replay_files(const std::string& dir);

/// The sim device's estimate of every recorded config, in `configs` order (infinity: not launchable).
std::vector<double> sim_estimates(const RecordedSpace& s);

/// How well a model's estimates rank the recorded configs.
struct RankAgreement {
  size_t configs = 0;
  double spearman = 0;        ///< Rank correlation of estimates and real times.
  double pick_over_best = 0;  ///< Real time of the config the model ranks first / the real best.
  size_t top10_overlap = 0;   ///< Configs in both the model's and the real top 10.
};

/// Agreement of estimates (by `configs` order) with the recorded times, over the configs whose index
/// into `configs` is in `subset` (all of them when `subset` is empty).
RankAgreement rank_agreement(const RecordedSpace& s, const std::vector<double>& estimates,
                             const std::vector<size_t>& subset = {});

}  // namespace tuner
