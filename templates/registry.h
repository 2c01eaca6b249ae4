// The template registry: which kernel template tunes which (op, dtype).
// One place to add a template; the tuner and the CLI look templates up here.
#pragma once

#include <string_view>
#include <vector>

#include "templates/kernel_template.h"

namespace tuner::templates {

/// Every registered template.
const std::vector<const KernelTemplate*>& all_templates();
/// The template for an op and dtype; throws std::invalid_argument naming what exists when none does.
const KernelTemplate& find_template(std::string_view op, DType dtype);
/// "gemm (f32)": tunable ops and dtypes, for messages.
std::string tunable_ops();

}  // namespace tuner::templates
