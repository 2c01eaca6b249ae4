// The spec of a user-written kernel (`tuner tune --kernel FILE.cu --spec FILE.json`): what it is, read
// from JSON with every field checked, before anything is compiled or stored.
//
// A spec names the kernel, its knobs (each a #define macro of the kernel source) and their values,
// problem sizes, constraints, launch formulas, buffers, int scalar arguments, the reference it is
// checked against, and the FLOP and byte counts the sim devices' analytic model reads; all formulas are
// templates/expr.h expressions over the knobs and sizes. Parsing throws SpecError with one line naming
// the file, the field and what is allowed. Not responsible for tuning the kernel (user_kernel.h).
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "search/config_space.h"
#include "templates/expr.h"
#include "templates/workload.h"

namespace tuner::templates {

/// A bad spec; what() is one line: "spec FILE: FIELD: problem; allowed: ...".
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct UserBuffer {
  std::string name;
  DType dtype = DType::kF32;
  Expr elements;             ///< Element count.
  std::string role;          ///< "input" (random values), "output" (checked) or "workspace" (zeroed scratch).
};

struct UserLaunch {
  std::array<std::optional<Expr>, 3> grid;   ///< Missing dimensions are 1.
  std::array<std::optional<Expr>, 3> block;
};

struct UserKernelSpec {
  std::string path;                                   ///< The spec file, for messages.
  std::string name;                                   ///< Template name and op of its records.
  std::string kernel;                                 ///< extern "C" name of the kernel to tune.
  std::string kernel_path;                            ///< The .cu file.
  std::string kernel_text;                            ///< Its text.
  /// What NVRTC compiles: the text with its own headers' includes made absolute (user_kernel.cpp).
  std::string compile_text;
  /// "// header NAME DIGEST" per header of the user's beside the kernel: in the version and the cache key.
  std::string header_digests;
  /// Those headers as NVRTC reads them: (absolute path, text with its own local includes made absolute), read once.
  std::vector<std::pair<std::string, std::string>> headers;
  DType dtype = DType::kF32;                          ///< The workload's dtype in the database.
  std::vector<std::pair<std::string, int64_t>> sizes; ///< Problem sizes, in spec order.
  std::vector<search::Knob> knobs;                    ///< Names are #define macros.
  std::vector<Expr> constraints;
  UserLaunch launch;
  std::optional<Expr> shared_bytes;                   ///< Dynamic shared memory per block.
  std::vector<UserBuffer> buffers;                    ///< Kernel arguments, in order.
  std::vector<Expr> scalars;                          ///< int arguments after the buffers.
  std::string reference_kernel;                       ///< Empty: the kernel itself at reference_config.
  std::optional<UserLaunch> reference_launch;         ///< Empty: the kernel's formulas at reference_config.
  ExprScope reference_config;                         ///< Knob values the reference is compiled (and run) with.
  double tolerance = 0;                               ///< Max |out-ref| / max |ref| that passes.
  std::optional<Expr> flops, bytes, ilp, vector_width;
};

/// Reads a spec: `spec_json` is the spec file's text, `kernel_text` the kernel file's, `header_texts` its own
/// headers' (where the spec's kernels may be defined too). `shape` ("N=4096,...", may be empty) overrides sizes.
/// Throws SpecError.
UserKernelSpec parse_user_kernel_spec(const std::string& spec_path, const std::string& spec_json,
                                      const std::string& kernel_path, const std::string& kernel_text,
                                      const std::string& shape, const std::string& header_texts = "");

}  // namespace tuner::templates
