#include "tuner/host_dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace tuner {

uint16_t f32_to_f16_bits(float v) {
  const uint32_t x = std::bit_cast<uint32_t>(v);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));  // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): value = m * 2^-24 with m = round(|v| * 2^24).
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24 (|v| = mant * 2^(exp-150), want mant * 2^(exp-150+24))
    uint32_t m = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is correct
  return static_cast<uint16_t>(sign | h);
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t f32_to_bf16_bits(float v) {
  const uint32_t x = std::bit_cast<uint32_t>(v);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint32_t nan_poison_word(templates::DType d) {
  switch (d) {
    case templates::DType::kF16: return 0x7E007E00u;
    case templates::DType::kBF16: return 0x7FC07FC0u;
    case templates::DType::kF32: break;
  }
  return 0x7FC00000u;
}

size_t padded_buffer_bytes(int64_t n, templates::DType d) {
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(templates::dtype_bytes(d));
  return std::max<size_t>(4, (bytes + 3) / 4 * 4);
}

std::string encode_elements(const std::vector<float>& values, templates::DType d) {
  std::string out(values.size() * static_cast<size_t>(templates::dtype_bytes(d)), '\0');
  if (d == templates::DType::kF32) {
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t b = d == templates::DType::kF16 ? f32_to_f16_bits(values[i]) : f32_to_bf16_bits(values[i]);
    std::memcpy(out.data() + 2 * i, &b, 2);
  }
  return out;
}

std::vector<double> decode_elements(const void* bytes, size_t n, templates::DType d) {
  std::vector<double> out(n);
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) {
    if (d == templates::DType::kF32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      out[i] = f;
    } else {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      out[i] = d == templates::DType::kF16 ? f16_bits_to_f32(b) : bf16_bits_to_f32(b);
    }
  }
  return out;
}

std::vector<float> random_inputs(size_t n, templates::DType d, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (auto& v : out) {
    v = dist(rng);
    if (d == templates::DType::kF16) v = f16_bits_to_f32(f32_to_f16_bits(v));
    if (d == templates::DType::kBF16) v = bf16_bits_to_f32(f32_to_bf16_bits(v));
    if (v == 0.0f) v = 0.5f;  // random inputs, never zeros
  }
  return out;
}

Comparison comparison_from(double max_abs_error, double max_abs_ref, bool non_finite) {
  Comparison c;
  c.non_finite = non_finite;
  // JSON has no inf or NaN: a non-finite output reports the largest finite error.
  c.max_error = non_finite ? std::numeric_limits<double>::max() : max_abs_error / std::max(max_abs_ref, 1e-30);
  return c;
}

Comparison compare_outputs(const std::vector<double>& out, const std::vector<double>& ref) {
  double ref_max = 0, err_max = 0;
  bool non_finite = out.size() != ref.size();
  for (size_t e = 0; e < out.size() && e < ref.size(); ++e) {
    ref_max = std::max(ref_max, std::fabs(ref[e]));
    const double err = std::fabs(out[e] - ref[e]);
    if (!(err <= std::numeric_limits<double>::max())) non_finite = true;  // NaN or inf
    else err_max = std::max(err_max, err);
  }
  return comparison_from(err_max, ref_max, non_finite);
}

}  // namespace tuner
