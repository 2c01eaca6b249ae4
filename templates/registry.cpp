#include "templates/registry.h"

#include <stdexcept>

#include "templates/batched_gemm_f32.h"
#include "templates/conv2d.h"
#include "templates/conv2d_tc.h"
#include "templates/gemm_f32.h"
#include "templates/gemm_tc.h"
#include "templates/row_norm.h"

namespace tuner::templates {

const std::vector<const KernelTemplate*>& all_templates() {
  static const GemmF32Template gemm_f32;
  static const RowNormTemplate softmax(RowOp::kSoftmax);
  static const RowNormTemplate layernorm(RowOp::kLayernorm);
  static const GemmTcTemplate gemm_tc(false);
  static const BatchedGemmF32Template batched_f32;
  static const GemmTcTemplate batched_tc(true);
  static const Conv2dTemplate conv2d;
  static const Conv2dTcTemplate conv2d_tc;
  static const std::vector<const KernelTemplate*> all = {&gemm_f32, &gemm_tc, &batched_f32, &batched_tc,
                                                         &softmax, &layernorm, &conv2d, &conv2d_tc};
  return all;
}

std::string tunable_ops() {
  std::string out;
  for (const auto* t : all_templates()) {
    std::string dts;
    for (auto d : t->dtypes()) dts += (dts.empty() ? "" : "|") + to_string(d);
    out += (out.empty() ? "" : ", ") + t->op() + " (" + dts + ")";
  }
  return out;
}

const KernelTemplate& find_template(std::string_view op, DType dtype) {
  for (const auto* t : all_templates()) {
    if (t->op() != op) continue;
    for (auto d : t->dtypes())
      if (d == dtype) return *t;
  }
  throw std::invalid_argument("no template tunes op '" + std::string(op) + "' with dtype " + to_string(dtype) +
                              "; tunable: " + tunable_ops());
}

}  // namespace tuner::templates
