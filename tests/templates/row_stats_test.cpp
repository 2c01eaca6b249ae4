// The row kernels' statistics and thread -> column mapping, on the host: templates/kernels/row_stats.cuh
// compiles as host C++ here, so the merges the kernels run are the ones checked.
//  - A host model of one row group (threads reading their chunks as row_norm.cuh's for_each_chunk does,
//    the -inf / 0 fill past the row's end, the butterfly across each warp's lanes, then the warps in
//    order) gives the row's online-softmax pair and moments, checked against a two-pass double
//    reference over hard rows: large magnitudes, large mean with small spread, masked -inf values,
//    constant rows, 1 and 32768 columns, lengths not divisible by the vector width or the warp.
//  - Every element of a row is read and written exactly once by the mapping, in the cached (item loop)
//    and uncached (stride loop) forms, for every ROW_THREADS and VEC of the space.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "templates/kernels/row_stats.cuh"
#include "templates/row_norm.h"

namespace tuner::templates {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// The chunks thread t of a group of rt threads visits, as the kernel's uncached stride loop does.
template <class F>
void for_each_thread_chunk(int cols, int rt, int vec, int t, F f) {
  for (int col = row_chunk_col(0, t, rt, vec); col < cols; col += rt * vec) f(col);
}

/// Butterfly over each warp's 32 lanes (lane l merges lane l^o for o = 16 .. 1), then the warps' lane 0
/// results in order: the kernels' cross-thread merge.
template <class Stat, class Merge>
Stat group_merge(std::vector<Stat> per_thread, Merge merge) {
  const int rt = static_cast<int>(per_thread.size());
  for (int o = 16; o > 0; o >>= 1) {
    std::vector<Stat> next = per_thread;
    for (int l = 0; l < rt; ++l) merge(next[l], per_thread[(l / 32) * 32 + ((l % 32) ^ o)]);
    per_thread = next;
  }
  Stat r = per_thread[0];
  for (int w = 1; w < rt / 32; ++w) merge(r, per_thread[w * 32]);
  return r;
}

/// A row's statistics as a row group computes them: each thread's chunks (past the row: `fill`) folded
/// into its own Stat by chunk_merge(stat, values, col), then group_merge across the threads.
template <int V, class Stat, class ChunkMerge, class Merge>
Stat row_group_stat(const std::vector<float>& x, int rt, float fill, Stat empty, ChunkMerge chunk_merge, Merge merge) {
  const int cols = static_cast<int>(x.size());
  std::vector<Stat> st(rt, empty);
  for (int t = 0; t < rt; ++t)
    for_each_thread_chunk(cols, rt, V, t, [&](int col) {
      float v[V];
      for (int j = 0; j < V; ++j) v[j] = col + j < cols ? x[col + j] : fill;
      chunk_merge(st[t], v, col);
    });
  return group_merge(st, merge);
}

template <int V>
SoftmaxStat softmax_row(const std::vector<float>& x, int rt) {
  return row_group_stat<V>(
      x, rt, row_neg_inf(), softmax_stat_empty(),
      [](SoftmaxStat& s, const float (&v)[V], int) { softmax_merge(s, softmax_chunk(v)); },
      [](SoftmaxStat& a, const SoftmaxStat& b) { softmax_merge(a, b); });
}

template <int V>
MomentStat moments_row(const std::vector<float>& x, int rt) {
  const int cols = static_cast<int>(x.size());
  return row_group_stat<V>(
      x, rt, 0.0f, moment_stat_empty(),
      [cols](MomentStat& s, const float (&v)[V], int col) { moment_merge(s, moment_chunk(v, row_chunk_valid(col, cols, V))); },
      [](MomentStat& a, const MomentStat& b) { moment_merge(a, b); });
}

struct Ref {
  double max, sum;    // softmax: max and sum of exp(x - max) over the finite-or-masked row
  double mean, var;   // moments (population variance)
};

Ref two_pass(const std::vector<float>& x) {
  Ref r{-std::numeric_limits<double>::infinity(), 0, 0, 0};
  for (float v : x) r.max = std::max(r.max, static_cast<double>(v));
  for (float v : x) r.sum += std::exp(static_cast<double>(v) - r.max);
  for (float v : x) r.mean += v;
  r.mean /= static_cast<double>(x.size());
  for (float v : x) r.var += (v - r.mean) * (v - r.mean);
  r.var /= static_cast<double>(x.size());
  return r;
}

struct RowCase {
  const char* what;
  std::vector<float> x;
};

std::vector<RowCase> hard_rows() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto make = [&](int cols, float offset, float scale) {
    std::vector<float> x(cols);
    for (float& v : x) v = offset + scale * normal(rng);
    return x;
  };
  std::vector<RowCase> rows;
  for (int cols : {1, 7, 31, 33, 1000, 4097, 32768}) rows.push_back({"normal", make(cols, 0.0f, 1.0f)});
  rows.push_back({"large magnitudes", make(4099, 0.0f, 3.0e4f)});
  rows.push_back({"large mean, small spread", make(4096, 1.0e4f, 1.0f)});
  rows.push_back({"large mean, 32768 columns", make(32768, 3.0e3f, 0.5f)});
  rows.push_back({"constant", std::vector<float>(3001, 0.1f)});
  rows.push_back({"constant, 1 column", std::vector<float>(1, -7.0f)});
  auto masked = make(1037, 0.0f, 2.0f);
  for (size_t i = 0; i < masked.size(); ++i)
    if (i % 3 != 1) masked[i] = -kInf;  // two of every three masked, the tail chunk's last ones too
  rows.push_back({"masked -inf", masked});
  auto one_left = std::vector<float>(4096, -kInf);
  one_left[4095] = 5.0f;
  rows.push_back({"one unmasked at the end", one_left});
  return rows;
}

template <int V>
void check_rows(int rt) {
  for (const auto& rc : hard_rows()) {
    const Ref ref = two_pass(rc.x);
    const std::string where = std::string(rc.what) + ", cols " + std::to_string(rc.x.size()) + ", rt " +
                              std::to_string(rt) + ", vec " + std::to_string(V);
    const SoftmaxStat s = softmax_row<V>(rc.x, rt);
    EXPECT_EQ(s.m, static_cast<float>(ref.max)) << where;
    EXPECT_NEAR(s.s, ref.sum, 2e-6 * ref.sum * std::sqrt(static_cast<double>(rc.x.size())) + 1e-6) << where;
    if (std::isinf(ref.mean)) continue;  // moments of a masked row are meaningless
    const MomentStat m = moments_row<V>(rc.x, rt);
    EXPECT_EQ(m.n, static_cast<float>(rc.x.size())) << where;
    EXPECT_NEAR(m.mean, ref.mean, 1e-6 * std::fabs(ref.mean) + 1e-6) << where;
    const double var = m.m2 / m.n;
    EXPECT_GE(m.m2, 0.0f) << where;
    // Relative to the spread, and to rounding of the mean itself (|mean| * 2^-24, squared, per element).
    const double ulp_mean = std::fabs(ref.mean) * 6e-8;
    EXPECT_NEAR(var, ref.var, 1e-4 * ref.var + 4 * ulp_mean * ulp_mean + 1e-12) << where;
  }
}

TEST(RowStats, MergesMatchTheTwoPassDoubleReferenceOnHardRows) {
  for (int rt : {32, 64, 256, 1024}) {
    check_rows<1>(rt);
    check_rows<2>(rt);
    check_rows<4>(rt);
    check_rows<8>(rt);
  }
}

TEST(RowStats, SoftmaxPairNeverTurnsNaN) {
  // Both halves fully masked: the pair stays (kRowLowest, 0), and merging it into a real pair is exact.
  float masked[4] = {-kInf, -kInf, -kInf, -kInf};
  SoftmaxStat a = softmax_chunk(masked);
  EXPECT_EQ(a.m, kRowLowest);
  EXPECT_EQ(a.s, 0.0f);
  softmax_merge(a, softmax_chunk(masked));
  EXPECT_EQ(a.s, 0.0f);
  float real[4] = {1.0f, 2.0f, -kInf, 3.0f};
  softmax_merge(a, softmax_chunk(real));
  EXPECT_EQ(a.m, 3.0f);
  EXPECT_NEAR(a.s, std::exp(-2.0) + std::exp(-1.0) + 1.0, 1e-6);
  // Extremes of float: the differences overflow to -inf, exp gives 0, never NaN.
  float extreme[2] = {3.0e38f, -3.0e38f};
  const SoftmaxStat e = softmax_chunk(extreme);
  EXPECT_EQ(e.m, 3.0e38f);
  EXPECT_EQ(e.s, 1.0f);
}

TEST(RowStats, MomentsOfLargeMeanBeatANaiveSumOfSquares) {
  // The failure the pairwise merge avoids: E[x^2] - E[x]^2 in float cancels at mean 1e4, spread 1.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(1.0e4f, 1.0f);
  std::vector<float> x(4096);
  for (float& v : x) v = normal(rng);
  const Ref ref = two_pass(x);
  float sum = 0, sq = 0;
  for (float v : x) { sum += v; sq += v * v; }
  const double naive = sq / x.size() - (sum / x.size()) * (sum / x.size());
  const MomentStat m = moments_row<8>(x, 128);
  EXPECT_GT(std::fabs(naive - ref.var), 0.1 * ref.var) << "the naive formula should visibly fail here";
  EXPECT_LT(std::fabs(m.m2 / m.n - ref.var), 1e-4 * ref.var);
}

TEST(RowStats, EveryElementIsReadAndWrittenOnce) {
  for (int cols : {1, 7, 31, 32, 33, 255, 1000, 3000, 4096, 4097, 32768})
    for (int rt : {32, 64, 128, 256, 512, 1024})
      for (int vec : {1, 2, 4, 8}) {
        const int items = row_chunk_count(cols, rt, vec);
        std::vector<int> uncached(cols, 0), cached(cols, 0);
        for (int t = 0; t < rt; ++t) {
          for_each_thread_chunk(cols, rt, vec, t, [&](int col) {
            for (int j = 0; j < row_chunk_valid(col, cols, vec); ++j) ++uncached[col + j];
          });
          const int mine = row_chunks_of_thread(cols, t, rt, vec);
          EXPECT_LE(mine, items);
          for (int i = 0; i < items; ++i) {  // the cached item loop: stops after the thread's last chunk
            const int col = row_chunk_col(i, t, rt, vec);
            ASSERT_EQ(i < mine, col < cols) << cols << " " << rt << " " << vec << " thread " << t << " item " << i;
            if (i >= mine) break;
            for (int j = 0; j < row_chunk_valid(col, cols, vec); ++j) ++cached[col + j];
          }
        }
        const auto once = [](int n) { return n == 1; };
        ASSERT_TRUE(std::all_of(uncached.begin(), uncached.end(), once)) << cols << " " << rt << " " << vec;
        ASSERT_TRUE(std::all_of(cached.begin(), cached.end(), once)) << cols << " " << rt << " " << vec;
        // Consecutive threads read consecutive vectors (coalesced).
        if (cols >= 2 * vec) {
          EXPECT_EQ(row_chunk_col(0, 1, rt, vec) - row_chunk_col(0, 0, rt, vec), vec);
        }
      }
}

TEST(RowStats, TheTemplateCachesAsManyItemsAsTheMappingNeeds) {
  RowNormTemplate tmpl(RowOp::kSoftmax);
  for (const char* shape : {"rows=3,cols=4097", "rows=3,cols=32768", "rows=3,cols=1"}) {
    const auto w = parse_workload("softmax", shape, "f16");
    const auto space = tmpl.space(w, DeviceLimits{});
    for (const auto& c : space.enumerate()) {
      const RowTiling t = tmpl.tiling(space, c, w);
      ASSERT_EQ(t.items, row_chunk_count(static_cast<int>(w.dim("cols")), t.row_threads, t.vec)) << shape;
    }
  }
}

}  // namespace
}  // namespace tuner::templates
