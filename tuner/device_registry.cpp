#include "tuner/device_registry.h"

#include <algorithm>

#include <charconv>
#include <stdexcept>

#include "tuner/cuda_runner.h"
#include "tuner/nvrtc_builder.h"
#include "templates/registry.h"

namespace tuner {

namespace {

DeviceTarget sim_target(const costmodel::GpuSpec& g) {
  DeviceTarget t;
  t.spec = "sim:" + g.key;
  t.simulated = true;
  t.gpu = g;
  t.identity.name = t.spec;
  t.identity.simulated = true;
  t.identity.cc_major = g.cc_major;
  t.identity.cc_minor = g.cc_minor;
  t.identity.sm_count = g.sm_count;
  t.identity.memory_bytes = g.memory_bytes();
  t.identity.driver_version = "none";
  t.identity.nvrtc_version = NvrtcBuilder::nvrtc_version();
  t.limits = limits_of(g);
  return t;
}

DeviceTarget cuda_target(const CudaDeviceInfo& info) {
  DeviceTarget t;
  t.spec = "cuda:" + std::to_string(info.ordinal);
  t.simulated = false;
  t.ordinal = info.ordinal;
  if (auto g = costmodel::find_gpu_spec(info.cc_major, info.cc_minor, info.sm_count, info.name, info.memory_bytes)) {
    t.gpu = *g;
  } else {
    t.gpu.key = "unknown";
    t.gpu.cc_major = info.cc_major;
    t.gpu.cc_minor = info.cc_minor;
    t.gpu.sm_count = info.sm_count;
  }
  t.gpu.name = info.name;
  t.identity.name = info.name;
  t.identity.simulated = false;
  t.identity.cc_major = info.cc_major;
  t.identity.cc_minor = info.cc_minor;
  t.identity.sm_count = info.sm_count;
  t.identity.memory_bytes = info.memory_bytes;
  t.identity.driver_version = info.driver_version;
  t.identity.nvrtc_version = NvrtcBuilder::nvrtc_version();
  t.limits = limits_of(info);
  return t;
}

}  // namespace

DeviceTarget resolve_device(const std::string& spec) {
  const std::string allowed =
      "cuda:N, replay:<file>, or sim:<gpu> with <gpu> one of " + costmodel::gpu_spec_keys();
  if (spec.rfind("replay:", 0) == 0) {
    ReplayData read = read_replay(spec.substr(7));
    auto g = spec_of_recording(read.device, read.gpu_key);
    if (!g)
      throw std::invalid_argument("replay file '" + read.path + "' names GPU '" + read.gpu_key +
                                  "', which the spec table does not have; known: " + costmodel::gpu_spec_keys());
    // Keys as the session will look configs up (templates/registry.h resolves the template as the session does).
    try {
      const templates::DeviceLimits limits = limits_of(*g);
      const templates::Workload w = templates::parse_workload(read.op, read.shape, read.dtype);
      canonicalize_records(read, templates::find_template(read.op, w.dtype, &limits, read.template_name).space(w, limits));
    } catch (const std::invalid_argument&) {
      // A template or workload this build does not know: the session reports it when it starts.
    }
    if (read.records.empty())
      throw std::invalid_argument("replay file '" + read.path +
                                  "' holds no records; allowed: a recording of at least one measured config");
    auto data = std::make_shared<const ReplayData>(std::move(read));
    DeviceTarget t = sim_target(*g);
    t.spec = spec;
    t.identity = data->device;
    t.identity.name = "replay:" + data->device.name;
    t.identity.simulated = true;
    t.replay = std::move(data);
    return t;
  }
  if (spec.rfind("sim:", 0) == 0) {
    auto g = costmodel::find_gpu_spec(spec.substr(4));
    if (!g) throw std::invalid_argument("unknown device '" + spec + "'; allowed: " + allowed);
    return sim_target(*g);
  }
  if (spec.rfind("cuda:", 0) == 0) {
    const std::string num = spec.substr(5);
    int ordinal = -1;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), ordinal);
    if (num.empty() || ec != std::errc() || end != num.data() + num.size() || ordinal < 0)
      throw std::invalid_argument("malformed device '" + spec + "'; allowed: " + allowed);
    std::string err;
    auto gpus = cuda_devices(&err);
    if (gpus.empty()) throw std::invalid_argument("device '" + spec + "' is not available: " + err);
    if (ordinal >= static_cast<int>(gpus.size()))
      throw std::invalid_argument("device '" + spec + "' does not exist; this machine has cuda:0.." +
                                  std::to_string(gpus.size() - 1));
    return cuda_target(gpus[static_cast<size_t>(ordinal)]);
  }
  throw std::invalid_argument("unknown device '" + spec + "'; allowed: " + allowed);
}

std::vector<DeviceTarget> resolve_devices(const std::string& spec) {
  const bool several = spec == "cuda:all" || (spec.rfind("cuda:", 0) == 0 && spec.find(',') != std::string::npos);
  if (!several) return {resolve_device(spec)};
  std::vector<std::string> specs;
  if (spec == "cuda:all") {
    std::string err;
    const auto gpus = cuda_devices(&err);
    if (gpus.empty()) throw std::invalid_argument("device '" + spec + "' is not available: " + err);
    for (const auto& g : gpus) specs.push_back("cuda:" + std::to_string(g.ordinal));
  } else {
    std::string rest = spec.substr(5);
    size_t pos = 0;
    while (true) {
      const size_t comma = rest.find(',', pos);
      const std::string item = "cuda:" + rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (std::find(specs.begin(), specs.end(), item) != specs.end())
        throw std::invalid_argument("device list '" + spec + "' names " + item + " twice; allowed: distinct GPUs");
      specs.push_back(item);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  for (const auto& one : specs)  // every item well-formed before any is looked up
    if (one.size() <= 5 || one.find_first_not_of("0123456789", 5) != std::string::npos)
      throw std::invalid_argument("malformed device list '" + spec + "' (item '" + one.substr(5) +
                                  "'); allowed: cuda:all or cuda:N,M,... with distinct ordinals");
  std::vector<DeviceTarget> out;
  for (const auto& one : specs) {
    out.push_back(resolve_device(one));
    const auto& a = out.front().identity;
    const auto& b = out.back().identity;
    if (a.name != b.name || a.cc_major != b.cc_major || a.cc_minor != b.cc_minor || a.sm_count != b.sm_count ||
        a.memory_bytes != b.memory_bytes)
      throw std::invalid_argument("device list '" + spec + "' mixes GPUs (" + out.front().spec + " is " + a.name + ", " +
                                  one + " is " + b.name +
                                  "); allowed: identical GPUs; tune different GPUs in separate runs");
  }
  return out;
}

std::vector<DeviceTarget> list_devices(std::string* cuda_note) {
  std::vector<DeviceTarget> out;
  for (const auto& info : cuda_devices(cuda_note)) out.push_back(cuda_target(info));
  for (const auto& g : costmodel::gpu_specs()) out.push_back(sim_target(g));
  return out;
}

std::string default_device() {
  std::string err;
  return cuda_devices(&err).empty() ? "sim:h100-sxm" : "cuda:0";
}

}  // namespace tuner
