// The fp32 SIMT GEMM's thread -> element maps, on the host: templates/kernels/gemm_f32_layout.cuh
// compiles as host C++ here, so the functions the kernel runs are the ones checked.
//  - Coverage: over block tiles, register tiles and thread-group shapes (the whole block, one warp of
//    any lane shape, groups of several warps), every output element of the block tile is owned by
//    exactly one (thread, register), each thread's runs are contiguous and float4-aligned, and the
//    A and B slab loads cover every slab element exactly once.
//  - The whole-block group is the kernel's former layout (WARP_N = 0 keeps the old code path).
//  - Wavefronts: warp tiling reads fewer shared-memory wavefronts per k-step than the whole-block
//    layout on the tiles that win, and the lane shapes the space leaves out read more.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "templates/kernels/gemm_f32_layout.cuh"

namespace {

std::string name_of(const F32Layout& l) {
  return std::to_string(l.bm) + "x" + std::to_string(l.bn) + " reg " + std::to_string(l.tm) + "x" +
         std::to_string(l.tn) + " group " + std::to_string(l.wm) + "x" + std::to_string(l.wn) + " bk " +
         std::to_string(l.bk) + " vec " + std::to_string(l.vec);
}

/// The layouts checked: every power-of-two block and register tile with 32..1024 threads, and for each
/// the whole-block group plus every group of 1, 2 or 4 whole warps that divides the block tile.
std::vector<F32Layout> layouts() {
  std::vector<F32Layout> out;
  const int tiles[] = {16, 32, 64, 128, 256};
  const int regs[] = {1, 2, 4, 8, 16};
  for (int bm : tiles)
    for (int bn : tiles)
      for (int tm : regs)
        for (int tn : regs) {
          if (tm * tn > 64 || bm < tm || bn < tn) continue;
          const int threads = (bm / tm) * (bn / tn);
          if (threads < 32 || threads > 1024) continue;
          out.push_back({bm, bn, tm, tn, bm, bn, 8, 4});
          for (int group : {32, 64, 128})
            for (int lanes_n = 1; lanes_n <= group; lanes_n *= 2) {
              const int wm = (group / lanes_n) * tm, wn = lanes_n * tn;
              if (wm > bm || wn > bn || bm % wm != 0 || bn % wn != 0 || (wm == bm && wn == bn)) continue;
              out.push_back({bm, bn, tm, tn, wm, wn, 16, 2});
            }
        }
  return out;
}

TEST(GemmF32Layout, EveryOutputIsOwnedExactlyOnceInAlignedRuns) {
  int checked = 0;
  for (const F32Layout& l : layouts()) {
    SCOPED_TRACE(name_of(l));
    std::vector<int> owners(static_cast<size_t>(l.bm) * l.bn, 0);
    const int vm = f32_run_m(l), vn = f32_run_n(l);
    for (int tid = 0; tid < f32_threads(l); ++tid) {
      ASSERT_EQ(f32_row_base(l, tid) % vm, 0) << "a run of rows must start float4-aligned";
      ASSERT_EQ(f32_col_base(l, tid) % vn, 0);
      for (int i = 0; i < l.tm; ++i) {
        const int r = f32_row(l, tid, i);
        ASSERT_TRUE(r >= 0 && r < l.bm) << "tid " << tid << " row " << i << " -> " << r;
        if (i % vm != 0) {
          ASSERT_EQ(r, f32_row(l, tid, i - 1) + 1) << "runs are contiguous";
        }
        for (int j = 0; j < l.tn; ++j) {
          const int c = f32_col(l, tid, j);
          ASSERT_TRUE(c >= 0 && c < l.bn) << "tid " << tid << " col " << j << " -> " << c;
          if (j % vn != 0) {
            ASSERT_EQ(c, f32_col(l, tid, j - 1) + 1);
          }
          ++owners[static_cast<size_t>(r) * l.bn + c];
        }
      }
    }
    for (size_t e = 0; e < owners.size(); ++e)
      ASSERT_EQ(owners[e], 1) << "element (" << e / l.bn << ", " << e % l.bn << ")";
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

TEST(GemmF32Layout, TheWholeBlockGroupIsTheFormerLayout) {
  // Before warp tiling the kernel placed register row i of thread tid at
  // (i/vm)*(bm/tm)*vm + (tid / (bn/tn))*vm + i%vm, and column j at (j/vn)*(bn/tn)*vn + (tid % (bn/tn))*vn + j%vn.
  for (const F32Layout& l : layouts()) {
    if (l.wm != l.bm || l.wn != l.bn) continue;
    SCOPED_TRACE(name_of(l));
    const int vm = f32_run_m(l), vn = f32_run_n(l), tx_count = l.bn / l.tn, ty_count = l.bm / l.tm;
    for (int tid = 0; tid < f32_threads(l); ++tid) {
      for (int i = 0; i < l.tm; ++i)
        ASSERT_EQ(f32_row(l, tid, i), (i / vm) * ty_count * vm + (tid / tx_count) * vm + i % vm);
      for (int j = 0; j < l.tn; ++j)
        ASSERT_EQ(f32_col(l, tid, j), (j / vn) * tx_count * vn + (tid % tx_count) * vn + j % vn);
    }
  }
}

TEST(GemmF32Layout, SlabLoadsCoverEverySlabElementOnce) {
  for (const F32Layout& base : layouts())
    for (int bk : {8, 16, 32, 64})
      for (int vec : {1, 2, 4}) {
        F32Layout l = base;
        l.bk = bk;
        l.vec = vec;
        if (l.bn % vec != 0) continue;
        SCOPED_TRACE(name_of(l));
        const int threads = f32_threads(l);
        std::vector<int> a(static_cast<size_t>(l.bm) * bk, 0), b(static_cast<size_t>(bk) * l.bn, 0);
        for (int tid = 0; tid < threads; ++tid) {
          for (int r = 0; r < f32_loads(f32_a_vectors(l), threads); ++r) {
            const int v = tid + r * threads;
            if (v >= f32_a_vectors(l)) continue;  // the kernel's guard
            ASSERT_EQ(f32_a_k(l, v) % vec, 0);
            for (int e = 0; e < vec; ++e) ++a[static_cast<size_t>(f32_a_row(l, v)) * bk + f32_a_k(l, v) + e];
          }
          for (int r = 0; r < f32_loads(f32_b_vectors(l), threads); ++r) {
            const int v = tid + r * threads;
            if (v >= f32_b_vectors(l)) continue;
            ASSERT_EQ(f32_b_col(l, v) % vec, 0);
            for (int e = 0; e < vec; ++e) ++b[static_cast<size_t>(f32_b_k(l, v)) * l.bn + f32_b_col(l, v) + e];
          }
        }
        for (size_t e = 0; e < a.size(); ++e) ASSERT_EQ(a[e], 1) << "A slab element " << e;
        for (size_t e = 0; e < b.size(); ++e) ASSERT_EQ(b[e], 1) << "B slab element " << e;
      }
}

TEST(GemmF32Layout, WarpTilesReadFewerSharedWavefronts) {
  // 128x128 block, 8x8 per thread (256 threads). The whole-block layout puts 2 rows x 16 columns of
  // lanes in a warp: per k-step and float4 run pair, A's 2 distinct runs take 1 wavefront and B's 16
  // runs (256 bytes) take 2; two run pairs: 6. A 4x8-lane warp tile (32x64) reads 4 and 8 runs: 1 + 1,
  // so 4; 8x4 lanes (64x32) likewise.
  const F32Layout block{128, 128, 8, 8, 128, 128, 8, 4};
  const F32Layout warp48{128, 128, 8, 8, 32, 64, 8, 4};
  const F32Layout warp84{128, 128, 8, 8, 64, 32, 8, 4};
  EXPECT_EQ(f32_warp_kstep_wavefronts(block, 0, 132, 132), 6);
  EXPECT_EQ(f32_warp_kstep_wavefronts(warp48, 0, 132, 132), 4);
  EXPECT_EQ(f32_warp_kstep_wavefronts(warp84, 0, 132, 132), 4);
  // Every warp of the block reads the same pattern at another offset (the profile counts warp 0).
  for (int w = 1; w < 8; ++w) {
    EXPECT_EQ(f32_warp_kstep_wavefronts(block, w, 132, 132), 6);
    EXPECT_EQ(f32_warp_kstep_wavefronts(warp48, w, 132, 132), 4);
  }
  // The lane shapes WARP_N leaves out: 2x16 and 16x2 read 3 per run pair, 1x32 and 32x1 five.
  EXPECT_EQ(f32_warp_kstep_wavefronts({128, 128, 8, 8, 16, 128, 8, 4}, 0, 132, 132), 6);
  EXPECT_EQ(f32_warp_kstep_wavefronts({256, 128, 8, 8, 128, 16, 8, 4}, 0, 260, 132), 6);
  EXPECT_EQ(f32_warp_kstep_wavefronts({128, 256, 8, 8, 8, 256, 8, 4}, 0, 132, 260), 10);
  // A row stride that breaks float4 alignment (pad 1) turns every run into 4 scalar reads.
  EXPECT_GT(f32_warp_kstep_wavefronts(warp48, 0, 129, 129), 3 * f32_warp_kstep_wavefronts(warp48, 0, 132, 132));
}

}  // namespace
