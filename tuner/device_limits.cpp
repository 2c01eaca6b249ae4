#include "tuner/device_limits.h"

#include <algorithm>
#include <optional>
#include <string>

namespace tuner {

templates::DeviceLimits limits_of(const costmodel::GpuSpec& g) {
  templates::DeviceLimits l;
  l.arch = g.arch();
  l.max_threads_per_block = g.max_threads_per_block;
  l.max_shared_per_block_bytes = g.shared_per_block_bytes;
  l.max_registers_per_thread = g.max_registers_per_thread;
  if (g.sm_count > 0) l.sm_count = g.sm_count;
  if (g.registers_per_sm > 0) l.registers_per_block = std::min(l.registers_per_block, g.registers_per_sm);
  return l;
}

templates::DeviceLimits limits_of(const CudaDeviceInfo& info) {
  templates::DeviceLimits l;
  l.arch = "sm_" + std::to_string(info.cc_major * 10 + info.cc_minor);
  l.max_threads_per_block = info.max_threads_per_block;
  l.max_shared_per_block_bytes = info.max_shared_per_block_optin;
  if (info.sm_count > 0) l.sm_count = info.sm_count;
  return l;
}

std::optional<costmodel::GpuSpec> spec_of_recorded(const std::string& name, int cc_major, int cc_minor, int sm_count) {
  std::optional<costmodel::GpuSpec> g;
  if (name.rfind("sim:", 0) == 0) g = costmodel::find_gpu_spec(name.substr(4));
  if (!g) g = costmodel::find_gpu_spec(cc_major, cc_minor, sm_count, name);
  return g;
}

std::optional<costmodel::GpuSpec> spec_of_recording(const db::DeviceIdentity& device, const std::string& gpu_key) {
  if (!device.simulated)
    if (auto g = costmodel::find_gpu_spec(device.cc_major, device.cc_minor, device.sm_count, device.name,
                                          device.memory_bytes))
      return g;
  return costmodel::find_gpu_spec(gpu_key);
}

templates::DeviceLimits limits_of_recorded(const std::string& name, int cc_major, int cc_minor, int sm_count) {
  if (const auto g = spec_of_recorded(name, cc_major, cc_minor, sm_count)) return limits_of(*g);
  templates::DeviceLimits l;
  if (sm_count > 0) l.sm_count = sm_count;
  if (cc_major > 0) l.arch = "sm_" + std::to_string(cc_major * 10 + cc_minor);
  return l;
}

}  // namespace tuner
