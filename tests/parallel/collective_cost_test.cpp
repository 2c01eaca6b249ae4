// Alpha-beta collective costs on hand-computed cases.
#include <gtest/gtest.h>

#include "search/parallel/collective_cost.h"

namespace tuner::parallel {
namespace {

ClusterSpec toy() {
  ClusterSpec c;
  c.name = "toy";
  c.nodes = 4;
  c.gpus_per_node = 8;
  c.intra = {100, 1};  // 100 GB/s, 1 us
  c.inter = {10, 10};  // 10 GB/s, 10 us
  return c;
}

TEST(CollectiveCost, FlatRingsInsideANode) {
  const ClusterSpec c = toy();
  const double B = 1e9;
  // all-gather over 8 in a node: 1 us + (7/8) * 1e9 / 100e9 = 1e-6 + 8.75e-3.
  EXPECT_NEAR(all_gather_s(c, {8, 8}, B), 1e-6 + 8.75e-3, 1e-12);
  EXPECT_NEAR(reduce_scatter_s(c, {8, 8}, B), 1e-6 + 8.75e-3, 1e-12);
  // all-reduce: 1 us + 2 * 8.75e-3.
  EXPECT_NEAR(all_reduce_s(c, {8, 8}, B), 1e-6 + 17.5e-3, 1e-12);
  // all-to-all (Alpa's form): 1 us + (7/64) * 1e9 * 8/2 / 100e9 = 1e-6 + 4.375e-3.
  EXPECT_NEAR(all_to_all_s(c, {8, 8}, B), 1e-6 + 4.375e-3, 1e-12);
  EXPECT_EQ(all_reduce_s(c, {1, 1}, B), 0);
}

TEST(CollectiveCost, AcrossNodesAndHierarchical) {
  const ClusterSpec c = toy();
  const double B = 1e9;
  // One GPU per node, 4 nodes: all-reduce 10 us + 2 * (3/4) * 1e9 / 10e9 = 1e-5 + 0.15.
  EXPECT_NEAR(all_reduce_s(c, {4, 1}, B), 1e-5 + 0.15, 1e-12);
  // 32 GPUs, 8 per node: reduce-scatter in node (1e-6 + 8.75e-3), all-reduce across 4 nodes on B/8
  // (1e-5 + 2 * 3/4 * 0.125e9 / 10e9 = 1e-5 + 0.01875), all-gather in node (1e-6 + 8.75e-3).
  EXPECT_NEAR(all_reduce_s(c, {32, 8}, B), 2 * (1e-6 + 8.75e-3) + 1e-5 + 0.01875, 1e-12);
  // Hierarchical all-gather: across 4 nodes on B/8 (1e-5 + 3/4 * 0.125e9 / 10e9) then in node.
  EXPECT_NEAR(all_gather_s(c, {32, 8}, B), 1e-5 + 0.009375 + 1e-6 + 8.75e-3, 1e-12);
  // p2p: 10 us + 1e9 / 10e9 across nodes; 1 us + 1e9 / 100e9 inside.
  EXPECT_NEAR(p2p_s(c, true, B), 1e-5 + 0.1, 1e-12);
  EXPECT_NEAR(p2p_s(c, false, B), 1e-6 + 0.01, 1e-12);
}

}  // namespace
}  // namespace tuner::parallel
