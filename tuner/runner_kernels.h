// The measurement worker's own device kernels, and their host twins.
//
// On a GPU the worker fills inputs, compares outputs with the reference and
// checks that nothing outside the outputs was written without copying
// buffers to the host (at 8192^3 a host round trip of every input and output
// cost seconds per config). The kernels come as CUDA source for one element
// type (templates/kernels/runner_kernels.cuh and element.cuh), compiled by NVRTC once per worker and
// dtype (through the on-disk cache):
//
//   fill_uniform(elem_t* p, unsigned long long n, unsigned long long seed, unsigned buffer)
//       element i = uniform_input(seed, buffer, i) rounded to elem_t: odd multiples of 2^-24 in
//       (-1, 1), so never zero, in f32, f16 or bf16 alike.
//   compare(const elem_t* out, const elem_t* ref, unsigned long long n, unsigned* result)
//       result[0] = bits of max |out - ref| over finite differences (float, rounded up),
//       result[1] = bits of max |ref|, result[2] = count of NaN/inf differences; result zeroed first.
//   checksum(const unsigned* words, unsigned long long n, unsigned long long* sum)
//       *sum += sum of words[i] * (2i + 1) mod 2^64: any one changed word changes it.
//
// Launch: fill and compare take any 1-D grid (grid-stride loops); 256 threads per block.
// The host twins (uniform_input, word_checksum; host_dtype.h's comparison_from) are what tests check
// on machines without a GPU, and what a GPU test compares the kernels with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "templates/workload.h"

namespace tuner {

inline constexpr const char* kFillKernelName = "fill_uniform";
inline constexpr const char* kCompareKernelName = "compare";
inline constexpr const char* kChecksumKernelName = "checksum";
inline constexpr unsigned kRunnerKernelThreads = 256;

/// The word that fills the guard regions around every buffer the worker allocates.
inline constexpr uint32_t kGuardWord = 0xA5C3E187u;

/// Bytes of guard on each side of a buffer of `payload` bytes: an eighth of it, at least 64 KiB and at
/// most 16 MiB, in whole 256-byte units (so the payload keeps the allocation's 256-byte alignment).
size_t guard_bytes(size_t payload);

/// The three kernels for elements of `d`.
std::string runner_kernels_source(templates::DType d);

/// Element i of input buffer `buffer` under `seed`, as an fp32 value before rounding to the dtype:
/// (2k + 1 - 2^24) / 2^24 with k the top 24 bits of a 64-bit mix of (seed, buffer, i).
float uniform_input(uint64_t seed, uint32_t buffer, uint64_t index);

/// The checksum kernel's result for `n` words (what a whole buffer sums to).
uint64_t word_checksum(const uint32_t* words, uint64_t n);

}  // namespace tuner
