// `query --best`'s rows as a user reads them: the type a best config writes its output in (`output_dtype` in JSON,
// "(writes f32)" in the table) as `export --format best` gives it (an f16 GEMM's fastest config may write C in f32,
// gemm_tc_mma's OUT_F32, and a user reading only the query would deploy it for an f16 output), and shapes ordered
// with their sizes as numbers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"

namespace {

using tuner_cli_test::Cli;

TEST_F(Cli, QueryBestNamesTheOutputTypeExportBestGives) {
  // OUT_F32 pinned to 1: every config writes f32.
  const auto tune = run("tune --op gemm --dtype f16 --shape M=256,N=256,K=256 --device sim:h100-sxm --template "
                        "gemm_tc_mma --trials 4 --fix OUT_F32=1 --json --db " + db());
  ASSERT_EQ(tune.code, 0) << tune.err;
  EXPECT_EQ(nlohmann::json::parse(tune.out).at("best").at("output_dtype"), "f32") << "tune --json says it too";
  const auto q = run("query --best --json --db " + db());
  ASSERT_EQ(q.code, 0) << q.err;
  const auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u) << q.out;
  EXPECT_EQ(rows[0].at("output_dtype"), "f32") << q.out;
  const auto e = run("export --format best --db " + db());
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out).at("entries").at(0).at("output_dtype"), "f32");
  const auto table = run("query --best --db " + db());
  EXPECT_NE(table.out.find("f16 (writes f32)"), std::string::npos) << table.out;
  const auto history = run("query --history --json --db " + db());
  EXPECT_FALSE(nlohmann::json::parse(history.out).at(0).contains("output_dtype")) << "history rows are trials";
}

// Where the best config writes f32 for an f16 workload, `query --best` also shows the best config writing f16, as
// `export --format best` adds it for deployment (the query hid it): a row "(best writing f16)" in the table, and
// inside its best's JSON object as best_writing_own_dtype (one object per workload, device and template still).
TEST_F(Cli, QueryBestShowsTheBestWritingTheWorkloadsOwnType) {
  const std::string tune = "tune --op gemm --dtype f16 --shape M=256,N=256,K=256 --device sim:h100-sxm "
                           "--template gemm_tc_mma --db " + db();
  ASSERT_EQ(run(tune + " --trials 4 --fix OUT_F32=1").code, 0);
  ASSERT_EQ(run(tune + " --trials 2 --fix OUT_F32=0,STAGES=2,SPLIT_K=1").code, 0);
  const auto e = run("export --format best --db " + db());
  ASSERT_EQ(e.code, 0) << e.err;
  const auto entries = nlohmann::json::parse(e.out).at("entries");
  ASSERT_EQ(entries.size(), 2u) << "the best writes f32 on the sim (the case needs it)\n" << e.out;
  ASSERT_EQ(entries[0].at("output_dtype"), "f32");
  const auto q = run("query --best --json --db " + db());
  ASSERT_EQ(q.code, 0) << q.err;
  const auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u) << q.out;
  EXPECT_EQ(rows[0].at("config"), entries[0].at("config"));
  ASSERT_TRUE(rows[0].contains("best_writing_own_dtype")) << q.out;
  const auto& own = rows[0].at("best_writing_own_dtype");
  EXPECT_EQ(own.at("output_dtype"), "f16");
  EXPECT_EQ(own.at("config"), entries[1].at("config"));
  EXPECT_EQ(own.at("config").at("OUT_F32"), 0);
  EXPECT_DOUBLE_EQ(own.at("mean_time_ms").get<double>(), entries[1].at("mean_time_ms").get<double>());
  // One workload on one device: the same pair.
  const auto single = run("query --best --json --op gemm --shape M=256,N=256,K=256 --device sim:h100-sxm --db " + db());
  ASSERT_EQ(single.code, 0) << single.err;
  EXPECT_EQ(nlohmann::json::parse(single.out).at("best_writing_own_dtype").at("config"), entries[1].at("config"));
  const auto table = run("query --best --db " + db());
  const size_t best = table.out.find("f16 (writes f32)"), alternative = table.out.find("f16 (best writing f16)");
  ASSERT_NE(best, std::string::npos) << table.out;
  ASSERT_NE(alternative, std::string::npos) << table.out;
  EXPECT_LT(best, alternative) << table.out;
}

// Sizes compare as numbers in `query --best` and `export --format best` (the database orders shapes as text:
// cols=2048 came before cols=512).
TEST_F(Cli, BestRowsOrderShapesBySizeNotText) {
  for (const char* shape : {"rows=64,cols=2048", "rows=64,cols=512", "rows=64,cols=10000"})
    ASSERT_EQ(run(std::string("tune --op softmax --shape ") + shape + " --device sim:h100-sxm --trials 2 --db " + db())
                  .code,
              0);
  const auto q = run("query --best --json --db " + db());
  ASSERT_EQ(q.code, 0) << q.err;
  std::vector<std::string> shapes;
  for (const auto& row : nlohmann::json::parse(q.out)) shapes.push_back(row.at("shape"));
  EXPECT_EQ(shapes, (std::vector<std::string>{"rows=64,cols=512", "rows=64,cols=2048", "rows=64,cols=10000"}));
  const auto limited = run("query --best --json --limit 1 --db " + db());
  EXPECT_EQ(nlohmann::json::parse(limited.out).at(0).at("shape"), "rows=64,cols=512") << "the limit after the order";
  const auto e = run("export --format best --db " + db());
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out).at("entries").at(2).at("shape"), "rows=64,cols=10000");
}

// A session id that does not exist matched nothing without a word, like a filter that excludes every trial.
TEST_F(Cli, ASessionThatDoesNotExistIsNamed) {
  ASSERT_EQ(run("tune --op softmax --shape rows=64,cols=64 --device sim:h100-sxm --trials 2 --db " + db()).code, 0);
  const auto none = run("query --session 99 --db " + db());
  EXPECT_EQ(none.code, 0);
  EXPECT_NE(none.err.find("there is no session 99"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("its sessions are 1 .. 1"), std::string::npos) << none.err;
  const auto one = run("query --session 1 --db " + db());
  EXPECT_EQ(one.err.find("there is no session"), std::string::npos) << one.err;
}

}  // namespace
