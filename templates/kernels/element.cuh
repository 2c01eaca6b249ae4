// element.cuh: the element type of a kernel's buffers and its conversions to and from float.
// Define ELEM_F16 or ELEM_BF16 (to 1) before including it; neither means f32. f16 is IEEE binary16
// bits and bf16 bfloat16 bits in an unsigned short, converted with inline PTX cvt (round to nearest
// even; bf16 needs sm_80). Also ElemVec<V>: V elements aligned for one wide load or store.
// Not responsible for tensor-core fragments (tc_ptx.cuh) nor host-side conversion (tuner/host_dtype.h).
#pragma once

#if defined(ELEM_BF16)
// ---- element type: bf16 (bfloat16 bits) ----
typedef unsigned short elem_t;
__device__ __forceinline__ float to_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}
__device__ __forceinline__ unsigned short from_float(float f) {
  unsigned short b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}
#elif defined(ELEM_F16)
// ---- element type: f16 (IEEE binary16 bits) ----
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
#else
// ---- element type: f32 ----
typedef float elem_t;
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float from_float(float v) { return v; }
#endif

// V consecutive elements, aligned for one wide load or store.
template <int V>
struct alignas(V * sizeof(elem_t)) ElemVec {
  elem_t v[V];
};
