#include "tuner/session_compile.h"

#include <stdexcept>

#include "templates/registry.h"
#include "templates/user_kernel.h"
#include "tuner/instance_compile.h"

namespace tuner {

std::shared_future<CompileResult> queue_reference(Session& s, const templates::KernelInstance& k) {
  auto it = s.reference_jobs.find(k.reference_source);
  if (it == s.reference_jobs.end())
    it = s.reference_jobs
             .emplace(k.reference_source,
                      s.pool.submit(reference_request(k, s.device.limits)).share())
             .first;
  return it->second;
}

std::string reference_for(Session& s, const templates::KernelInstance& k) {
  if (s.device.replay) return {};
  const auto tr = std::chrono::steady_clock::now();
  std::shared_future<CompileResult> job;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    job = queue_reference(s, k);
  }
  const CompileResult& ref = job.get();
  std::lock_guard<std::mutex> lock(s.mu);
  s.sum.phases.compile_wait_s += seconds_since(tr);
  if (ref.ok()) return ref.cubin;
  // A user kernel's reference is compiled from the user's own file, whole: an error anywhere in it stops here.
  throw std::runtime_error(("reference kernel " + k.reference_kernel_name + " failed to compile" +
                            (dynamic_cast<const templates::UserKernelTemplate*>(&s.tmpl) ? " (it is compiled from the whole --kernel file)"
                                                                                 : "") +
                            ": " + ref.log)
                               .substr(0, 2000));
}

void queue_first_reference(Session& s) {
  if (s.opt.trials > s.sum.previously_measured && s.space.size() > 0 && !s.device.replay)
    queue_reference(s, s.tmpl.instantiate(s.space, s.space.at(0), s.opt.workload));
}

std::string fault_kernel_source(const std::string& kernel_name, InjectedFault fault) {
  if (fault == InjectedFault::kCrash)
    // A store far outside any allocation (an illegal address), then a trap in case the store did not
    // fault: on the H100 a store to the low address 0x10 completed silently and the kernel "ran". The
    // trap ends the launch with CUDA_ERROR_LAUNCH_FAILED, a sticky fault that costs the context.
    return "extern \"C\" __global__ void " + kernel_name +
           "() {\n"
           "  volatile int* p = reinterpret_cast<volatile int*>(0x7ffffff00000ull + 4ull * threadIdx.x);\n"
           "  *p = static_cast<int>(threadIdx.x);\n"
           "  __threadfence_system();\n"
           "  __trap();\n"
           "}\n";
  // A loop on the cycle counter, which the compiler cannot prove ends: on the H100 a loop on a volatile
  // local (`while (spin)`) returned at once and left the output unwritten (a wrong answer, not a hang).
  return "extern \"C\" __global__ void " + kernel_name +
         "() {\n"
         "  while (clock64() >= 0) __nanosleep(1000);\n"
         "}\n";
}

PendingBatch compile(Session& s, std::vector<search::Config> configs) {
  PendingBatch p;
  p.configs = std::move(configs);
  for (const auto& c : p.configs) {
    p.instances.push_back(s.tmpl.instantiate(s.space, c, s.opt.workload));
    const templates::KernelInstance& inst = p.instances.back();
    if (!s.device.replay) queue_reference(s, inst);  // ahead of the configs that need it
    InjectedFault fault = InjectedFault::kNone;
    const uint64_t index = *s.space.index_of(c);
    for (const auto& [i, f] : s.opt.faults)
      if (i == index) fault = f;
    p.faults.push_back(fault);
    if (s.device.replay) {  // answered from the recording: nothing to compile
      std::promise<CompileResult> none;
      none.set_value({});
      p.compiled.push_back(none.get_future());
      continue;
    }
    CompileRequest req = kernel_request(inst, s.device.limits);
    if (fault != InjectedFault::kNone && !s.device.simulated) req.source = fault_kernel_source(req.kernel_name, fault);
    p.compiled.push_back(s.pool.submit(std::move(req)));
  }
  return p;
}

}  // namespace tuner
