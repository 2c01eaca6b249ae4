// The template registry: which kernel template tunes which (op, dtype).
// One place to add a template; the tuner and the CLI look templates up here.
// Templates built at run time (a user kernel: user_kernel.h) join with
// register_template before any session starts.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "templates/kernel_template.h"

namespace tuner::templates {

/// Every registered template: the built-in ones, then those added by register_template.
const std::vector<const KernelTemplate*>& all_templates();
/// Adds a template built at run time (the registry owns it from now on) and returns it. Throws
/// std::invalid_argument when its name is taken. Not thread-safe: call it before tuning starts.
const KernelTemplate& register_template(std::unique_ptr<const KernelTemplate> t);
/// The template for an op and dtype: `name` when it is given (it must implement that op and dtype),
/// else the first registered one that does and, when `limits` is given, runs on that device
/// (unsupported_on). Throws std::invalid_argument naming what exists when none fits.
const KernelTemplate& find_template(std::string_view op, DType dtype, const DeviceLimits* limits = nullptr,
                                    std::string_view name = "");
/// Every template that implements the op and dtype and runs on the device, in registration order
/// (`tune --template auto` tunes them all; templates/registry.cpp says why the order matters).
std::vector<const KernelTemplate*> templates_for(std::string_view op, DType dtype, const DeviceLimits& limits);
/// "gemm_tc_mma, gemm_tc_wgmma": the templates of an op and dtype (with limits: those the device runs), for messages.
std::string template_names(std::string_view op, DType dtype, const DeviceLimits* limits = nullptr);
/// "gemm (f32)": tunable ops and dtypes, for messages.
std::string tunable_ops();

}  // namespace tuner::templates
