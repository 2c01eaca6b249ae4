#include "search/parallel/plan_export.h"

#include "search/parallel/engine_partition.h"
#include "search/parallel/model_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace tuner::parallel {

namespace {

void warn(std::vector<std::string>* w, const std::string& line) {
  if (w) w->push_back(line);
}

/// The engines' GPT and Llama models are causal decoders with attention, then the MLP: a graph whose attention is
/// not causal, or whose MLP runs beside attention, trains otherwise.
void warn_block_recipe(std::vector<std::string>* w, const ModelGraph& model, const std::string& engine) {
  if (model.bidirectional)
    warn(w, "the graph's attention is bidirectional (\"causal\": false); " + engine +
                "'s models mask causally: the model code must change the mask, or it trains a decoder");
  if (model.parallel_block)
    warn(w, "the graph's MLP reads the layer's input beside attention, not attention's result (a parallel block, "
            "as GPT-J's and PaLM's); " + engine + " builds attention, then the MLP: the model code must change, or it "
            "trains a sequential block");
}

/// An engine builds every transformer layer alike: where a JSON graph's differ, or its MLP could not be read, say
/// what it will build instead.
void warn_layers_differ(std::vector<std::string>* w, const ModelGraph& model, const std::string& engine) {
  if (!model.layers_differ.empty())
    warn(w, "the graph's transformer layers differ (" + model.layers_differ + "); " + engine +
                " builds every layer as the first, which the export describes");
  if (model.mlp_unread)
    warn(w, "the MLP width of the graph's transformer layers was not found in its ops (a linear back to the hidden "
            "width from an activation); " + engine + "'s default (4 x hidden, not gated) applies");
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int transformer_blocks(const ModelGraph& m) {
  return m.transformer_layers > 0 ? m.transformer_layers : static_cast<int>(m.layers.size());
}

/// The first layer of each pipeline stage of a (non-interleaved) plan, then the end of the last.
std::vector<int> stage_starts(const Plan& plan) {
  std::vector<int> starts;
  for (const StagePlan& st : plan.stages) starts.push_back(st.first_layer);
  starts.push_back(plan.stages.empty() ? 0 : plan.stages.back().end_layer);
  return starts;
}

/// Transformer blocks each pipeline stage of a (non-interleaved) plan holds.
std::vector<int> blocks_per_stage(const Plan& plan, const ModelGraph& m) {
  return parallel::blocks_per_stage(m, stage_starts(plan));
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

}  // namespace

std::optional<ExportFormat> export_format_from_string(const std::string& s) {
  if (s == "megatron") return ExportFormat::kMegatron;
  if (s == "deepspeed") return ExportFormat::kDeepSpeed;
  if (s == "torchtitan") return ExportFormat::kTorchtitan;
  return std::nullopt;
}

Engine engine_of(ExportFormat f) {
  switch (f) {
    case ExportFormat::kMegatron: return Engine::kMegatron;
    case ExportFormat::kDeepSpeed: return Engine::kDeepSpeed;
    case ExportFormat::kTorchtitan: return Engine::kTorchtitan;
  }
  return Engine::kGeneric;
}

int expert_tensor_parallel_degree(const Plan& plan) {
  int etp = 0;
  for (const auto& st : plan.stages)
    for (const auto& ls : st.sharding)
      for (const auto& op : ls.ops) {
        // Only MoE FFNs have the letter P (a split inside every expert): "P" on a 1 x t mesh, "P,R" / "R,P" / "P,P"
        // on a 2-D one. The other MoE strategies (R, B) keep whole experts on each tensor rank.
        const std::string& s = op.strategy;
        if (s.find('P') == std::string::npos) continue;
        int d = 1;
        if (s.size() == 1 && s[0] == 'P') d = st.mesh.d1;
        if (s.size() == 3) d = (s[0] == 'P' ? st.mesh.d0 : 1) * (s[2] == 'P' ? st.mesh.d1 : 1);
        etp = std::max(etp, d);
      }
  return std::max(etp, 1);
}

std::string nonuniform_stages_warning(const Plan& plan, const std::string& engine) {
  if (plan.uniform_stages) return "";
  const ParallelConfig& c = plan.config;
  std::string differ;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StageShape& sh = plan.stages[s].shape;
    if (sh.tp == c.tp && sh.dp == c.dp) continue;
    differ += (differ.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s) + " tp=" + std::to_string(sh.tp) +
              " dp=" + std::to_string(sh.dp);
  }
  return engine + " runs one tp and dp on every pipeline stage; this plan's stages differ (" + differ +
         "): exported tp=" + std::to_string(c.tp) + " dp=" + std::to_string(c.dp) +
         " on all stages, the nearest uniform plan (plan with --export for its predicted time)";
}

namespace {

/// The output layer: the last head layer's last linear (the LM head); null when the graph has none.
const Operator* output_linear(const ModelGraph& g) {
  for (auto l = g.layers.rbegin(); l != g.layers.rend(); ++l) {
    if (l->kind != LayerKind::kHead) continue;
    for (auto op = l->ops.rbegin(); op != l->ops.rend(); ++op)
      if (op->type == OpType::kLinear) return &*op;
  }
  return nullptr;
}

/// An engine builds its output layer as the vocabulary's projection, without a bias: a graph's output layer of
/// another width, or with a bias, is another model than the one exported.
void output_layer_warnings(const ModelGraph& model, const std::string& engine, std::vector<std::string>* warnings) {
  const Operator* out = output_linear(model);
  if (!out || model.vocab <= 0) return;
  if (out->out_features != model.vocab)
    warn(warnings, "the graph's output layer '" + out->name + "' has " + std::to_string(out->out_features) +
                       " outputs, not the token embedding's " + std::to_string(model.vocab) + " rows: " + engine +
                       " builds its output layer over the vocabulary (" + std::to_string(model.vocab) + " x " +
                       std::to_string(out->in_features) + " weights where the plan costed " +
                       std::to_string(out->out_features) + " x " + std::to_string(out->in_features) + ")");
  if (out->bias)
    warn(warnings, engine + "'s output layer has no bias: the one of '" + out->name + "' (" +
                       std::to_string(out->out_features) + " parameters) is left out");
}

/// Megatron-LM's model arguments (the transformer's shape and recipe).
std::string megatron_model_args(const Plan& plan, const ModelGraph& model, std::vector<std::string>* warnings) {
  std::string out;
  auto arg = [&](const std::string& flag, const std::string& value = "") {
    out += flag + (value.empty() ? "" : " " + value) + "\n";
  };
  // The model.
  if (model.transformer_layers > 0) {
    arg("--num-layers", std::to_string(model.transformer_layers));
    arg("--hidden-size", std::to_string(model.hidden));
    arg("--num-attention-heads", std::to_string(model.heads));
    if (model.kv_heads > 0) {
      arg("--group-query-attention");
      arg("--num-query-groups", std::to_string(model.kv_heads));
    }
    if (model.head_dim > 0) arg("--kv-channels", std::to_string(model.head_dim));
    if (model.ffn > 0) arg("--ffn-hidden-size", std::to_string(model.ffn));
    if (model.swiglu) arg("--swiglu");
    if (model.experts > 0) {
      arg("--num-experts", std::to_string(model.experts));
      arg("--moe-router-topk", std::to_string(model.top_k));
      // Each expert's width where it is not the dense MLP's; which layers are MoE where dense ones mix in (else
      // Megatron-LM makes every layer MoE).
      if (model.moe_ffn > 0 && model.moe_ffn != model.ffn) arg("--moe-ffn-hidden-size", std::to_string(model.moe_ffn));
      if (!model.moe_layer_pattern.empty()) arg("--moe-layer-freq", model.moe_layer_pattern);
    }
    if (!model.rope && !model.position_embedding)
      warn(warnings, "the graph has no position embedding (an embedding besides the token embedding): exported as "
                     "--position-embedding-type none; for rotary positions give the graph \"rope_base\"");
    arg("--position-embedding-type", model.rope ? "rope" : model.position_embedding ? "learned_absolute" : "none");
    // Megatron-LM parses --rotary-base as an int: "%g" wrote 1e+06 for Mixtral's base, which argparse refuses.
    if (model.rope) arg("--rotary-base", std::to_string(std::llround(model.rope_base)));
    if (model.rope && model.rope_base != std::floor(model.rope_base))
      warn(warnings, "Megatron-LM's --rotary-base is an integer: the graph's rope_base " + number(model.rope_base) +
                     " is exported as " + std::to_string(std::llround(model.rope_base)));
    arg("--normalization", model.rmsnorm ? "RMSNorm" : "LayerNorm");
    if (!model.linear_bias) arg("--disable-bias-linear");
    if (model.qkv_bias) arg("--add-qkv-bias");
    if (!model.norms_differ.empty())
      warn(warnings, model.norms_differ + "; Megatron-LM gives every norm one type: exported as LayerNorm");
    if (!model.bias_differs.empty())
      warn(warnings, model.bias_differs + "; Megatron-LM gives every linear a bias or none (or only the QKV "
                     "projection, --add-qkv-bias): exported with biases");
    if (model.qk_norm) arg("--qk-layernorm");
    if (model.untied_embeddings) arg("--untie-embeddings-and-output-weights");
    arg("--attention-dropout", number(model.dropout));
    arg("--hidden-dropout", number(model.dropout));
    arg("--attention-backend", plan.attention == AttentionKernel::kFlash ? "flash" : "unfused");
    output_layer_warnings(model, "Megatron-LM", warnings);
  } else {
    warn(warnings, "Megatron-LM trains transformers; this model's layers are not one, only the parallel arguments apply");
  }
  return out;
}

}  // namespace

std::string export_megatron(const Plan& plan, const ModelGraph& model, int64_t global_batch,
                            std::vector<std::string>* warnings) {
  const ParallelConfig& c = plan.config;
  if (!plan.uniform_stages) warn(warnings, nonuniform_stages_warning(plan, "Megatron-LM"));
  warn_layers_differ(warnings, model, "Megatron-LM");
  warn_block_recipe(warnings, model, "Megatron-LM");
  std::string out;
  auto arg = [&](const std::string& flag, const std::string& value = "") {
    out += flag + (value.empty() ? "" : " " + value) + "\n";
  };
  // Parallelism and batch.
  arg("--tensor-model-parallel-size", std::to_string(c.tp));
  arg("--pipeline-model-parallel-size", std::to_string(c.pp));
  if (c.schedule == Schedule::kInterleaved && c.virtual_stages > 1)
    arg("--num-layers-per-virtual-pipeline-stage", std::to_string(transformer_blocks(model) / (c.pp * c.virtual_stages)));
  // The stage partition: Megatron splits the blocks evenly, except that the first and the last stage may hold
  // their own counts (--decoder-first/last-pipeline-num-layers; the middle stages then split the rest evenly).
  if (c.pp > 1 && c.virtual_stages <= 1 && model.transformer_layers > 0 &&
      static_cast<int>(plan.stages.size()) == c.pp) {
    const std::vector<int> blocks = blocks_per_stage(plan, model);
    const bool even = std::all_of(blocks.begin(), blocks.end(), [&](int b) { return b == blocks[0]; });
    const bool middle_even = std::all_of(blocks.begin() + 1, blocks.end() - 1, [&](int b) { return b == blocks[1]; });
    if (!even && middle_even) {  // with pp 2 there are no middle stages: the first stage's count says it all
      if (blocks.front() != blocks[1]) arg("--decoder-first-pipeline-num-layers", std::to_string(blocks.front()));
      if (blocks.back() != blocks[1]) arg("--decoder-last-pipeline-num-layers", std::to_string(blocks.back()));
    } else if (!even) {
      const bool divides = model.transformer_layers % c.pp == 0;
      warn(warnings, "Megatron-LM gives every pipeline stage but the first and the last the same number of layers; "
                     "this plan's stages hold " + join_ints(blocks) + " blocks: " +
                     (divides ? "Megatron will split them evenly (" + std::to_string(model.transformer_layers / c.pp) +
                                    " per stage), which the plan did not predict"
                              : "Megatron will refuse " + std::to_string(model.transformer_layers) +
                                    " layers over pp=" + std::to_string(c.pp)));
    }
  }
  if (c.schedule == Schedule::kGpipe) warn(warnings, "Megatron-LM runs 1F1B, not GPipe: the schedule is its own");
  if (plan.sequence_parallel) arg("--sequence-parallel");
  arg("--context-parallel-size", std::to_string(c.cp));
  if (model.experts > 0 || c.ep > 1) {
    // Megatron's rule: num_experts % ep == 0 and world % (etp x ep x pp) == 0; the planner keeps ep | dp x cp.
    arg("--expert-model-parallel-size", std::to_string(c.ep));
    arg("--expert-tensor-parallel-size", std::to_string(expert_tensor_parallel_degree(plan)));
    // The cost model runs the experts as one grouped GEMM and dispatches tokens by all-to-all.
    arg("--moe-grouped-gemm");
    arg("--moe-token-dispatcher-type", "alltoall");
    if (c.tp > 1 && !plan.sequence_parallel)
      warn(warnings, "Megatron-LM requires sequence parallelism with MoE and tp > 1; the plan did not use it");
    if (c.ep > 1 && model.dtype == "f16")
      warn(warnings, "Megatron-LM runs expert parallelism in bf16 only; ep=" + std::to_string(c.ep) + " with fp16 fails");
    // megatron.core's GroupedMLP (--moe-grouped-gemm without Transformer Engine) asserts on linear biases.
    if (model.linear_bias && model.transformer_layers > 0)
      warn(warnings, "the graph's experts have linear biases, which --moe-grouped-gemm takes only through Transformer "
                     "Engine (megatron.core's GroupedMLP refuses them): if the model has none, say \"bias\": false on "
                     "its linears");
  }
  arg("--micro-batch-size", std::to_string(c.micro_batch));
  arg("--global-batch-size", std::to_string(global_batch));
  // The cost model overlaps the gradient reduction with backward; ZeRO-1 is the distributed optimizer.
  if (c.zero == 1) {
    arg("--use-distributed-optimizer");
    if (c.dp > 1) arg("--overlap-param-gather");
  }
  if (c.zero >= 2)
    warn(warnings, "Megatron-LM has no ZeRO-" + std::to_string(c.zero) + "; plan with --export megatron for a plan it runs");
  if (c.dp > 1) arg("--overlap-grad-reduce");
  if (c.recompute == Recompute::kSelective) arg("--recompute-granularity", "selective");
  if (c.recompute == Recompute::kFull) {
    arg("--recompute-granularity", "full");
    arg("--recompute-method", "uniform");
    arg("--recompute-num-layers", "1");
  }
  out += megatron_model_args(plan, model, warnings);
  arg("--seq-length", std::to_string(model.seq));
  // The learned position table the graph has (Megatron builds max-position-embeddings rows; at least the sequence).
  arg("--max-position-embeddings", std::to_string(std::max(model.seq, model.position_rows)));
  if (model.dtype == "bf16") arg("--bf16");
  if (model.dtype == "f16") arg("--fp16");
  // Enough to launch as it is (a throughput run on mock data); a real run replaces this block.
  arg("--tokenizer-type", "NullTokenizer");
  // Megatron's GPTModel always has an embedding and an output layer; a graph without them gets a small vocabulary,
  // so what the plan did not cost stays small.
  if (model.vocab <= 0)
    warn(warnings, "Megatron-LM's GPTModel always has an embedding and an output layer, which this graph lacks: the "
                   "export gives them a 128-token vocabulary (2 x 128 x hidden parameters the plan did not cost)");
  // Megatron's NullTokenizer adds an end-of-document id past --vocab-size (its vocab_size is the value + 1): one less
  // builds the model's own vocabulary (Llama 3's 128,256 rows, not 128,257 padded to tp).
  const int64_t vocab = model.vocab > 0 ? model.vocab : 128;
  arg("--vocab-size", std::to_string(vocab - 1));
  arg("--make-vocab-size-divisible-by", "1");
  // Its padding still rounds the rows up to a multiple of tp (the divisor times tp), so each rank's share is whole.
  if (vocab % c.tp != 0)
    warn(warnings, "Megatron-LM pads the vocabulary to a multiple of tp: " + std::to_string(vocab) + " rows become " +
                       std::to_string((vocab + c.tp - 1) / c.tp * c.tp) + " at tp=" + std::to_string(c.tp) +
                       ", weights the plan did not cost");
  arg("--mock-data");
  arg("--train-iters", "100");
  arg("--lr", "1e-4");
  return out;
}

std::string export_deepspeed(const Plan& plan, const ModelGraph& model, int64_t global_batch,
                             std::vector<std::string>* warnings) {
  const ParallelConfig& c = plan.config;
  if (!plan.uniform_stages) warn(warnings, nonuniform_stages_warning(plan, "DeepSpeed"));
  // (No word on layers that differ: a DeepSpeed config describes no model; the user's model code builds its layers.)
  nlohmann::ordered_json j;
  // DeepSpeed's data-parallel size is world / (tp x pp): the product below is what it checks.
  j["train_batch_size"] = static_cast<int64_t>(c.micro_batch) * c.num_micro_batches * c.dp;
  if (j["train_batch_size"].get<int64_t>() != global_batch)
    warn(warnings, "train_batch_size differs from --global-batch " + std::to_string(global_batch));
  if (c.cp > 1)
    warn(warnings, "DeepSpeed has no context parallelism (its Ulysses sequence parallelism is another scheme); cp=" +
                       std::to_string(c.cp) + " is not expressed and its world size is " + std::to_string(c.cp) +
                       "x what this config describes");
  j["train_micro_batch_size_per_gpu"] = c.micro_batch;
  j["gradient_accumulation_steps"] = c.num_micro_batches;
  j["bf16"] = {{"enabled", model.dtype == "bf16"}};
  j["fp16"] = {{"enabled", model.dtype == "f16"}};
  j["zero_optimization"] = {{"stage", c.zero}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  if (c.pp > 1) {
    if (c.zero >= 2) warn(warnings, "DeepSpeed's pipeline engine rejects ZeRO-2/3; plan with --export deepspeed");
    // The method whose split the plan's stages are (a plan made for DeepSpeed is timed on one of them).
    const std::vector<int> starts = stage_starts(plan);
    std::string method = "parameters";
    if (starts == engine_fixed_partition(Engine::kDeepSpeed, model, c.pp, /*uniform=*/true)) method = "uniform";
    else if (starts != engine_fixed_partition(Engine::kDeepSpeed, model, c.pp))
      warn(warnings, "DeepSpeed splits the layers itself (by parameter count), not as this plan's stages; plan with "
                     "--export deepspeed for a plan on DeepSpeed's split");
    j["pipeline"] = {{"stages", c.pp},
                     {"partition", method},
                     {"activation_checkpoint_interval", c.recompute == Recompute::kFull ? 1 : 0}};
    // The config's pipeline section is read for its defaults only: the engine takes the stages, their split and the
    // checkpoint interval from the PipelineModule the model code builds.
    warn(warnings, "DeepSpeed takes the pipeline from the model code, not this config: build the model as "
                   "deepspeed.pipe.PipelineModule(layers, num_stages=" + std::to_string(c.pp) + ", partition_method='" +
                       method + "'" +
                       (c.recompute == Recompute::kFull ? ", activation_checkpoint_interval=1" : "") + ")");
  }
  if (c.schedule != Schedule::k1F1B && c.pp > 1)
    warn(warnings, "DeepSpeed's pipeline engine runs 1F1B only; the plan's " + to_string(c.schedule) +
                       " schedule is not expressed");
  if (c.tp > 1) j["tensor_parallel"] = {{"autotp_size", c.tp}};
  if (model.experts > 0 || c.ep > 1) {
    // DeepSpeed MoE reads its expert-parallel size from the model code, not from this file.
    warn(warnings, "DeepSpeed takes expert parallelism from the model code, not this config: build each MoE layer as "
                   "deepspeed.moe.layer.MoE(..., num_experts=" + std::to_string(model.experts) +
                       ", ep_size=" + std::to_string(c.ep) + ", k=" + std::to_string(model.top_k) +
                       (expert_tensor_parallel_degree(plan) > 1 ? ", enable_expert_tensor_parallelism=True" : "") +
                       ")");
    if (c.zero >= 3) warn(warnings, "DeepSpeed MoE does not run with ZeRO-3; use zero=2 or lower");
  }
  if (c.recompute == Recompute::kFull && c.pp == 1)
    warn(warnings, "DeepSpeed recomputes without a pipeline only where the model code wraps each layer in "
                   "deepspeed.checkpointing.checkpoint (the activation_checkpointing block configures it): the plan's "
                   "full recomputation needs that");
  if (c.recompute == Recompute::kSelective)
    warn(warnings, "DeepSpeed's config recomputes whole layers: this plan's selective recomputation is not expressed "
                   "(activation_checkpoint_interval 0); plan with --export deepspeed");
  if (c.recompute != Recompute::kNone)
    j["activation_checkpointing"] = {{"partition_activations", plan.sequence_parallel},
                                     {"contiguous_memory_optimization", false},
                                     {"number_checkpoints", nullptr}};
  return j.dump(2) + "\n";
}

/// torchtitan's [model] name and flavor for a model. v0.1.0 builds one model in, "llama3" (dense, Llama's
/// architecture: RoPE, RMSNorm, SwiGLU, no biases), with flavors 8B, 70B and 405B; its MoE models are experiments
/// with flavors of their own. A Llama-architecture dense model is a llama3 flavor to add (the warning gives its
/// dimensions); any other (GPT's learned positions, LayerNorm and GeLU MLP; MoE) keeps its own name, which the user
/// registers as a TrainSpec: naming it llama3 would train another architecture of the same size.
std::pair<std::string, std::string> torchtitan_model(const ModelGraph& model, std::vector<std::string>* warnings) {
  // llama3's recipe whole: a Q/K norm, heads wider than dim / n_heads (its head_dim) or a tied output layer would be
  // another architecture under its name.
  const bool llama = model.rope && model.rmsnorm && model.swiglu && !model.linear_bias && !model.qkv_bias &&
                     !model.qk_norm && model.head_dim == 0 && model.untied_embeddings;
  // The presets' flavors: by name (a JSON graph named so is one only with their recipe), or a graph of the recipe
  // with a flavor's every dimension (a JSON graph of Llama 3 8B was exported as a new flavor to add).
  if (llama)
    for (const auto& [preset, flavor] : {std::pair{"llama3-8b", "8B"}, std::pair{"llama3-70b", "70B"},
                                         std::pair{"llama3-405b", "405B"}}) {
      if (model.name == preset) return {"llama3", flavor};
      const ModelGraph p = parse_model_spec(preset);
      if (model.experts == 0 && model.hidden == p.hidden && model.transformer_layers == p.transformer_layers &&
          model.heads == p.heads && model.kv_heads == p.kv_heads && model.ffn == p.ffn && model.vocab == p.vocab &&
          model.rope_base == p.rope_base)
        return {"llama3", flavor};
    }

  if (llama && model.experts == 0) {
    warn(warnings, "torchtitan has no llama3 flavor '" + model.name + "': add one to llama3_configs with dim=" +
                       std::to_string(model.hidden) + ", n_layers=" + std::to_string(transformer_blocks(model)) +
                       ", n_heads=" + std::to_string(model.heads) +
                       ", n_kv_heads=" + std::to_string(model.kv_heads > 0 ? model.kv_heads : model.heads) +
                       ", vocab_size=" + std::to_string(model.vocab) + ", rope_theta=" + number(model.rope_base) +
                       " and an FFN width of " + std::to_string(model.ffn) + " (multiple_of, ffn_dim_multiplier)");
    return {"llama3", model.name};
  }
  warn(warnings, "torchtitan v0.1.0 has no model of this kind (" +
                     std::string(model.experts > 0 ? "mixture of experts; its MoE models are experiments"
                                 : model.transformer_layers > 0
                                     ? std::string(model.rope ? "rotary" : model.position_embedding ? "learned" : "no") +
                                           " positions, " + (model.rmsnorm ? "RMSNorm" : "LayerNorm") + ", " +
                                           (model.swiglu ? "SwiGLU" : "GeLU") + " MLP" +
                                           (model.linear_bias  ? ", biased linears"
                                            : model.qkv_bias ? ", a biased QKV projection"
                                                             : "") +
                                           (model.qk_norm ? ", a Q/K norm" : "") +
                                           (model.head_dim > 0 ? ", heads " + std::to_string(model.head_dim) +
                                                                     " wide (not dim / n_heads)"
                                                               : "") +
                                           (model.untied_embeddings ? "" : ", the output layer tied to the embedding")
                                     : "not a transformer") +
                     "): [model] name is '" + model.name + "', a TrainSpec to register with this flavor; its llama3 "
                     "would train another architecture of this size");
  return {model.name, model.name};
}

std::vector<std::pair<int, int>> interleaved_chunks(const Plan& plan, const ModelGraph& model, int rank) {
  const ParallelConfig& c = plan.config;
  std::vector<std::pair<int, int>> out;
  if (c.schedule != Schedule::kInterleaved || c.pp < 1 || c.virtual_stages < 1) return out;
  const int chunk = transformer_blocks(model) / (c.pp * c.virtual_stages);
  for (int k = rank; k < c.pp * c.virtual_stages; k += c.pp) out.emplace_back(k * chunk, (k + 1) * chunk - 1);
  return out;
}

std::string export_torchtitan(const Plan& plan, const ModelGraph& model, int64_t global_batch,
                              std::vector<std::string>* warnings) {
  const ParallelConfig& c = plan.config;
  if (!plan.uniform_stages) warn(warnings, nonuniform_stages_warning(plan, "torchtitan"));
  warn_layers_differ(warnings, model, "torchtitan");
  warn_block_recipe(warnings, model, "torchtitan");
  if (!model.moe_layer_pattern.empty())
    warn(warnings, "the graph mixes dense and MoE layers (" + model.moe_layer_pattern +
                       "); torchtitan's flavors build every layer alike");
  std::string schedule = "1F1B";
  if (c.schedule == Schedule::kGpipe) schedule = "GPipe";
  if (c.schedule == Schedule::kInterleaved) schedule = "Interleaved1F1B";
  const bool shard = c.zero >= 2;
  if (c.zero == 1) warn(warnings, "torchtitan has no ZeRO-1 (FSDP2 shards gradients too); plan with --export torchtitan");
  const auto [model_name, flavor] = torchtitan_model(model, warnings);
  // (A model of its own kind is the user's TrainSpec, whose output layer is theirs.)
  if (model_name == "llama3") output_layer_warnings(model, "torchtitan's llama3", warnings);
  std::string out;
  out += "# tuner plan: " + describe(c) + " (torchtitan v0.1.0 TOML job config)\n";
  out += "[model]\n";
  out += "name = \"" + model_name + "\"\n";
  out += "flavor = \"" + flavor + "\"\n";
  out += "\n[parallelism]\n";
  out += "data_parallel_replicate_degree = " + std::to_string(shard ? 1 : c.dp) + "\n";
  out += "data_parallel_shard_degree = " + std::to_string(shard ? c.dp : 1) + "\n";
  // ZeRO-2 keeps the gathered weights from forward to backward; ZeRO-3 frees them after each forward. torchtitan's
  // "default" frees them only without pipeline parallelism (reshard_after_forward = not pp_enabled): say which.
  if (c.zero == 2) out += "fsdp_reshard_after_forward = \"never\"\n";
  if (c.zero == 3) out += "fsdp_reshard_after_forward = \"always\"\n";
  out += "tensor_parallel_degree = " + std::to_string(c.tp) + "\n";
  out += "pipeline_parallel_degree = " + std::to_string(c.pp) + "\n";
  if (c.pp > 1) {
    out += "pipeline_parallel_schedule = \"" + schedule + "\"\n";
    out += "pipeline_parallel_microbatch_size = " + std::to_string(c.micro_batch) + "\n";
    // The plan's own stages as split points (each names the first block of a stage; torchtitan infers the
    // stages per rank from their number and the schedule), so torchtitan runs the split that was planned
    // instead of its own rule (an even split, or in later releases one that counts the embedding and the head
    // as a layer each). Interleaved plans hold pp x v equal chunks of blocks.
    std::vector<int> first_blocks;
    if (c.schedule == Schedule::kInterleaved) {
      std::vector<int> starts;  // every chunk's first block, in model order
      for (int r = 0; r < c.pp; ++r)
        for (const auto& [first, last] : interleaved_chunks(plan, model, r)) starts.push_back(first);
      std::sort(starts.begin(), starts.end());
      first_blocks.assign(starts.begin() + 1, starts.end());
    } else {
      // Blocks before each stage (every layer counts as one for a model without transformer blocks). A last stage
      // of the head alone starts at "layers.<blocks>", which names no block: torchtitan's stage builder then keeps
      // no layer there, only the norm and the output.
      int blocks_before = 0, layer = 0;
      for (size_t st = 1; st < plan.stages.size(); ++st) {
        for (; layer < plan.stages[st].first_layer; ++layer)
          blocks_before += model.transformer_layers == 0 || model.layers[layer].kind == LayerKind::kTransformer ? 1 : 0;
        first_blocks.push_back(blocks_before);
      }
    }
    std::string points;
    for (int b : first_blocks) points += (points.empty() ? "" : ", ") + std::string("\"layers.") + std::to_string(b) + "\"";
    out += "pipeline_parallel_split_points = [" + points + "]\n";
  }
  out += "context_parallel_degree = " + std::to_string(c.cp) + "\n";
  if (c.ep > 1) {
    // torchtitan borrows its experts' ranks from FSDP ("dp2ep"): cp <= ep <= data_parallel_shard_degree x cp, with
    // the experts tensor-split as the dense layers are.
    out += "expert_parallel_degree = " + std::to_string(c.ep) + "\n";
    const int shard_cp = (shard ? c.dp : 1) * c.cp;
    if (c.ep > shard_cp || c.ep < c.cp)
      warn(warnings, "torchtitan takes ep from the sharded data-parallel ranks (cp <= ep <= dp_shard x cp = " +
                         std::to_string(shard_cp) + "); ep=" + std::to_string(c.ep) + " is outside that: " +
                         (c.ep < c.cp ? "plan with ep >= cp=" + std::to_string(c.cp)
                          : shard ? "plan with ep <= " + std::to_string(shard_cp)
                                  : std::string("plan with zero=2 or 3")));
    if (expert_tensor_parallel_degree(plan) != c.tp)
      warn(warnings, "torchtitan splits experts over the tensor-parallel ranks (etp = tp = " + std::to_string(c.tp) +
                         "); the plan keeps whole experts per tensor rank");
  } else if (model.experts > 0 && c.tp > 1 && expert_tensor_parallel_degree(plan) != c.tp) {
    warn(warnings, "torchtitan splits experts over the tensor-parallel ranks; the plan keeps whole experts per rank");
  }
  out += "\n[training]\n";
  // With a pipeline the local batch is split into micro-batches; without, it is one micro-batch and the rest of the
  // global batch comes from gradient accumulation (global = local x dp x steps).
  const int64_t local = c.pp > 1 ? static_cast<int64_t>(c.micro_batch) * c.num_micro_batches : c.micro_batch;
  out += "local_batch_size = " + std::to_string(local) + "\n";
  out += "global_batch_size = " + std::to_string(global_batch) + "\n";
  out += "seq_len = " + std::to_string(model.seq) + "\n";
  out += "mixed_precision_param = \"" + std::string(model.dtype == "f32" ? "float32" : "bfloat16") + "\"\n";
  if (model.dtype == "f16")
    warn(warnings, "torchtitan's mixed_precision_param takes bfloat16 or float32, not float16: the f16 model trains in "
                   "bfloat16");
  out += "mixed_precision_reduce = \"float32\"\n";
  out += "\n[activation_checkpoint]\n";
  out += "mode = \"" + to_string(c.recompute) + "\"\n";
  if (c.recompute == Recompute::kSelective) {
    out += "selective_ac_option = \"op\"\n";
    // Its op-level policy saves chosen ops' outputs (matmuls, attention) and recomputes the rest: not the
    // Megatron-style selective recomputation (the attention core again) the plan priced.
    warn(warnings, "torchtitan's selective checkpointing (\"op\") chooses by operator what it keeps, not the "
                   "attention core the plan recomputes: its memory and time differ from the plan's");
  }
  return out;
}

std::string export_plan(ExportFormat f, const Plan& plan, const ModelGraph& model, int64_t global_batch,
                        std::vector<std::string>* warnings) {
  switch (f) {
    case ExportFormat::kMegatron: return export_megatron(plan, model, global_batch, warnings);
    case ExportFormat::kDeepSpeed: return export_deepspeed(plan, model, global_batch, warnings);
    case ExportFormat::kTorchtitan: return export_torchtitan(plan, model, global_batch, warnings);
  }
  return "";
}

}  // namespace tuner::parallel
