// runner_kernels.cuh: the measurement worker's own kernels (tuner/runner_kernels.h): fill_uniform
// (random inputs from a counter-based hash, exact in every dtype), compare (max |out-ref|, max |ref|,
// NaN/inf count) and checksum (of guards and inputs). The mix is splitmix64's finaliser; the host
// twin in tuner/runner_kernels.cpp computes it in the same 64-bit integer steps. Defines: ELEM_F16 or
// ELEM_BF16 (or neither: f32).
#pragma once
#include "element.cuh"

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
