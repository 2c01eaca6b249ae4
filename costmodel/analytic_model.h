// The analytic (roofline + occupancy) model behind the sim devices: an
// estimate of a kernel's time on a GPU from the spec table, the template's
// KernelProfile and the resources read from the real cubin.
//
// Deterministic and cheap. It models occupancy (registers, shared memory,
// threads, block slots), rounds of resident blocks per SM (wave
// quantisation), instruction issue (FMAs against load/overhead instructions),
// latency hiding by warps and register-tile ILP (for mma.sync on Hopper, by
// the warps per scheduler), shared-memory bandwidth and
// bank conflicts, L2 and DRAM traffic, spills, and the exposed latency of
// single-buffered main loops. Row-wise kernels (softmax, layernorm) take a
// path of their own, calibrated on a real recording (row_op_model.h), and so
// do producer-ring GEMMs (TMA + wgmma: ring_gemm_model.h). Its
// purpose is to rank configs sensibly, not to predict real timings: every
// figure derived from it is labelled an estimate.
#pragma once

#include <string>

#include "costmodel/gpu_spec.h"
#include "costmodel/kernel_profile.h"

namespace tuner::costmodel {

/// Fixed launch + tail cost every path of the model adds to a kernel's time.
inline constexpr double kLaunchOverheadMs = 0.003;
/// Shared memory the driver reserves per block (sm_80+), on top of the kernel's own.
inline constexpr int kReservedSharedPerBlock = 1024;

struct Occupancy {
  int blocks_per_sm = 0;      ///< Resident blocks per SM (0: the block cannot launch).
  int warps_per_block = 0;
  double occupancy = 0;       ///< Resident warps / maximum warps per SM.
  std::string limiter;        ///< "registers", "shared memory", "threads", "blocks" (what bounds blocks_per_sm).
};

struct SimEstimate {
  bool launchable = false;    ///< False when the block exceeds a hardware limit.
  std::string reason;         ///< Why it cannot launch (empty when launchable).
  double time_ms = 0;         ///< Estimated kernel time in ms.
  Occupancy occupancy;
  double waves = 0;           ///< Blocks / (resident slots over all SMs).
  double compute_ms = 0;      ///< Time on FP32 lanes (or tensor cores) at the achieved issue rate.
  double shared_ms = 0;       ///< Shared-memory bandwidth time.
  double l2_ms = 0;           ///< L2 bandwidth time.
  double dram_ms = 0;         ///< DRAM bandwidth time.
  double latency_ms = 0;      ///< Exposed memory latency not hidden by other work.
  std::string bound;          ///< Largest term: "compute", "shared", "l2", "dram" or "latency".
};

/// Resident blocks per SM and what limits them.
Occupancy occupancy(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu);

/// Why a kernel cannot launch on the GPU (threads, shared memory or registers per block); empty if it can.
std::string launch_limit_violation(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu);

/// The estimate of one kernel launch (row ops, profile.row set, take the row-op path: row_op_model.h;
/// producer-ring GEMMs, profile.gemm set, the ring path: ring_gemm_model.h).
SimEstimate estimate(const KernelProfile& p, const KernelResources& r, const GpuSpec& gpu);

}  // namespace tuner::costmodel
