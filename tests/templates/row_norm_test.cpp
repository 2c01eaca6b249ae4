#include "templates/row_norm.h"

#include <gtest/gtest.h>

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
  // ROW_THREADS, ROWS_PER_BLOCK, VEC, ONE_PASS, CACHE
  search::Config c{128, 4, 8, 1, 1};
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
  search::Config uncached{128, 4, 8, 0, 0};
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

}  // namespace
}  // namespace tuner::templates
