// Context parallelism: a long sequence split over cp GPUs fits where it did
// not, pinned cp is honoured and exported, the planner searches cp only for
// long sequences, and degrees multiply to the cluster.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

PlannerOptions options(int64_t batch, const std::string& fix) {
  PlannerOptions o;
  o.global_batch = batch;
  o.pins = parse_pins(fix);
  return o;
}

TEST(ContextParallel, LongSequencesFitOnlyWhenSplit) {
  // Llama 3 8B at 131,072 tokens on one node: without cp one sequence's activations overflow 80 GB even at tp 8
  // with full recomputation; cp 8 x tp 1 splits the sequence and fits.
  const ModelGraph m = parse_model_spec("llama:layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=131072,vocab=128256");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:1");
  EXPECT_THROW(Planner(m, c, options(8, "tp=8,cp=1,pp=1,mbs=1,recompute=full")).plan(), SpecError);
  const Plan p = Planner(m, c, options(8, "tp=1,cp=8,pp=1,mbs=1,recompute=full,zero=3")).plan();
  EXPECT_EQ(p.config.cp, 8);
  EXPECT_EQ(p.config.tp * p.config.cp * p.config.pp * p.config.dp, 8);
  EXPECT_LE(p.peak_memory_bytes, p.memory_capacity_bytes);
  for (const auto& st : p.stages) EXPECT_NEAR(st.time.total(), p.iteration_time_s, 1e-9 * p.iteration_time_s);
  // Unpinned, the planner finds a plan and it uses context parallelism (nothing else fits).
  const Plan free = Planner(m, c, options(8, "")).plan();
  EXPECT_GT(free.config.cp, 1);
  // Exported: Megatron's --context-parallel-size and torchtitan's context_parallel_degree carry it.
  const std::string meg = export_megatron(p, m, 8);
  EXPECT_NE(meg.find("--context-parallel-size 8\n"), std::string::npos) << meg;
  EXPECT_NE(export_torchtitan(p, m, 8).find("context_parallel_degree = 8\n"), std::string::npos);
  std::vector<std::string> warnings;
  export_deepspeed(p, m, 8, &warnings);
  EXPECT_FALSE(warnings.empty());
}

TEST(ContextParallel, ShortSequencesKeepCpOneAndBadPinsAreRefused) {
  const ModelGraph m = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:2");
  EXPECT_EQ(Planner(m, c, options(64, "")).plan().config.cp, 1);
  // A pinned cp is planned even for short sequences; one that does not divide the sequence is refused.
  EXPECT_EQ(Planner(m, c, options(64, "cp=2")).plan().config.cp, 2);
  try {
    Planner(m, c, options(64, "cp=3")).plan();
    FAIL() << "cp=3 planned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("--fix cp=3 must divide"), std::string::npos) << e.what();
  }
  EXPECT_EQ(to_string(parse_pins("tp=2,cp=4")), "tp=2,cp=4");
  EXPECT_THROW(parse_pins("cp=0"), SpecError);
}

}  // namespace
}  // namespace tuner::parallel
