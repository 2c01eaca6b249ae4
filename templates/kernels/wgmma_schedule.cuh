// wgmma_schedule.cuh: the work schedule of the Hopper GEMM (gemm_wgmma.cuh), as plain integer math that
// compiles both as device code (NVRTC, nvcc) and as host C++ (the CPU tests include this file directly
// and check that every (tile, k-range) is covered exactly once, and model the mbarrier ring with the
// same stage and parity functions the kernel uses).
//
// Tiles are grouped `cluster` block columns at a time: the CTAs of a thread-block cluster (along x)
// share a block row and a K split and take adjacent block columns, so each loads a 1/cluster share of
// A's rows and multicasts it to all of them. A batch's work is `units` = grid_m * col_groups * split_k
// cluster work units (col_groups = ceil(grid_n / cluster)); unit u is split u % split_k of column
// group u / split_k, rasterized group_m block-rows at a time (as output_tile.cuh's raster_block); the
// CTA of cluster rank r takes block column group * cluster + r, which is past grid_n for the idle CTAs
// of a partial last group (they load their share of A and store nothing). Split s of k_tiles k-tiles
// covers [s*k_tiles/split_k, (s+1)*k_tiles/split_k): every split is non-empty when split_k <= k_tiles.
// Cluster c runs units c, c + clusters, ...: one unit when the grid has a cluster per unit (blockIdx.z
// is the batch), several when the grid is persistent (about one CTA per SM; then the units span all
// `batches` batch entries, batch-major). Across all of a CTA's units the ring's k-tile count `it` keeps
// counting, so the mbarrier phases continue across tile boundaries (wgmma_slot).
// Not responsible for the PTX (wgmma_ptx.cuh) nor the launch geometry (templates/gemm_wgmma_source.h).
#pragma once

#if defined(__CUDACC__)
#define WGMMA_HD __host__ __device__ __forceinline__
#else
#define WGMMA_HD inline
#endif

struct WgmmaGrid {
  int grid_m, grid_n;  // block tiles per batch along M and N
  int split_k;         // K splits per tile
  int k_tiles;         // 64-deep k-tiles of K
  int group_m;         // block-rows rasterized together
  int cluster;         // CTAs per cluster: adjacent block columns sharing A's rows
  int col_groups;      // ceil(grid_n / cluster): column groups per block row
  int batches;         // batch entries the units span (1 when blockIdx.z is the batch)
};

struct WgmmaUnit {
  int batch;                 // the batch entry, counted from blockIdx.z
  int block_row, block_col;  // the tile (block_col >= grid_n: an idle CTA of a partial cluster)
  int split;                 // which K split of it
  int kt_begin, kt_end;      // its k-tiles [kt_begin, kt_end)
};

WGMMA_HD WgmmaGrid wgmma_grid(int m, int n, int k, int bm, int bn, int bk, int split_k, int group_m, int cluster = 1,
                              int batches = 1) {
  WgmmaGrid g;
  g.grid_m = (m + bm - 1) / bm;
  g.grid_n = (n + bn - 1) / bn;
  g.split_k = split_k;
  g.k_tiles = (k + bk - 1) / bk;
  g.group_m = group_m;
  g.cluster = cluster;
  g.col_groups = (g.grid_n + cluster - 1) / cluster;
  g.batches = batches;
  return g;
}

// Cluster work units over all of the grid's batch entries.
WGMMA_HD int wgmma_units(const WgmmaGrid& g) { return g.batches * g.grid_m * g.col_groups * g.split_k; }

// Unit u as the CTA of cluster rank `rank` runs it.
WGMMA_HD WgmmaUnit wgmma_unit(const WgmmaGrid& g, int u, int rank = 0) {
  WgmmaUnit w;
  const int per_batch = g.grid_m * g.col_groups * g.split_k;
  w.batch = u / per_batch;
  u %= per_batch;
  const int tile = u / g.split_k;
  w.split = u % g.split_k;
  int group_col;
  if (g.group_m == 1) {
    w.block_row = tile / g.col_groups;
    group_col = tile % g.col_groups;
  } else {
    const int in_group = g.group_m * g.col_groups;
    const int first_row = (tile / in_group) * g.group_m;
    const int rows_left = g.grid_m - first_row;
    const int group_rows = rows_left < g.group_m ? rows_left : g.group_m;
    const int local = tile % in_group;
    w.block_row = first_row + local % group_rows;
    group_col = local / group_rows;
  }
  w.block_col = group_col * g.cluster + rank;
  w.kt_begin = static_cast<int>(static_cast<long long>(w.split) * g.k_tiles / g.split_k);
  w.kt_end = static_cast<int>(static_cast<long long>(w.split + 1) * g.k_tiles / g.split_k);
  return w;
}

// Unit w's share of k-tiles that rank `rank` of a cluster of `ck` CTAs along K multiplies (CLUSTER_K): the
// ranks split [kt_begin, kt_end) as split-K splits a tile, each share non-empty when ck <= its k-tiles; rank 0
// then sums the others' partial accumulators, which they send it through distributed shared memory.
WGMMA_HD WgmmaUnit wgmma_k_share(WgmmaUnit w, int rank, int ck) {
  const int n = w.kt_end - w.kt_begin, b = w.kt_begin;
  w.kt_begin = b + static_cast<int>(static_cast<long long>(rank) * n / ck);
  w.kt_end = b + static_cast<int>(static_cast<long long>(rank + 1) * n / ck);
  return w;
}

// The ring slot of a CTA's it-th k-tile (counted over all its units): the stage, the parity of the
// full barrier's phase the consumers wait for (the stage's use it / stages), and whether the producer
// must first wait for the consumers to release the stage's previous use (the empty barrier's phase
// use - 1, of parity empty_parity).
struct WgmmaSlot {
  int stage;
  unsigned full_parity;
  bool reuse;
  unsigned empty_parity;
};

WGMMA_HD WgmmaSlot wgmma_slot(int it, int stages) {
  WgmmaSlot s;
  const int use = it / stages;
  s.stage = it % stages;
  s.full_parity = static_cast<unsigned>(use & 1);
  s.reuse = use > 0;
  s.empty_parity = static_cast<unsigned>((use + 1) & 1);  // (use - 1) & 1
  return s;
}
