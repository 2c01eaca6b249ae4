// cuda_devices.h: the GPUs the CUDA driver reports, with the identity the database stores and the
// figures config spaces are constrained by. Declared here without cuda.h so that any part of the
// project may ask which GPUs exist; the driver itself is loaded at run time (cuda_driver.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tuner {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int l2_bytes = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block_optin = 0;  ///< Bytes of dynamic shared memory a block may opt in to.
  int registers_per_block = 0;         ///< 32-bit registers a block may hold.
  int clock_khz = 0;
  std::string driver_version;          ///< "13.0"
};

/// Real GPUs. When the driver is absent or fails to initialise, returns empty and sets *error
/// to one line saying why.
std::vector<CudaDeviceInfo> cuda_devices(std::string* error);

}  // namespace tuner
