#include "tuner/compiled_resources.h"

#include <chrono>
#include <future>

#include "tuner/stop_signals.h"
#include "tuner/instance_compile.h"

namespace tuner {

CompiledResources::CompiledResources(const templates::KernelTemplate& tmpl, const search::ConfigSpace& space,
                                     const templates::Workload& workload, const templates::DeviceLimits& limits,
                                     CompilePool& pool)
    : tmpl_(tmpl), space_(space), workload_(workload), limits_(limits), pool_(pool) {}

std::vector<std::optional<costmodel::KernelResources>> CompiledResources::resources(
    const std::vector<search::Config>& configs) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<uint64_t, std::future<CompileResult>>> jobs;
  for (const auto& c : configs) {
    const auto idx = space_.index_of(c);
    if (!idx || known_.count(*idx)) continue;
    known_[*idx] = std::nullopt;  // asked twice in one call: compiled once
    const templates::KernelInstance inst = tmpl_.instantiate(space_, c, workload_);
    jobs.emplace_back(*idx, pool_.submit(kernel_request(inst, limits_)));
  }
  bool stopping = false;
  for (auto& [idx, job] : jobs) {
    // Ctrl-C ends the session after the current config, so a stop does not wait for a whole batch of compiles
    // (a minute of them on a cold cache): queued ones are dropped, running ones finish in the pool.
    while (!stopping && job.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
      if (stop_requested()) {
        stopping = true;
        pool_.discard_queued();
      }
    if (stopping && job.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      known_.erase(idx);  // not known: asked again, it compiles again
      continue;
    }
    CompileResult r;
    try {
      r = job.get();
    } catch (const std::future_error&) {  // dropped by discard_queued
      known_.erase(idx);
      continue;
    }
    stats_.compile_cpu_s += r.compile_ms / 1000;
    if (!r.ok()) {
      ++stats_.failed;
      continue;
    }
    ++(r.from_cache ? stats_.from_cache : stats_.compiled);
    known_[idx] = costmodel::KernelResources{r.resources.registers, r.resources.static_shared_bytes,
                                             r.resources.local_bytes};
  }
  stats_.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::optional<costmodel::KernelResources>> out;
  for (const auto& c : configs) {
    const auto idx = space_.index_of(c);
    const auto it = idx ? known_.find(*idx) : known_.end();
    out.push_back(it != known_.end() ? it->second : std::nullopt);
  }
  return out;
}

}  // namespace tuner
