#include "templates/row_norm.h"

#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "templates/registry.h"
#include "template_checks.h"

namespace tuner::templates {
namespace {

TEST(RowNormTemplate, ContractHoldsForEveryOpAndDtype) {
  for (RowOp op : {RowOp::kSoftmax, RowOp::kLayernorm}) {
    RowNormTemplate t(op);
    for (const char* dt : {"f32", "f16", "bf16"}) {
      check_template_contract(t, parse_workload(t.op(), "rows=37,cols=3000", dt));
      check_template_contract(t, parse_workload(t.op(), "rows=4096,cols=32768", dt));
    }
  }
}

TEST(RowNormTemplate, RegisteredForSoftmaxAndLayernormInEveryDtype) {
  for (const char* op : {"softmax", "layernorm"})
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) EXPECT_EQ(find_template(op, d).op(), op);
  EXPECT_EQ(find_template("softmax", DType::kF16).name(), "softmax_rows");
  EXPECT_EQ(find_template("layernorm", DType::kBF16).name(), "layernorm_rows");
}

TEST(RowNormTemplate, GeometryBuffersAndCompulsoryBytes) {
  RowNormTemplate ln(RowOp::kLayernorm);
  auto w = parse_workload("layernorm", "rows=1000,cols=1001", "f16");
  auto space = ln.space(w, h100_test_limits());
  // ROW_THREADS, ROWS_PER_BLOCK, VEC, ONE_PASS, CACHE, MIN_BLOCKS
  search::Config c{128, 4, 8, 1, 1, 1};
  ASSERT_TRUE(space.is_valid(c)) << *space.violation(c);
  auto k = ln.instantiate(space, c, w);
  EXPECT_EQ(k.launch.grid[0], 250u);   // 1000 rows / 4 per block
  EXPECT_EQ(k.launch.block[0], 512u);  // 128 threads x 4 rows
  ASSERT_EQ(k.buffers.size(), 4u);     // X, gamma, beta, Y
  EXPECT_EQ(k.buffers[1].elements, 1001);
  EXPECT_TRUE(k.buffers[3].output);
  // Compulsory: X read and Y written once (2 bytes each), gamma and beta once: 2*1000*1001*2 + 2*1001*2.
  EXPECT_DOUBLE_EQ(k.bytes, 2.0 * 1000 * 1001 * 2 + 2.0 * 1001 * 2);
  EXPECT_EQ(k.profile.vector_width, 1);  // 1001 % 8 != 0: the element-wise path
  EXPECT_NE(k.source.find("#define ITEMS 1\n"), std::string::npos);  // ceil(1001 / (128*8)) = 1 vector per thread
  EXPECT_EQ(k.reference_launch.grid[0], 1000u);
  EXPECT_DOUBLE_EQ(k.tolerance, 2e-3);
  // A cached row is read once, an uncached two-pass one three times: more L2 traffic.
  search::Config uncached{128, 4, 8, 0, 0, 1};
  EXPECT_GT(ln.profile(space, uncached, w).global_bytes, k.profile.global_bytes);
}

TEST(RowNormTemplate, ConstraintsRejectOversizedVectorsCachesAndBlocks) {
  RowNormTemplate sm(RowOp::kSoftmax);
  auto w = parse_workload("softmax", "rows=8,cols=32768", "f32");
  auto space = sm.space(w, h100_test_limits());
  EXPECT_FALSE(space.is_valid({128, 1, 8, 1, 0})) << "8 floats are 32 bytes";
  EXPECT_FALSE(space.is_valid({32, 1, 4, 1, 1})) << "32768 / (32*4) = 256 vectors per thread do not fit";
  EXPECT_TRUE(space.is_valid({1024, 1, 4, 1, 1}));  // 8 vectors of 4 = 32 floats per thread
  EXPECT_FALSE(space.is_valid({1024, 2, 4, 1, 0})) << "2048 threads per block";
  auto narrow = parse_workload("softmax", "rows=8,cols=100", "f32");
  EXPECT_FALSE(sm.space(narrow, h100_test_limits()).is_valid({1024, 1, 1, 1, 0})) << "most threads idle";
  EXPECT_DOUBLE_EQ(RowNormTemplate::tolerance(DType::kF32), 1e-4);
  EXPECT_LT(RowNormTemplate::tolerance(DType::kF16), RowNormTemplate::tolerance(DType::kBF16));
}

TEST(RowNormTemplate, ElementCacheHoldsTwiceTheRowAndPrefetches) {
  RowNormTemplate sm(RowOp::kSoftmax);
  auto w = parse_workload("softmax", "rows=4096,cols=4096", "f16");
  auto space = sm.space(w, h100_test_limits());
  // A warp per row at 4096 f16 columns: 16 vectors of 8 = 128 values per thread: 64 registers as
  // packed halves (CACHE 2), 128 as floats (CACHE 1, rejected).
  EXPECT_TRUE(space.is_valid({32, 4, 8, 1, 2})) << *space.violation({32, 4, 8, 1, 2});
  EXPECT_FALSE(space.is_valid({32, 4, 8, 1, 1})) << "128 floats per thread";
  EXPECT_FALSE(space.is_valid({256, 1, 1, 1, 2})) << "a lone half takes a whole register";
  const auto k = sm.instantiate(space, {32, 4, 8, 1, 2}, w);
  EXPECT_NE(k.source.find("#define CACHE 2\n"), std::string::npos);
  EXPECT_NE(k.source.find("#define ITEMS 16\n"), std::string::npos);
  EXPECT_TRUE(k.profile.row.cache);
  EXPECT_TRUE(k.profile.row.prefetch);
  EXPECT_EQ(k.profile.row.global_reads(), 1);
  EXPECT_FALSE(sm.profile(space, {32, 4, 8, 1, 0}, w).row.prefetch);
  // f32 keeps CACHE 2 (the prefetch) with the same register budget as CACHE 1.
  auto w32 = parse_workload("softmax", "rows=8,cols=32768", "f32");
  auto s32 = sm.space(w32, h100_test_limits());
  EXPECT_TRUE(s32.is_valid({1024, 1, 4, 1, 2}));
  EXPECT_TRUE(s32.is_valid({512, 1, 4, 1, 2}));  // 16 vectors of 4: 64 floats, the limit
  EXPECT_FALSE(s32.is_valid({256, 1, 4, 1, 2})) << "128 floats per thread";
  EXPECT_TRUE(s32.is_valid({256, 1, 4, 1, 0}));
}

TEST(RowNormTemplate, SpacesStayTunableInAFewHundredTrials) {
  // The issue's four workloads: the full space within ~2 x 200 trials, the reduced one within 64, and the
  // reduced space offers every CACHE mode (the GPU correctness tests walk it).
  for (RowOp op : {RowOp::kSoftmax, RowOp::kLayernorm}) {
    RowNormTemplate t(op);
    for (const char* shape : {"rows=4096,cols=4096", "rows=4096,cols=32768"}) {
      auto w = parse_workload(t.op(), shape, "f16");
      const auto full = t.space(w, h100_test_limits());
      const auto reduced = t.reduced_space(w, h100_test_limits());
      EXPECT_LE(full.size(), 400u) << shape;
      EXPECT_GT(full.size(), 100u) << shape;
      EXPECT_LE(reduced.size(), 64u) << shape;
      std::set<int64_t> caches;
      for (const auto& c : reduced.enumerate()) caches.insert(search::ConfigView(reduced, c)["CACHE"]);
      EXPECT_EQ(caches, (std::set<int64_t>{0, 1, 2})) << shape;
    }
  }
}

}  // namespace
}  // namespace tuner::templates

namespace tuner::templates {
namespace {

TEST(RowNormTemplate, LayernormCanCapRegistersForTwoBlocksPerSm) {
  RowNormTemplate ln(RowOp::kLayernorm);
  auto w = parse_workload("layernorm", "rows=4096,cols=32768", "f16");
  auto space = ln.space(w, h100_test_limits());
  // ROW_THREADS, ROWS_PER_BLOCK, VEC, ONE_PASS, CACHE, MIN_BLOCKS: 512 threads per 32,768-column row
  // keep 32 registers of packed row; capped at 64 registers, two blocks share an SM.
  const search::Config capped{512, 1, 8, 0, 2, 2}, plain{512, 1, 8, 0, 2, 1};
  ASSERT_TRUE(space.is_valid(capped)) << space.violation(capped).value_or("");
  EXPECT_FALSE(space.is_valid({1024, 1, 8, 0, 2, 2})) << "a 16-register row under a 32-register cap";
  EXPECT_FALSE(space.is_valid({256, 2, 8, 0, 2, 2})) << "64 registers of row under a 64-register cap";
  EXPECT_NE(ln.instantiate(space, capped, w).source.find("#define MIN_BLOCKS 2\n"), std::string::npos);
  EXPECT_EQ(ln.instantiate(space, plain, w).source.find("MIN_BLOCKS"), std::string::npos)
      << "the recorded kernels' sources are unchanged";
  // Configs stored before the knob read as 1, and a 1 is left out of the JSON; softmax has no such knob.
  EXPECT_EQ(space.from_json(nlohmann::json::parse(R"({"ROW_THREADS":512,"ROWS_PER_BLOCK":1,"VEC":8,"ONE_PASS":0,"CACHE":2})")),
            plain);
  EXPECT_EQ(space.to_json_string(plain).find("MIN_BLOCKS"), std::string::npos);
  EXPECT_NE(space.to_json_string(capped).find("\"MIN_BLOCKS\":2"), std::string::npos);
  EXPECT_EQ(RowNormTemplate(RowOp::kSoftmax).space(w, h100_test_limits()).knobs().size(), 5u);
}

}  // namespace
}  // namespace tuner::templates
