#include "costmodel/analytic_model.h"

#include <algorithm>
#include <cmath>

#include "costmodel/ring_gemm_model.h"
#include "costmodel/row_op_model.h"

namespace tuner::costmodel {

namespace {

constexpr int kRegisterAllocationUnit = 256;   // registers per warp are allocated in units of 256
constexpr double kGlobalLatencyCycles = 600;   // DRAM/L2 load latency a single-buffered slab exposes
constexpr double kBarrierCycles = 150;         // a __syncthreads drains the block's pipelines once per iteration
constexpr double kSpillTouchedPerStep = 0.5;   // share of spilled words loaded or stored per inner step
constexpr double kOverheadInstrPerStep = 2;    // address arithmetic and loop control per inner step
constexpr double kWarpsToHideFmaLatency = 32;  // resident warps x ILP needed per SM to keep lanes busy
constexpr double kFmaPerMmaThread = 64;        // FMAs per thread of one mma.sync.m16n8k16 (16*8*16 / 32)
constexpr double kFmaPerWgmmaThread = 1024;    // FMAs per thread of one wgmma.m64n128k16 (64*128*16 / 128)
// Assumption, not a measurement of ours: on Hopper the synchronous mma.sync path reaches only part of
// the tensor peak that wgmma reaches (public microbenchmarks report roughly 60-70%). To be calibrated
// with GPU measurements (issue 6).
constexpr double kMmaSyncShareOfHopperPeak = 0.65;
constexpr double kSubPartitionsPerSm = 4;  // warp schedulers (and tensor-core quarters) per SM
// A warp's mma.sync k-step waits on its own ldmatrix fragments and on the previous k-step's MMAs (a
// chain through the accumulators), so its scheduler's tensor pipe idles unless other warps have a
// k-step ready: a scheduler with w resident warps keeps the pipe busy w / (w + h) of the time, h being
// that latency in units of one warp's k-step work. h = 2 was chosen on the H100 mma.sync recording
// (4096^3 f16): random-half fits pick 2.5-3 for Spearman; 2 is the smaller, safer value. What it models:
// the 64x64 warp tiles need ~240 registers, one 8-warp CTA per SM (2 warps per scheduler), and run at
// 0.83-0.89 of the 32x64 warp tiles' two CTAs per SM (4 warps per scheduler) although their tiles reuse
// more. Only mma.sync on cc 9 (Hopper) takes it: no other recording to check it against yet.
constexpr double kMmaSyncLatencyWarps = 2.0;
// Per k-tile of an mma.sync main loop on Hopper: the __syncthreads, the cp.async.wait_group for the next
// stage and the first ldmatrix round trip of the new tile (its fragments cannot be fetched across the
// barrier) stall the block, hidden only by the other resident blocks; it makes short k-tiles (BK 16)
// dearer. Chosen on the same recording: 300-600 cycles all rank alike (random-half Spearman +0.014 over
// the generic 150-cycle barrier); 450, the middle.
constexpr double kMmaSyncKTileSyncCycles = 450;

}  // namespace

Occupancy occupancy(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu) {
  Occupancy o;
  o.warps_per_block = (p.threads_per_block + gpu.warp_size - 1) / gpu.warp_size;
  if (o.warps_per_block == 0) return o;
  int regs_per_warp = ((std::max(r.registers, 1) * gpu.warp_size + kRegisterAllocationUnit - 1) /
                       kRegisterAllocationUnit) * kRegisterAllocationUnit;
  int by_regs = gpu.registers_per_sm / (regs_per_warp * o.warps_per_block);
  int by_threads = gpu.max_threads_per_sm / (o.warps_per_block * gpu.warp_size);
  int smem = r.static_shared_bytes + p.dynamic_shared_bytes;
  int by_smem = smem > 0 ? gpu.shared_per_sm_bytes / (smem + kReservedSharedPerBlock) : gpu.max_blocks_per_sm;
  int by_blocks = gpu.max_blocks_per_sm;
  o.blocks_per_sm = by_blocks;
  o.limiter = "blocks";
  auto limit = [&](int v, const char* name) {
    if (v < o.blocks_per_sm) { o.blocks_per_sm = v; o.limiter = name; }
  };
  limit(by_threads, "threads");
  limit(by_regs, "registers");
  limit(by_smem, "shared memory");
  o.blocks_per_sm = std::max(o.blocks_per_sm, 0);
  o.occupancy = static_cast<double>(o.blocks_per_sm * o.warps_per_block * gpu.warp_size) / gpu.max_threads_per_sm;
  return o;
}

std::string launch_limit_violation(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu) {
  const int smem = r.static_shared_bytes + p.dynamic_shared_bytes;
  if (p.threads_per_block <= 0 || p.threads_per_block > gpu.max_threads_per_block)
    return std::to_string(p.threads_per_block) + " threads per block; the GPU allows 1.." +
           std::to_string(gpu.max_threads_per_block);
  if (smem > gpu.shared_per_block_bytes)
    return std::to_string(smem) + " bytes of shared memory per block; the GPU allows " +
           std::to_string(gpu.shared_per_block_bytes);
  if (r.registers > gpu.max_registers_per_thread)
    return std::to_string(r.registers) + " registers per thread; the GPU allows " +
           std::to_string(gpu.max_registers_per_thread);
  return "";
}

SimEstimate estimate(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu) {
  if (is_row_op(p)) return estimate_row_op(p, r, gpu);
  if (is_ring_gemm(p)) return estimate_ring_gemm(p, r, gpu);
  SimEstimate e;
  e.reason = launch_limit_violation(p, r, gpu);
  if (!e.reason.empty()) return e;
  e.occupancy = occupancy(p, r, gpu);
  if (e.occupancy.blocks_per_sm <= 0 || p.blocks <= 0) {
    e.reason = "no block fits on an SM (limited by " + e.occupancy.limiter + ")";
    return e;
  }
  e.launchable = true;

  const double clock_hz = gpu.boost_clock_ghz * 1e9;
  const int warps = e.occupancy.warps_per_block;
  const double blocks = static_cast<double>(p.blocks);
  const double iterations = static_cast<double>(std::max<int64_t>(p.main_loop_iterations, 1));

  // --- Per-block work, in SM cycles when the block has the SM to itself. ---
  // Instruction issue: per inner step a thread issues ilp FMAs plus shared loads plus overhead; per
  // main-loop iteration it issues global loads and shared stores. A kernel that spills reloads and
  // stores spilled words inside its loops: we charge half of its local words per inner step.
  const double fma_per_thread = p.flops / 2.0 / (blocks * p.threads_per_block);
  // On tensor cores one warp-wide mma.m16n8k16 does 2048 FMAs (64 per thread) and the SM's rate is
  // the fp16/bf16 tensor peak (the table's fp16 and bf16 peaks are equal; fp16 is used).
  // wgmma (async_mma) does 1024 FMAs per thread per instruction and reads its operands from shared
  // memory itself: no ldmatrix instructions to issue.
  const bool tensor = p.tensor_cores && gpu.peak_fp16_tflops > 0;
  const bool async_mma = tensor && p.async_mma;
  const double fma_instr_per_thread =
      !tensor ? fma_per_thread : fma_per_thread / (async_mma ? kFmaPerWgmmaThread : kFmaPerMmaThread);
  const double steps_per_thread = fma_instr_per_thread / std::max(p.ilp, 1);
  // The template's count when it gives one (float4 fragment reads), else a register tile's usual share.
  const double shared_loads_per_step =
      async_mma                      ? 0.0
      : p.shared_loads_per_step > 0 ? p.shared_loads_per_step
                                     : 2.0 * std::sqrt(static_cast<double>(std::max(p.ilp, 1))) / 4.0 + 0.5;
  const double global_elems_per_thread = p.global_bytes / 4.0 / (blocks * p.threads_per_block);
  const double global_instr_per_thread = 2.0 * global_elems_per_thread / std::max(p.vector_width, 1);
  const double spill_instr_per_thread = steps_per_thread * kSpillTouchedPerStep * r.local_bytes / 4.0;
  const double instr_per_thread = fma_instr_per_thread + steps_per_thread * (shared_loads_per_step + kOverheadInstrPerStep) +
                                  global_instr_per_thread + spill_instr_per_thread;
  const double fma_warp_rate =  // warp-wide FMAs (32 lanes each) per clock per SM
      tensor ? gpu.peak_fp16_tflops * 1e12 / 2.0 / (gpu.sm_count * clock_hz) / gpu.warp_size *
                   (gpu.cc_major == 9 && !async_mma ? kMmaSyncShareOfHopperPeak : 1.0)
             : gpu.fp32_lanes_per_sm / static_cast<double>(gpu.warp_size);
  const double issue_rate = 4.0;                                                           // warp-instr per clock
  const double block_fma_cycles = fma_per_thread * warps / fma_warp_rate;
  const double block_issue_cycles = instr_per_thread * warps / issue_rate;
  const double block_shared_cycles =
      p.shared_bytes / blocks * std::max(p.shared_conflict_ways, 1.0) / gpu.shared_bank_bytes_per_clk;
  const double local_bytes_traffic = spill_instr_per_thread * 4.0 * p.threads_per_block;
  const double l2_bytes_per_cycle_per_sm = gpu.l2_bandwidth_gbps * 1e9 / clock_hz / gpu.sm_count;
  const double block_l2_cycles =
      (p.global_bytes / blocks / std::max(p.coalescing, 0.05) + local_bytes_traffic) / l2_bytes_per_cycle_per_sm;

  // --- Rounds of resident blocks on the busiest SM. ---
  const int64_t per_sm = (p.blocks + gpu.sm_count - 1) / gpu.sm_count;
  const int64_t slots = e.occupancy.blocks_per_sm;
  e.waves = blocks / static_cast<double>(slots * gpu.sm_count);
  double sm_cycles = 0, compute_c = 0, shared_c = 0, l2_c = 0, latency_c = 0;
  // Every round but the last holds `slots` blocks; the last holds the rest (closed form, no loop).
  auto add_rounds = [&](double resident, double rounds) {
    if (rounds <= 0 || resident <= 0) return;
    const double active_warps = resident * warps;
    const double hiding = std::min(1.0, active_warps * std::min(p.ilp, 8) / kWarpsToHideFmaLatency);
    const double per_scheduler = active_warps / kSubPartitionsPerSm;
    const double pipe_busy =
        tensor && !async_mma && gpu.cc_major == 9 ? per_scheduler / (per_scheduler + kMmaSyncLatencyWarps) : 1.0;
    const double compute = resident * std::max(block_fma_cycles, block_issue_cycles) / hiding / pipe_busy;
    const double shared = resident * block_shared_cycles;
    const double l2 = resident * block_l2_cycles;
    const double busy = std::max({compute, shared, l2});
    // Each main-loop iteration waits for its slab: hidden by double buffering when an iteration's work
    // covers the latency, and by the other resident blocks' work otherwise.
    const double per_iter_work = busy / resident / iterations;
    const double exposed_per_iter =
        p.stages >= 2 ? std::max(0.0, kGlobalLatencyCycles - per_iter_work) : kGlobalLatencyCycles;
    // Latency and barrier stalls of one block are filled by the other resident blocks' work.
    // A fresh block of a producer-ring kernel (async_mma) also waits for its ring's first slab and
    // stores its epilogue with nothing in flight: one global latency per block. A persistent grid's
    // producer fills the next unit's ring while the previous unit's epilogue runs, so it pays that
    // only for its first unit (the tail of whole units stays: a static schedule does not split them).
    const double fill = p.async_mma && !p.persistent ? kGlobalLatencyCycles : 0.0;
    const double barrier = tensor && !async_mma && gpu.cc_major == 9 ? kMmaSyncKTileSyncCycles : kBarrierCycles;
    const double latency = (iterations * (exposed_per_iter + barrier) + fill) / resident;
    sm_cycles += rounds * (busy + latency);
    compute_c += rounds * compute;
    shared_c += rounds * shared;
    l2_c += rounds * l2;
    latency_c += rounds * latency;
  };
  add_rounds(static_cast<double>(slots), static_cast<double>(per_sm / slots));
  add_rounds(static_cast<double>(per_sm % slots), 1.0);
  e.compute_ms = compute_c / clock_hz * 1e3;
  e.shared_ms = shared_c / clock_hz * 1e3;
  e.l2_ms = l2_c / clock_hz * 1e3;
  e.latency_ms = latency_c / clock_hz * 1e3;

  // --- DRAM: compulsory traffic plus the L2 misses of re-reads, fewer with better rasterization. ---
  const double reread = std::max(0.0, p.global_bytes - p.dram_bytes);
  const double working_set_ratio = std::min(1.0, p.dram_bytes / static_cast<double>(gpu.l2_bytes));
  const double miss_rate = 0.02 + 0.25 * working_set_ratio / std::max(p.l2_reuse, 1.0);
  e.dram_ms = (p.dram_bytes + reread * miss_rate) / (gpu.dram_bandwidth_gbps * 1e9) * 1e3;

  const double sm_ms = sm_cycles / clock_hz * 1e3;
  e.time_ms = std::max(sm_ms, e.dram_ms) + kLaunchOverheadMs;
  struct Term { double ms; const char* name; };
  Term terms[] = {{e.compute_ms, "compute"}, {e.shared_ms, "shared"}, {e.l2_ms, "l2"},
                  {e.dram_ms, "dram"}, {e.latency_ms, "latency"}};
  e.bound = std::max_element(std::begin(terms), std::end(terms),
                             [](const Term& a, const Term& b) { return a.ms < b.ms; })->name;
  return e;
}

}  // namespace tuner::costmodel
