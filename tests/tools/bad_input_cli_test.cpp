// Bad input found by using the CLI as a user would (stop 31's exploratory test), each now one line and exit 2
// before anything is stored: an option whose value is missing and followed by another option, a database
// merged into itself, a --replay-out that cannot be written, --json with an export to stdout, twice-given
// plan keys, an imported config outside its template's space. Also: a replay device's times are its
// recorded measurements, not estimates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;

const std::string kSoftmax = "tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 2 ";

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(Cli, AnOptionFollowedByAnotherOptionIsMissingItsValue) {
  // Without the check, Boost took "--json" as the database's file name and tuned into it.
  auto r = run(kSoftmax + "--db --json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("option '--db' needs a value, got the option '--json'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "--json"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::current_path() / "--json"));
  auto p = run("plan --model llama3-8b --cluster dgx-h100:1 --export megatron --out --json --db " + db());
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("option '--out' needs a value"), std::string::npos) << p.err;
  // A malformed number is named with what the option takes (Boost's own message names only the option).
  auto batch = run(kSoftmax + "--batch 4x --db " + db());
  EXPECT_EQ(batch.code, 2);
  EXPECT_NE(batch.err.find("'--batch' is invalid; --batch: "), std::string::npos) << batch.err;
  EXPECT_NE(batch.err.find("1 .. 65536"), std::string::npos) << batch.err;
  auto threads = run(kSoftmax + "--compile-threads -1 --db " + db());
  EXPECT_EQ(threads.code, 2);
  EXPECT_NE(threads.err.find("--compile-threads -1 is out of range"), std::string::npos) << threads.err;
  // A word of the form --name that is no option of this command is no value either (it made a database named
  // "--verbose"), and an option's own help line is the one added (--db-timeout's said --timeout's).
  auto other = run(kSoftmax + "--db --verbose");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("option '--db' needs a value, got '--verbose'"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("--db=--verbose"), std::string::npos) << other.err;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::current_path() / "--verbose"));
  auto dbt = run(kSoftmax + "--db-timeout abc --db " + db());
  EXPECT_EQ(dbt.code, 2);
  EXPECT_NE(dbt.err.find("--db-timeout: "), std::string::npos) << dbt.err;
  EXPECT_EQ(dbt.err.find("beyond its timing budget"), std::string::npos) << "--timeout's help: " << dbt.err;
  EXPECT_NE(dbt.err.find("0 .. 86400"), std::string::npos) << "the range, as an out-of-range value gets it: " << dbt.err;
  auto es = run(kSoftmax + "--early-stop abc --db " + db());
  EXPECT_EQ(es.code, 2);
  EXPECT_NE(es.err.find("0 (off) or more"), std::string::npos) << es.err;
  // Empty values are named: --device '' took the default device, --shape '' said only that it was required.
  auto nodev = run("tune --op softmax --shape rows=64,cols=64 --trials 2 --device '' --db " + db());
  EXPECT_EQ(nodev.code, 2);
  EXPECT_NE(nodev.err.find("--device '' is empty"), std::string::npos) << nodev.err;
  auto noshape = run("tune --op gemm --shape '' --device sim:h100-sxm --db " + db());
  EXPECT_EQ(noshape.code, 2);
  EXPECT_NE(noshape.err.find("--shape '' is empty"), std::string::npos) << noshape.err;
  // --op '' is named too (it said "--op and --shape are required"); a size past int64 is too large, not "not an
  // integer"; a replay folder is a folder, not "not valid JSON".
  auto noop = run("tune --op '' --shape M=8,N=8,K=8 --device sim:h100-sxm --db " + db());
  EXPECT_EQ(noop.code, 2);
  EXPECT_NE(noop.err.find("--op '' is empty; allowed: gemm"), std::string::npos) << noop.err;
  auto huge = run("tune --op gemm --shape M=99999999999999999999,N=8,K=8 --device sim:h100-sxm --db " + db());
  EXPECT_EQ(huge.code, 2);
  EXPECT_NE(huge.err.find("M=99999999999999999999 is too large (at most 2147483647)"), std::string::npos) << huge.err;
  auto folder = run("tune --op softmax --shape rows=64,cols=64 --device replay:" + dir_.string() + " --db " + db());
  EXPECT_EQ(folder.code, 2);
  EXPECT_NE(folder.err.find("is a directory; allowed: a recording file"), std::string::npos) << folder.err;
  // A value given with '=' is a value, whatever it looks like.
  auto ok = run(kSoftmax + "--json --db=" + db());
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST_F(Cli, AStrayArgumentIsNamed) {
  // Boost's own message ("too many positional options") named neither the word nor what the command takes.
  auto v = run("version extra");
  EXPECT_EQ(v.code, 2);
  EXPECT_NE(v.err.find("version: unexpected argument 'extra' (it takes no arguments"), std::string::npos) << v.err;
  auto i = run("import a.jsonl b.jsonl --db " + db());
  EXPECT_EQ(i.code, 2);
  EXPECT_NE(i.err.find("import: unexpected argument 'b.jsonl' (it takes 1 "), std::string::npos) << i.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing opened";
  // The file as a bare argument and as --file: Boost said only "cannot be specified more than once".
  auto twice = run("import a.jsonl --file b.jsonl --db " + db());
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("import: --file is given twice (a bare argument is --file without its name)"),
            std::string::npos)
      << twice.err;
}

TEST_F(Cli, ADatabaseMergedIntoItselfIsBadInputAtOnce) {
  ASSERT_EQ(run(kSoftmax + "--db " + db()).code, 0);
  const std::string before = read_all(db());
  // The same file by another spelling of its path.
  const std::string other = (dir_ / "." / "t.db").string();
  auto r = run("db merge " + other + " --db " + db());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is the database merged into"), std::string::npos) << r.err;
  EXPECT_EQ(read_all(db()), before);
}

TEST_F(Cli, AReplayOutThatCannotBeWrittenIsFoundBeforeAnythingIsMeasured) {
  auto missing = run(kSoftmax + "--replay-out " + (dir_ / "no" / "r.json").string() + " --db " + db());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  auto folder = run(kSoftmax + "--replay-out " + dir_.string() + " --db " + db());
  EXPECT_EQ(folder.code, 2);
  EXPECT_NE(folder.err.find("is a folder"), std::string::npos) << folder.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing is stored for bad input";
  EXPECT_FALSE(std::filesystem::exists(dir_.string() + ".tmp"));
  // A writable path works and leaves only the replay file.
  const auto out = dir_ / "r.json";
  ASSERT_EQ(run(kSoftmax + "--replay-out " + out.string() + " --db " + db()).code, 0);
  EXPECT_TRUE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".tmp"));
}

// A recording with no records used to run: a database and a session were made, and the session reported
// "0 valid configs". It is bad input, found before anything is stored.
TEST_F(Cli, AnEmptyRecordingIsBadInput) {
  const auto rec = dir_ / "r.json";
  ASSERT_EQ(run(kSoftmax + "--replay-out " + rec.string() + " --db " + (dir_ / "rec.db").string()).code, 0);
  auto j = nlohmann::json::parse(read_all(rec.string()));
  ASSERT_FALSE(j["records"].empty());
  j["records"] = nlohmann::json::array();
  const auto empty = dir_ / "empty.json";
  std::ofstream(empty) << j.dump();
  auto r = run("tune --op softmax --shape " + j["shape"].get<std::string>() + " --dtype " + j["dtype"].get<std::string>() +
               " --device replay:" + empty.string() + " --trials 4 --db " + db());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("holds no records"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing is stored for bad input";
}

// Importing the wrong export names the format (it said "not a JSON line (at byte 2)"), and --plans refuses the
// record filters it would ignore; neither touches a database.
TEST_F(Cli, ImportNamesAWrongExportAndPlansRefuseRecordFilters) {
  ASSERT_EQ(run(kSoftmax + "--db " + db()).code, 0);
  const std::string best = (dir_ / "best.json").string();
  ASSERT_EQ(run("export --format best --out " + best + " --db " + db()).code, 0);
  const std::string fresh = (dir_ / "fresh.db").string();
  auto i = run("import " + best + " --db " + fresh);
  EXPECT_EQ(i.code, 2);
  EXPECT_NE(i.err.find("export --format best"), std::string::npos) << i.err;
  EXPECT_NE(i.err.find("--format jsonl"), std::string::npos) << i.err;
  EXPECT_FALSE(std::filesystem::exists(fresh));
  auto p = run("query --plans --op gemm --db " + db());
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("--op filters tuning records, not plans"), std::string::npos) << p.err;
  EXPECT_EQ(run("query --plans --limit 3 --db " + db()).code, 0);
}

TEST_F(Cli, PlanRefusesJsonWithAnExportOnStdoutAndKeysGivenTwice) {
  const std::string plan = "plan --model llama3-8b --cluster dgx-h100:1 --db " + db();
  auto j = run(plan + " --export deepspeed --json");
  EXPECT_EQ(j.code, 2);
  EXPECT_NE(j.err.find("needs --out"), std::string::npos) << j.err;
  auto ok = run(plan + " --export deepspeed --json --out " + (dir_ / "ds.json").string());
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(nlohmann::json::parse(ok.out).contains("tp"));  // the plan document, the export in its file
  EXPECT_TRUE(nlohmann::json::parse(read_all(dir_ / "ds.json")).contains("train_batch_size"));
  auto twice = run(plan + " --fix tp=2,tp=4");
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("'tp' is given twice"), std::string::npos) << twice.err;
  auto model = run("plan --model gpt:layers=4,hidden=1024,heads=16,heads=8 --cluster dgx-h100:1 --db " + db());
  EXPECT_EQ(model.code, 2);
  EXPECT_NE(model.err.find("heads is given twice"), std::string::npos) << model.err;
  // Pinned degrees the 8 GPUs cannot take are named (they were "no configuration was tried").
  auto pp3 = run(plan + " --fix pp=3");
  EXPECT_EQ(pp3.code, 2);
  EXPECT_NE(pp3.err.find("--fix pp=3 does not divide the 8 GPUs; allowed: 1, 2, 4, 8"), std::string::npos) << pp3.err;
  auto product = run(plan + " --fix tp=2,dp=8");
  EXPECT_EQ(product.code, 2);
  EXPECT_NE(product.err.find("tp x dp = 16 GPUs, which does not divide the 8 GPUs"), std::string::npos) << product.err;
  // Interleaving a pinned pp of 1 is named so (it said "1 x 2 does not divide 80", which it does).
  auto v_pp1 = run(plan + " --fix v=2,pp=1");
  EXPECT_EQ(v_pp1.code, 2);
  EXPECT_NE(v_pp1.err.find("--fix v=2 interleaves the stages of a pipeline, and pp=1 is none"), std::string::npos)
      << v_pp1.err;
  // --out naming the model or cluster file it plans from is refused, the file unchanged.
  const auto spec = dir_ / "spec-cluster.json";
  const std::string spec_text = R"({"name": "one", "nodes": 1, "gpus_per_node": 1, "gpu": "h100-sxm"})";
  std::ofstream(spec) << spec_text;
  auto over = run("plan --model llama3-8b --cluster " + spec.string() + " --export megatron --out " + spec.string() +
                  " --db " + db());
  EXPECT_EQ(over.code, 2);
  EXPECT_NE(over.err.find("is the --cluster file"), std::string::npos) << over.err;
  EXPECT_EQ(read_all(spec), spec_text);
  // A GPU smaller than the memory kept free per GPU is refused with the reserve as the bound (was "-1.0 GB usable",
  // then "allowed: > 0" for 1 GB, which is no better).
  const auto cluster = dir_ / "c.json";
  std::ofstream(cluster) << R"({"name": "tiny", "nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm", "memory_gb": 1,
    "intra_node": {"bandwidth_gbps": 450, "latency_us": 3}, "inter_node": {"bandwidth_gbps": 50, "latency_us": 8}})";
  auto small = run("plan --model llama3-8b --cluster " + cluster.string() + " --db " + db());
  EXPECT_EQ(small.code, 2);
  EXPECT_NE(small.err.find("memory_gb: 1 is too small; allowed: a number > 2 (the GB kept free per GPU"), std::string::npos)
      << small.err;
  // pp is bounded by all layers, embedding and head included (a stage may hold one alone), not by the blocks:
  // 2 blocks plan over pp 4 with the pin as without it.
  auto four = run("plan --model gpt:layers=2,hidden=512,heads=8 --cluster dgx-a100:1 --global-batch 64 "
                  "--fix tp=1,pp=4 --json --db " + db());
  ASSERT_EQ(four.code, 0) << four.err;
  EXPECT_EQ(nlohmann::json::parse(four.out)["pp"], 4);
  auto five = run("plan --model gpt:layers=2,hidden=512,heads=8 --cluster dgx-a100:1 --global-batch 64 --fix pp=8 "
                  "--db " + db());
  EXPECT_EQ(five.code, 2);
  EXPECT_NE(five.err.find("--fix pp=8 exceeds the 4 layers to split"), std::string::npos) << five.err;
  auto empty = run(plan + " --fix ''");
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("names no choice"), std::string::npos) << empty.err;
}

TEST_F(Cli, AnImportedConfigMustBeOneOfItsTemplatesSpace) {
  ASSERT_EQ(run(kSoftmax + "--db " + db()).code, 0);
  auto e = run("export --format jsonl --db " + db());
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string line = e.out.substr(0, e.out.find('\n'));
  // A knob set to a value it does not take, a knob the template lacks, and values its constraints refuse
  // (1024 threads per row x 8 rows per block, past the 1024 threads of a block).
  for (const std::string& bad : {std::string("\"VEC\":3"), std::string("\"FOO\":1"),
                                 std::string("\"ROW_THREADS\":1024,\"ROWS_PER_BLOCK\":8")}) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
    const auto changes = nlohmann::json::parse("{" + bad + "}");
    for (const auto& [k, v] : changes.items()) j["config"][k] = v;
    const auto file = dir_ / "bad.jsonl";
    std::ofstream(file) << j.dump() << "\n";
    auto r = run("import " + file.string() + " --db " + (dir_ / "i.db").string());
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("bad.jsonl:1: field 'config'"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "i.db"));
  }
  // A GPU this build has no limits for (not a sim device, not in the spec table) had the driver's, which may
  // exceed the defaults: there only the knobs and their values are checked, so its records import.
  {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
    j["config"]["ROW_THREADS"] = 1024;
    j["config"]["ROWS_PER_BLOCK"] = 2;
    j["device"] = j["device_identity"]["name"] = "NVIDIA L4";
    j["device_identity"]["simulated"] = false;
    j["estimate"] = false;  // a GPU's times are measurements
    j["device_identity"]["cc_major"] = 8;
    j["device_identity"]["cc_minor"] = 9;
    j["device_identity"]["sm_count"] = 58;
    const auto file = dir_ / "l4.jsonl";
    std::ofstream(file) << j.dump() << "\n";
    auto r = run("import " + file.string() + " --db " + (dir_ / "l4.db").string());
    EXPECT_EQ(r.code, 0) << r.err;
  }
  // The export itself imports (every config is one of the space's).
  const auto good = dir_ / "good.jsonl";
  std::ofstream(good) << e.out;
  EXPECT_EQ(run("import " + good.string() + " --db " + (dir_ / "i.db").string()).code, 0);
}

TEST_F(Cli, AReplayDevicesTimesAreMeasurementsNotEstimates) {
  const std::string file = std::string(TUNER_SOURCE_DIR) + "/data/replay/softmax_f16_rows4096_cols4096_h100_2026-11-25.json";
  const std::string tune = "tune --op softmax --shape rows=4096,cols=4096 --dtype f16 --device replay:" + file +
                           " --db " + db();
  auto j = run(tune + " --trials 2 --json");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["estimate"], false);
  auto t = run(tune + " --trials 3");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.out.find("analytic estimates"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("recorded measurements, replayed"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(" GB/s  {"), std::string::npos) << "a memory-bound op's best shows its bandwidth\n" << t.out;
  // A recording a sim device made replays estimates, and says so (it claimed a GPU's measurements).
  const std::string sim_file = (dir_ / "sim.replay.json").string();
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=64 --dtype f16 --device sim:h100-sxm --trials all --quiet "
                "--replay-out " + sim_file + " --db " + (dir_ / "rec.db").string()).code,
            0);
  const std::string sim_tune = "tune --op softmax --shape rows=64,cols=64 --dtype f16 --device replay:" + sim_file +
                               " --db " + (dir_ / "sim.db").string();
  auto sj = run(sim_tune + " --trials 2 --json");
  ASSERT_EQ(sj.code, 0) << sj.err;
  EXPECT_EQ(nlohmann::json::parse(sj.out)["estimate"], true);
  auto st = run(sim_tune + " --trials 3");
  EXPECT_NE(st.out.find("a sim device's recorded estimates, replayed"), std::string::npos) << st.out;
}

// `--device "$DEV"` with DEV unset: an empty filter matched every record, exit 0, and `export --out ''` wrote to stdout.
TEST_F(Cli, EmptyFiltersOfTheReadCommandsAreRefused) {
  ASSERT_EQ(run(kSoftmax + "--db " + db()).code, 0);
  const std::string before = read_all(db());
  for (const std::string cmd : {"query --device ''", "query --op ''", "query --op softmax --shape ''",
                                "export --format jsonl --out ''", "export --format csv --template ''",
                                "report --out r.html --dtype ''"}) {
    auto r = run(cmd + " --db " + db());
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("'' is empty; allowed: a value, or leave --"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << cmd;
  }
  EXPECT_EQ(read_all(db()), before);
}

TEST_F(Cli, EmptyTemplatesAndEmptyPinItemsAreRefused) {
  // An empty --template was taken as auto; a trailing comma in plan --fix was ignored (tune --fix refused it).
  auto empty = run(kSoftmax + "--template '' --db " + db());
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("--template '' names no template; allowed: auto"), std::string::npos) << empty.err;
  auto unknown = run(kSoftmax + "--template nosuch --db " + db());
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("allowed: auto (every one the device runs), softmax_rows"), std::string::npos)
      << unknown.err;
  // On an A100 the list is the A100's: gemm_tc_wgmma (sm_90 only) was offered.
  const std::string gemm16 = "tune --op gemm --shape M=64,N=64,K=64 --dtype f16 --trials 2 --template nosuch --db " + db();
  auto a100 = run(gemm16 + " --device sim:a100-sxm4-80gb");
  EXPECT_EQ(a100.code, 2);
  EXPECT_NE(a100.err.find("does not tune gemm f16 on this device; allowed: auto (every one the device runs), "
                          "gemm_tc_mma\n"),
            std::string::npos)
      << a100.err;
  auto h100 = run(gemm16 + " --device sim:h100-sxm");
  EXPECT_NE(h100.err.find("gemm_tc_mma, gemm_tc_wgmma"), std::string::npos) << h100.err;
  auto comma = run("plan --model gpt3-1.3b --cluster dgx-h100:1 --fix tp=8, --db " + db());
  EXPECT_EQ(comma.code, 2);
  EXPECT_NE(comma.err.find("--fix 'tp=8,' has an empty item"), std::string::npos) << comma.err;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(Cli, AShapeWhoseOperandsDoNotFitTheDevicesMemoryIsBadInput) {
  // The sim estimated a 400 GB softmax and a 100 GB batched GEMM on an 80 GB H100 (exit 0). An 80 GB softmax was
  // let through, though the worker also holds a reference copy of the result (40 GB) and the L2 flush buffer.
  for (const std::string shape : {"--op softmax --shape rows=100000,cols=500000",
                                  "--op batched_gemm --shape B=1000,M=4096,N=4096,K=4096 --dtype f16",
                                  "--op softmax --shape rows=100000,cols=100000"}) {
    auto r = run("tune " + shape + " --device sim:h100-sxm --trials 2 --db " + db());
    EXPECT_EQ(r.code, 2) << shape;
    EXPECT_NE(r.err.find("GB on the GPU (its operands and result "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a reference copy of the result and the L2 flush buffer); sim:h100-sxm has 80.0 GB"),
              std::string::npos)
        << r.err;
  }
  const auto last = run("tune --op softmax --shape rows=100000,cols=100000 --device sim:h100-sxm --trials 2 --db " + db());
  EXPECT_NE(last.err.find("needs 120.1 GB on the GPU (its operands and result 80.0 GB"), std::string::npos) << last.err;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(Cli, AWorkerThatCannotRunAndARowOpPastItsLimitAreSaidPlainly) {
  // "does not accept requests" for a TUNER_WORKER_EXE that does not exist; a row op's limit as 409600000000.000000.
  setenv("TUNER_WORKER_EXE", (dir_ / "nonexistent").string().c_str(), 1);
  auto w = run(kSoftmax + "--db " + db());
  unsetenv("TUNER_WORKER_EXE");
  EXPECT_EQ(w.code, 1);
  EXPECT_NE(w.err.find("nonexistent' cannot be run (No such file or directory); TUNER_WORKER_EXE names it"),
            std::string::npos)
      << w.err;
  auto rows = run("tune --op softmax --shape rows=4096,cols=100000000 --device sim:h100-sxm --db " + db());
  EXPECT_EQ(rows.code, 2);
  EXPECT_NE(rows.err.find("rows*cols=4096*100000000 is 409600000000 elements; softmax_rows allows at most "
                          "100000000000"),
            std::string::npos)
      << rows.err;
}

TEST_F(Cli, SimDelaysAreAPhaseOfTheirOwn) {
  // The waits were in no phase: a session of 1.9 s wall showed 0.38 s of phases.
  auto r = run("tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 4 --remeasure 0 "
               "--sim-delay-ms 100 --json --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto phases = nlohmann::json::parse(r.out)["phases"];
  EXPECT_NEAR(phases["sim_delay_s"].get<double>(), 0.4, 1e-9) << phases.dump();
}

TEST_F(Cli, PriorAndTransferAreForXgbOnly) {
  // Given to ga or random they were silently ignored.
  for (const std::string flags : {"--strategy ga --transfer none", "--strategy random --prior compiled",
                                  "--strategy bo --prior none"}) {
    auto r = run(kSoftmax + flags + " --db " + db());
    EXPECT_EQ(r.code, 2) << flags;
    EXPECT_NE(r.err.find("is for --strategy xgb"), std::string::npos) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db()));
  EXPECT_EQ(run(kSoftmax + "--strategy xgb --transfer none --prior analytic --db " + db()).code, 0);
  // `auto`, the default, spelt out: a script passing it while varying --strategy is not refused.
  EXPECT_EQ(run(kSoftmax + "--strategy ga --transfer auto --prior auto --db " + db()).code, 0);
}

TEST_F(Cli, MinImprovementNeedsAStrategyThatEstimatesIt) {
  // ga, random and grid make no estimate: the flag would be silently ignored.
  for (const char* strategy : {"random", "ga", "grid"}) {
    auto r = run(kSoftmax + "--min-improvement 1 --strategy " + strategy + " --db " + db());
    EXPECT_EQ(r.code, 2) << strategy;
    EXPECT_NE(r.err.find("--strategy " + std::string(strategy) + " makes no estimate; allowed: xgb, bo"),
              std::string::npos)
        << r.err;
  }
  auto all = run("tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials all --min-improvement 1 --db " + db());
  EXPECT_EQ(all.code, 2);
  EXPECT_NE(all.err.find("cannot stop --trials all"), std::string::npos) << all.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing stored";
  // xgb stops on it: with 1000% nothing is worth a batch once it has an estimate.
  auto xgb = run("tune --op softmax --shape rows=4096,cols=4096 --device sim:h100-sxm --trials 200 "
                 "--min-improvement 1000 --json --db " + db());
  ASSERT_EQ(xgb.code, 0) << xgb.err;
  const auto j = nlohmann::json::parse(xgb.out);
  EXPECT_TRUE(j.at("early_stopped").get<bool>()) << xgb.out;
  EXPECT_NE(j.at("stop_reason").get<std::string>().find("expected improvement of the next batch"), std::string::npos)
      << xgb.out;
  EXPECT_EQ(j.at("measured").get<int>(), 40) << "a random 8, then four batches of 8 whose predictions were measured";
  EXPECT_GE(j.at("expected_improvement").get<double>(), 0) << "the estimate that stopped it";
  EXPECT_LT(j.at("expected_improvement").get<double>(), 10.0);
}

}  // namespace
