#include "templates/workload.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>

namespace tuner::templates {

namespace {

struct OpDims {
  std::string op;
  std::vector<std::string> required;
  std::vector<std::pair<std::string, int64_t>> optional;  ///< name, default
};

const std::vector<OpDims>& op_table() {
  static const std::vector<OpDims> t = {
      {"gemm", {"M", "N", "K"}, {}},
      {"batched_gemm", {"B", "M", "N", "K"}, {}},
      {"conv2d", {"N", "H", "W", "C", "K", "R", "S", "stride", "pad"}, {{"dilation", 1}}},
      {"softmax", {"rows", "cols"}, {}},
      {"layernorm", {"rows", "cols"}, {}},
  };
  return t;
}

/// Ops registered by this process (user kernels), after the built-in ones.
std::vector<OpDims>& registered_ops() {
  static std::vector<OpDims> t;
  return t;
}

/// The built-in ops' table, then the registered ones: where every lookup searches, in that order.
std::array<const std::vector<OpDims>*, 2> op_tables() {
  return {&op_table(), &registered_ops()};
}

const OpDims* find_op(std::string_view op) {
  for (const std::vector<OpDims>* table : op_tables())
    for (const auto& o : *table)
      if (o.op == op) return &o;
  return nullptr;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

std::string to_string(DType d) {
  switch (d) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
  }
  return "f32";
}

DType dtype_from_string(std::string_view s) {
  if (s == "f32") return DType::kF32;
  if (s == "f16") return DType::kF16;
  if (s == "bf16") return DType::kBF16;
  throw std::invalid_argument("unknown dtype '" + std::string(s) + "'; allowed: f32, f16, bf16");
}

int dtype_bytes(DType d) { return d == DType::kF32 ? 4 : 2; }

int64_t Workload::dim(std::string_view name) const {
  for (const auto& [n, v] : dims)
    if (n == name) return v;
  throw std::out_of_range("workload has no dimension '" + std::string(name) + "'");
}

std::string Workload::shape_string() const {
  std::string out;
  for (const auto& [n, v] : dims) out += (out.empty() ? "" : ",") + n + "=" + std::to_string(v);
  return out;
}

std::string Workload::to_string() const { return op + " " + shape_string() + " " + templates::to_string(dtype); }

std::string known_ops() {
  std::string out;
  for (const std::vector<OpDims>* table : op_tables())
    for (const auto& o : *table) out += (out.empty() ? "" : ", ") + o.op;
  return out;
}

void register_op_dimensions(const std::string& op, const std::vector<std::string>& dims) {
  for (const auto& o : op_table())
    if (o.op == op) throw std::invalid_argument("op '" + op + "' is built in; allowed: a name of no built-in op");
  auto& ops = registered_ops();
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const OpDims& o) { return o.op == op; });
  if (it != ops.end()) {
    it->required = dims;
  } else {
    ops.push_back({op, dims, {}});
  }
}

std::vector<std::string> op_dimensions(std::string_view op) {
  const OpDims* o = find_op(op);
  if (!o) throw std::invalid_argument("unknown op '" + std::string(op) + "'; allowed: " + known_ops());
  auto out = o->required;
  for (const auto& [n, d] : o->optional) out.push_back(n);
  return out;
}

double output_elements(const Workload& w) {
  auto d = [&](const char* n) { return static_cast<double>(w.dim(n)); };
  if (w.op == "gemm") return d("M") * d("N");
  if (w.op == "batched_gemm") return d("B") * d("M") * d("N");
  if (w.op == "softmax" || w.op == "layernorm") return d("rows") * d("cols");
  if (w.op == "conv2d") {
    const double dil = d("dilation");
    const double p = std::floor((d("H") + 2 * d("pad") - dil * (d("R") - 1) - 1) / d("stride")) + 1;
    const double q = std::floor((d("W") + 2 * d("pad") - dil * (d("S") - 1) - 1) / d("stride")) + 1;
    return d("N") * p * q * d("K");
  }
  return 0;
}

double compulsory_bytes(const Workload& w) {
  auto d = [&](const char* n) { return static_cast<double>(w.dim(n)); };
  // The operands read, then the result written (output_elements).
  double inputs = 0;
  if (w.op == "gemm") inputs = d("M") * d("K") + d("K") * d("N");
  else if (w.op == "batched_gemm") inputs = d("B") * (d("M") * d("K") + d("K") * d("N"));
  else if (w.op == "softmax") inputs = d("rows") * d("cols");
  else if (w.op == "layernorm") inputs = d("rows") * d("cols") + 2 * d("cols");  // gamma and beta: a row each
  else if (w.op == "conv2d") inputs = d("N") * d("H") * d("W") * d("C") + d("K") * d("R") * d("S") * d("C");
  else return 0;
  return (inputs + output_elements(w)) * dtype_bytes(w.dtype);
}

std::vector<std::string> shape_dimension_names(std::string_view shape) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= shape.size()) {
    const size_t comma = std::min(shape.find(',', pos), shape.size());
    const std::string_view item = shape.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && eq > 0) out.emplace_back(item.substr(0, eq));
    pos = comma + 1;
  }
  return out;
}

namespace {

Workload parse_dims(const OpDims& spec, std::string_view op, std::string_view shape, std::string_view dtype,
                    int64_t max_size = kMaxDimension) {
  const std::string expected = join(spec.required) + (spec.optional.empty() ? "" : "[,dilation=..]");

  std::map<std::string, int64_t> given;
  size_t pos = 0;
  const std::string s(shape);
  if (s.empty()) throw std::invalid_argument("empty shape; " + std::string(op) + " expects " + expected);
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw std::invalid_argument("malformed shape item '" + item + "' in '" + s + "'; expected NAME=VALUE items: " + expected);
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    bool known = std::find(spec.required.begin(), spec.required.end(), name) != spec.required.end() ||
                 std::any_of(spec.optional.begin(), spec.optional.end(), [&](const auto& p) { return p.first == name; });
    if (!known)
      throw std::invalid_argument("unknown dimension '" + name + "' for " + std::string(op) + "; expected " + expected);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec == std::errc::result_out_of_range && end == value.data() + value.size())
      throw std::invalid_argument("dimension " + name + "=" + value + " is too large (at most " +
                                  std::to_string(max_size) + ")");
    if (ec != std::errc() || end != value.data() + value.size())
      throw std::invalid_argument("dimension " + name + "='" + value + "' is not an integer");
    bool may_be_zero = (name == "pad");
    if (v < 0 || (v == 0 && !may_be_zero))
      throw std::invalid_argument("dimension " + name + "=" + value + " must be " + (may_be_zero ? "non-negative" : "positive"));
    if (v > max_size)
      throw std::invalid_argument("dimension " + name + "=" + value + " is too large (at most " +
                                  std::to_string(max_size) + ")");
    if (!given.emplace(name, v).second)
      throw std::invalid_argument("dimension '" + name + "' given twice in '" + s + "'");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  Workload w;
  w.op = std::string(op);
  w.dtype = dtype_from_string(dtype);
  for (const auto& name : spec.required) {
    auto g = given.find(name);
    if (g == given.end())
      throw std::invalid_argument("shape '" + s + "' lacks dimension " + name + "; " + std::string(op) + " expects " + expected);
    w.dims.emplace_back(name, g->second);
  }
  for (const auto& [name, def] : spec.optional) {
    auto g = given.find(name);
    w.dims.emplace_back(name, g == given.end() ? def : g->second);
  }
  return w;
}

}  // namespace

Workload parse_workload(std::string_view op, std::string_view shape, std::string_view dtype) {
  const OpDims* found = find_op(op);
  if (!found) throw std::invalid_argument("unknown op '" + std::string(op) + "'; allowed: " + known_ops());
  // A registered op is a user kernel's: its sizes go to 2^40, as its spec's do.
  const bool builtin = std::any_of(op_table().begin(), op_table().end(), [&](const OpDims& o) { return o.op == op; });
  return parse_dims(*found, op, shape, dtype, builtin ? kMaxDimension : kMaxUserSize);
}

Workload parse_workload_of(std::string_view op, const std::vector<std::string>& dims, std::string_view shape,
                           std::string_view dtype, int64_t max_size) {
  return parse_dims(OpDims{std::string(op), dims, {}}, op, shape, dtype, max_size);
}

}  // namespace tuner::templates
