// The planner with per-stage submeshes end to end: where a stage's own tp x dp
// pays (a model whose vocabulary weighs like many blocks), the plan takes it,
// shows each stage's shape in the JSON, charges the resharding between stages
// of different shapes, and the exports say they cannot run it.
#include <gtest/gtest.h>

#include <set>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/plan_json.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

const char* kBigVocab = "gpt:layers=16,hidden=2048,heads=16,seq=2048,vocab=512000";

Plan plan_big_vocab(bool per_stage, const std::string& fix = "pp=4,schedule=1f1b") {
  PlannerOptions o;
  o.global_batch = 256;
  o.pins = parse_pins(fix);
  o.per_stage_submeshes = per_stage;
  return Planner(parse_model_spec(kBigVocab), parse_cluster_spec("dgx-h100:2"), o).plan();
}

TEST(PerStagePlan, DifferentShapesPerStagePayForAHeavyVocabulary) {
  // Four stages of 4 GPUs: the embedding and LM head (512k x 2048 weights each, ~8 blocks' worth) want their
  // weights split by tp with no data-parallel copies to gather, the blocks want data parallelism.
  const Plan uniform = plan_big_vocab(false), per_stage = plan_big_vocab(true);
  EXPECT_TRUE(uniform.uniform_stages);
  ASSERT_FALSE(per_stage.uniform_stages);
  EXPECT_EQ(per_stage.partition, "submesh");
  EXPECT_LT(per_stage.iteration_time_s, uniform.iteration_time_s);
  std::set<std::pair<int, int>> shapes;
  for (const StagePlan& st : per_stage.stages) {
    shapes.insert({st.shape.tp, st.shape.dp});
    // Every stage keeps its 4 GPUs and the pipeline's micro-batch.
    EXPECT_EQ(st.shape.tp * st.shape.dp, per_stage.config.tp * per_stage.config.dp);
    EXPECT_EQ(st.shape.micro_batch * st.shape.dp, per_stage.config.micro_batch * per_stage.config.dp);
    EXPECT_EQ(st.mesh.size(), st.shape.tp);
    EXPECT_LE(st.memory.total(), per_stage.memory_capacity_bytes);
    EXPECT_NEAR(st.time.total(), per_stage.iteration_time_s, 1e-9 * per_stage.iteration_time_s);
  }
  EXPECT_GE(shapes.size(), 2u);
  // A stage after one of another shape pays the resharding of the boundary activation; the breakdown shows it.
  for (size_t s = 1; s < per_stage.stages.size(); ++s)
    if (per_stage.stages[s].shape != per_stage.stages[s - 1].shape) {
      EXPECT_GT(per_stage.stages[s].time.reshard_s, 0) << "stage " << s;
    }
  // The JSON carries each stage's own shape.
  const nlohmann::ordered_json j =
      plan_to_json(per_stage, parse_model_spec(kBigVocab), parse_cluster_spec("dgx-h100:2"), 256);
  EXPECT_FALSE(j["uniform_stages"].get<bool>());
  for (size_t s = 0; s < per_stage.stages.size(); ++s) {
    EXPECT_EQ(j["stages"][s]["tp"].get<int>(), per_stage.stages[s].shape.tp);
    EXPECT_EQ(j["stages"][s]["dp"].get<int>(), per_stage.stages[s].shape.dp);
    EXPECT_EQ(j["stages"][s]["micro_batch_size"].get<int>(), per_stage.stages[s].shape.micro_batch);
  }
  // No engine runs stages of different shapes: each export warns and names the reference degrees.
  for (ExportFormat f : {ExportFormat::kMegatron, ExportFormat::kDeepSpeed, ExportFormat::kTorchtitan}) {
    std::vector<std::string> warnings;
    export_plan(f, per_stage, parse_model_spec(kBigVocab), 256, &warnings);
    bool named = false;
    for (const auto& w : warnings) named = named || w.find("one tp and dp on every pipeline stage") != std::string::npos;
    EXPECT_TRUE(named);
    warnings.clear();
    export_plan(f, uniform, parse_model_spec(kBigVocab), 256, &warnings);
    for (const auto& w : warnings) EXPECT_EQ(w.find("one tp and dp on every pipeline stage"), std::string::npos) << w;
  }
  // Same inputs, same plan.
  const Plan again = plan_big_vocab(true);
  ASSERT_EQ(again.stages.size(), per_stage.stages.size());
  EXPECT_DOUBLE_EQ(again.iteration_time_s, per_stage.iteration_time_s);
  for (size_t s = 0; s < again.stages.size(); ++s) {
    EXPECT_EQ(again.stages[s].first_layer, per_stage.stages[s].first_layer);
    EXPECT_EQ(again.stages[s].shape, per_stage.stages[s].shape);
  }
}

TEST(PerStagePlan, AStageEnteredFromAnotherShapeAndLayerKindPaysOneResharding) {
  // 32 GPUs, 8 stages of 4: the embedding alone on tp 4 (its output split by features), then blocks on tp 2 x dp 2
  // (their norms read tokens split). The boundary gathers the activation whole (stage_reshard_s); the layout
  // change between the two layer kinds must not be charged on top of it.
  PlannerOptions o;
  o.global_batch = 256;
  o.pins = parse_pins("pp=8,mbs=2,schedule=1f1b");
  const ModelGraph model = parse_model_spec(kBigVocab);
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:4");
  const Plan p = Planner(model, cluster, o).plan();
  const double sample_bytes = static_cast<double>(model.seq) * model.hidden * dtype_bytes(model.dtype);
  int checked = 0;
  for (size_t s = 1; s < p.stages.size(); ++s) {
    const StagePlan &prev = p.stages[s - 1], &st = p.stages[s];
    const bool one_kind = st.sharding.size() == 1;
    if (prev.shape == st.shape || !one_kind || prev.sharding.back().layer == st.sharding.front().layer) continue;
    if (st.shape.tp < 2) continue;  // a stage without tensor parallelism has no layout to change
    ++checked;
    const double m = p.config.num_micro_batches;
    EXPECT_NEAR(st.time.reshard_s, m * stage_reshard_s(cluster, prev.shape, st.shape, sample_bytes),
                1e-9 * st.time.reshard_s)
        << "stage " << s;
  }
  EXPECT_GE(checked, 1) << "no stage boundary between shapes and layer kinds to check";
}

TEST(PerStagePlan, PinnedTensorParallelismKeepsEveryStageOnIt) {
  const Plan p = plan_big_vocab(true, "tp=4,pp=4,schedule=1f1b");
  EXPECT_TRUE(p.uniform_stages);
  for (const StagePlan& st : p.stages) EXPECT_EQ(st.shape.tp, 4);
}

}  // namespace
}  // namespace tuner::parallel
