#include "search/parallel/planner.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>

#include "search/parallel/collective_cost.h"
#include "search/parallel/expert_parallel.h"
#include "search/parallel/stage_dp.h"

namespace tuner::parallel {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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
  if (c.zero <= 1) {
    const double sync =
        c.zero == 0 ? all_reduce_s(cluster_, dp_group, dense_bytes) +
                          (expert_bytes > 0 ? all_reduce_s(cluster_, expert_dp_group, expert_bytes) : 0)
                    : rs(dense_bytes, expert_bytes);
    exposed = std::max(sync * bucket_share, sync - last_bwd);
  } else {
    exposed = rs(dense_bytes, expert_bytes) * bucket_share;
  }
  // ZeRO-1/2: the updated weights are all-gathered after the step, not overlapped.
  if (c.zero == 1 || c.zero == 2) exposed += rs(dense_bytes, expert_bytes);  // all-gather: the same bytes
  return exposed;
}

void check_global_batch(int64_t global_batch) {
  if (global_batch < 1 || global_batch > kMaxGlobalBatch)
    throw SpecError("--global-batch " + std::to_string(global_batch) + " is out of range; allowed: 1.." +
                    std::to_string(kMaxGlobalBatch) + " sequences");
}

bool PlanPins::empty() const {
  return !tp && !pp && !dp && !cp && !ep && !micro_batch && !zero && !virtual_stages && !schedule && !recompute;
}

PlanPins parse_pins(const std::string& text) {
  PlanPins p;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw SpecError("--fix item '" + item + "' is not key=value");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
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
    } else {
      throw SpecError("--fix key '" + k + "' is unknown; allowed: tp, pp, dp, cp, ep, mbs, schedule, v, recompute, zero");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (p.virtual_stages && *p.virtual_stages > 1 && p.schedule && *p.schedule != Schedule::kInterleaved)
    throw SpecError("--fix v=" + std::to_string(*p.virtual_stages) + " needs schedule=interleaved");
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
  return s;
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
  opts_.cost.attention = opts_.attention ? *opts_.attention
                                         : (model_.flash_attention ? AttentionKernel::kFlash : AttentionKernel::kUnfused);
  costs_ = std::make_unique<OpCostModel>(cluster_.gpu, opts_.cost, opts_.lookup);
  for (size_t l = 0; l < model_.layers.size(); ++l) {
    const std::string sig = model_.layers[l].signature();
    auto it = std::find(signatures_.begin(), signatures_.end(), sig);
    if (it == signatures_.end()) {
      signatures_.push_back(sig);
      sig_example_.push_back(static_cast<int>(l));
      layer_sig_.push_back(static_cast<int>(signatures_.size() - 1));
    } else {
      layer_sig_.push_back(static_cast<int>(it - signatures_.begin()));
    }
  }
  check_global_batch(opts_.global_batch);
  model_params_ = model_params(model_);
  model_flops_ = model_forward_flops(model_);
  model_experts_ = model_experts(model_);
  model_expert_params_ = model_expert_params(model_);
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
  ++ilp_solves_;
  // Under context parallelism each GPU holds seq / cp tokens of every sequence.
  auto m = by_cp_.find(cp);
  if (m == by_cp_.end()) {
    ModelGraph local = model_;
    local.seq = model_.seq / cp;
    m = by_cp_.emplace(cp, std::move(local)).first;
  }
  LayerPlan lp = plan_layer_sharding(m->second.layers[sig_example_[sig]], m->second, cluster_, tensor_mesh(cluster_, tp),
                                     mbs, *costs_, budget, state_bytes_per_param, cp, ep);
  return cache_.emplace(key, std::move(lp)).first->second;
}

std::optional<Plan> Planner::evaluate(const ParallelConfig& c, bool uniform, std::string* why) {
  return evaluate_impl(c, uniform, kInf, why);
}

std::optional<Plan> Planner::evaluate_impl(const ParallelConfig& cfg, bool uniform, double best_time,
                                           std::string* why) {
  auto reject = [&](const std::string& reason) -> std::optional<Plan> {
    if (why) *why = reason;
    return std::nullopt;
  };
  ++evaluated_;
  ParallelConfig c = cfg;
  const int N = cluster_.total_gpus(), gpn = cluster_.gpus_per_node;
  const int L = static_cast<int>(model_.layers.size());
  if (c.tp < 1 || c.pp < 1 || c.dp < 1 || c.cp < 1 || c.ep < 1 || c.micro_batch < 1)
    return reject("degrees must be positive");
  if (const std::string v = expert_parallel_violation(c.ep, model_experts_, c.dp * c.cp); !v.empty()) return reject(v);
  if (model_.seq % c.cp != 0)
    return reject("cp=" + std::to_string(c.cp) + " does not divide the sequence of " + std::to_string(model_.seq));
  if (static_cast<int64_t>(c.tp) * c.cp * c.pp * c.dp != N)
    return reject("tp*cp*pp*dp = " + std::to_string(static_cast<int64_t>(c.tp) * c.cp * c.pp * c.dp) + " is not the " +
                  std::to_string(N) + " GPUs of the cluster");
  if (c.tp > gpn && c.tp % gpn != 0)
    return reject("tp=" + std::to_string(c.tp) + " spans nodes but is not a multiple of " + std::to_string(gpn));
  if (c.pp > L) return reject("pp=" + std::to_string(c.pp) + " exceeds the " + std::to_string(L) + " layers");
  if (opts_.global_batch % (static_cast<int64_t>(c.micro_batch) * c.dp) != 0)
    return reject("global batch " + std::to_string(opts_.global_batch) + " is not a multiple of mbs*dp = " +
                  std::to_string(static_cast<int64_t>(c.micro_batch) * c.dp));
  c.num_micro_batches = static_cast<int>(opts_.global_batch / (static_cast<int64_t>(c.micro_batch) * c.dp));
  const int m = c.num_micro_batches, p = c.pp;
  int v = 1;
  if (c.schedule == Schedule::kInterleaved) {
    v = c.virtual_stages;
    const int blocks = model_.transformer_layers > 0 ? model_.transformer_layers : L;
    if (v < 2) return reject("interleaved needs v >= 2 chunks per device");
    if (p < 2) return reject("interleaved needs pp >= 2");
    if (blocks % (p * v) != 0)
      return reject(std::to_string(blocks) + " layers do not split into pp*v = " + std::to_string(p * v) + " chunks");
    if (m % p != 0) return reject("interleaved needs micro-batches (" + std::to_string(m) + ") divisible by pp");
    uniform = true;
  } else {
    c.virtual_stages = 1;
  }
  const int dsize = dtype_bytes(model_.dtype);
  const StateBytes bytes = state_bytes(opts_.engine);
  {
    const std::vector<int> stages = engine_zero_stages(opts_.engine);
    if (std::find(stages.begin(), stages.end(), c.zero) == stages.end())
      return reject("zero=" + std::to_string(c.zero) + " is not a ZeRO stage " + to_string(opts_.engine) + " runs");
    if (opts_.engine == Engine::kDeepSpeed && c.pp > 1 && c.zero >= 2)
      return reject("DeepSpeed's pipeline engine runs ZeRO 0 or 1 only");
  }
  const double usable = static_cast<double>(cluster_.memory_per_gpu_bytes) - opts_.memory_reserve_bytes;

  // Data-parallel group: replicas are tp ranks apart, so a node holds gpn / tp of them.
  // Gradients are reduced (and ZeRO-sharded) over dp x cp: every context-parallel rank holds all the weights.
  const int dpc = c.dp * c.cp;
  const CommGroup dp_group{dpc, std::clamp(gpn / c.tp, 1, dpc)};
  const bool stage_cross_node = static_cast<int64_t>(c.tp) * c.cp * c.dp >= gpn;
  // Expert gradients and ZeRO shards: over the expert data-parallel group (dp x cp / ep).
  const int edp = dpc / c.ep;
  const CommGroup edp_group = expert_data_group(cluster_, c.tp, c.ep, dpc);
  auto states = [&](double p_all, double p_expert) {
    MemoryBreakdown mb = model_state_bytes(p_all - p_expert, c.zero, dpc, bytes);
    const MemoryBreakdown me = model_state_bytes(p_expert, c.zero, edp, bytes);
    mb.weights += me.weights;
    mb.gradients += me.gradients;
    mb.optimizer += me.optimizer;
    return mb;
  };
  const int64_t seq = model_.seq / c.cp;  // tokens per GPU

  // Quick memory bound: the model states can never be smaller than all weights split by tp and pp.
  {
    const double split = static_cast<double>(c.tp) * c.pp;
    const double min_expert = static_cast<double>(model_expert_params_) / (split * c.ep);
    const double min_params = static_cast<double>(model_params_ - model_expert_params_) / split + min_expert;
    if (states(min_params, min_expert).total() > usable)
      return reject("model states alone need more than the " + std::to_string(usable / 1e9) + " GB per GPU");
  }

  // Layer plans: unconstrained first; if no partition fits, re-solve with a per-layer memory cap.
  std::vector<const LayerPlan*> lp(L);
  std::vector<double> t(L), params(L), eparams(L), act(L), full_act(L), bwd(L);
  std::vector<double> comp(L), mem(L), comm(L), epc(L), rec(L), zex(L);  // the terms of t, per micro-batch
  bool sp_any = false;

  auto fill_layers = [&](double budget) -> bool {
    // One sharding per distinct layer: identical layers share it.
    const double state_bytes_pp = model_state_bytes(1, c.zero, dpc, bytes).total();
    std::vector<const LayerPlan*> by_sig(signatures_.size());
    for (size_t sig = 0; sig < signatures_.size(); ++sig) {
      by_sig[sig] = &layer_plan(sig, c.tp, c.cp, c.ep, c.micro_batch, budget, state_bytes_pp);
      if (by_sig[sig]->ops.empty()) return false;
    }
    for (int l = 0; l < L; ++l) lp[l] = by_sig[layer_sig_[l]];
    sp_any = false;
    for (int l = 0; l < L; ++l) {
      const Layer& layer = model_.layers[l];
      const LayerPlan& x = *lp[l];
      double recompute = 0;
      if (c.recompute == Recompute::kFull) recompute = x.fwd_s;
      else if (c.recompute == Recompute::kSelective) recompute = x.attention_fwd_s;
      double tl = x.fwd_s + x.bwd_s + recompute;
      // ZeRO-2 reduce-scatters gradients every micro-batch; ZeRO-3 also all-gathers weights forward and backward.
      const double w_bytes = (x.params_per_device - x.expert_params_per_device) * dsize;
      const double e_bytes = x.expert_params_per_device * dsize;
      double zc = 0;
      if (c.zero >= 2) zc += reduce_scatter_s(cluster_, dp_group, w_bytes) + reduce_scatter_s(cluster_, edp_group, e_bytes);
      if (c.zero >= 3) zc += 2 * (all_gather_s(cluster_, dp_group, w_bytes) + all_gather_s(cluster_, edp_group, e_bytes));
      comp[l] = x.compute_s;
      mem[l] = x.memory_bound_s;
      comm[l] = x.comm_s;
      epc[l] = x.ep_comm_s;
      rec[l] = recompute;
      zex[l] = std::max(0.0, zc - tl);  // overlapped with the layer's own work: only the excess counts
      t[l] = tl + zex[l];
      bwd[l] = x.bwd_s;
      params[l] = x.params_per_device;
      eparams[l] = x.expert_params_per_device;
      sp_any = sp_any || x.sequence_parallel;
      if (layer.kind == LayerKind::kTransformer) {
        act[l] = transformer_activation_bytes(seq, c.micro_batch, layer.hidden, layer.heads, c.tp,
                                              x.sequence_parallel, c.recompute);
        full_act[l] = transformer_activation_bytes(seq, c.micro_batch, layer.hidden, layer.heads, c.tp,
                                                   x.sequence_parallel, Recompute::kNone);
      } else {
        full_act[l] = x.activation_bytes;
        const double input = static_cast<double>(seq) * c.micro_batch * model_.hidden * dsize /
                             (x.sequence_parallel ? c.tp : 1);
        act[l] = c.recompute == Recompute::kFull ? std::min(input, x.activation_bytes) : x.activation_bytes;
      }
    }
    return true;
  };

  std::vector<double> pre_t(L + 1, 0), pre_p(L + 1, 0), pre_e(L + 1, 0), pre_a(L + 1, 0);
  std::vector<std::vector<double>> max_full;  // max_full[k][i] = max of full_act[i, i + 2^k)
  auto prefixes = [&]() {
    for (int l = 0; l < L; ++l) {
      pre_t[l + 1] = pre_t[l] + t[l];
      pre_p[l + 1] = pre_p[l] + params[l];
      pre_e[l + 1] = pre_e[l] + eparams[l];
      pre_a[l + 1] = pre_a[l] + act[l];
    }
    max_full.assign(1, full_act);
    for (int k = 1; (1 << k) <= L; ++k) {
      max_full.emplace_back(L, 0.0);
      for (int i = 0; i + (1 << k) <= L; ++i)
        max_full[k][i] = std::max(max_full[k - 1][i], max_full[k - 1][i + (1 << (k - 1))]);
    }
  };
  auto stage_memory = [&](int stage, int i, int j) {
    MemoryBreakdown mb = states(pre_p[j] - pre_p[i], pre_e[j] - pre_e[i]);
    mb.activations = in_flight_micro_batches(c.schedule, p, stage, m, v) * (pre_a[j] - pre_a[i]);
    if (c.recompute == Recompute::kFull) {
      // The layer being recomputed holds its full activations: the largest in [i, j), from a sparse table.
      int k = 0;
      while ((2 << k) <= j - i) ++k;
      mb.activations += std::max(max_full[k][i], max_full[k][j - (1 << k)]);
    }
    return mb;
  };

  // p2p per stage boundary: activation forward + gradient backward, b*s*h/tp (scatter-gather), per chunk.
  const double p2p_bytes = static_cast<double>(c.micro_batch) * seq * model_.hidden * dsize / c.tp;
  const double p2p = p > 1 ? 2 * v * p2p_s(cluster_, stage_cross_node, p2p_bytes) : 0;

  StageDpRequest req;
  req.stages = p;
  req.micro_batches = m * v;  // interleaving: (1/v)[sum t + (m v - 1) t_max]
  req.stage_extra.assign(p, p2p);
  req.stage_extra[p - 1] = 0;
  req.fits = [&](int stage, int i, int j) { return stage_memory(stage, i, j).total() <= usable; };

  std::vector<int> starts;
  for (int attempt = 0; attempt < 2 && starts.empty(); ++attempt) {
    double budget = kInf;
    if (attempt == 1) {
      // The fastest sharding does not fit: cap each layer's ILP memory at its share of the device.
      const int per_stage = (L + p - 1) / p;
      budget = usable / per_stage;
    }
    if (!fill_layers(budget)) return reject("no layer sharding fits the per-layer memory share");
    prefixes();
    req.layer_cost = t;
    // Lower bound: the pipeline is at least m * (all work / p); skip configurations that cannot win.
    if (attempt == 0 && m * pre_t[L] / p >= best_time) return reject("cannot beat the best plan found");
    if (uniform) {
      starts = uniform_partition(model_, p);
      if (starts.empty()) return reject("pp=" + std::to_string(p) + " exceeds the layers to split");
      if (!std::isfinite(pipeline_objective(req, starts))) starts.clear();
    } else {
      StageDpResult r = solve_stage_dp(req);
      if (r.feasible) starts = r.starts;
    }
    if (!starts.empty() || attempt == 1) break;
    // A capped re-solve can only help when some layer keeps weights it could split.
    bool lean = true;
    for (int l = 0; l < L && lean; ++l)
      lean = lp[l]->params_per_device <= 1.01 * static_cast<double>(layer_params(model_.layers[l])) / c.tp + 1;
    if (lean) break;
  }
  if (starts.empty()) return reject("no stage partition fits in " + std::to_string(usable / 1e9) + " GB per GPU");

  Plan plan;
  plan.config = c;
  plan.partition = uniform ? "uniform" : "dp";
  plan.sequence_parallel = sp_any && c.tp > 1;
  plan.attention = opts_.cost.attention;
  plan.memory_capacity_bytes = usable;
  double sum_t = 0, t_max = 0, dp_exposed = 0, opt = 0;
  std::vector<double> stage_dp(p, 0), stage_opt(p, 0);
  for (int s = 0; s < p; ++s) {
    const int i = starts[s], j = starts[s + 1];
    StagePlan sp;
    sp.first_layer = i;
    sp.end_layer = j;
    sp.mesh = tensor_mesh(cluster_, c.tp);
    sp.time_per_micro_batch_s = pre_t[j] - pre_t[i] + req.stage_extra[s];
    sp.params_per_device = pre_p[j] - pre_p[i];
    sp.memory = stage_memory(s, i, j);
    TimeBreakdown& tb = sp.time;
    for (int l = i; l < j; ++l) {
      tb.compute_s += m * comp[l];
      tb.memory_bound_s += m * mem[l];
      tb.tp_comm_s += m * comm[l];
      tb.ep_comm_s += m * epc[l];
      tb.recompute_s += m * rec[l];
      tb.zero_comm_s += m * zex[l];
    }
    tb.pp_p2p_s = m * req.stage_extra[s];
    for (int l = i; l < j; ++l) {
      if (!sp.sharding.empty() && sp.sharding.back().layer == model_.layers[l].name &&
          layer_sig_[l] == layer_sig_[l - 1]) {
        ++sp.sharding.back().count;
        continue;
      }
      sp.sharding.push_back({model_.layers[l].name, 1, lp[l]->ops});
      plan.ilp_optimal = plan.ilp_optimal && lp[l]->optimal;
      plan.kernel_estimates += lp[l]->parts;
      plan.tuned_estimates += lp[l]->tuned_parts;
    }
    sum_t += sp.time_per_micro_batch_s;
    t_max = std::max(t_max, sp.time_per_micro_batch_s);
    double last_bwd = 0;
    for (int l = i; l < j; ++l) last_bwd += bwd[l];
    const double stage_experts = pre_e[j] - pre_e[i];
    stage_dp[s] = dp_exposed_s(c, dp_group, sp.params_per_device * bytes.gradient_reduce, last_bwd, j - i,
                               stage_experts * bytes.gradient_reduce, edp_group);
    dp_exposed = std::max(dp_exposed, stage_dp[s]);
    // Adam step: fp32 master, momentum, variance read and written, bf16 grads read, weights written.
    const double local = (sp.params_per_device - stage_experts) / (c.zero >= 1 ? dpc : 1) +
                         stage_experts / (c.zero >= 1 ? edp : 1);
    stage_opt[s] = costs_->memory_bound(local * (12 * 2 + 2 + 2)).seconds;
    opt = std::max(opt, stage_opt[s]);
    if (sp.memory.total() > plan.peak_memory_bytes) {
      plan.peak_memory_bytes = sp.memory.total();
      plan.peak_stage = s;
    }
    plan.stages.push_back(std::move(sp));
  }
  plan.pipeline_s = m * t_max + (sum_t - t_max) / v;
  plan.bubble_fraction = plan.pipeline_s > 0 ? (plan.pipeline_s - m * sum_t / p) / plan.pipeline_s : 0;
  plan.dp_exposed_s = dp_exposed;
  plan.optimizer_s = opt;
  plan.iteration_time_s = plan.pipeline_s + dp_exposed + opt;
  // Each stage idles for what the schedule leaves it and waits for the slowest stage's reduction and step.
  double busiest = -1;
  for (int s = 0; s < p; ++s) {
    TimeBreakdown& tb = plan.stages[s].time;
    tb.pp_bubble_s = plan.pipeline_s - m * plan.stages[s].time_per_micro_batch_s;
    tb.dp_comm_s = stage_dp[s];
    tb.optimizer_s = stage_opt[s];
    tb.wait_s = (dp_exposed - stage_dp[s]) + (opt - stage_opt[s]);
    if (plan.stages[s].time_per_micro_batch_s > busiest) {
      busiest = plan.stages[s].time_per_micro_batch_s;
      plan.critical_stage = s;
    }
  }
  plan.model_flops_per_iteration = 3 * model_flops_ * opts_.global_batch;
  plan.tokens_per_s = static_cast<double>(opts_.global_batch) * model_.seq / plan.iteration_time_s;
  plan.tflops_per_gpu = plan.model_flops_per_iteration / plan.iteration_time_s / N / 1e12;
  plan.mfu = plan.tflops_per_gpu * 1e12 / costs_->peak_flops(model_.dtype);
  return plan;
}

Plan Planner::plan() {
  const auto t0 = std::chrono::steady_clock::now();
  const int N = cluster_.total_gpus(), gpn = cluster_.gpus_per_node;
  const int L = static_cast<int>(model_.layers.size());
  const PlanPins& pin = opts_.pins;
  const int max_tp = opts_.max_tp > 0 ? opts_.max_tp : gpn;

  std::vector<int> tps;
  for (int d : divisors(N))
    if (pin.tp ? d == *pin.tp : d <= max_tp) tps.push_back(d);
  if (pin.tp && tps.empty())
    throw SpecError("--fix tp=" + std::to_string(*pin.tp) + " does not divide the " + std::to_string(N) + " GPUs");
  if (pin.cp && (model_.seq % *pin.cp != 0 || N % *pin.cp != 0))
    throw SpecError("--fix cp=" + std::to_string(*pin.cp) + " must divide the sequence (" + std::to_string(model_.seq) +
                    ") and the " + std::to_string(N) + " GPUs");
  // Expert parallelism: MoE models search every ep that divides their experts and dp x cp; dense ones run ep = 1.
  if (pin.ep && *pin.ep > 1) {
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
  std::vector<int> mbss = opts_.micro_batch_sizes;
  if (pin.micro_batch) mbss = {*pin.micro_batch};
  std::vector<std::pair<Schedule, int>> schedules;
  if (pin.schedule) {
    if (*pin.schedule == Schedule::kInterleaved) {
      if (pin.virtual_stages) schedules.push_back({Schedule::kInterleaved, *pin.virtual_stages});
      else
        for (int v : opts_.virtual_stages) schedules.push_back({Schedule::kInterleaved, v});
    } else {
      schedules.push_back({*pin.schedule, 1});
    }
  } else if (pin.virtual_stages && *pin.virtual_stages > 1) {
    schedules.push_back({Schedule::kInterleaved, *pin.virtual_stages});
  } else {
    schedules.push_back({Schedule::k1F1B, 1});
    for (int v : opts_.virtual_stages) schedules.push_back({Schedule::kInterleaved, v});
  }
  std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  if (pin.recompute) recomputes = {*pin.recompute};
  std::vector<int> zeros = engine_zero_stages(opts_.engine);
  if (pin.zero) {
    if (std::find(zeros.begin(), zeros.end(), *pin.zero) == zeros.end()) {
      std::string allowed;
      for (int z : zeros) allowed += (allowed.empty() ? "" : ", ") + std::to_string(z);
      throw SpecError("--fix zero=" + std::to_string(*pin.zero) + " cannot run on " + to_string(opts_.engine) +
                      "; allowed: " + allowed);
    }
    zeros = {*pin.zero};
  }

  std::optional<Plan> best;
  std::string last_reason = "no configuration was tried";
  int64_t tried = 0;
  auto consider = [&](std::optional<Plan> cand) {
    if (!cand) return;
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
    if (!why.empty() && why != "cannot beat the best plan found") last_reason = describe(c) + ": " + why;
    // Hand-written configurations split layers evenly: try that too, so the plan is never worse.
    if (!interleaved) {
      why.clear();
      consider(evaluate_impl(c, true, best ? best->iteration_time_s : kInf, &why));
    }
  };
  // Context parallelism only pays for long sequences: searched from long_sequence tokens on, else pinned.
  std::vector<int> cps = {1};
  if (pin.cp) cps = {*pin.cp};
  else if (model_.seq >= opts_.long_sequence) cps = opts_.context_parallel;
  for (int tp : tps)
    for (int cp : cps) {
      if ((N / tp) % cp != 0 || model_.seq % cp != 0) continue;
      for (int pp : divisors(N / tp / cp)) {
        if (pin.pp && pp != *pin.pp) continue;
        if (pp > L) continue;
        const int dp = N / tp / cp / pp;
        if (pin.dp && dp != *pin.dp) continue;
        std::vector<int> eps = expert_parallel_degrees(model_experts_, dp * cp);
        if (pin.ep) eps = {*pin.ep};
        for (int ep : eps)  // (the loops below keep their indentation, so the other branches' edits merge)
        for (int mbs : mbss)
          for (auto [sched, v] : schedules)
            for (Recompute rc : recomputes)
              for (int zero : zeros) {
                ParallelConfig c;
                c.tp = tp, c.cp = cp, c.pp = pp, c.dp = dp, c.ep = ep, c.micro_batch = mbs;
                c.schedule = sched, c.virtual_stages = v, c.recompute = rc, c.zero = zero;
                try_config(c);
              }
      }
    }
  if (!best) {
    if (!pin.empty())
      throw SpecError("no configuration with --fix " + to_string(pin) + " is feasible on " + cluster_.name + " (" +
                      last_reason + ")");
    throw SpecError("model '" + model_.name + "' cannot be split over the " + std::to_string(N) + " GPUs of " +
                    cluster_.name + " (" + last_reason + ")");
  }
  best->configs_evaluated = tried;
  best->ilp_solves = ilp_solves_;
  best->planning_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return *best;
}

}  // namespace tuner::parallel
