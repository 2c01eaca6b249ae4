#include "search/parallel/model_spec.h"

#include "search/parallel/graph_architecture.h"

#include "search/parallel/spec_json.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace tuner::parallel {

namespace {

Operator make_op(std::string name, OpType t, int64_t in, int64_t out, std::vector<std::string> inputs) {
  Operator op;
  op.name = std::move(name);
  op.type = t;
  op.in_features = in;
  op.out_features = out;
  op.inputs = std::move(inputs);
  return op;
}

TransformerConfig gpt3(const std::string& name, int layers, int64_t hidden, int heads) {
  TransformerConfig c;
  c.name = name;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.seq = 2048;
  c.vocab = 50257;
  return c;
}

/// Rotary positions, RMSNorm, no biases, untied embeddings, no dropout (the Llama papers).
void llama_architecture(TransformerConfig& c, double rope_base) {
  c.rope = true;
  c.rope_base = rope_base;
  c.rmsnorm = true;
  c.linear_bias = false;
  c.untied_embeddings = true;
  c.dropout = 0;
  c.flash_attention = true;
}

TransformerConfig llama(const std::string& name, int layers, int64_t hidden, int heads, int kv, int64_t ffn,
                        int64_t vocab, int64_t seq) {
  TransformerConfig c;
  c.name = name;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv;
  c.ffn = ffn;
  c.swiglu = true;
  c.vocab = vocab;
  c.seq = seq;
  llama_architecture(c, 10000);
  return c;
}

/// Published hyperparameters (GPT-3 paper table 2.1, 13B with the usual 5120 hidden;
/// Llama 2 and Llama 3 model cards); the MoE preset follows Mixtral 8x7B.
std::map<std::string, TransformerConfig> transformer_presets() {
  std::map<std::string, TransformerConfig> p;
  p["gpt3-350m"] = gpt3("gpt3-350m", 24, 1024, 16);
  p["gpt3-1.3b"] = gpt3("gpt3-1.3b", 24, 2048, 16);
  p["gpt3-2.7b"] = gpt3("gpt3-2.7b", 32, 2560, 32);
  p["gpt3-6.7b"] = gpt3("gpt3-6.7b", 32, 4096, 32);
  p["gpt3-13b"] = gpt3("gpt3-13b", 40, 5120, 40);
  p["gpt3-175b"] = gpt3("gpt3-175b", 96, 12288, 96);
  p["llama2-7b"] = llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096);
  p["llama2-13b"] = llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096);
  p["llama2-70b"] = llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096);
  p["llama3-8b"] = llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192);
  p["llama3-70b"] = llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192);
  p["llama3-405b"] = llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192);
  for (const char* k : {"llama3-8b", "llama3-70b", "llama3-405b"}) p[k].rope_base = 500000;
  TransformerConfig moe = llama("moe", 32, 4096, 32, 8, 14336, 32000, 4096);
  moe.rope_base = 1000000;  // Mixtral
  moe.experts = 8;
  moe.top_k = 2;
  p["moe"] = moe;
  return p;
}

/// The range of each family key.
std::pair<int64_t, int64_t> family_range(const std::string& key) {
  if (key == "layers") return {1, kMaxLayers};
  if (key == "hidden") return {1, kMaxHidden};
  if (key == "ffn") return {1, kMaxFfn};
  if (key == "vocab") return {1, kMaxFeatures};
  if (key == "seq") return {1, kMaxSeq};
  return {1, kMaxHeads};  // heads, kv_heads, experts, top_k
}

int64_t parse_int(const std::string& spec, const std::string& key, const std::string& v) {
  const auto [lo, hi] = family_range(key);
  const std::string allowed = "; allowed: " + with_commas(lo) + ".." + with_commas(hi);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range) throw SpecError("model '" + spec + "': " + key + "=" + v + " is out of range" + allowed);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    throw SpecError("model '" + spec + "': " + key + "=" + v + " is not an integer" + allowed);
  if (out < lo || out > hi) throw SpecError("model '" + spec + "': " + key + "=" + v + " is out of range" + allowed);
  return out;
}

/// "family:k=v,k=v" -> map; rejects unknown keys and missing required ones.
std::map<std::string, int64_t> parse_family(const std::string& spec, const std::string& body,
                                            const std::set<std::string>& allowed,
                                            const std::set<std::string>& required) {
  std::map<std::string, int64_t> kv;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t comma = body.find(',', pos);
    std::string item = body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw SpecError("model '" + spec + "': malformed item '" + item + "'; expected key=value");
    std::string key = item.substr(0, eq);
    if (!allowed.count(key)) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      throw SpecError("model '" + spec + "': unknown key '" + key + "'; allowed: " + names);
    }
    if (kv.count(key)) throw SpecError("model '" + spec + "': " + key + " is given twice; allowed: each key once");
    kv[key] = parse_int(spec, key, item.substr(eq + 1));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  for (const auto& r : required)
    if (!kv.count(r)) throw SpecError("model '" + spec + "': missing " + r + "=");
  return kv;
}

ModelGraph parse_family_form(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string family = spec.substr(0, colon), body = spec.substr(colon + 1);
  if (family == "mlp") {
    auto kv = parse_family(spec, body, {"layers", "hidden", "ffn", "seq"}, {"layers", "hidden"});
    const int64_t h = kv["hidden"];
    return build_mlp(spec, static_cast<int>(kv["layers"]), h, kv.count("ffn") ? kv["ffn"] : 4 * h,
                     kv.count("seq") ? kv["seq"] : 2048);
  }
  std::set<std::string> allowed = {"layers", "hidden", "heads", "seq", "vocab", "ffn"};
  if (family == "llama" || family == "moe") {
    allowed.insert("kv_heads");
    allowed.insert("head_dim");
  }
  if (family == "moe") {
    allowed.insert("experts");
    allowed.insert("top_k");
  }
  std::set<std::string> required = {"layers", "hidden", "heads"};
  if (family == "moe") {
    required.insert("experts");
    required.insert("top_k");
  }
  auto kv = parse_family(spec, body, allowed, required);
  TransformerConfig c;
  c.name = spec;
  c.layers = static_cast<int>(kv["layers"]);
  c.hidden = kv["hidden"];
  c.heads = static_cast<int>(kv["heads"]);
  c.kv_heads = kv.count("kv_heads") ? static_cast<int>(kv["kv_heads"]) : 0;
  c.head_dim = kv.count("head_dim") ? kv["head_dim"] : 0;
  c.swiglu = family != "gpt";
  if (family != "gpt") llama_architecture(c, 10000);
  c.seq = kv.count("seq") ? kv["seq"] : (family == "gpt" ? 2048 : 4096);
  c.vocab = kv.count("vocab") ? kv["vocab"] : (family == "gpt" ? 50257 : 32000);
  // Llama's default SwiGLU width: 2/3 of 4h rounded up to a multiple of 256.
  c.ffn = kv.count("ffn") ? kv["ffn"] : (c.swiglu ? (8 * c.hidden / 3 + 255) / 256 * 256 : 4 * c.hidden);
  if (family == "moe") {
    c.experts = static_cast<int>(kv["experts"]);
    c.top_k = static_cast<int>(kv["top_k"]);
    if (c.top_k > c.experts)  // named as the user wrote the model, not as "layer 1 (block) op 'moe'"
      throw SpecError("model '" + spec + "': top_k " + std::to_string(c.top_k) + " exceeds experts " +
                      std::to_string(c.experts) + "; allowed: top_k 1.." + std::to_string(c.experts));
  }
  if (c.head_dim == 0 && c.hidden % c.heads != 0)
    throw SpecError("model '" + spec + "': hidden " + std::to_string(c.hidden) + " is not a multiple of heads " +
                    std::to_string(c.heads));
  return build_transformer(c);
}

}  // namespace

namespace {

/// The model-wide fields of a transformer (its layers come after).
ModelGraph graph_of(const TransformerConfig& c, int kv, int64_t hd, int64_t ffn) {
  ModelGraph g;
  g.name = c.name;
  g.seq = c.seq;
  g.dtype = c.dtype;
  g.vocab = c.vocab;
  g.hidden = c.hidden;
  g.heads = c.heads;
  g.kv_heads = kv < c.heads ? kv : 0;
  g.head_dim = hd * c.heads != c.hidden ? hd : 0;
  g.ffn = ffn;
  g.swiglu = c.swiglu;
  g.experts = c.experts;
  g.top_k = c.top_k;
  g.rope = c.rope;
  g.rope_base = c.rope_base;
  g.rmsnorm = c.rmsnorm;
  g.linear_bias = c.linear_bias;
  g.untied_embeddings = c.untied_embeddings;
  g.dropout = c.dropout;
  g.flash_attention = c.flash_attention;
  return g;
}

}  // namespace

ModelGraph build_transformer(const TransformerConfig& c) {
  if (c.layers <= 0 || c.hidden <= 0 || c.heads <= 0 || c.seq <= 0 || c.vocab <= 0)
    throw SpecError("model '" + c.name + "': layers, hidden, heads, seq and vocab must be positive");
  const int kv = c.kv_heads > 0 ? c.kv_heads : c.heads;
  if (c.heads % kv != 0)
    throw SpecError("model '" + c.name + "': heads " + std::to_string(c.heads) + " is not a multiple of kv_heads " +
                    std::to_string(kv));
  const int64_t h = c.hidden, hd = c.head_dim > 0 ? c.head_dim : h / c.heads, ffn = c.ffn > 0 ? c.ffn : 4 * h;
  if (hd <= 0 || hd * (c.heads + 2LL * kv) > kMaxFeatures)
    throw SpecError("model '" + c.name + "': head width " + std::to_string(hd) + " x heads is out of range; allowed: 1.." +
                    std::to_string(kMaxFeatures) + " features");
  ModelGraph g = graph_of(c, kv, hd, ffn);

  Layer emb;
  emb.name = "embedding";
  emb.kind = LayerKind::kEmbedding;
  emb.ops.push_back(make_op("embed", OpType::kEmbedding, c.vocab, h, {}));
  g.layers.push_back(emb);

  Layer block;
  block.name = "block";
  block.kind = LayerKind::kTransformer;
  block.hidden = h;
  block.heads = c.heads;
  const int64_t qkv = (c.heads + 2LL * kv) * hd;
  block.ops.push_back(make_op("ln1", OpType::kLayerNorm, h, h, {"input"}));
  block.ops.push_back(make_op("qkv", OpType::kLinear, h, qkv, {"ln1"}));
  Operator attn = make_op("attn", OpType::kAttention, qkv, c.heads * hd, {"qkv"});
  attn.heads = c.heads;
  attn.kv_heads = kv;
  attn.dropout = c.dropout;
  block.ops.push_back(attn);
  block.ops.push_back(make_op("proj", OpType::kLinear, c.heads * hd, h, {"attn"}));
  block.ops.push_back(make_op("add1", OpType::kElementwise, h, h, {"input", "proj"}));
  block.ops.back().dropout = c.dropout;  // bias-dropout-add
  block.ops.push_back(make_op("ln2", OpType::kLayerNorm, h, h, {"add1"}));
  std::string mlp_out;
  if (c.experts > 0) {
    Operator moe = make_op("moe", OpType::kMoeFfn, h, h, {"ln2"});
    moe.experts = c.experts;
    moe.top_k = c.top_k;
    moe.ffn = ffn;
    moe.gated = c.swiglu;
    block.ops.push_back(moe);
    mlp_out = "moe";
  } else {
    block.ops.push_back(make_op("fc1", OpType::kLinear, h, c.swiglu ? 2 * ffn : ffn, {"ln2"}));
    block.ops.push_back(make_op("act", OpType::kElementwise, c.swiglu ? 2 * ffn : ffn, ffn, {"fc1"}));
    block.ops.push_back(make_op("fc2", OpType::kLinear, ffn, h, {"act"}));
    mlp_out = "fc2";
  }
  block.ops.push_back(make_op("add2", OpType::kElementwise, h, h, {"add1", mlp_out}));
  block.ops.back().dropout = c.dropout;
  block.output = "add2";
  // The recipe on the ops, as a JSON graph states it: RMSNorm's scale alone (h parameters, not 2h: Llama 3 8B's
  // 8,030,261,248), linears with biases or not.
  for (auto& op : block.ops) {
    if (op.type == OpType::kLayerNorm) op.rms = c.rmsnorm;
    if (op.type == OpType::kLinear) op.bias = c.linear_bias;
  }
  for (int i = 0; i < c.layers; ++i) g.layers.push_back(block);

  Layer head;
  head.name = "head";
  head.kind = LayerKind::kHead;
  head.ops.push_back(make_op("ln_f", OpType::kLayerNorm, h, h, {"input"}));
  head.ops.back().rms = c.rmsnorm;
  head.ops.push_back(make_op("lm_head", OpType::kLinear, h, c.vocab, {"ln_f"}));
  head.ops.back().bias = false;  // GPT's and Llama's output layers have none
  head.ops.push_back(make_op("loss", OpType::kCrossEntropy, c.vocab, 1, {"lm_head"}));
  g.layers.push_back(head);
  validate(g);
  return g;
}

ModelGraph build_mlp(const std::string& name, int layers, int64_t hidden, int64_t ffn, int64_t seq) {
  ModelGraph g;
  g.name = name;
  g.seq = seq;
  g.hidden = hidden;
  Layer l;
  l.name = "mlp";
  l.kind = LayerKind::kGeneric;
  l.ops.push_back(make_op("fc1", OpType::kLinear, hidden, ffn, {"input"}));
  l.ops.push_back(make_op("act", OpType::kElementwise, ffn, ffn, {"fc1"}));
  l.ops.push_back(make_op("fc2", OpType::kLinear, ffn, hidden, {"act"}));
  l.ops.push_back(make_op("add", OpType::kElementwise, hidden, hidden, {"input", "fc2"}));
  for (int i = 0; i < layers; ++i) g.layers.push_back(l);
  validate(g);
  return g;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : transformer_presets()) names.push_back(k);
  names.push_back("mlp");
  return names;
}

namespace {

/// Repeats are counted before anything is copied: a chain longer than the limit is refused unbuilt.
void check_chain_size(const SpecFields& f, const nlohmann::json& layers) {
  int64_t chain = 0, chain_ops = 0;
  for (size_t li = 0; li < layers.size(); ++li) {
    const std::string path = SpecFields::at("layers", li);
    const auto& jl = layers[li];
    f.require_object(jl, path, "an object with an \"ops\" array");
    const int64_t repeat = f.integer(jl, path, "repeat", 1, kMaxLayers, 1);
    const int64_t ops = jl.contains("ops") && jl["ops"].is_array() ? static_cast<int64_t>(jl["ops"].size()) : 0;
    if (ops > kMaxLayerOps)
      f.fail(SpecFields::at(path, "ops"), std::to_string(ops) + " ops; allowed: at most " +
                                              with_commas(kMaxLayerOps) + " ops in a layer");
    chain += repeat;
    chain_ops += repeat * ops;
    if (chain > kMaxLayers)
      f.fail(SpecFields::at(path, "repeat"), "the model reaches " + with_commas(chain) +
                                                 " layers; allowed: at most " + with_commas(kMaxLayers) +
                                                 " layers in a model, repeats counted");
    if (chain_ops > kMaxModelOps)
      f.fail(SpecFields::at(path, "repeat"), "the model reaches " + with_commas(chain_ops) +
                                                 " ops; allowed: at most " + with_commas(kMaxModelOps) +
                                                 " ops in a model, repeats counted");
  }
}

/// One operator object of a layer's "ops" (`op_path` names it in errors); `dtype` is the model's.
Operator op_from_json(const SpecFields& f, const nlohmann::json& jo, const std::string& op_path,
                      const std::string& dtype) {
  Operator op;
  op.name = f.string(jo, op_path, "name", std::nullopt, "a name unique in the layer, other than 'input'");
  const std::string type = f.string(jo, op_path, "type", std::nullopt, op_type_names());
  auto t = op_type_from_string(type);
  if (!t) f.fail(SpecFields::at(op_path, "type"), "unknown operator type '" + type + "'; allowed: " + op_type_names());
  op.type = *t;
  // Keys of one kind of op on another were ignored ("experts" on a linear planned a dense linear): refused.
  {
    static const std::map<std::string, std::vector<OpType>> only_on = {
        {"heads", {OpType::kAttention}},   {"kv_heads", {OpType::kAttention}}, {"causal", {OpType::kAttention}},
        {"experts", {OpType::kMoeFfn}},    {"top_k", {OpType::kMoeFfn}},       {"ffn", {OpType::kMoeFfn}},
        {"gated", {OpType::kMoeFfn}},      {"bias", {OpType::kLinear}},        {"rms", {OpType::kLayerNorm}}};
    for (const auto& [key, types] : only_on)
      if (jo.contains(key) && std::find(types.begin(), types.end(), op.type) == types.end()) {
        std::string allowed = "name, type, in, out, inputs, dtype";
        for (const auto& [k, ts] : only_on)
          if (std::find(ts.begin(), ts.end(), op.type) != ts.end()) allowed += ", " + k;
        f.fail(SpecFields::at(op_path, key), "does not apply to a " + type + " op (it is " +
                                                 to_string(types.front()) + "'s); allowed keys for " + type + ": " +
                                                 allowed);
      }
  }
  if (jo.contains("dtype") && f.string(jo, op_path, "dtype", std::nullopt, "bf16, f16, f32") != dtype)
    f.fail(SpecFields::at(op_path, "dtype"), jo["dtype"].dump() + " differs from the model's '" + dtype +
                                                 "'; allowed: the model's dtype (one dtype per model)");
  op.in_features = f.integer(jo, op_path, "in", 1, kMaxFeatures, std::nullopt);
  op.out_features = f.integer(jo, op_path, "out", 1, kMaxFeatures, std::nullopt);
  op.heads = static_cast<int>(f.integer(jo, op_path, "heads", 0, kMaxHeads, 0));
  op.kv_heads = static_cast<int>(f.integer(jo, op_path, "kv_heads", 0, kMaxHeads, op.heads));
  op.experts = static_cast<int>(f.integer(jo, op_path, "experts", 0, kMaxHeads, 0));
  op.top_k = static_cast<int>(f.integer(jo, op_path, "top_k", 0, kMaxHeads, 0));
  op.ffn = f.integer(jo, op_path, "ffn", 0, kMaxFeatures, 0);
  op.gated = f.boolean(jo, op_path, "gated", false);
  op.causal = f.boolean(jo, op_path, "causal", true);
  op.bias = f.boolean(jo, op_path, "bias", true);
  op.rms = f.boolean(jo, op_path, "rms", false);
  if (jo.contains("inputs")) {
    const std::string in_path = SpecFields::at(op_path, "inputs");
    if (!jo["inputs"].is_array()) f.fail(in_path, json_excerpt(jo["inputs"]) + " is not an array of op names");
    for (size_t k = 0; k < jo["inputs"].size(); ++k) {
      const auto& in = jo["inputs"][k];
      if (!in.is_string() || in.get<std::string>().size() > 256)
        f.fail(SpecFields::at(in_path, k), json_excerpt(in) + " is not an op name (a string of at most 256 bytes)");
      op.inputs.push_back(in.get<std::string>());
    }
  }
  return op;
}

}  // namespace

ModelGraph model_from_json(const nlohmann::json& doc, const std::string& name) {
  const SpecFields f("model '" + name + "'");
  if (!doc.is_object() || !doc.contains("layers") || !doc["layers"].is_array())
    f.fail("", "expected an object with a \"layers\" array");
  f.only_keys(doc, "", {"name", "seq", "dtype", "vocab", "tied_embeddings", "rope_base", "layers"});
  ModelGraph g;
  g.name = f.string(doc, "", "name", name);
  // Required: a silent default would size every activation, and the plan, for some other length.
  g.seq = f.integer(doc, "", "seq", 1, kMaxSeq, std::nullopt);
  g.vocab = f.integer(doc, "", "vocab", 0, kMaxFeatures, 0);
  g.dtype = f.string(doc, "", "dtype", std::string("bf16"), "bf16, f16, f32");
  if (g.dtype != "bf16" && g.dtype != "f16" && g.dtype != "f32")
    f.fail("dtype", json_excerpt(g.dtype) + " is unknown; allowed: bf16, f16, f32");
  const nlohmann::json& layers = doc["layers"];
  check_chain_size(f, layers);
  std::map<std::string, size_t> layer_names;
  for (size_t li = 0; li < layers.size(); ++li) {
    const auto& jl = layers[li];
    const std::string path = SpecFields::at("layers", li);
    if (!jl.contains("ops") || !jl["ops"].is_array()) f.fail(SpecFields::at(path, "ops"), "missing; expected an array");
    f.only_keys(jl, path, {"name", "repeat", "kind", "output", "hidden", "heads", "ops"});
    Layer l;
    l.name = f.string(jl, path, "name", "layer" + std::to_string(li));
    // Names tell layers apart in plans, reports and messages: a second 'enc' was accepted.
    if (const auto [at, fresh] = layer_names.emplace(l.name, li); !fresh)
      f.fail(SpecFields::at(path, "name"), json_excerpt(l.name) + " is the name of layers[" + std::to_string(at->second) +
                                               "] too; allowed: a name no other layer has");
    const std::string kinds = "generic, transformer, embedding, head";
    const std::string kind = f.string(jl, path, "kind", std::string("generic"), kinds);
    if (kind == "generic") l.kind = LayerKind::kGeneric;
    else if (kind == "transformer") l.kind = LayerKind::kTransformer;
    else if (kind == "embedding") l.kind = LayerKind::kEmbedding;
    else if (kind == "head") l.kind = LayerKind::kHead;
    else f.fail(SpecFields::at(path, "kind"), json_excerpt(kind) + " is unknown; allowed: " + kinds);
    l.output = f.string(jl, path, "output", std::string(), "the name of one of the layer's ops");
    l.hidden = f.integer(jl, path, "hidden", 0, kMaxFeatures, 0);
    l.heads = static_cast<int>(f.integer(jl, path, "heads", 0, kMaxHeads, 0));
    if (l.kind == LayerKind::kTransformer && (l.hidden <= 0 || l.heads <= 0))
      f.fail(path, "a transformer layer needs positive \"hidden\" and \"heads\"");
    const nlohmann::json& ops = jl["ops"];
    for (size_t oi = 0; oi < ops.size(); ++oi) {
      const auto& jo = ops[oi];
      const std::string op_path = SpecFields::at(SpecFields::at(path, "ops"), oi);
      f.require_object(jo, op_path, "an operator object");
      f.only_keys(jo, op_path, {"name", "type", "in", "out", "inputs", "heads", "kv_heads", "experts", "top_k", "ffn",
                                "gated", "causal", "dtype", "bias", "rms"});
      l.ops.push_back(op_from_json(f, jo, op_path, g.dtype));
    }
    const int64_t repeat = f.integer(jl, path, "repeat", 1, kMaxLayers, 1);
    for (int64_t r = 0; r < repeat; ++r) {
      l.origin = "model '" + name + "' " + path +
                 (repeat > 1 ? ", repeat " + std::to_string(r + 1) + " of " + std::to_string(repeat) : "");
      g.layers.push_back(l);
    }
  }
  validate(g);
  // What the engines must be told, from the graph's own ops: its MoE experts (the exports' --num-experts and the
  // engines' MoE rules read them) and its vocabulary: the token embedding's rows (token_embedding: the one the LM
  // head maps back to, else the one of the given "vocab" rows, else the largest).
  for (const auto& l : g.layers)
    for (const auto& op : l.ops) {
      if (op.type == OpType::kAttention && g.heads == 0) g.heads = op.heads;
      if (op.type == OpType::kMoeFfn && g.experts == 0) g.experts = op.experts, g.top_k = op.top_k;
    }
  const Operator* token_embedding = parallel::token_embedding(g, g.vocab).op;
  // Every embedding's rows and shape, for the messages below.
  std::string rows, shapes;
  for (const auto& l : g.layers)
    for (const auto& op : l.ops)
      if (op.type == OpType::kEmbedding) {
        rows += (rows.empty() ? "" : ", ") + std::to_string(op.in_features) + " ('" + op.name + "')";
        shapes += (shapes.empty() ? "" : ", ") + std::to_string(op.out_features) + " -> " +
                  std::to_string(op.in_features) + " for '" + op.name + "'";
      }
  if (doc.contains("vocab") && g.vocab > 0 && (!token_embedding || token_embedding->in_features != g.vocab)) {
    // A head pairs with the token embedding: only its rows are the vocabulary.
    if (token_embedding)
      f.fail("vocab", std::to_string(g.vocab) + " differs from the token embedding '" + token_embedding->name +
                          "' of " + std::to_string(token_embedding->in_features) +
                          " rows (the one the head's linear maps back to); allowed: " +
                          std::to_string(token_embedding->in_features) + ", or leave \"vocab\" out");
    f.fail("vocab", std::to_string(g.vocab) + " is the rows of no embedding; allowed: " +
                        (rows.empty() ? std::string("0 (the graph has no embedding)") : rows) +
                        ", or leave \"vocab\" out");
  }
  if (token_embedding) g.vocab = token_embedding->in_features;
  // Positions: an embedding besides the token embedding is a learned one (RoPE has no op to state it by).
  g.position_embedding = false;
  for (const auto& l : g.layers)
    for (const auto& op : l.ops)
      if (op.type == OpType::kEmbedding && &op != token_embedding)
        g.position_embedding = true, g.position_rows = std::max(g.position_rows, op.in_features);
  // Rotary positions have no op of their own: the graph states them by their base.
  if (doc.contains("rope_base")) {
    g.rope_base = f.number(doc, "", "rope_base", 1, false, 1e12, std::nullopt);  // Megatron-LM takes an int
    g.rope = true;
    if (g.position_embedding)
      f.fail("rope_base", "is given, but the graph also has a learned position embedding (an embedding besides the "
                          "token embedding); allowed: one of the two");
  }
  // Separate head weights unless the graph says they are the embedding's (as GPT-2/3 and MPT tie them).
  g.untied_embeddings = !f.boolean(doc, "", "tied_embeddings", false);
  if (!g.untied_embeddings && !tied_embedding(g).tied())
    f.fail("tied_embeddings", "true, but no \"head\" layer has a linear of an embedding's transposed shape (" +
                                  (shapes.empty() ? std::string("the graph has no embedding") : shapes) +
                                  "); allowed: false, or a head linear of the token embedding's");
  // Width passed between layers: the first layer's output.
  const Layer& first = g.layers.front();
  for (const auto& op : first.ops)
    if (op.name == first.output) g.hidden = op.out_features;
  read_architecture(g);  // GQA, head width, MLP width and gating, experts, Q/K norm: what the exports name
  return g;
}

ModelGraph parse_model_spec(const std::string& text) {
  auto allowed = [] {
    std::string names;
    for (const auto& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
    return "allowed: " + names +
           ", gpt:layers=..,hidden=..,heads=.., llama:.., moe:..,experts=..,top_k=.., mlp:.., or a .json file";
  };
  if (text.empty()) throw SpecError("--model is empty; " + allowed());
  auto presets = transformer_presets();
  if (auto it = presets.find(text); it != presets.end()) return build_transformer(it->second);
  if (text == "mlp") return build_mlp("mlp", 16, 8192, 32768, 2048);
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const std::string family = text.substr(0, colon);
    if (family == "gpt" || family == "llama" || family == "moe" || family == "mlp") return parse_family_form(text);
    throw SpecError("unknown model family '" + family + "' in '" + text + "'; allowed: gpt, llama, moe, mlp");
  }
  namespace fs = std::filesystem;
  if (text.size() > 5 && text.substr(text.size() - 5) == ".json") {
    const nlohmann::json doc = read_spec_file(text, "model");
    ModelGraph g = model_from_json(doc, text);
    if (!doc.contains("name")) g.name = fs::path(text).filename().string();
    return g;
  }
  throw SpecError("unknown model '" + text + "'; " + allowed());
}

}  // namespace tuner::parallel
