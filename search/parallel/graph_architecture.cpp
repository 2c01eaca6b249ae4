#include "search/parallel/graph_architecture.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace tuner::parallel {

namespace {

/// One transformer layer's architecture, as read from its ops.
struct Shape {
  int heads = 0, kv_heads = 0;
  int64_t head_width = 0;
  int64_t ffn = 0;
  bool gated = false;
  int experts = 0, top_k = 0;
  bool qk_norm = false;
  int64_t hidden = 0;
  bool parallel_block = false;  ///< its MLP does not read its attention: the two run side by side (GPT-J, PaLM)
  int norms = 0, rms_norms = 0;  ///< Its norms, and how many are RMSNorm.
  int linears = 0;
  std::vector<std::string> biased;  ///< Its linears with biases, by name.
  std::string bias_places;          ///< The same by place among its linears ("0,2"): layers name ops as they like.
  /// Its biased linears are all QKV projections (the linears the attention op reads, through RoPE-like elementwise
  /// ops and a Q/K norm): Megatron-LM's --add-qkv-bias.
  bool qkv_biases_only = true;
};

const Operator* find_op(const Layer& l, const std::string& name) {
  for (const auto& op : l.ops)
    if (op.name == name) return &op;
  return nullptr;
}

/// Walks back from `name` through same-width, single-input elementwise ops (dropout, RoPE, scaling): the op they
/// start from.
const Operator* through_elementwise(const Layer& l, const std::string& name) {
  const Operator* op = find_op(l, name);
  while (op && op->type == OpType::kElementwise && op->inputs.size() == 1 && op->in_features == op->out_features &&
         op->inputs.front() != "input")
    op = find_op(l, op->inputs.front());
  return op;
}

/// The MLP whose down projection is `down` (a linear back to the hidden width): its width and whether it is gated,
/// or false when `down` is not one (it reads attention, or no activation). One walk back through the elementwise
/// ops it reads: a halving one is a fused SwiGLU, a two-input one of the MLP's width on both sides gate x up.
bool mlp_of(const Layer& l, const Operator& down, int64_t* ffn, bool* gated) {
  if (down.inputs.size() != 1 || down.inputs.front() == "input" || down.in_features == l.hidden) return false;
  const Operator* op = find_op(l, down.inputs.front());
  bool activation = false;
  *gated = false;
  while (op && op->type == OpType::kElementwise && op->inputs.front() != "input") {
    activation = true;
    if (op->inputs.size() == 2) {
      const Operator* x = find_op(l, op->inputs[0]);
      const Operator* y = find_op(l, op->inputs[1]);
      *gated = x && y && x->out_features == down.in_features && y->out_features == down.in_features;
      op = x;  // attention on its first side still makes it no MLP
      break;
    }
    if (op->inputs.size() != 1) break;
    if (op->in_features == 2 * op->out_features) *gated = true;
    op = find_op(l, op->inputs.front());
  }
  // attn -> dropout -> proj is attention's projection, not an MLP.
  if (!activation || (op && op->type == OpType::kAttention)) return false;
  *ffn = down.in_features;
  return true;
}

/// Whether `from` reads an op `target` accepts, directly or through other ops of the layer.
template <typename Target>
bool reads(const Layer& l, const Operator& from, Target target) {
  std::set<std::string> seen;
  std::vector<const Operator*> todo = {&from};
  while (!todo.empty()) {
    const Operator* op = todo.back();
    todo.pop_back();
    for (const auto& in : op->inputs)
      if (in != "input" && seen.insert(in).second)
        if (const Operator* p = find_op(l, in)) {
          if (target(*p)) return true;
          todo.push_back(p);
        }
  }
  return false;
}

Shape shape_of(const Layer& l) {
  Shape s;
  s.hidden = l.hidden;
  const Operator* mlp = nullptr;  // the MoE op or the dense MLP's down projection
  const Operator* attention = nullptr;
  for (const auto& op : l.ops) {
    if (op.type == OpType::kLayerNorm) ++s.norms, s.rms_norms += op.rms;
    if (op.type == OpType::kLinear && op.bias) {
      s.biased.push_back(op.name);
      s.bias_places += (s.bias_places.empty() ? "" : ",") + std::to_string(s.linears);
    }
    if (op.type == OpType::kLinear) ++s.linears;
    if (op.type == OpType::kAttention) {
      attention = &op;
      s.heads = op.heads;
      s.kv_heads = op.kv_heads > 0 ? op.kv_heads : op.heads;
      s.head_width = op.heads > 0 ? op.out_features / op.heads : 0;
      // A norm between the QKV projection and the attention core (perhaps through RoPE) normalises the queries and
      // keys.
      for (const auto& in : op.inputs)
        if (const Operator* p = through_elementwise(l, in); p && p->type == OpType::kLayerNorm) s.qk_norm = true;
    } else if (op.type == OpType::kMoeFfn) {
      s.ffn = op.ffn, s.gated = op.gated, s.experts = op.experts, s.top_k = op.top_k;
      mlp = &op;
    } else if (op.type == OpType::kLinear && op.out_features == l.hidden && s.experts == 0 && s.ffn == 0) {
      int64_t ffn = 0;
      bool gated = false;
      if (mlp_of(l, op, &ffn, &gated)) s.ffn = ffn, s.gated = gated, mlp = &op;
    }
  }
  std::set<std::string> qkv;
  if (attention)
    for (const auto& in : attention->inputs) {
      const Operator* p = through_elementwise(l, in);
      if (p && p->type == OpType::kLayerNorm && p->inputs.size() == 1) p = through_elementwise(l, p->inputs.front());
      if (p && p->type == OpType::kLinear) qkv.insert(p->name);
    }
  for (const auto& name : s.biased) s.qkv_biases_only = s.qkv_biases_only && qkv.count(name) > 0;
  // Neither reads the other (an MLP before attention is still a sequential block).
  s.parallel_block = attention && mlp &&
                     !reads(l, *mlp, [](const Operator& o) { return o.type == OpType::kAttention; }) &&
                     !reads(l, *attention, [mlp](const Operator& o) { return &o == mlp; });
  return s;
}

/// "2048 and 4096" / "2048, 4096 and 6144" / "2048 ... 6144 (60 values)".
std::string values(std::set<int64_t> v) {
  std::vector<int64_t> list(v.begin(), v.end());
  if (list.size() > 4)
    return std::to_string(list.front()) + " ... " + std::to_string(list.back()) + " (" + std::to_string(list.size()) +
           " values)";
  std::string out;
  for (size_t i = 0; i < list.size(); ++i)
    out += (i == 0 ? "" : i + 1 == list.size() ? " and " : ", ") + std::to_string(list[i]);
  return out;
}

/// The norm and the biases of the first transformer layer, `s`, into g: RMSNorm when every norm of it is one; no
/// linear biases when none has one, or only the QKV projection's (Megatron-LM's --add-qkv-bias); any other mix is
/// named in bias_differs, a mix of norms in norms_differ.
void read_recipe(const Shape& s, const std::string& layer, ModelGraph& g) {
  g.rmsnorm = s.norms > 0 && s.rms_norms == s.norms;
  g.norms_differ = s.rms_norms > 0 && s.rms_norms < s.norms
                       ? std::to_string(s.rms_norms) + " of the " + std::to_string(s.norms) + " norms of layer '" +
                             layer + "' are RMSNorm"
                       : std::string();
  const int biased = static_cast<int>(s.biased.size());
  g.linear_bias = biased > 0 || s.linears == 0, g.qkv_bias = false, g.bias_differs.clear();
  if (biased > 0 && biased < s.linears && s.qkv_biases_only) {
    g.linear_bias = false, g.qkv_bias = true;
  } else if (biased > 0 && biased < s.linears) {
    g.bias_differs = std::to_string(biased) + " of the " + std::to_string(s.linears) + " linears of layer '" + layer +
                     "' have biases (";
    for (int i = 0; i < biased; ++i) g.bias_differs += (i ? ", " : "") + s.biased[i];
    g.bias_differs += ")";
  }
}

}  // namespace

void read_architecture(ModelGraph& g) {
  std::vector<Shape> shapes;
  const Layer* first_layer = nullptr;
  for (const auto& l : g.layers)
    if (l.kind == LayerKind::kTransformer) {
      shapes.push_back(shape_of(l));
      if (!first_layer) first_layer = &l;
    }
  if (shapes.empty()) return;
  const Shape& first = shapes.front();
  read_recipe(first, first_layer->name, g);
  g.heads = first.heads > 0 ? first.heads : g.heads;
  g.kv_heads = first.kv_heads < first.heads ? first.kv_heads : 0;
  g.head_dim = first.heads > 0 && first.head_width * first.heads != g.hidden ? first.head_width : 0;
  g.swiglu = first.gated;
  g.qk_norm = first.qk_norm;
  g.parallel_block = first.parallel_block;
  g.bidirectional = false;
  for (const auto& l : g.layers)
    for (const auto& op : l.ops)
      if (op.type == OpType::kAttention && !op.causal) g.bidirectional = true;  // (experts and top-k: the graph's first MoE op's, set by the reader)
  // Dense and MoE layers may mix (a few dense layers first, as DeepSeek's and GLM's): the MLP width is the dense
  // layers', each expert's is its own, and which layers are MoE is a pattern Megatron-LM takes.
  const Shape* first_dense = nullptr;
  const Shape* first_moe = nullptr;
  for (const Shape& s : shapes) {
    if (s.experts == 0 && !first_dense) first_dense = &s;
    if (s.experts > 0 && !first_moe) first_moe = &s;
  }
  g.ffn = first_dense ? first_dense->ffn : first.ffn;
  g.moe_ffn = first_moe ? first_moe->ffn : 0;
  g.moe_layer_pattern.clear();
  if (first_dense && first_moe) {
    // Run-length: "[0]*3+[1]*29", a Python expression Megatron-LM evaluates (no spaces or parentheses: one word
    // for `$(cat args)`; pasted into a shell it wants quotes, as brackets and stars are glob characters).
    for (size_t i = 0; i < shapes.size();) {
      size_t j = i;
      while (j < shapes.size() && (shapes[j].experts > 0) == (shapes[i].experts > 0)) ++j;
      g.moe_layer_pattern += std::string(g.moe_layer_pattern.empty() ? "" : "+") + (shapes[i].experts > 0 ? "[1]" : "[0]") +
                             (j - i > 1 ? "*" + std::to_string(j - i) : "");
      i = j;
    }
  }
  std::set<int64_t> hidden, heads, kv, width, dense_ffn, moe_ffn, experts, top_k, gated, qk, parallel;
  std::set<std::string> biases;
  std::set<std::string> norm_kinds;
  for (const Shape& s : shapes) {
    // Biases on every linear or none compare alike between dense and MoE layers (whose linears differ).
    biases.insert(s.biased.empty()                                      ? "none"
                  : static_cast<int>(s.biased.size()) == s.linears ? "all"
                                                                   : s.bias_places);
    // Which of its norms are RMSNorm (the first layer's own mix is norms_differ, which the exports name).
    norm_kinds.insert(s.rms_norms == 0         ? std::string("LayerNorm")
                      : s.rms_norms == s.norms ? std::string("RMSNorm")
                                               : std::to_string(s.rms_norms) + "/" + std::to_string(s.norms));
    hidden.insert(s.hidden), parallel.insert(s.parallel_block);
    heads.insert(s.heads), kv.insert(s.kv_heads), width.insert(s.head_width);
    (s.experts > 0 ? moe_ffn : dense_ffn).insert(s.ffn);
    if (s.experts > 0) experts.insert(s.experts), top_k.insert(s.top_k);
    gated.insert(s.gated), qk.insert(s.qk_norm);
  }
  std::vector<std::string> differ;
  if (hidden.size() > 1) differ.push_back("hidden sizes " + values(hidden));
  if (parallel.size() > 1) differ.push_back("parallel attention and MLP in some layers only");
  if (heads.size() > 1) differ.push_back("attention heads " + values(heads));
  if (kv.size() > 1) differ.push_back("key/value heads " + values(kv));
  if (width.size() > 1) differ.push_back("head widths " + values(width));
  if (experts.size() > 1) differ.push_back("experts " + values(experts));
  if (top_k.size() > 1) differ.push_back("top-k " + values(top_k));
  if (dense_ffn.size() > 1) differ.push_back("MLP widths " + values(dense_ffn));
  if (moe_ffn.size() > 1) differ.push_back("expert widths " + values(moe_ffn));
  if (gated.size() > 1) differ.push_back("gated and plain MLPs");
  if (qk.size() > 1) differ.push_back("a Q/K norm in some layers only");
  if (norm_kinds.size() > 1) differ.push_back("RMSNorm and LayerNorm in other places in some layers");
  if (biases.size() > 1) differ.push_back("biases on other linears in some layers");
  g.layers_differ.clear();
  for (size_t i = 0; i < differ.size(); ++i) g.layers_differ += (i == 0 ? "" : "; ") + differ[i];
  // The dense MLP's width unread (its first dense layer's; a graph may open with MoE layers), or the first MoE's.
  g.mlp_unread = first_dense && first_dense->ffn == 0;
}

BlockWidths block_widths(const Layer& l) {
  const Shape s = shape_of(l);
  BlockWidths w;
  w.q = static_cast<double>(s.heads) * static_cast<double>(s.head_width);
  w.kv = static_cast<double>(s.kv_heads) * static_cast<double>(s.head_width);
  w.ffn = static_cast<double>(s.ffn);
  w.gated = s.gated;
  w.top_k = s.experts > 0 ? s.top_k : 0;
  return w;
}

}  // namespace tuner::parallel
