#include "templates/element_source.h"

#include <string_view>

namespace tuner::templates {
namespace {

constexpr std::string_view kF32 = R"cuda(// ---- element type: f32 ----
typedef float elem_t;
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float from_float(float v) { return v; }
)cuda";

constexpr std::string_view kF16 = R"cuda(// ---- element type: f16 (IEEE binary16 bits) ----
typedef unsigned short elem_t;
__device__ __forceinline__ float to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short from_float(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
)cuda";

constexpr std::string_view kBF16 = R"cuda(// ---- element type: bf16 (bfloat16 bits) ----
typedef unsigned short elem_t;
__device__ __forceinline__ float to_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}
__device__ __forceinline__ unsigned short from_float(float f) {
  unsigned short b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}
)cuda";

constexpr std::string_view kVec = R"cuda(
// V consecutive elements, aligned for one wide load or store.
template <int V>
struct alignas(V * sizeof(elem_t)) ElemVec {
  elem_t v[V];
};
)cuda";

}  // namespace

std::string element_source(DType d) {
  std::string out(d == DType::kF32 ? kF32 : d == DType::kF16 ? kF16 : kBF16);
  out.append(kVec);
  return out;
}

std::string element_source_text() {
  std::string out;
  out.append(kF32).append(kF16).append(kBF16).append(kVec);
  return out;
}

}  // namespace tuner::templates
