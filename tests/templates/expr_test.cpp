// Tests for templates/expr.h: precedence, integer semantics, names, calls, and one-line errors.
#include "templates/expr.h"

#include <gtest/gtest.h>

namespace tuner::templates {
namespace {

int64_t eval(const std::string& text, const ExprScope& s = {}) { return Expr::parse(text).eval(s); }

std::string error_of(const std::string& text, const ExprScope& s = {}) {
  try {
    eval(text, s);
  } catch (const ExprError& e) {
    return e.what();
  }
  return "";
}

TEST(Expr, PrecedenceAndIntegerArithmetic) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);           // 1 + 6
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("7 / 2"), 3);               // truncates
  EXPECT_EQ(eval("-7 / 2"), -3);             // toward zero
  EXPECT_EQ(eval("-7 % 3"), -1);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);          // left to right: (10 - 4) - 3
  EXPECT_EQ(eval("2 * 3 % 4"), 2);           // (2 * 3) % 4
  EXPECT_EQ(eval("1 + 2 < 4 && 5 >= 5"), 1);
  EXPECT_EQ(eval("1 || 0 && 0"), 1);         // && binds tighter: 1 || (0 && 0)
  EXPECT_EQ(eval("!0 + !5"), 1);
  EXPECT_EQ(eval("3 != 3 == 0"), 1);         // (3 != 3) == 0
  EXPECT_EQ(eval("--4"), 4);
}

TEST(Expr, NamesAndCalls) {
  const ExprScope s{{"N", 1000}, {"BLOCK", 128}, {"ITEMS", 4}};
  EXPECT_EQ(eval("ceil_div(N, BLOCK * ITEMS)", s), 2);  // 1000 / 512 rounded up
  EXPECT_EQ(eval("ceil_div(1024, 512)"), 2);
  EXPECT_EQ(eval("min(N, BLOCK) + max(ITEMS, 9)", s), 137);
  EXPECT_EQ(eval("N % (BLOCK * ITEMS) == 0", s), 0);
  EXPECT_EQ(Expr::parse("BLOCK * ITEMS <= N && BLOCK > 32").names(), (std::vector<std::string>{"BLOCK", "ITEMS", "N"}));
  EXPECT_TRUE(Expr::parse("ceil_div(2, 3)").names().empty()) << "call names are not names";
}

TEST(Expr, ShortCircuitSkipsTheDivision) {
  EXPECT_EQ(eval("0 && 1 / 0"), 0);
  EXPECT_EQ(eval("1 || 1 % 0"), 1);
}

TEST(Expr, SyntaxErrorsNameTheColumn) {
  EXPECT_NE(error_of("BLOCK * * 2").find("expression 'BLOCK * * 2': unexpected '*' at column 9"), std::string::npos)
      << error_of("BLOCK * * 2");
  EXPECT_NE(error_of("(1 + 2").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("1 +").find("expected a value, found the end"), std::string::npos);
  EXPECT_NE(error_of("pow(2, 3)").find("unknown function 'pow'"), std::string::npos);
  EXPECT_NE(error_of("min(2)").find("takes two arguments"), std::string::npos);
  EXPECT_NE(error_of("1.5").find("not an integer"), std::string::npos);
  EXPECT_NE(error_of("2 = 2").find("unexpected '='"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999").find("integer too large"), std::string::npos);
  EXPECT_NE(error_of("1 ^ 2").find("allowed: integers, names"), std::string::npos);
}

TEST(Expr, EvaluationErrors) {
  EXPECT_NE(error_of("N + 1").find("unknown name 'N'"), std::string::npos);
  EXPECT_NE(error_of("1 / (2 - 2)").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("ceil_div(1, 0)").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775807 + 1").find("overflow"), std::string::npos);
  EXPECT_NE(error_of("4294967296 * 4294967296").find("overflow"), std::string::npos);
}

}  // namespace
}  // namespace tuner::templates
