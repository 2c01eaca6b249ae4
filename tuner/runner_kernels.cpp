#include "tuner/runner_kernels.h"

#include <algorithm>
#include <string_view>

#include "templates/element_source.h"

namespace tuner {
namespace {

// The mix is splitmix64's finaliser; host and device compute it in the same 64-bit integer steps.
constexpr std::string_view kKernels = R"cuda(
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

extern "C" __global__ void fill_uniform(elem_t* p, unsigned long long n, unsigned long long seed, unsigned buffer) {
  const unsigned long long base = seed * 0x9E3779B97F4A7C15ull + static_cast<unsigned long long>(buffer) * 0xD1B54A32D192ED03ull;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    const long long k = static_cast<long long>(mix64(base + i) >> 40);  // 24 bits
    const float v = static_cast<float>(2 * k + 1 - 16777216) * 5.9604644775390625e-8f;  // exact: odd / 2^24
    p[i] = from_float(v);
  }
}

__device__ __forceinline__ unsigned warp_max(unsigned v) {
  for (int o = 16; o > 0; o /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

extern "C" __global__ void compare(const elem_t* out, const elem_t* ref, unsigned long long n, unsigned* result) {
  unsigned err_bits = 0, ref_bits = 0, bad = 0;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    const double o = static_cast<double>(to_float(out[i]));
    const double r = static_cast<double>(to_float(ref[i]));
    const double e = fabs(o - r);
    if (!(e <= 1.7976931348623157e308)) ++bad;  // NaN or inf
    else err_bits = max(err_bits, __float_as_uint(__double2float_ru(e)));
    const double a = fabs(r);
    if (a <= 1.7976931348623157e308) ref_bits = max(ref_bits, __float_as_uint(__double2float_ru(a)));
  }
  err_bits = warp_max(err_bits);
  ref_bits = warp_max(ref_bits);
  for (int o = 16; o > 0; o /= 2) bad += __shfl_xor_sync(0xffffffffu, bad, o);
  if (threadIdx.x % 32 == 0) {
    if (err_bits) atomicMax(&result[0], err_bits);  // non-negative floats order as their bits
    if (ref_bits) atomicMax(&result[1], ref_bits);
    if (bad) atomicAdd(&result[2], bad);
  }
}

extern "C" __global__ void checksum(const unsigned* words, unsigned long long n, unsigned long long* sum) {
  unsigned long long s = 0;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    s += static_cast<unsigned long long>(words[i]) * (2 * i + 1);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) atomicAdd(sum, s);
}
)cuda";

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::string runner_kernels_source(templates::DType d) {
  std::string out = "// tuner measurement worker kernels: fill, compare, checksum\n";
  out += templates::element_source(d);
  out.append(kKernels);
  return out;
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
