// device_limits.h: the limits a config space is constrained by (templates::DeviceLimits) for a GPU
// of the spec table (sim devices, records of absent GPUs) and for a GPU the driver reports. Used by the device registry of `tuner`
// and by the runtime library, which must judge a tuned config valid exactly as the tuner did.
#pragma once

#include <optional>
#include <string>

#include "costmodel/gpu_spec.h"
#include "db/tuning_db.h"
#include "templates/kernel_template.h"
#include "tuner/cuda_devices.h"

namespace tuner {

/// The limits a config space is constrained by on a GPU of the spec table.
templates::DeviceLimits limits_of(const costmodel::GpuSpec& g);

/// The limits on a GPU the driver reports: the architecture, threads per block and opt-in shared memory
/// as the driver reads them; the register limits of sm_80 and sm_90 (DeviceLimits' defaults).
templates::DeviceLimits limits_of(const CudaDeviceInfo& info);

/// The spec-table entry of a device known only from its records: that of a "sim:<key>" name, else the
/// entry matching compute capability and SM count (and the model in the name: "NVIDIA H200", "replay:NVIDIA H200");
/// nullopt for a GPU the table does not have.
std::optional<costmodel::GpuSpec> spec_of_recorded(const std::string& name, int cc_major, int cc_minor, int sm_count);

/// The spec-table entry of the GPU a recording was made on: a real GPU by its identity (recordings made on an H200
/// before the table had one name h100-sxm as their key), a sim device's recording by its key.
std::optional<costmodel::GpuSpec> spec_of_recording(const db::DeviceIdentity& device, const std::string& gpu_key);

/// The limits of a device known only from its records (no GPU needed): those of spec_of_recorded's entry,
/// else DeviceLimits' defaults with the architecture of the compute capability (when known).
templates::DeviceLimits limits_of_recorded(const std::string& name, int cc_major, int cc_minor, int sm_count);

}  // namespace tuner
