#include "search/parallel/planner.h"

#include "search/parallel/engine_partition.h"
#include "search/parallel/graph_architecture.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "search/parallel/collective_cost.h"
#include "search/parallel/expert_parallel.h"
#include "search/parallel/layer_clustering.h"
#include "search/parallel/stage_dp.h"
#include "search/parallel/submesh.h"

namespace tuner::parallel {

namespace {

/// Whether pipeline boundary k (between stages k - 1 and k, GPUs starting at first_gpu[k - 1], first_gpu[k] and
/// first_gpu[k + 1]) crosses a node: the ranks of its two stages reach past one.
bool boundary_crosses(const std::vector<int64_t>& first_gpu, int k, int64_t gpn) {
  return first_gpu[static_cast<size_t>(k) - 1] / gpn != (first_gpu[static_cast<size_t>(k) + 1] - 1) / gpn;
}

int parse_pin_int(const std::string& key, const std::string& v, int lo, int hi) {
  int out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range)
    throw SpecError("--fix " + key + "=" + v + " is out of range; allowed: " + std::to_string(lo) + ".." +
                    std::to_string(hi));
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    throw SpecError("--fix " + key + "=" + v + " is not an integer; allowed: " + std::to_string(lo) + ".." +
                    std::to_string(hi));
  if (out < lo || out > hi)
    throw SpecError("--fix " + key + "=" + v + " is out of range; allowed: " + std::to_string(lo) + ".." +
                    std::to_string(hi));
  return out;
}

/// Unit starts for a per-stage DP over p stages and V variants whose p K^2 V^2 work per bound stays under a
/// few million cells (layer_clustering.h); empty when even one unit per stage is too much.
std::vector<int> dp_units(const std::vector<double>& cost, const std::vector<int>& kinds, int p, int V, int wanted) {
  constexpr double kMaxWork = 4e6;
  auto work = [&](double k) { return static_cast<double>(p) * k * k * V * V; };
  int target = std::max(wanted, 2 * p);
  while (target > p && work(target) > kMaxWork) target = std::max(p, target * 3 / 4);
  std::vector<int> units = cluster_layers(cost, kinds, target);
  const int K = static_cast<int>(units.size()) - 1;
  if (K < p || work(K) > 4 * kMaxWork) return {};
  return units;
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

}  // namespace

double Planner::dp_exposed_s(const ParallelConfig& c, CommGroup dp_group, double g_bytes, double last_bwd,
                             int layers, double expert_bytes, CommGroup expert_dp_group) const {
  if (dp_group.size <= 1) return 0;
  // Expert gradients are reduced over the expert data-parallel group, the rest over dp x cp.
  const double dense_bytes = g_bytes - expert_bytes;
  auto rs = [&](double d, double e) {
    return reduce_scatter_s(cluster_, dp_group, d) + (e > 0 ? reduce_scatter_s(cluster_, expert_dp_group, e) : 0);
  };
  // Gradients leave in buckets as the last micro-batch's backward produces them; the last bucket (one layer's
  // share) cannot overlap, and what the backward cannot hide stays exposed.
  const double bucket_share = 1.0 / std::max(layers, 1);
  double exposed = 0;
  if (fsdp_syncs_once_per_step(c)) {
    // FSDP2 in a pipeline: the accumulated gradients are reduce-scattered once, after the schedule's last backward
    // (PyTorch's pipelining keeps sync off through every micro-batch and reduces them in a step of its own:
    // exposed), and the weights gathered once, at the first micro-batch's forward (about half a backward long),
    // hidden by that pass but for the first layer's share.
    const double sync = rs(dense_bytes, expert_bytes);
    const double w_scale = dtype_bytes(model_.dtype) / state_bytes(opts_.engine, model_.dtype).gradient_reduce;
    const double gather = all_gather_s(cluster_, dp_group, dense_bytes * w_scale) +
                          (expert_bytes > 0 ? all_gather_s(cluster_, expert_dp_group, expert_bytes * w_scale) : 0);
    return sync + overlapped_comm_s(costs_->params(), gather, std::min(last_bwd / 2, gather * (1 - bucket_share)));
  }
  if (c.zero <= 1) {
    const double sync =
        c.zero == 0 ? all_reduce_s(cluster_, dp_group, dense_bytes) +
                          (expert_bytes > 0 ? all_reduce_s(cluster_, expert_dp_group, expert_bytes) : 0)
                    : rs(dense_bytes, expert_bytes);
    // The backward hides at most all but the last bucket; the hidden part still slows it.
    exposed = overlapped_comm_s(costs_->params(), sync, std::min(last_bwd, sync * (1 - bucket_share)));
  } else {
    exposed = rs(dense_bytes, expert_bytes) * bucket_share;
  }
  // ZeRO-1/2: the updated weights are all-gathered after the step, not overlapped (torchtitan's ZeRO-2, FSDP2
  // without resharding after forward, gathers them at each micro-batch's forward instead: fill_table).
  if ((c.zero == 1 || c.zero == 2) && !fsdp_gathers_every_forward(c))
    exposed += rs(dense_bytes, expert_bytes);  // all-gather: the same bytes
  return exposed;
}

void check_global_batch(int64_t global_batch) {
  if (global_batch < 1 || global_batch > kMaxGlobalBatch)
    throw SpecError("--global-batch " + std::to_string(global_batch) + " is out of range; allowed: 1.." +
                    std::to_string(kMaxGlobalBatch) + " sequences");
}

bool PlanPins::empty() const {
  return !tp && !pp && !dp && !cp && !ep && !micro_batch && !zero && !virtual_stages && !schedule && !recompute &&
         !sequence_parallel;
}

PlanPins parse_pins(const std::string& text) {
  PlanPins p;
  size_t pos = 0;
  std::set<std::string> seen;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    // An empty item (a doubled or trailing comma) is a typo, as tune --fix says too.
    if (item.empty() || (comma != std::string::npos && comma + 1 == text.size()))
      throw SpecError("--fix '" + text + "' has an empty item; allowed: key=value items separated by single commas");
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw SpecError("--fix item '" + item + "' is not key=value; allowed: items like tp=8,pp=4 (keys: tp, pp, dp, cp, ep, mbs, schedule, v, recompute, zero, sp)");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (!seen.insert(k).second) throw SpecError("--fix key '" + k + "' is given twice; allowed: each key once");
    if (k == "tp") p.tp = parse_pin_int(k, v, 1, 1 << 20);
    else if (k == "pp") p.pp = parse_pin_int(k, v, 1, 1 << 20);
    else if (k == "dp") p.dp = parse_pin_int(k, v, 1, 1 << 20);
    else if (k == "cp") p.cp = parse_pin_int(k, v, 1, 1 << 20);
    else if (k == "ep") p.ep = parse_pin_int(k, v, 1, 1 << 20);
    else if (k == "mbs") p.micro_batch = parse_pin_int(k, v, 1, 1 << 20);
    else if (k == "zero") p.zero = parse_pin_int(k, v, 0, 3);
    else if (k == "v") p.virtual_stages = parse_pin_int(k, v, 1, 64);
    else if (k == "schedule") {
      if (v == "gpipe") p.schedule = Schedule::kGpipe;
      else if (v == "1f1b") p.schedule = Schedule::k1F1B;
      else if (v == "interleaved") p.schedule = Schedule::kInterleaved;
      else throw SpecError("--fix schedule=" + v + " is unknown; allowed: gpipe, 1f1b, interleaved");
    } else if (k == "recompute") {
      if (v == "none") p.recompute = Recompute::kNone;
      else if (v == "selective") p.recompute = Recompute::kSelective;
      else if (v == "full") p.recompute = Recompute::kFull;
      else throw SpecError("--fix recompute=" + v + " is unknown; allowed: none, selective, full");
    } else if (k == "sp") {
      if (v == "0") p.sequence_parallel = false;
      else if (v == "1") p.sequence_parallel = true;
      else throw SpecError("--fix sp=" + v + " is unknown; allowed: 0 (no sequence parallelism), 1");
    } else {
      throw SpecError("--fix key '" + k +
                      "' is unknown; allowed: tp, pp, dp, cp, ep, mbs, schedule, v, recompute, zero, sp");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (p.virtual_stages && *p.virtual_stages > 1 && p.schedule && *p.schedule != Schedule::kInterleaved)
    throw SpecError("--fix v=" + std::to_string(*p.virtual_stages) + " needs schedule=interleaved, not schedule=" +
                    to_string(*p.schedule) + "; allowed: v=" + std::to_string(*p.virtual_stages) +
                    " with schedule=interleaved (or left out), or v=1");
  return p;
}

std::string to_string(const PlanPins& p) {
  std::string s;
  auto add = [&](const std::string& kv) { s += (s.empty() ? "" : ",") + kv; };
  if (p.tp) add("tp=" + std::to_string(*p.tp));
  if (p.pp) add("pp=" + std::to_string(*p.pp));
  if (p.dp) add("dp=" + std::to_string(*p.dp));
  if (p.cp) add("cp=" + std::to_string(*p.cp));
  if (p.ep) add("ep=" + std::to_string(*p.ep));
  if (p.micro_batch) add("mbs=" + std::to_string(*p.micro_batch));
  if (p.schedule) add("schedule=" + to_string(*p.schedule));
  if (p.virtual_stages) add("v=" + std::to_string(*p.virtual_stages));
  if (p.recompute) add("recompute=" + to_string(*p.recompute));
  if (p.zero) add("zero=" + std::to_string(*p.zero));
  if (p.sequence_parallel) add(std::string("sp=") + (*p.sequence_parallel ? "1" : "0"));
  return s;
}

/// Bytes as GB with at most 3 significant decimals ("78", "4.3").
std::string gb_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", bytes / 1e9);
  return text;
}

std::string describe(const ParallelConfig& c) {
  std::string s = "tp=" + std::to_string(c.tp) + " pp=" + std::to_string(c.pp) + " dp=" + std::to_string(c.dp) +
                  (c.cp > 1 ? " cp=" + std::to_string(c.cp) : "") + (c.ep > 1 ? " ep=" + std::to_string(c.ep) : "") +
                  " mbs=" + std::to_string(c.micro_batch) + " m=" + std::to_string(c.num_micro_batches) + " " +
                  to_string(c.schedule);
  if (c.schedule == Schedule::kInterleaved) s += "(v=" + std::to_string(c.virtual_stages) + ")";
  return s + " recompute=" + to_string(c.recompute) + " zero=" + std::to_string(c.zero);
}

std::vector<int> uniform_partition(const ModelGraph& g, int stages) {
  const int L = static_cast<int>(g.layers.size());
  if (stages <= 0) return {};
  // The run of transformer blocks, if the model has one; else all layers.
  int first = 0, end = L;
  if (g.transformer_layers > 0) {
    while (first < L && g.layers[first].kind != LayerKind::kTransformer) ++first;
    end = first;
    while (end < L && g.layers[end].kind == LayerKind::kTransformer) ++end;
  }
  const int n = end - first;
  if (stages > n) return {};
  std::vector<int> starts(stages + 1);
  int at = first;
  for (int i = 0; i < stages; ++i) {
    starts[i] = i == 0 ? 0 : at;
    at += n / stages + (i < n % stages ? 1 : 0);
  }
  starts[stages] = L;
  return starts;
}

Planner::Planner(const ModelGraph& model, const ClusterSpec& cluster, PlannerOptions opts)
    : model_(model), cluster_(cluster), opts_(std::move(opts)) {
  // Flash attention kernels (FlashAttention, cuDNN's fused attention) run fp16/bf16 only: an f32 model's attention is
  // unfused, so it has no context parallelism either (its ring attention is a flash kernel).
  const bool fp32 = model_.dtype == "f32";
  if (fp32 && opts_.attention && *opts_.attention == AttentionKernel::kFlash)
    throw SpecError("--attention flash: model '" + model_.name +
                    "' is f32, and flash attention kernels run fp16/bf16 only; allowed: unfused, auto");
  // tp, pp and dp pinned leave cp one value, the GPUs they do not use: pinned so (the search did not consider that
  // cp at short sequences and said "no configuration was tried").
  if (PlanPins& pin = opts_.pins; !pin.cp && pin.tp && pin.pp && pin.dp) {
    const int64_t used = static_cast<int64_t>(*pin.tp) * *pin.pp * *pin.dp, n = cluster_.total_gpus();
    if (used > 0 && n % used == 0 && n / used > 1) {
      const int cp = static_cast<int>(n / used);
      std::string why;
      if (!engine_runs_context_parallel(opts_.engine)) why = to_string(opts_.engine) + " has no context parallelism";
      else if (model_.seq % cp != 0) why = "it does not divide the sequence of " + std::to_string(model_.seq) + " tokens";
      else if (const int k = engine_cp_chunks(opts_.engine); k > 1 && model_.seq % (k * cp) != 0)
        why = to_string(opts_.engine) + " splits each sequence into 2 x cp = " + std::to_string(k * cp) +
              " chunks, which do not divide " + std::to_string(model_.seq) + " tokens";
      else if (fp32)
        why = "context parallelism runs flash attention, which an f32 model cannot (fp16/bf16 kernels only)";
      else if (opts_.attention && *opts_.attention != AttentionKernel::kFlash)
        why = "context parallelism runs flash attention and --attention unfused was given";
      if (!why.empty())
        throw SpecError("--fix tp x pp x dp = " + std::to_string(used) + " GPUs of the " + std::to_string(n) + " of " +
                        cluster_.name + " leaves cp=" + std::to_string(cp) + ", but " + why +
                        "; allowed: tp x cp x pp x dp = " + std::to_string(n));
      pin.cp = cp;
    }
  }
  opts_.cost.attention = opts_.attention                  ? *opts_.attention
                         : model_.flash_attention && !fp32 ? AttentionKernel::kFlash
                                                           : AttentionKernel::kUnfused;
  // Context parallelism runs only with fused attention (Megatron-LM's and Transformer Engine's ring attention, and
  // torchtitan's, are flash kernels). Where the search considers cp > 1 (long sequences, a batch too small for
  // the cluster, a pinned cp) the recipe's unfused attention becomes flash for every configuration, cp = 1 too, so
  // that cp is never chosen for flash attention's speed; --attention unfused keeps cp at 1.
  bool cp_considered = opts_.pins.cp && *opts_.pins.cp > 1;
  if (!opts_.pins.cp && engine_runs_context_parallel(opts_.engine))
    for (int c : context_parallel_degrees())  // a degree the search could use
      cp_considered = cp_considered || (c > 1 && model_.seq % (engine_cp_chunks(opts_.engine) * c) == 0 &&
                                        cluster_.total_gpus() % c == 0);
  cp_considered = cp_considered && engine_runs_context_parallel(opts_.engine);
  if (!opts_.attention && cp_considered && !fp32) opts_.cost.attention = AttentionKernel::kFlash;
  costs_ = std::make_unique<OpCostModel>(cluster_.gpu, opts_.cost, opts_.lookup);
  for (size_t l = 0; l < model_.layers.size(); ++l) {
    const std::string sig = model_.layers[l].signature();
    auto it = std::find(signatures_.begin(), signatures_.end(), sig);
    if (it == signatures_.end()) {
      signatures_.push_back(sig);
      sig_example_.push_back(static_cast<int>(l));
      sig_widths_.push_back(block_widths(model_.layers[l]));
      layer_sig_.push_back(static_cast<int>(signatures_.size() - 1));
    } else {
      layer_sig_.push_back(static_cast<int>(it - signatures_.begin()));
    }
  }
  check_global_batch(opts_.global_batch);
  model_params_ = model_params(model_);
  tied_ = tied_embedding(model_);
  model_flops_ = model_forward_flops(model_);
  model_flops_causal_ = model_forward_flops(model_, true);
  model_experts_ = model_experts(model_);
  model_expert_params_ = model_expert_params(model_);
  std::set<int, std::greater<int>> heads;
  for (const Layer& layer : model_.layers)
    for (const Operator& op : layer.ops)
      if (op.type == OpType::kAttention)
        for (int h : {op.heads, op.kv_heads})
          if (h > 0) heads.insert(h), head_divisor_ = std::gcd(head_divisor_, h);
  for (int h : heads) head_counts_ += (head_counts_.empty() ? "" : ", ") + std::to_string(h);
  for (const Layer& layer : model_.layers)
    for (bool r : residual_stream(layer)) has_residual_stream_ = has_residual_stream_ || r;
}

Planner::~Planner() = default;

const LayerPlan& Planner::layer_plan(size_t sig, int tp, int cp, int ep, int mbs, double budget,
                                     double state_bytes_per_param) {
  // Without a budget the state bytes do not matter: one solution serves every ZeRO stage.
  // Layers without experts do not depend on ep: they share one solution.
  const bool has_experts = std::any_of(model_.layers[sig_example_[sig]].ops.begin(),
                                       model_.layers[sig_example_[sig]].ops.end(),
                                       [](const Operator& op) { return op.type == OpType::kMoeFfn; });
  if (!has_experts) ep = 1;
  const std::string key = std::to_string(sig) + "|" + std::to_string(tp) + "|" + std::to_string(cp) + "|" +
                          (ep > 1 ? "ep" + std::to_string(ep) + "|" : "") +
                          std::to_string(mbs) + "|" +
                          (std::isfinite(budget) ? std::to_string(static_cast<int64_t>(budget)) + "|" +
                                                       std::to_string(state_bytes_per_param)
                                                 : "inf");
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  if (std::isfinite(budget)) {
    // A budget only removes assignments: when the unconstrained optimum fits it (the ILP's memory row: states
    // and outputs of every op), it is the constrained optimum too, and no second solve is needed. Most budgeted
    // requests are of this kind (a stage's share is rarely tight for every layer).
    const LayerPlan& free = layer_plan(sig, tp, cp, ep, mbs, kInf, state_bytes_per_param);
    if (!free.ops.empty() &&
        state_bytes_per_param * free.params_per_device + free.activation_bytes <= budget * (1 - 1e-12))
      return cache_.emplace(key, free).first->second;
  }
  ++ilp_solves_;
  // Under context parallelism each GPU holds seq / cp tokens of every sequence.
  auto m = by_cp_.find(cp);
  if (m == by_cp_.end()) {
    ModelGraph local = model_;
    local.seq = model_.seq / cp;
    m = by_cp_.emplace(cp, std::move(local)).first;
  }
  LayerPlan lp = plan_layer_sharding(m->second.layers[sig_example_[sig]], m->second, cluster_, tensor_mesh(cluster_, tp),
                                     mbs, *costs_, budget, state_bytes_per_param, cp, ep,
                                     layout_rules());
  return cache_.emplace(key, std::move(lp)).first->second;
}

struct Planner::Eval {
  ParallelConfig c;           ///< Validated, with its micro-batch count and virtual stages.
  int N = 0, gpn = 0, L = 0;
  int m = 1, p = 1, v = 1;    ///< Micro-batches, stages, chunks per device.
  int dsize = 2;
  StateBytes bytes;
  double usable = 0;          ///< Bytes per GPU the plan may use.
  int64_t seq = 1;            ///< Tokens per GPU (seq / cp).
  int64_t stage_size = 1;          ///< GPUs of a stage: tp x cp x dp
  bool stage_cross_node = false;    ///< some pipeline boundary crosses a node
  StageShape shape;           ///< The configuration's own stage shape.
  /// Data-parallel group of a stage shape: replicas are tp ranks apart, so a node holds gpn / tp of them;
  /// gradients are reduced (and ZeRO-sharded) over dp x cp: every context-parallel rank holds all the weights.
  CommGroup dp_group(const StageShape& s) const {
    const int dpc = s.dp * c.cp;
    return {dpc, std::clamp(gpn / s.tp, 1, dpc)};
  }
  const ClusterSpec* cluster = nullptr;
  /// Expert data-parallel group of a stage shape: the dp x cp / ep GPUs that hold the same experts (ep divides
  /// the shape's dp x cp: check_config for the configuration's own shape, stage_shapes for the others).
  CommGroup edp_group(const StageShape& s) const { return expert_data_group(*cluster, s.tp, c.ep, s.dp * c.cp); }
  /// Model states of p_all parameters per device, p_expert of them expert weights: the rest sharded (ZeRO) over
  /// the shape's dp x cp, the experts over its expert data-parallel group.
  MemoryBreakdown states(const StageShape& s, double p_all, double p_expert) const {
    const int dpc = s.dp * c.cp;
    MemoryBreakdown mb = model_state_bytes(p_all - p_expert, c.zero, dpc, bytes);
    const MemoryBreakdown me = model_state_bytes(p_expert, c.zero, std::max(1, dpc / c.ep), bytes);
    mb.weights += me.weights;
    mb.gradients += me.gradients;
    mb.optimizer += me.optimizer;
    return mb;
  }
};

std::optional<Plan> Planner::evaluate(const ParallelConfig& c, bool uniform, std::string* why) {
  return evaluate_impl(c, uniform, kInf, why);
}

std::string Planner::check_config(ParallelConfig& c, bool& uniform) const {
  const int N = cluster_.total_gpus(), gpn = cluster_.gpus_per_node;
  const int L = static_cast<int>(model_.layers.size());
  if (c.tp < 1 || c.pp < 1 || c.dp < 1 || c.cp < 1 || c.ep < 1 || c.micro_batch < 1) return "degrees must be positive";
  if (std::string v = expert_parallel_violation(c.ep, model_experts_, c.dp * c.cp); !v.empty()) return v;
  if (model_.seq % c.cp != 0)
    return "cp=" + std::to_string(c.cp) + " does not divide the sequence of " + std::to_string(model_.seq);
  if (static_cast<int64_t>(c.tp) * c.cp * c.pp * c.dp != N)
    return "tp*cp*pp*dp = " + std::to_string(static_cast<int64_t>(c.tp) * c.cp * c.pp * c.dp) + " is not the " +
           std::to_string(N) + " GPUs of the cluster";
  // tp=4 on 6-GPU nodes: a third of the tensor groups straddle two nodes, which the mesh prices as NVLink.
  if (!tiles_nodes(c.tp))
    return c.tp > gpn ? "tp=" + std::to_string(c.tp) + " spans nodes but is not a multiple of " + std::to_string(gpn)
                      : "tp=" + std::to_string(c.tp) + " does not divide the " + std::to_string(gpn) +
                            " GPUs of a node (some tensor groups would straddle two nodes); allowed: a tp that "
                            "divides " + std::to_string(gpn) + " or a multiple of it";
  if (c.pp > L) return "pp=" + std::to_string(c.pp) + " exceeds the " + std::to_string(L) + " layers";
  if (opts_.global_batch % (static_cast<int64_t>(c.micro_batch) * c.dp) != 0)
    return "global batch " + std::to_string(opts_.global_batch) + " is not a multiple of mbs*dp = " +
           std::to_string(static_cast<int64_t>(c.micro_batch) * c.dp);
  c.num_micro_batches = static_cast<int>(opts_.global_batch / (static_cast<int64_t>(c.micro_batch) * c.dp));
  const int m = c.num_micro_batches, p = c.pp;
  if (c.schedule == Schedule::kInterleaved) {
    const int v = c.virtual_stages;
    const int blocks = model_.transformer_layers > 0 ? model_.transformer_layers : L;
    if (v < 2) return "interleaved needs v >= 2 chunks per device";
    if (p < 2) return "interleaved needs pp >= 2";
    if (blocks % (p * v) != 0)
      return std::to_string(blocks) + " layers do not split into pp*v = " + std::to_string(p * v) + " chunks";
    if (m % p != 0) return "interleaved needs micro-batches (" + std::to_string(m) + ") divisible by pp";
    uniform = true;
  } else {
    c.virtual_stages = 1;
  }
  const std::vector<int> stages = engine_zero_stages(opts_.engine);
  if (std::find(stages.begin(), stages.end(), c.zero) == stages.end())
    return "zero=" + std::to_string(c.zero) + " is not a ZeRO stage " + to_string(opts_.engine) + " runs";
  // Megatron-LM's and torchtitan's context parallelism split each sequence into 2 x cp chunks (load balance under
  // the causal mask). Checked first: sequence parallelism's check below would blame tp for cp's chunks.
  if (const int k = engine_cp_chunks(opts_.engine); k > 1 && c.cp > 1 && model_.seq % (k * c.cp) != 0)
    return to_string(opts_.engine) + " splits each sequence into 2 x cp = " + std::to_string(k * c.cp) +
           " chunks, which do not divide " + std::to_string(model_.seq) + " tokens";
  // Sequence parallelism splits tokens over the tensor group: the engines split each sequence (Megatron-LM's
  // [s, b, h] along s, torchtitan's Shard(1)), so the sequence (each cp rank's share) must divide by tp; the ILP's
  // token split without an engine, the micro-batch's tokens.
  if (c.tp > 1 && has_residual_stream_ && layout_rules().residual_split_required()) {
    const bool engine = opts_.engine != Engine::kGeneric;
    const int64_t tokens = (engine ? 1 : static_cast<int64_t>(c.micro_batch)) * (model_.seq / std::max(1, c.cp));
    if (tokens % c.tp != 0)
      return "sequence parallelism (" + to_string(opts_.engine) + ") splits " +
             (engine ? "each sequence's " : "the micro-batch's ") + std::to_string(tokens) + " tokens" +
             (c.cp > 1 ? " (per cp rank)" : "") + " over tp=" + std::to_string(c.tp) + ", which does not divide them" +
             (opts_.engine == Engine::kMegatron && model_.experts == 0
                  ? "; allowed: a tp that divides them, or --fix sp=0"
                  : "; allowed: a tp that divides them");
  }
  if (opts_.engine == Engine::kDeepSpeed) {
    if (c.tp > 1 && c.zero >= 3)
      return "DeepSpeed's AutoTP training runs ZeRO 0 to 2 with tp > 1; allowed: zero=0, 1, 2, or tp=1";
    if (c.pp > 1 && c.zero >= 2) return "DeepSpeed's pipeline engine runs ZeRO 0 or 1 only; allowed: zero=0, 1, or pp=1";
    if (model_.experts > 0 && c.zero >= 3) return "DeepSpeed MoE does not run with ZeRO-3; allowed: zero=0, 1, 2";
    // Its config checkpoints whole layers (activation_checkpoint_interval); the attention core alone is model code.
    if (c.recompute == Recompute::kSelective)
      return "DeepSpeed's config recomputes whole layers only; allowed: recompute=none, full";
  }
  if (opts_.engine == Engine::kTorchtitan) {
    // torchtitan applies FSDP when dp_shard > 1 or cp > 1; without it, DDP takes a 1-D mesh only, and tensor or
    // pipeline parallel models get no mixed precision (maybe_enable_amp: "Mixed precision training is disabled").
    const bool fsdp = (c.zero >= 2 && c.dp > 1) || c.cp > 1;
    if (c.zero == 0 && (c.tp > 1 || c.pp > 1 || c.cp > 1 || c.ep > 1))
      return "torchtitan runs unsharded data parallelism (DDP) without tp, pp, cp or ep only; allowed: zero=2, 3";
    if ((c.tp > 1 || c.pp > 1) && !fsdp)
      return "torchtitan trains tensor or pipeline parallel models in fp32 unless FSDP shards them; allowed: dp >= 2 "
             "with zero=2 or 3, or cp >= 2";
  }
  // What the export's engine cannot run is not planned for it (the export could only warn that it is not expressed).
  if (c.cp > 1 && !engine_runs_context_parallel(opts_.engine))
    return to_string(opts_.engine) + " has no context parallelism; allowed: cp=1";
  if (c.cp > 1 && opts_.cost.attention != AttentionKernel::kFlash)
    return "context parallelism runs flash attention only (--attention unfused); allowed: cp=1";
  if (c.pp > 1 && !engine_runs_schedule(c.schedule))
    return to_string(opts_.engine) + " does not run the " + to_string(c.schedule) +
           " schedule; allowed: schedule=" + engine_schedule_names();
  return "";
}

bool Planner::engine_runs_schedule(Schedule s) const {
  const std::vector<Schedule> runs = engine_schedules(opts_.engine);
  return std::find(runs.begin(), runs.end(), s) != runs.end();
}

std::string Planner::engine_schedule_names() const {
  std::string names;
  for (Schedule s : engine_schedules(opts_.engine)) names += (names.empty() ? "" : ", ") + to_string(s);
  return names;
}

Planner::Eval Planner::make_eval(const ParallelConfig& c) const {
  Eval e;
  e.c = c;
  e.N = cluster_.total_gpus(), e.gpn = cluster_.gpus_per_node;
  e.L = static_cast<int>(model_.layers.size());
  e.m = c.num_micro_batches, e.p = c.pp, e.v = c.virtual_stages;
  e.dsize = dtype_bytes(model_.dtype);
  e.bytes = state_bytes(opts_.engine, model_.dtype);
  // FSDP2's gathered compute copy is in the model's dtype (mixed_precision_param; an f32 model's is fp32).
  if (e.bytes.zero2_gathered > 0) e.bytes.zero2_gathered = dtype_bytes(model_.dtype);
  if (fsdp_syncs_once_per_step(c)) e.bytes.accumulated_gradients = e.bytes.gradient_reduce;
  e.usable = static_cast<double>(cluster_.memory_per_gpu_bytes) - opts_.memory_reserve_bytes;
  e.seq = model_.seq / c.cp;
  // Ranks in Megatron's order (tp, cp, dp inner; pp outermost): a stage is tp x cp x dp consecutive ranks. Some
  // boundary crosses a node whenever the pipeline spans more than one (it was taken as intra-node while a stage
  // was smaller than a node, though stage 1 of tp=4 on 8-GPU nodes sends to the next node).
  e.stage_size = static_cast<int64_t>(c.tp) * c.cp * c.dp;
  e.stage_cross_node = e.stage_size * c.pp > e.gpn;
  e.shape = {c.tp, c.dp, c.micro_batch};
  e.cluster = &cluster_;
  return e;
}

bool Planner::fill_table(const Eval& e, const StageShape& shape, double budget, LayerTable& out) {
  const ParallelConfig& c = e.c;
  const int L = e.L;
  const CommGroup dp_group = e.dp_group(shape), edp_group = e.edp_group(shape);
  const int dpc = dp_group.size;
  // One sharding per distinct layer: identical layers share it.
  const double state_bytes_pp = model_state_bytes(1, c.zero, dpc, e.bytes).total();
  std::vector<const LayerPlan*> by_sig(signatures_.size());
  for (size_t sig = 0; sig < signatures_.size(); ++sig) {
    by_sig[sig] = &layer_plan(sig, shape.tp, c.cp, c.ep, shape.micro_batch, budget, state_bytes_pp);
    if (by_sig[sig]->ops.empty()) return false;
  }
  out = LayerTable{};
  out.shape = shape;
  for (auto* v : {&out.t, &out.comp, &out.mem, &out.comm, &out.epc, &out.cpc, &out.rec, &out.zex, &out.reshard, &out.bwd,
                  &out.params, &out.eparams, &out.act, &out.full_act})
    v->assign(L, 0.0);
  out.lp.assign(L, nullptr);
  const double boundary_bytes = static_cast<double>(shape.micro_batch) * e.seq * model_.hidden * e.dsize;
  for (int l = 0; l < L; ++l) {
    const Layer& layer = model_.layers[l];
    const LayerPlan& x = *(out.lp[l] = by_sig[layer_sig_[l]]);
    double recompute = 0;
    if (c.recompute == Recompute::kFull) recompute = x.fwd_s;
    else if (c.recompute == Recompute::kSelective) recompute = x.attention_fwd_s;
    const double tl = x.fwd_s + x.bwd_s + recompute;
    // ZeRO-2 reduce-scatters gradients every micro-batch (in the engine's reduction dtype: FSDP2's is fp32);
    // ZeRO-3 also all-gathers weights (in the model's dtype) forward and backward. Expert weights over the expert
    // data-parallel group, the rest over dp x cp.
    const double dense = x.params_per_device - x.expert_params_per_device, expert = x.expert_params_per_device;
    const double w_bytes = dense * e.dsize, e_bytes = expert * e.dsize;
    // A layer without experts launches no expert collectives (their latency is not charged).
    const bool experts = e_bytes > 0;
    const double e_rs = experts ? reduce_scatter_s(cluster_, edp_group, expert * e.bytes.gradient_reduce) : 0;
    const double e_ag = experts ? all_gather_s(cluster_, edp_group, e_bytes) : 0;
    double zc = 0;
    if (fsdp_syncs_once_per_step(c)) {
      // In a pipeline, FSDP2 reduce-scatters once a step (dp_exposed_s); at ZeRO-3 the forward still reshards, so
      // every backward gathers again (the first forward's gather is the step's, dp_exposed_s).
      if (c.zero >= 3) zc += all_gather_s(cluster_, dp_group, w_bytes) + e_ag;
    } else {
      if (c.zero >= 2) zc += reduce_scatter_s(cluster_, dp_group, dense * e.bytes.gradient_reduce) + e_rs;
      if (c.zero >= 3) zc += 2 * (all_gather_s(cluster_, dp_group, w_bytes) + e_ag);
      // FSDP2 at ZeRO-2 frees the gathered weights after each backward: every micro-batch's forward gathers again.
      if (fsdp_gathers_every_forward(c)) zc += all_gather_s(cluster_, dp_group, w_bytes) + e_ag;
    }
    // A layer of another kind than its predecessor may read its input in another layout.
    if (l > 0) out.reshard[l] = entry_s(e, out, out, l);
    out.comp[l] = x.compute_s, out.mem[l] = x.memory_bound_s, out.comm[l] = x.comm_s, out.rec[l] = recompute;
    out.epc[l] = x.ep_comm_s;  // inside fwd_s + bwd_s
    out.cpc[l] = x.cp_comm_s;  // likewise
    // Overlapped with the layer's own work: the excess counts, and what is hidden still takes its share of the
    // SMs and DRAM bandwidth (overlap_interference).
    out.zex[l] = overlapped_comm_s(costs_->params(), zc, tl);
    out.t[l] = tl + out.zex[l] + out.reshard[l];
    out.bwd[l] = x.bwd_s;
    out.params[l] = x.params_per_device, out.eparams[l] = x.expert_params_per_device;
    out.sequence_parallel = out.sequence_parallel || x.sequence_parallel;
    if (layer.kind == LayerKind::kTransformer) {
      const bool flash = opts_.cost.attention == AttentionKernel::kFlash;
      const BlockWidths& widths = sig_widths_[layer_sig_[l]];
      out.act[l] = transformer_activation_bytes(e.seq, shape.micro_batch, layer.hidden, layer.heads, shape.tp,
                                                x.sequence_parallel, c.recompute, flash, widths);
      out.full_act[l] = transformer_activation_bytes(e.seq, shape.micro_batch, layer.hidden, layer.heads, shape.tp,
                                                     x.sequence_parallel, Recompute::kNone, flash, widths);
      // The formula counts 2-byte tensors (and 1-byte dropout masks): an f32 model's take twice the bytes (its masks
      // counted twice too, 2 of 34 sbh: over by at most 6%).
      out.act[l] *= e.dsize / 2.0, out.full_act[l] *= e.dsize / 2.0;
    } else {
      out.full_act[l] = x.activation_bytes;
      const double input = boundary_bytes / (x.sequence_parallel ? shape.tp : 1);
      out.act[l] = c.recompute == Recompute::kFull ? std::min(input, x.activation_bytes) : x.activation_bytes;
    }
  }
  if (tied_.tied()) {
    // The two ops' shares as their shardings store them: the smaller is what one copy saves.
    auto op_params_local = [&](int layer, const std::string& name) {
      for (const OpShardingPlan& op : out.lp[layer]->ops)
        if (op.op == name) return op.params_per_device;
      return 0.0;
    };
    out.tied_embedding = tied_.embedding, out.tied_head = tied_.head;
    out.tied_params = std::min(op_params_local(tied_.embedding, tied_.embedding_op),
                               op_params_local(tied_.head, tied_.head_op));
    if (out.params[tied_.head] > 0) out.tied_zex = out.zex[tied_.head] * out.tied_params / out.params[tied_.head];
  }
  out.finish();
  return true;
}

MemoryBreakdown Planner::stage_memory(const Eval& e, const LayerTable& t, int stage, int i, int j) const {
  MemoryBreakdown mb = e.states(t.shape, t.params_of(i, j), t.eparams_of(i, j));
  mb.activations = in_flight_micro_batches(e.c.schedule, e.p, stage, e.m, e.v) * t.act_of(i, j);
  // The layer being recomputed holds its full activations: the largest in [i, j).
  if (e.c.recompute == Recompute::kFull) mb.activations += t.max_full_of(i, j);
  // ZeRO-3 gathers each layer's weights before it runs and prefetches the next (FSDP, DeepSpeed's prefetch
  // bucket): two layers' whole weights, and the running layer's whole gradient before its reduce-scatter.
  if (e.c.zero >= 3 && !fsdp_syncs_once_per_step(e.c)) {  // (in a pipeline they stay whole: model_state_bytes)
    const double layer = t.max_params_of(i, j) * e.dsize;
    mb.weights += 2 * layer;
    mb.gradients += layer;
  }
  return mb;
}

double Planner::entry_s(const Eval& e, const LayerTable& prev, const LayerTable& cur, int l,
                        std::optional<bool> cross_node) const {
  const double sample = static_cast<double>(e.seq) * model_.hidden * e.dsize;
  double s = layer_entry_s(cluster_, prev, cur, l, sample);
  // Stages of unequal GPU counts: the sender's p2p (stage_p2p_s) moves its share of the pipeline micro-batch per
  // device; a receiver with fewer devices takes (and returns the gradient of) a larger share per device.
  const int from = prev.shape.tp * prev.shape.dp, to = cur.shape.tp * cur.shape.dp;
  if (to < from && e.p > 1) {
    const double pipeline_seqs = static_cast<double>(prev.shape.micro_batch) * prev.shape.dp;
    const bool cross = cross_node.value_or(e.stage_cross_node);
    s += 2 * e.v * (p2p_s(cluster_, cross, pipeline_seqs * sample / to) - p2p_s(cluster_, cross, pipeline_seqs * sample / from));
  }
  return s;
}

double Planner::stage_p2p_s(const Eval& e, const StageShape& shape, int stage,
                            const std::vector<int64_t>* first_gpu) const {
  // Per micro-batch, b*s*h/tp (scatter-gather) per send: each of the rank's v chunks sends its activation forward
  // but the model's last chunk, and its input gradient backward but the model's first; so the first and the last
  // rank send 2v - 1 times (with v > 1 the last rank's other chunks feed rank 0's next ones), the others 2v.
  if (e.p <= 1) return 0;
  const double bytes = static_cast<double>(shape.micro_batch) * e.seq * model_.hidden * e.dsize / shape.tp;
  const bool sizes_known = first_gpu && static_cast<int>(first_gpu->size()) == e.p + 1;
  if (e.v > 1 || (shape.tp * shape.dp * e.c.cp != e.stage_size && !sizes_known)) {
    // Interleaved chunks pass every boundary, the last rank's back to the first: the slowest link sets the pace.
    const int sends = 2 * e.v - (stage == 0 ? 1 : 0) - (stage == e.p - 1 ? 1 : 0);
    return sends * p2p_s(cluster_, e.stage_cross_node, bytes);
  }
  // One chunk: the activation forward to the next stage, the gradient back to the previous, each across a node
  // boundary or not. Boundary k (between stages k - 1 and k) pairs the ranks of stage k - 1 with those of stage k
  // (r with r + S for r in [(k-1)S, kS) when every stage has S): it crosses when those ranks reach past a node.
  auto crosses = [&](int k) {
    if (sizes_known) return boundary_crosses(*first_gpu, k, e.gpn);
    const int64_t S = e.stage_size;
    return ((k - 1) * S) / e.gpn != ((k + 1) * S - 1) / e.gpn;
  };
  double s = 0;
  if (stage < e.p - 1) s += p2p_s(cluster_, crosses(stage + 1), bytes);
  if (stage > 0) s += p2p_s(cluster_, crosses(stage), bytes);
  return s;
}

std::vector<int> Planner::given_partition(int stages, bool uniform) const {
  if (opts_.engine == Engine::kDeepSpeed && stages > 1) {
    const std::pair<int, bool> key{stages, uniform};
    auto it = engine_partitions_.find(key);
    if (it == engine_partitions_.end())
      it = engine_partitions_.emplace(key, engine_fixed_partition(opts_.engine, model_, stages, uniform)).first;
    return it->second;
  }
  return uniform ? uniform_partition(model_, stages) : std::vector<int>{};
}

std::vector<int> Planner::partition(const Eval& e, const LayerTable& t, bool uniform) const {
  StageDpRequest req;
  req.stages = e.p;
  req.micro_batches = static_cast<double>(e.m) * e.v;  // interleaving: (1/v)[sum t + (m v - 1) t_max]
  req.stage_extra.resize(e.p);
  for (int st = 0; st < e.p; ++st) req.stage_extra[st] = stage_p2p_s(e, t.shape, st);
  req.layer_cost = t.t;
  req.fits = [&](int stage, int i, int j) { return stage_memory(e, t, stage, i, j).total() <= e.usable; };
  if (std::vector<int> starts = given_partition(e.p, uniform); uniform || !starts.empty()) {
    if (!starts.empty() && !std::isfinite(pipeline_objective(req, starts))) starts.clear();
    return starts;
  }
  StageDpResult r = solve_stage_dp(req);
  if (!r.feasible) return {};
  // A partition the export's engine cannot run as planned: the best one it can; none when none fits (a plan
  // for the engine is one it runs, as with its schedules and context parallelism).
  if (!engine_expresses_partition(opts_.engine, model_, r.starts)) {
    std::vector<int> alt = best_megatron_partition(req, model_);
    if (alt.empty()) ++inexpressible_;
    return alt;
  }
  return r.starts;
}

bool Planner::memory_level_partition(const Eval& e, bool uniform, std::vector<LayerTable>& tables,
                                     std::vector<int>& starts, std::vector<int>& level) {
  const int p = e.p, L = e.L;
  // Level 0 is the fastest sharding (tables[0]), which may still fit the late stages of a 1F1B pipeline (they
  // keep fewer micro-batches in flight); level 1 caps each layer's ILP row at its share of the device,
  // usable / ceil(L / p) (the old fallback, which put it on every stage). The DP picks a level per stage, so
  // only the stages that need the lean shardings pay for them. More levels (a row weighted by a stage's
  // in-flight micro-batches) cost a layer ILP per distinct layer each and nearly
  // doubled the solves of the 300-layer plans, so there are only these two.
  const double share = e.usable / ((L + p - 1) / p);
  LayerTable capped;
  if (!fill_table(e, e.shape, share, capped)) return false;
  tables.push_back(std::move(capped));
  auto fits = [&](int s, int v, int i, int j) { return stage_memory(e, tables[v], s, i, j).total() <= e.usable; };
  // The old fallback: level 1 on every stage.
  std::vector<int> old = partition(e, tables[1], uniform);
  if (!opts_.memory_levels_in_dp) {
    starts = old, level.assign(p, 1);
    return !starts.empty();
  }
  const int V = static_cast<int>(tables.size());
  if (std::vector<int> given = given_partition(p, uniform); uniform || !given.empty()) {
    // The stages are given: each takes the fastest level that fits it.
    starts = given;
    level.assign(p, -1);
    for (int s = 0; s < p; ++s)
      for (int v = 0; v < V && level[s] < 0; ++v)
        if (fits(s, v, starts[s], starts[s + 1])) level[s] = v;
    return std::find(level.begin(), level.end(), -1) == level.end();
  }
  VariantDpRequest req;
  req.stages = p;
  req.micro_batches = static_cast<double>(e.m) * e.v;
  req.units = dp_units(tables[0].t, std::vector<int>(layer_sig_.begin(), layer_sig_.end()), p, V, opts_.cluster_units);
  req.variants = V;
  // A stage's first layer is entered from the previous stage's variant: charged by the boundary, not the table.
  req.cost = [&](int v, int i, int j) { return tables[v].time(i, j) - (i > 0 ? tables[v].reshard[i] : 0.0); };
  req.boundary = [&](int a, int b, int i) { return entry_s(e, tables[a], tables[b], i); };
  req.extra = [&](int s, int) { return stage_p2p_s(e, e.shape, s); };
  req.fits = fits;
  VariantDpResult r;
  if (!req.units.empty()) r = solve_variant_dp(req);
  submesh_cells_ += r.cells;
  // The old fallback is one of the assignments, at layer granularity: keep the better.
  const double old_obj = old.empty() ? kInf : variant_objective(req, old, std::vector<int>(p, 1));
  // The variant DP's partition only where the engine runs it as planned (partition() already made `old` so).
  if (r.feasible && !engine_expresses_partition(opts_.engine, model_, r.starts)) r.feasible = false, ++inexpressible_;
  if (!r.feasible && old.empty()) return false;
  if (!r.feasible || old_obj <= r.objective) starts = old, level.assign(p, 1);
  else starts = r.starts, level = r.variant;
  return true;
}

std::optional<Plan> Planner::evaluate_impl(const ParallelConfig& cfg, bool uniform, double best_time,
                                           std::string* why) {
  auto reject = [&](const std::string& reason) -> std::optional<Plan> {
    if (why) *why = reason;
    return std::nullopt;
  };
  ++evaluated_;
  ParallelConfig c = cfg;
  if (std::string bad = check_config(c, uniform); !bad.empty()) return reject(bad);
  const Eval e = make_eval(c);
  // Quick memory bound: the model states can never be smaller than all weights split by tp and pp (and the
  // experts also by ep).
  const int split = c.tp * c.pp;
  const double min_expert = static_cast<double>(model_expert_params_) / (static_cast<double>(split) * c.ep);
  const double min_params = least_params_per_device(static_cast<double>(model_params_),
                                                    static_cast<double>(model_expert_params_), split, c.ep);
  if (const double need = e.states(e.shape, min_params, min_expert).total(); need > e.usable) {
    char text[256];
    std::snprintf(text, sizeof text, "model states alone need %.1f GB per GPU (weights, gradients and optimizer "
                  "states under ZeRO-%d), more than the %.1f GB usable", need / 1e9, c.zero, e.usable / 1e9);
    return reject(text);
  }

  // Layer plans: the fastest shardings first; if no partition fits, memory levels per stage.
  std::vector<LayerTable> tables(1);
  if (!fill_table(e, e.shape, kInf, tables[0])) return reject("no layer sharding fits the per-layer memory share");
  // Lower bound: the pipeline is at least m * (all work / p); skip configurations that cannot win.
  if (e.m * tables[0].time(0, e.L) / e.p >= best_time) return reject("cannot beat the best plan found");
  // DeepSpeed splits the layers itself, by parameter count or (uniform) by layer count.
  const bool engine_split = e.p > 1 && opts_.engine == Engine::kDeepSpeed;
  const std::string split_name = uniform ? "\"uniform\"" : "\"parameters\"";
  if (engine_split && given_partition(e.p, uniform).empty())
    return reject("DeepSpeed's split of the layers over pp=" + std::to_string(e.p) + " (partition " + split_name +
                  ") leaves a stage without a layer");
  if (uniform && given_partition(e.p, true).empty())
    return reject("pp=" + std::to_string(e.p) + " exceeds the layers to split");
  if (e.p > e.L)
    return reject("pp=" + std::to_string(e.p) + " exceeds the " + std::to_string(e.L) + " layers to split");
  // Megatron-LM builds at least one block on every stage.
  if (opts_.engine == Engine::kMegatron && e.p > 1 && model_.transformer_layers > 0 &&
      model_.transformer_layers < e.p)
    return reject("megatron builds a block on every pipeline stage: the " + std::to_string(model_.transformer_layers) +
                  " blocks do not fill pp=" + std::to_string(e.p));
  const int64_t dropped = inexpressible_;
  std::vector<int> starts = partition(e, tables[0], uniform), level(e.p, 0);
  if (starts.empty()) {
    // A capped re-solve can only help when some layer keeps weights it could split: its least is every weight
    // split by tp, the experts also by ep (they are divided over ep ranks and split inside over tp).
    bool lean = true;
    for (int l = 0; l < e.L && lean; ++l) {
      const Layer& layer = model_.layers[l];
      const double least = least_params_per_device(static_cast<double>(layer_params(layer)),
                                                   static_cast<double>(layer_expert_params(layer)), c.tp, c.ep);
      lean = tables[0].lp[l]->params_per_device <= 1.01 * least + 1;
    }
    if (lean || !memory_level_partition(e, uniform, tables, starts, level)) {
      if (engine_split)
        return reject("DeepSpeed's split of the layers over pp=" + std::to_string(e.p) + " (partition " + split_name +
                      ") does not fit in " + gb_text(e.usable) + " GB per GPU");
      if (inexpressible_ > dropped)
        return reject(to_string(opts_.engine) + " gives every pipeline stage but the first and the last the same number "
                      "of layers; no such split of the layers over pp=" + std::to_string(e.p) + " fits in " +
                      gb_text(e.usable) + " GB per GPU");
      return reject("no stage partition fits in " + gb_text(e.usable) + " GB per GPU");
    }
  }
  std::vector<const LayerTable*> per_stage;
  for (int s = 0; s < e.p; ++s) per_stage.push_back(&tables[level[s]]);
  return assemble(e, per_stage, starts, uniform ? "uniform" : engine_split ? "parameters" : "dp", level);
}

std::vector<StageShape> Planner::stage_shapes(const ParallelConfig& c) const {
  const int gpn = cluster_.gpus_per_node, max_tp = opts_.max_tp > 0 ? opts_.max_tp : gpn;
  const int devices = c.tp * c.dp;  // per stage, per context-parallel rank
  const int64_t pipeline_mb = static_cast<int64_t>(c.micro_batch) * c.dp;  // sequences per pipeline micro-batch
  std::vector<StageShape> out = {{c.tp, c.dp, c.micro_batch}};
  // Alpa's submeshes (1, 2^k) inside a node, as the stage's tensor-parallel degree: tensor parallelism across
  // nodes never paid in the uniform search, and each shape costs a layer ILP per distinct layer.
  for (int tp : divisors(devices)) {
    if (tp == c.tp || tp > std::min(max_tp, gpn) || !tiles_nodes(tp) || (tp & (tp - 1)) != 0 || !splits_heads(tp))
      continue;
    const int dp = devices / tp;
    // Each stage's experts are divided over ep of its own dp x cp ranks: ep must divide them.
    if (pipeline_mb % dp != 0 || (dp * c.cp) % c.ep != 0) continue;
    out.push_back({tp, dp, static_cast<int>(pipeline_mb / dp)});
  }
  return out;
}

std::string Planner::check_variant_config(ParallelConfig& c) const {
  bool uniform = false;
  if (std::string bad = check_config(c, uniform); !bad.empty()) return bad;
  if (uniform) return "interleaved stages keep one shape (chunks of every stage alternate on each device)";
  return "";
}

std::vector<LayerTable> Planner::variant_tables(const Eval& e, const std::vector<StageShape>& shapes) {
  std::vector<LayerTable> tables;
  for (const StageShape& s : shapes) {
    LayerTable t;
    if (fill_table(e, s, kInf, t)) tables.push_back(std::move(t));
  }
  return tables;
}

std::optional<Plan> Planner::evaluate_submeshes(const ParallelConfig& cfg, std::string* why) {
  auto reject = [&](const std::string& reason) -> std::optional<Plan> {
    if (why) *why = reason;
    return std::nullopt;
  };
  ParallelConfig c = cfg;
  if (std::string bad = check_variant_config(c); !bad.empty()) return reject(bad);
  const Eval e = make_eval(c);
  std::vector<LayerTable> tables = variant_tables(e, stage_shapes(c));
  const int p = e.p, V = static_cast<int>(tables.size());
  if (V < 2) return reject("one stage shape only");
  VariantDpRequest req;
  req.units = dp_units(tables[0].t, std::vector<int>(layer_sig_.begin(), layer_sig_.end()), p, V, opts_.cluster_units);
  if (req.units.empty()) return reject("too many stages for the per-stage submesh DP");
  return solve_variants(e, tables, req, "submesh", "no per-stage submesh assignment fits", why);
}

std::optional<Plan> Planner::solve_variants(const Eval& e, const std::vector<LayerTable>& tables, VariantDpRequest req,
                                            const std::string& partition, const std::string& infeasible,
                                            std::string* why) {
  const int p = e.p, V = static_cast<int>(tables.size());
  req.stages = p;
  req.micro_batches = e.m;
  req.variants = V;
  // A stage's first layer is entered from the previous stage's variant: charged by the boundary, not the table.
  req.cost = [&](int v, int i, int j) { return tables[v].time(i, j) - (i > 0 ? tables[v].reshard[i] : 0.0); };
  req.boundary = [&](int a, int b, int i) { return entry_s(e, tables[a], tables[b], i); };
  req.extra = [&](int s, int v) { return stage_p2p_s(e, tables[v].shape, s); };
  req.fits = [&](int s, int v, int i, int j) { return stage_memory(e, tables[v], s, i, j).total() <= e.usable; };
  const VariantDpResult r = solve_variant_dp(req);
  submesh_cells_ += r.cells;
  if (!r.feasible) {
    if (why) *why = infeasible;
    return std::nullopt;
  }
  std::vector<const LayerTable*> per_stage;
  for (int v : r.variant) per_stage.push_back(&tables[v]);
  return assemble(e, per_stage, r.starts, partition, std::vector<int>(p, 0));
}

std::vector<StageShape> Planner::unequal_shapes(const ParallelConfig& c) const {
  const int gpn = cluster_.gpus_per_node, max_tp = std::min(opts_.max_tp > 0 ? opts_.max_tp : gpn, gpn);
  const int devices = c.tp * c.dp;  // per stage, per context-parallel rank
  const int64_t pipeline_mb = static_cast<int64_t>(c.micro_batch) * c.dp;
  auto pow2 = [](int x) { return x > 0 && (x & (x - 1)) == 0; };
  std::vector<StageShape> out = {{c.tp, c.dp, c.micro_batch}};
  for (int g : {devices / 2, devices * 2}) {
    if (g < 1 || (g == devices / 2 && devices % 2 != 0)) continue;
    // Alpa's submeshes: 1, 2, 4, .. GPUs inside a node, or whole nodes.
    const int64_t physical = static_cast<int64_t>(g) * c.cp;
    if (physical > static_cast<int64_t>(cluster_.total_gpus()) ||
        !(physical < gpn ? pow2(static_cast<int>(physical)) : physical % gpn == 0))
      continue;
    for (int tp : {c.tp, c.tp * 2, c.tp / 2}) {
      // The configuration's tp, or a power of two inside a node next to it.
      if (tp < 1 || g % tp != 0 || (tp != c.tp && (!pow2(tp) || tp > max_tp || !tiles_nodes(tp) || !splits_heads(tp)))) continue;
      const int dp = g / tp;
      if (pipeline_mb % dp != 0 || (dp * c.cp) % c.ep != 0) continue;  // every stage: the same global batch
      const StageShape sh{tp, dp, static_cast<int>(pipeline_mb / dp)};
      if (std::find(out.begin(), out.end(), sh) == out.end()) out.push_back(sh);
    }
  }
  return out;
}

std::optional<Plan> Planner::evaluate_unequal(const ParallelConfig& cfg, std::string* why) {
  auto reject = [&](const std::string& reason) -> std::optional<Plan> {
    if (why) *why = reason;
    return std::nullopt;
  };
  ParallelConfig c = cfg;
  if (std::string bad = check_variant_config(c); !bad.empty()) return reject(bad);
  if (c.pp < 2) return reject("one stage holds every GPU");
  const Eval e = make_eval(c);
  std::vector<LayerTable> tables = variant_tables(e, unequal_shapes(c));
  const int p = e.p, V = static_cast<int>(tables.size());
  // Weights: each variant's GPUs in units of their greatest common divisor; the stages must cover p x tp x dp.
  std::vector<int> gpus;
  int unit = 0;
  for (const LayerTable& t : tables) gpus.push_back(t.shape.tp * t.shape.dp), unit = std::gcd(unit, gpus.back());
  if (V < 2 || std::all_of(gpus.begin(), gpus.end(), [&](int g) { return g == c.tp * c.dp; }))
    return reject("no other GPU count per stage runs this configuration");
  VariantDpRequest req;
  for (int g : gpus) req.weight.push_back(g / unit);
  req.budget = p * (c.tp * c.dp / unit);
  // The DP's work grows with the weights it tracks: fewer units.
  const int W = req.budget + 1;
  const int v_eff = static_cast<int>(std::ceil(V * std::sqrt(static_cast<double>(W))));
  req.units = dp_units(tables[0].t, std::vector<int>(layer_sig_.begin(), layer_sig_.end()), p, v_eff, opts_.cluster_units);
  if (req.units.empty()) return reject("too many stages for the unequal-GPU DP");
  return solve_variants(e, tables, req, "unequal", "no assignment of GPU counts to stages fits", why);
}

Plan Planner::assemble(const Eval& e, const std::vector<const LayerTable*>& tables, const std::vector<int>& starts,
                       const std::string& partition, const std::vector<int>& level) const {
  const ParallelConfig& c = e.c;
  const int p = e.p, m = e.m;
  Plan plan;
  plan.config = c;
  plan.partition = partition;
  plan.attention = opts_.cost.attention;
  plan.memory_capacity_bytes = e.usable;
  std::vector<double> stage_dp(p, 0), stage_opt(p, 0);
  // Where each stage's GPUs start: its sends are priced per boundary whatever the stages' sizes.
  std::vector<int64_t> first_gpu(static_cast<size_t>(p) + 1, 0);
  for (int s = 0; s < p; ++s)
    first_gpu[static_cast<size_t>(s) + 1] =
        first_gpu[static_cast<size_t>(s)] + static_cast<int64_t>(tables[s]->shape.tp) * tables[s]->shape.dp * c.cp;
  for (int s = 0; s < p; ++s) {
    const LayerTable& t = *tables[s];
    const int i = starts[s], j = starts[s + 1];
    StagePlan sp;
    sp.first_layer = i, sp.end_layer = j;
    sp.shape = t.shape;
    sp.gpus = t.shape.tp * t.shape.dp * c.cp;
    sp.mesh = tensor_mesh(cluster_, t.shape.tp);
    sp.memory_level = level[s];
    const double p2p = stage_p2p_s(e, t.shape, s, &first_gpu);
    // Entering the stage (a layout change or a resharding between shapes) replaces its first layer's own entry.
    const double boundary =
        s > 0 ? entry_s(e, *tables[s - 1], t, i, e.v > 1 ? e.stage_cross_node : boundary_crosses(first_gpu, s, e.gpn)) -
                    t.reshard[i]
              : 0.0;
    sp.time_per_micro_batch_s = t.time(i, j) + boundary + p2p;
    sp.params_per_device = t.params_of(i, j);
    sp.memory = stage_memory(e, t, s, i, j);
    TimeBreakdown& tb = sp.time;
    for (int l = i; l < j; ++l) {
      tb.compute_s += m * t.comp[l], tb.memory_bound_s += m * t.mem[l], tb.tp_comm_s += m * t.comm[l];
      tb.ep_comm_s += m * t.epc[l], tb.cp_comm_s += m * t.cpc[l];
      tb.recompute_s += m * t.rec[l], tb.zero_comm_s += m * t.zex[l];
      tb.reshard_s += m * t.reshard[l];
    }
    tb.zero_comm_s -= m * (t.holds_tied(i, j) ? t.tied_zex : 0.0);  // as t.time(i, j) counts it
    tb.reshard_s += m * boundary;
    tb.pp_p2p_s = m * p2p;
    for (int l = i; l < j; ++l) {
      if (!sp.sharding.empty() && sp.sharding.back().layer == model_.layers[l].name && layer_sig_[l] == layer_sig_[l - 1]) {
        ++sp.sharding.back().count;
        continue;
      }
      sp.sharding.push_back({model_.layers[l].name, 1, t.lp[l]->ops});
      plan.ilp_optimal = plan.ilp_optimal && t.lp[l]->optimal;
      plan.kernel_estimates += t.lp[l]->parts;
      plan.tuned_estimates += t.lp[l]->tuned_parts;
    }
    plan.sequence_parallel = plan.sequence_parallel || (t.sequence_parallel && t.shape.tp > 1);
    plan.uniform_stages = plan.uniform_stages && t.shape == e.shape;
    // Expert gradients are reduced (and ZeRO-sharded) over the stage's expert data-parallel group, the rest over
    // its dp x cp group: both from the stage's own shape.
    const CommGroup group = e.dp_group(t.shape), egroup = e.edp_group(t.shape);
    const double experts = t.eparams_of(i, j);
    stage_dp[s] = dp_exposed_s(c, group, sp.params_per_device * e.bytes.gradient_reduce, t.bwd_of(i, j), j - i,
                               experts * e.bytes.gradient_reduce, egroup);
    // Adam step: fp32 master, momentum, variance read and written, bf16 grads read, weights written.
    const double local = (sp.params_per_device - experts) / (c.zero >= 1 ? group.size : 1) +
                         experts / (c.zero >= 1 ? egroup.size : 1);
    stage_opt[s] = costs_->memory_bound(local * (12 * 2 + 2 + 2)).seconds;
    plan.stages.push_back(std::move(sp));
  }
  // A tied embedding over a pipeline: the first and the last stage each hold a copy, and after the backward the two
  // copies' gradients are all-reduced between them (Megatron-LM's embedding group, DeepSpeed's tied modules), exposed.
  if (tied_.tied() && p > 1) {
    // The last stage starts where the stages before it end: on another node once that reaches a node.
    const int64_t last_start = first_gpu[static_cast<size_t>(p) - 1];
    const double s = all_reduce_s(cluster_, CommGroup{2, last_start >= e.gpn ? 1 : 2},
                                  tables[0]->tied_params * e.bytes.gradient_reduce);
    stage_dp[0] += s;
    stage_dp[p - 1] += s;
  }
  finish_totals(e, plan, stage_dp, stage_opt);
  return plan;
}

void Planner::finish_totals(const Eval& e, Plan& plan, const std::vector<double>& stage_dp,
                            const std::vector<double>& stage_opt) const {
  const int p = e.p, m = e.m, v = e.v;
  double sum_t = 0, t_max = 0;
  for (const StagePlan& sp : plan.stages) sum_t += sp.time_per_micro_batch_s, t_max = std::max(t_max, sp.time_per_micro_batch_s);
  const double dp_exposed = *std::max_element(stage_dp.begin(), stage_dp.end());
  const double opt = *std::max_element(stage_opt.begin(), stage_opt.end());
  plan.pipeline_s = m * t_max + (sum_t - t_max) / v;
  plan.bubble_fraction = plan.pipeline_s > 0 ? (plan.pipeline_s - m * sum_t / p) / plan.pipeline_s : 0;
  plan.dp_exposed_s = dp_exposed;
  plan.optimizer_s = opt;
  plan.iteration_time_s = plan.pipeline_s + dp_exposed + opt;
  // Each stage idles for what the schedule leaves it and waits for the slowest stage's reduction and step.
  double busiest = -1;
  for (int s = 0; s < p; ++s) {
    StagePlan& sp = plan.stages[s];
    TimeBreakdown& tb = sp.time;
    tb.pp_bubble_s = plan.pipeline_s - m * sp.time_per_micro_batch_s;
    tb.dp_comm_s = stage_dp[s];
    tb.optimizer_s = stage_opt[s];
    tb.wait_s = (dp_exposed - stage_dp[s]) + (opt - stage_opt[s]);
    if (sp.time_per_micro_batch_s > busiest) busiest = sp.time_per_micro_batch_s, plan.critical_stage = s;
    if (sp.memory.total() > plan.peak_memory_bytes) plan.peak_memory_bytes = sp.memory.total(), plan.peak_stage = s;
  }
  plan.model_flops_per_iteration = 3 * model_flops_ * opts_.global_batch;
  plan.tokens_per_s = static_cast<double>(opts_.global_batch) * model_.seq / plan.iteration_time_s;
  plan.tflops_per_gpu = plan.model_flops_per_iteration / plan.iteration_time_s / e.N / 1e12;
  // Against the dense bf16 peak whatever the model's dtype (the README's convention): an f32 model's MFU shows what
  // training in fp32 leaves on the table, not its share of the fp32 peak.
  plan.mfu = plan.tflops_per_gpu * 1e12 / costs_->peak_flops("bf16");
  plan.mfu_causal = plan.mfu * model_flops_causal_ / model_flops_;
}

void Planner::check_ep_pin() const {
  const PlanPins& pin = opts_.pins;
  if (!pin.ep || *pin.ep <= 1) return;
  const int N = cluster_.total_gpus();
  // Expert parallelism: MoE models search every ep that divides their experts and dp x cp; dense ones run ep = 1.
  std::string allowed;
  for (int e : expert_parallel_degrees(model_experts_, N)) allowed += (allowed.empty() ? "" : ", ") + std::to_string(e);
  if (model_experts_ == 0 || model_experts_ % *pin.ep != 0)
    throw SpecError("--fix ep=" + std::to_string(*pin.ep) + " " +
                    (model_experts_ == 0 ? "needs a mixture-of-experts model; '" + model_.name + "' has no experts"
                                         : "does not divide the " + std::to_string(model_experts_) + " experts") +
                    "; allowed: " + allowed);
  // ep must divide dp x cp = N / (tp pp): with tp and pp pinned (or dp and cp, cp being 1 for short sequences)
  // that is one number; otherwise the GPUs bound it and the search refuses what does not divide.
  const bool cp_known = pin.cp || model_.seq < opts_.long_sequence;
  const int dpc = pin.tp && pin.pp && N % (*pin.tp * *pin.pp) == 0 ? N / (*pin.tp * *pin.pp)
                  : pin.dp && cp_known                              ? *pin.dp * (pin.cp ? *pin.cp : 1)
                                                                    : N;
  if (dpc % *pin.ep != 0) {
    std::string ok;
    for (int e : expert_parallel_degrees(model_experts_, dpc)) ok += (ok.empty() ? "" : ", ") + std::to_string(e);
    throw SpecError("--fix ep=" + std::to_string(*pin.ep) + " does not divide the data-parallel group (dp x cp = " +
                    std::to_string(dpc) + (dpc == N && !(pin.tp && pin.pp) ? ", the GPUs" : "") + "); allowed: " + ok);
  }
}

struct Planner::Search {
  std::vector<int> tps, cps, mbss, zeros;
  std::vector<std::pair<Schedule, int>> schedules;
  std::vector<Recompute> recomputes;
};

int Planner::max_tensor_parallel() const { return opts_.max_tp > 0 ? opts_.max_tp : cluster_.gpus_per_node; }

bool Planner::fsdp_gathers_every_forward(const ParallelConfig& c) const {
  return opts_.engine == Engine::kTorchtitan && c.zero == 2 && c.pp == 1;
}

bool Planner::fsdp_syncs_once_per_step(const ParallelConfig& c) const {
  return opts_.engine == Engine::kTorchtitan && c.zero >= 2 && c.pp > 1;
}

std::string Planner::sequence_parallel_conflict() const {
  const auto& sp = opts_.pins.sequence_parallel;
  if (!sp) return "";
  if (!*sp && opts_.engine == Engine::kTorchtitan) return "its TP plan always runs sequence parallelism";
  if (!*sp && opts_.engine == Engine::kMegatron && model_.experts > 0)
    return "Megatron-LM requires sequence parallelism for MoE models with tensor parallelism";
  if (*sp && opts_.engine == Engine::kDeepSpeed) return "AutoTP has no sequence parallelism";
  return "";
}

double Planner::sequences_per_tensor_group() const {
  return static_cast<double>(opts_.global_batch) * max_tensor_parallel() / cluster_.total_gpus();
}

Planner::Search Planner::search_space() const {
  const int N = cluster_.total_gpus();
  const PlanPins& pin = opts_.pins;
  const int max_tp = max_tensor_parallel();
  Search s;
  // Tensor parallelism splits attention by heads: every engine needs tp to divide the query and key/value heads
  // (Megatron-LM asserts it; a tp that does not left the layer ILP only token splits, which is not what the export
  // runs).
  // A tensor group fills part of a node evenly, or whole nodes (tiles_nodes, check_config).
  for (int d : divisors(N))
    if ((pin.tp ? d == *pin.tp : d <= max_tp && tiles_nodes(d)) && splits_heads(d)) s.tps.push_back(d);
  // The values a pinned degree may take: the divisors of the GPU count that `ok` keeps.
  auto allowed = [&](const std::function<bool(int)>& ok) {
    std::string out;
    for (int d : divisors(N))
      if (ok(d)) out += (out.empty() ? "" : ", ") + std::to_string(d);
    return "; allowed: " + (out.empty() ? std::string("none") : out);
  };
  if (pin.tp && N % *pin.tp != 0)
    throw SpecError("--fix tp=" + std::to_string(*pin.tp) + " does not divide the " + std::to_string(N) + " GPUs" +
                    allowed([&](int d) { return splits_heads(d) && tiles_nodes(d); }));
  if (pin.tp && !tiles_nodes(*pin.tp))
    throw SpecError("--fix tp=" + std::to_string(*pin.tp) + " does not divide the " +
                    std::to_string(cluster_.gpus_per_node) + " GPUs of a node (some tensor groups would straddle two nodes)" +
                    allowed([&](int d) { return tiles_nodes(d) && splits_heads(d); }));
  if (pin.tp && !splits_heads(*pin.tp))
    throw SpecError("--fix tp=" + std::to_string(*pin.tp) + " does not divide the model's attention heads (" +
                    head_counts_ + "), which tensor parallelism splits" +
                    allowed([&](int d) { return splits_heads(d) && tiles_nodes(d); }));
  if (pin.cp && (model_.seq % *pin.cp != 0 || N % *pin.cp != 0))
    throw SpecError("--fix cp=" + std::to_string(*pin.cp) + " must divide the sequence (" + std::to_string(model_.seq) +
                    ") and the " + std::to_string(N) + " GPUs" +
                    allowed([&](int d) { return model_.seq % d == 0; }));
  // Pinned degrees the cluster or the batch cannot take, named here rather than as "no configuration was tried".
  // (A stage may hold the embedding or the head alone, so pp is bounded by all layers, not the blocks.)
  const int layers = static_cast<int>(model_.layers.size());
  if (pin.pp && N % *pin.pp != 0)
    throw SpecError("--fix pp=" + std::to_string(*pin.pp) + " does not divide the " + std::to_string(N) + " GPUs" +
                    allowed([&](int d) { return d <= layers; }));
  if (pin.pp && *pin.pp > layers)
    throw SpecError("--fix pp=" + std::to_string(*pin.pp) + " exceeds the " + std::to_string(layers) +
                    " layers to split" + allowed([&](int d) { return d <= layers; }));
  const auto dp_ok = [&](int d) { return opts_.global_batch % d == 0; };
  if (pin.dp && N % *pin.dp != 0)
    throw SpecError("--fix dp=" + std::to_string(*pin.dp) + " does not divide the " + std::to_string(N) + " GPUs" +
                    allowed(dp_ok));
  if (pin.dp && opts_.global_batch % *pin.dp != 0)
    throw SpecError("--fix dp=" + std::to_string(*pin.dp) + " does not divide the global batch of " +
                    std::to_string(opts_.global_batch) + allowed(dp_ok));
  {
    int64_t product = 1;
    std::string named;
    for (const auto& [name, v] : {std::pair<const char*, std::optional<int>>{"tp", pin.tp}, {"cp", pin.cp},
                                  {"pp", pin.pp}, {"dp", pin.dp}})
      if (v) product *= *v, named += std::string(named.empty() ? "" : " x ") + name;
    if (N % product != 0 || (pin.tp && pin.cp && pin.pp && pin.dp && product != N))
      throw SpecError("--fix " + named + " = " + std::to_string(product) + " GPUs, which " +
                      (N % product != 0 ? "does not divide" : "is not") + " the " + std::to_string(N) +
                      " GPUs of " + cluster_.name + "; allowed: degrees whose product " +
                      (pin.tp && pin.cp && pin.pp && pin.dp ? "is " : "divides ") + std::to_string(N));
  }
  check_ep_pin();
  if (pin.micro_batch && opts_.global_batch % *pin.micro_batch != 0) {
    std::string allowed;
    for (int64_t d = 1; d <= opts_.global_batch && d <= 1024; ++d)
      if (opts_.global_batch % d == 0) allowed += (allowed.empty() ? "" : ", ") + std::to_string(d);
    throw SpecError("--fix mbs=" + std::to_string(*pin.micro_batch) + " does not divide the global batch of " +
                    std::to_string(opts_.global_batch) + "; allowed: " + allowed);
  }
  if (pin.virtual_stages && *pin.virtual_stages == 1 && pin.schedule && *pin.schedule == Schedule::kInterleaved)
    throw SpecError("--fix schedule=interleaved,v=1: interleaving runs v >= 2 chunks per device; allowed: v=2..64, "
                    "or schedule=1f1b with v=1");
  // Interleaving spreads a rank's chunks over a pipeline: a pinned pp of 1 has none to interleave.
  const bool interleave_pinned = (pin.virtual_stages && *pin.virtual_stages > 1) ||
                                 (pin.schedule && *pin.schedule == Schedule::kInterleaved);
  if (interleave_pinned && pin.pp && *pin.pp < 2)
    throw SpecError("--fix " + std::string(pin.virtual_stages ? "v=" + std::to_string(*pin.virtual_stages)
                                                              : std::string("schedule=interleaved")) +
                    " interleaves the stages of a pipeline, and pp=1 is none; allowed: pp >= 2 with it, or " +
                    (pin.virtual_stages ? "v=1" : "schedule=1f1b"));
  s.mbss = pin.micro_batch ? std::vector<int>{*pin.micro_batch} : opts_.micro_batch_sizes;
  const int blocks = model_.transformer_layers > 0 ? model_.transformer_layers : static_cast<int>(model_.layers.size());
  // Whether some pp >= 2 (the pinned one, if any) has pp x v chunks that divide the blocks.
  auto splits = [&](int v) {
    for (int pp : divisors(N))
      if (pp >= 2 && (!pin.pp || pp == *pin.pp) && blocks % (pp * v) == 0) return true;
    return false;
  };
  auto splitting_vs = [&] {
    std::string allowed;
    for (int v = 2; v <= 64; ++v)
      if (splits(v)) allowed += (allowed.empty() ? "" : ", ") + std::to_string(v);
    return allowed;
  };
  if (pin.schedule && *pin.schedule == Schedule::kInterleaved) {
    if (pin.virtual_stages) {
      s.schedules.push_back({Schedule::kInterleaved, *pin.virtual_stages});
    } else {
      // Every v that splits the blocks at the pinned pp (the default list misses some: 3 x 7 of 126 blocks at pp 6).
      for (int v = 2; v <= 64; ++v)
        if (splits(v)) s.schedules.push_back({Schedule::kInterleaved, v});
      if (s.schedules.empty() && engine_runs_schedule(Schedule::kInterleaved)) {
        std::string others_allowed;  // the engine's other schedules, and a pp the other pins leave room for
        for (Schedule sc : engine_schedules(opts_.engine))
          if (sc != Schedule::kInterleaved) others_allowed += (others_allowed.empty() ? "" : " or ") + to_string(sc);
        const int64_t others = static_cast<int64_t>(pin.tp.value_or(1)) * pin.cp.value_or(1) * pin.dp.value_or(1);
        std::string pps;
        for (int pp : divisors(N)) {
          if (pp < 2 || (N / pp) % others != 0 || (pin.tp && pin.cp && pin.dp && N / pp != others)) continue;
          for (int v = 2; v <= 64; ++v)
            if (blocks % (pp * v) == 0) {
              pps += (pps.empty() ? "" : ", ") + std::to_string(pp);
              break;
            }
        }
        if (pin.pp && !pps.empty()) others_allowed += ", or pp = " + pps;
        throw SpecError("--fix schedule=interleaved: the " + std::to_string(blocks) +
                        " layers do not split into pp x v chunks for any v >= 2 " +
                        (pin.pp ? "at the pinned pp=" + std::to_string(*pin.pp)
                                : "and pp >= 2 on the " + std::to_string(N) + " GPUs of " + cluster_.name) +
                        " (the engines give each of a rank's v chunks as many layers); allowed: schedule=" +
                        others_allowed);
      }
    }
  } else if (pin.schedule) {
    s.schedules.push_back({*pin.schedule, 1});
  } else if (pin.virtual_stages && *pin.virtual_stages > 1) {
    s.schedules.push_back({Schedule::kInterleaved, *pin.virtual_stages});
  } else {
    s.schedules.push_back({Schedule::k1F1B, 1});
    if (engine_runs_schedule(Schedule::kInterleaved))
      for (int v : opts_.virtual_stages) s.schedules.push_back({Schedule::kInterleaved, v});
  }
  if (pin.virtual_stages && *pin.virtual_stages > 1) {
    // A pinned v needs some pp >= 2 whose pp x v chunks divide the blocks; say which v would do.
    if (!splits(*pin.virtual_stages)) {
      const std::string allowed = splitting_vs();
      const std::string v = std::to_string(*pin.virtual_stages);
      throw SpecError("--fix v=" + v + ": the " + std::to_string(blocks) + " layers do not split into pp x v chunks " +
                      (pin.pp ? "at the pinned pp=" + std::to_string(*pin.pp) + " (" + std::to_string(*pin.pp) + " x " +
                                    v + " does not divide " + std::to_string(blocks) + ")"
                              : "for any pp >= 2 on the " + std::to_string(N) + " GPUs of " + cluster_.name) +
                      "; allowed: v = " +
                      (allowed.empty() ? std::string("none (1: no interleaving)") : allowed));
    }
  }
  s.recomputes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  if (opts_.engine == Engine::kDeepSpeed) s.recomputes = {Recompute::kNone, Recompute::kFull};
  if (pin.recompute && opts_.engine == Engine::kDeepSpeed && *pin.recompute == Recompute::kSelective)
    throw SpecError("--fix recompute=selective cannot run on deepspeed (its config recomputes whole layers); "
                    "allowed: none, full");
  if (pin.recompute) s.recomputes = {*pin.recompute};
  s.zeros = engine_zero_stages(opts_.engine);
  // DeepSpeed MoE layers do not run under ZeRO-3.
  if (opts_.engine == Engine::kDeepSpeed && model_.experts > 0)
    s.zeros.erase(std::remove(s.zeros.begin(), s.zeros.end(), 3), s.zeros.end());
  if (pin.zero) {
    if (std::find(s.zeros.begin(), s.zeros.end(), *pin.zero) == s.zeros.end()) {
      std::string allowed;
      for (int z : s.zeros) allowed += (allowed.empty() ? "" : ", ") + std::to_string(z);
      throw SpecError("--fix zero=" + std::to_string(*pin.zero) + " cannot run on " + to_string(opts_.engine) +
                      (model_.experts > 0 && opts_.engine == Engine::kDeepSpeed ? " with an MoE model" : "") +
                      "; allowed: " + allowed);
    }
    s.zeros = {*pin.zero};
  }
  // Pins the export's engine cannot run (check_config refuses them too; here the error names the pin).
  if (pin.cp && *pin.cp > 1 && !engine_runs_context_parallel(opts_.engine))
    throw SpecError("--fix cp=" + std::to_string(*pin.cp) + " cannot run on " + to_string(opts_.engine) +
                    " (no context parallelism); allowed: 1");
  if (const int k = engine_cp_chunks(opts_.engine); pin.cp && *pin.cp > 1 && k > 1 && model_.seq % (k * *pin.cp) != 0)
    throw SpecError("--fix cp=" + std::to_string(*pin.cp) + ": " + to_string(opts_.engine) +
                    " splits each sequence into 2 x cp = " + std::to_string(k * *pin.cp) +
                    " chunks, which do not divide " + std::to_string(model_.seq) + " tokens" +
                    allowed([&](int d) { return d == 1 || model_.seq % (k * d) == 0; }));
  if (pin.cp && *pin.cp > 1 && opts_.cost.attention != AttentionKernel::kFlash)
    throw SpecError("--fix cp=" + std::to_string(*pin.cp) + " needs flash attention (ring attention is a fused kernel) but " +
                    (model_.dtype == "f32" ? "model '" + model_.name + "' is f32 (flash kernels run fp16/bf16 only); allowed: cp=1"
                                           : std::string("--attention unfused was given; allowed: cp=1, or --attention flash")));
  // An sp pin the engine's tensor parallelism cannot run leaves it tp = 1 (pinned tp > 1: bad input).
  if (const std::string why = sequence_parallel_conflict(); !why.empty()) {
    if (pin.tp && *pin.tp > 1)
      throw SpecError("--fix sp=" + std::string(*pin.sequence_parallel ? "1" : "0") + " cannot run on " +
                      to_string(opts_.engine) + " with tp=" + std::to_string(*pin.tp) + " (" + why +
                      "); allowed: tp=1, or sp=" + (*pin.sequence_parallel ? "0" : "1"));
    s.tps = {1};
  }
  if (pin.schedule && !engine_runs_schedule(*pin.schedule))
    throw SpecError("--fix schedule=" + to_string(*pin.schedule) + " cannot run on " + to_string(opts_.engine) +
                    "; allowed: " + engine_schedule_names());
  // Context parallelism pays for long sequences, searched from long_sequence tokens on; and where the batch is too
  // small for the cluster (fewer than batch_starved_sequences per tensor-parallel group of the largest tp), since
  // splitting each sequence is then the way to use the GPUs without a pipeline starved of micro-batches.
  // There only degrees below twice the shortfall (the factor by which the batch falls short) that leave each GPU
  // at least starved_cp_min_tokens of the sequence.
  s.cps = {1};
  if (pin.cp) s.cps = {*pin.cp};
  else if (engine_runs_context_parallel(opts_.engine) && opts_.cost.attention == AttentionKernel::kFlash)
    s.cps = context_parallel_degrees();
  return s;
}

std::vector<int> Planner::context_parallel_degrees() const {
  std::vector<int> cps = {1};
  const double shortfall = opts_.batch_starved_sequences / sequences_per_tensor_group();
  if (model_.seq >= opts_.long_sequence) {
    cps = opts_.context_parallel;
  } else if (shortfall > 1) {
    for (int c : opts_.context_parallel)
      if (c > 1 && c < 2 * shortfall && model_.seq / c >= opts_.starved_cp_min_tokens) cps.push_back(c);
  }
  return cps;
}

void Planner::refine_submeshes(std::optional<Plan>& best, const std::vector<ParallelConfig>& candidates, int limit) {
  // Per-stage shapes keep each stage's GPUs and the pipeline's micro-batch: configurations that differ only in
  // how tp x dp splits them give the same search, so each (pp, cp, mbs x dp, schedule, recompute, zero, ep) once.
  std::vector<std::string> seen;
  for (const ParallelConfig& c : candidates) {
    const std::string key = std::to_string(c.pp) + "|" + std::to_string(c.cp) + "|" +
                            std::to_string(static_cast<int64_t>(c.micro_batch) * c.dp) + "|" + to_string(c.schedule) +
                            "|" + to_string(c.recompute) + "|" + std::to_string(c.zero) + "|" + std::to_string(c.ep);
    if (c.pp < 2 || std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    if (static_cast<int>(seen.size()) > limit) break;
    std::optional<Plan> cand = evaluate_submeshes(c);
    if (cand && !cand->uniform_stages && (!best || cand->iteration_time_s < best->iteration_time_s * (1 - 1e-9)))
      best = std::move(cand);
  }
}

void Planner::refine_unequal(std::optional<Plan>& best, const std::vector<ParallelConfig>& candidates, int limit) {
  std::vector<std::string> seen;
  for (const ParallelConfig& c : candidates) {
    const std::string key = std::to_string(c.tp) + "|" + std::to_string(c.pp) + "|" + std::to_string(c.cp) + "|" +
                            std::to_string(static_cast<int64_t>(c.micro_batch) * c.dp) + "|" + to_string(c.schedule) +
                            "|" + to_string(c.recompute) + "|" + std::to_string(c.zero) + "|" + std::to_string(c.ep);
    if (c.pp < 2 || std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    if (static_cast<int>(seen.size()) > limit) break;
    std::optional<Plan> cand = evaluate_unequal(c);
    if (!cand) continue;
    bool unequal = false;
    for (const StagePlan& sp : cand->stages) unequal = unequal || sp.gpus != cand->stages[0].gpus;
    if (unequal && (!best || cand->iteration_time_s < best->iteration_time_s * (1 - 1e-9))) best = std::move(cand);
  }
}

std::string Planner::batch_divisibility_error(const Search& space) const {
  const int N = cluster_.total_gpus(), L = static_cast<int>(model_.layers.size());
  const int64_t B = opts_.global_batch;
  // The smallest dp any (tp, cp, pp) of the search leaves, and whether some dp divides the batch.
  int min_dp = 0, best_tp = 0, best_cp = 0, best_pp = 0;
  for (int tp : space.tps)
    for (int cp : space.cps) {
      if ((N / tp) % cp != 0 || model_.seq % cp != 0) continue;
      for (int pp : divisors(N / tp / cp)) {
        const int dp = N / tp / cp / pp;
        if (pp > L) continue;
        if (B % dp == 0) return "";
        if (min_dp == 0 || dp < min_dp) min_dp = dp, best_tp = tp, best_cp = cp, best_pp = pp;
      }
    }
  if (min_dp == 0) return "";
  // A larger cp that leaves a dp the batch divides (context parallelism runs flash attention only, on an engine
  // that has it).
  std::string cp_hint;
  if (opts_.cost.attention == AttentionKernel::kFlash && engine_runs_context_parallel(opts_.engine))
    for (int cp : divisors(N)) {
      if (cp <= best_cp || model_.seq % (engine_cp_chunks(opts_.engine) * cp) != 0) continue;
      bool works = false;
      for (int tp : space.tps) {
        if (N % (tp * cp) != 0) continue;
        for (int pp : divisors(N / (tp * cp))) works = works || (pp <= L && B % (N / (tp * cp * pp)) == 0);
      }
      if (works) {
        cp_hint = ", or --fix cp=" + std::to_string(cp) + " (each GPU then keeps " + std::to_string(model_.seq / cp) +
                  " tokens of a sequence)";
        break;
      }
    }
  return "model '" + model_.name + "' cannot be split over the " + std::to_string(N) + " GPUs of " + cluster_.name +
         ": the global batch of " + std::to_string(B) + " sequences divides by no data-parallel degree the search "
         "reaches (the smallest is dp=" + std::to_string(min_dp) + ", at tp=" + std::to_string(best_tp) + " cp=" +
         std::to_string(best_cp) + " pp=" + std::to_string(best_pp) + "); allowed: a global batch that is a multiple "
         "of " + std::to_string(min_dp) + cp_hint;
}

Plan Planner::plan() {
  const auto t0 = std::chrono::steady_clock::now();
  if (static_cast<double>(cluster_.memory_per_gpu_bytes) <= opts_.memory_reserve_bytes) {
    char text[256];
    std::snprintf(text, sizeof text, "cluster '%s': %.1f GB per GPU leaves nothing after the %.1f GB kept free "
                  "(CUDA context, workspaces); allowed: more than %.1f GB", cluster_.name.c_str(),
                  static_cast<double>(cluster_.memory_per_gpu_bytes) / 1e9, opts_.memory_reserve_bytes / 1e9,
                  opts_.memory_reserve_bytes / 1e9);
    throw SpecError(text);
  }
  const int N = cluster_.total_gpus();
  const int L = static_cast<int>(model_.layers.size());
  const PlanPins& pin = opts_.pins;
  const Search space = search_space();
  std::optional<Plan> best;
  std::vector<std::pair<double, ParallelConfig>> ranked;  // uniform 1F1B/GPipe plans, for the submesh search
  std::vector<std::pair<double, ParallelConfig>> unbalanced;  // 1F1B/GPipe plans whose stage times differ
  std::vector<ParallelConfig> too_big;  // 1F1B/GPipe configurations no uniform partition fits: a shape per stage may
  // Why nothing fits, for the error: a configuration that was valid but did not fit (memory) says more than one the
  // structural checks refused (e.g. interleaved with pp 1), so the last of those is reported only when no other.
  std::string fit_reason, structural_reason = "no configuration was tried";
  // An interleaved config's refusal (pp 1, too few micro-batches) is reported only when no 1F1B/GPipe config was
  // refused: the message should name what stopped the configuration asked for, not a schedule it did not ask for.
  bool structural_from_plain = false;
  int64_t tried = 0;
  auto consider = [&](std::optional<Plan> cand) {
    if (!cand) return;
    if (cand->config.schedule != Schedule::kInterleaved) {
      ranked.push_back({cand->iteration_time_s, cand->config});
      double sum = 0, mx = 0;
      for (const StagePlan& sp : cand->stages) sum += sp.time_per_micro_batch_s, mx = std::max(mx, sp.time_per_micro_batch_s);
      if (cand->stages.size() > 1 && mx * cand->stages.size() > sum * (1 + opts_.unequal_min_imbalance))
        unbalanced.push_back({cand->iteration_time_s, cand->config});
    }
    if (!best || cand->iteration_time_s < best->iteration_time_s * (1 - 1e-12) ||
        (cand->iteration_time_s <= best->iteration_time_s * (1 + 1e-12) &&
         cand->peak_memory_bytes < best->peak_memory_bytes))
      best = std::move(cand);
  };
  auto try_config = [&](const ParallelConfig& c) {
    ++tried;
    const bool interleaved = c.schedule != Schedule::k1F1B && c.schedule != Schedule::kGpipe;
    std::string why;
    consider(evaluate_impl(c, interleaved, best ? best->iteration_time_s : kInf, &why));
    if (!why.empty() && why != "cannot beat the best plan found") {
      ParallelConfig probe = c;  // check_config fills its micro-batch count, which the message shows
      bool probe_uniform = interleaved;
      const bool fits_structurally = check_config(probe, probe_uniform).empty();  // before describe(probe)
      const bool plain = c.schedule != Schedule::kInterleaved;
      if (fits_structurally) {
        fit_reason = describe(probe) + ": " + why;
      } else if (plain || !structural_from_plain) {
        structural_reason = describe(probe) + ": " + why;
        structural_from_plain = structural_from_plain || plain;
      }
    }
    if (!interleaved && why.rfind("no stage partition fits", 0) == 0) too_big.push_back(c);
    // Hand-written configurations split layers evenly: try that too, so the plan is never worse.
    if (!interleaved) {
      why.clear();
      consider(evaluate_impl(c, true, best ? best->iteration_time_s : kInf, &why));
    }
  };
  for (int tp : space.tps)
    for (int cp : space.cps) {
      if ((N / tp) % cp != 0 || model_.seq % cp != 0) continue;
      for (int pp : divisors(N / tp / cp)) {
        const int dp = N / tp / cp / pp;
        if ((pin.pp && pp != *pin.pp) || pp > L || (pin.dp && dp != *pin.dp)) continue;
        // Expert parallelism: every ep that divides the experts and dp x cp (ep = 1 for dense models).
        const std::vector<int> eps = pin.ep ? std::vector<int>{*pin.ep} : expert_parallel_degrees(model_experts_, dp * cp);
        for (int ep : eps)
          for (int mbs : space.mbss)
            for (auto [sched, v] : space.schedules)
              for (Recompute rc : space.recomputes)
                for (int zero : space.zeros) {
                  ParallelConfig c;
                  c.tp = tp, c.cp = cp, c.pp = pp, c.dp = dp, c.ep = ep, c.micro_batch = mbs;
                  c.schedule = sched, c.virtual_stages = v, c.recompute = rc, c.zero = zero;
                  try_config(c);
                }
      }
    }
  // Per-stage submeshes: pinned tp or dp means every stage runs them.
  if (best && opts_.per_stage_submeshes && !pin.tp && !pin.dp) {
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ParallelConfig> candidates;
    for (const auto& r : ranked) candidates.push_back(r.second);
    refine_submeshes(best, candidates, opts_.submesh_candidates);

    refine_submeshes(best, too_big, opts_.submesh_candidates / 2);
  }
  // Unequal GPU counts per stage: only where a uniform plan's stages are unbalanced or nothing uniform fits.
  if (opts_.per_stage_submeshes && opts_.unequal_stage_gpus && !pin.tp && !pin.dp && !pin.pp &&
      (!unbalanced.empty() || !too_big.empty())) {
    std::stable_sort(unbalanced.begin(), unbalanced.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ParallelConfig> candidates;
    for (const auto& r : unbalanced) candidates.push_back(r.second);
    refine_unequal(best, candidates, opts_.submesh_candidates);
    refine_unequal(best, too_big, opts_.submesh_candidates / 2);
  }
  if (!best) {
    const std::string& last_reason = fit_reason.empty() ? structural_reason : fit_reason;
    if (!pin.empty())
      throw SpecError("no configuration with --fix " + to_string(pin) + " is feasible on " + cluster_.name + " (" +
                      last_reason + ")");
    // Nothing got past the batch's divisibility: say so (it named one arbitrary configuration's "not a multiple of
    // mbs*dp").
    if (fit_reason.empty())
      if (std::string why = batch_divisibility_error(space); !why.empty()) throw SpecError(why);
    throw SpecError("model '" + model_.name + "' cannot be split over the " + std::to_string(N) + " GPUs of " +
                    cluster_.name + " (" + last_reason + ")");
  }
  const int max_tp = max_tensor_parallel();
  if (const double per_group = sequences_per_tensor_group(); per_group < opts_.batch_starved_sequences) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "the global batch of %lld sequences gives %.3g per tensor-parallel group of %d GPUs on %d GPUs "
                  "(fewer than %.0f): the plan splits sequences (cp) or runs pipelines with few micro-batches; "
                  "a global batch of %lld or more would keep the GPUs busier",
                  static_cast<long long>(opts_.global_batch), per_group, max_tp, N, opts_.batch_starved_sequences,
                  static_cast<long long>(std::ceil(opts_.batch_starved_sequences * N / max_tp)));
    best->notes.push_back(text);
  }
  // Data parallelism divides both the batch and the GPUs: a batch that shares few divisors with the GPU count
  // (a prime one) leaves the rest of the GPUs to pipelines and tensor parallelism whatever they cost.
  const int64_t common = std::gcd(opts_.global_batch, static_cast<int64_t>(N));
  if (common * max_tp < N && N > 1) {
    const int64_t nearest = std::max<int64_t>(N, std::llround(static_cast<double>(opts_.global_batch) / N) * N);
    char text[512];
    std::snprintf(text, sizeof text,
                  "the global batch of %lld sequences and the %d GPUs have %lld as their greatest common divisor: "
                  "data parallelism must divide both, so dp is at most %lld and pipelines or tensor parallelism "
                  "take the other GPUs (this plan: dp %d); a global batch of %lld, a multiple of %d, lets dp take "
                  "any share of them",
                  static_cast<long long>(opts_.global_batch), N, static_cast<long long>(common),
                  static_cast<long long>(common), best->config.dp, static_cast<long long>(nearest), N);
    best->notes.push_back(text);
  }
  if (const std::string why = sequence_parallel_conflict(); !why.empty())
    best->notes.push_back("--fix sp=" + std::string(*pin.sequence_parallel ? "1" : "0") + " on " +
                          to_string(opts_.engine) + ": " + why + ", so the plan keeps tp = 1");
  best->configs_evaluated = tried;
  best->ilp_solves = ilp_solves_;
  best->submesh_dp_cells = submesh_cells_;
  best->planning_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return *best;
}

}  // namespace tuner::parallel
