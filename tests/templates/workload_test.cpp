#include "templates/workload.h"

#include <gtest/gtest.h>

namespace tuner::templates {
namespace {

std::string error_of(const std::string& op, const std::string& shape, const std::string& dtype = "f32") {
  try {
    parse_workload(op, shape, dtype);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Workload, ParsesAndCanonicalisesTheShape) {
  auto w = parse_workload("gemm", "K=7,M=1000,N=3", "f32");
  EXPECT_EQ(w.shape_string(), "M=1000,N=3,K=7");
  EXPECT_EQ(w.dim("K"), 7);
  EXPECT_EQ(w.to_string(), "gemm M=1000,N=3,K=7 f32");
  auto c = parse_workload("conv2d", "N=1,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1", "f16");
  EXPECT_EQ(c.dim("dilation"), 1);
  EXPECT_EQ(c.dtype, DType::kF16);
}

TEST(Workload, ShapeDimensionNamesKeepTheStringsOrder) {
  EXPECT_EQ(shape_dimension_names("N=4,K=8"), (std::vector<std::string>{"N", "K"}));
  EXPECT_EQ(shape_dimension_names("rows=1"), (std::vector<std::string>{"rows"}));
  EXPECT_EQ(shape_dimension_names("M1,=3,K=2"), (std::vector<std::string>{"K"}));
  EXPECT_TRUE(shape_dimension_names("").empty());
}

TEST(Workload, BadInputNamesTheBadValue) {
  EXPECT_NE(error_of("gemmm", "M=1,N=1,K=1").find("'gemmm'"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=1,N=1").find("lacks dimension K"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=0,N=1,K=1").find("M=0"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=-4,N=1,K=1").find("M=-4"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=1x,N=1,K=1").find("'1x'"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=1,N=1,K=1,Q=2").find("'Q'"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=1,M=2,N=1,K=1").find("twice"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M1,N=1,K=1").find("'M1'"), std::string::npos);
  EXPECT_NE(error_of("gemm", "").find("empty"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=1,N=1,K=1", "f64").find("'f64'"), std::string::npos);
  EXPECT_NE(error_of("gemm", "M=99999999999,N=1,K=1").find("too large"), std::string::npos);
}

}  // namespace
}  // namespace tuner::templates
