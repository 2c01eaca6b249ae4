// A plan for an engine shards each op the way that engine's tensor parallelism runs it (layer_sharding.h,
// TensorLayoutRules); a plan for no engine keeps Alpa's whole space.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/layer_sharding.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

const Operator& op_named(const ModelGraph& g, const std::string& layer, const std::string& op) {
  for (const auto& l : g.layers)
    if (l.name == layer)
      for (const auto& o : l.ops)
        if (o.name == op) return o;
  throw std::runtime_error("no op " + layer + "/" + op);
}

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

Plan plan_for(const ModelGraph& m, const ClusterSpec& c, Engine e, const std::string& pins) {
  PlannerOptions o;
  o.global_batch = 32;
  o.engine = e;
  o.pins = parse_pins(pins);
  return Planner(m, c, o).plan();
}

// llama3-8b at tp 8 on one A100 node: with no engine the ILP splits qkv and proj by tokens inside the tensor group
// (replicated weights, cheaper at this batch than Megatron's column/row pair). Megatron-LM cannot run that; a plan
// for it pays for the layouts it runs.
TEST(EngineLayouts, APlanForAnEngineUsesOnlyTheLayoutsItsTensorParallelismRuns) {
  const ModelGraph m = parse_model_spec("llama3-8b");
  const ClusterSpec c = parse_cluster_spec("dgx-a100:1");
  const std::string pins = "tp=8,pp=1,dp=1,mbs=1,recompute=full,zero=0";
  const Plan generic = plan_for(m, c, Engine::kGeneric, pins);
  const Plan megatron = plan_for(m, c, Engine::kMegatron, pins);
  const Plan deepspeed = plan_for(m, c, Engine::kDeepSpeed, pins);

  const auto g = strategies(generic);
  EXPECT_FALSE(has(g, "block/qkv=C") && has(g, "block/proj=K")) << "the generic plan is Megatron's already";
  EXPECT_GE(megatron.iteration_time_s, generic.iteration_time_s * 0.999);

  for (const auto& [plan, engine] : {std::pair{&megatron, Engine::kMegatron}, std::pair{&deepspeed, Engine::kDeepSpeed}})
    for (const auto& st : plan->stages)
      for (const auto& ls : st.sharding)
        for (const auto& op : ls.ops) {
          const Operator& o = op_named(m, ls.layer, op.op);
          ASSERT_EQ(op.strategy.size(), 1u) << op.op;  // a 1 x 8 mesh
          EXPECT_TRUE(tensor_letter_allowed({true, engine}, o.type, o.inputs.size(), op.strategy[0]))
              << to_string(engine) << " " << ls.layer << "/" << op.op << "=" << op.strategy;
        }

  const auto mg = strategies(megatron);
  for (const char* s : {"embedding/embed=V", "block/qkv=C", "block/attn=H", "block/proj=K", "block/fc1=C",
                        "block/fc2=K", "block/ln1=B", "head/lm_head=C", "head/loss=F"})
    EXPECT_TRUE(has(mg, s)) << s;
  EXPECT_TRUE(megatron.sequence_parallel);
  // DeepSpeed's AutoTP: no sequence parallelism, the embedding split over hidden, the loss on whole logits.
  const auto ds = strategies(deepspeed);
  for (const char* s : {"embedding/embed=C", "block/ln1=R", "block/add1=R", "block/qkv=C", "head/loss=R"})
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
  for (const auto& st : p.stages)
    for (const auto& ls : st.sharding)
      for (const auto& op : ls.ops) {
        const Operator& od = op_named(m, ls.layer, op.op);
        EXPECT_EQ(op.strategy.find('B'), std::string::npos) << ls.layer << "/" << op.op << "=" << op.strategy;
        if (od.type == OpType::kLayerNorm || (od.type == OpType::kElementwise && od.inputs.size() > 1)) {
          EXPECT_EQ(op.strategy, "R") << ls.layer << "/" << op.op;
        }
      }
  EXPECT_TRUE(has(strategies(p), "block/proj=K"));
}

TEST(EngineLayouts, SequenceParallelPinsAnEngineCannotRunExitAsBadInput) {
  const ModelGraph m = parse_model_spec("gpt:layers=4,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  try {
    plan_for(m, c, Engine::kTorchtitan, "sp=0");
    FAIL() << "torchtitan with sp=0 was planned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("sp=0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("allowed"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(plan_for(m, c, Engine::kTorchtitan, "sp=0,tp=1"));
  EXPECT_THROW(plan_for(m, c, Engine::kDeepSpeed, "sp=1"), SpecError);
  EXPECT_NO_THROW(plan_for(m, c, Engine::kMegatron, "sp=1,tp=2"));
  const ModelGraph moe = parse_model_spec("moe:layers=2,hidden=1024,heads=8,ffn=1024,experts=8,top_k=2,seq=1024");
  EXPECT_THROW(plan_for(moe, c, Engine::kMegatron, "sp=0,tp=2"), SpecError);
  EXPECT_NO_THROW(plan_for(moe, c, Engine::kMegatron, "sp=0,tp=1"));
}

}  // namespace
}  // namespace tuner::parallel
