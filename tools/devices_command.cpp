#include <iostream>

#include "tools/cli_common.h"
#include "tools/options.h"
#include "tuner/device_registry.h"

namespace tuner::cli {

int devices_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  po::options_description desc("tuner devices: list real GPUs and sim devices");
  desc.add_options()("help,h", "show this help")("json", "one JSON document on stdout");
  po::variables_map vm;
  if (!parse_options("devices", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }
  std::string note;
  auto devices = list_devices(&note);
  if (vm.count("json")) {
    nlohmann::ordered_json out;
    out["devices"] = nlohmann::ordered_json::array();
    for (const auto& d : devices) {
      nlohmann::ordered_json j;
      j["device"] = d.spec;
      j["name"] = d.simulated ? d.gpu.name : d.identity.name;
      j["simulated"] = d.simulated;
      j["compute_capability"] = std::to_string(d.identity.cc_major) + "." + std::to_string(d.identity.cc_minor);
      j["arch"] = d.limits.arch;
      j["sm_count"] = d.identity.sm_count;
      j["memory_bytes"] = d.identity.memory_bytes;
      j["driver_version"] = d.identity.driver_version;
      j["nvrtc_version"] = d.identity.nvrtc_version;
      out["devices"].push_back(j);
    }
    out["cuda_note"] = note;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : devices) {
    rows.push_back({d.spec, d.simulated ? d.gpu.name + " (analytic estimate)" : d.identity.name,
                    std::to_string(d.identity.cc_major) + "." + std::to_string(d.identity.cc_minor),
                    std::to_string(d.identity.sm_count), fixed(d.identity.memory_bytes / 1e9, 1),
                    d.identity.driver_version, d.identity.nvrtc_version});
  }
  print_table({"device", "name", "cc", "SMs", "memory GB", "driver", "nvrtc"}, rows);
  if (!note.empty()) std::cout << "no real GPU: " << note << "\n";
  return 0;
}

}  // namespace tuner::cli
