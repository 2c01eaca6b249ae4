// Host-side element types for the measurement worker: conversion of fp32
// values to and from the bit patterns of f16 (IEEE binary16) and bf16, the
// NaN word that poisons an output buffer of each dtype, and the comparison of
// an output with its reference (max |out - ref| / max |ref|, NaN never passes).
//
// Pure functions with no CUDA dependency, so they are tested on machines
// without a GPU; tuner/cuda_runner.cpp moves the bytes they produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "templates/workload.h"

namespace tuner {

/// fp32 -> binary16 bits, round to nearest even (overflow to inf, NaN stays NaN, subnormals kept).
uint16_t f32_to_f16_bits(float v);
/// binary16 bits -> fp32 (exact).
float f16_bits_to_f32(uint16_t h);
/// fp32 -> bfloat16 bits, round to nearest even (NaN stays a quiet NaN).
uint16_t f32_to_bf16_bits(float v);
/// bfloat16 bits -> fp32 (exact).
float bf16_bits_to_f32(uint16_t b);

/// The 32-bit word whose repetition fills a buffer of `d` with quiet NaNs: 0x7FC00000 for f32,
/// 0x7E007E00 for f16 (two halves 0x7E00), 0x7FC07FC0 for bf16 (two 0x7FC0).
uint32_t nan_poison_word(templates::DType d);

/// Device bytes of `n` elements of `d`, rounded up to whole 32-bit words (what the runner allocates
/// and poisons, so an odd count of 2-byte elements is poisoned to the last one).
size_t padded_buffer_bytes(int64_t n, templates::DType d);

/// fp32 values as the bytes of a buffer of `d` (values rounded to nearest even).
std::string encode_elements(const std::vector<float>& values, templates::DType d);
/// The first `n` elements of a buffer of `d` as doubles (exact).
std::vector<double> decode_elements(const void* bytes, size_t n, templates::DType d);

/// `n` uniform random values in [-1, 1], never zero after rounding to `d` (so the inputs a kernel
/// reads are never zeros either); each value is exactly representable in `d`.
std::vector<float> random_inputs(size_t n, templates::DType d, std::mt19937_64& rng);

/// The outcome of comparing an output with its reference.
struct Comparison {
  double max_error = 0;     ///< max |out - ref| / max |ref| (max double when any output is NaN or inf).
  bool non_finite = false;  ///< Some output is NaN or inf where the reference is finite, or any is NaN.
  /// True when the output passes: finite everywhere and max_error <= tolerance.
  bool passes(double tolerance) const { return !non_finite && max_error <= tolerance; }
};

/// The verdict from the largest finite |out - ref|, the largest |ref| and whether any difference is
/// NaN or inf (what compare_outputs and the worker's compare kernel both reduce to).
Comparison comparison_from(double max_abs_error, double max_abs_ref, bool non_finite);

/// Compares `out` with `ref` element by element (sizes must match).
Comparison compare_outputs(const std::vector<double>& out, const std::vector<double>& ref);

}  // namespace tuner
