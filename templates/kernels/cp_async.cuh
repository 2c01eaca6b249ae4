// cp_async.cuh: the inline-PTX asynchronous global -> shared copies (sm_80+) the GEMM and conv kernels
// share: the shared address of a pointer, cp.async of 4, 8 or 16 bytes with zero-fill, commit and wait.
// Needs nothing else.
#pragma once

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool in_bounds) {
  const int bytes = in_bounds ? 16 : 0;  // src-size 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" : : "r"(dst), "l"(src), "r"(bytes) : "memory");
}
// kBytes (4, 8 or 16) bytes from src to shared address dst, both kBytes-aligned; zero-filled when
// !in_bounds (then src is not read, but must still be a valid address). 16-byte copies bypass L1.
template <int kBytes>
__device__ __forceinline__ void cp_async_bytes(unsigned dst, const void* src, bool in_bounds) {
  if constexpr (kBytes == 16) {
    cp_async16(dst, src, in_bounds);
  } else {
    const int bytes = in_bounds ? kBytes : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" : : "r"(dst), "l"(src), "n"(kBytes), "r"(bytes)
                 : "memory");
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" : : : "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" : : "n"(N) : "memory"); }
