#include "search/parallel/plan_export.h"

#include <nlohmann/json.hpp>

namespace tuner::parallel {

std::optional<ExportFormat> export_format_from_string(const std::string& s) {
  if (s == "megatron") return ExportFormat::kMegatron;
  if (s == "deepspeed") return ExportFormat::kDeepSpeed;
  if (s == "torchtitan") return ExportFormat::kTorchtitan;
  return std::nullopt;
}

std::string export_megatron(const Plan& plan, const ModelGraph& model, int64_t global_batch) {
  const ParallelConfig& c = plan.config;
  std::string out;
  auto arg = [&](const std::string& flag, const std::string& value = "") {
    out += flag + (value.empty() ? "" : " " + value) + "\n";
  };
  arg("--tensor-model-parallel-size", std::to_string(c.tp));
  arg("--pipeline-model-parallel-size", std::to_string(c.pp));
  if (c.schedule == Schedule::kInterleaved && c.virtual_stages > 1) {
    const int blocks = model.transformer_layers > 0 ? model.transformer_layers : static_cast<int>(model.layers.size());
    arg("--num-layers-per-virtual-pipeline-stage", std::to_string(blocks / (c.pp * c.virtual_stages)));
  }
  if (plan.sequence_parallel) arg("--sequence-parallel");
  arg("--micro-batch-size", std::to_string(c.micro_batch));
  arg("--global-batch-size", std::to_string(global_batch));
  if (c.zero >= 1) arg("--use-distributed-optimizer");
  if (c.recompute == Recompute::kSelective) arg("--recompute-granularity", "selective");
  if (c.recompute == Recompute::kFull) {
    arg("--recompute-granularity", "full");
    arg("--recompute-method", "uniform");
    arg("--recompute-num-layers", "1");
  }
  if (model.transformer_layers > 0) {
    arg("--num-layers", std::to_string(model.transformer_layers));
    arg("--hidden-size", std::to_string(model.hidden));
    arg("--num-attention-heads", std::to_string(model.heads));
    if (model.kv_heads > 0) {
      arg("--group-query-attention");
      arg("--num-query-groups", std::to_string(model.kv_heads));
    }
    if (model.ffn > 0) arg("--ffn-hidden-size", std::to_string(model.ffn));
    if (model.swiglu) arg("--swiglu");
    if (model.experts > 0) {
      arg("--num-experts", std::to_string(model.experts));
      arg("--moe-router-topk", std::to_string(model.top_k));
    }
  }
  arg("--seq-length", std::to_string(model.seq));
  if (model.dtype == "bf16") arg("--bf16");
  if (model.dtype == "f16") arg("--fp16");
  return out;
}

std::string export_deepspeed(const Plan& plan, const ModelGraph& model, int64_t global_batch) {
  const ParallelConfig& c = plan.config;
  nlohmann::ordered_json j;
  j["train_batch_size"] = global_batch;  // = micro x accumulation x data-parallel
  j["train_micro_batch_size_per_gpu"] = c.micro_batch;
  j["gradient_accumulation_steps"] = c.num_micro_batches;
  j["bf16"] = {{"enabled", model.dtype == "bf16"}};
  j["fp16"] = {{"enabled", model.dtype == "f16"}};
  j["zero_optimization"] = {{"stage", c.zero}};
  j["pipeline"] = {{"stages", c.pp},
                   {"partition_method", plan.partition == "uniform" ? "uniform" : "parameters"},
                   {"activation_checkpoint_interval", c.recompute == Recompute::kFull ? 1 : 0}};
  j["tensor_parallel"] = {{"autotp_size", c.tp}};
  if (c.recompute != Recompute::kNone)
    j["activation_checkpointing"] = {{"partition_activations", plan.sequence_parallel},
                                     {"contiguous_memory_optimization", false},
                                     {"number_checkpoints", nullptr}};
  j["tuner_plan"] = {{"tp", c.tp},
                     {"pp", c.pp},
                     {"dp", c.dp},
                     {"schedule", to_string(c.schedule)},
                     {"virtual_stages", c.virtual_stages},
                     {"recompute", to_string(c.recompute)},
                     {"iteration_time_s", plan.iteration_time_s}};
  return j.dump(2) + "\n";
}

std::string export_torchtitan(const Plan& plan, const ModelGraph& model, int64_t global_batch) {
  const ParallelConfig& c = plan.config;
  std::string schedule = "1F1B";
  if (c.schedule == Schedule::kGpipe) schedule = "GPipe";
  if (c.schedule == Schedule::kInterleaved) schedule = "Interleaved1F1B";
  const bool shard = c.zero >= 1;
  std::string out;
  out += "# tuner plan: " + describe(c) + "\n";
  out += "[parallelism]\n";
  out += "data_parallel_replicate_degree = " + std::to_string(shard ? 1 : c.dp) + "\n";
  out += "data_parallel_shard_degree = " + std::to_string(shard ? c.dp : 1) + "\n";
  out += "tensor_parallel_degree = " + std::to_string(c.tp) + "\n";
  out += "pipeline_parallel_degree = " + std::to_string(c.pp) + "\n";
  out += "pipeline_parallel_schedule = \"" + schedule + "\"\n";
  out += "pipeline_parallel_microbatch_size = " + std::to_string(c.micro_batch) + "\n";
  out += "context_parallel_degree = 1\n";
  out += "\n[training]\n";
  out += "local_batch_size = " + std::to_string(static_cast<int64_t>(c.micro_batch) * c.num_micro_batches) + "\n";
  out += "global_batch_size = " + std::to_string(global_batch) + "\n";
  out += "seq_len = " + std::to_string(model.seq) + "\n";
  out += "mixed_precision_param = \"" + std::string(model.dtype == "f32" ? "float32" : "bfloat16") + "\"\n";
  out += "\n[activation_checkpoint]\n";
  out += "mode = \"" + to_string(c.recompute) + "\"\n";
  if (c.recompute == Recompute::kSelective) out += "selective_ac_option = \"op\"\n";
  return out;
}

std::string export_plan(ExportFormat f, const Plan& plan, const ModelGraph& model, int64_t global_batch) {
  switch (f) {
    case ExportFormat::kMegatron: return export_megatron(plan, model, global_batch);
    case ExportFormat::kDeepSpeed: return export_deepspeed(plan, model, global_batch);
    case ExportFormat::kTorchtitan: return export_torchtitan(plan, model, global_batch);
  }
  return "";
}

}  // namespace tuner::parallel
