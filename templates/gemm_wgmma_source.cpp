#include "templates/gemm_wgmma_source.h"

#include <string_view>

#include "templates/element_source.h"
#include "templates/gemm_tc_source.h"
#include "templates/output_tile_source.h"

namespace tuner::templates {
namespace {

constexpr std::string_view kConstants = R"cuda(
// ---- tiling, baked in at generation time ----
constexpr int kBM = @BM@, kBN = @BN@, kBK = 64;  // block tile; k-tile = the 128-byte swizzle span
constexpr int kConsumers = @CONSUMERS@;          // consumer warpgroups
constexpr int kStages = @STAGES@;                // shared-buffer ring depth
constexpr int kGroupM = @GROUP_M@;               // block-rows swept together
constexpr int kConsumerRegs = @CONSUMER_REGS@;   // setmaxnreg.inc of the consumers
// Shared-memory geometry in bytes (WgmmaSmemLayout): descriptor strides and start-address steps.
constexpr unsigned kASbo = @A_SBO@, kALbo = @A_LBO@, kAK16Step = @A_K16@, kAM64Step = @A_M64@;
constexpr unsigned kBSbo = @B_SBO@, kBLbo = @B_LBO@, kBK16Step = @B_K16@;
typedef @OUT_T@ out_t;                           // C's element type
)cuda";

constexpr std::string_view kTensorMap = R"cuda(
// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed by value as a grid constant.
struct alignas(64) TensorMap { unsigned long long opaque[16]; };
)cuda";

constexpr std::string_view kPtx = R"cuda(
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
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" : : : "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory"); }
// Waits until at most N committed wgmma groups of this warp are still pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" : : "n"(N) : "memory"); }
// Keeps the compiler from moving accesses of an accumulator across the asynchronous wgmma.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r) : : "memory"); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" : : "n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" : : "n"(N)); }

// Shared-matrix descriptor, 128-byte swizzle: start address, leading and stride byte offsets (all
// in 16-byte units, 14 bits each), base offset 0 (every pattern starts 1024-byte aligned).
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (1ull << 62);
}
)cuda";

constexpr std::string_view kBody = R"cuda(
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kRowsPerConsumer = kBM / kConsumers;
constexpr int kMSub = kRowsPerConsumer / 64;      // m64 wgmma tiles per consumer
constexpr int kAcc = kBN / 2;                     // fp32 accumulators per thread per m64 tile
constexpr int kABytes = kBM * kBK * 2;            // one stage of A: kBM rows of 128 bytes
constexpr int kBBoxBytes = 64 * kBK * 2;          // one 64-column box of B: kBK rows of 128 bytes
static_assert(kBLbo == kBBoxBytes && kAM64Step == 64 * kBK * 2, "the layout's strides are the boxes' sizes");
constexpr int kBBytes = (kBN / 64) * kBBoxBytes;
constexpr int kStageBytes = kABytes + kBBytes;
static_assert(kRowsPerConsumer % 64 == 0, "each consumer owns whole m64 tiles");
static_assert(kBN % 64 == 0 && kBN <= 256, "bn: 64-column boxes, wgmma n <= 256");
static_assert(kBM <= 256, "TMA box rows <= 256");
static_assert(kStages >= 2 && kStages <= 6, "stages 2..6");
static_assert(kABytes % 1024 == 0 && kBBoxBytes % 1024 == 0, "swizzle patterns stay 1024-byte aligned");

extern "C" __global__ void __launch_bounds__(kThreads, 1)
gemm_tc_wgmma(const elem_t* __restrict__ A, const elem_t* __restrict__ B, out_t* __restrict__ C,
              const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char wgmma_smem[];
  __shared__ __align__(8) unsigned long long full_bar[kStages];   // the stage's copies have landed
  __shared__ __align__(8) unsigned long long empty_bar[kStages];  // every consumer warp is done with it
  // The ring starts at the first 1024-byte boundary (the launch asks for 1024 spare bytes).
  const unsigned ring = (smem_u32(wgmma_smem) + 1023u) & ~1023u;

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      mbar_init(smem_u32(&empty_bar[s]), 4 * kConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();

  const int batch = static_cast<int>(blockIdx.z);
  const int grid_m = (M + kBM - 1) / kBM;
  const int grid_n = (N + kBN - 1) / kBN;
  const int bid = static_cast<int>(blockIdx.x);
  int block_row, block_col;
  raster_block<kGroupM>(bid, grid_m, grid_n, block_row, block_col);
  const int row0 = block_row * kBM, col0 = block_col * kBN;
  const int k_tiles = (K + kBK - 1) / kBK;

  if (warpgroup == 0) {
    // Producer: one thread keeps the ring full; the rest of the warpgroup idles with few registers.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      // B boxes wholly past N are not fetched (their columns are never stored): TMA's zero fill is
      // documented for boxes that overlap the tensor, not for boxes entirely outside it.
      const int b_boxes_left = (N - col0 + 63) / 64;
      const int b_boxes = b_boxes_left < kBN / 64 ? b_boxes_left : kBN / 64;
      const unsigned stage_tx = static_cast<unsigned>(kABytes + b_boxes * kBBoxBytes);
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        if (kt >= kStages) mbar_wait(smem_u32(&empty_bar[s]), static_cast<unsigned>((kt / kStages - 1) & 1));
        const unsigned bar = smem_u32(&full_bar[s]);
        const unsigned a_dst = ring + static_cast<unsigned>(s * kStageBytes);
        mbar_arrive_expect_tx(bar, stage_tx);  // out-of-bounds parts of a box count too (zero-filled)
        tma_load_3d(a_dst, &tmap_a, bar, kt * kBK, row0, batch);
        for (int j = 0; j < b_boxes; ++j)
          tma_load_3d(a_dst + kABytes + j * kBLbo, &tmap_b, bar, col0 + j * 64, kt * kBK, batch);
      }
    }
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int consumer = warpgroup - 1;
  const int ctid = tid % 128;
  const int warp = ctid / 32, lane = ctid % 32;
  float acc[kMSub][kAcc];
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[i][e] = 0.0f;

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kStages;
    mbar_wait(smem_u32(&full_bar[s]), static_cast<unsigned>((kt / kStages) & 1));
    const unsigned a_base = ring + static_cast<unsigned>(s * kStageBytes + consumer * kRowsPerConsumer * 128);
    const unsigned b_base = ring + static_cast<unsigned>(s * kStageBytes + kABytes);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      // A (K-major): 8-row groups kASbo apart, kAK16Step bytes per k16 step within the 128-byte row.
      // B (N-major): 8 k-row groups kBSbo apart, 64-column boxes kBLbo apart, kBK16Step per k16 step.
      const unsigned long long db = smem_desc(b_base + kk * kBK16Step, kBLbo, kBSbo);
#pragma unroll
      for (int i = 0; i < kMSub; ++i)
        wgmma_tile(acc[i], smem_desc(a_base + i * kAM64Step + kk * kAK16Step, kALbo, kASbo), db);
    }
    wgmma_commit();
    // Keep this k-tile's wgmmas in flight; once the previous tile's have finished, release its stage.
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < kMSub; ++i)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) fence_operand(acc[i][e]);
    if (kt > 0 && lane == 0) mbar_arrive(smem_u32(&empty_bar[(kt - 1) % kStages]));
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) fence_operand(acc[i][e]);

  // Accumulator e of m64 tile i: row warp*16 + lane/4 + 8*((e/2)%2), column 8*(e/4) + 2*(lane%4) + e%2.
  const bool pair_ok = N % 2 == 0;
#pragma unroll
  for (int i = 0; i < kMSub; ++i)
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + consumer * kRowsPerConsumer + i * 64 + warp * 16 + lane / 4 + h * 8;
        const int c = col0 + j * 8 + (lane % 4) * 2;
        if (r >= M) continue;
        store_pair(C + static_cast<size_t>(batch) * M * N + static_cast<size_t>(r) * N + c,
                   to_out(acc[i][j * 4 + h * 2]), to_out(acc[i][j * 4 + h * 2 + 1]), c, N, pair_ok);
      }
}
)cuda";

/// wgmma_tile(float (&d)[bn/2], a_desc, b_desc): D += A·B for one m64 x bn x k16 step, A K-major and
/// B N-major (imm-trans-b 1), both from shared memory. The operand list depends on bn, so it is generated.
std::string wgmma_tile_source(int bn, DType d) {
  const int regs = bn / 2;
  const std::string type = d == DType::kBF16 ? "bf16" : "f16";
  std::string list, operands;
  for (int i = 0; i < regs; ++i) {
    list += (i ? ", %" : "%") + std::to_string(i);
    operands += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
  }
  const std::string a = std::to_string(regs), b = std::to_string(regs + 1), scale = std::to_string(regs + 2);
  return "__device__ __forceinline__ out_t to_out(float v) {\n"
         "  if constexpr (sizeof(out_t) == 4) return v;\n"
         "  else return from_float(v);\n"
         "}\n"
         "__device__ __forceinline__ void wgmma_tile(float (&d)[" + std::to_string(regs) +
         "], unsigned long long a_desc, unsigned long long b_desc) {\n"
         "  asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %" + scale + ", 0; wgmma.mma_async.sync.aligned.m64n" +
         std::to_string(bn) + "k16.f32." + type + "." + type + " {" + list + "}, %" + a + ", %" + b +
         ", p, 1, 1, 0, 1; }\"\n"
         "               : " + operands + "\n"
         "               : \"l\"(a_desc), \"l\"(b_desc), \"r\"(1));\n"
         "}\n";
}

std::string out_type(bool out_f32) { return out_f32 ? "float" : "elem_t"; }

}  // namespace

WgmmaSmemLayout wgmma_smem_layout() { return {}; }

int wgmma_threads(const WgmmaTiling& t) { return 128 * (1 + t.consumers); }

size_t wgmma_shared_bytes(const WgmmaTiling& t) {
  return static_cast<size_t>(t.stages) * static_cast<size_t>(t.bm + t.bn) * kWgmmaBk * 2 + 1024;
}

int wgmma_accumulators(const WgmmaTiling& t) { return (t.bm / t.consumers / 64) * t.bn / 2; }

int wgmma_consumer_registers(const WgmmaTiling& t) {
  // The CTA's pool is what the launch gave it (ptxas's count times the threads). The producer keeps
  // 40; two consumers share the rest of a 168-register launch (128*40 + 256*232 = 168*384); one
  // consumer fits 240 in a launch of 140 or more (128*40 + 128*240 = 140*256).
  return t.consumers == 1 ? 240 : 232;
}

std::string gemm_wgmma_source(const WgmmaTiling& t) {
  std::string constants(kConstants);
  replace_all(constants, "@BM@", std::to_string(t.bm));
  replace_all(constants, "@BN@", std::to_string(t.bn));
  replace_all(constants, "@CONSUMERS@", std::to_string(t.consumers));
  replace_all(constants, "@STAGES@", std::to_string(t.stages));
  replace_all(constants, "@GROUP_M@", std::to_string(t.group_m));
  replace_all(constants, "@CONSUMER_REGS@", std::to_string(wgmma_consumer_registers(t)));
  const WgmmaSmemLayout l = wgmma_smem_layout();
  replace_all(constants, "@A_SBO@", std::to_string(l.a_sbo));
  replace_all(constants, "@A_LBO@", std::to_string(l.a_lbo));
  replace_all(constants, "@A_K16@", std::to_string(l.a_k16_step));
  replace_all(constants, "@A_M64@", std::to_string(l.a_m64_step));
  replace_all(constants, "@B_SBO@", std::to_string(l.b_sbo));
  replace_all(constants, "@B_LBO@", std::to_string(l.b_lbo));
  replace_all(constants, "@B_K16@", std::to_string(l.b_k16_step));
  replace_all(constants, "@OUT_T@", out_type(t.out_f32 != 0));
  std::string out =
      "// gemm_tc_wgmma: Hopper GEMM (TMA + wgmma, warp-specialised), generated by "
      "tuner::templates::gemm_wgmma_source().\n";
  out += element_source(t.dtype);
  out.append(constants).append(kTensorMap).append(kPtx);
  out += wgmma_tile_source(t.bn, t.dtype);
  out.append(output_tile_source()).append(kBody);
  return out;
}

std::string gemm_wgmma_reference_source(DType d, bool out_f32) {
  // gemm_tc's reference, with this kernel's arguments in place of the workspace pointer.
  std::string ref = gemm_tc_reference_source(d, out_f32);
  const std::string_view workspace = "float* workspace";
  const size_t at = ref.find(workspace);
  if (at != std::string::npos) ref.replace(at, workspace.size(), "const TensorMap tmap_a, const TensorMap tmap_b");
  return std::string(kTensorMap) + ref;
}

std::string gemm_wgmma_template_text() {
  std::string out = element_source_text();
  out.append(kConstants).append(kTensorMap).append(kPtx);
  out += wgmma_tile_source(64, DType::kF16);
  out.append(output_tile_source()).append(kBody);
  out += gemm_wgmma_reference_source(DType::kF16, false);
  return out;
}

}  // namespace tuner::templates
