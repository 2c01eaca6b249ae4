// What compiling a config tells before it is measured: its registers, static
// shared memory and local (spill) bytes, read from the cubin NVRTC makes of
// it. The model-guided search asks for them to re-rank the analytic prior's
// best candidates before its first batch (tuner/strategy_factory.h); the
// compiles go through the session's pool and on-disk cache, so a config that
// is then measured compiles from the cache.
//
// Remembers each config's answer; counts compiles, cache hits, failures and
// the wall time it waited, so that cost is reported. Not responsible for
// ranking (the strategy factory feeds the resources to the analytic model)
// or for measuring anything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "costmodel/kernel_profile.h"
#include "search/config_space.h"
#include "templates/kernel_template.h"
#include "tuner/compile_pool.h"

namespace tuner {

class CompiledResources {
 public:
  struct Stats {
    int64_t compiled = 0;    ///< Configs compiled by NVRTC (cache misses).
    int64_t from_cache = 0;  ///< Configs whose cubin the on-disk cache held.
    int64_t failed = 0;      ///< Configs that did not compile (no resources).
    double wall_s = 0;       ///< Seconds resources() waited for compiles, all calls together.
    double compile_cpu_s = 0;  ///< NVRTC time summed over the pool's threads.
  };

  /// Everything given must outlive this object; the pool's builder decides whether a cache is used.
  CompiledResources(const templates::KernelTemplate& tmpl, const search::ConfigSpace& space,
                    const templates::Workload& workload, const templates::DeviceLimits& limits, CompilePool& pool);

  /// Per config, in order: its compiled resources, or nullopt when it did not compile. Compiles the configs
  /// not asked for before, all at once on the pool, and waits for them.
  std::vector<std::optional<costmodel::KernelResources>> resources(const std::vector<search::Config>& configs);

  const Stats& stats() const { return stats_; }
  /// Every config asked for so far, by space index: its resources, or nullopt when it did not compile.
  const std::map<uint64_t, std::optional<costmodel::KernelResources>>& known() const { return known_; }

 private:
  const templates::KernelTemplate& tmpl_;
  const search::ConfigSpace& space_;
  const templates::Workload workload_;
  const templates::DeviceLimits limits_;
  CompilePool& pool_;
  std::map<uint64_t, std::optional<costmodel::KernelResources>> known_;  ///< By space index.
  Stats stats_;
};

}  // namespace tuner
