#include "tuner/runner_kernels.h"

#include <algorithm>
#include <string_view>

#include "templates/kernel_files.h"

namespace tuner {
namespace {

// The mix is splitmix64's finaliser; the device twin (templates/kernels/runner_kernels.cuh) computes it
// in the same 64-bit integer steps.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::string runner_kernels_source(templates::DType d) {
  return templates::KernelSource("runner_kernels.cuh", "tuner measurement worker kernels: fill, compare, checksum")
      .element(d)
      .str();
}

float uniform_input(uint64_t seed, uint32_t buffer, uint64_t index) {
  const uint64_t base = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(buffer) * 0xD1B54A32D192ED03ull;
  const int64_t k = static_cast<int64_t>(mix64(base + index) >> 40);
  return static_cast<float>(2 * k + 1 - 16777216) * 5.9604644775390625e-8f;
}

size_t guard_bytes(size_t payload) {
  constexpr size_t kMin = size_t{64} << 10, kMax = size_t{16} << 20;
  const size_t g = std::min(kMax, std::max(kMin, payload / 8));
  return (g + 255) / 256 * 256;
}

uint64_t word_checksum(const uint32_t* words, uint64_t n) {
  uint64_t s = 0;
  for (uint64_t i = 0; i < n; ++i) s += static_cast<uint64_t>(words[i]) * (2 * i + 1);
  return s;
}

}  // namespace tuner
