// Exports parse in their formats and carry the plan's choices; the plan JSON
// has the documented keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>
#include <sstream>

#include <nlohmann/json.hpp>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/engine_partition.h"
#include "search/parallel/model_spec.h"
#include "search/parallel/plan_export.h"
#include "search/parallel/plan_json.h"
#include "search/parallel/planner.h"

namespace tuner::parallel {
namespace {

struct Fixture {
  ModelGraph model = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  ClusterSpec cluster = parse_cluster_spec("dgx-h100:2");
  Plan plan;
  explicit Fixture(const std::string& pins, Engine engine = Engine::kGeneric) {
    PlannerOptions o;
    o.global_batch = 64;
    o.pins = parse_pins(pins);
    o.engine = engine;
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

/// Transformer blocks per pipeline stage of a plan (the oracle for the export's partition).
std::vector<int> plan_blocks(const Plan& plan, const ModelGraph& m) {
  std::vector<int> out;
  for (const StagePlan& st : plan.stages) {
    int n = 0;
    for (int i = st.first_layer; i < st.end_layer; ++i) n += m.layers[i].kind == LayerKind::kTransformer ? 1 : 0;
    out.push_back(n);
  }
  return out;
}

/// The block indices of a TOML list of torchtitan split points, ["layers.4", "layers.9"] -> 4, 9.
std::vector<int> split_point_blocks(const std::string& list) {
  std::vector<int> out;
  for (size_t at = list.find("layers."); at != std::string::npos; at = list.find("layers.", at + 1))
    out.push_back(std::stoi(list.substr(at + 7)));
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
  EXPECT_EQ(j["pipeline"]["partition"], j["pipeline"]["partition"]);
  EXPECT_FALSE(j.contains("tuner_plan"));
  EXPECT_FALSE(j["pipeline"].contains("partition_method"));
}

TEST(PlanExport, TorchtitanToml) {
  Fixture f("tp=4,pp=2,mbs=1,recompute=selective,zero=3,schedule=1f1b", Engine::kTorchtitan);
  auto t = parse_toml(export_torchtitan(f.plan, f.model, 64));
  EXPECT_EQ(t["parallelism.tensor_parallel_degree"], "4");
  EXPECT_EQ(t["parallelism.pipeline_parallel_degree"], "2");
  EXPECT_EQ(t["parallelism.data_parallel_shard_degree"], "2");
  EXPECT_EQ(t["parallelism.data_parallel_replicate_degree"], "1");
  EXPECT_EQ(t["parallelism.pipeline_parallel_schedule"], "1F1B");
  EXPECT_EQ(t["parallelism.pipeline_parallel_microbatch_size"], "1");
  EXPECT_EQ(t["training.global_batch_size"], "64");
  EXPECT_EQ(t["training.local_batch_size"], "32");  // 64 / dp 2, split by the pipeline into micro-batches
  EXPECT_EQ(t["training.seq_len"], "1024");
  // The plan's stages as split points (the first block of each stage after the first), so torchtitan runs them.
  EXPECT_FALSE(t.count("parallelism.pipeline_parallel_layers_per_stage"));
  const std::vector<int> blocks = plan_blocks(f.plan, f.model);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(split_point_blocks(t["parallelism.pipeline_parallel_split_points"]), (std::vector<int>{blocks[0]}));
  EXPECT_EQ(t["activation_checkpoint.mode"], "selective");
  std::vector<std::string> warnings;
  export_torchtitan(f.plan, f.model, 64, &warnings);
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("selective checkpointing (\"op\")") != std::string::npos;
  })) << "its op-level policy is not the plan's selective recomputation";
  // Without a pipeline the local batch is one micro-batch; accumulation makes up the global batch.
  Fixture g("tp=2,pp=1,mbs=2,recompute=none,zero=3", Engine::kTorchtitan);
  auto u = parse_toml(export_torchtitan(g.plan, g.model, 64));
  EXPECT_EQ(u["training.local_batch_size"], "2");
  EXPECT_FALSE(u.count("parallelism.pipeline_parallel_layers_per_stage"));
}

// A plan for DeepSpeed is one its config runs: whole-layer recomputation only (activation_checkpoint_interval), no
// ZeRO-3 for MoE; torchtitan's ZeRO-3 says "always", since its "default" keeps the gathered weights under pp.
TEST(PlanExport, DeepSpeedPlansOnlyWhatItsConfigRunsAndTorchtitanReshardsUnderZeroThree) {
  const ModelGraph model = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:2");
  PlannerOptions o;
  o.global_batch = 64;
  o.engine = Engine::kDeepSpeed;
  const Plan free = Planner(model, cluster, o).plan();
  EXPECT_NE(free.config.recompute, Recompute::kSelective);
  o.pins = parse_pins("recompute=selective");
  EXPECT_THROW(Planner(model, cluster, o).plan(), SpecError);
  o.pins = parse_pins("zero=3,tp=1,pp=1");
  const ModelGraph moe = parse_model_spec("moe:layers=2,hidden=1024,heads=8,ffn=1024,experts=8,top_k=2,seq=1024");
  std::string why;
  try {
    Planner(moe, cluster, o).plan();
  } catch (const SpecError& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("zero=3 cannot run on deepspeed with an MoE model"), std::string::npos) << why;
  // tp 2 with ZeRO-3 names AutoTP, not the pipeline engine, whatever pp the refusal's example has.
  o.pins = parse_pins("zero=3,tp=2");
  why.clear();
  try {
    Planner(model, cluster, o).plan();
  } catch (const SpecError& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("AutoTP"), std::string::npos) << why;

  Fixture t("tp=2,pp=2,mbs=1,recompute=full,zero=3,schedule=1f1b", Engine::kTorchtitan);
  EXPECT_EQ(parse_toml(export_torchtitan(t.plan, t.model, 64))["parallelism.fsdp_reshard_after_forward"],
            "always");
}

// torchtitan v0.1.0 builds in one model, llama3 (Llama's architecture), flavors 8B/70B/405B. A Llama-architecture
// model is a llama3 flavor to add (the warning gives its dimensions); a GPT or MoE model keeps its own name (a
// TrainSpec to register), since llama3 with its size would train another architecture.
TEST(PlanExport, TorchtitanNamesOnlyTheModelsItHas) {
  auto model_of = [](const std::string& spec, std::vector<std::string>* warnings) {
    PlannerOptions o;
    o.global_batch = 64;
    o.engine = Engine::kTorchtitan;
    o.pins = parse_pins("tp=8,pp=1,zero=3");
    const ModelGraph m = parse_model_spec(spec);
    const Plan plan = Planner(m, parse_cluster_spec("dgx-h100:2"), o).plan();
    return parse_toml(export_torchtitan(plan, m, 64, warnings));
  };
  std::vector<std::string> w;
  auto t = model_of("llama3-8b", &w);
  EXPECT_EQ(t["model.name"], "llama3");
  EXPECT_EQ(t["model.flavor"], "8B");
  for (const auto& x : w) EXPECT_EQ(x.find("flavor"), std::string::npos) << x;
  w.clear();
  t = model_of("llama2-7b", &w);
  EXPECT_EQ(t["model.name"], "llama3");
  EXPECT_EQ(t["model.flavor"], "llama2-7b");
  const auto has = [&](const std::string& text) {
    return std::any_of(w.begin(), w.end(), [&](const std::string& x) { return x.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("dim=4096, n_layers=32, n_heads=32, n_kv_heads=32, vocab_size=32000, rope_theta=10000"));
  EXPECT_TRUE(has("FFN width of 11008"));
  w.clear();
  t = model_of("gpt3-1.3b", &w);
  EXPECT_EQ(t["model.name"], "gpt3-1.3b") << "not llama3: GPT's architecture is not Llama's";
  EXPECT_TRUE(has("learned positions, LayerNorm, GeLU MLP"));
  w.clear();
  t = model_of("moe", &w);
  EXPECT_EQ(t["model.name"], "moe");
  EXPECT_TRUE(has("mixture of experts"));
}

// Megatron's GPTModel always builds an embedding and an output layer: a graph without them gets a 128-token
// vocabulary (what the plan did not cost stays small), and the warning says so.
TEST(PlanExport, MegatronGivesAGraphWithoutAnEmbeddingASmallVocabulary) {
  auto layer = nlohmann::json{{"name", "mlp"},
                              {"repeat", 4},
                              {"output", "down"},
                              {"ops",
                               {{{"name", "up"}, {"type", "linear"}, {"in", 1024}, {"out", 4096}, {"inputs", {"input"}}},
                                {{"name", "down"}, {"type", "linear"}, {"in", 4096}, {"out", 1024}, {"inputs", {"up"}}}}}};
  nlohmann::json doc = {{"name", "mlp-stack"}, {"seq", 1024}, {"dtype", "bf16"}, {"layers", {layer}}};
  const ModelGraph m = model_from_json(doc, "mlp-stack");
  ASSERT_EQ(m.vocab, 0);
  PlannerOptions o;
  o.global_batch = 64;
  const Plan plan = Planner(m, parse_cluster_spec("dgx-h100:1"), o).plan();
  std::vector<std::string> warnings;
  const auto args = parse_args(export_megatron(plan, m, 64, &warnings));
  EXPECT_EQ(args.at("--vocab-size"), "127") << "NullTokenizer adds one id: 128 rows";
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(),
                          [](const std::string& x) { return x.find("always has an embedding") != std::string::npos; }));
  // A model with a vocabulary keeps it, with no such warning.
  Fixture f("tp=2,pp=1");
  warnings.clear();
  EXPECT_EQ(parse_args(export_megatron(f.plan, f.model, 64, &warnings)).at("--vocab-size"), "31999");
  for (const auto& x : warnings) EXPECT_EQ(x.find("always has an embedding"), std::string::npos) << x;
}

/// A JSON transformer block: GQA (kv heads), SwiGLU of `ffn`, optionally a norm on Q/K and `experts` instead.
nlohmann::json json_block(int64_t ffn, bool qk_norm, int experts = 0) {
  const int64_t h = 1024;
  nlohmann::json ops = nlohmann::json::array();
  ops.push_back({{"name", "ln1"}, {"type", "layernorm"}, {"in", h}, {"out", h}, {"inputs", {"input"}}});
  ops.push_back({{"name", "qkv"}, {"type", "linear"}, {"in", h}, {"out", 1536}, {"inputs", {"ln1"}}});
  if (qk_norm) ops.push_back({{"name", "qkn"}, {"type", "layernorm"}, {"in", 1536}, {"out", 1536}, {"inputs", {"qkv"}}});
  ops.push_back({{"name", "attn"}, {"type", "attention"}, {"in", 1536}, {"out", h}, {"heads", 16}, {"kv_heads", 4},
                 {"inputs", {qk_norm ? "qkn" : "qkv"}}});
  ops.push_back({{"name", "proj"}, {"type", "linear"}, {"in", h}, {"out", h}, {"inputs", {"attn"}}});
  ops.push_back({{"name", "add1"}, {"type", "elementwise"}, {"in", h}, {"out", h}, {"inputs", {"input", "proj"}}});
  ops.push_back({{"name", "ln2"}, {"type", "layernorm"}, {"in", h}, {"out", h}, {"inputs", {"add1"}}});
  std::string mlp = "fc2";
  if (experts > 0) {
    ops.push_back({{"name", "moe"}, {"type", "moe_ffn"}, {"in", h}, {"out", h}, {"experts", experts}, {"top_k", 2},
                   {"ffn", ffn}, {"gated", true}, {"inputs", {"ln2"}}});
    mlp = "moe";
  } else {
    ops.push_back({{"name", "fc1"}, {"type", "linear"}, {"in", h}, {"out", 2 * ffn}, {"inputs", {"ln2"}}});
    ops.push_back({{"name", "act"}, {"type", "elementwise"}, {"in", 2 * ffn}, {"out", ffn}, {"inputs", {"fc1"}}});
    ops.push_back({{"name", "fc2"}, {"type", "linear"}, {"in", ffn}, {"out", h}, {"inputs", {"act"}}});
  }
  ops.push_back({{"name", "add2"}, {"type", "elementwise"}, {"in", h}, {"out", h}, {"inputs", {"add1", mlp}}});
  return {{"name", "block"}, {"kind", "transformer"}, {"hidden", h}, {"heads", 16}, {"repeat", 2}, {"output", "add2"},
          {"ops", ops}};
}

/// A graph of token and learned position embeddings (`positions` rows, added) and one json_block.
nlohmann::json learned_positions_doc(int64_t positions, bool qk_norm) {
  nlohmann::json doc = {{"seq", 1024}, {"layers", nlohmann::json::array()}};
  doc["layers"].push_back({{"name", "emb"}, {"kind", "embedding"}, {"output", "add"},
                           {"ops", {{{"name", "wte"}, {"type", "embedding"}, {"in", 32000}, {"out", 1024}},
                                    {{"name", "wpe"}, {"type", "embedding"}, {"in", positions}, {"out", 1024}},
                                    {{"name", "add"}, {"type", "elementwise"}, {"in", 1024}, {"out", 1024},
                                     {"inputs", {"wte", "wpe"}}}}}});
  doc["layers"].push_back(json_block(2816, qk_norm));
  return doc;
}

// A JSON graph's export names the architecture its ops have (it named only layers, hidden and heads: Megatron would
// have built full attention, a 4h GeLU MLP and no Q/K norm), and warns where its transformer layers differ.
TEST(PlanExport, AJsonGraphsExportNamesTheArchitectureOfItsOps) {
  auto graph = [](std::vector<nlohmann::json> blocks) {
    nlohmann::json layers = nlohmann::json::array();
    layers.push_back({{"name", "emb"}, {"kind", "embedding"}, {"output", "e"},
                      {"ops", {{{"name", "e"}, {"type", "embedding"}, {"in", 32000}, {"out", 1024}}}}});
    for (auto& b : blocks) {
      b["name"] = "block" + std::to_string(layers.size());  // layer names are unique
      layers.push_back(b);
    }
    layers.push_back({{"name", "head"}, {"kind", "head"}, {"output", "lm"},
                      {"ops", {{{"name", "lm"}, {"type", "linear"}, {"in", 1024}, {"out", 32000}, {"inputs", {"input"}},
                                {"bias", false}}}}});  // as Megatron-LM's output layer (a biased one is said)
    return model_from_json({{"seq", 1024}, {"layers", layers}}, "g.json");
  };
  PlannerOptions o;
  o.global_batch = 64;
  o.pins = parse_pins("tp=2,pp=1");
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:1");
  const ModelGraph m = graph({json_block(2816, true)});
  EXPECT_TRUE(m.layers_differ.empty()) << m.layers_differ;
  std::vector<std::string> warnings;
  const auto args = parse_args(export_megatron(Planner(m, cluster, o).plan(), m, 64, &warnings));
  EXPECT_EQ(args.at("--num-query-groups"), "4");
  EXPECT_EQ(args.at("--ffn-hidden-size"), "2816");
  EXPECT_TRUE(args.count("--swiglu"));
  EXPECT_TRUE(args.count("--qk-layernorm"));
  EXPECT_TRUE(args.count("--untie-embeddings-and-output-weights"));
  // No position embedding in the graph: "none", said (it exported learned_absolute whatever the graph held).
  EXPECT_EQ(args.at("--position-embedding-type"), "none");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no position embedding"), std::string::npos) << warnings[0];
  {
    const ModelGraph p = model_from_json(learned_positions_doc(1024, true), "pos.json");
    warnings.clear();
    EXPECT_EQ(parse_args(export_megatron(Planner(p, cluster, o).plan(), p, 64, &warnings)).at("--position-embedding-type"),
              "learned_absolute");
    EXPECT_TRUE(warnings.empty()) << warnings.front();
  }
  // A dense layer, then MoE layers with experts of their own width: Megatron-LM says so with --moe-layer-freq and
  // --moe-ffn-hidden-size (it made every layer MoE, with experts of the dense MLP's width: a model 8x larger);
  // torchtitan, whose flavors build every layer alike, is warned about; a DeepSpeed config describes no model.
  const ModelGraph mixed =
      graph({json_block(2816, false), json_block(1408, false, 8), json_block(1408, false, 8), json_block(1408, false, 8)});
  EXPECT_EQ(mixed.layers_differ, "");
  EXPECT_EQ(mixed.experts, 8) << "the MoE rules still see the experts";
  EXPECT_EQ(mixed.ffn, 2816);
  EXPECT_EQ(mixed.moe_ffn, 1408);
  EXPECT_EQ(mixed.moe_layer_pattern, "[0]*2+[1]*6") << "each block is repeated twice";
  const Plan plan = Planner(mixed, cluster, o).plan();
  warnings.clear();
  const auto margs = parse_args(export_megatron(plan, mixed, 64, &warnings));
  EXPECT_EQ(margs.at("--ffn-hidden-size"), "2816");
  EXPECT_EQ(margs.at("--moe-ffn-hidden-size"), "1408");
  EXPECT_EQ(margs.at("--moe-layer-freq"), "[0]*2+[1]*6");
  EXPECT_EQ(margs.at("--num-layers"), "8");
  for (const auto& w : warnings) EXPECT_EQ(w.find("differ"), std::string::npos) << w;
  warnings.clear();
  export_torchtitan(plan, mixed, 64, &warnings);
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("mixes dense and MoE layers ([0]*2+[1]*6)") != std::string::npos;
  }));
  warnings.clear();
  export_deepspeed(plan, mixed, 64, &warnings);
  for (const auto& w : warnings) EXPECT_EQ(w.find("builds every layer"), std::string::npos) << w;
  // An encoder (attention not causal) exported as a causal decoder said nothing.
  nlohmann::json enc = json_block(2816, false);
  for (auto& op : enc["ops"])
    if (op["type"] == "attention") op["causal"] = false;
  const ModelGraph encoder = graph({enc});
  EXPECT_TRUE(encoder.bidirectional);
  EXPECT_FALSE(mixed.bidirectional);
  for (const auto& exporter : {export_megatron, export_torchtitan}) {
    warnings.clear();
    exporter(Planner(encoder, cluster, o).plan(), encoder, 64, &warnings);
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(),
                            [](const std::string& w) { return w.find("attention is bidirectional") != std::string::npos; }));
  }
  // A parallel block (the MLP reads ln1, beside attention) exported as a sequential one said nothing.
  nlohmann::json par = json_block(2816, false);
  nlohmann::json par_ops = nlohmann::json::array();
  for (auto op : par["ops"]) {
    if (op["name"] == "ln2") continue;
    if (op["name"] == "fc1") op["inputs"] = {"ln1"};
    par_ops.push_back(op);
  }
  par["ops"] = par_ops;
  const ModelGraph parallel_block = graph({par});
  EXPECT_TRUE(parallel_block.parallel_block);
  EXPECT_FALSE(mixed.parallel_block);
  for (const auto& exporter : {export_megatron, export_torchtitan}) {
    warnings.clear();
    exporter(Planner(parallel_block, cluster, o).plan(), parallel_block, 64, &warnings);
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(),
                            [](const std::string& w) { return w.find("(a parallel block, as GPT-J's") != std::string::npos; }));
  }
  // Dense layers of two MLP widths: what no engine's arguments say, so Megatron-LM and torchtitan warn.
  const ModelGraph widths = graph({json_block(2816, false), json_block(1408, false)});
  EXPECT_EQ(widths.layers_differ, "MLP widths 1408 and 2816");
  const Plan wplan = Planner(widths, cluster, o).plan();
  for (const auto& exporter : {export_megatron, export_torchtitan}) {
    warnings.clear();
    exporter(wplan, widths, 64, &warnings);
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("transformer layers differ (MLP widths 1408 and 2816)") != std::string::npos &&
             w.find("builds every layer as the first") != std::string::npos;
    }));
  }
}

// A JSON MoE graph's linears have biases unless it says otherwise; megatron.core's GroupedMLP (--moe-grouped-gemm
// without Transformer Engine) refuses them: the export says so, and not for a graph whose linears have none.
TEST(PlanExport, AMoeGraphWithLinearBiasesWarnsAboutTheGroupedGemm) {
  auto moe = [](bool bias) {
    nlohmann::json block = json_block(1024, false, 4);
    if (!bias)
      for (auto& op : block["ops"])
        if (op["type"] == "linear") op["bias"] = false;
    return model_from_json({{"seq", 1024}, {"layers", {block}}}, "moe.json");
  };
  PlannerOptions o;
  o.global_batch = 64;
  o.pins = parse_pins("tp=2,pp=1");
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:1");
  auto warned = [&](const ModelGraph& m) {
    std::vector<std::string> warnings;
    const auto args = parse_args(export_megatron(Planner(m, cluster, o).plan(), m, 64, &warnings));
    EXPECT_TRUE(args.count("--moe-grouped-gemm"));
    return std::any_of(warnings.begin(), warnings.end(),
                       [](const std::string& w) { return w.find("GroupedMLP refuses them") != std::string::npos; });
  };
  EXPECT_TRUE(warned(moe(true)));
  EXPECT_FALSE(warned(moe(false)));
}

// A JSON graph of Llama 3 8B's recipe and every dimension is torchtitan's llama3 8B, whatever its name (it was
// exported as a new flavor to add, named after the file); one dimension off is its own flavor, with the warning.
TEST(PlanExport, AJsonGraphOfAPresetsDimensionsIsItsTorchtitanFlavor) {
  auto doc = [](int64_t ffn) {
    auto lin = [](const char* name, int64_t in, int64_t out, const char* from) {
      return nlohmann::json{{"name", name}, {"type", "linear"}, {"in", in}, {"out", out}, {"inputs", {from}},
                            {"bias", false}};
    };
    auto add = [](const char* name, int64_t w, const char* a, const char* b) {
      return nlohmann::json{{"name", name}, {"type", "elementwise"}, {"in", w}, {"out", w}, {"inputs", {a, b}}};
    };
    nlohmann::json ops = nlohmann::json::array();
    ops.push_back({{"name", "ln1"}, {"type", "layernorm"}, {"in", 4096}, {"out", 4096}, {"inputs", {"input"}}, {"rms", true}});
    ops.push_back(lin("qkv", 4096, 6144, "ln1"));
    ops.push_back({{"name", "attn"}, {"type", "attention"}, {"in", 6144}, {"out", 4096}, {"heads", 32}, {"kv_heads", 8},
                   {"inputs", {"qkv"}}});
    ops.push_back(lin("proj", 4096, 4096, "attn"));
    ops.push_back(add("add1", 4096, "input", "proj"));
    ops.push_back({{"name", "ln2"}, {"type", "layernorm"}, {"in", 4096}, {"out", 4096}, {"inputs", {"add1"}}, {"rms", true}});
    ops.push_back(lin("gate", 4096, ffn, "ln2"));
    ops.push_back(lin("up", 4096, ffn, "ln2"));
    ops.push_back(add("act", ffn, "gate", "up"));
    ops.push_back(lin("down", ffn, 4096, "act"));
    ops.push_back(add("add2", 4096, "add1", "down"));
    nlohmann::json d = {{"name", "my-llama"}, {"seq", 8192}, {"rope_base", 500000}, {"layers", nlohmann::json::array()}};
    d["layers"].push_back({{"name", "embedding"}, {"kind", "embedding"}, {"output", "tok"},
                           {"ops", {{{"name", "tok"}, {"type", "embedding"}, {"in", 128256}, {"out", 4096}}}}});
    d["layers"].push_back({{"name", "block"}, {"kind", "transformer"}, {"hidden", 4096}, {"heads", 32}, {"repeat", 32},
                           {"output", "add2"}, {"ops", ops}});
    d["layers"].push_back({{"name", "head"}, {"kind", "head"}, {"output", "lm"},
                           {"ops", {{{"name", "norm"}, {"type", "layernorm"}, {"in", 4096}, {"out", 4096},
                                     {"inputs", {"input"}}, {"rms", true}},
                                    lin("lm", 4096, 128256, "norm")}}});
    return model_from_json(d, "my-llama.json");
  };
  PlannerOptions o;
  o.global_batch = 64;
  o.pins = parse_pins("tp=8,pp=1");
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:1");
  const ModelGraph same = doc(14336);
  EXPECT_EQ(model_params(same), model_params(parse_model_spec("llama3-8b")));
  std::vector<std::string> warnings;
  auto t = parse_toml(export_torchtitan(Planner(same, cluster, o).plan(), same, 64, &warnings));
  EXPECT_EQ(t["model.name"], "llama3");
  EXPECT_EQ(t["model.flavor"], "8B");
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const ModelGraph other = doc(14080);
  t = parse_toml(export_torchtitan(Planner(other, cluster, o).plan(), other, 64, &warnings));
  EXPECT_EQ(t["model.flavor"], "my-llama");
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("add one to llama3_configs") != std::string::npos;
  }));
}

// A JSON graph says what no op shows: linears without biases ("bias": false), RMSNorm ("rms": true) and rotary
// positions ("rope_base"). A Llama-like graph exported LayerNorm, biases and no positions to Megatron-LM, and
// torchtitan named it a biased LayerNorm model (a user test, stop 43).
TEST(PlanExport, AJsonGraphStatesItsBiasesNormAndRotaryPositions) {
  // bias: which linears have one ("all", "none", "qkv" or "proj"); rms: every norm is RMSNorm.
  auto graph_doc = [](const std::string& bias, bool rms, bool rope, bool qk_norm = false) {
    nlohmann::json block = json_block(2816, qk_norm);
    for (auto& op : block["ops"]) {
      if (op["type"] == "linear" && bias != "all") op["bias"] = op["name"] == bias;
      if (op["type"] == "layernorm" && rms) op["rms"] = true;
    }
    nlohmann::json doc = {{"seq", 1024}, {"layers", nlohmann::json::array()}};
    doc["layers"].push_back({{"name", "emb"}, {"kind", "embedding"}, {"output", "e"},
                             {"ops", {{{"name", "e"}, {"type", "embedding"}, {"in", 32000}, {"out", 1024}}}}});
    doc["layers"].push_back(block);
    doc["layers"].push_back({{"name", "head"}, {"kind", "head"}, {"output", "lm"},
                             {"ops", {{{"name", "lm"}, {"type", "linear"}, {"in", 1024}, {"out", 32000},
                                       {"inputs", {"input"}}, {"bias", false}}}}});
    if (rope) doc["rope_base"] = 500000;
    return doc;
  };
  auto graph = [&](const std::string& bias, bool rms, bool rope, bool qk_norm = false) {
    return model_from_json(graph_doc(bias, rms, rope, qk_norm), "llama-like.json");
  };
  PlannerOptions o;
  o.global_batch = 64;
  o.pins = parse_pins("tp=2,pp=1");
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:1");
  auto megatron = [&](const ModelGraph& m, std::vector<std::string>* warnings) {
    return parse_args(export_megatron(Planner(m, cluster, o).plan(), m, 64, warnings));
  };
  std::vector<std::string> warnings;
  const ModelGraph llama = graph("none", true, true);
  auto args = megatron(llama, &warnings);
  EXPECT_TRUE(args.count("--disable-bias-linear"));
  EXPECT_FALSE(args.count("--add-qkv-bias"));
  EXPECT_EQ(args.at("--normalization"), "RMSNorm");
  EXPECT_EQ(args.at("--position-embedding-type"), "rope");
  EXPECT_EQ(args.at("--rotary-base"), "500000");
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  // torchtitan: a llama3 flavor to add, not another architecture.
  warnings.clear();
  auto t = parse_toml(export_torchtitan(Planner(llama, cluster, o).plan(), llama, 64, &warnings));
  EXPECT_EQ(t["model.name"], "llama3");
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("add one to llama3_configs") != std::string::npos;
  }));
  // RMSNorm has a scale and no shift: h parameters a norm, not 2h (two blocks of norms 1024 and 1024 wide).
  EXPECT_EQ(model_params(graph("none", false, true)) - model_params(llama), 2 * (1024 + 1024));

  // Only the QKV projection biased (Qwen), reached through the Q/K norm: Megatron-LM's --add-qkv-bias.
  warnings.clear();
  args = megatron(graph("qkv", true, true, true), &warnings);
  EXPECT_TRUE(args.count("--disable-bias-linear"));
  EXPECT_TRUE(args.count("--add-qkv-bias"));
  // Every linear but the head's biased: as before, biases on.
  args = megatron(graph("all", false, false), &warnings);
  EXPECT_FALSE(args.count("--disable-bias-linear"));
  EXPECT_EQ(args.at("--normalization"), "LayerNorm");
  // Another mix no flag states: biases on, said.
  warnings.clear();
  args = megatron(graph("proj", false, true), &warnings);
  EXPECT_FALSE(args.count("--disable-bias-linear"));
  EXPECT_FALSE(args.count("--add-qkv-bias"));
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("1 of the 4 linears of layer 'block' have biases (proj)") != std::string::npos;
  })) << (warnings.empty() ? "" : warnings.front());

  // torchtitan's llama3 has no Q/K norm, heads dim / n_heads wide and an untied output layer: a graph with a Q/K
  // norm is another architecture under that name, said.
  warnings.clear();
  const ModelGraph qk = graph("none", true, true, true);
  t = parse_toml(export_torchtitan(Planner(qk, cluster, o).plan(), qk, 64, &warnings));
  EXPECT_NE(t["model.name"], "llama3");
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(),
                          [](const std::string& w) { return w.find(", a Q/K norm") != std::string::npos; }));
  // Nor a tied output layer, and a JSON graph named like a preset is its flavor only with the recipe.
  {
    nlohmann::json doc = graph_doc("none", true, true);
    doc["tied_embeddings"] = true;
    doc["name"] = "llama3-8b";
    const ModelGraph tied = model_from_json(doc, "tied.json");
    warnings.clear();
    t = parse_toml(export_torchtitan(Planner(tied, cluster, o).plan(), tied, 64, &warnings));
    EXPECT_EQ(t["model.name"], "llama3-8b") << "not llama3's 8B flavor: tied";
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("the output layer tied to the embedding") != std::string::npos;
    }));
  }
  // The engines build their output layer over the vocabulary and without a bias: a graph's head of another width,
  // or with a bias, is another model, said (a user test, stop 44: 64,000 outputs beside 128,256 rows, silently).
  {
    nlohmann::json doc = graph_doc("none", true, true);
    auto& lm = doc["layers"][2]["ops"][0];
    lm["out"] = 16000;
    lm["bias"] = true;
    const ModelGraph narrow = model_from_json(doc, "narrow-head.json");
    auto said = [&](const std::vector<std::string>& ws, const std::string& what) {
      return std::any_of(ws.begin(), ws.end(), [&](const std::string& w) { return w.find(what) != std::string::npos; });
    };
    warnings.clear();
    megatron(narrow, &warnings);
    EXPECT_TRUE(said(warnings, "output layer 'lm' has 16000 outputs, not the token embedding's 32000 rows: Megatron-LM"));
    EXPECT_TRUE(said(warnings, "Megatron-LM's output layer has no bias: the one of 'lm' (16000 parameters)"));
    warnings.clear();
    export_torchtitan(Planner(narrow, cluster, o).plan(), narrow, 64, &warnings);
    EXPECT_TRUE(said(warnings, "16000 outputs, not the token embedding's 32000 rows: torchtitan's llama3"));
    // The Llama-like graph itself is neither; and a vocabulary tp does not divide is padded by Megatron-LM, said.
    warnings.clear();
    megatron(llama, &warnings);
    EXPECT_FALSE(said(warnings, "output layer"));
    EXPECT_FALSE(said(warnings, "pads the vocabulary"));
    doc = graph_doc("none", true, true);
    doc["layers"][0]["ops"][0]["in"] = 32001;
    doc["layers"][2]["ops"][0]["out"] = 32001;
    const ModelGraph odd = model_from_json(doc, "odd-vocab.json");
    warnings.clear();
    megatron(odd, &warnings);
    EXPECT_TRUE(said(warnings, "Megatron-LM pads the vocabulary to a multiple of tp: 32001 rows become 32002 at tp=2"));
  }
  // Megatron-LM's --max-position-embeddings is the graph's learned table where it is longer than the sequence.
  {
    const ModelGraph wpe = model_from_json(learned_positions_doc(2048, false), "wpe.json");
    EXPECT_EQ(megatron(wpe, &warnings).at("--max-position-embeddings"), "2048");
  }
  // Megatron-LM's --rotary-base is an int: a fractional base is said.
  {
    nlohmann::json block = json_block(2816, false);
    nlohmann::json doc = {{"seq", 1024}, {"rope_base", 10000.5}, {"layers", {block}}};
    const ModelGraph frac = model_from_json(doc, "frac.json");
    warnings.clear();
    EXPECT_EQ(megatron(frac, &warnings).at("--rotary-base"), "10001");
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("--rotary-base is an integer: the graph's rope_base 10000.5") != std::string::npos;
    }));
    // Layers whose biases or norms differ from the first's are said (the export describes the first).
    nlohmann::json other = json_block(2816, false);
    for (auto& op : other["ops"])
      if (op["type"] == "linear") op["bias"] = false;
    nlohmann::json two = {{"seq", 1024}, {"layers", {block, other}}};
    two["layers"][1]["name"] = "block2";
    EXPECT_EQ(model_from_json(two, "two.json").layers_differ, "biases on other linears in some layers");
    other = json_block(2816, false);
    other["ops"][0]["rms"] = true;  // ln1 RMSNorm, ln2 LayerNorm
    two["layers"][1] = other;
    two["layers"][1]["name"] = "block2";
    const ModelGraph mix = model_from_json(two, "two.json");
    EXPECT_EQ(mix.layers_differ, "RMSNorm and LayerNorm in other places in some layers");
    EXPECT_EQ(mix.norms_differ, "");  // the first layer is all LayerNorm
    two["layers"][0] = other;  // now the first mixes too
    const ModelGraph first = model_from_json(two, "two.json");
    EXPECT_EQ(first.norms_differ, "1 of the 2 norms of layer 'block' are RMSNorm");
    EXPECT_EQ(first.layers_differ, "") << "the first layer's mix is its own warning";
  }

  // Bad input: a key on the wrong op, a base that is not positive, rotary and learned positions both.
  nlohmann::json bad = {{"seq", 8}, {"layers", {{{"name", "l"}, {"ops", {{{"name", "n"}, {"type", "layernorm"},
                                                                          {"in", 8}, {"out", 8}, {"bias", false}}}}}}}};
  try {
    model_from_json(bad, "bad.json");
    ADD_FAILURE() << "a bias on a layernorm was taken";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("allowed keys for layernorm: name, type, in, out, inputs, dtype, rms"),
              std::string::npos)
        << e.what();
  }
  bad["layers"][0]["ops"][0].erase("bias");
  bad["rope_base"] = 0;
  EXPECT_THROW(model_from_json(bad, "bad.json"), SpecError);
  bad["rope_base"] = 10000;
  bad["layers"][0]["ops"] = {{{"name", "wte"}, {"type", "embedding"}, {"in", 100}, {"out", 8}},
                             {{"name", "wpe"}, {"type", "embedding"}, {"in", 8}, {"out", 8}},
                             {{"name", "add"}, {"type", "elementwise"}, {"in", 8}, {"out", 8}, {"inputs", {"wte", "wpe"}}}};
  try {
    model_from_json(bad, "bad.json");
    ADD_FAILURE() << "rotary and learned positions both were taken";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("also has a learned position embedding"), std::string::npos) << e.what();
  }
}

// ---- Each export against the arguments/keys its engine accepts, written down from the engine's source. ----

/// Megatron-LM arguments (megatron/training/arguments.py, core_r0.12 era) the export may emit, each with whether
/// it takes a value, and the values its choices allow.
const std::map<std::string, std::vector<std::string>>& megatron_accepted() {
  static const std::map<std::string, std::vector<std::string>> a = {
      {"--tensor-model-parallel-size", {"<int>"}}, {"--pipeline-model-parallel-size", {"<int>"}},
      {"--num-layers-per-virtual-pipeline-stage", {"<int>"}}, {"--sequence-parallel", {}},
      {"--decoder-first-pipeline-num-layers", {"<int>"}}, {"--decoder-last-pipeline-num-layers", {"<int>"}},
      {"--context-parallel-size", {"<int>"}}, {"--expert-model-parallel-size", {"<int>"}},
      {"--expert-tensor-parallel-size", {"<int>"}}, {"--micro-batch-size", {"<int>"}},
      {"--global-batch-size", {"<int>"}}, {"--use-distributed-optimizer", {}}, {"--overlap-param-gather", {}},
      {"--overlap-grad-reduce", {}}, {"--recompute-granularity", {"full", "selective"}},
      {"--recompute-method", {"uniform", "block"}}, {"--recompute-num-layers", {"<int>"}},
      {"--num-layers", {"<int>"}}, {"--hidden-size", {"<int>"}}, {"--num-attention-heads", {"<int>"}},
      {"--group-query-attention", {}}, {"--num-query-groups", {"<int>"}}, {"--ffn-hidden-size", {"<int>"}},
      {"--swiglu", {}}, {"--num-experts", {"<int>"}}, {"--moe-router-topk", {"<int>"}}, {"--moe-ffn-hidden-size", {"<int>"}},
      {"--moe-layer-freq", {"<str>"}} /* moe_freq_type: an int or a list expression such as "[0]*3+[1]*29" */,
      {"--moe-grouped-gemm", {}}, {"--kv-channels", {"<int>"}}, {"--moe-token-dispatcher-type", {"allgather", "alltoall", "flex", "alltoall_seq"}},
      {"--position-embedding-type", {"learned_absolute", "rope", "mrope", "relative", "none"}},
      {"--rotary-base", {"<int>"}} /* type=int: "1e+06" is refused */, {"--normalization", {"LayerNorm", "RMSNorm"}}, {"--disable-bias-linear", {}}, {"--add-qkv-bias", {}},
      {"--untie-embeddings-and-output-weights", {}}, {"--attention-dropout", {"<num>"}},
      {"--hidden-dropout", {"<num>"}}, {"--attention-backend", {"flash", "fused", "unfused", "local", "auto"}},
      {"--seq-length", {"<int>"}}, {"--max-position-embeddings", {"<int>"}}, {"--bf16", {}}, {"--fp16", {}},
      {"--tokenizer-type", {"NullTokenizer"}}, {"--vocab-size", {"<int>"}},
      {"--make-vocab-size-divisible-by", {"<int>"}}, {"--mock-data", {}}, {"--train-iters", {"<int>"}},
      {"--lr", {"<num>"}}};
  return a;
}

void expect_megatron_accepts(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    const std::string flag = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
    auto it = megatron_accepted().find(flag);
    ASSERT_NE(it, megatron_accepted().end()) << "Megatron-LM has no argument " << flag;
    const auto& allowed = it->second;
    if (allowed.empty()) {
      EXPECT_TRUE(value.empty()) << flag << " is a switch";
    } else if (allowed[0] == "<int>") {
      EXPECT_FALSE(value.empty()) << flag;
      EXPECT_EQ(value.find_first_not_of("0123456789"), std::string::npos) << flag << " " << value;
    } else if (allowed[0] == "<num>") {
      EXPECT_NO_THROW((void)std::stod(value)) << flag << " " << value;
    } else if (allowed[0] == "<str>") {
      // --moe-layer-freq: an int, or a Python list expression of 0s and 1s (moe_freq_type evaluates it), one word
      EXPECT_FALSE(value.empty()) << flag;
      EXPECT_EQ(value.find_first_not_of("0123456789[]*+"), std::string::npos) << flag << " " << value;
    } else {
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), value), allowed.end()) << flag << " " << value;
    }
  }
}

TEST(PlanExport, MegatronArgumentsAreMegatronsAndNameEveryPresetsModel) {
  const ClusterSpec cluster = parse_cluster_spec("dgx-h100:64");
  for (const std::string& name : model_preset_names()) {
    const ModelGraph m = parse_model_spec(name);
    if (m.transformer_layers == 0) continue;  // the MLP preset is no transformer
    PlannerOptions o;
    o.global_batch = 512;
    o.engine = Engine::kMegatron;
    // A few pins keep the test quick. Recompute stays free: with selective recomputation Llama 3 405B on 512 GPUs
    // needs stages of 1 block early and 2 late (1F1B keeps more micro-batches in flight early), which Megatron's
    // equal middle stages cannot express; with full recomputation it runs 15, 16 x 6, 15 over pp 8.
    o.pins = parse_pins("tp=8,mbs=1,schedule=1f1b");
    const Plan plan = Planner(m, cluster, o).plan();
    EXPECT_LE(plan.config.zero, 1) << name;
    std::vector<std::string> warnings;
    const std::string text = export_megatron(plan, m, 512, &warnings);
    SCOPED_TRACE(name + ":\n" + text);
    expect_megatron_accepts(text);
    auto a = parse_args(text);
    // Megatron's validate_args asserts these.
    for (const char* k : {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length",
                          "--max-position-embeddings", "--micro-batch-size"})
      EXPECT_TRUE(a.count(k)) << k;
    // The same model: sizes, attention, MLP, positions, norm, biases, tying, vocabulary.
    EXPECT_EQ(a["--num-layers"], std::to_string(m.transformer_layers));
    EXPECT_EQ(a["--hidden-size"], std::to_string(m.hidden));
    EXPECT_EQ(a["--num-attention-heads"], std::to_string(m.heads));
    EXPECT_EQ(a["--ffn-hidden-size"], std::to_string(m.ffn));
    // Megatron's NullTokenizer builds --vocab-size + 1 rows (its end-of-document id), with divisor 1 padded only to tp.
    EXPECT_EQ(std::stoll(a["--vocab-size"]) + 1, m.vocab);
    EXPECT_EQ(a["--make-vocab-size-divisible-by"], "1");
    EXPECT_EQ(a.count("--num-query-groups") ? std::stoi(a["--num-query-groups"]) : m.heads,
              m.kv_heads > 0 ? m.kv_heads : m.heads);
    EXPECT_EQ(a.count("--swiglu") == 1, m.swiglu);
    const bool llama = name.rfind("llama", 0) == 0 || name == "moe";
    EXPECT_EQ(a["--position-embedding-type"], llama ? "rope" : "learned_absolute");
    EXPECT_EQ(a["--normalization"], llama ? "RMSNorm" : "LayerNorm");
    EXPECT_EQ(a.count("--disable-bias-linear") == 1, llama);
    EXPECT_EQ(a.count("--untie-embeddings-and-output-weights") == 1, llama);
    if (llama) {
      EXPECT_EQ(std::stod(a["--rotary-base"]), m.rope_base);
    }
    if (name.rfind("llama3", 0) == 0) {
      EXPECT_EQ(a["--rotary-base"], "500000");
    }
    EXPECT_EQ(std::stod(a["--hidden-dropout"]), llama ? 0.0 : 0.1);
    if (m.experts > 0) {
      EXPECT_EQ(a["--num-experts"], std::to_string(m.experts));
      EXPECT_TRUE(a.count("--expert-model-parallel-size"));
    }
    EXPECT_FALSE(a.count("--use-distributed-optimizer") && plan.config.zero != 1);
  }
}

/// Megatron-LM's split of --num-layers over --pipeline-model-parallel-size (core_r0.12, transformer_layer.py's
/// get_num_layers_to_build): the first and last stage take --decoder-first/last-pipeline-num-layers when given,
/// the other stages the rest evenly (which must divide).
std::vector<int> megatron_split(std::map<std::string, std::string> a) {
  const int layers = std::stoi(a["--num-layers"]), pp = std::stoi(a["--pipeline-model-parallel-size"]);
  const bool first = a.count("--decoder-first-pipeline-num-layers"), last = a.count("--decoder-last-pipeline-num-layers");
  const int f = first ? std::stoi(a["--decoder-first-pipeline-num-layers"]) : 0;
  const int l = last ? std::stoi(a["--decoder-last-pipeline-num-layers"]) : 0;
  const int middle_stages = pp - (first ? 1 : 0) - (last ? 1 : 0), rest = layers - f - l;
  EXPECT_GT(middle_stages, 0);
  EXPECT_EQ(rest % middle_stages, 0) << "Megatron refuses " << rest << " layers over " << middle_stages << " stages";
  std::vector<int> out(pp, rest / middle_stages);
  if (first) out.front() = f;
  if (last) out.back() = l;
  return out;
}

// The stage DP's best partition of 61 blocks over pp 4 is 15, 16, 15, 15 (and over pp 8, 7, 8, 8, 8, 7, 8, 8, 7):
// middle stages Megatron cannot give different counts. Planned for Megatron, the plan takes the best partition it
// runs instead (14, 16, 16, 15), the export expresses it, and its largest stage is no larger than the DP's.
TEST(PlanExport, PlansForMegatronUseOnlyPartitionsItRuns) {
  const ModelGraph m = parse_model_spec("gpt:layers=61,hidden=4096,heads=32,seq=2048,vocab=51200");
  for (const char* pins : {"tp=8,pp=4,schedule=1f1b", "tp=8,pp=8,schedule=1f1b"}) {
    SCOPED_TRACE(pins);
    PlannerOptions o;
    o.pins = parse_pins(pins);
    const Plan generic = Planner(m, parse_cluster_spec("dgx-h100:64"), o).plan();
    const std::vector<int> dp_blocks = plan_blocks(generic, m);
    EXPECT_FALSE(std::all_of(dp_blocks.begin() + 1, dp_blocks.end() - 1, [&](int b) { return b == dp_blocks[1]; }))
        << "the case this guards: the unconstrained partition has unequal middle stages";
    o.engine = Engine::kMegatron;
    const Plan plan = Planner(m, parse_cluster_spec("dgx-h100:64"), o).plan();
    std::vector<std::string> warnings;
    const std::string text = export_megatron(plan, m, o.global_batch, &warnings);
    for (const auto& w : warnings) EXPECT_EQ(w.find("same number of layers"), std::string::npos) << w;
    EXPECT_EQ(megatron_split(parse_args(text)), plan_blocks(plan, m));
    const std::vector<int> blocks = plan_blocks(plan, m);
    EXPECT_EQ(*std::max_element(blocks.begin(), blocks.end()), *std::max_element(dp_blocks.begin(), dp_blocks.end()));
  }
  // Where no partition Megatron runs fits (Llama 3 405B over pp 64 with selective recomputation needs 1-block
  // stages early and 2-block ones late), there is no plan for it, and the reason says why.
  PlannerOptions o;
  o.global_batch = 512;
  o.engine = Engine::kMegatron;
  o.pins = parse_pins("tp=8,pp=64,mbs=1,recompute=selective,schedule=1f1b");
  try {
    Planner(parse_model_spec("llama3-405b"), parse_cluster_spec("dgx-h100:64"), o).plan();
    ADD_FAILURE() << "planned a partition Megatron cannot run";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("same number of layers"), std::string::npos) << e.what();
  }
  o.engine = Engine::kGeneric;  // the same pins plan without the engine's rule
  EXPECT_EQ(Planner(parse_model_spec("llama3-405b"), parse_cluster_spec("dgx-h100:64"), o).plan().config.pp, 64);
}

TEST(PlanExport, PlansForDeepSpeedRunOnTheSplitItComputes) {
  // DeepSpeed's PipelineModule splits the layers itself ("parameters": balanced parameter counts; "uniform":
  // layer counts), so a plan for it is timed on that split and the export names the method that gives it.
  const ModelGraph m = parse_model_spec("llama3-70b");
  PlannerOptions o;
  o.global_batch = 256;
  o.pins = parse_pins("pp=4,schedule=1f1b,recompute=full");
  const Plan generic = Planner(m, parse_cluster_spec("dgx-h100:8"), o).plan();
  o.engine = Engine::kDeepSpeed;
  const Plan plan = Planner(m, parse_cluster_spec("dgx-h100:8"), o).plan();
  ASSERT_EQ(plan.config.pp, 4);
  std::vector<int> starts;
  for (const StagePlan& st : plan.stages) starts.push_back(st.first_layer);
  starts.push_back(plan.stages.back().end_layer);
  ASSERT_TRUE(plan.partition == "parameters" || plan.partition == "uniform") << plan.partition;
  EXPECT_EQ(starts, engine_fixed_partition(Engine::kDeepSpeed, m, 4, plan.partition == "uniform"));
  // The case this guards: left to itself the stage DP splits otherwise.
  EXPECT_NE(plan_blocks(generic, m), plan_blocks(plan, m));
  std::vector<std::string> warnings;
  const auto j = nlohmann::json::parse(export_deepspeed(plan, m, o.global_batch, &warnings));
  EXPECT_EQ(j["pipeline"]["partition"], plan.partition);
  for (const auto& w : warnings) EXPECT_EQ(w.find("splits the layers itself"), std::string::npos) << w;
  // The split is the model code's (PipelineModule), which the export names; the config's section is not read for it.
  const std::string module = "PipelineModule(layers, num_stages=4, partition_method='" + plan.partition + "'";
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(),
                          [&](const std::string& w) { return w.find(module) != std::string::npos; }))
      << module;
  // A plan not made for DeepSpeed says, when exported to it, that DeepSpeed will split otherwise.
  warnings.clear();
  export_deepspeed(generic, m, o.global_batch, &warnings);
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(),
                          [](const std::string& w) { return w.find("splits the layers itself") != std::string::npos; }));
}

TEST(PlanExport, MegatronRunsThePlansStagePartition) {
  // The stage DP gives the first and last stages (embedding, LM head) fewer blocks: Llama 3 8B over pp 2 as 17 + 15,
  // Llama 3 70B over pp 4 as 19, 21, 21, 19. Megatron splits evenly unless told otherwise; the export tells it.
  struct Case {
    const char* model;
    const char* cluster;
    const char* pins;
  } cases[] = {{"llama3-8b", "dgx-h100:2", "tp=8,pp=2,schedule=1f1b"},
               {"llama3-70b", "dgx-h100:16", "tp=4,pp=4,schedule=1f1b"},
               {"gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000", "dgx-h100:2", "tp=2,pp=4,schedule=1f1b"}};
  int uneven = 0;
  for (const Case& k : cases) {
    const ModelGraph m = parse_model_spec(k.model);
    PlannerOptions o;
    o.global_batch = 512;
    o.engine = Engine::kMegatron;
    o.pins = parse_pins(k.pins);
    const Plan plan = Planner(m, parse_cluster_spec(k.cluster), o).plan();
    std::vector<std::string> warnings;
    const std::string text = export_megatron(plan, m, 512, &warnings);
    SCOPED_TRACE(std::string(k.model) + " " + k.pins + ":\n" + text);
    expect_megatron_accepts(text);
    const std::vector<int> blocks = plan_blocks(plan, m);
    EXPECT_EQ(megatron_split(parse_args(text)), blocks);
    uneven += std::any_of(blocks.begin(), blocks.end(), [&](int b) { return b != blocks[0]; }) ? 1 : 0;
    for (const auto& w : warnings) EXPECT_EQ(w.find("same number of layers"), std::string::npos) << w;
  }
  EXPECT_GE(uneven, 2);  // the case this guards is real, not only the even split

  // A partition Megatron cannot express (the middle stages differ): no partition flags, and a warning that says what
  // Megatron will do instead.
  const ModelGraph m = parse_model_spec("gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000");
  PlannerOptions o;
  o.global_batch = 64;
  o.engine = Engine::kMegatron;
  o.pins = parse_pins("tp=2,pp=4,schedule=1f1b");
  Plan plan = Planner(m, parse_cluster_spec("dgx-h100:2"), o).plan();
  // Chain: embedding, 8 blocks, head (10 layers); stages hold 1, 3, 1, 3 blocks.
  const int bounds[5] = {0, 2, 5, 6, 10};
  for (int s = 0; s < 4; ++s) plan.stages[s].first_layer = bounds[s], plan.stages[s].end_layer = bounds[s + 1];
  ASSERT_EQ(plan_blocks(plan, m), (std::vector<int>{1, 3, 1, 3}));
  std::vector<std::string> warnings;
  auto a = parse_args(export_megatron(plan, m, 64, &warnings));
  EXPECT_FALSE(a.count("--decoder-first-pipeline-num-layers"));
  EXPECT_FALSE(a.count("--decoder-last-pipeline-num-layers"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("hold 1, 3, 1, 3 blocks: Megatron will split them evenly (2 per stage)"), std::string::npos)
      << warnings[0];
  // torchtitan takes the stages as split points: blocks 1, 4 and 5 start the second, third and fourth.
  warnings.clear();
  auto t = parse_toml(export_torchtitan(plan, m, 64, &warnings));
  for (const auto& w : warnings) EXPECT_EQ(w.find("split"), std::string::npos) << w;  // (ZeRO-1 and the flavor warn)
  EXPECT_EQ(split_point_blocks(t["parallelism.pipeline_parallel_split_points"]), (std::vector<int>{1, 4, 5}));
  // A last stage of the head alone starts at "layers.8", past the last block: torchtitan keeps no layer there.
  plan.stages[2].end_layer = plan.stages[3].first_layer = static_cast<int>(m.layers.size()) - 1;
  t = parse_toml(export_torchtitan(plan, m, 64, &warnings));
  EXPECT_EQ(split_point_blocks(t["parallelism.pipeline_parallel_split_points"]), (std::vector<int>{1, 4, 8}));
}

TEST(PlanExport, MegatronMemoryUsesItsFp32MainGradients) {
  // Megatron's distributed optimizer keeps 6 + 12/d bytes per parameter (bf16 weights, fp32 main gradients):
  // more than the generic 4 + 12/d, so the same pinned plan needs more memory planned for Megatron.
  Fixture generic("tp=2,pp=2,mbs=1,recompute=full,zero=1");
  Fixture megatron("tp=2,pp=2,mbs=1,recompute=full,zero=1", Engine::kMegatron);
  const MemoryBreakdown& g = generic.plan.stages[0].memory;
  const MemoryBreakdown& m = megatron.plan.stages[0].memory;
  EXPECT_NEAR(m.gradients, 2 * g.gradients, 1e-6 * g.gradients);
  EXPECT_NEAR(m.weights, g.weights, 1e-6 * g.weights);
  // ZeRO-2/3 are not Megatron's: a pin asking for them names the stages it runs.
  PlannerOptions o;
  o.global_batch = 64;
  o.engine = Engine::kMegatron;
  o.pins = parse_pins("zero=3");
  try {
    Planner(generic.model, generic.cluster, o).plan();
    FAIL() << "zero=3 planned for Megatron-LM";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("allowed: 0, 1"), std::string::npos) << e.what();
  }
}

/// DeepSpeed config keys (deepspeed/runtime/config.py, runtime/zero/config.py,
/// runtime/activation_checkpointing/config.py, v0.16) the export may emit.
TEST(PlanExport, DeepSpeedKeysAreDeepSpeeds) {
  const std::map<std::string, std::vector<std::string>> accepted = {
      {"", {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "bf16", "fp16",
            "zero_optimization", "pipeline", "tensor_parallel", "activation_checkpointing"}},
      {"bf16", {"enabled"}},
      {"fp16", {"enabled"}},
      {"zero_optimization", {"stage", "overlap_comm", "contiguous_gradients"}},
      {"pipeline", {"stages", "partition", "seed_layers", "activation_checkpoint_interval"}},
      {"tensor_parallel", {"autotp_size"}},
      {"activation_checkpointing",
       {"partition_activations", "contiguous_memory_optimization", "number_checkpoints", "cpu_checkpointing"}}};
  for (const char* pins : {"tp=2,pp=2,mbs=2,recompute=full,zero=1", "tp=2,pp=1,mbs=1,recompute=full,zero=2",
                           "tp=1,pp=4,mbs=1,recompute=none,zero=0", "tp=1,pp=1,mbs=1,zero=3"}) {
    Fixture f(pins, Engine::kDeepSpeed);
    auto j = nlohmann::json::parse(export_deepspeed(f.plan, f.model, 64));
    SCOPED_TRACE(std::string(pins) + ": " + j.dump());
    for (auto& [k, v] : j.items()) {
      const auto& top = accepted.at("");
      EXPECT_NE(std::find(top.begin(), top.end(), k), top.end()) << "DeepSpeed has no key " << k;
      if (!v.is_object()) continue;
      ASSERT_TRUE(accepted.count(k)) << k;
      for (auto& [kk, vv] : v.items())
        EXPECT_NE(std::find(accepted.at(k).begin(), accepted.at(k).end(), kk), accepted.at(k).end()) << k << "." << kk;
    }
    // What DeepSpeed checks: batch = micro x accumulation x (world / (tp x pp)); its pipeline runs ZeRO 0-1 only.
    EXPECT_EQ(j["train_batch_size"].get<int64_t>(), j["train_micro_batch_size_per_gpu"].get<int64_t>() *
                                                        j["gradient_accumulation_steps"].get<int64_t>() *
                                                        (16 / (f.plan.config.tp * f.plan.config.pp)));
    EXPECT_EQ(j["train_batch_size"], 64);
    if (j.contains("pipeline")) {
      EXPECT_LE(j["zero_optimization"]["stage"].get<int>(), 1);
    }
  }
  // A pipelined plan with ZeRO-2 is not planned for DeepSpeed.
  PlannerOptions o;
  o.global_batch = 64;
  o.engine = Engine::kDeepSpeed;
  o.pins = parse_pins("pp=2,zero=2");
  const Fixture f("");
  EXPECT_THROW(Planner(f.model, f.cluster, o).plan(), SpecError);
  // Nor ZeRO-3 with AutoTP (its training runs ZeRO 0-2 with tp > 1); unpinned, the plan keeps zero <= 2 at tp > 1.
  o.pins = parse_pins("tp=2,pp=1,zero=3");
  try {
    (void)Planner(f.model, f.cluster, o).plan();
    ADD_FAILURE() << "tp=2 with zero=3 was planned for DeepSpeed";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("AutoTP"), std::string::npos) << e.what();
  }
  o.pins = parse_pins("pp=1");
  const Plan free = Planner(f.model, f.cluster, o).plan();
  EXPECT_TRUE(free.config.tp == 1 || free.config.zero <= 2) << describe(free.config);
}

/// torchtitan v0.1.0 JobConfig sections and fields (torchtitan/config_manager.py) the export may emit.
TEST(PlanExport, TorchtitanKeysAreTorchtitansAndLlama3KeepsItsFlavor) {
  const std::map<std::string, std::vector<std::string>> accepted = {
      {"model", {"name", "flavor", "tokenizer_path"}},
      {"parallelism",
       {"data_parallel_replicate_degree", "data_parallel_shard_degree", "fsdp_reshard_after_forward",
        "tensor_parallel_degree", "pipeline_parallel_degree", "pipeline_parallel_schedule",
        "pipeline_parallel_microbatch_size", "pipeline_parallel_layers_per_stage", "pipeline_parallel_split_points",
        "context_parallel_degree",
        "expert_parallel_degree"}},
      {"training", {"local_batch_size", "global_batch_size", "seq_len", "mixed_precision_param",
                    "mixed_precision_reduce", "steps"}},
      {"activation_checkpoint", {"mode", "selective_ac_option"}}};
  const ModelGraph m = parse_model_spec("llama3-8b");
  const ClusterSpec c = parse_cluster_spec("dgx-h100:4");
  for (const char* pins : {"tp=2,pp=4,mbs=1,schedule=interleaved,v=2,recompute=full,zero=3", "tp=4,pp=1,zero=3",
                           "tp=8,pp=2,zero=2,recompute=selective"}) {
    PlannerOptions o;
    o.global_batch = 64;
    o.engine = Engine::kTorchtitan;
    o.pins = parse_pins(pins);
    const Plan plan = Planner(m, c, o).plan();
    std::vector<std::string> warnings;
    const std::string text = export_torchtitan(plan, m, 64, &warnings);
    SCOPED_TRACE(std::string(pins) + ":\n" + text);
    // Only the selective policy's caveat (the plan's selective recomputation is not torchtitan's "op").
    std::erase_if(warnings, [](const std::string& w) { return w.find("selective checkpointing") != std::string::npos; });
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    auto t = parse_toml(text);
    for (const auto& [key, value] : t) {
      const std::string section = key.substr(0, key.find('.')), field = key.substr(key.find('.') + 1);
      ASSERT_TRUE(accepted.count(section)) << "torchtitan has no section [" << section << "]";
      EXPECT_NE(std::find(accepted.at(section).begin(), accepted.at(section).end(), field),
                accepted.at(section).end())
          << "torchtitan has no " << key;
    }
    EXPECT_EQ(t["model.name"], "llama3");
    EXPECT_EQ(t["model.flavor"], "8B");
    if (plan.config.schedule == Schedule::kInterleaved) {
      // 32 blocks in pp 4 x v 2 chunks of 4: seven split points, at blocks 4, 8, .., 28.
      EXPECT_EQ(split_point_blocks(t["parallelism.pipeline_parallel_split_points"]),
                (std::vector<int>{4, 8, 12, 16, 20, 24, 28}));
    } else if (plan.config.pp > 1) {
      const std::vector<int> blocks = plan_blocks(plan, m);
      std::vector<int> firsts;
      for (size_t st = 0, at = 0; st + 1 < blocks.size(); ++st) firsts.push_back(static_cast<int>(at += blocks[st]));
      EXPECT_EQ(split_point_blocks(t["parallelism.pipeline_parallel_split_points"]), firsts);
    }
    // global = local x dp (x accumulation when pp = 1).
    const int64_t local = std::stoll(t["training.local_batch_size"]);
    EXPECT_EQ(64 % (local * plan.config.dp), 0);
  }
  // What torchtitan cannot run as planned is not planned for it: DDP (zero 0) beside tp (a >1-D mesh: "DDP has not
  // supported > 1D parallelism"), and tp or pp without FSDP sharding (dp 1, cp 1), which it trains in fp32.
  for (const auto& [pins, says] : std::vector<std::pair<const char*, const char*>>{
           {"tp=4,pp=1,zero=0", "DDP"}, {"tp=8,pp=4,zero=2", "fp32"}}) {
    PlannerOptions o;
    o.global_batch = 64;
    o.engine = Engine::kTorchtitan;
    o.pins = parse_pins(pins);
    try {
      (void)Planner(m, c, o).plan();
      ADD_FAILURE() << pins << " was planned for torchtitan";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
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
