// tc_ptx.cuh: inline-PTX helpers of the tensor-core kernels (gemm_tc.cuh, conv2d_tc.cuh): shared
// addresses and cp.async (cp_async.cuh), the XOR swizzle, ldmatrix and mma.sync m16n8k16. The includer defines elem_t
// (element.cuh) and `constexpr bool kBf16` before including it.
#pragma once
#include "cp_async.cuh"

// ---- inline-PTX helpers (need elem_t and kBf16) ----
// XOR swizzle of 16-byte chunk c in row `row` of a shared tile with `cpr` chunks per row: within
// each 128-byte line group, eight consecutive rows read the same logical chunk from eight banks.
__device__ __forceinline__ int swz(int row, int c, int cpr) {
  return cpr >= 8 ? (c ^ (row & 7)) : (c ^ ((row / (8 / cpr)) & (cpr - 1)));
}

// 8 elements at p (columns col.. of a row of length len), guarded, as one 16-byte chunk.
__device__ __forceinline__ uint4 load_chunk_guarded(const elem_t* p, int col, int len, bool row_ok) {
  unsigned short h[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) h[e] = (row_ok && col + e < len) ? *reinterpret_cast<const unsigned short*>(p + e) : 0;
  uint4 v;
  v.x = h[0] | (static_cast<unsigned>(h[1]) << 16);
  v.y = h[2] | (static_cast<unsigned>(h[3]) << 16);
  v.z = h[4] | (static_cast<unsigned>(h[5]) << 16);
  v.w = h[6] | (static_cast<unsigned>(h[7]) << 16);
  return v;
}

__device__ __forceinline__ void st_shared16(unsigned addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" : : "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (kBf16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ float ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

