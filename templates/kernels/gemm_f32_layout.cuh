// gemm_f32_layout.cuh: which outputs and which slab elements each thread of the fp32 SIMT GEMM
// (gemm_f32.cuh) owns, and what one warp's shared-memory reads cost, as plain integer math that
// compiles both as device code (NVRTC, nvcc) and as host C++. The kernel calls these functions; the
// CPU tests (tests/templates/gemm_f32_layout_test.cpp) include this file directly and check that every
// output element is owned by exactly one (thread, register) and every slab element is loaded exactly
// once; the template's cost profile (templates/gemm_f32.cpp) counts shared-memory wavefronts with it.
//
// Thread -> output mapping. The BM x BN block tile is split into WM x WN thread-group tiles (a group
// is one or more whole warps; WM = BM and WN = BN is one group for the whole block, the original
// layout). Inside a group the threads form (WM/TM) x (WN/TN) lanes, n fastest; a thread's TM x TN
// register tile is interleaved in runs of vm = min(TM, 4) rows and vn = min(TN, 4) columns, so each
// run is one float4 read of shared memory and the lanes of a warp read neighbouring runs:
//   group g = tid / group_threads, lane l = tid % group_threads,
//   register row i -> (g / (BN/WN))*WM + (i/vm)*(WM/TM)*vm + (l / (WN/TN))*vm + i%vm,
//   register col j -> (g % (BN/WN))*WN + (j/vn)*(WN/TN)*vn + (l % (WN/TN))*vn + j%vn.
// Slab loads: vector v (= tid + r*threads, v < vectors) of the A slab (BM rows of BK floats, read
// along K) is row v / (BK/VEC), k (v % (BK/VEC))*VEC; of the B slab (BK rows of BN floats) row
// v / (BN/VEC), column (v % (BN/VEC))*VEC.
// Not responsible for the kernel's knobs as macros, the shared layout or the pipeline (gemm_f32.cuh).
#pragma once

#if defined(__CUDACC__)
#define F32_HD __host__ __device__ __forceinline__
#else
#define F32_HD inline
#endif

struct F32Layout {
  int bm, bn;  // block tile
  int tm, tn;  // per-thread register tile
  int wm, wn;  // thread-group (warp) tile: divides the block tile
  int bk;      // k-slab depth
  int vec;     // floats per global vector
};

F32_HD int f32_run_m(const F32Layout& l) { return l.tm < 4 ? l.tm : 4; }
F32_HD int f32_run_n(const F32Layout& l) { return l.tn < 4 ? l.tn : 4; }
F32_HD int f32_lanes_m(const F32Layout& l) { return l.wm / l.tm; }
F32_HD int f32_lanes_n(const F32Layout& l) { return l.wn / l.tn; }
F32_HD int f32_group_threads(const F32Layout& l) { return f32_lanes_m(l) * f32_lanes_n(l); }
F32_HD int f32_threads(const F32Layout& l) { return (l.bm / l.tm) * (l.bn / l.tn); }

// Block row of thread tid's register row 0 (its other rows: + f32_row_step per run of vm rows).
F32_HD int f32_row_base(const F32Layout& l, int tid) {
  const int g = tid / f32_group_threads(l), lane = tid % f32_group_threads(l);
  return (g / (l.bn / l.wn)) * l.wm + (lane / f32_lanes_n(l)) * f32_run_m(l);
}
F32_HD int f32_col_base(const F32Layout& l, int tid) {
  const int g = tid / f32_group_threads(l), lane = tid % f32_group_threads(l);
  return (g % (l.bn / l.wn)) * l.wn + (lane % f32_lanes_n(l)) * f32_run_n(l);
}
// Distance between a thread's consecutive runs of rows (columns).
F32_HD int f32_row_step(const F32Layout& l) { return f32_lanes_m(l) * f32_run_m(l); }
F32_HD int f32_col_step(const F32Layout& l) { return f32_lanes_n(l) * f32_run_n(l); }
// Block row (column) of register row i (column j) of thread tid.
F32_HD int f32_row(const F32Layout& l, int tid, int i) {
  return f32_row_base(l, tid) + (i / f32_run_m(l)) * f32_row_step(l) + i % f32_run_m(l);
}
F32_HD int f32_col(const F32Layout& l, int tid, int j) {
  return f32_col_base(l, tid) + (j / f32_run_n(l)) * f32_col_step(l) + j % f32_run_n(l);
}

// The slab loads: vectors per slab, vectors per thread, and where vector v lands (slab row, column).
F32_HD int f32_a_vectors(const F32Layout& l) { return l.bm * (l.bk / l.vec); }
F32_HD int f32_b_vectors(const F32Layout& l) { return l.bk * (l.bn / l.vec); }
F32_HD int f32_loads(int vectors, int threads) { return (vectors + threads - 1) / threads; }
F32_HD int f32_a_row(const F32Layout& l, int v) { return v / (l.bk / l.vec); }
F32_HD int f32_a_k(const F32Layout& l, int v) { return (v % (l.bk / l.vec)) * l.vec; }
F32_HD int f32_b_k(const F32Layout& l, int v) { return v / (l.bn / l.vec); }
F32_HD int f32_b_col(const F32Layout& l, int v) { return (v % (l.bn / l.vec)) * l.vec; }

// Shared-memory wavefronts one warp (threads warp*32 ..) spends reading one k-step of fragments from
// As[k][m] and Bs[k][n]: per read instruction (a run of `width` floats, width = vm or vn when the row
// stride keeps runs aligned, else 1), the larger of the distinct bytes / 128 and the most distinct
// 4-byte words any one of the 32 banks serves. Runs that start at the same address are a broadcast.
F32_HD int f32_read_wavefronts(const int* starts, int width) {
  int distinct = 0, worst_bank = 0;
  int seen[32];
  int words[32] = {};
  for (int t = 0; t < 32; ++t) {
    bool dup = false;
    for (int u = 0; u < distinct; ++u) dup = dup || seen[u] == starts[t];
    if (dup) continue;
    seen[distinct++] = starts[t];
    for (int e = 0; e < width; ++e) {
      const int bank = (starts[t] + e) % 32;
      words[bank] += 1;
      worst_bank = words[bank] > worst_bank ? words[bank] : worst_bank;
    }
  }
  const int by_bytes = (distinct * width * 4 + 127) / 128;
  return by_bytes > worst_bank ? by_bytes : worst_bank;
}

// Wavefronts of one warp's A and B fragment reads for one k-step (k row 0), with the shared row
// strides a_stride = BM + PAD and b_stride = BN + PAD.
F32_HD int f32_warp_kstep_wavefronts(const F32Layout& l, int warp, int a_stride, int b_stride) {
  const int wa = a_stride % f32_run_m(l) == 0 ? f32_run_m(l) : 1;
  const int wb = b_stride % f32_run_n(l) == 0 ? f32_run_n(l) : 1;
  int total = 0;
  int starts[32];
  for (int i = 0; i < l.tm; i += wa) {
    for (int t = 0; t < 32; ++t) starts[t] = f32_row(l, warp * 32 + t, i);
    total += f32_read_wavefronts(starts, wa);
  }
  for (int j = 0; j < l.tn; j += wb) {
    for (int t = 0; t < 32; ++t) starts[t] = f32_col(l, warp * 32 + t, j);
    total += f32_read_wavefronts(starts, wb);
  }
  return total;
}
