// A plan written in the formats training engines read: Megatron-LM command-line
// arguments (one per line), a DeepSpeed config JSON, and a torchtitan TOML
// fragment. Each carries the plan's degrees, micro-batching, schedule,
// recomputation and ZeRO choices; model hyperparameters are included where the
// format has a place for them. Nothing here plans or validates a plan.
#pragma once

#include <optional>
#include <string>

#include "search/parallel/planner.h"

namespace tuner::parallel {

enum class ExportFormat { kMegatron, kDeepSpeed, kTorchtitan };
std::optional<ExportFormat> export_format_from_string(const std::string& s);

std::string export_megatron(const Plan& plan, const ModelGraph& model, int64_t global_batch);
std::string export_deepspeed(const Plan& plan, const ModelGraph& model, int64_t global_batch);
std::string export_torchtitan(const Plan& plan, const ModelGraph& model, int64_t global_batch);
std::string export_plan(ExportFormat f, const Plan& plan, const ModelGraph& model, int64_t global_batch);

}  // namespace tuner::parallel
