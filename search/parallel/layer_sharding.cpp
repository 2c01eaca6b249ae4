#include "search/parallel/layer_sharding.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "search/parallel/collective_cost.h"
#include "search/parallel/expert_parallel.h"

namespace tuner::parallel {

namespace {

/// One strategy of one op, with everything the request and the read-back need.
struct Strategy {
  std::string name;
  char choice[2] = {'R', 'R'};
  char in_layout[2] = {'R', 'R'};
  char out_layout[2] = {'R', 'R'};
  OpTime fwd;                   ///< Forward kernels.
  double fwd_comm_s = 0, bwd_comm_s = 0;
  double ep_comm_s = 0;         ///< Of fwd_comm_s + bwd_comm_s, the expert dispatch/combine all-to-alls.
  double cp_comm_s = 0;         ///< Of fwd_comm_s + bwd_comm_s, the context-parallel ring's K/V exchange.
  double params_local = 0;
  double expert_params_local = 0;  ///< Of params_local, expert weights (divided by ep).
  double out_bytes_local = 0;
};

struct OpStrategies {
  const Operator* op = nullptr;  ///< Null for the "input" pseudo-node.
  int64_t out_features = 0;
  std::vector<Strategy> list;
};

std::string letters_for(OpType t) {
  switch (t) {
    case OpType::kLinear: return "RBCK";
    case OpType::kAttention: return "RBH";
    case OpType::kLayerNorm: return "RBF";  // F: only a norm feeding attention (a per-head Q/K norm)
    case OpType::kElementwise: return "RBF";
    case OpType::kEmbedding: return "RBCV";
    case OpType::kCrossEntropy: return "RBF";
    case OpType::kMoeFfn: return "RBP";  // experts are divided over the ep group (its own degree), not the tensor mesh
  }
  return "R";
}

char in_layout_of(char c) {
  switch (c) {
    case 'B': return 'T';
    case 'K': case 'H': case 'F': return 'F';
    default: return 'R';
  }
}

char out_layout_of(OpType t, char c) {
  switch (c) {
    case 'B': return 'T';
    case 'H': case 'F': return 'F';
    case 'C': return t == OpType::kEmbedding || t == OpType::kLinear ? 'F' : 'R';
    default: return 'R';  // R, K and V (after their all-reduce), P
  }
}

bool splits_weights(char c) { return c == 'C' || c == 'K' || c == 'V' || c == 'P'; }

/// Factor by which a layout on the other mesh dimension shrinks the tensor a collective moves.
double other_split(const Mesh& m, int dim, char layout_other) {
  return layout_other == 'R' ? 1.0 : m.dim_size(1 - dim);
}

struct Ctx {
  const ModelGraph& g;
  const ClusterSpec& c;
  Mesh mesh;
  int b;
  OpCostModel& costs;
  int dsize;
  int cp = 1;  ///< Context-parallel degree; g.seq is the local share of the sequence.
  int ep = 1;  ///< Expert-parallel degree: MoE experts divided over ep data-parallel ranks.
  TensorLayoutRules rules;  ///< Which strategies the tensor-parallel dimensions may take.
};

/// Split factors of a strategy: f['B'] is how many ways it splits tokens, f['C'] output features, ...
struct Factors {
  double f[128] = {};
  int64_t operator()(char k) const { return static_cast<int64_t>(f[static_cast<int>(k)]); }
};

Factors factors_of(const Ctx& x, const Strategy& s) {
  Factors f;
  for (char k : std::string("RBCKHFVP")) f.f[static_cast<int>(k)] = 1;
  for (int d = 0; d < 2; ++d) f.f[static_cast<int>(s.choice[d])] *= x.mesh.dim_size(d);
  return f;
}

/// The strategy's forward kernels; false when its split does not divide the heads or experts.
bool kernel_time(const Ctx& x, const Operator& op, const Factors& fac, Strategy& s) {
  const int64_t fB = fac('B');
  const int64_t rows_local = static_cast<int64_t>(x.b) * x.g.seq / fB;
  auto ceil_div = [](int64_t a, int64_t d) { return (a + d - 1) / d; };
  const std::string& dt = x.g.dtype;
  switch (op.type) {
    case OpType::kLinear:
      s.fwd = x.costs.gemm(rows_local, ceil_div(op.out_features, fac('C')), ceil_div(op.in_features, fac('K')), dt);
      break;
    case OpType::kAttention: {
      if (x.b % fB != 0 || op.heads % fac('H') != 0) return false;
      s.fwd = x.costs.attention(x.b / fB, op.heads / fac('H'), x.g.seq, op.out_features / op.heads, dt, op.causal,
                                op.dropout);
      if (x.cp > 1) {
        // Ring attention: the local queries meet all cp chunks of keys (cp x the local work); K and V travel the
        // ring forward, their gradients backward, hidden behind the attention kernels where they can be (the hidden
        // part still pays overlap_interference).
        const double work = s.fwd.seconds * x.cp;
        s.fwd.memory_s *= x.cp;
        s.fwd.seconds = work;
        const int per_node = std::max(1, x.c.gpus_per_node / std::max(1, x.mesh.size()));
        const CommGroup ring{x.cp, std::min(x.cp, per_node)};
        const double kv = static_cast<double>(x.b / fB) * x.g.seq * 2.0 * op.kv_heads / fac('H') *
                          (op.out_features / op.heads) * x.dsize * x.cp;
        const CostParams& cost = x.costs.params();
        // The ring passes K and V (backward: also their gradients) rank to rank, cp - 1 steps in lockstep, and a
        // step waits for its slowest hop. Once the ring spans nodes that hop is one GPU's network link: a
        // hierarchical collective's price (every link of a node at once) made a 64-rank ring over 8 nodes 8x cheaper.
        auto ring_pass_s = [&](double bytes) {
          if (ring.per_node >= ring.size) return all_gather_s(x.c, ring, bytes);
          return (x.cp - 1) * p2p_s(x.c, true, bytes / x.cp);
        };
        const double fwd_ring = overlapped_comm_s(cost, ring_pass_s(kv), work);
        const double bwd_ring = overlapped_comm_s(cost, 2 * ring_pass_s(kv), 2 * work);
        s.fwd_comm_s += fwd_ring;
        s.bwd_comm_s += bwd_ring;
        s.cp_comm_s = fwd_ring + bwd_ring;
      }
      break;
    }
    case OpType::kLayerNorm: s.fwd = x.costs.layernorm(rows_local, ceil_div(op.in_features, fac('F')), dt); break;
    case OpType::kElementwise:
      // Every input read, the output written, and a one-byte mask per output element under dropout.
      s.fwd = x.costs.memory_bound(static_cast<double>(rows_local) *
                                   ((std::max<size_t>(op.inputs.size(), 1) * op.in_features + op.out_features) *
                                        x.dsize +
                                    (op.dropout > 0 ? op.out_features : 0)) /
                                   fac('F'));
      break;
    case OpType::kEmbedding:
      s.fwd = x.costs.memory_bound(2.0 * rows_local * op.out_features * x.dsize / (fac('C') * fac('V')));
      break;
    case OpType::kCrossEntropy: s.fwd = x.costs.softmax(rows_local, ceil_div(op.in_features, fac('F')), dt); break;
    case OpType::kMoeFfn: {
      // Experts over the ep group: this GPU holds experts / ep of them and receives, from the ep GPUs, the tokens
      // routed to them: rows_local x top_k in balance, kMoeLoadImbalance times that on the busiest GPU.
      if (op.experts % x.ep != 0) return false;
      const int64_t e_local = op.experts / x.ep;
      const double routed = static_cast<double>(rows_local) * op.top_k * kMoeLoadImbalance;
      const int64_t per_expert = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(routed / e_local)));
      const int64_t ffn_local = ceil_div(op.ffn, fac('P'));
      s.fwd = x.costs.gemm(rows_local, op.experts, op.in_features, dt);  // router
      s.fwd += x.costs.gemm(per_expert, ffn_local * (op.gated ? 2 : 1), op.in_features, dt, e_local);
      s.fwd += x.costs.gemm(per_expert, op.in_features, ffn_local, dt, e_local);
      if (x.ep > 1) {
        // Dispatch and combine forward, their mirror images backward. Under an expert split of the ffn ('P', etp =
        // tp) each tensor rank sends its own share of the tokens; the strategy's collectives gather the rest.
        const double bytes = routed / fac('P') * op.in_features * x.dsize;
        const double a2a = all_to_all_per_gpu_s(x.c, expert_group(x.c, x.mesh.size(), x.ep), bytes);
        s.fwd_comm_s += 2 * a2a;
        s.bwd_comm_s += 2 * a2a;
        s.ep_comm_s = 4 * a2a;
      }
      break;
    }
  }

  return true;
}

/// The strategy's own collectives, per mesh dimension.
void strategy_collectives(const Ctx& x, const Operator& op, Strategy& s) {
  const int64_t rows = static_cast<int64_t>(x.b) * x.g.seq;
  const double params = static_cast<double>(op_params(op));
  const double full_out = op_output_bytes(op, x.g.seq, x.dsize) * x.b;
  const double full_in = static_cast<double>(rows) * op.in_features * x.dsize;
  for (int d = 0; d < 2; ++d) {
    if (x.mesh.dim_size(d) == 1) continue;
    const CommGroup grp = x.mesh.group(d);
    const int o = 1 - d;  // the other mesh dimension
    const char c = s.choice[d];
    const double out_b = full_out / other_split(x.mesh, d, s.out_layout[o]);
    const double in_b = full_in / other_split(x.mesh, d, s.in_layout[o]);
    const double w_b = s.params_local * x.dsize;  // this device's weight gradients
    switch (c) {
      case 'K':
      case 'V': s.fwd_comm_s += all_reduce_s(x.c, grp, out_b); break;
      case 'C':
        if (op.type == OpType::kLinear) s.bwd_comm_s += all_reduce_s(x.c, grp, in_b);
        break;
      case 'P':
        s.fwd_comm_s += all_reduce_s(x.c, grp, out_b);
        s.bwd_comm_s += all_reduce_s(x.c, grp, in_b);
        break;
      case 'F':
        if (op.type == OpType::kCrossEntropy)  // vocab-parallel loss: max and sum of exponentials per token
          s.fwd_comm_s += 2 * all_reduce_s(x.c, grp, static_cast<double>(rows) * 4);
        break;
      case 'B':
        if (params > 0) s.bwd_comm_s += all_reduce_s(x.c, grp, w_b);  // weight gradients of the replicas
        break;
      default: break;
    }
  }
}

/// Fills a strategy's costs; false when the split does not divide what it must.
bool cost_strategy(const Ctx& x, const Operator& op, Strategy& s) {
  const Factors fac = factors_of(x, s);
  if ((static_cast<int64_t>(x.b) * x.g.seq) % fac('B') != 0) return false;
  double weight_split = 1;
  for (int d = 0; d < 2; ++d)
    if (splits_weights(s.choice[d])) weight_split *= x.mesh.dim_size(d);
  const double expert_params = static_cast<double>(op_expert_params(op));
  s.expert_params_local = expert_params / (weight_split * x.ep);
  s.params_local = (static_cast<double>(op_params(op)) - expert_params) / weight_split + s.expert_params_local;
  if (!kernel_time(x, op, fac, s)) return false;
  // Output layout and the bytes per device it keeps for backward: its output, or for the loss the softmax of the
  // logits it saves, split as the logits are: in fp32 where the engine's loss casts the logits up (Megatron-LM's
  // vocab-parallel cross-entropy keeps exp_logits in fp32: 6 bytes per logit at its peak with the head's own output,
  // where 2 were counted, 1 GB more at Llama-3's vocabulary, seq 8192, tp 4), else in the model's dtype.
  const bool loss = op.type == OpType::kCrossEntropy;
  double out_bytes = loss ? (x.rules.loss_fp32 ? 4.0 : x.dsize) * x.b * x.g.seq * static_cast<double>(op.in_features)
                          : op_output_bytes(op, x.g.seq, x.dsize) * x.b;
  for (int d = 0; d < 2; ++d) {
    s.in_layout[d] = in_layout_of(s.choice[d]);
    s.out_layout[d] = out_layout_of(op.type, s.choice[d]);
    if (loss) s.out_layout[d] = s.choice[d] == 'B' ? 'T' : 'R';
    if (loss ? s.choice[d] != 'R' : s.out_layout[d] != 'R') out_bytes /= x.mesh.dim_size(d);
  }
  s.out_bytes_local = out_bytes;

  strategy_collectives(x, op, s);
  return true;
}

std::string strategy_name(const Mesh& m, char c0, char c1) {
  if (m.d0 == 1) return std::string(1, c1);
  if (m.d1 == 1) return std::string(1, c0);
  return std::string(1, c0) + "," + std::string(1, c1);
}

/// Whether `letter` is a strategy the rules allow on a tensor-parallel dimension for `op`, which is on the
/// residual stream or not (residual_stream), a norm that feeds attention (normalising per head) or not, in a layer
/// of kind `kind`.
bool tensor_letter_allowed(const TensorLayoutRules& rules, const Operator& op, bool residual, bool per_head_norm,
                           LayerKind kind, char letter) {
  const bool no_split = rules.sequence_parallel && !*rules.sequence_parallel;
  if (no_split && letter == 'B') return false;
  // A norm needs its whole rows, but one that feeds attention normalises per head (a Q/K norm): it may split with
  // the heads (F).
  if (op.type == OpType::kLayerNorm && !per_head_norm && letter == 'F') return false;
  if (residual) {
    if (no_split) return letter == 'R';
    if (rules.residual_split_required()) return letter == 'B';
    if (rules.engine == Engine::kDeepSpeed) return letter == 'R';
    return true;
  }
  if (rules.engine == Engine::kGeneric) return true;
  const bool deepspeed = rules.engine == Engine::kDeepSpeed;
  switch (op.type) {
    case OpType::kLinear:
      if (deepspeed && kind == LayerKind::kHead) return letter == 'K';
      return letter == 'C' || letter == 'K';
    case OpType::kAttention: return letter == 'H';
    case OpType::kLayerNorm:  // a norm inside a block (F only per head: above)
    case OpType::kElementwise: return letter == 'F' || letter == 'R';
    case OpType::kEmbedding: return letter == (deepspeed ? 'C' : 'V');
    case OpType::kCrossEntropy: return letter == (deepspeed ? 'R' : 'F');
    case OpType::kMoeFfn: return true;  // R, B (tokens over the tensor group) or P (etp = tp)
  }
  return true;
}

std::vector<OpStrategies> enumerate(const Ctx& x, const Layer& layer, const std::vector<bool>& residual) {
  std::vector<OpStrategies> all;
  // The input pseudo-node: one strategy per layout pair.
  OpStrategies in;
  in.out_features = 0;
  const std::string layouts = "RTF";
  for (char l0 : (x.mesh.d0 > 1 ? layouts : std::string("R")))
    for (char l1 : (x.mesh.d1 > 1 ? layouts : std::string("R"))) {
      Strategy s;
      s.name = strategy_name(x.mesh, l0, l1);
      s.in_layout[0] = s.out_layout[0] = l0;
      s.in_layout[1] = s.out_layout[1] = l1;
      in.list.push_back(s);
    }
  all.push_back(in);
  std::set<std::string> feeds_attention;
  for (const auto& op : layer.ops)
    if (op.type == OpType::kAttention) feeds_attention.insert(op.inputs.begin(), op.inputs.end());
  for (size_t k = 0; k < layer.ops.size(); ++k) {
    const Operator& op = layer.ops[k];
    const bool per_head_norm = op.type == OpType::kLayerNorm && !residual[k] && feeds_attention.count(op.name);
    OpStrategies os;
    os.op = &op;
    os.out_features = op.out_features;
    const std::string letters = letters_for(op.type);
    for (char c0 : (x.mesh.d0 > 1 ? letters : std::string("R")))
      for (char c1 : (x.mesh.d1 > 1 ? letters : std::string("R"))) {
        Strategy s;
        s.choice[0] = c0;
        s.choice[1] = c1;
        s.name = strategy_name(x.mesh, c0, c1);
        if ((x.mesh.d0 > 1 && !tensor_letter_allowed(x.rules, op, residual[k], per_head_norm, layer.kind, c0)) ||
            (x.mesh.d1 > 1 && !tensor_letter_allowed(x.rules, op, residual[k], per_head_norm, layer.kind, c1)))
          continue;
        // An engine's tensor group is one group: the same split on both mesh dimensions.
        if (x.rules.engine != Engine::kGeneric && x.mesh.d0 > 1 && x.mesh.d1 > 1 && c0 != c1) continue;
        if (cost_strategy(x, op, s)) os.list.push_back(s);
      }
    all.push_back(os);
  }
  return all;
}

}  // namespace

bool TensorLayoutRules::residual_split_required() const {
  if (sequence_parallel) return *sequence_parallel;
  return engine == Engine::kMegatron || engine == Engine::kTorchtitan;
}

std::vector<bool> residual_stream(const Layer& layer) {
  std::vector<bool> out(layer.ops.size(), false);
  std::set<std::string> stream = {"input"};
  for (size_t k = 0; k < layer.ops.size(); ++k) {
    const Operator& op = layer.ops[k];
    if (op.type == OpType::kLayerNorm || op.type == OpType::kElementwise)
      for (const auto& in : op.inputs)
        if (stream.count(in)) out[k] = true;
    if (out[k]) stream.insert(op.name);  // post-LN blocks: the norm's output is the stream
  }
  return out;
}

namespace {

double layout_change_s(const Ctx& x, char from, char to, int dim, double bytes) {
  if (from == to || x.mesh.dim_size(dim) == 1) return 0;
  const CommGroup grp = x.mesh.group(dim);
  if (from == 'R' || to == 'R') return all_gather_s(x.c, grp, bytes);  // forward or backward direction
  return 2 * all_to_all_s(x.c, grp, bytes);                           // T <-> F, both directions
}

/// R_uv for a tensor of `features` per token flowing from u's output layouts to v's input layouts.
///
/// Sequence parallelism (Megatron): when a reduction-split producer (K, V, P: output all-reduced) feeds
/// a token-split consumer, the all-reduce becomes a reduce-scatter; when a token-split producer feeds a
/// column-split consumer (C, P: input gradient all-reduced), the backward all-reduce becomes a
/// reduce-scatter. The edge is credited the difference (all-reduce - reduce-scatter), which the
/// strategies charged; it applies only on edges that are the producer's only use (sole_use_of_u) or the
/// consumer's only input (sole_input_of_v), so that no collective is credited twice.
std::vector<double> resharding_matrix(const Ctx& x, const OpStrategies& u, const OpStrategies& v, int64_t features,
                                      bool sole_use_of_u, bool sole_input_of_v) {
  std::vector<double> r;
  r.reserve(u.list.size() * v.list.size());
  const double full = static_cast<double>(x.b) * x.g.seq * features * x.dsize;
  const double v_in_full = v.op ? static_cast<double>(x.b) * x.g.seq * v.op->in_features * x.dsize : full;
  for (const auto& su : u.list)
    for (const auto& sv : v.list) {
      double cost = 0;
      for (int d = 0; d < 2; ++d) {
        const double bytes = full / other_split(x.mesh, d, su.out_layout[1 - d]);
        cost += layout_change_s(x, su.out_layout[d], sv.in_layout[d], d, bytes);
        if (x.mesh.dim_size(d) == 1) continue;
        const CommGroup grp = x.mesh.group(d);
        const char cu = su.choice[d], cv = sv.choice[d];
        if (sole_use_of_u && (cu == 'K' || cu == 'V' || cu == 'P') && sv.in_layout[d] == 'T')
          cost -= all_reduce_s(x.c, grp, bytes) - reduce_scatter_s(x.c, grp, bytes);
        const bool grad_all_reduce = (cv == 'C' && v.op && v.op->type == OpType::kLinear) || cv == 'P';
        if (sole_input_of_v && grad_all_reduce && su.out_layout[d] == 'T') {
          const double in_b = v_in_full / other_split(x.mesh, d, sv.in_layout[1 - d]);
          cost -= all_reduce_s(x.c, grp, in_b) - reduce_scatter_s(x.c, grp, in_b);
        }
      }
      r.push_back(std::max(0.0, cost));
    }
  return r;
}

struct Built {
  ShardingRequest req;
  std::vector<OpStrategies> ops;
  std::vector<bool> residual;  ///< residual_stream(layer), per op.
};

Built build(const Layer& layer, const ModelGraph& g, const ClusterSpec& c, Mesh mesh, int micro_batch,
            OpCostModel& costs, double memory_budget, double state_bytes_per_param, int cp, int ep,
            TensorLayoutRules rules) {
  Ctx x{g, c, mesh, micro_batch, costs, dtype_bytes(g.dtype), std::max(cp, 1), std::max(ep, 1), rules};
  Built out;
  out.residual = residual_stream(layer);
  out.ops = enumerate(x, layer, out.residual);
  out.req.memory_budget = memory_budget;
  std::map<std::string, int> index;
  index["input"] = 0;
  for (size_t i = 0; i < layer.ops.size(); ++i) index[layer.ops[i].name] = static_cast<int>(i + 1);
  for (size_t v = 0; v < out.ops.size(); ++v) {
    ShardingNode n;
    n.name = v == 0 ? "input" : out.ops[v].op->name;
    for (const auto& s : out.ops[v].list) {
      n.strategies.push_back(s.name);
      n.cost.push_back(3 * s.fwd.seconds + s.fwd_comm_s + s.bwd_comm_s);  // backward = 2 x forward
      n.memory.push_back(state_bytes_per_param * s.params_local + s.out_bytes_local);  // states; outputs
    }
    out.req.nodes.push_back(n);
  }
  const int64_t in_width = g.hidden;
  std::map<int, int> uses;  // edges leaving each node
  for (const auto& op : layer.ops)
    if (op.type != OpType::kEmbedding)
      for (const auto& name : op.inputs) ++uses[index[name]];
  for (size_t i = 0; i < layer.ops.size(); ++i) {
    const Operator& op = layer.ops[i];
    if (op.type == OpType::kEmbedding) continue;  // reads token ids, replicated for free
    for (const auto& name : op.inputs) {
      const int src = index[name];
      const int64_t width = src == 0 ? (in_width > 0 ? in_width : op.in_features) : out.ops[src].out_features;
      ShardingEdge e;
      e.src = src;
      e.dst = static_cast<int>(i + 1);
      e.resharding = resharding_matrix(x, out.ops[src], out.ops[i + 1], width, src != 0 && uses[src] == 1,
                                       op.inputs.size() == 1);
      out.req.edges.push_back(e);
    }
  }
  // The next identical layer reads this one's output: charge output -> input when widths allow stacking.
  const int out_idx = index[layer.output];
  const bool reads_input = std::any_of(layer.ops.begin(), layer.ops.end(), [](const Operator& op) {
    return std::find(op.inputs.begin(), op.inputs.end(), "input") != op.inputs.end();
  });
  if (reads_input && out.ops[out_idx].out_features == in_width && layer.kind != LayerKind::kHead) {
    ShardingEdge e;
    e.src = out_idx;
    e.dst = 0;
    e.resharding = resharding_matrix(x, out.ops[out_idx], out.ops[0], in_width, false, false);
    out.req.edges.push_back(e);
  }
  return out;
}

}  // namespace

Mesh tensor_mesh(const ClusterSpec& c, int tp) {
  if (tp <= c.gpus_per_node) return {1, tp};
  return {tp / c.gpus_per_node, c.gpus_per_node};
}

ShardingRequest build_layer_request(const Layer& layer, const ModelGraph& g, const ClusterSpec& c, Mesh mesh,
                                    int micro_batch, OpCostModel& costs, double memory_budget,
                                    double state_bytes_per_param, int cp, int ep, TensorLayoutRules rules) {
  return build(layer, g, c, mesh, micro_batch, costs, memory_budget, state_bytes_per_param, cp, ep, rules).req;
}

LayerPlan plan_layer_sharding(const Layer& layer, const ModelGraph& g, const ClusterSpec& c, Mesh mesh,
                              int micro_batch, OpCostModel& costs, double memory_budget,
                              double state_bytes_per_param, int cp, int ep, TensorLayoutRules rules) {
  Built b = build(layer, g, c, mesh, micro_batch, costs, memory_budget, state_bytes_per_param, cp, ep, rules);
  LayerPlan lp;
  ShardingSolution sol = solve_sharding(b.req);
  lp.status = sol.status;
  lp.optimal = sol.optimal;
  if (!sol.feasible) return lp;
  const ShardingEvaluation ev = evaluate(b.req, sol);
  for (size_t v = 1; v < b.ops.size(); ++v) {
    const Strategy& s = b.ops[v].list[sol.choice[v]];
    OpShardingPlan op;
    op.op = b.ops[v].op->name;
    op.strategy = s.name;
    op.fwd_compute_s = s.fwd.seconds;
    op.bwd_compute_s = 2 * s.fwd.seconds;
    op.fwd_memory_s = s.fwd.memory_s;
    op.fwd_comm_s = s.fwd_comm_s;
    op.bwd_comm_s = s.bwd_comm_s;
    op.params_per_device = s.params_local;
    op.source = source_of(s.fwd);
    lp.fwd_s += op.fwd_compute_s + op.fwd_comm_s;
    lp.bwd_s += op.bwd_compute_s + op.bwd_comm_s;
    lp.compute_s += 3 * (s.fwd.seconds - s.fwd.memory_s);
    lp.memory_bound_s += 3 * s.fwd.memory_s;
    lp.comm_s += s.fwd_comm_s + s.bwd_comm_s - s.ep_comm_s - s.cp_comm_s;
    lp.ep_comm_s += s.ep_comm_s;
    lp.cp_comm_s += s.cp_comm_s;
    lp.params_per_device += s.params_local;
    lp.expert_params_per_device += s.expert_params_local;
    lp.activation_bytes += s.out_bytes_local;
    lp.parts += s.fwd.parts;
    lp.tuned_parts += s.fwd.tuned_parts;
    if (b.ops[v].op->type == OpType::kAttention) lp.attention_fwd_s += s.fwd.seconds;
    if (b.residual[v - 1])
      for (int d = 0; d < 2; ++d)
        if (s.choice[d] == 'B' && mesh.dim_size(d) > 1) lp.sequence_parallel = true;
    lp.ops.push_back(op);
  }
  {
    const Strategy& in = b.ops[0].list[sol.choice[0]];
    int out_idx = static_cast<int>(b.ops.size()) - 1;
    for (size_t v = 1; v < b.ops.size(); ++v)
      if (b.ops[v].op->name == layer.output) out_idx = static_cast<int>(v);
    const Strategy& out = b.ops[out_idx].list[sol.choice[out_idx]];
    for (int d = 0; d < 2; ++d) {
      lp.in_layout[d] = in.out_layout[d];
      lp.out_layout[d] = out.out_layout[d];
    }
  }
  lp.fwd_s += ev.resharding_cost / 2;
  lp.bwd_s += ev.resharding_cost / 2;
  lp.comm_s += ev.resharding_cost;
  return lp;
}

}  // namespace tuner::parallel
