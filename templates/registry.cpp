#include "templates/registry.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "templates/batched_gemm_f32.h"
#include "templates/conv2d.h"
#include "templates/conv2d_gemm_f32.h"
#include "templates/conv2d_patch_tc.h"
#include "templates/conv2d_tc.h"
#include "templates/conv2d_wgmma.h"
#include "templates/gemm_f32.h"
#include "templates/gemm_tc.h"
#include "templates/gemm_wgmma.h"
#include "templates/row_norm.h"

namespace tuner::templates {

namespace {

std::vector<const KernelTemplate*>& registered() {
  static const GemmF32Template gemm_f32;
  static const RowNormTemplate softmax(RowOp::kSoftmax);
  static const RowNormTemplate layernorm(RowOp::kLayernorm);
  static const GemmTcTemplate gemm_tc(false);
  static const BatchedGemmF32Template batched_f32;
  static const GemmTcTemplate batched_tc(true);
  static const Conv2dTemplate conv2d;
  static const Conv2dGemmF32Template conv2d_gemm;
  static const Conv2dTcTemplate conv2d_tc;
  static const Conv2dWgmmaTemplate conv2d_wgmma;
  static const Conv2dPatchTcTemplate conv2d_patch;
  static const GemmWgmmaTemplate gemm_wgmma(false);
  static const GemmWgmmaTemplate batched_wgmma(true);
  // Registration order is preference order: the first template of an op and dtype that runs on the
  // device is the default. The general templates come first, as the default must take any shape; the
  // specialised ones behind them (wgmma: N, K or C multiples of 8; conv2d_gemm_simt: 1x1 convs;
  // conv2d_patch_tc: few channels) are tuned beside them by `tune --template auto`, the CLI's default.
  static std::vector<const KernelTemplate*> all = {&gemm_f32,  &gemm_tc,   &gemm_wgmma, &batched_f32,
                                                         &batched_tc, &batched_wgmma, &softmax, &layernorm,
                                                         &conv2d,    &conv2d_gemm, &conv2d_tc,  &conv2d_wgmma,
                                                         &conv2d_patch};
  return all;
}

}  // namespace

const std::vector<const KernelTemplate*>& all_templates() { return registered(); }

const KernelTemplate& register_template(std::unique_ptr<const KernelTemplate> t) {
  static std::vector<std::unique_ptr<const KernelTemplate>> owned;
  for (const auto* existing : registered())
    if (existing->name() == t->name())
      throw std::invalid_argument("template name '" + t->name() + "' is taken; allowed: a name other than " +
                                  [] { std::string n; for (const auto* e : registered()) n += (n.empty() ? "" : ", ") + e->name(); return n; }());
  owned.push_back(std::move(t));
  registered().push_back(owned.back().get());
  return *owned.back();
}

std::string tunable_ops() {
  // One entry per op, its dtypes in registration order: "gemm (f32|f16|bf16), ...".
  std::vector<std::pair<std::string, std::vector<DType>>> ops;
  for (const auto* t : all_templates()) {
    auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == t->op(); });
    if (it == ops.end()) it = ops.insert(ops.end(), {t->op(), {}});
    for (auto d : t->dtypes())
      if (std::find(it->second.begin(), it->second.end(), d) == it->second.end()) it->second.push_back(d);
  }
  std::string out;
  for (const auto& [op, dtypes] : ops) {
    std::string dts;
    for (auto d : dtypes) dts += (dts.empty() ? "" : "|") + to_string(d);
    out += (out.empty() ? "" : ", ") + op + " (" + dts + ")";
  }
  return out;
}

namespace {

bool implements(const KernelTemplate& t, std::string_view op, DType dtype) {
  if (t.op() != op) return false;
  for (auto d : t.dtypes())
    if (d == dtype) return true;
  return false;
}

}  // namespace

std::string template_names(std::string_view op, DType dtype, const DeviceLimits* limits) {
  std::string out;
  for (const auto* t : all_templates())
    if (implements(*t, op, dtype) && (!limits || !t->unsupported_on(*limits))) out += (out.empty() ? "" : ", ") + t->name();
  return out;
}

std::vector<const KernelTemplate*> templates_for(std::string_view op, DType dtype, const DeviceLimits& limits) {
  std::vector<const KernelTemplate*> out;
  for (const auto* t : all_templates())
    if (implements(*t, op, dtype) && !t->unsupported_on(limits)) out.push_back(t);
  return out;
}

const KernelTemplate& find_template(std::string_view op, DType dtype, const DeviceLimits* limits,
                                    std::string_view name) {
  const KernelTemplate* first_unsupported = nullptr;
  for (const auto* t : all_templates()) {
    if (!implements(*t, op, dtype)) continue;
    if (!name.empty()) {
      if (t->name() != name) continue;
      if (limits)
        if (auto why = t->unsupported_on(*limits)) throw std::invalid_argument("--template " + std::string(name) + ": " + *why);
      return *t;
    }
    if (limits && t->unsupported_on(*limits)) {
      if (!first_unsupported) first_unsupported = t;
      continue;
    }
    return *t;
  }
  if (!name.empty())
    throw std::invalid_argument("--template '" + std::string(name) + "' does not tune " + std::string(op) + " " +
                                to_string(dtype) + (limits ? " on this device" : "") +
                                "; allowed: auto (every one the device runs), " + template_names(op, dtype, limits));
  if (first_unsupported) throw std::invalid_argument(*first_unsupported->unsupported_on(*limits));
  throw std::invalid_argument("no template tunes op '" + std::string(op) + "' with dtype " + to_string(dtype) +
                              "; tunable: " + tunable_ops());
}

}  // namespace tuner::templates
