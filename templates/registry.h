// The template registry: which kernel template tunes which (op, dtype).
// One place to add a template; the tuner and the CLI look templates up here.
#pragma once

#include <string_view>
#include <vector>

#include "templates/kernel_template.h"

namespace tuner::templates {

/// Every registered template.
const std::vector<const KernelTemplate*>& all_templates();
/// The template for an op and dtype: `name` when it is given (it must implement that op and dtype),
/// else the first registered one that does and, when `limits` is given, runs on that device
/// (unsupported_on). Throws std::invalid_argument naming what exists when none fits.
const KernelTemplate& find_template(std::string_view op, DType dtype, const DeviceLimits* limits = nullptr,
                                    std::string_view name = "");
/// "gemm_tc_mma, gemm_tc_wgmma": the templates of an op and dtype, for messages.
std::string template_names(std::string_view op, DType dtype);
/// "gemm (f32)": tunable ops and dtypes, for messages.
std::string tunable_ops();

}  // namespace tuner::templates
