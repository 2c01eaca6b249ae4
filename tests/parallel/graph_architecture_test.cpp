// What the exports read from a JSON graph's transformer layers (graph_architecture.h): the MLP's width and gating
// through the shapes real graphs take (fused SwiGLU, split gate x up, dropout after the activation), no MLP taken
// from attention's output projection, a Q/K norm before RoPE, and an MLP it cannot read named rather than guessed.
#include "search/parallel/graph_architecture.h"

#include <algorithm>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "search/parallel/model_spec.h"

namespace tuner::parallel {
namespace {

using Json = nlohmann::json;

Json op(const std::string& name, const std::string& type, int64_t in, int64_t out, std::vector<std::string> inputs) {
  return {{"name", name}, {"type", type}, {"in", in}, {"out", out}, {"inputs", inputs}};
}

/// A block of hidden 1024, 8 heads of width `head` (qkv 3 x 8 x head), its attention, projection and residual,
/// then `mlp` ops ending in "down", and the residual add.
ModelGraph block(int64_t head, std::vector<Json> attn_extra, std::vector<Json> mlp, const std::string& attn_input = "qkv",
                 const std::string& proj_input = "attn") {
  const int64_t h = 1024, qkv = 3 * 8 * head, width = 8 * head;
  Json ops = Json::array();
  ops.push_back(op("ln1", "layernorm", h, h, {"input"}));
  ops.push_back(op("qkv", "linear", h, qkv, {"ln1"}));
  for (auto& x : attn_extra) ops.push_back(x);
  Json attn = op("attn", "attention", qkv, width, {attn_input});
  attn["heads"] = 8;
  ops.push_back(attn);
  if (proj_input != "attn") ops.push_back(op(proj_input, "elementwise", width, width, {"attn"}));
  ops.push_back(op("proj", "linear", width, h, {proj_input}));
  ops.push_back(op("add1", "elementwise", h, h, {"input", "proj"}));
  // (a parallel block's MLP reads ln1: no ln2, which nothing would read)
  if (std::any_of(mlp.begin(), mlp.end(), [](const Json& x) { return x["inputs"].front() == "ln2"; }))
    ops.push_back(op("ln2", "layernorm", h, h, {"add1"}));
  for (auto& x : mlp) ops.push_back(x);
  ops.push_back(op("add2", "elementwise", h, h, {"add1", "down"}));
  Json layer = {{"name", "b"}, {"kind", "transformer"}, {"hidden", h}, {"heads", 8}, {"output", "add2"}, {"ops", ops}};
  return model_from_json({{"seq", 512}, {"layers", {layer}}}, "g.json");
}

TEST(GraphArchitecture, ReadsTheMlpThroughTheShapesRealGraphsTake) {
  // Fused SwiGLU: an activation halving its input.
  ModelGraph g = block(128, {}, {op("up", "linear", 1024, 5632, {"ln2"}), op("act", "elementwise", 5632, 2816, {"up"}),
                                 op("down", "linear", 2816, 1024, {"act"})});
  EXPECT_EQ(g.ffn, 2816);
  EXPECT_TRUE(g.swiglu);
  EXPECT_FALSE(g.mlp_unread);
  // ... with dropout after it.
  g = block(128, {}, {op("up", "linear", 1024, 5632, {"ln2"}), op("act", "elementwise", 5632, 2816, {"up"}),
                      op("drop", "elementwise", 2816, 2816, {"act"}), op("down", "linear", 2816, 1024, {"drop"})});
  EXPECT_EQ(g.ffn, 2816);
  EXPECT_TRUE(g.swiglu) << "the dropout is not the activation";
  // Split SwiGLU: silu(gate) x up.
  g = block(128, {}, {op("gate", "linear", 1024, 2816, {"ln2"}), op("up", "linear", 1024, 2816, {"ln2"}),
                      op("silu", "elementwise", 2816, 2816, {"gate"}), op("mul", "elementwise", 2816, 2816, {"silu", "up"}),
                      op("down", "linear", 2816, 1024, {"mul"})});
  EXPECT_EQ(g.ffn, 2816);
  EXPECT_TRUE(g.swiglu);
  // A plain GeLU MLP.
  g = block(128, {}, {op("up", "linear", 1024, 4096, {"ln2"}), op("gelu", "elementwise", 4096, 4096, {"up"}),
                      op("down", "linear", 4096, 1024, {"gelu"})});
  EXPECT_EQ(g.ffn, 4096);
  EXPECT_FALSE(g.swiglu);
}

TEST(GraphArchitecture, AttentionsProjectionIsNoMlpAndAnUnreadMlpIsNamed) {
  // 8 heads of 256 on hidden 1024: attn -> dropout -> proj (2048 -> 1024) looks like a down projection from an
  // activation; it had been read as an MLP of 2048. Here the MLP is a linear chain it cannot read.
  const ModelGraph g = block(256, {}, {op("up", "linear", 1024, 3000, {"ln2"}), op("down", "linear", 3000, 1024, {"up"})},
                             "qkv", "attn_drop");
  EXPECT_EQ(g.ffn, 0);
  EXPECT_TRUE(g.mlp_unread);
  EXPECT_EQ(g.head_dim, 256);
}

TEST(GraphArchitecture, AQkNormBeforeRopeIsFound) {
  const int64_t qkv = 3 * 8 * 128;
  ModelGraph g = block(128, {op("qkn", "layernorm", qkv, qkv, {"qkv"}), op("rope", "elementwise", qkv, qkv, {"qkn"})},
                       {op("up", "linear", 1024, 4096, {"ln2"}), op("gelu", "elementwise", 4096, 4096, {"up"}),
                        op("down", "linear", 4096, 1024, {"gelu"})},
                       "rope");
  EXPECT_TRUE(g.qk_norm);
  g = block(128, {}, {op("up", "linear", 1024, 4096, {"ln2"}), op("gelu", "elementwise", 4096, 4096, {"up"}),
                      op("down", "linear", 4096, 1024, {"gelu"})});
  EXPECT_FALSE(g.qk_norm);
}

}  // namespace
}  // namespace tuner::parallel

namespace tuner::parallel {
namespace {

// The memory model's activation widths come from the same reading: Llama's GQA and SwiGLU, a MoE's experts per
// token, and the GPT form's defaults where a layer is a plain 4h MLP.
TEST(GraphArchitecture, BlockWidthsAreTheLayersAttentionAndMlpWidths) {
  const auto widths_of = [](const std::string& spec) {
    const ModelGraph g = parse_model_spec(spec);
    for (const Layer& l : g.layers)
      if (l.kind == LayerKind::kTransformer) return block_widths(l);
    return BlockWidths{};
  };
  const BlockWidths llama = widths_of("llama:layers=2,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=512,vocab=1000");
  EXPECT_EQ(llama.q, 4096);
  EXPECT_EQ(llama.kv, 1024);
  EXPECT_EQ(llama.ffn, 14336);
  EXPECT_TRUE(llama.gated);
  EXPECT_EQ(llama.top_k, 0);
  const BlockWidths gpt = widths_of("gpt:layers=2,hidden=1024,heads=16,seq=512,vocab=1000");
  EXPECT_EQ(gpt.ffn, 4096);
  EXPECT_FALSE(gpt.gated);
  const BlockWidths moe = widths_of("moe:layers=2,hidden=1024,heads=16,experts=8,top_k=2,seq=512,vocab=1000");
  EXPECT_EQ(moe.top_k, 2);
  EXPECT_GT(moe.ffn, 0);
  // A wider MLP is more activation memory at the same hidden size.
  const double s = 512, h = 4096;
  EXPECT_GT(transformer_activation_bytes(s, 1, h, 32, 1, false, Recompute::kNone, true, llama),
            transformer_activation_bytes(s, 1, h, 32, 1, false, Recompute::kNone, true, {}));
}

// GPT-J's and PaLM's block runs the MLP beside attention on one norm's output; a funnel changes the hidden size
// between layers. Neither is what an engine's model builds, and the exports said nothing of either.
TEST(GraphArchitecture, AParallelBlockAndAFunnelAreNamed) {
  const std::vector<Json> mlp = {op("up", "linear", 1024, 4096, {"ln1"}), op("act", "elementwise", 4096, 4096, {"up"}),
                                 op("down", "linear", 4096, 1024, {"act"})};
  ModelGraph g = block(128, {}, mlp);
  EXPECT_TRUE(g.parallel_block);
  EXPECT_EQ(g.ffn, 4096);
  EXPECT_TRUE(g.layers_differ.empty()) << g.layers_differ;
  std::vector<Json> sequential = mlp;
  sequential[0]["inputs"] = {"ln2"};
  EXPECT_FALSE(block(128, {}, sequential).parallel_block);
  // The MLP first, then attention on its result: sequential too (attention reads the MLP).
  {
    Json attn = op("attn", "attention", 3072, 1024, {"qkv"});
    attn["heads"] = 8;
    const Json ops = {op("ln1", "layernorm", 1024, 1024, {"input"}), op("up", "linear", 1024, 4096, {"ln1"}),
                      op("act", "elementwise", 4096, 4096, {"up"}), op("down", "linear", 4096, 1024, {"act"}),
                      op("add1", "elementwise", 1024, 1024, {"input", "down"}),
                      op("ln2", "layernorm", 1024, 1024, {"add1"}), op("qkv", "linear", 1024, 3072, {"ln2"}), attn,
                      op("proj", "linear", 1024, 1024, {"attn"}), op("add2", "elementwise", 1024, 1024, {"add1", "proj"})};
    const Json layer = {{"name", "b"}, {"kind", "transformer"}, {"hidden", 1024}, {"heads", 8}, {"output", "add2"},
                        {"ops", ops}};
    const ModelGraph mlp_first = model_from_json({{"seq", 512}, {"layers", {layer}}}, "m.json");
    EXPECT_EQ(mlp_first.ffn, 4096);
    EXPECT_FALSE(mlp_first.parallel_block);
  }
  // A block of 1024, then one that projects down to 512 and works there.
  Json wide = Json::array(), narrow = Json::array();
  for (const auto& [ops, h, in] : {std::tuple{&wide, 1024, "input"}, std::tuple{&narrow, 512, "in_proj"}}) {
    const int64_t qkv = 3 * (h / 64) * 64;
    Json attn = op("attn", "attention", qkv, h, {"qkv"});
    attn["heads"] = h / 64;
    for (const Json& o : {op("ln1", "layernorm", h, h, {in}), op("qkv", "linear", h, qkv, {"ln1"}), attn,
                          op("proj", "linear", h, h, {"attn"}), op("add1", "elementwise", h, h, {in, "proj"}),
                          op("ln2", "layernorm", h, h, {"add1"}), op("up", "linear", h, 4 * h, {"ln2"}),
                          op("act", "elementwise", 4 * h, 4 * h, {"up"}), op("down", "linear", 4 * h, h, {"act"}),
                          op("add2", "elementwise", h, h, {"add1", "down"})})
      ops->push_back(o);
  }
  narrow.insert(narrow.begin(), op("in_proj", "linear", 1024, 512, {"input"}));
  const Json layers = {
      {{"name", "wide"}, {"kind", "transformer"}, {"hidden", 1024}, {"heads", 16}, {"output", "add2"}, {"ops", wide}},
      {{"name", "narrow"}, {"kind", "transformer"}, {"hidden", 512}, {"heads", 8}, {"output", "add2"}, {"ops", narrow}}};
  g = model_from_json({{"seq", 512}, {"layers", layers}}, "funnel.json");
  EXPECT_EQ(g.layers_differ, "hidden sizes 512 and 1024; attention heads 8 and 16; key/value heads 8 and 16; MLP widths 2048 and 4096");
  EXPECT_FALSE(g.parallel_block);
}

}  // namespace
}  // namespace tuner::parallel
