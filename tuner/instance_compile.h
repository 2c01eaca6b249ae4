// What NVRTC is asked to compile for a template instance: its source (or its reference kernel's), the kernel's
// name, the architecture (sm_90a for the kernels that need it) and the instance's named headers (a user kernel's
// own). One place for every caller: the session, the finalists, the compiled prior, the benches.
#pragma once

#include "templates/kernel_template.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {

inline CompileRequest kernel_request(const templates::KernelInstance& k, const templates::DeviceLimits& limits) {
  return {k.source, k.kernel_name, templates::compile_arch(k, limits), {}, k.headers};
}

inline CompileRequest reference_request(const templates::KernelInstance& k, const templates::DeviceLimits& limits) {
  return {k.reference_source, k.reference_kernel_name, limits.arch, {}, k.headers};
}

}  // namespace tuner
