// Workloads: an operator instance (op, named shape dimensions, dtype) and the
// parsing of the command-line forms `--op gemm --shape M=..,N=..,K=.. --dtype f32`.
//
// The table of ops and their dimension names follows DESIGN.md. Parsing
// throws std::invalid_argument with one line naming the bad value and what is
// allowed; nothing here knows which ops have a tunable template.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tuner::templates {

enum class DType { kF32, kF16, kBF16 };

/// The largest size of a built-in op's dimension (its kernels take sizes as int).
inline constexpr int64_t kMaxDimension = (int64_t{1} << 31) - 1;
/// The largest size of a user kernel's spec (its formulas are int64; an int argument is checked on its own).
inline constexpr int64_t kMaxUserSize = int64_t{1} << 40;

std::string to_string(DType d);
/// "f32" | "f16" | "bf16"; throws std::invalid_argument otherwise.
DType dtype_from_string(std::string_view s);
/// Bytes per element.
int dtype_bytes(DType d);

struct Workload {
  std::string op;                                     ///< "gemm", ...
  std::vector<std::pair<std::string, int64_t>> dims;  ///< In the op's canonical order.
  DType dtype = DType::kF32;

  /// A dimension by name; throws std::out_of_range when absent.
  int64_t dim(std::string_view name) const;
  /// Canonical shape string "M=1000,N=1000,K=1000".
  std::string shape_string() const;
  /// "gemm M=1000,N=1000,K=1000 f32".
  std::string to_string() const;
};

/// Names of the ops the shape parser knows, comma separated: the built-in ones, then any registered.
std::string known_ops();
/// Makes a user kernel's op (its spec's name) and size names known to the shape parser for the rest of the
/// process, so its records parse like a built-in op's (transfer between shapes, replay recordings). Throws
/// std::invalid_argument for a built-in op's name; registering a name again replaces its sizes.
void register_op_dimensions(const std::string& op, const std::vector<std::string>& dims);
/// Required dimension names of an op in canonical order (plus optional ones for conv2d).
std::vector<std::string> op_dimensions(std::string_view op);
/// The names of a shape string's NAME=VALUE items in their order ("N=4,K=8": N, K); items without '=' are skipped.
std::vector<std::string> shape_dimension_names(std::string_view shape);

/// Whether a built-in op is a row op (softmax, layernorm): memory-bound, judged by GB/s, computed in fp32 on the
/// CUDA cores whatever its storage type.
inline bool is_row_op(std::string_view op) { return op == "softmax" || op == "layernorm"; }

/// Bytes a built-in op's operands and result occupy, each once in the workload's dtype: GEMM (M*K + K*N + M*N),
/// batched GEMM B times that, softmax 2*rows*cols, layernorm that and its gamma and beta rows, conv2d input + weights
/// + output (as the templates' profiles count their compulsory DRAM bytes). The least a kernel
/// moves (the roofline's bytes) and the least device memory it needs. 0 for an op without a formula (a user kernel's).
double compulsory_bytes(const Workload& w);
/// Elements of a built-in op's result (C, the output rows, the output image); 0 for another op.
double output_elements(const Workload& w);

/// Parses op, "M=..,N=..,K=.." and dtype into a workload; throws std::invalid_argument naming the
/// bad value (unknown op, malformed item, unknown or missing or repeated dimension, non-positive size).
Workload parse_workload(std::string_view op, std::string_view shape, std::string_view dtype);
/// The same for an op whose dimension names the caller knows (a user kernel's sizes, in its spec's order), whether
/// or not it is registered, with sizes up to max_size (a user kernel's spec allows 2^40).
Workload parse_workload_of(std::string_view op, const std::vector<std::string>& dims, std::string_view shape,
                           std::string_view dtype, int64_t max_size = kMaxDimension);

}  // namespace tuner::templates
