// Model and cluster specs: presets with their published sizes, family forms,
// JSON graphs, and the clear errors for bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"

namespace tuner::parallel {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSpec, PresetsHaveTheirPublishedSizes) {
  // GPT-3 175B: 96 layers of 12 h^2 (+ norms) plus one V h embedding, which the LM head shares (tied):
  // 96 * 12 * 12288^2 = 173.95e9; 50257 * 12288 = 0.618e9 -> 174.57e9 (Narayanan et al.'s formula, with their
  // padded vocabulary of 51,200 and the position embedding, 174.6e9; "175B" in the GPT-3 paper).
  const ModelGraph g = parse_model_spec("gpt3-175b");
  EXPECT_EQ(g.transformer_layers, 96);
  EXPECT_NEAR(model_params(g) / 1e9, 174.57, 0.02);
  EXPECT_EQ(g.seq, 2048);
  EXPECT_EQ(g.vocab, 50257);
  // Llama 2 70B with GQA (8 kv heads) and SwiGLU 28672: about 69e9 (68.98 with separate embeddings).
  EXPECT_NEAR(model_params(parse_model_spec("llama2-70b")) / 1e9, 69.0, 0.3);
  // Llama 3 8B: 8.03e9 with untied 128256 vocabulary.
  EXPECT_NEAR(model_params(parse_model_spec("llama3-8b")) / 1e9, 8.03, 0.02);
  // Exactly the released model's count: RMSNorm has a scale and no shift (2h a norm gave 8,030,527,488).
  EXPECT_EQ(model_params(parse_model_spec("llama3-8b")), 8030261248);
  EXPECT_NEAR(model_params(parse_model_spec("llama3-405b")) / 1e9, 405.9, 1.0);
  EXPECT_EQ(parse_model_spec("llama3-70b").seq, 8192);
  // GPT-3 XL: 24 x 12 x 2048^2 + 50257 x 2048 (tied head) = 1.31e9 ("1.3B"; the head counted again made 1.41e9).
  EXPECT_NEAR(model_params(parse_model_spec("gpt3-1.3b")) / 1e9, 1.31, 0.01);
  // Mixtral-like MoE: 46.7e9 parameters.
  EXPECT_NEAR(model_params(parse_model_spec("moe")) / 1e9, 46.7, 0.2);
  EXPECT_GT(model_params(parse_model_spec("mlp")), 0);
}

TEST(ModelSpec, AJsonGraphTiesItsHeadOnlyWhenItSaysSo) {
  // Embedding 1000 x 64, one block, a head linear 64 -> 1000: untied unless "tied_embeddings": true.
  nlohmann::json doc = nlohmann::json::parse(R"({"seq": 128, "layers": [
      {"name": "emb", "kind": "embedding", "output": "e", "ops": [{"name": "e", "type": "embedding", "in": 1000, "out": 64}]},
      {"name": "mlp", "output": "fc", "ops": [{"name": "fc", "type": "linear", "in": 64, "out": 64, "inputs": ["input"]}]},
      {"name": "head", "kind": "head", "output": "lm", "ops": [{"name": "lm", "type": "linear", "in": 64, "out": 1000, "inputs": ["input"]}]}]})");
  const ModelGraph untied = model_from_json(doc, "t.json");
  EXPECT_TRUE(untied.untied_embeddings);
  // Linears have biases unless the graph says "bias": false (fc's 64, the head's 1000, which is not tied).
  EXPECT_EQ(model_params(untied), 2 * 1000 * 64 + 64 * 64 + 64 + 1000);
  doc["tied_embeddings"] = true;
  const ModelGraph tied = model_from_json(doc, "t.json");
  EXPECT_EQ(model_params(tied), 1000 * 64 + 64 * 64 + 64 + 1000);
  EXPECT_EQ(tied_embedding(tied).embedding, 0);
  EXPECT_EQ(tied_embedding(tied).head, 2);
  doc["tied_embeddings"] = "yes";
  EXPECT_NE(error_of([&] { model_from_json(doc, "t.json"); }).find("tied_embeddings"), std::string::npos);
  doc["tied_embeddings"] = true;
  doc["layers"][2]["ops"][0]["out"] = 999;  // a head of another shape cannot share the embedding
  const std::string e = error_of([&] { model_from_json(doc, "t.json"); });
  EXPECT_NE(e.find("tied_embeddings: true, but no \"head\" layer has a linear of an embedding's transposed shape "
                   "(64 -> 1000 for 'e')"),
            std::string::npos)
      << e;
}

TEST(ModelSpec, TheTokenEmbeddingIsTheOneTheHeadMapsBackToNotTheLargest) {
  // nanoGPT's character model: 65 tokens, 256 learned positions, the head tied to the token embedding. The larger
  // position embedding had been taken for the vocabulary, so the tie was refused and "vocab": 65 too.
  nlohmann::json doc = nlohmann::json::parse(R"({"seq": 256, "tied_embeddings": true, "layers": [
      {"name": "emb", "kind": "embedding", "output": "add", "ops": [
        {"name": "wte", "type": "embedding", "in": 65, "out": 384},
        {"name": "wpe", "type": "embedding", "in": 256, "out": 384},
        {"name": "add", "type": "elementwise", "in": 384, "out": 384, "inputs": ["wte", "wpe"]}]},
      {"name": "mlp", "output": "fc", "ops": [{"name": "fc", "type": "linear", "in": 384, "out": 384, "inputs": ["input"]}]},
      {"name": "head", "kind": "head", "output": "lm", "ops": [{"name": "lm", "type": "linear", "in": 384, "out": 65, "inputs": ["input"]}]}]})");
  const ModelGraph g = model_from_json(doc, "char.json");
  EXPECT_EQ(g.vocab, 65);
  EXPECT_EQ(tied_embedding(g).embedding_op, "wte");
  EXPECT_EQ(model_params(g), 65 * 384 + 256 * 384 + 384 * 384 + 384 + 65);
  doc["vocab"] = 65;
  EXPECT_EQ(model_from_json(doc, "char.json").vocab, 65);
  doc["vocab"] = 256;
  const std::string e = error_of([&] { model_from_json(doc, "char.json"); });
  EXPECT_NE(e.find("vocab: 256 differs from the token embedding 'wte' of 65 rows (the one the head's linear maps back "
                   "to); allowed: 65, or leave"),
            std::string::npos)
      << e;
  // Without a head, "vocab" names the token embedding among several; without it, the largest is taken.
  doc.erase("tied_embeddings");
  doc["layers"].erase(2);
  doc["vocab"] = 65;
  EXPECT_EQ(model_from_json(doc, "char.json").vocab, 65);
  doc.erase("vocab");
  EXPECT_EQ(model_from_json(doc, "char.json").vocab, 256);
  doc["vocab"] = 100;
  EXPECT_NE(error_of([&] { model_from_json(doc, "char.json"); }).find("vocab: 100 is the rows of no embedding; allowed: "
                                                                      "65 ('wte'), 256 ('wpe')"),
            std::string::npos);
}

TEST(ModelSpec, FamilyForms) {
  const ModelGraph g = parse_model_spec("gpt:layers=4,hidden=1024,heads=16,seq=512,vocab=1000");
  EXPECT_EQ(g.layers.size(), 6u);  // embedding, 4 blocks, head
  EXPECT_EQ(g.seq, 512);
  // Blocks 4 * (h*3h + h*h + h*4h + 4h*h + two norms' 4h + the linears' biases 3h + h + 4h + h) + 1000 * h (the
  // embedding, which the head shares; GPT's output layer has no bias) + the final norm's 2h.
  const int64_t h = 1024;
  EXPECT_EQ(model_params(g), 4 * (12 * h * h + 4 * h + 9 * h) + 1000 * h + 2 * h);
  EXPECT_TRUE(tied_embedding(g).tied());
  EXPECT_EQ(tied_embedding(g).params, 1000 * h);
  const ModelGraph l = parse_model_spec("llama:layers=2,hidden=512,heads=8,kv_heads=2,ffn=1024");
  EXPECT_EQ(l.seq, 4096);
  EXPECT_FALSE(tied_embedding(l).tied());
  const ModelGraph m = parse_model_spec("moe:layers=2,hidden=512,heads=8,experts=4,top_k=2");
  EXPECT_EQ(m.transformer_layers, 2);
  EXPECT_EQ(parse_model_spec("mlp:layers=3,hidden=256").layers.size(), 3u);
}

TEST(ModelSpec, BadSpecsGiveOneClearLine) {
  EXPECT_NE(error_of([] { parse_model_spec("gpt:layers=4,hidden=x,heads=2"); }).find("not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("gpt:layers=4,heads=2"); }).find("missing hidden"), std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("gpt:layers=0,hidden=64,heads=2"); }).find("layers=0 is out of range; allowed: 1..10,000"), std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("gpt:layers=2,hidden=64,heads=2,colour=3"); }).find("unknown key"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("bert:layers=2"); }).find("unknown model family"), std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("gpt4"); }).find("allowed"), std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("gpt:layers=2,hidden=100,heads=3"); }).find("multiple of heads"),
            std::string::npos);
}

nlohmann::json tiny_graph() {
  return nlohmann::json::parse(R"({
    "name": "tiny", "seq": 128,
    "layers": [{"name": "block", "repeat": 3, "ops": [
      {"name": "fc1", "type": "linear", "in": 256, "out": 1024, "inputs": ["input"]},
      {"name": "act", "type": "elementwise", "in": 1024, "out": 1024, "inputs": ["fc1"]},
      {"name": "fc2", "type": "linear", "in": 1024, "out": 256, "inputs": ["act"]},
      {"name": "add", "type": "elementwise", "in": 256, "out": 256, "inputs": ["input", "fc2"]}]}]})");
}

// A transformer layer's "hidden" and "heads" size its activations: they must be its ops' (a layer saying 512 over
// ops of 256 planned 43% more activation memory, exit 0), and it needs an attention op.
TEST(ModelSpec, ATransformerLayersHiddenAndHeadsAreItsOps) {
  nlohmann::json doc = nlohmann::json::parse(R"({"seq": 128, "layers": [{"name": "block", "kind": "transformer",
      "hidden": 256, "heads": 4, "repeat": 2, "output": "add", "ops": [
      {"name": "qkv", "type": "linear", "in": 256, "out": 768, "inputs": ["input"]},
      {"name": "attn", "type": "attention", "in": 768, "out": 256, "heads": 4, "inputs": ["qkv"]},
      {"name": "add", "type": "elementwise", "in": 256, "out": 256, "inputs": ["input", "attn"]}]}]})");
  EXPECT_EQ(model_from_json(doc, "t.json").transformer_layers, 2);
  doc["layers"][0]["hidden"] = 512;
  EXPECT_NE(error_of([&] { model_from_json(doc, "t.json"); }).find("hidden 512 differs from its output 'add' of 256 "
                                                                   "features; allowed: 256"),
            std::string::npos);
  doc["layers"][0]["hidden"] = 256;
  doc["layers"][0]["heads"] = 8;
  EXPECT_NE(error_of([&] { model_from_json(doc, "t.json"); }).find("heads 8 differs from its attention op 'attn' of 4 "
                                                                   "heads; allowed: 4"),
            std::string::npos);
  doc["layers"][0]["heads"] = 4;
  doc["layers"][0]["ops"][1]["type"] = "elementwise";  // 768 -> 256 without attention
  doc["layers"][0]["ops"][1].erase("heads");
  const std::string e = error_of([&] { model_from_json(doc, "t.json"); });
  EXPECT_NE(e.find("a transformer layer needs an attention op"), std::string::npos) << e;
}

TEST(ModelSpec, JsonGraph) {
  const ModelGraph g = model_from_json(tiny_graph(), "tiny.json");
  EXPECT_EQ(g.layers.size(), 3u);
  EXPECT_EQ(g.hidden, 256);
  EXPECT_EQ(model_params(g), 3 * (2 * 256 * 1024 + 1024 + 256));  // weights and biases
  EXPECT_EQ(g.layers[0].signature(), g.layers[2].signature());
}

TEST(ModelSpec, JsonGraphErrors) {
  auto cyclic = tiny_graph();
  cyclic["layers"][0]["ops"][0]["inputs"] = {"fc2"};  // fc1 <- fc2 <- act <- fc1
  EXPECT_NE(error_of([&] { model_from_json(cyclic, "c.json"); }).find("cycle"), std::string::npos);
  auto mismatch = tiny_graph();
  mismatch["layers"][0]["ops"][2]["in"] = 512;
  EXPECT_NE(error_of([&] { model_from_json(mismatch, "m.json"); }).find("shape mismatch"), std::string::npos);
  // A repeated layer whose output is not its input's width fails at its second repeat, named as the user
  // wrote it (layers[0], repeat 2 of 3), not by its place in the expanded chain ("layer 1").
  auto widening = tiny_graph();
  widening["layers"][0]["ops"][2]["out"] = 512;
  widening["layers"][0]["ops"][3] = {{"name", "add"}, {"type", "elementwise"}, {"in", 512}, {"out", 512},
                                     {"inputs", {"fc2"}}};
  const std::string e = error_of([&] { model_from_json(widening, "w.json"); });
  EXPECT_NE(e.find("model 'w.json' layers[0], repeat 2 of 3 (block) op 'fc1': shape mismatch, input 'input' has "
                   "512 features but the op expects 256 (a repeated layer's output must have its input's width)"),
            std::string::npos)
      << e;
  auto unknown = tiny_graph();
  unknown["layers"][0]["ops"][1]["type"] = "conv3d";
  EXPECT_NE(error_of([&] { model_from_json(unknown, "u.json"); }).find("unknown operator type 'conv3d'"),
            std::string::npos);
  auto negative = tiny_graph();
  negative["layers"][0]["ops"][0]["out"] = -4;
  EXPECT_NE(error_of([&] { model_from_json(negative, "n.json"); }).find("layers[0].ops[0].out: -4 is out of range"),
            std::string::npos);
  auto dangling = tiny_graph();
  dangling["layers"][0]["ops"][3]["inputs"] = {"input", "fc9"};
  EXPECT_NE(error_of([&] { model_from_json(dangling, "d.json"); }).find("unknown input 'fc9'"), std::string::npos);
}

TEST(ModelSpec, JsonFieldsAreTypedAndBounded) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  } cases[] = {
      {[](nlohmann::json& j) { j["name"] = 123; }, "model 't.json': name: 123 is not a string"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][1]["type"] = 5; }, "layers[0].ops[1].type: 5 is not a string"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][0]["gated"] = "yes"; }, "layers[0].ops[0].gated"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][0]["in"] = 2.5; }, "layers[0].ops[0].in: 2.5 is not an integer"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][0]["out"] = 1e300; }, "layers[0].ops[0].out"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][0]["inputs"] = {7}; }, "layers[0].ops[0].inputs[0]"},
      {[](nlohmann::json& j) { j["layers"][0]["repeat"] = 1000000000; }, "layers[0].repeat: 1000000000 is out of range"},
      {[](nlohmann::json& j) { j["layers"][0]["repeat"] = "3"; }, "layers[0].repeat: \"3\" is not an integer"},
      {[](nlohmann::json& j) { j["seq"] = -1; }, "seq: -1 is out of range; allowed: an integer in 1..1,048,576"},
      {[](nlohmann::json& j) { j.erase("seq"); }, "seq: missing; allowed: an integer in 1..1,048,576"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][0]["name"] = "a\nb"; }, "control character"},
      {[](nlohmann::json& j) { j["layers"][0]["kind"] = "conv"; }, "layers[0].kind"},
      // Another kind of op's keys were ignored: a linear with "experts" planned as a dense linear.
      {[](nlohmann::json& j) { j["layers"][0]["ops"][0]["experts"] = 8; },
       "layers[0].ops[0].experts: does not apply to a linear op (it is moe_ffn's); allowed keys for linear: name, "
       "type, in, out, inputs, dtype"},
      {[](nlohmann::json& j) { j["layers"][0]["ops"][1]["heads"] = 4; }, "layers[0].ops[1].heads: does not apply"},
      {[](nlohmann::json& j) { j["layers"].push_back(j["layers"][0]); },
       "layers[1].name: \"block\" is the name of layers[0] too; allowed: a name no other layer has"},
      // An op whose result nothing reads was planned and costed as a part of the layer: refused.
      {[](nlohmann::json& j) { j["layers"][0]["ops"][3]["inputs"] = {"input", "fc1"}; },
       "op 'act': its result reaches no output (the layer's output is 'add')"},
      {[](nlohmann::json& j) { j["layers"][0]["output"] = "fc2"; },
       "op 'add': its result reaches no output (the layer's output is 'fc2')"},
  };
  for (const auto& c : cases) {
    nlohmann::json doc = tiny_graph();
    c.edit(doc);
    const std::string e = error_of([&] { model_from_json(doc, "t.json"); });
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Layers that are each fine but together too many: counted before they are copied.
  nlohmann::json many = tiny_graph();
  many["layers"][0]["repeat"] = 6000;
  many["layers"].push_back(many["layers"][0]);
  EXPECT_NE(error_of([&] { model_from_json(many, "t.json"); }).find("at most 10,000 layers"), std::string::npos);
  // A MoE whose parameters no int64 holds.
  nlohmann::json moe = nlohmann::json::parse(R"({"seq": 128, "layers": [{"ops": [{"name": "m", "type": "moe_ffn",
      "in": 16777216, "out": 16777216, "experts": 65536, "top_k": 2, "ffn": 16777216, "gated": true,
      "inputs": ["input"]}]}]})");
  EXPECT_NE(error_of([&] { model_from_json(moe, "t.json"); }).find("10^15 parameters"), std::string::npos);
  // Family forms: int-sized values are checked before they are narrowed.
  EXPECT_NE(error_of([] { parse_model_spec("gpt:layers=4294967297,hidden=64,heads=2"); }).find("1..10,000"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_model_spec("moe:layers=2,hidden=64,heads=2,experts=2147483647,top_k=2"); })
                .find("experts=2147483647 is out of range; allowed: 1..65,536"),
            std::string::npos);
}

TEST(ClusterSpec, JsonFieldsAreTypedAndBounded) {
  const auto base = nlohmann::json::parse(R"({"nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm",
      "intra_node": {"bandwidth_gbps": 450}, "inter_node": {"bandwidth_gbps": 50}})");
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  } cases[] = {
      {[](nlohmann::json& j) { j["gpus_per_node"] = 2147483647; }, "gpus_per_node: 2147483647 is out of range"},
      {[](nlohmann::json& j) { j["nodes"] = 1 << 20; }, "at most 1,048,576 GPUs in a cluster"},
      {[](nlohmann::json& j) { j["memory_gb"] = 1e30; }, "memory_gb: 1e+30 is too large"},
      {[](nlohmann::json& j) { j["memory_gb"] = 0; }, "memory_gb: 0 is too small; allowed: a number > 2 (the GB kept free per GPU: CUDA context, workspaces) and <= 160"},
      {[](nlohmann::json& j) { j["memory_gb"] = 1000; },
       "memory_gb: 1000 is too large; allowed: a number > 2 (the GB kept free per GPU: CUDA context, workspaces) and <= 160"},
      {[](nlohmann::json& j) { j["gpu"] = 5; }, "gpu: 5 is not a string"},
      {[](nlohmann::json& j) { j["nodes"] = "2"; }, "nodes: \"2\" is not an integer"},
      {[](nlohmann::json& j) { j["inter_node"]["latency_us"] = -1; }, "inter_node.latency_us: -1 is too small"},
      {[](nlohmann::json& j) { j["intra_node"] = 450; }, "intra_node: expected"},
      {[](nlohmann::json& j) { j.erase("intra_node"); }, "intra_node: missing; nodes of several GPUs need"},
  };
  for (const auto& c : cases) {
    nlohmann::json doc = base;
    c.edit(doc);
    const std::string e = error_of([&] { cluster_from_json(doc, "c.json"); });
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
  // Nodes of one GPU have no link inside them: intra_node may be left out (it asked for one, latency too).
  nlohmann::json singles = {{"nodes", 4}, {"gpus_per_node", 1}, {"gpu", "h100-sxm"}, {"inter_node", {{"bandwidth_gbps", 50}}}};
  EXPECT_EQ(cluster_from_json(singles, "c.json").total_gpus(), 4);
  nlohmann::json lone = {{"nodes", 1}, {"gpus_per_node", 1}, {"gpu", "h100-sxm"}};
  EXPECT_EQ(cluster_from_json(lone, "c.json").total_gpus(), 1);
  nlohmann::json gh200 = base;
  gh200["memory_gb"] = 144;  // a variant of the type with more memory
  EXPECT_EQ(cluster_from_json(gh200, "c.json").memory_per_gpu_bytes, 144000000000);
  EXPECT_NE(error_of([] { parse_cluster_spec("dgx-h100:268435456"); }).find("at most 1,048,576 GPUs"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_cluster_spec("dgx-h100:131073"); }).find("1..131,072 nodes"), std::string::npos);
  EXPECT_EQ(parse_cluster_spec("dgx-h100:131072").total_gpus(), 1 << 20);
}

TEST(ClusterSpec, PresetsAndErrors) {
  const ClusterSpec h = parse_cluster_spec("dgx-h100:128");
  EXPECT_EQ(h.total_gpus(), 1024);
  EXPECT_EQ(h.gpu.key, "h100-sxm");
  EXPECT_DOUBLE_EQ(h.intra.bandwidth_gbps, 450);  // 900 GB/s NVLink 4, both directions
  EXPECT_DOUBLE_EQ(h.inter.bandwidth_gbps, 50);   // one 400 Gb/s adapter per GPU
  const ClusterSpec a = parse_cluster_spec("dgx-a100:2");
  EXPECT_DOUBLE_EQ(a.inter.bandwidth_gbps, 25);   // 8 x 200 Gb/s per node of 8 GPUs
  const ClusterSpec h2 = parse_cluster_spec("dgx-h200:2");
  EXPECT_EQ(h2.gpu.key, "h200-sxm");
  EXPECT_EQ(h2.memory_per_gpu_bytes, static_cast<int64_t>(141e9));
  EXPECT_DOUBLE_EQ(h2.inter.bandwidth_gbps, h.inter.bandwidth_gbps);
  EXPECT_NE(error_of([] { parse_cluster_spec("dgx-v100:4"); }).find("dgx-h200:NODES"), std::string::npos);
  EXPECT_NE(error_of([] { parse_cluster_spec("dgx-h100:0"); }).find("nodes must be positive"), std::string::npos);
  EXPECT_NE(error_of([] { parse_cluster_spec("dgx-v100:4"); }).find("unknown cluster preset"), std::string::npos);
  auto doc = nlohmann::json::parse(R"({"nodes": 2, "gpus_per_node": 4, "gpu": "b200",
      "intra_node": {"bandwidth_gbps": 450, "latency_us": 3}, "inter_node": {"bandwidth_gbps": 50}})");
  const std::string e = error_of([&] { cluster_from_json(doc, "c.json"); });
  EXPECT_NE(e.find("unknown GPU type 'b200'"), std::string::npos);
  EXPECT_NE(e.find("h100-sxm"), std::string::npos);
  doc["gpu"] = "a100-sxm4-80gb";
  doc["gpus_per_node"] = -1;
  EXPECT_NE(error_of([&] { cluster_from_json(doc, "c.json"); }).find("gpus_per_node: -1 is out of range"),
            std::string::npos);
  doc["gpus_per_node"] = 4;
  const ClusterSpec j = cluster_from_json(doc, "c.json");
  EXPECT_EQ(j.total_gpus(), 8);
  EXPECT_EQ(j.memory_per_gpu_bytes, 80000000000);
  EXPECT_EQ(j.name, "c.json") << "no name of its own: the path names it";
  EXPECT_DOUBLE_EQ(j.inter.latency_us, 5) << "the documented default";
  doc["name"] = "lab-a100";
  EXPECT_EQ(cluster_from_json(doc, "c.json").name, "lab-a100");
}

TEST(ClusterSpec, AKeyGivenTwiceIsBadInputNotTheLastValue) {
  const std::string path = ::testing::TempDir() + "twice_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm",
      "intra_node": {"bandwidth_gbps": 450, "latency_us": 3, "bandwidth_gbps": 45},
      "inter_node": {"bandwidth_gbps": 50}})";
  const std::string e = error_of([&] { parse_cluster_spec(path); });
  EXPECT_NE(e.find("intra_node.bandwidth_gbps is given twice"), std::string::npos) << e;
  std::ofstream(path) << R"({"nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm",
      "intra_node": {"bandwidth_gbps": 450, "latency_us": 3}, "inter_node": {"bandwidth_gbps": 50, "latency_us": 3}})";
  EXPECT_EQ(parse_cluster_spec(path).intra.bandwidth_gbps, 450) << "the same key in two objects is not a repeat";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tuner::parallel
