#include "search/parallel/memory_model.h"

#include <algorithm>

namespace tuner::parallel {

std::string to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

std::string to_string(Schedule s) {
  switch (s) {
    case Schedule::kGpipe: return "gpipe";
    case Schedule::k1F1B: return "1f1b";
    case Schedule::kInterleaved: return "interleaved";
  }
  return "?";
}

double transformer_activation_bytes(double s, double b, double h, double a, int t, bool sp, Recompute r, bool flash,
                                    const BlockWidths& w) {
  const double sbh = s * b * h;
  const double attn = flash ? 4 * a / h : 5 * a * s / h;
  if (r == Recompute::kFull) return sp ? 2 * sbh / t : 2 * sbh;
  const double attn_term = r == Recompute::kSelective ? 0 : attn;
  // In units of sbh: outside the split, the norms' inputs (4), the QKV and first MLP projections' inputs (2 + 2) and
  // two dropout masks (1 + 1); inside it, attention's tensors and the MLP's, per expert a token visits.
  const double q = (w.q > 0 ? w.q : h) / h, kv = (w.kv > 0 ? w.kv : h) / h, f = (w.ffn > 0 ? w.ffn : 4 * h) / h;
  const int visits = std::max(w.top_k, 1);
  // An MoE layer's experts read every token of the tensor group (its strategy gathers them before dispatch), so
  // each visit's copy of a token stays whole on every rank, sequence parallelism or not.
  const double dispatched = w.top_k > 0 ? 2.0 * visits : 0.0;
  const double outside = 10;
  const double inside = 4 * q + 4 * kv + visits * (w.gated ? 6 : 4) * f;
  if (t <= 1) return sbh * (outside + dispatched + inside + attn_term);
  if (sp) return sbh * (dispatched + (outside + inside + attn_term) / t);
  return sbh * (outside + dispatched + (inside + attn_term) / t);
}

double in_flight_micro_batches(Schedule s, int p, int stage, int m, int v) {
  if (s == Schedule::kGpipe) return m;
  const double base = std::min(p - stage, m);
  if (s == Schedule::kInterleaved && v > 1) return base * (1.0 + (p - 1.0) / (static_cast<double>(p) * v));
  return base;
}

std::string to_string(Engine e) {
  switch (e) {
    case Engine::kGeneric: return "generic";
    case Engine::kMegatron: return "megatron";
    case Engine::kDeepSpeed: return "deepspeed";
    case Engine::kTorchtitan: return "torchtitan";
  }
  return "?";
}

StateBytes state_bytes(Engine e, const std::string& dtype) {
  StateBytes b;
  if (dtype == "f32") {
    b.weights = b.gradients = b.gradient_reduce = 4;
    b.optimizer = 8;  // Adam's moments; the weights are the master copy
    if (e == Engine::kTorchtitan) b.zero2_gathered = 4;
    return b;
  }
  if (e == Engine::kMegatron && dtype == "f16") {
    // --fp16 without --accumulate-allreduce-grads-in-fp32: fp16 gradients, reduced in fp16; the optimizer keeps fp32
    // master weights, Adam's moments and an fp32 copy of the gradients (the distributed-optimizer table: 20 bytes).
    b.optimizer = 16;
    return b;
  }
  if (e == Engine::kMegatron) {
    // Gradients accumulate and are reduced in fp32 main-grad buffers (Megatron's distributed-optimizer table:
    // bf16 params with fp32 grads take 18 bytes, 6 + 12/d with the distributed optimizer).
    b.gradients = 4;
    b.gradient_reduce = 4;
  } else if (e == Engine::kTorchtitan) {
    // FSDP2 mixed precision: fp32 sharded parameters and gradients, Adam moments; reduce in fp32 (its default).
    b.weights = 4;
    b.gradients = 4;
    b.optimizer = 8;
    b.gradient_reduce = 4;
    b.zero2_gathered = 2;
  }
  return b;
}

std::vector<int> engine_zero_stages(Engine e) {
  switch (e) {
    case Engine::kMegatron: return {0, 1};
    case Engine::kTorchtitan: return {0, 2, 3};
    default: return {0, 1, 2, 3};
  }
}

std::vector<Schedule> engine_schedules(Engine e) {
  switch (e) {
    case Engine::kMegatron: return {Schedule::k1F1B, Schedule::kInterleaved};
    case Engine::kDeepSpeed: return {Schedule::k1F1B};
    default: return {Schedule::kGpipe, Schedule::k1F1B, Schedule::kInterleaved};
  }
}

bool engine_runs_context_parallel(Engine e) { return e != Engine::kDeepSpeed; }

int engine_cp_chunks(Engine e) { return e == Engine::kMegatron || e == Engine::kTorchtitan ? 2 : 1; }

MemoryBreakdown model_state_bytes(double params, int zero, int dp, const StateBytes& bytes) {
  MemoryBreakdown m;
  const double d = std::max(dp, 1);
  m.weights = bytes.weights * params / (zero >= 3 ? d : 1);
  // FSDP2 at ZeRO-2: the fp32 master stays sharded; the gathered bf16 copy is kept whole between the passes.
  if (zero == 2 && bytes.zero2_gathered > 0) m.weights = bytes.weights * params / d + bytes.zero2_gathered * params;
  m.gradients = bytes.gradients * params / (zero >= 2 ? d : 1);
  m.optimizer = bytes.optimizer * params / (zero >= 1 ? d : 1);
  // FSDP2 in a pipeline: the gradients accumulate whole until the last micro-batch's reduce-scatter, and at ZeRO-3
  // the weights gathered by the first micro-batch stay whole until then (the ZeRO-2 case counts them above).
  if (zero >= 2 && bytes.accumulated_gradients > 0) {
    m.gradients += bytes.accumulated_gradients * params;
    if (zero >= 3) m.weights += bytes.zero2_gathered * params;
  }
  return m;
}

}  // namespace tuner::parallel
