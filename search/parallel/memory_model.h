// Memory per device of a pipeline stage: weights, gradients and optimizer
// states of mixed-precision Adam (2 + 2 + 12 bytes per parameter, or what the
// engine the plan is exported to keeps: Megatron-LM's fp32 main gradients,
// torchtitan's fp32 FSDP shards) sharded by ZeRO stage over the data-parallel
// group, and activations per micro-batch kept in flight by the schedule.
//
// Transformer-layer activations follow the published formulas (Korthikanti et
// al., in bytes, s sequence, b micro-batch, h hidden, a heads, t tensor-parallel):
//   no parallelism            s b h (34 + 5 a s / h)
//   tensor parallel           s b h (10 + 24/t + 5 a s / (h t))
//   + sequence parallel       s b h / t (34 + 5 a s / h)
//   selective recomputation   drops the 5 a s / h attention term
//   flash attention           stores no s x s scores, softmax or dropout mask: the 5 a s / h term becomes
//                             4 a / h (the fp32 log-sum-exp of each head and token), so it needs no selective
//                             recomputation to stay linear in s
//   full recomputation        2 s b h (/ t with sequence parallelism): the layer input only,
//                             plus one layer's full activations while it is recomputed.
// Other layers count their op outputs. This file is arithmetic; it does not
// decide what fits (planner.h compares against the device's memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tuner::parallel {

enum class Recompute { kNone, kSelective, kFull };
enum class Schedule { kGpipe, k1F1B, kInterleaved };

std::string to_string(Recompute r);
std::string to_string(Schedule s);

/// The widths a transformer layer's activations follow, beyond its hidden size: the query and key/value widths of
/// its attention (grouped-query attention stores narrower K and V), its MLP's width and gating, and the experts each
/// token visits. 0: the GPT form (q = kv = hidden, ffn = 4 x hidden, not gated, dense).
struct BlockWidths {
  double q = 0, kv = 0, ffn = 0;
  bool gated = false;
  int top_k = 0;  ///< 0: a dense MLP; else the experts each token is sent to (its copies are stored per expert).
};

/// Activation bytes of one transformer layer for one micro-batch on one device; `flash`: its attention core is a
/// fused (flash) kernel, which keeps no s x s matrices. Korthikanti et al.'s sbh(34 + 5as/h) for the GPT form,
/// split as they do (10 sbh outside the tensor-parallel split without sequence parallelism, 24 sbh inside), with
/// the 24 generalised to the block's widths: 4q + 4kv for attention (Q, K, V, the projection's input) and, per
/// expert a token visits, 4 ffn (the activation's input, the down projection's input) or 6 ffn gated (the gate and
/// up outputs and their product); an MoE layer also keeps each token's dispatched copy (2 h per expert), whole on
/// every tensor-parallel rank (the experts read the group's tokens gathered).
double transformer_activation_bytes(double s, double b, double h, double a, int t, bool sequence_parallel,
                                    Recompute r, bool flash, const BlockWidths& w = {});

/// Micro-batches whose activations a stage holds at its peak: GPipe m; 1F1B min(p - stage, m);
/// interleaved 1F1B min(p - stage, m) x (1 + (p - 1) / (p v)) (Narayanan et al.).
double in_flight_micro_batches(Schedule s, int p, int stage, int m, int v);

struct MemoryBreakdown {
  double weights = 0;      ///< bf16 weights (bytes).
  double gradients = 0;    ///< bf16 gradients.
  double optimizer = 0;    ///< fp32 master weights, momentum, variance.
  double activations = 0;  ///< Activations kept for backward.
  double total() const { return weights + gradients + optimizer + activations; }
};

/// The training engine a plan is exported to: it decides which ZeRO stages exist and how many bytes each
/// parameter's states take, so that the planner's memory matches the engine's.
enum class Engine {
  kGeneric,     ///< No engine: bf16 weights and gradients, fp32 Adam (2 + 2 + 12), ZeRO 0-3.
  kMegatron,    ///< Megatron-LM: fp32 main gradients (2 + 4 + 12; distributed optimizer 6 + 12/d), ZeRO 0-1.
  kDeepSpeed,   ///< DeepSpeed: 2 + 2 + 12, ZeRO 0-3, but ZeRO >= 2 not with its pipeline engine.
  kTorchtitan,  ///< torchtitan FSDP2: fp32 sharded parameters and gradients (4 + 4 + 8), ZeRO 0, 2 or 3.
};
std::string to_string(Engine e);

/// Bytes per parameter of the engine's weights, gradients and optimizer states, and per gradient element reduced.
struct StateBytes {
  double weights = 2;
  double gradients = 2;
  double optimizer = 12;
  double gradient_reduce = 2;  ///< Bytes per gradient element in the data-parallel reduction.
  /// Where the weights above are a sharded master (FSDP2's fp32 parameters): the bytes per parameter of the whole
  /// compute copy ZeRO-2 keeps gathered from forward to backward (reshard_after_forward "never": bf16); 0 where
  /// ZeRO-2 keeps the weights above whole instead.
  double zero2_gathered = 0;
  /// FSDP2 under a pipeline schedule (torchtitan, pp > 1; PyTorch's pipelining keeps gradient sync and resharding
  /// after backward off through the micro-batches, reducing after the last): bytes per parameter of the gradients accumulated whole
  /// in the reduce dtype across the micro-batches (FSDPParam's unsharded_accumulated_grad); the gathered weights then
  /// stay whole for the step at ZeRO-3 too. 0 elsewhere.
  double accumulated_gradients = 0;
};
/// The bytes of `e`'s states for a model trained in `dtype` ("bf16", "f16" or "f32"): an f32 model trains in fp32
/// throughout (4 + 4 + 8: no master copy; Megatron-LM's table: 16, 8 + 8/d distributed); Megatron-LM's --fp16 keeps
/// fp16 gradients and an fp32 copy of them in the optimizer (2 + 2 + 16; 4 + 16/d distributed); torchtitan has no
/// fp16 mixed precision (its export trains an f16 model in bf16).
StateBytes state_bytes(Engine e, const std::string& dtype = "bf16");
/// The ZeRO stages the engine can run ("0, 1" for Megatron-LM).
std::vector<int> engine_zero_stages(Engine e);
/// Pipeline schedules the engine runs when pp > 1 (Megatron-LM: 1F1B and interleaved; DeepSpeed's pipeline engine:
/// 1F1B; torchtitan and no engine: all three).
std::vector<Schedule> engine_schedules(Engine e);
/// Whether the engine runs context parallelism (DeepSpeed does not: its Ulysses sequence parallelism is another scheme).
bool engine_runs_context_parallel(Engine e);
/// Chunks a context-parallel rank holds of each sequence: 2 where the engine balances the causal mask by giving each
/// rank a chunk from each end (Megatron-LM; torchtitan through PyTorch's round-robin sharding, which asserts the
/// sequence divides by 2 x cp), else 1. The sequence must divide by cp times this.
int engine_cp_chunks(Engine e);

/// Weights, gradients and optimizer states of `params` local parameters under ZeRO `zero` over `dp` replicas.
MemoryBreakdown model_state_bytes(double params, int zero, int dp, const StateBytes& bytes = {});

}  // namespace tuner::parallel
