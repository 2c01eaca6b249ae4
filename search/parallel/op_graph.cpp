#include "search/parallel/op_graph.h"

#include <map>
#include <set>

namespace tuner::parallel {

namespace {

constexpr std::pair<OpType, const char*> kOpNames[] = {
    {OpType::kLinear, "linear"},         {OpType::kAttention, "attention"},
    {OpType::kLayerNorm, "layernorm"},   {OpType::kElementwise, "elementwise"},
    {OpType::kEmbedding, "embedding"},   {OpType::kCrossEntropy, "cross_entropy"},
    {OpType::kMoeFfn, "moe_ffn"},
};

}  // namespace

std::string to_string(OpType t) {
  for (auto [k, n] : kOpNames)
    if (k == t) return n;
  return "?";
}

std::optional<OpType> op_type_from_string(std::string_view s) {
  for (auto [k, n] : kOpNames)
    if (s == n) return k;
  return std::nullopt;
}

std::string op_type_names() {
  std::string out;
  for (auto [k, n] : kOpNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "f32") return 4;
  if (dtype == "bf16" || dtype == "f16") return 2;
  throw SpecError("unknown dtype '" + dtype + "'; allowed: bf16, f16, f32");
}

std::string Layer::signature() const {
  std::string s = std::to_string(static_cast<int>(kind)) + "|" + output + "|" + std::to_string(hidden) + "|" +
                  std::to_string(heads);
  for (const auto& op : ops) {
    s += ";" + op.name + ":" + to_string(op.type) + ":" + std::to_string(op.in_features) + ":" +
         std::to_string(op.out_features) + ":" + std::to_string(op.heads) + ":" + std::to_string(op.kv_heads) + ":" +
         std::to_string(op.experts) + ":" + std::to_string(op.top_k) + ":" + std::to_string(op.ffn) + ":" +
         (op.gated ? "g" : "") + (op.causal ? "c" : "") + (op.bias ? "b" : "") + (op.rms ? "r" : "") + ":" +
         std::to_string(op.dropout);
    for (const auto& in : op.inputs) s += "<" + in;
  }
  return s;
}

int64_t op_params(const Operator& op) {
  switch (op.type) {
    case OpType::kLinear: return op.in_features * op.out_features + (op.bias ? op.out_features : 0);
    case OpType::kEmbedding: return op.in_features * op.out_features;
    case OpType::kLayerNorm: return (op.rms ? 1 : 2) * op.in_features;
    case OpType::kMoeFfn:
      return static_cast<int64_t>(op.experts) * (op.gated ? 3 : 2) * op.in_features * op.ffn +
             op.in_features * op.experts;
    case OpType::kAttention:
    case OpType::kElementwise:
    case OpType::kCrossEntropy: return 0;
  }
  return 0;
}

double op_forward_flops(const Operator& op, int64_t seq, bool causal_half) {
  const double s = static_cast<double>(seq);
  switch (op.type) {
    case OpType::kLinear: return 2.0 * s * op.in_features * op.out_features;
    case OpType::kAttention:  // QK^T and AV, 2 FLOP per multiply-add each
      return (causal_half && op.causal ? 2.0 : 4.0) * s * s * op.out_features;
    case OpType::kLayerNorm: return 5.0 * s * op.in_features;
    case OpType::kElementwise: return s * op.in_features;
    case OpType::kEmbedding: return 0;
    case OpType::kCrossEntropy: return 3.0 * s * op.in_features;
    case OpType::kMoeFfn:
      return 2.0 * s * op.in_features * op.experts +
             2.0 * s * op.top_k * (op.gated ? 3 : 2) * static_cast<double>(op.in_features) * op.ffn;
  }
  return 0;
}

double op_output_bytes(const Operator& op, int64_t seq, int dtype_size) {
  if (op.type == OpType::kCrossEntropy) return 4.0 * seq;  // fp32 loss per token
  return static_cast<double>(seq) * op.out_features * dtype_size;
}

int64_t layer_params(const Layer& l) {
  int64_t p = 0;
  for (const auto& op : l.ops) p += op_params(op);
  return p;
}

namespace {

/// A head layer's linear of `embed`'s transposed shape (hidden -> rows): the output layer the embedding pairs with.
std::pair<int, const Operator*> head_of(const ModelGraph& g, int embed_layer, const Operator& embed) {
  for (size_t l = static_cast<size_t>(embed_layer) + 1; l < g.layers.size(); ++l) {
    if (g.layers[l].kind != LayerKind::kHead) continue;
    for (const auto& op : g.layers[l].ops)
      if (op.type == OpType::kLinear && op.in_features == embed.out_features && op.out_features == embed.in_features)
        return {static_cast<int>(l), &op};
  }
  return {-1, nullptr};
}

}  // namespace

TokenEmbedding token_embedding(const ModelGraph& g, int64_t vocab) {
  TokenEmbedding paired, by_rows, largest;
  for (size_t l = 0; l < g.layers.size(); ++l)
    for (const auto& op : g.layers[l].ops) {
      if (op.type != OpType::kEmbedding) continue;
      const TokenEmbedding here{static_cast<int>(l), &op};
      if (!largest.op || op.in_features > largest.op->in_features) largest = here;
      if (vocab > 0 && op.in_features == vocab && !by_rows.op) by_rows = here;
      if (head_of(g, here.layer, op).second && (!paired.op || op.in_features > paired.op->in_features)) paired = here;
    }
  if (paired.op) return paired;
  if (vocab > 0) return by_rows;
  return largest;
}

TiedEmbedding tied_embedding(const ModelGraph& g) {
  TiedEmbedding t;
  if (g.untied_embeddings) return t;
  const TokenEmbedding e = token_embedding(g, g.vocab);
  if (!e.op) return t;
  const auto [head, op] = head_of(g, e.layer, *e.op);
  if (!op) return t;
  t.embedding = e.layer;
  t.embedding_op = e.op->name;
  t.head = head;
  t.head_op = op->name;
  t.params = op->in_features * op->out_features;  // the weights (a bias of the head's is its own)
  return t;
}

int64_t model_params(const ModelGraph& g) {
  int64_t p = 0;
  for (const auto& l : g.layers) p += layer_params(l);
  return p - tied_embedding(g).params;
}

double model_forward_flops(const ModelGraph& g, bool causal_half) {
  double f = 0;
  for (const auto& l : g.layers)
    for (const auto& op : l.ops) f += op_forward_flops(op, g.seq, causal_half);
  return f;
}

namespace {

void check_positive(const std::string& where, const char* what, int64_t v) {
  if (v <= 0) throw SpecError(where + ": " + what + " must be positive, got " + std::to_string(v));
}

void check_range(const std::string& where, const char* what, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw SpecError(where + ": " + what + " " + std::to_string(v) + " is out of range; allowed: " + std::to_string(lo) +
                    ".." + std::to_string(hi));
}

/// op_params without overflow, for the limit check.
long double op_params_wide(const Operator& op) {
  const long double in = op.in_features, out = op.out_features;
  switch (op.type) {
    case OpType::kLinear: return in * out + (op.bias ? out : 0);
    case OpType::kEmbedding: return in * out;
    case OpType::kLayerNorm: return (op.rms ? 1 : 2) * in;
    case OpType::kMoeFfn: return static_cast<long double>(op.experts) * (op.gated ? 3 : 2) * in * op.ffn + in * op.experts;
    default: return 0;
  }
}

/// Topologically orders a layer's ops (Kahn, ties in the given order); throws on a cycle.
void order_layer(Layer& l, const std::string& where) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < l.ops.size(); ++i) {
    if (l.ops[i].name.empty() || l.ops[i].name == "input")
      throw SpecError(where + ": op " + std::to_string(i) + " needs a name other than 'input'");
    if (!index.emplace(l.ops[i].name, i).second) throw SpecError(where + ": duplicate op name '" + l.ops[i].name + "'");
  }
  std::vector<int> pending(l.ops.size(), 0);
  std::vector<std::vector<size_t>> users(l.ops.size());
  for (size_t i = 0; i < l.ops.size(); ++i)
    for (const auto& in : l.ops[i].inputs) {
      if (in == "input") continue;
      auto it = index.find(in);
      if (it == index.end())
        throw SpecError(where + ": op '" + l.ops[i].name + "' reads unknown input '" + in + "'");
      ++pending[i];
      users[it->second].push_back(i);
    }
  std::vector<Operator> ordered;
  std::vector<bool> done(l.ops.size(), false);
  while (ordered.size() < l.ops.size()) {
    bool progressed = false;
    for (size_t i = 0; i < l.ops.size(); ++i) {
      if (done[i] || pending[i] != 0) continue;
      done[i] = true;
      progressed = true;
      ordered.push_back(l.ops[i]);
      for (size_t u : users[i]) --pending[u];
    }
    if (!progressed) {
      std::string cyc;
      for (size_t i = 0; i < l.ops.size(); ++i)
        if (!done[i]) cyc += (cyc.empty() ? "" : ", ") + l.ops[i].name;
      throw SpecError(where + ": the ops form a cycle (" + cyc + ")");
    }
  }
  l.ops = std::move(ordered);
}

/// One operator's sizes and shape rules; `ow` names it in the error.
void validate_op(const Operator& op, const std::string& ow) {
  check_positive(ow, "in_features", op.in_features);
  check_positive(ow, "out_features", op.out_features);
  check_range(ow, "in_features", op.in_features, 1, kMaxFeatures);
  check_range(ow, "out_features", op.out_features, 1, kMaxFeatures);
  check_range(ow, "ffn", op.ffn, 0, kMaxFeatures);
  check_range(ow, "heads", op.heads, 0, kMaxHeads);
  check_range(ow, "kv_heads", op.kv_heads, 0, kMaxHeads);
  check_range(ow, "experts", op.experts, 0, kMaxHeads);
  check_range(ow, "top_k", op.top_k, 0, kMaxHeads);
  if (op.type == OpType::kAttention) {
    check_positive(ow, "heads", op.heads);
    check_positive(ow, "kv_heads", op.kv_heads);
    if (op.heads % op.kv_heads != 0)
      throw SpecError(ow + ": heads " + std::to_string(op.heads) + " is not a multiple of kv_heads " +
                      std::to_string(op.kv_heads));
    if (op.out_features % op.heads != 0)
      throw SpecError(ow + ": out_features " + std::to_string(op.out_features) + " is not a multiple of heads " +
                      std::to_string(op.heads));
    const int64_t hd = op.out_features / op.heads;
    if (op.in_features != (op.heads + 2LL * op.kv_heads) * hd)
      throw SpecError(ow + ": in_features must be (heads + 2*kv_heads)*head_dim = " +
                      std::to_string((op.heads + 2LL * op.kv_heads) * hd) + ", got " +
                      std::to_string(op.in_features));
  }
  if (op.type == OpType::kMoeFfn) {
    check_positive(ow, "experts", op.experts);
    check_positive(ow, "top_k", op.top_k);
    check_positive(ow, "ffn", op.ffn);
    if (op.top_k > op.experts)
      throw SpecError(ow + ": top_k " + std::to_string(op.top_k) + " exceeds experts " + std::to_string(op.experts) +
                      "; allowed: top_k 1.." + std::to_string(op.experts));
    if (op.in_features != op.out_features) throw SpecError(ow + ": moe_ffn needs in_features == out_features");
  }
  if (op.type == OpType::kLayerNorm && op.in_features != op.out_features)
    throw SpecError(ow + ": layernorm needs in_features == out_features");
  if (op.inputs.empty() && op.type != OpType::kEmbedding)
    throw SpecError(ow + " has no inputs (use \"input\" for the layer's input)");
}

}  // namespace

void validate(ModelGraph& g) {
  check_range("model '" + g.name + "'", "seq", g.seq, 1, kMaxSeq);
  dtype_bytes(g.dtype);
  if (g.layers.empty()) throw SpecError("model '" + g.name + "' has no layers");
  if (static_cast<int64_t>(g.layers.size()) > kMaxLayers + 2)
    throw SpecError("model '" + g.name + "' has " + std::to_string(g.layers.size()) + " layers; allowed: at most " +
                    std::to_string(kMaxLayers) + " (plus embedding and head)");
  long double params = 0;
  int64_t ops = 0;
  int64_t prev_out = 0;
  g.transformer_layers = 0;
  for (size_t li = 0; li < g.layers.size(); ++li) {
    Layer& l = g.layers[li];
    const std::string where =
        l.origin.empty() ? "layer " + std::to_string(li) + " (" + l.name + ")" : l.origin + " (" + l.name + ")";
    if (l.ops.empty()) throw SpecError(where + " has no ops");
    if (static_cast<int64_t>(l.ops.size()) > kMaxLayerOps)
      throw SpecError(where + " has " + std::to_string(l.ops.size()) + " ops; allowed: at most " +
                      std::to_string(kMaxLayerOps));
    ops += static_cast<int64_t>(l.ops.size());
    if (ops > kMaxModelOps)
      throw SpecError("model '" + g.name + "' has more than " + std::to_string(kMaxModelOps) + " ops; allowed: at most " +
                      std::to_string(kMaxModelOps) + ", repeats counted");
    check_range(where, "hidden", l.hidden, 0, kMaxFeatures);
    check_range(where, "heads", l.heads, 0, kMaxHeads);
    if (l.kind == LayerKind::kTransformer) ++g.transformer_layers;
    for (const auto& op : l.ops) {
      const std::string ow = where + " op '" + op.name + "'";
      validate_op(op, ow);
      params += op_params_wide(op);
      if (params > static_cast<long double>(kMaxParams))
        throw SpecError("model '" + g.name + "' has more than 10^15 parameters (at " + ow +
                        "); allowed: at most 10^15");
    }
    order_layer(l, where);
    if (l.output.empty()) l.output = l.ops.back().name;
    std::map<std::string, const Operator*> by_name;
    for (const auto& op : l.ops) by_name[op.name] = &op;
    if (!by_name.count(l.output)) throw SpecError(where + ": output '" + l.output + "' is not an op of the layer");
    // An op the output does not read, directly or through others, was planned, costed and exported as though it
    // mattered: a miswired input, most likely.
    {
      std::set<std::string> live = {l.output};
      std::vector<std::string> todo = {l.output};
      while (!todo.empty()) {
        const Operator* op = by_name[todo.back()];
        todo.pop_back();
        for (const auto& in : op->inputs)
          if (in != "input" && live.insert(in).second) todo.push_back(in);
      }
      for (const auto& op : l.ops)
        if (!live.count(op.name))
          throw SpecError(where + " op '" + op.name + "': its result reaches no output (the layer's output is '" +
                          l.output + "'); allowed: ops that the output reads, directly or through other ops");
    }
    for (const auto& op : l.ops) {
      if (op.type == OpType::kEmbedding) continue;  // reads token ids
      for (const auto& in : op.inputs) {
        int64_t w = 0;
        if (in == "input") {
          if (li == 0) continue;  // the model's input: any width
          w = prev_out;
        } else {
          w = by_name[in]->out_features;
        }
        if (w != op.in_features)
          throw SpecError(where + " op '" + op.name + "': shape mismatch, input '" + in + "' has " +
                          std::to_string(w) + " features but the op expects " + std::to_string(op.in_features) +
                          (in == "input" && li > 0 && g.layers[li - 1].signature() == l.signature()
                               ? " (a repeated layer's output must have its input's width)"
                               : ""));
      }
    }
    prev_out = by_name[l.output]->out_features;
    if (l.kind == LayerKind::kTransformer) {
      // The activation formula sizes the layer by its hidden and heads: they must be its ops'.
      const Operator* attn = nullptr;
      for (const auto& op : l.ops)
        if (op.type == OpType::kAttention && !attn) attn = &op;
      if (!attn) throw SpecError(where + ": a transformer layer needs an attention op; allowed: \"kind\": \"generic\"");
      if (l.heads != attn->heads)
        throw SpecError(where + ": heads " + std::to_string(l.heads) + " differs from its attention op '" + attn->name +
                        "' of " + std::to_string(attn->heads) + " heads; allowed: " + std::to_string(attn->heads));
      if (l.hidden != prev_out)
        throw SpecError(where + ": hidden " + std::to_string(l.hidden) + " differs from its output '" + l.output +
                        "' of " + std::to_string(prev_out) + " features; allowed: " + std::to_string(prev_out));
    }
  }
}

}  // namespace tuner::parallel
