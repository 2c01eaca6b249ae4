// A plan for an engine shards each op the way that engine's tensor parallelism runs it (layer_sharding.h,
// TensorLayoutRules); a plan for no engine keeps Alpa's whole space; sp pins and the residual stream.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/layer_sharding.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

/// "block/qkv=C", ... for every op of every stage.
std::vector<std::string> strategies(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& st : p.stages)
    for (const auto& ls : st.sharding)
      for (const auto& op : ls.ops) out.push_back(ls.layer + "/" + op.op + "=" + op.strategy);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Plan plan_for(const ModelGraph& m, const ClusterSpec& c, Engine e, const std::string& pins, int64_t batch = 32) {
  PlannerOptions o;
  o.global_batch = batch;
  o.engine = e;
  o.pins = parse_pins(pins);
  return Planner(m, c, o).plan();
}

/// One gated-MLP layer as a JSON graph: ln -> gate, up -> mul(gate, up) -> down -> add(input, down).
ModelGraph gated_mlp() {
  const nlohmann::json doc = nlohmann::json::parse(R"({"seq": 1024, "layers": [{"name": "mlp", "repeat": 2, "ops": [
      {"name": "ln", "type": "layernorm", "in": 2048, "out": 2048, "inputs": ["input"]},
      {"name": "gate", "type": "linear", "in": 2048, "out": 8192, "inputs": ["ln"]},
      {"name": "up", "type": "linear", "in": 2048, "out": 8192, "inputs": ["ln"]},
      {"name": "mul", "type": "elementwise", "in": 8192, "out": 8192, "inputs": ["gate", "up"]},
      {"name": "down", "type": "linear", "in": 8192, "out": 2048, "inputs": ["mul"]},
      {"name": "add", "type": "elementwise", "in": 2048, "out": 2048, "inputs": ["input", "down"]}]}]})");
  return model_from_json(doc, "gated.json");
}

TEST(EngineLayouts, TheResidualStreamIsFoundFromTheDataFlow) {
  const ModelGraph gpt = parse_model_spec("gpt:layers=2,hidden=1024,heads=16,seq=1024,vocab=32000");
  const Layer& block = gpt.layers.at(1);
  const std::vector<bool> r = residual_stream(block);
  std::vector<std::string> on;
  for (size_t k = 0; k < r.size(); ++k)
    if (r[k]) on.push_back(block.ops[k].name);
  EXPECT_EQ(on, (std::vector<std::string>{"ln1", "add1", "ln2", "add2"}));
  // A gating multiply of two projections has two inputs but is inside the MLP, not a residual add.
  const ModelGraph g = gated_mlp();
  const std::vector<bool> rg = residual_stream(g.layers.at(0));
  EXPECT_EQ(rg, (std::vector<bool>{true, false, false, false, false, true}));
}

// llama3-8b at tp 8 on one A100 node: with no engine the ILP may split qkv and proj by tokens inside the tensor
// group (replicated weights). Megatron-LM cannot run that; a plan for it pays for the layouts it runs.
TEST(EngineLayouts, APlanForAnEngineUsesOnlyTheLayoutsItsTensorParallelismRuns) {
  const ModelGraph m = parse_model_spec("llama3-8b");
  const ClusterSpec c = parse_cluster_spec("dgx-a100:1");
  const std::string pins = "tp=8,pp=1,dp=1,mbs=1,recompute=full,zero=0";
  const Plan generic = plan_for(m, c, Engine::kGeneric, pins);
  const Plan megatron = plan_for(m, c, Engine::kMegatron, pins);
  const Plan deepspeed = plan_for(m, c, Engine::kDeepSpeed, pins);
  EXPECT_GE(megatron.iteration_time_s, generic.iteration_time_s * 0.999);

  // Megatron-LM: every op as its tensor parallelism lays it out, sequence parallelism on every layer.
  const auto mg = strategies(megatron);
  for (const char* s : {"embedding/embed=V", "block/ln1=B", "block/qkv=C", "block/attn=H", "block/proj=K",
                        "block/add1=B", "block/ln2=B", "block/fc1=C", "block/act=F", "block/fc2=K", "block/add2=B",
                        "head/ln_f=B", "head/lm_head=C", "head/loss=F"})
    EXPECT_TRUE(has(mg, s)) << s;
  EXPECT_EQ(mg.size(), 14u);
  EXPECT_TRUE(megatron.sequence_parallel);
  // DeepSpeed's AutoTP: no sequence parallelism, the embedding split over hidden, the head row-parallel with
  // whole logits (LmHeadLinearAllreduce) and the loss on them.
  const auto ds = strategies(deepspeed);
  for (const char* s : {"embedding/embed=C", "block/ln1=R", "block/qkv=C", "block/attn=H", "block/proj=K",
                        "block/add1=R", "block/act=F", "block/fc2=K", "head/ln_f=R", "head/lm_head=K", "head/loss=R"})
    EXPECT_TRUE(has(ds, s)) << s;
  EXPECT_FALSE(deepspeed.sequence_parallel);
  EXPECT_GT(deepspeed.iteration_time_s, megatron.iteration_time_s);
}

// torchtitan's TP plan always runs its norms as SequenceParallel; across two nodes (tp 16, a 2 x 8 mesh) an engine
// splits the same way on both mesh dimensions: one tensor group.
TEST(EngineLayouts, TorchtitanSplitsNormsByTokensAndOneGroupSpansTwoNodes) {
  const ModelGraph m = parse_model_spec("gpt:layers=4,hidden=4096,heads=32,seq=2048,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  const Plan tt = plan_for(m, c, Engine::kTorchtitan, "tp=8,pp=1,dp=2,mbs=1,zero=2");
  const auto s = strategies(tt);
  for (const char* want : {"block/ln1=B", "block/add1=B", "block/ln2=B", "block/add2=B", "head/ln_f=B"})
    EXPECT_TRUE(has(s, want)) << want;

  const Plan wide = plan_for(m, c, Engine::kMegatron, "tp=16,pp=1,dp=1,mbs=1");
  ASSERT_EQ(wide.stages[0].mesh.d0, 2);
  for (const auto& ls : wide.stages[0].sharding)
    for (const auto& op : ls.ops) {
      ASSERT_EQ(op.strategy.size(), 3u) << op.op;
      EXPECT_EQ(op.strategy[0], op.strategy[2]) << ls.layer << "/" << op.op << "=" << op.strategy;
    }
}

// A gating multiply is no residual add: it keeps the MLP's feature split (F) under an engine and under sp=0 (it
// was forced whole under sp=0, or split by tokens for Megatron, because it has two inputs).
TEST(EngineLayouts, AGatingMultiplyKeepsTheFeatureSplit) {
  const ModelGraph g = gated_mlp();
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  for (const auto& [engine, pins] : {std::pair{Engine::kMegatron, std::string("tp=8,mbs=1")},
                                     std::pair{Engine::kGeneric, std::string("tp=8,mbs=1,sp=0")}}) {
    const auto s = strategies(plan_for(g, c, engine, pins));
    EXPECT_TRUE(has(s, "mlp/mul=F")) << to_string(engine) << " " << pins;
    EXPECT_TRUE(has(s, "mlp/gate=C") && has(s, "mlp/down=K")) << to_string(engine);
    EXPECT_TRUE(has(s, std::string("mlp/add=") + (engine == Engine::kMegatron ? "B" : "R"))) << to_string(engine);
  }
}

// Without sequence parallelism no op splits tokens over the tensor group and the residual stream stays whole:
// before, the ILP got around sp=0 by splitting proj by tokens and the residual adds by features.
TEST(EngineLayouts, WithoutSequenceParallelismNoOpSplitsTokensOverTheTensorGroup) {
  const ModelGraph m = parse_model_spec("gpt:layers=40,hidden=6144,heads=48,seq=2048,vocab=51200");
  const ClusterSpec c = parse_cluster_spec("dgx-a100:32");
  PlannerOptions o;
  o.global_batch = 1024;
  o.attention = AttentionKernel::kUnfused;
  o.pins = parse_pins("tp=8,pp=1,dp=32,recompute=full,mbs=8,zero=0,sp=0");
  const Plan p = Planner(m, c, o).plan();
  const auto s = strategies(p);
  for (const auto& x : s) EXPECT_EQ(x.find("=B"), std::string::npos) << x;
  for (const char* want : {"block/ln1=R", "block/add1=R", "block/ln2=R", "block/add2=R", "block/proj=K"})
    EXPECT_TRUE(has(s, want)) << want;
}

// Megatron-LM requires sequence parallelism for MoE models with tensor parallelism: planned with it unpinned
// (the plan had none, and the export only warned).
TEST(EngineLayouts, MegatronMoeWithTensorParallelismRunsSequenceParallelism) {
  const ModelGraph moe = parse_model_spec("moe:layers=2,hidden=1024,heads=16,ffn=1024,experts=8,top_k=2,seq=1024");
  const Plan p = plan_for(moe, parse_cluster_spec("dgx-h100:1"), Engine::kMegatron, "tp=8,mbs=1");
  EXPECT_TRUE(p.sequence_parallel);
}

// An sp pin the engine cannot run with tensor parallelism: tp stays 1 when it is free, a pinned tp > 1 is bad input.
// Sequence parallelism needs the micro-batch's tokens to divide by tp.
TEST(EngineLayouts, SequenceParallelPinsAndTokenCountsTheEngineCannotRun) {
  const ModelGraph m = parse_model_spec("gpt:layers=4,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  EXPECT_EQ(plan_for(m, c, Engine::kTorchtitan, "sp=0").config.tp, 1);
  EXPECT_EQ(plan_for(m, c, Engine::kDeepSpeed, "sp=1").config.tp, 1);
  const ModelGraph moe = parse_model_spec("moe:layers=2,hidden=1024,heads=8,ffn=1024,experts=8,top_k=2,seq=1024");
  EXPECT_EQ(plan_for(moe, c, Engine::kMegatron, "sp=0").config.tp, 1);
  std::string why;
  try {
    plan_for(m, c, Engine::kTorchtitan, "sp=0,tp=2");
  } catch (const SpecError& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("--fix sp=0 cannot run on torchtitan with tp=2"), std::string::npos) << why;
  EXPECT_NE(why.find("allowed: tp=1, or sp=1"), std::string::npos) << why;
  EXPECT_THROW(plan_for(m, c, Engine::kDeepSpeed, "sp=1,tp=2"), SpecError);
  EXPECT_NO_THROW(plan_for(m, c, Engine::kMegatron, "sp=1,tp=2"));

  const ModelGraph odd = parse_model_spec("gpt:layers=4,hidden=2048,heads=16,seq=1001,vocab=32000");
  why.clear();
  try {
    plan_for(odd, c, Engine::kTorchtitan, "tp=2,mbs=1,zero=2");
  } catch (const SpecError& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("splits each sequence's 1001 tokens over tp=2, which does not divide them"), std::string::npos)
      << why;
  // Each sequence, not the micro-batch: 8 sequences of 1001 tokens divide by 8, each does not (Megatron splits
  // [s, b, h] along s); it took tp 8 at mbs 8. Megatron without sequence parallelism runs it.
  EXPECT_THROW(plan_for(odd, parse_cluster_spec("dgx-h100:1"), Engine::kMegatron, "tp=8,mbs=8", 64), SpecError);
  EXPECT_EQ(plan_for(odd, parse_cluster_spec("dgx-h100:1"), Engine::kMegatron, "tp=8,mbs=8,sp=0", 64).config.tp, 8);
}

// Post-LN blocks (add, then norm): the norms' outputs carry the residual stream, so the second add and norm are on
// it too (they were not, and half of each layer ran without sequence parallelism). A norm that does not feed
// attention needs whole rows: never split by features.
TEST(EngineLayouts, PostNormBlocksKeepTheirResidualStreamAndOtherNormsTheirRows) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"seq": 1024, "layers": [{"name": "blk", "repeat": 2, "ops": [
      {"name": "qkv", "type": "linear", "in": 2048, "out": 6144, "inputs": ["input"]},
      {"name": "attn", "type": "attention", "in": 6144, "out": 2048, "heads": 16, "inputs": ["qkv"]},
      {"name": "proj", "type": "linear", "in": 2048, "out": 2048, "inputs": ["attn"]},
      {"name": "add1", "type": "elementwise", "in": 2048, "out": 2048, "inputs": ["input", "proj"]},
      {"name": "ln1", "type": "layernorm", "in": 2048, "out": 2048, "inputs": ["add1"]},
      {"name": "fc1", "type": "linear", "in": 2048, "out": 8192, "inputs": ["ln1"]},
      {"name": "ffnln", "type": "layernorm", "in": 8192, "out": 8192, "inputs": ["fc1"]},
      {"name": "fc2", "type": "linear", "in": 8192, "out": 2048, "inputs": ["ffnln"]},
      {"name": "add2", "type": "elementwise", "in": 2048, "out": 2048, "inputs": ["ln1", "fc2"]},
      {"name": "ln2", "type": "layernorm", "in": 2048, "out": 2048, "inputs": ["add2"]}]}]})");
  const ModelGraph g = model_from_json(doc, "postln.json");
  EXPECT_EQ(residual_stream(g.layers.at(0)),
            (std::vector<bool>{false, false, false, true, true, false, false, false, true, true}));
  const auto mg = strategies(plan_for(g, parse_cluster_spec("dgx-h100:1"), Engine::kMegatron, "tp=4,mbs=1"));
  for (const char* want : {"blk/add1=B", "blk/ln1=B", "blk/add2=B", "blk/ln2=B"}) EXPECT_TRUE(has(mg, want)) << want;
  for (Engine e : {Engine::kGeneric, Engine::kMegatron})
    for (const auto& x : strategies(plan_for(g, parse_cluster_spec("dgx-h100:1"), e, "tp=4,mbs=1")))
      EXPECT_NE(x, "blk/ffnln=F") << to_string(e);
}

// A norm after the qkv projection (a Q/K norm) is inside the block: it splits with the heads (F), not by tokens,
// and the plan's sequence-parallel flag follows the residual stream, also in a graph without norms.
TEST(EngineLayouts, ANormInsideABlockSplitsWithTheHeads) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"seq": 1024, "layers": [{"name": "blk", "repeat": 2, "ops": [
      {"name": "ln", "type": "layernorm", "in": 2048, "out": 2048, "inputs": ["input"]},
      {"name": "qkv", "type": "linear", "in": 2048, "out": 6144, "inputs": ["ln"]},
      {"name": "qknorm", "type": "layernorm", "in": 6144, "out": 6144, "inputs": ["qkv"]},
      {"name": "attn", "type": "attention", "in": 6144, "out": 2048, "heads": 16, "inputs": ["qknorm"]},
      {"name": "proj", "type": "linear", "in": 2048, "out": 2048, "inputs": ["attn"]},
      {"name": "add", "type": "elementwise", "in": 2048, "out": 2048, "inputs": ["input", "proj"]}]}]})");
  const ModelGraph g = model_from_json(doc, "qknorm.json");
  EXPECT_EQ(residual_stream(g.layers.at(0)), (std::vector<bool>{true, false, false, false, false, true}));
  const auto s = strategies(plan_for(g, parse_cluster_spec("dgx-h100:1"), Engine::kMegatron, "tp=4,mbs=1"));
  EXPECT_TRUE(has(s, "blk/qknorm=F")) << ::testing::PrintToString(s);
  EXPECT_TRUE(has(s, "blk/ln=B") && has(s, "blk/add=B"));

  const nlohmann::json bare = nlohmann::json::parse(R"({"seq": 1024, "layers": [{"name": "mlp", "repeat": 2, "ops": [
      {"name": "fc1", "type": "linear", "in": 2048, "out": 8192, "inputs": ["input"]},
      {"name": "fc2", "type": "linear", "in": 8192, "out": 2048, "inputs": ["fc1"]},
      {"name": "add", "type": "elementwise", "in": 2048, "out": 2048, "inputs": ["input", "fc2"]}]}]})");
  const Plan p = plan_for(model_from_json(bare, "bare.json"), parse_cluster_spec("dgx-h100:1"), Engine::kMegatron,
                          "tp=4,mbs=1");
  EXPECT_TRUE(has(strategies(p), "mlp/add=B"));
  EXPECT_TRUE(p.sequence_parallel) << "the residual add splits its tokens, so the plan runs sequence parallelism";
}

// A JSON graph's MoE ops and embedding tell the engines' rules and exports what they are: its experts (the
// preset's rules held, a JSON MoE went past them) and its vocabulary (it exported --vocab-size 128).
TEST(EngineLayouts, AJsonGraphsExpertsAndVocabularyComeFromItsOps) {
  const std::string ops = R"("layers": [
      {"name": "emb", "kind": "embedding", "ops": [{"name": "e", "type": "embedding", "in": 50304, "out": 1024,
                                                    "inputs": ["input"]}]},
      {"name": "blk", "repeat": 2, "ops": [
        {"name": "ln", "type": "layernorm", "in": 1024, "out": 1024, "inputs": ["input"]},
        {"name": "moe", "type": "moe_ffn", "in": 1024, "out": 1024, "experts": 8, "top_k": 2, "ffn": 2048,
         "inputs": ["ln"]},
        {"name": "add", "type": "elementwise", "in": 1024, "out": 1024, "inputs": ["input", "moe"]}]}])";
  const ModelGraph g = model_from_json(nlohmann::json::parse("{\"seq\": 1024, " + ops + "}"), "jmoe.json");
  EXPECT_EQ(g.experts, 8);
  EXPECT_EQ(g.top_k, 2);
  EXPECT_EQ(g.vocab, 50304);
  EXPECT_THROW(model_from_json(nlohmann::json::parse("{\"seq\": 1024, \"vocab\": 32000, " + ops + "}"), "j.json"),
               SpecError);
  // With a learned position embedding beside the token embedding, the vocabulary is the larger one's rows.
  const nlohmann::json two = nlohmann::json::parse(R"({"seq": 1024, "vocab": 50304, "layers": [
      {"name": "emb", "kind": "embedding", "output": "sum", "ops": [
        {"name": "wte", "type": "embedding", "in": 50304, "out": 1024, "inputs": ["input"]},
        {"name": "wpe", "type": "embedding", "in": 1024, "out": 1024, "inputs": ["input"]},
        {"name": "sum", "type": "elementwise", "in": 1024, "out": 1024, "inputs": ["wte", "wpe"]}]}]})");
  EXPECT_EQ(model_from_json(two, "gpt2.json").vocab, 50304);
  EXPECT_THROW(plan_for(g, parse_cluster_spec("dgx-h100:1"), Engine::kDeepSpeed, "ep=2,zero=3"), SpecError);
}

}  // namespace
}  // namespace tuner::parallel
