#include "tuner/measure_protocol.h"

#include <array>
#include <stdexcept>

#include <openssl/evp.h>

namespace tuner {

namespace {

nlohmann::json launch_json(const templates::LaunchGeometry& g) {
  return {{"grid", g.grid}, {"block", g.block}, {"dynamic_shared_bytes", g.dynamic_shared_bytes}};
}

templates::LaunchGeometry launch_from(const nlohmann::json& j) {
  templates::LaunchGeometry g;
  g.grid = j.at("grid").get<std::array<unsigned, 3>>();
  g.block = j.at("block").get<std::array<unsigned, 3>>();
  g.dynamic_shared_bytes = j.at("dynamic_shared_bytes").get<int>();
  return g;
}

}  // namespace

std::string to_string(InjectedFault f) {
  switch (f) {
    case InjectedFault::kNone: return "none";
    case InjectedFault::kCrash: return "crash";
    case InjectedFault::kHang: return "hang";
  }
  return "none";
}

InjectedFault injected_fault_from_string(const std::string& s) {
  if (s == "none") return InjectedFault::kNone;
  if (s == "crash") return InjectedFault::kCrash;
  if (s == "hang") return InjectedFault::kHang;
  throw std::invalid_argument("unknown fault '" + s + "'; allowed: none, crash, hang");
}

// Base64 by OpenSSL (EVP_EncodeBlock / EVP_DecodeBlock: one block, no line breaks).
std::string base64_encode(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64_decode(const std::string& in) {
  if (in.size() % 4 != 0) throw std::invalid_argument("bad base64: length is not a multiple of 4");
  std::string out(3 * (in.size() / 4) + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) throw std::invalid_argument("bad base64 character");
  size_t padding = 0;  // EVP_DecodeBlock counts the bytes '=' stands for
  for (size_t i = in.size(); i > 0 && in[i - 1] == '=' && padding < 2; --i) ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

nlohmann::json to_json(const MeasureRequest& r) {
  nlohmann::json buffers = nlohmann::json::array();
  for (const auto& b : r.buffers)
    buffers.push_back({{"name", b.name}, {"elements", b.elements}, {"dtype", templates::to_string(b.dtype)}, {"output", b.output}, {"workspace", b.workspace}});
  nlohmann::json maps = nlohmann::json::array();
  for (const auto& m : r.tensor_maps) {
    maps.push_back({{"buffer", m.buffer}, {"dims", m.dims}, {"strides_bytes", m.strides_bytes}, {"box", m.box},
                    {"swizzle_bytes", m.swizzle_bytes}});
    if (!m.element_strides.empty()) maps.back()["element_strides"] = m.element_strides;
  }
  const auto& s = r.settings;
  return {{"device", r.device},
          {"cubin", base64_encode(r.cubin)},
          {"kernel_name", r.kernel_name},
          {"launch", launch_json(r.launch)},
          {"buffers", buffers},
          {"tensor_maps", maps},
          {"scalar_args", r.scalar_args},
          {"reference_cubin", base64_encode(r.reference_cubin)},
          {"reference_kernel_name", r.reference_kernel_name},
          {"reference_launch", launch_json(r.reference_launch)},
          {"tolerance", r.tolerance},
          {"flops", r.flops},
          {"profile", r.profile},
          {"resources", r.resources},
          {"settings", {{"min_time_ms", s.min_time_ms}, {"min_repeats", s.min_repeats}, {"max_repeats", s.max_repeats},
                        {"max_noise", s.max_noise}, {"max_time_ms", s.max_time_ms},
                        {"max_wall_ms", s.max_wall_ms}, {"warmup_runs", s.warmup_runs}, {"flush_l2", s.flush_l2},
                        {"input_seed", s.input_seed}}},
          {"fault", to_string(r.fault)},
          {"vendor", r.vendor}};
}

MeasureRequest measure_request_from_json(const nlohmann::json& j) {
  MeasureRequest r;
  r.device = j.at("device").get<std::string>();
  r.cubin = base64_decode(j.at("cubin").get<std::string>());
  r.kernel_name = j.at("kernel_name").get<std::string>();
  r.launch = launch_from(j.at("launch"));
  for (const auto& b : j.at("buffers"))
    r.buffers.push_back({b.at("name").get<std::string>(), b.at("elements").get<int64_t>(),
                         templates::dtype_from_string(b.at("dtype").get<std::string>()), b.at("output").get<bool>(), b.value("workspace", false)});
  for (const auto& m : j.value("tensor_maps", nlohmann::json::array()))
    r.tensor_maps.push_back({m.at("buffer").get<int>(), m.at("dims").get<std::vector<uint64_t>>(),
                             m.at("strides_bytes").get<std::vector<uint64_t>>(), m.at("box").get<std::vector<uint32_t>>(),
                             m.at("swizzle_bytes").get<int>(),
                             m.value("element_strides", std::vector<uint32_t>{})});
  r.scalar_args = j.at("scalar_args").get<std::vector<int32_t>>();
  r.reference_cubin = base64_decode(j.at("reference_cubin").get<std::string>());
  r.reference_kernel_name = j.at("reference_kernel_name").get<std::string>();
  r.reference_launch = launch_from(j.at("reference_launch"));
  r.tolerance = j.at("tolerance").get<double>();
  r.flops = j.at("flops").get<double>();
  r.profile = j.at("profile").get<costmodel::KernelProfile>();
  r.resources = j.at("resources").get<costmodel::KernelResources>();
  const auto& s = j.at("settings");
  r.settings.min_time_ms = s.at("min_time_ms").get<double>();
  r.settings.min_repeats = s.at("min_repeats").get<int>();
  r.settings.max_repeats = s.at("max_repeats").get<int>();
  r.settings.max_noise = s.at("max_noise").get<double>();
  r.settings.max_time_ms = s.at("max_time_ms").get<double>();
  r.settings.max_wall_ms = s.at("max_wall_ms").get<double>();
  r.settings.warmup_runs = s.at("warmup_runs").get<int>();
  r.settings.flush_l2 = s.at("flush_l2").get<bool>();
  r.settings.input_seed = s.at("input_seed").get<uint64_t>();
  r.fault = injected_fault_from_string(j.at("fault").get<std::string>());
  r.vendor = j.value("vendor", "");
  return r;
}

nlohmann::json to_json(const MeasurePhases& p) {
  return {{"module_load_s", p.module_load_s}, {"inputs_s", p.inputs_s}, {"reference_s", p.reference_s},
          {"check_s", p.check_s}, {"timed_s", p.timed_s}};
}

MeasurePhases measure_phases_from_json(const nlohmann::json& j) {
  MeasurePhases p;
  p.module_load_s = j.at("module_load_s").get<double>();
  p.inputs_s = j.at("inputs_s").get<double>();
  p.reference_s = j.at("reference_s").get<double>();
  p.check_s = j.at("check_s").get<double>();
  p.timed_s = j.at("timed_s").get<double>();
  return p;
}

MeasureResult infrastructure_failure(const std::string& message) {
  MeasureResult r;
  r.status = "unknown";
  r.message = message;
  r.infrastructure_failure = true;
  return r;
}

nlohmann::json to_json(const MeasureResult& r) {
  nlohmann::json j = {{"status", r.status},     {"message", r.message},       {"time_ms", r.time_ms},
                      {"spread_ms", r.spread_ms}, {"repeats", r.repeats},     {"max_error", r.max_error},
                      {"estimate", r.estimate}, {"context_lost", r.context_lost}, {"phases", to_json(r.phases)}};
  if (r.infrastructure_failure) j["infrastructure_failure"] = true;  // a remote rank's machinery failed
  if (!r.detail.empty()) j["detail"] = r.detail;
  return j;
}

MeasureResult measure_result_from_json(const nlohmann::json& j) {
  MeasureResult r;
  r.status = j.at("status").get<std::string>();
  r.message = j.at("message").get<std::string>();
  r.time_ms = j.at("time_ms").get<double>();
  r.spread_ms = j.at("spread_ms").get<double>();
  r.repeats = j.at("repeats").get<int>();
  r.max_error = j.at("max_error").get<double>();
  r.estimate = j.at("estimate").get<bool>();
  r.context_lost = j.at("context_lost").get<bool>();
  r.infrastructure_failure = j.value("infrastructure_failure", false);
  r.detail = j.value("detail", std::string());
  if (j.contains("phases")) r.phases = measure_phases_from_json(j.at("phases"));
  return r;
}

}  // namespace tuner
