// A plan as one JSON document: degrees, micro-batching, schedule, recomputation,
// ZeRO stage, predictions (iteration time, tokens/s, TFLOP/s per GPU, MFU,
// peak memory with its breakdown, time with its breakdown per stage), where the
// compute costs came from, and every
// stage with its layer range, mesh and per-operator sharding. This is what
// `tuner plan --json` prints and what the database stores; the export formats
// for training engines live in plan_export.h.
#pragma once

#include <nlohmann/json.hpp>

#include "search/parallel/planner.h"

namespace tuner::parallel {

/// A stage's time terms with their sum (total_s, the iteration time).
nlohmann::ordered_json time_json(const TimeBreakdown& t);

nlohmann::ordered_json plan_to_json(const Plan& plan, const ModelGraph& model, const ClusterSpec& cluster,
                                    int64_t global_batch);

}  // namespace tuner::parallel
