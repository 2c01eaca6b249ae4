// compile_configs.h: the step the compile and GPU tests share: instantiate a list of a template's
// configs for one workload and compile them all with NVRTC on a pool (for compile_arch of each
// instance), returning the instances and their compile results in the configs' order; and the
// checks every compiled config of a full-space sample must pass.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "search/config_space.h"
#include "templates/kernel_template.h"
#include "templates/launch_check.h"
#include "tuner/compile_cache.h"
#include "tuner/compile_pool.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {

struct CompiledConfigs {
  std::vector<templates::KernelInstance> instances;
  std::vector<CompileResult> results;
};

/// Instances of `configs` (valid in `space`) for workload `w`, compiled by `builder` on a pool with a
/// thread per core.
inline CompiledConfigs compile_configs(const templates::KernelTemplate& tmpl, const search::ConfigSpace& space,
                                       const std::vector<search::Config>& configs, const templates::Workload& w,
                                       const templates::DeviceLimits& limits, NvrtcBuilder& builder) {
  CompilePool pool(builder, 0);
  CompiledConfigs out;
  std::vector<std::future<CompileResult>> pending;
  for (const auto& c : configs) {
    out.instances.push_back(tmpl.instantiate(space, c, w));
    const auto& k = out.instances.back();
    pending.push_back(pool.submit({k.source, k.kernel_name, templates::compile_arch(k, limits), {}}));
  }
  for (auto& f : pending) out.results.push_back(f.get());
  return out;
}

/// compile_configs with a builder on the on-disk compile cache ($TUNER_CACHE_DIR).
inline CompiledConfigs compile_configs_cached(const templates::KernelTemplate& tmpl, const search::ConfigSpace& space,
                                              const std::vector<search::Config>& configs, const templates::Workload& w,
                                              const templates::DeviceLimits& limits) {
  CompileCache cache(CompileCache::default_dir());
  NvrtcBuilder builder(&cache);
  return compile_configs(tmpl, space, configs, w, limits, builder);
}

/// Config i of `compiled` (named `cfg` in failures) compiled, has at most 1 KiB of static shared
/// memory and passes the runner's launch check with its cubin's registers and static shared memory;
/// with `no_spills`, ptxas reports no spill and its stack frame is at most `max_local_bytes`.
inline void expect_launchable(const CompiledConfigs& compiled, size_t i, const templates::DeviceLimits& limits,
                              const std::string& cfg, bool no_spills, int max_local_bytes = 16) {
  const CompileResult& r = compiled.results[i];
  ASSERT_TRUE(r.ok()) << cfg << "\n" << r.log.substr(0, 4000);
  EXPECT_LE(r.resources.static_shared_bytes, 1024) << cfg;
  EXPECT_FALSE(templates::launch_problem(compiled.instances[i].launch, r.resources.registers,
                                         r.resources.static_shared_bytes, limits))
      << cfg;
  if (!no_spills) return;
  if (r.ptxas_spill_bytes >= 0) {
    EXPECT_EQ(r.ptxas_spill_bytes, 0) << cfg << "\n" << r.log;
  }
  EXPECT_LE(r.resources.local_bytes, max_local_bytes) << cfg;
}

}  // namespace tuner
