// A plan written in the formats training engines read, each checked against
// the arguments/keys of a named engine version (tests/parallel/plan_export_test.cpp
// holds those lists):
//   Megatron-LM   command-line arguments, one per line (megatron/training/arguments.py, core_r0.12 era):
//                 parallel degrees, batch, recomputation, distributed optimizer and overlap flags, the
//                 model's architecture (sizes, positions, norm, biases, tying, dropout, attention backend)
//                 and a mock-data tokenizer block so the file launches a throughput run as it is.
//   DeepSpeed     a config JSON (deepspeed/runtime/config.py and zero/config.py, v0.16): batch, ZeRO,
//                 pipeline, AutoTP, activation checkpointing; no keys of ours.
//   torchtitan    a TOML job config (torchtitan v0.1.0, the last releases that read TOML through
//                 --job.config_file; later ones take Python configs): [model], [training],
//                 [parallelism], [activation_checkpoint].
// What an engine cannot express is left out of the text and named in the warnings.
// Nothing here plans or validates a plan; plan with PlannerOptions::engine set to
// the engine so the plan only uses what it runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/parallel/planner.h"

namespace tuner::parallel {

enum class ExportFormat { kMegatron, kDeepSpeed, kTorchtitan };
std::optional<ExportFormat> export_format_from_string(const std::string& s);
/// The engine whose memory and ZeRO stages the planner must use for this export.
Engine engine_of(ExportFormat f);

/// Each writes the export; `warnings` (when given) receives one line per choice the engine cannot express.
std::string export_megatron(const Plan& plan, const ModelGraph& model, int64_t global_batch,
                            std::vector<std::string>* warnings = nullptr);
std::string export_deepspeed(const Plan& plan, const ModelGraph& model, int64_t global_batch,
                             std::vector<std::string>* warnings = nullptr);
std::string export_torchtitan(const Plan& plan, const ModelGraph& model, int64_t global_batch,
                              std::vector<std::string>* warnings = nullptr);
std::string export_plan(ExportFormat f, const Plan& plan, const ModelGraph& model, int64_t global_batch,
                        std::vector<std::string>* warnings = nullptr);

/// The transformer blocks (every layer for a model without blocks) pipeline rank `rank` holds in an interleaved
/// plan, as the engines lay them out: pp x v equal chunks, rank s holding chunks s, s + pp, s + 2pp, ... Each is
/// [first, last] block index, in order. Empty when the plan is not interleaved.
std::vector<std::pair<int, int>> interleaved_chunks(const Plan& plan, const ModelGraph& model, int rank);

/// Megatron-LM, DeepSpeed and torchtitan run one tp and dp on every pipeline stage. For a plan whose stages
/// differ (Plan::uniform_stages false) each export writes the configuration's reference tp and dp (the nearest
/// uniform plan: plan it with PlannerOptions::per_stage_submeshes = false for its predicted time) and warns,
/// naming the stages whose shape it drops.
std::string nonuniform_stages_warning(const Plan& plan, const std::string& engine);

/// Expert tensor-parallel degree of the plan (Megatron's --expert-tensor-parallel-size): the tensor-mesh
/// dimensions its MoE layers split every expert over (strategy P); 1 when experts stay whole on each tensor rank.
/// The expert-parallel degree itself is plan.config.ep.
int expert_tensor_parallel_degree(const Plan& plan);

}  // namespace tuner::parallel
