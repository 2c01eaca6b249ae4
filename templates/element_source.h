// CUDA source snippets for the element types of kernel templates (f32, f16,
// bf16) that compile under NVRTC without any #include: the storage type
// `elem_t`, conversions to and from float (inline PTX cvt for f16 and bf16,
// round to nearest even), and an aligned vector of VEC elements for wide
// global loads. Every template that takes f16/bf16 buffers prepends this.
//
// Not responsible for tensor-core fragments (gemm_tc_source.h has its own) or
// for any host-side conversion (tuner/host_dtype.h).
#pragma once

#include <string>

#include "templates/workload.h"

namespace tuner::templates {

/// Defines `elem_t`, `__device__ float to_float(elem_t)`, `__device__ elem_t from_float(float)`
/// and `template <int V> struct alignas(V * sizeof(elem_t)) ElemVec { elem_t v[V]; }` for `d`.
/// f32: elem_t = float. f16: unsigned short bits, cvt.f32.f16 / cvt.rn.f16.f32.
/// bf16: unsigned short bits, shift / cvt.rn.bf16.f32 (sm_80 and later).
std::string element_source(DType d);

/// The text of every dtype's snippet (for template version hashes).
std::string element_source_text();

}  // namespace tuner::templates
