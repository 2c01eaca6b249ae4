// The compile stage of a tuning session: each claimed config is instantiated
// from the template and queued on the NVRTC pool (through the on-disk cache),
// with the reference kernel it needs queued first; a config with an injected
// fault compiles a faulting kernel on a GPU instead. A replay device compiles
// nothing. The measure stage waits on the futures; not responsible for it.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "tuner/session.h"

namespace tuner {

/// A batch on its way: claimed, instantiated, and queued on the compile pool.
struct PendingBatch {
  std::vector<search::Config> configs;
  std::vector<templates::KernelInstance> instances;
  std::vector<std::future<CompileResult>> compiled;
  std::vector<InjectedFault> faults;
};

/// Queues the reference of the space's first config, so it compiles while the first batch does (only
/// when the session will measure something on a device that compiles).
void queue_first_reference(Session& s);

/// Instantiates and queues every config of `configs`.
PendingBatch compile(Session& s, std::vector<search::Config> configs);

/// The compile of an instance's reference kernel, queued on first need (callers hold s.mu when lanes run).
std::shared_future<CompileResult> queue_reference(Session& s, const templates::KernelInstance& k);

/// The reference cubin of an instance (empty on replay devices), waiting for its compile; a reference that
/// does not compile is a failure of the template, not of a config: it throws and ends the session.
/// Safe to call from several lanes at once.
std::string reference_for(Session& s, const templates::KernelInstance& k);

}  // namespace tuner
