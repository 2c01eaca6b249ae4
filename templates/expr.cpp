#include "templates/expr.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace tuner::templates {

/// One node of the tree: a number, a name, a unary or binary operator, or a call.
struct Expr::Node {
  enum class Kind { kNumber, kName, kUnary, kBinary, kCall } kind = Kind::kNumber;
  int64_t value = 0;
  std::string name;  ///< kName: the name; kUnary/kBinary: the operator; kCall: the function.
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

/// Recursive-descent parser over one expression text.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  NodePtr parse_all() {
    NodePtr n = parse_binary(0);
    skip_space();
    if (at_ < text_.size()) fail("unexpected '" + std::string(1, text_[at_]) + "'");
    return n;
  }

 private:
  // Binary operators by precedence level, lowest first.
  static const std::vector<std::vector<std::string>>& levels() {
    static const std::vector<std::vector<std::string>> l = {
        {"||"}, {"&&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/", "%"}};
    return l;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ExprError("expression '" + std::string(text_) + "': " + what + " at column " + std::to_string(at_ + 1) +
                    "; allowed: integers, names, + - * / %, comparisons, && || !, parentheses, min/max/ceil_div(a, b)");
  }

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }

  bool take(std::string_view op) {
    skip_space();
    if (text_.substr(at_, op.size()) != op) return false;
    // "<" must not take the start of "<=", nor "!" of "!=" (the longer ones are listed first).
    at_ += op.size();
    return true;
  }

  NodePtr parse_binary(size_t level) {
    if (level == levels().size()) return parse_unary();
    NodePtr left = parse_binary(level + 1);
    for (;;) {
      std::string op;
      for (const auto& candidate : levels()[level])
        if (take(candidate)) {
          op = candidate;
          break;
        }
      if (op.empty()) return left;
      auto n = std::make_shared<Expr::Node>();
      n->kind = Kind::kBinary;
      n->name = op;
      n->args = {left, parse_binary(level + 1)};
      left = n;
    }
  }

  NodePtr parse_unary() {
    skip_space();
    if (at_ < text_.size() && (text_[at_] == '-' || (text_[at_] == '!' && text_.substr(at_, 2) != "!="))) {
      auto n = std::make_shared<Expr::Node>();
      n->kind = Kind::kUnary;
      n->name = std::string(1, text_[at_++]);
      n->args = {parse_unary()};
      return n;
    }
    return parse_primary();
  }

  NodePtr parse_primary() {
    skip_space();
    if (at_ >= text_.size()) fail("expected a value, found the end");
    const char c = text_[at_];
    if (c == '(') {
      ++at_;
      NodePtr inner = parse_binary(0);
      if (!take(")")) fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name();
    fail("unexpected '" + std::string(1, c) + "'");
  }

  NodePtr parse_number() {
    auto n = std::make_shared<Expr::Node>();
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      const int digit = text_[at_] - '0';
      if (__builtin_mul_overflow(n->value, 10, &n->value) || __builtin_add_overflow(n->value, digit, &n->value))
        fail("integer too large");
      ++at_;
    }
    if (at_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.'))
      fail("not an integer");
    return n;
  }

  NodePtr parse_name() {
    const size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    auto n = std::make_shared<Expr::Node>();
    n->kind = Kind::kName;
    n->name = std::string(text_.substr(start, at_ - start));
    skip_space();
    if (at_ >= text_.size() || text_[at_] != '(') return n;
    if (n->name != "min" && n->name != "max" && n->name != "ceil_div") {
      at_ = start;
      fail("unknown function '" + n->name + "'");
    }
    ++at_;
    n->kind = Kind::kCall;
    n->args.push_back(parse_binary(0));
    if (!take(",")) fail("expected ',' (" + n->name + " takes two arguments)");
    n->args.push_back(parse_binary(0));
    if (!take(")")) fail("expected ')'");
    return n;
  }

  std::string_view text_;
  size_t at_ = 0;
};

[[noreturn]] void eval_fail(const std::string& text, const std::string& what) {
  throw ExprError("expression '" + text + "': " + what);
}

int64_t apply(const std::string& text, const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op == "+" && !__builtin_add_overflow(a, b, &r)) return r;
  if (op == "-" && !__builtin_sub_overflow(a, b, &r)) return r;
  if (op == "*" && !__builtin_mul_overflow(a, b, &r)) return r;
  if (op == "+" || op == "-" || op == "*") eval_fail(text, "overflow in " + std::to_string(a) + " " + op + " " + std::to_string(b));
  if (op == "/" || op == "%" || op == "ceil_div") {
    if (b == 0) eval_fail(text, "division by zero");
    if (a == INT64_MIN && b == -1) eval_fail(text, "overflow in division");
    if (op == "/") return a / b;
    if (op == "%") return a % b;
    return a / b + ((a % b != 0) && ((a < 0) == (b < 0)) ? 1 : 0);
  }
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "min") return std::min(a, b);
  if (op == "max") return std::max(a, b);
  eval_fail(text, "unknown operator " + op);
}

int64_t eval_node(const Expr::Node& n, const ExprScope& scope, const std::string& text) {
  switch (n.kind) {
    case Kind::kNumber:
      return n.value;
    case Kind::kName: {
      const auto it = scope.find(n.name);
      if (it == scope.end()) eval_fail(text, "unknown name '" + n.name + "'");
      return it->second;
    }
    case Kind::kUnary: {
      const int64_t v = eval_node(*n.args[0], scope, text);
      if (n.name == "!") return v == 0;
      if (v == INT64_MIN) eval_fail(text, "overflow in negation");
      return -v;
    }
    case Kind::kBinary:
      if (n.name == "&&") return eval_node(*n.args[0], scope, text) != 0 && eval_node(*n.args[1], scope, text) != 0;
      if (n.name == "||") return eval_node(*n.args[0], scope, text) != 0 || eval_node(*n.args[1], scope, text) != 0;
      [[fallthrough]];
    case Kind::kCall:
      return apply(text, n.name, eval_node(*n.args[0], scope, text), eval_node(*n.args[1], scope, text));
  }
  return 0;
}

void collect_names(const Expr::Node& n, std::set<std::string>& out) {
  if (n.kind == Kind::kName) out.insert(n.name);
  for (const auto& a : n.args) collect_names(*a, out);
}

}  // namespace

Expr Expr::parse(std::string_view text) {
  Expr e;
  e.text_ = std::string(text);
  e.root_ = Parser(text).parse_all();
  return e;
}

int64_t Expr::eval(const ExprScope& scope) const { return eval_node(*root_, scope, text_); }

std::vector<std::string> Expr::names() const {
  std::set<std::string> s;
  collect_names(*root_, s);
  return {s.begin(), s.end()};
}

}  // namespace tuner::templates
