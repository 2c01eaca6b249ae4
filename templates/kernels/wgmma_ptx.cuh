// wgmma_ptx.cuh: inline PTX of the Hopper GEMM (gemm_wgmma.cuh): shared addresses, mbarriers, TMA bulk
// tensor copies, wgmma fences and descriptors, register reallocation (setmaxnreg). sm_90a only.
#pragma once

// ---- inline PTX: shared addresses, mbarriers, TMA, wgmma, register reallocation ----
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" : : "r"(bar) : "memory");
}
// Returns once the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
// A box of the 3-D tensor map at (c0, c1, c2) into shared memory at dst; completes tx bytes on bar.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
      : : "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
// A box of the 4-D tensor map at (c0, c1, c2, c3) into shared memory at dst; completes tx bytes on bar.
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
      : : "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
// The same box multicast to the CTAs of the cluster in cta_mask: it lands at dst and completes its bytes
// on the mbarrier at bar's offset in each of them.
__device__ __forceinline__ void tma_load_3d_multicast(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1,
                                                      int c2, unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;"
      : : "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "h"(cta_mask)
      : "memory");
}
// ---- thread-block clusters ----
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster arrives (release) and waits for all (acquire); threads need
// not be converged (no .aligned).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" : : : "memory");
}
// Arrives on the mbarrier at the offset of bar in the cluster's CTA `rank` (the default release
// semantics at CTA scope, as CUTLASS's cluster barriers arrive: a cluster-scope release per arrival
// cost the consumers most of their time on an H200).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile(
      "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %0, %1;"
      " mbarrier.arrive.shared::cluster.b64 _, [remote]; }"
      : : "r"(bar), "r"(rank) : "memory");
}
// The address of the same shared location in the cluster's CTA `rank` (a shared::cluster address).
__device__ __forceinline__ unsigned cluster_addr(unsigned local, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}
// Four floats into another CTA's shared memory (distributed shared memory at a shared::cluster address,
// 16-byte aligned).
__device__ __forceinline__ void st_cluster_f32x4(unsigned remote, float a, float b, float c, float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" : : "r"(remote), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}
// Arrives on an mbarrier of another CTA with release at cluster scope: this thread's earlier stores into
// that CTA's shared memory are visible to whoever then waits on the barrier with acquire at cluster scope.
__device__ __forceinline__ void mbar_arrive_release_cluster(unsigned remote_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" : : "r"(remote_bar) : "memory");
}
// mbar_wait with acquire at cluster scope: sees the stores other CTAs released with their arrivals.
__device__ __forceinline__ void mbar_wait_acquire_cluster(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" : : : "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory"); }
// Waits until at most N committed wgmma groups of this warp are still pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" : : "n"(N) : "memory"); }
// Keeps the compiler from moving accesses of an accumulator across the asynchronous wgmma.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r) : : "memory"); }
// fence_operand on every accumulator of a consumer thread's m64 tiles.
template <int M, int N>
__device__ __forceinline__ void fence_accumulators(float (&acc)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int e = 0; e < N; ++e) fence_operand(acc[i][e]);
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" : : "n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" : : "n"(N)); }

// Shared-matrix descriptor: start address, leading and stride byte offsets (all in 16-byte units, 14
// bits each), base offset 0 (every pattern starts aligned to its repeat: 1024 bytes for the 128-byte
// swizzle, 512 for the 64-byte one), layout type 1 (128-byte swizzle, the default) or 2 (64-byte).
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned layout = 1) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (static_cast<unsigned long long>(layout) << 62);
}

// Named barrier 1 over kCount threads (the consumer warpgroups, while the producer's have left).
template <int kCount>
__device__ __forceinline__ void named_barrier_sync() {
  asm volatile("bar.sync 1, %0;" : : "n"(kCount) : "memory");
}
// A global load that bypasses L1: another CTA's split-K partial, written before its fence.
__device__ __forceinline__ float ld_cg_f32(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ float4 ld_cg_f32x4(const float* p) {  // 16-byte aligned
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
