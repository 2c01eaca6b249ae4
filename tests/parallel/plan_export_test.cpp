// Exports parse in their formats and carry the plan's choices; the plan JSON
// has the documented keys.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/plan_json.h"

namespace tuner::parallel {
namespace {

struct Fixture {
  ModelGraph model = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  ClusterSpec cluster = parse_cluster_spec("dgx-h100:2");
  Plan plan;
  explicit Fixture(const std::string& pins) {
    PlannerOptions o;
    o.global_batch = 64;
    o.pins = parse_pins(pins);
    plan = Planner(model, cluster, o).plan();
  }
};

/// "--flag value" lines -> flag -> value ("" for switches).
std::map<std::string, std::string> parse_args(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    out[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return out;
}

/// A small TOML reader for what the export writes: [section] and key = value lines.
std::map<std::string, std::string> parse_toml(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t eq = line.find(" = ");
    EXPECT_NE(eq, std::string::npos) << "not key = value: " << line;
    std::string v = line.substr(eq + 3);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    out[section + "." + line.substr(0, eq)] = v;
  }
  return out;
}

TEST(PlanExport, MegatronArguments) {
  Fixture f("tp=2,pp=2,mbs=2,recompute=selective,zero=1");
  auto a = parse_args(export_megatron(f.plan, f.model, 64));
  EXPECT_EQ(a["--tensor-model-parallel-size"], "2");
  EXPECT_EQ(a["--pipeline-model-parallel-size"], "2");
  EXPECT_EQ(a["--micro-batch-size"], "2");
  EXPECT_EQ(a["--global-batch-size"], "64");
  EXPECT_EQ(a["--recompute-granularity"], "selective");
  EXPECT_TRUE(a.count("--use-distributed-optimizer"));
  EXPECT_EQ(a["--num-layers"], "8");
  Fixture g("tp=2,pp=2,schedule=interleaved,v=2,recompute=full,zero=0");
  auto b = parse_args(export_megatron(g.plan, g.model, 64));
  EXPECT_EQ(b["--num-layers-per-virtual-pipeline-stage"], "2");  // 8 layers / (pp 2 * v 2)
  EXPECT_EQ(b["--recompute-granularity"], "full");
  EXPECT_FALSE(b.count("--use-distributed-optimizer"));
}

TEST(PlanExport, MegatronCarriesTheModelsAttentionAndMlpShape) {
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:1");
  PlannerOptions o;
  o.global_batch = 16;
  auto args_of = [&](const std::string& spec) {
    const ModelGraph m = parse_model_spec(spec);
    return parse_args(export_megatron(Planner(m, cluster, o).plan(), m, 16));
  };
  auto llama = args_of("llama:layers=4,hidden=1024,heads=16,kv_heads=4,ffn=2816,seq=1024,vocab=32000");
  EXPECT_TRUE(llama.count("--group-query-attention"));
  EXPECT_EQ(llama["--num-query-groups"], "4");
  EXPECT_EQ(llama["--ffn-hidden-size"], "2816");
  EXPECT_TRUE(llama.count("--swiglu"));
  EXPECT_FALSE(llama.count("--num-experts"));

  auto gpt = args_of("gpt:layers=4,hidden=1024,heads=16,seq=1024,vocab=32000");
  EXPECT_FALSE(gpt.count("--group-query-attention"));  // every head has its own keys and values
  EXPECT_FALSE(gpt.count("--swiglu"));
  EXPECT_EQ(gpt["--ffn-hidden-size"], "4096");  // 4 * hidden

  auto moe = args_of("moe:layers=4,hidden=1024,heads=16,experts=8,top_k=2,seq=1024,vocab=32000");
  EXPECT_EQ(moe["--num-experts"], "8");
  EXPECT_EQ(moe["--moe-router-topk"], "2");
  EXPECT_TRUE(moe.count("--swiglu"));
}

TEST(PlanExport, DeepSpeedJson) {
  Fixture f("tp=2,pp=2,mbs=2,recompute=full,zero=1");
  auto j = nlohmann::json::parse(export_deepspeed(f.plan, f.model, 64));
  // 2 micro x 8 accumulation x 4 data-parallel = 64.
  EXPECT_EQ(j["train_batch_size"], 64);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(j["gradient_accumulation_steps"], 8);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"].get<int>() * j["gradient_accumulation_steps"].get<int>() *
                f.plan.config.dp,
            j["train_batch_size"].get<int>());
  EXPECT_EQ(j["zero_optimization"]["stage"], 1);
  EXPECT_EQ(j["pipeline"]["stages"], 2);
  EXPECT_EQ(j["pipeline"]["activation_checkpoint_interval"], 1);
  EXPECT_EQ(j["tensor_parallel"]["autotp_size"], 2);
  EXPECT_EQ(j["tuner_plan"]["recompute"], "full");
}

TEST(PlanExport, TorchtitanToml) {
  Fixture f("tp=4,pp=2,mbs=1,recompute=selective,zero=1,schedule=1f1b");
  auto t = parse_toml(export_torchtitan(f.plan, f.model, 64));
  EXPECT_EQ(t["parallelism.tensor_parallel_degree"], "4");
  EXPECT_EQ(t["parallelism.pipeline_parallel_degree"], "2");
  EXPECT_EQ(t["parallelism.data_parallel_shard_degree"], "2");
  EXPECT_EQ(t["parallelism.data_parallel_replicate_degree"], "1");
  EXPECT_EQ(t["parallelism.pipeline_parallel_schedule"], "1F1B");
  EXPECT_EQ(t["parallelism.pipeline_parallel_microbatch_size"], "1");
  EXPECT_EQ(t["training.global_batch_size"], "64");
  EXPECT_EQ(t["training.local_batch_size"], "32");  // 64 / dp 2
  EXPECT_EQ(t["training.seq_len"], "1024");
  EXPECT_EQ(t["activation_checkpoint.mode"], "selective");
}

TEST(PlanJson, HasTheDocumentedKeys) {
  Fixture f("");
  auto j = plan_to_json(f.plan, f.model, f.cluster, 64);
  for (const char* k : {"tp", "pp", "dp", "micro_batch_size", "num_micro_batches", "schedule", "recompute",
                        "iteration_time_s", "tflops_per_gpu", "mfu", "peak_memory_bytes", "stages"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["tp"].get<int>() * j["pp"].get<int>() * j["dp"].get<int>(), 16);
  ASSERT_EQ(j["stages"].size(), static_cast<size_t>(j["pp"].get<int>()));
  const auto& s0 = j["stages"][0];
  EXPECT_EQ(s0["first_layer"], 0);
  EXPECT_EQ(s0["mesh"].size(), 2u);
  EXPECT_FALSE(s0["sharding"][0]["ops"].empty());
  EXPECT_TRUE(s0["sharding"][0]["ops"][0].contains("strategy"));
}

}  // namespace
}  // namespace tuner::parallel
