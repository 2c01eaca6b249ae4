// What a kernel template tells the cost models about one instantiated config:
// the work (FLOPs), the traffic at each level of the memory hierarchy as the
// tile sizes imply it, the launch shape and the per-thread parallelism.
//
// Pure data with a JSON form (it crosses the pipe to the measurement worker).
// Templates fill it; the analytic model and (later) the featurizer read it.
// Resources the compiler decided (registers, spills) are not here: they come
// from the cubin, in KernelResources.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace tuner::costmodel {

/// The shape of a row-wise kernel (softmax, layernorm: one row group of threads per row), for the
/// analytic model's row-op path (row_op_model.h). rows == 0: the kernel is not a row op.
struct RowOpProfile {
  int64_t rows = 0, cols = 0;
  int elem_bytes = 4;         ///< Bytes per element in global memory.
  int row_threads = 32;       ///< Threads per row (whole warps).
  int rows_per_block = 1;
  int vec = 1;                ///< Elements per global access.
  bool one_pass = false;      ///< Online statistics (one read before the output pass) or two stat passes.
  bool cache = false;         ///< The row stays in registers: read from global memory once.
  bool prefetch = false;      ///< A cached row's loads are all issued before the first use (overlapping).
  bool layernorm = false;     ///< Layernorm (gamma and beta read in the output pass) rather than softmax.

  /// Reads of each element from global memory: 1 when cached, else one per pass (stats passes + output).
  int global_reads() const { return cache ? 1 : (one_pass ? 2 : 3); }
  /// Elements per access the kernel really uses: vec when every row starts vec-aligned (cols % vec == 0),
  /// else 1 (the element-wise path).
  int vector_width() const { return vec > 1 && cols % vec == 0 ? vec : 1; }
};

/// The tiling of a GEMM whose tiles stream through a shared-memory ring filled by a producer (TMA) and
/// drained by asynchronous MMAs (Hopper wgmma), for the analytic model's ring-GEMM path
/// (ring_gemm_model.h). m == 0: the kernel is not such a GEMM.
struct GemmTileProfile {
  int64_t batch = 1, m = 0, n = 0, k = 0;  ///< Problem size (per batch entry).
  int bm = 0, bn = 0, bk = 0;             ///< Block tile and the k-tile of one ring stage.
  int group_m = 1;                        ///< Block-rows rasterized together (L2 reuse of the B panels).
  int split_k = 1;                        ///< K splits per tile, reduced in fp32 through a workspace.
  /// The splits are a cluster's CTAs, reduced through distributed shared memory into the first one, which
  /// stores the tile: no partials in L2 or DRAM, one cluster round trip.
  bool split_in_cluster = false;
  int elem_bytes = 2;                     ///< Bytes per A and B element.
  int out_bytes = 2;                      ///< Bytes per C element.
  int persistent_ctas = 0;                ///< 0: a CTA per work unit; else the CTAs of a persistent grid.
  /// Outputs of one row that the epilogue's store instructions write contiguously: 8 when each thread
  /// stores a pair from its accumulators (4 threads per row), 32 when staged through shared memory.
  int store_segment = 8;
  /// CTAs per thread-block cluster along N sharing A's k-tiles by TMA multicast (each fetches 1/cluster).
  int cluster = 1;
  /// Two consumers run alternate units whole (pingpong): one's epilogue runs under the other's k-tiles,
  /// so a unit costs max(k-tiles, (k-tiles + epilogue) / 2) rather than both.
  bool epilogue_overlapped = false;
  /// Share of an A panel's bytes that DRAM serves the first time it is read: 1 for a GEMM; an implicit-GEMM
  /// conv's im2col rows repeat input pixels (every tap of a pixel's neighbours), so only the input's own
  /// bytes over the im2col matrix's (about 1 / (R * S) at stride 1) come from DRAM, the rest from L2.
  double a_dram_share = 1;
};

struct KernelProfile {
  double flops = 0;                ///< Useful floating-point operations (FMA = 2).
  double dram_bytes = 0;           ///< Compulsory DRAM traffic: every input read once, every output written once.
  double global_bytes = 0;         ///< Bytes all blocks request from global memory (L2 traffic) incl. stores.
  double shared_bytes = 0;         ///< Bytes read from and written to shared memory, all blocks.
  double shared_conflict_ways = 1; ///< Average bank-conflict replay factor of shared accesses (1 = none).
  int64_t blocks = 0;              ///< Thread blocks in the grid.
  int threads_per_block = 0;
  int dynamic_shared_bytes = 0;    ///< Dynamic shared memory per block in bytes.
  int ilp = 1;                     ///< Independent FMAs per thread per inner step (register tile size).
  /// Shared-memory load instructions per thread per inner step (fragment reads; float4 reads count once);
  /// 0: unknown, the analytic model estimates them from ilp.
  double shared_loads_per_step = 0;
  int vector_width = 1;            ///< Elements per global load instruction.
  double coalescing = 1;           ///< Fraction of each fetched sector that is used (1 = perfectly coalesced).
  int stages = 1;                  ///< Shared-memory buffers (>= 2 overlaps loads with compute).
  int64_t main_loop_iterations = 1;  ///< Iterations of the block's main loop (k-slabs), each with a barrier.
  double l2_reuse = 1;             ///< Factor by which block rasterization raises L2 hits (>= 1).
  bool tensor_cores = false;       ///< Compute on tensor cores (fp16/bf16) rather than FP32 lanes.
  /// Tensor-core work issued as warpgroup-wide asynchronous MMAs (Hopper wgmma) reading their operands
  /// from shared memory, rather than warp-wide mma.sync fed by ldmatrix.
  bool async_mma = false;
  /// A persistent grid (about one CTA per SM looping over the `blocks` work units): a unit's shared
  /// ring fills while the previous unit's epilogue runs, rather than after a fresh CTA starts.
  bool persistent = false;
  RowOpProfile row;                ///< Set by row-wise templates only.
  GemmTileProfile gemm;            ///< Set by producer-ring GEMM templates (gemm_tc_wgmma) only.
};

/// a / b rounded up, for positive b: blocks of a grid, waves of blocks, chunks of a row.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Resources the compiler chose, read from the cubin.
struct KernelResources {
  int registers = 0;            ///< Registers per thread.
  int static_shared_bytes = 0;  ///< Static shared memory per block in bytes.
  int local_bytes = 0;          ///< Local memory per thread in bytes (spills + stack).
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RowOpProfile, rows, cols, elem_bytes, row_threads, rows_per_block,
                                                vec, one_pass, cache, prefetch, layernorm)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GemmTileProfile, batch, m, n, k, bm, bn, bk, group_m, split_k,
                                                elem_bytes, out_bytes, persistent_ctas, store_segment)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelProfile, flops, dram_bytes, global_bytes, shared_bytes,
                                                shared_conflict_ways, blocks, threads_per_block,
                                                dynamic_shared_bytes, ilp, shared_loads_per_step, vector_width, coalescing, stages,
                                                main_loop_iterations, l2_reuse, tensor_cores, async_mma, persistent,
                                                row, gemm)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelResources, registers, static_shared_bytes, local_bytes)

}  // namespace tuner::costmodel
