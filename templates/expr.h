// A small, safe integer expression language for user-kernel specs (templates/user_kernel_spec.h):
// constraints, grid and block formulas, buffer sizes, shared memory, FLOP and byte counts over knobs and
// problem sizes.
//
// Grammar (C precedence, lowest first): `||`, `&&`, `==` `!=`, `<` `<=` `>` `>=`, `+` `-`, `*` `/` `%`,
// unary `-` `!`, then primaries: decimal integers, names ([A-Za-z_][A-Za-z0-9_]*), parentheses, and the
// calls min(a, b), max(a, b), ceil_div(a, b). Values are 64-bit signed integers; comparisons and logic
// give 0 or 1; / and % truncate toward zero. Overflow, division by zero and unknown names are errors,
// never undefined behaviour. Not responsible for knowing which names exist (the spec checks names()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::templates {

/// A parse or evaluation error; what() is one line naming the expression and the problem.
class ExprError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Names and their values for evaluation.
using ExprScope = std::map<std::string, int64_t, std::less<>>;

class Expr {
 public:
  /// Parses `text`; throws ExprError "expression 'TEXT': PROBLEM at column N" on a syntax error.
  static Expr parse(std::string_view text);

  /// The value under `scope`; throws ExprError on an unknown name, division by zero or overflow.
  int64_t eval(const ExprScope& scope) const;
  /// Every name the expression reads, sorted, once each (call names excluded).
  std::vector<std::string> names() const;
  /// The text it was parsed from.
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;  // immutable: copies share it
};

}  // namespace tuner::templates
