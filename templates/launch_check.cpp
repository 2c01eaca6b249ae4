#include "templates/launch_check.h"

#include <cstdint>

namespace tuner::templates {

std::optional<std::string> launch_problem(const LaunchGeometry& g, int registers, int static_shared_bytes,
                                          const DeviceLimits& limits) {
  static const char* axis[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d) {
    if (g.grid[d] < 1) return std::string("grid ") + axis[d] + " is 0";
    if (g.grid[d] > limits.max_grid[d])
      return std::string("grid ") + axis[d] + " = " + std::to_string(g.grid[d]) + " > " +
             std::to_string(limits.max_grid[d]);
    if (g.block[d] < 1) return std::string("block ") + axis[d] + " is 0";
    if (g.block[d] > limits.max_block[d])
      return std::string("block ") + axis[d] + " = " + std::to_string(g.block[d]) + " > " +
             std::to_string(limits.max_block[d]);
  }
  const int64_t threads = int64_t{g.block[0]} * g.block[1] * g.block[2];
  if (threads > limits.max_threads_per_block)
    return "block of " + std::to_string(threads) + " threads > " + std::to_string(limits.max_threads_per_block);
  if (g.dynamic_shared_bytes < 0) return "negative dynamic shared memory";
  const int64_t shared = int64_t{static_shared_bytes} + g.dynamic_shared_bytes;
  if (shared > limits.max_shared_per_block_bytes)
    return "shared memory " + std::to_string(static_shared_bytes) + " static + " +
           std::to_string(g.dynamic_shared_bytes) + " dynamic bytes > the opt-in maximum " +
           std::to_string(limits.max_shared_per_block_bytes);
  if (registers > limits.max_registers_per_thread)
    return std::to_string(registers) + " registers per thread > " + std::to_string(limits.max_registers_per_thread);
  const int64_t warps = (threads + 31) / 32;
  const int64_t block_registers = int64_t{(registers + 7) / 8 * 8} * warps * 32;
  if (block_registers > limits.registers_per_block)
    return std::to_string(registers) + " registers x " + std::to_string(warps * 32) + " threads = " +
           std::to_string(block_registers) + " > " + std::to_string(limits.registers_per_block) +
           " registers per block";
  return std::nullopt;
}

}  // namespace tuner::templates
