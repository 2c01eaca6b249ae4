// `tuner plan` and `tuner query --plans` as users run them: JSON output, pins,
// exports, the plan log, and bad specs (exit code 2, one line on stderr, the
// database unchanged).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "db/migrations.h"
#include "db/tuning_db.h"
#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::slurp;

std::string read_file(const std::filesystem::path& p) { return slurp(p.string()); }

class PlanCli : public tuner_cli_test::Cli {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

constexpr const char* kSmall = "--model gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000 --cluster dgx-h100:2";

TEST_F(PlanCli, JsonPlanIsLoggedAndListed) {
  auto r = run(std::string("plan ") + kSmall + " --global-batch 64 --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tp"].get<int>() * j["pp"].get<int>() * j["dp"].get<int>(), 16);
  for (const char* k : {"micro_batch_size", "num_micro_batches", "schedule", "recompute", "iteration_time_s",
                        "tflops_per_gpu", "mfu", "peak_memory_bytes", "stages"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_LE(j["peak_memory_bytes"].get<double>(), 80e9);
  int stage_gpus = 0;  // each stage's GPUs: they cover the cluster
  for (const auto& s : j["stages"]) stage_gpus += s["gpus"].get<int>();
  EXPECT_EQ(stage_gpus, 16);

  auto q = run("query --plans --json --db " + db());
  ASSERT_EQ(q.code, 0) << q.err;
  auto plans = nlohmann::json::parse(q.out);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0]["tp"], j["tp"]);
  EXPECT_EQ(plans[0]["plan"]["iteration_time_s"], j["iteration_time_s"]);
  auto table = run("query --plans --db " + db());
  EXPECT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("gpt:layers=8"), std::string::npos);

  // The same plan again is not logged twice: the first one's id is given back.
  auto again = run(std::string("plan ") + kSmall + " --global-batch 64 --json --db " + db());
  ASSERT_EQ(again.code, 0) << again.err;
  auto ja = nlohmann::json::parse(again.out);
  EXPECT_TRUE(ja["already_logged"].get<bool>());
  EXPECT_EQ(ja["plan_id"], j["plan_id"]);
  EXPECT_FALSE(j["already_logged"].get<bool>());
  EXPECT_EQ(j["engine"], "generic");
  EXPECT_FALSE(j.contains("export_warnings"));
  // With an export the JSON names the engine and carries what the export could not express.
  auto ex = run(std::string("plan ") + kSmall + " --global-batch 64 --json --export deepspeed --fix pp=2 --out " +
                path("ds.json") + " --db " + db());
  ASSERT_EQ(ex.code, 0) << ex.err;
  const auto je = nlohmann::json::parse(ex.out);
  EXPECT_EQ(je["engine"], "deepspeed");
  ASSERT_TRUE(je["export_warnings"].is_array());
  size_t stderr_warnings = 0;
  for (size_t at = ex.err.find("warning: deepspeed export:"); at != std::string::npos;
       at = ex.err.find("warning: deepspeed export:", at + 1))
    ++stderr_warnings;
  EXPECT_EQ(je["export_warnings"].size(), stderr_warnings);
  EXPECT_EQ(nlohmann::json::parse(run("query --plans --json --db " + db()).out).size(), 2u);
}

TEST_F(PlanCli, APlanLoggedInAnExistingDatabaseIsInTheFileItself) {
  // With the reading connection still open, the plan stayed in the -wal file: a copy of the .db lost it.
  ASSERT_EQ(run("tune --op gemm --shape M=64,N=64,K=64 --device sim:h100-sxm --trials 2 --quiet --db " + db()).code, 0);
  ASSERT_EQ(run(std::string("plan ") + kSmall + " --global-batch 64 --db " + db()).code, 0);
  std::error_code ec;
  const auto wal = std::filesystem::file_size(db() + "-wal", ec);
  EXPECT_TRUE(ec || wal == 0) << "plan left " << wal << " bytes in the WAL";
  std::filesystem::copy_file(db(), path("copy.db"));
  EXPECT_EQ(nlohmann::json::parse(run("query --plans --json --db " + path("copy.db")).out).size(), 1u);
}

TEST_F(PlanCli, ASimDevicesEstimatesAreNotTakenForTunedKernelTimes) {
  // A short sim session's best of two GEMM shapes (the kernel model's estimate, slower than the planner's own
  // calibrated curve) made the plans using them look slower, and the choice moved to other micro-batches.
  std::ofstream(path("tiny.json")) << R"({"name": "tiny", "seq": 1024, "dtype": "bf16",
    "layers": [{"name": "block", "repeat": 4, "output": "add", "ops": [
      {"name": "fc1", "type": "linear", "in": 1024, "out": 4096, "inputs": ["input"]},
      {"name": "act", "type": "elementwise", "in": 4096, "out": 4096, "inputs": ["fc1"]},
      {"name": "fc2", "type": "linear", "in": 4096, "out": 1024, "inputs": ["act"]},
      {"name": "add", "type": "elementwise", "in": 1024, "out": 1024, "inputs": ["input", "fc2"]}]}]})";
  const std::string plan = "plan --model " + path("tiny.json") + " --cluster dgx-h100:4 --json --db " + db();
  const auto before = run(plan);
  ASSERT_EQ(before.code, 0) << before.err;
  for (const char* shape : {"M=8192,N=4096,K=1024", "M=8192,N=1024,K=4096"})
    ASSERT_EQ(run(std::string("tune --op gemm --shape ") + shape + " --dtype bf16 --template gemm_tc_mma "
                  "--device sim:h100-sxm --trials 4 --quiet --db " + db()).code,
              0);
  const auto after = run(plan);
  ASSERT_EQ(after.code, 0) << after.err;
  const auto a = nlohmann::json::parse(before.out), b = nlohmann::json::parse(after.out);
  EXPECT_EQ(b["cost_sources"]["tuned"], 0) << b["cost_sources"].dump();
  EXPECT_EQ(b["iteration_time_s"], a["iteration_time_s"]);
  EXPECT_EQ(b["micro_batch_size"], a["micro_batch_size"]);
}

TEST_F(PlanCli, FixIsHonouredAndExportsCarryIt) {
  const std::string fix = " --global-batch 64 --fix tp=2,pp=2,mbs=2,recompute=full,zero=1 --db " + db();
  auto r = run(std::string("plan ") + kSmall + fix + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tp"], 2);
  EXPECT_EQ(j["pp"], 2);
  EXPECT_EQ(j["dp"], 4);
  EXPECT_EQ(j["micro_batch_size"], 2);
  EXPECT_EQ(j["recompute"], "full");

  auto m = run(std::string("plan ") + kSmall + fix + " --export megatron");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("--tensor-model-parallel-size 2\n"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("--pipeline-model-parallel-size 2\n"), std::string::npos);
  EXPECT_NE(m.out.find("--micro-batch-size 2\n"), std::string::npos);
  EXPECT_NE(m.out.find("--recompute-granularity full\n"), std::string::npos);

  auto d = run(std::string("plan ") + kSmall + fix + " --export deepspeed --out " + path("ds.json"));
  ASSERT_EQ(d.code, 0) << d.err;
  auto ds = nlohmann::json::parse(read_file(path("ds.json")));
  EXPECT_EQ(ds["train_batch_size"], 64);
  EXPECT_EQ(ds["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(ds["pipeline"]["stages"], 2);
  EXPECT_EQ(ds["zero_optimization"]["stage"], 1);

  // torchtitan has no ZeRO-1: the pin is refused naming the stages it runs; ZeRO-3 (FSDP) plans.
  auto bad = run(std::string("plan ") + kSmall + fix + " --export torchtitan");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("allowed: 0, 2, 3"), std::string::npos) << bad.err;
  const std::string fix3 = " --global-batch 64 --fix tp=2,pp=2,mbs=2,recompute=full,zero=3 --db " + db();
  auto t = run(std::string("plan ") + kSmall + fix3 + " --export torchtitan");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("tensor_parallel_degree = 2\n"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("pipeline_parallel_degree = 2\n"), std::string::npos);
  EXPECT_NE(t.out.find("pipeline_parallel_microbatch_size = 2\n"), std::string::npos);
  EXPECT_NE(t.out.find("mode = \"full\"\n"), std::string::npos);
}

TEST_F(PlanCli, ThreeVirtualStagesArePinnedAndExported) {
  // 12 blocks over pp=2 x v=3 chunks: 2 blocks per chunk.
  const std::string model = "--model gpt:layers=12,hidden=2048,heads=16,seq=1024,vocab=32000 --cluster dgx-h100:2";
  const std::string fix = " --global-batch 64 --fix tp=2,pp=2,mbs=1,schedule=interleaved,v=3,zero=0 --db " + db();
  auto r = run("plan " + model + fix + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schedule"], "interleaved");
  EXPECT_EQ(j["virtual_stages"], 3);
  // Each rank's three chunks as the engines lay them out (the table said "layers 0-6", one range, for rank 0).
  ASSERT_EQ(j["stages"].size(), 2u);
  EXPECT_EQ(j["stages"][0]["interleaved_blocks"], nlohmann::json::parse("[[0,1],[4,5],[8,9]]"));
  EXPECT_EQ(j["stages"][1]["interleaved_blocks"], nlohmann::json::parse("[[2,3],[6,7],[10,11]]"));
  auto table = run("plan " + model + fix);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("interleaved v=3"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("blocks 0-1,4-5,8-9"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("blocks 2-3,6-7,10-11"), std::string::npos) << table.out;

  auto m = run("plan " + model + fix + " --export megatron");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("--num-layers-per-virtual-pipeline-stage 2\n"), std::string::npos) << m.out;
  // torchtitan runs tp and pp with FSDP only (its DDP takes a 1-D mesh): zero 2 there.
  auto t = run("plan " + model + " --global-batch 64 --fix tp=2,pp=2,mbs=1,schedule=interleaved,v=3,zero=2 --db " +
               db() + " --export torchtitan");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("pipeline_parallel_schedule = \"Interleaved1F1B\"\n"), std::string::npos) << t.out;
  // pp 2 x v 3 chunks of 2 blocks: split points at blocks 2, 4, .., 10 (torchtitan infers v from their number).
  EXPECT_NE(t.out.find("pipeline_parallel_split_points = [\"layers.2\", \"layers.4\", \"layers.6\", \"layers.8\", "
                       "\"layers.10\"]\n"),
            std::string::npos)
      << t.out;
  // DeepSpeed's pipeline engine runs 1F1B only: the pin is refused for it, naming what it runs.
  auto d = run("plan " + model + fix + " --export deepspeed");
  EXPECT_EQ(d.code, 2) << d.out;
  EXPECT_NE(d.err.find("--fix schedule=interleaved cannot run on deepspeed; allowed: 1f1b"), std::string::npos) << d.err;

  // 4 chunks per device do not divide 12 blocks over 2 stages: refused with the reason.
  auto bad = run("plan " + model + " --global-batch 64 --fix tp=2,pp=2,schedule=interleaved,v=4 --db " + db());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("chunks"), std::string::npos) << bad.err;
}

TEST_F(PlanCli, UnequalGpuCountsPerStageAreTabledAndInTheJson) {
  // 25 generic layers, the middle one 12x as wide, on 4 x 8 GPUs of 4.3 GB: the pipeline the memory needs runs best
  // with the heavy layer's stage on more GPUs.
  nlohmann::json layers = nlohmann::json::array();
  for (auto [name, repeat, inner] : {std::tuple{"light_a", 12, 8192}, {"heavy", 1, 8192 * 12}, {"light_b", 12, 8192}})
    layers.push_back({{"name", name},
                      {"repeat", repeat},
                      {"output", "add"},
                      {"ops",
                       {{{"name", "up"}, {"type", "linear"}, {"in", 4096}, {"out", inner}, {"inputs", {"input"}}},
                        {{"name", "act"}, {"type", "elementwise"}, {"in", inner}, {"out", inner}, {"inputs", {"up"}}},
                        {{"name", "down"}, {"type", "linear"}, {"in", inner}, {"out", 4096}, {"inputs", {"act"}}},
                        {{"name", "add"}, {"type", "elementwise"}, {"in", 4096}, {"out", 4096}, {"inputs", {"input", "down"}}}}}});
  std::ofstream(path("heavy.json")) << nlohmann::json{{"name", "heavy-group"}, {"seq", 2048}, {"layers", layers}}.dump();
  std::ofstream(path("small.json")) << R"({"name": "small", "nodes": 4, "gpus_per_node": 8, "gpu": "h100-sxm",
    "memory_gb": 4.3, "intra_node": {"bandwidth_gbps": 450, "latency_us": 3},
    "inter_node": {"bandwidth_gbps": 50, "latency_us": 5}})";
  const std::string args = "plan --model " + path("heavy.json") + " --cluster " + path("small.json") +
                           " --global-batch 256 --db " + db();
  auto r = run(args + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["partition"], "unequal");
  EXPECT_FALSE(j["uniform_stages"].get<bool>());
  int sum = 0, most = 0, heavy = 0;
  for (const auto& s : j["stages"]) {
    const int g = s["gpus"].get<int>();
    sum += g, most = std::max(most, g);
    if (s["first_layer"].get<int>() <= 12 && 12 <= s["last_layer"].get<int>()) heavy = g;
    EXPECT_EQ(g, s["tp"].get<int>() * s["dp"].get<int>() * j["cp"].get<int>());
  }
  EXPECT_EQ(sum, 32);
  EXPECT_EQ(heavy, most);
  EXPECT_GT(heavy, 32 / j["pp"].get<int>());
  auto t = run(args);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("unequal GPU counts"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("stage  layers  gpus"), std::string::npos) << t.out;
  // An export plans what the engines run: equal stages.
  auto m = run(args + " --export megatron");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("--pipeline-model-parallel-size"), std::string::npos) << m.out;
  EXPECT_EQ(m.err.find("stages differ"), std::string::npos) << m.err;
  // The plan log keeps what the files held, not only their paths: the files can change or go.
  std::filesystem::remove(path("heavy.json"));
  std::filesystem::remove(path("small.json"));
  const auto logged = nlohmann::json::parse(run("query --plans --json --db " + db()).out);
  ASSERT_FALSE(logged.empty());
  const auto& options = logged[0]["options"];
  EXPECT_EQ(options["model_file"]["name"], "heavy-group") << options.dump();
  EXPECT_EQ(options["model_file"]["layers"].size(), 3u);
  EXPECT_EQ(options["cluster_file"]["memory_gb"], 4.3);
  EXPECT_EQ(logged[0]["model"], path("heavy.json"));
}

TEST_F(PlanCli, JsonBreakdownAddsUpAndAttentionIsChosen) {
  auto r = run(std::string("plan ") + kSmall + " --global-batch 64 --fix tp=2,pp=2 --attention unfused --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["attention"], "unfused");
  const double t = j["iteration_time_s"].get<double>();
  for (const auto& st : j["stages"]) {
    double sum = 0;
    for (auto& [k, v] : st["time_breakdown"].items())
      if (k != "total_s") sum += v.get<double>();
    EXPECT_NEAR(sum, t, 1e-9 * t);
  }
  EXPECT_NEAR(j["time_breakdown"]["total_s"].get<double>(), t, 1e-9 * t);
  // The recipe's unfused attention is said in the table, with the flag that plans flash; an asked one is not.
  const std::string note = "attention runs unfused, the recipe of";
  auto recipe = run(std::string("plan ") + kSmall + " --global-batch 64 --db " + db());
  ASSERT_EQ(recipe.code, 0) << recipe.err;
  EXPECT_NE(recipe.out.find(note), std::string::npos) << recipe.out;
  EXPECT_NE(recipe.out.find("--attention flash plans fused kernels"), std::string::npos);
  auto asked = run(std::string("plan ") + kSmall + " --global-batch 64 --attention unfused --db " + db());
  ASSERT_EQ(asked.code, 0) << asked.err;
  EXPECT_EQ(asked.out.find(note), std::string::npos) << asked.out;
  auto bad = run(std::string("plan ") + kSmall + " --attention xformers --db " + db());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--attention xformers is unknown; allowed: auto, flash, unfused"), std::string::npos)
      << bad.err;
}

TEST_F(PlanCli, BadSpecsExitTwoWithOneLineAndLeaveTheDatabaseUnchanged) {
  auto ok = run(std::string("plan ") + kSmall + " --global-batch 64 --db " + db());
  ASSERT_EQ(ok.code, 0) << ok.err;
  const std::string before = run("query --plans --json --db " + db()).out;

  std::ofstream(path("cyclic.json")) << R"({"seq": 64, "layers": [{"ops": [
      {"name": "a", "type": "linear", "in": 64, "out": 64, "inputs": ["b"]},
      {"name": "b", "type": "linear", "in": 64, "out": 64, "inputs": ["a"]}]}]})";
  std::ofstream(path("b200.json")) << R"({"nodes": 2, "gpus_per_node": 8, "gpu": "b200",
      "intra_node": {"bandwidth_gbps": 900}, "inter_node": {"bandwidth_gbps": 50}})";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--model gpt3-175b --cluster dgx-h100:0", "nodes must be positive"},
      {"--model gpt3-175b --cluster " + path("b200.json"), "unknown GPU type 'b200'"},
      {"--model gpt:layers=4,hidden=oops,heads=8 --cluster dgx-h100:1", "not an integer"},
      {"--model " + path("cyclic.json") + " --cluster dgx-h100:1", "cycle"},
      {"--model gpt3-175b --cluster dgx-a100:1 --global-batch 8", "cannot be split"},
      {std::string(kSmall) + " --global-batch 64 --fix tp=3", "tp=3"},
      {std::string(kSmall) + " --fix colour=red", "unknown"},
      {std::string(kSmall) + " --export excel", "allowed: megatron, deepspeed, torchtitan"},
      {std::string(kSmall) + " --export megatron --out ''", "--out '' names no file"},
      {std::string(kSmall) + " --export torchtitan --fix sp=0,tp=2", "sp=0 cannot run on torchtitan with tp=2"},
      {std::string(kSmall) + " --fix mbs=3", "mbs=3 does not divide the global batch of 1024; allowed: 1, 2, 4"},
      {std::string(kSmall) + " --fix schedule=interleaved,v=1", "allowed: v=2..64"},
      {"--model gpt:layers=7,hidden=2048,heads=16 --cluster dgx-a100:1 --fix pp=8 --export megatron",
       "the 7 blocks do not fill pp=8"},
  };
  for (const auto& c : cases) {
    auto r = run("plan " + c.args + " --db " + db());
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
  EXPECT_EQ(run("query --plans --json --db " + db()).out, before);

  // A failed plan creates no database where there was none.
  auto none = run("plan --model gpt3-175b --cluster dgx-h100:0 --db " + path("new.db"));
  EXPECT_EQ(none.code, 2);
  EXPECT_FALSE(std::filesystem::exists(path("new.db")));
}

TEST_F(PlanCli, FailedExportLeavesTheDatabaseUntouched) {
  // No database yet: a failed --out creates none.
  auto first = run(std::string("plan ") + kSmall + " --global-batch 64 --export megatron --out " +
                   path("missing/dir/args.txt") + " --db " + db());
  EXPECT_EQ(first.code, 2) << first.err;
  EXPECT_NE(first.err.find("cannot write --out file"), std::string::npos) << first.err;
  EXPECT_EQ(std::count(first.err.begin(), first.err.end(), '\n'), 1) << first.err;
  EXPECT_FALSE(std::filesystem::exists(db()));

  // With a logged plan: a failed --out (a missing folder, a directory) adds no second plan.
  ASSERT_EQ(run(std::string("plan ") + kSmall + " --global-batch 64 --db " + db()).code, 0);
  const std::string before = run("query --plans --json --db " + db()).out;
  ASSERT_EQ(nlohmann::json::parse(before).size(), 1u);
  for (const std::string& out : {path("missing/dir/args.txt"), dir_.string()}) {
    auto r = run(std::string("plan ") + kSmall + " --global-batch 64 --export megatron --out " + out + " --db " + db());
    EXPECT_EQ(r.code, 2) << out << "\n" << r.err;
    EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  }
  EXPECT_EQ(run("query --plans --json --db " + db()).out, before);
}

/// Runs `plan` expecting exit 2, one stderr line holding every part of `expect`, no stdout and no database.
#define EXPECT_REFUSED(args, ...)                                                                     \
  do {                                                                                               \
    auto r_ = run(std::string("plan ") + (args) + " --db " + db());                                  \
    EXPECT_EQ(r_.code, 2) << (args) << "\n" << r_.err;                                               \
    EXPECT_EQ(std::count(r_.err.begin(), r_.err.end(), '\n'), 1) << (args) << "\n" << r_.err;       \
    for (const std::string& part_ : {__VA_ARGS__})                                                  \
      EXPECT_NE(r_.err.find(part_), std::string::npos) << (args) << "\n" << r_.err << "lacks " << part_; \
    EXPECT_TRUE(r_.out.empty()) << (args);                                                          \
    EXPECT_FALSE(std::filesystem::exists(db())) << (args);                                           \
  } while (0)

TEST_F(PlanCli, WrongTypesInSpecFilesNameTheFileAndTheField) {
  const std::string op = R"({"name": "fc", "type": "linear", "in": 64, "out": 64, "inputs": ["input"]})";
  auto model = [&](const std::string& file, const std::string& text) {
    std::ofstream(path(file)) << text;
    return "--model " + path(file) + " --cluster dgx-h100:1";
  };
  EXPECT_REFUSED(model("name.json", R"({"name": 123, "seq": 64, "layers": [{"ops": [)" + op + "]}]}"), "name.json", "name: 123",
                 "allowed: a string");
  EXPECT_REFUSED(model("type.json", R"({"seq": 64, "layers": [{"ops": [)" + op + "]}, " + R"({"ops": [)" + op + "]}, " +
                                       R"({"ops": [)" + op + "]}, " +
                                       R"({"ops": [{"name": "x", "type": 5, "in": 64, "out": 64, "inputs": ["input"]}]}]})"),
                 "type.json", "layers[3].ops[0].type", "allowed: linear, attention");
  EXPECT_REFUSED(model("gated.json", R"({"seq": 64, "layers": [{"ops": [{"name": "m", "type": "moe_ffn", "in": 64, "out": 64,
                       "experts": 4, "top_k": 2, "ffn": 128, "gated": "yes", "inputs": ["input"]}]}]})"),
                 "gated.json", "layers[0].ops[0].gated", "allowed: true, false");
  EXPECT_REFUSED(model("huge.json", R"({"seq": 1e400, "layers": [{"ops": [)" + op + "]}]}"), "huge.json", "seq",
                 "out of range");
  std::filesystem::create_directories(path("dir.json"));
  EXPECT_REFUSED("--model " + path("dir.json") + " --cluster dgx-h100:1", "dir.json", "is a directory");
  EXPECT_REFUSED("--model gpt3-350m --cluster " + path("dir.json"), "dir.json", "is a directory");

  auto cluster = [&](const std::string& file, const std::string& text) {
    std::ofstream(path(file)) << text;
    return "--model gpt3-350m --cluster " + path(file);
  };
  EXPECT_REFUSED(cluster("bw.json", R"({"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm",
                         "intra_node": {"bandwidth_gbps": "fast"}})"),
                 "bw.json", "intra_node.bandwidth_gbps", "not a number");
  EXPECT_REFUSED(cluster("gpu.json", R"({"nodes": 1, "gpus_per_node": 8, "gpu": 100,
                         "intra_node": {"bandwidth_gbps": 450}})"),
                 "gpu.json", "gpu: 100", "h100-sxm");
  EXPECT_REFUSED(cluster("lat.json", R"({"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm",
                         "intra_node": {"bandwidth_gbps": 450, "latency_us": 1e400}})"),
                 "lat.json", "intra_node.latency_us", "out of range");
}

TEST_F(PlanCli, InfeasiblePinsSayWhyWithTheConfigurationAsTried) {
  // The example configuration shows its real micro-batch count (it showed m=1 for 4096 micro-batches).
  EXPECT_REFUSED("--model gpt3-1.3b --cluster dgx-h100:1 --fix schedule=gpipe,mbs=1,pp=1 --global-batch 4096",
                 "tp=8 pp=1 dp=1 mbs=1 m=4096 gpipe", "no stage partition fits in 78 GB per GPU");
  // A v no pp can split the layers by names the v that can (it said "interleaved needs pp >= 2").
  EXPECT_REFUSED("--model gpt3-1.3b --cluster dgx-h100:1 --fix v=5",
                 "--fix v=5: the 24 layers do not split into pp x v chunks for any pp >= 2 on the 8 GPUs of "
                 "dgx-h100:1; allowed: v = 2, 3, 4, 6, 12");
  // With pp pinned, the message is about that pp (it said "for no pp >= 2 (pp is pinned)").
  EXPECT_REFUSED("--model gpt3-1.3b --cluster dgx-h100:1 --fix pp=4,v=4",
                 "--fix v=4: the 24 layers do not split into pp x v chunks at the pinned pp=4 (4 x 4 does not divide "
                 "24); allowed: v = 2, 3, 6");
}

TEST_F(PlanCli, HugeNumbersAreRefusedWithTheirLimits) {
  std::ofstream(path("gpn.json")) << R"({"nodes": 1, "gpus_per_node": 2147483647, "gpu": "h100-sxm",
      "intra_node": {"bandwidth_gbps": 450}})";
  EXPECT_REFUSED("--model gpt3-350m --cluster " + path("gpn.json"), "gpus_per_node: 2147483647",
                 "1..1,048,576");
  std::ofstream(path("product.json")) << R"({"nodes": 4096, "gpus_per_node": 512, "gpu": "h100-sxm",
      "intra_node": {"bandwidth_gbps": 450}, "inter_node": {"bandwidth_gbps": 50}})";
  EXPECT_REFUSED("--model gpt3-350m --cluster " + path("product.json"), "2,097,152 GPUs",
                 "at most 1,048,576 GPUs in a cluster");
  std::ofstream(path("mem.json")) << R"({"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm", "memory_gb": 1e30,
      "intra_node": {"bandwidth_gbps": 450}})";
  EXPECT_REFUSED("--model gpt3-350m --cluster " + path("mem.json"), "memory_gb", "too large", "<= 160");
  EXPECT_REFUSED("--model gpt3-350m --cluster dgx-h100:268435456", "268435456", "1..131,072 nodes",
                 "1,048,576 GPUs");
  std::ofstream(path("moe.json")) << R"({"seq": 64, "layers": [{"ops": [{"name": "m", "type": "moe_ffn", "in": 64, "out": 64,
      "experts": 2147483647, "top_k": 2, "ffn": 128, "inputs": ["input"]}]}]})";
  EXPECT_REFUSED("--model " + path("moe.json") + " --cluster dgx-h100:1", "layers[0].ops[0].experts", "0..65,536");
  EXPECT_REFUSED("--model moe:layers=2,hidden=64,heads=2,experts=2147483647,top_k=2 --cluster dgx-h100:1",
                 "experts=2147483647", "1..65,536");
  EXPECT_REFUSED("--model gpt:layers=99999999999999999999,hidden=64,heads=2 --cluster dgx-h100:1", "layers=",
                 "1..10,000");
  EXPECT_REFUSED(std::string(kSmall) + " --fix tp=99999999999", "tp=99999999999", "1..1048576");
  EXPECT_REFUSED(std::string(kSmall) + " --fix mbs=4294967297", "mbs=4294967297", "1..1048576");
  EXPECT_REFUSED(std::string(kSmall) + " --global-batch 99999999999999999999", "--global-batch", "1..16777216");
  EXPECT_REFUSED(std::string(kSmall) + " --global-batch 4294967296", "--global-batch 4294967296", "1..16777216");
}

TEST_F(PlanCli, RepeatsAreCountedBeforeTheyAreCopied) {
  std::ofstream(path("repeat.json")) << R"({"seq": 64, "layers": [{"repeat": 1000000000, "ops": [
      {"name": "fc", "type": "linear", "in": 64, "out": 64, "inputs": ["input"]}]}]})";
  EXPECT_REFUSED("--model " + path("repeat.json") + " --cluster dgx-h100:1", "layers[0].repeat", "1000000000",
                 "1..10,000");
  std::ofstream(path("repeats.json")) << R"({"seq": 64, "layers": [
      {"repeat": 6000, "ops": [{"name": "fc", "type": "linear", "in": 64, "out": 64, "inputs": ["input"]}]},
      {"repeat": 6000, "ops": [{"name": "fc", "type": "linear", "in": 64, "out": 64, "inputs": ["input"]}]}]})";
  EXPECT_REFUSED("--model " + path("repeats.json") + " --cluster dgx-h100:1", "layers[1].repeat", "12,000 layers",
                 "at most 10,000 layers");
}

TEST_F(PlanCli, TunedRecordsFromTheDatabaseReplaceAnalyticCosts) {
  // A one-layer f32 MLP on one H100 node, pinned to tp=1, mbs=1: its linears are GEMMs
  // M = 1 x 64 tokens, N = 256, K = 256. Measurements of exactly that GEMM on an H100 first: tuned on the sim H100
  // and relabelled as a real H100's (export, edit, import), as a database copied off a GPU machine holds them.
  std::ofstream(path("mlp.json")) << R"({"seq": 64, "dtype": "f32", "layers": [{"ops": [
      {"name": "fc1", "type": "linear", "in": 256, "out": 256, "inputs": ["input"]},
      {"name": "fc2", "type": "linear", "in": 256, "out": 256, "inputs": ["fc1"]}]}]})";
  const std::string plan = "plan --model " + path("mlp.json") +
                           " --cluster dgx-h100:1 --global-batch 8 --fix tp=1,pp=1,mbs=1 --json --db " + db();
  auto before = run(plan);
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_EQ(nlohmann::json::parse(before.out)["cost_sources"]["tuned"], 0);

  const std::string sim_db = path("sim.db");
  auto tune = run("tune --op gemm --shape M=64,N=256,K=256 --device sim:h100-sxm --trials 2 --seed 1 --db " + sim_db);
  ASSERT_EQ(tune.code, 0) << tune.err;
  auto exported = run("export --format jsonl --db " + sim_db);
  ASSERT_EQ(exported.code, 0) << exported.err;
  {
    std::ofstream measured(path("h100.jsonl"));
    std::istringstream lines(exported.out);
    for (std::string line; std::getline(lines, line);) {
      auto r = nlohmann::json::parse(line);
      r["device"] = "NVIDIA H100 80GB HBM3";
      r["estimate"] = false;
      r["device_identity"]["name"] = "NVIDIA H100 80GB HBM3";
      r["device_identity"]["simulated"] = false;
      measured << r.dump() << "\n";
    }
  }
  ASSERT_EQ(run("import " + path("h100.jsonl") + " --db " + db()).code, 0);
  auto after = run(plan);
  ASSERT_EQ(after.code, 0) << after.err;
  auto j = nlohmann::json::parse(after.out);
  EXPECT_EQ(j["cost_sources"]["tuned"], 2);  // fc1 and fc2
  EXPECT_EQ(j["stages"][0]["sharding"][0]["ops"][0]["source"], "tuned");
  EXPECT_EQ(run("query --plans --json --db " + db()).out.empty(), false);
  // The sim's own records, estimates, are not taken for measurements.
  auto sim_plan = run("plan --model " + path("mlp.json") +
                      " --cluster dgx-h100:1 --global-batch 8 --fix tp=1,pp=1,mbs=1 --json --db " + sim_db);
  ASSERT_EQ(sim_plan.code, 0) << sim_plan.err;
  EXPECT_EQ(nlohmann::json::parse(sim_plan.out)["cost_sources"]["tuned"], 0);
}

}  // namespace

namespace {

TEST_F(PlanCli, ExpertParallelIsPinnedListedAndRefusedWithItsAllowedValues) {
  const std::string moe = "--model moe:layers=2,hidden=512,heads=8,experts=8,top_k=2,seq=512,vocab=8000 "
                          "--cluster dgx-h100:1 --global-batch 16";
  auto r = run("plan " + moe + " --fix ep=4,mbs=1,recompute=none --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ep"], 4);
  EXPECT_EQ(j["cp"], 1);
  EXPECT_TRUE(j["time_breakdown"].contains("ep_comm_s"));
  EXPECT_TRUE(j["time_breakdown"].contains("reshard_s"));  // both terms of the merged breakdown
  // The plans table has its own cp and ep columns, in JSON and in the table.
  auto q = nlohmann::json::parse(run("query --plans --json --db " + db()).out);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0]["ep"], 4);
  EXPECT_EQ(q[0]["cp"], 1);
  const std::string table = run("query --plans --db " + db()).out;
  EXPECT_NE(table.find(" ep "), std::string::npos) << table;
  EXPECT_NE(table.find(" cp "), std::string::npos) << table;
  // Bad values: one line naming the value and what is allowed, exit 2, nothing logged.
  const std::string before = run("query --plans --json --db " + db()).out;
  auto three = run("plan " + moe + " --fix ep=3 --db " + db());
  EXPECT_EQ(three.code, 2);
  EXPECT_NE(three.err.find("ep=3 does not divide the 8 experts; allowed: 1, 2, 4, 8"), std::string::npos) << three.err;
  EXPECT_EQ(std::count(three.err.begin(), three.err.end(), '\n'), 1) << three.err;
  auto wide = run("plan " + moe + " --fix tp=8,pp=1,ep=2 --db " + db());
  EXPECT_EQ(wide.code, 2);
  EXPECT_NE(wide.err.find("ep=2 does not divide the data-parallel group (dp x cp = 1); allowed: 1"),
            std::string::npos)
      << wide.err;
  EXPECT_EQ(run("query --plans --json --db " + db()).out, before);
  // The table's breakdown has both columns too (expert all-to-all and resharding); letter E is gone.
  const std::string text = run("plan " + moe + " --fix ep=4,mbs=1,recompute=none --db " + db()).out;
  EXPECT_NE(text.find("ep a2a"), std::string::npos) << text;
  EXPECT_NE(text.find("reshard"), std::string::npos) << text;
  EXPECT_NE(text.find("P inside experts"), std::string::npos) << text;
  EXPECT_EQ(text.find("E experts"), std::string::npos) << text;
}

TEST_F(PlanCli, ADatabaseOfTheLastSchemaIsMigratedKeepingItsPlans) {
  // A user upgrading tuner plans into the database the older one wrote: plan migrates it (as tune does)
  // instead of refusing it read-only, and the plan logged before is kept beside the new one.
  tuner::db::create_schema_at_version(db(), tuner::db::TuningDb::kSchemaVersion - 1);
  tuner::db::exec_sql(db(), R"sql(
    INSERT INTO plans (model, cluster, options_json, plan_json, tp, pp, dp, iteration_time_s, tflops_per_gpu, mfu,
                       peak_memory_bytes, planning_s, created_at)
    VALUES ('old-model', 'dgx-h100:1', '{}', '{"tp":8,"pp":1,"dp":1}', 8, 1, 1, 1.5, 300, 0.3, 1000, 0.1,
            '2026-01-01T00:00:00.000Z');
  )sql");
  auto r = run(std::string("plan ") + kSmall + " --global-batch 64 --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  auto plans = nlohmann::json::parse(run("query --plans --json --db " + db()).out);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[1]["model"], "old-model");
  EXPECT_EQ(plans[1]["tp"], 8);
  EXPECT_EQ(tuner::db::TuningDb::open_existing(db()).schema_version(), tuner::db::TuningDb::kSchemaVersion);
}

}  // namespace
