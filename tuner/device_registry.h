// The device registry: turns "cuda:N", "sim:<gpu>" and "replay:<file>" into a DeviceTarget
// (identity for the database, limits for the config space, the GPU spec the
// sim model reads) and lists every device this machine offers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "db/tuning_db.h"
#include "templates/kernel_template.h"
#include "tuner/device_limits.h"
#include "tuner/replay_data.h"

namespace tuner {

struct DeviceTarget {
  std::string spec;               ///< As the user wrote it: "cuda:0", "sim:h100-sxm".
  bool simulated = false;         ///< No live GPU (sim: and replay: devices).
  int ordinal = 0;                ///< GPU ordinal for cuda devices.
  costmodel::GpuSpec gpu;         ///< The spec-table entry (for cuda: the one matching CC + SM count, or
                                  ///< figures read from the driver when the table has none).
  db::DeviceIdentity identity;    ///< What the database stores.
  templates::DeviceLimits limits; ///< What config spaces are constrained by.
  /// replay:<path> devices: the recorded space that answers every measurement (nothing is compiled or
  /// run). Stored as a simulated device named "replay:<recording GPU's name>".
  std::shared_ptr<const ReplayData> replay;
  /// Whether its times are the analytic model's: a sim device, or a replay of a recording a sim device made.
  bool estimates() const { return simulated && (!replay || replay->device.simulated); }
};

/// Resolves a device string; throws std::invalid_argument with one line naming the bad value and what
/// is allowed (malformed, unknown sim GPU, no driver, no such GPU).
DeviceTarget resolve_device(const std::string& spec);

/// Resolves "cuda:all" (every GPU of this host) and lists like "cuda:0,2,5" to one target per GPU, any other
/// spec to its one target. Throws std::invalid_argument naming the bad value: a malformed or repeated
/// ordinal, no driver, or GPUs that are not identical (name, compute capability, SMs, memory): their
/// records would be one device's in the database, so mixed GPUs are tuned as separate runs.
std::vector<DeviceTarget> resolve_devices(const std::string& spec);

/// Every real GPU (when a driver is present) and every sim device. *cuda_note says why no real GPU is
/// listed when none is.
std::vector<DeviceTarget> list_devices(std::string* cuda_note);

/// "cuda:0" when a GPU is present, else "sim:h100-sxm".
std::string default_device();

}  // namespace tuner
