#include "templates/registry.h"

#include <stdexcept>

#include "templates/gemm_f32.h"

namespace tuner::templates {

const std::vector<const KernelTemplate*>& all_templates() {
  static const GemmF32Template gemm_f32;
  static const std::vector<const KernelTemplate*> all = {&gemm_f32};
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
