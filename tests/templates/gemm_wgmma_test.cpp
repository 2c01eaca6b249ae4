#include "templates/gemm_wgmma.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "templates/gemm_tc_source.h"
#include "templates/kernel_files.h"
#include "templates/registry.h"
#include "template_checks.h"

namespace tuner::templates {
namespace {

DeviceLimits a100_limits() {
  DeviceLimits l;
  l.arch = "sm_80";
  l.max_shared_per_block_bytes = 163 * 1024;
  return l;
}

TEST(GemmWgmmaTemplate, ContractHoldsForGemmAndBatchedInBothDtypes) {
  for (bool batched : {false, true}) {
    GemmWgmmaTemplate t(batched);
    for (const char* dt : {"f16", "bf16"}) {
      const char* odd = batched ? "B=3,M=200,N=136,K=304" : "M=200,N=136,K=304";
      const char* big = batched ? "B=16,M=512,N=512,K=64" : "M=8192,N=8192,K=8192";
      check_template_contract(t, parse_workload(t.op(), odd, dt), 32);
      check_template_contract(t, parse_workload(t.op(), big, dt), 32);
    }
  }
}

TEST(GemmWgmmaTemplate, RunsOnlyOnHopperAndIsChosenByName) {
  const auto h100 = h100_test_limits();
  const auto a100 = a100_limits();
  GemmWgmmaTemplate t(false);
  EXPECT_EQ(t.unsupported_on(h100), std::nullopt);
  ASSERT_TRUE(t.unsupported_on(a100).has_value());
  EXPECT_NE(t.unsupported_on(a100)->find("sm_80"), std::string::npos) << *t.unsupported_on(a100);
  // The default stays gemm_tc_mma everywhere; the Hopper template is chosen by name, on Hopper only.
  EXPECT_EQ(find_template("gemm", DType::kF16, &h100).name(), "gemm_tc_mma");
  EXPECT_EQ(find_template("gemm", DType::kF16, &h100, "gemm_tc_wgmma").name(), "gemm_tc_wgmma");
  EXPECT_EQ(find_template("batched_gemm", DType::kBF16, &h100, "batched_gemm_tc_wgmma").name(), "batched_gemm_tc_wgmma");
  EXPECT_THROW(find_template("gemm", DType::kF16, &a100, "gemm_tc_wgmma"), std::invalid_argument);
  EXPECT_THROW(find_template("gemm", DType::kF32, &h100, "gemm_tc_wgmma"), std::invalid_argument) << "no f32";
  EXPECT_THROW(find_template("gemm", DType::kF16, &h100, "batched_gemm_tc_wgmma"), std::invalid_argument);
  EXPECT_EQ(template_names("gemm", DType::kF16), "gemm_tc_mma, gemm_tc_wgmma");
}

TEST(GemmWgmmaTemplate, NeedsNAndKMultiplesOfEight) {
  GemmWgmmaTemplate t(false);
  EXPECT_EQ(t.unsupported(parse_workload("gemm", "M=7,N=8,K=16", "f16")), std::nullopt) << "any M";
  auto why = t.unsupported(parse_workload("gemm", "M=200,N=131,K=304", "f16"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("N=131"), std::string::npos) << *why;
  EXPECT_TRUE(t.unsupported(parse_workload("gemm", "M=200,N=136,K=300", "bf16")).has_value());
  // The batched template points to its own mma.sync sibling.
  GemmWgmmaTemplate batched(true);
  auto bwhy = batched.unsupported(parse_workload("batched_gemm", "B=2,M=8,N=12,K=16", "f16"));
  ASSERT_TRUE(bwhy.has_value());
  EXPECT_NE(bwhy->find("batched_gemm_tc_mma takes any shape"), std::string::npos) << *bwhy;
  EXPECT_NE(batched.unsupported_on(a100_limits())->find("batched_gemm_tc_mma"), std::string::npos);
}

TEST(GemmWgmmaTemplate, TensorMapsMatchTheStageTheKernelExpects) {
  GemmWgmmaTemplate t(true);
  auto w = parse_workload("batched_gemm", "B=3,M=200,N=136,K=304", "bf16");
  auto space = t.space(w, h100_test_limits());
  // BM BN CONSUMERS STAGES GROUP_M OUT_F32 SPLIT_K PERSISTENT EPILOGUE CLUSTER PINGPONG CLUSTER_K
  for (const search::Config& c :
       {search::Config{128, 256, 2, 4, 8, 0, 1, 0, 0, 1, 0, 1}, search::Config{64, 192, 1, 6, 1, 1, 4, 132, 0, 1, 0, 1},
        search::Config{64, 32, 1, 12, 1, 0, 2, 0, 1, 1, 0, 1}, search::Config{64, 64, 1, 6, 8, 0, 1, 132, 1, 2, 0, 1},
        search::Config{128, 32, 2, 8, 1, 0, 2, 0, 1, 2, 0, 1}}) {
    ASSERT_TRUE(space.is_valid(c)) << *space.violation(c);
    const auto k = t.instantiate(space, c, w);
    const WgmmaTiling tl = GemmWgmmaTemplate::tiling(space, c, w.dtype);
    EXPECT_TRUE(k.arch_specific);
    EXPECT_EQ(compile_arch(k, h100_test_limits()), "sm_90a");
    ASSERT_EQ(k.tensor_maps.size(), 2u);
    const auto& a = k.tensor_maps[0];
    const auto& b = k.tensor_maps[1];
    EXPECT_EQ(a.buffer, 0);
    EXPECT_EQ(b.buffer, 1);
    EXPECT_EQ(a.dims, (std::vector<uint64_t>{304, 200, 3}));  // {K, M, batch}
    EXPECT_EQ(b.dims, (std::vector<uint64_t>{136, 304, 3}));  // {N, K, batch}
    EXPECT_EQ(a.strides_bytes, (std::vector<uint64_t>{304 * 2, 200 * 304 * 2}));
    EXPECT_EQ(b.strides_bytes, (std::vector<uint64_t>{136 * 2, 304 * 136 * 2}));
    EXPECT_EQ(a.swizzle_bytes, 128);
    EXPECT_EQ(b.swizzle_bytes, tl.bn == 32 ? 64 : 128) << "BN 32: one 32-column box, 64-byte swizzle";
    for (const auto* m : {&a, &b}) {
      EXPECT_EQ(m->box[0] * 2, static_cast<uint32_t>(m->swizzle_bytes)) << "the inner box spans the swizzle exactly";
      for (auto s : m->strides_bytes) EXPECT_EQ(s % 16, 0u);
      for (auto e : m->box) EXPECT_LE(e, 256u);
    }
    // The bytes one stage's copies complete (A's box from each CTA of the cluster plus BN/box columns
    // of B's) are the ring's stage
    // size; the staged epilogue's buffers come after the ring.
    const uint64_t a_box = uint64_t{a.box[0]} * a.box[1] * 2 * static_cast<uint64_t>(tl.cluster), b_box = uint64_t{b.box[0]} * b.box[1] * 2;
    const uint64_t stage = a_box + static_cast<uint64_t>(tl.bn / b.box[0]) * b_box;
    const uint64_t epilogue = tl.epilogue ? static_cast<uint64_t>(tl.consumers) * 4 * kWgmmaEpilogueWarpBytes : 0;
    EXPECT_EQ(stage * static_cast<uint64_t>(tl.stages) + 1024 + epilogue, wgmma_shared_bytes(tl));
    EXPECT_EQ(static_cast<size_t>(k.launch.dynamic_shared_bytes), wgmma_shared_bytes(tl));
    // Each CTA of a cluster loads its share of A's rows (and multicasts it): the stage still holds BM.
    EXPECT_EQ(a.box[1] * static_cast<uint32_t>(tl.cluster), static_cast<uint32_t>(tl.bm));
    EXPECT_EQ(k.launch.block[0], 128u * (1 + static_cast<unsigned>(tl.consumers)));
    // A cluster per (cluster tile, split) and batch in z, or a persistent grid over all 3 batch entries'
    // units (at most one cluster per unit, at most 132 CTAs).
    const unsigned cluster = static_cast<unsigned>(tl.cluster);
    const unsigned groups = ((136 + tl.bn - 1) / tl.bn + cluster - 1) / cluster;
    const unsigned units = static_cast<unsigned>((200 + tl.bm - 1) / tl.bm) * groups * static_cast<unsigned>(tl.split_k);
    EXPECT_EQ(k.launch.grid[2], tl.persistent_ctas ? 1u : 3u);
    EXPECT_EQ(k.launch.grid[0], tl.persistent_ctas ? std::min(3 * units, 132u / cluster) * cluster : units * cluster);
    EXPECT_NE(k.source.find("#define CLUSTER " + std::to_string(tl.cluster) + "\n"), std::string::npos);
    EXPECT_EQ(k.scalar_args, (std::vector<int32_t>{200, 136, 304, 3})) << "M, N, K and the batch";
    // gemm_tc's workspace (split-K partials, then tile counters), zeroed by the runner, on every config.
    ASSERT_EQ(k.buffers.size(), 4u);
    EXPECT_TRUE(k.buffers[3].workspace);
    EXPECT_EQ(k.buffers[3].dtype, DType::kF32);
    EXPECT_EQ(k.buffers[3].elements, tc_workspace_floats(3, 200, 136));
    EXPECT_NE(k.source.find("#define SPLIT_K " + std::to_string(tl.split_k) + "\n"), std::string::npos);
    EXPECT_EQ(k.buffers[2].dtype, tl.out_f32 ? DType::kF32 : DType::kBF16);
    EXPECT_TRUE(k.profile.tensor_cores && k.profile.async_mma);
    // The kernel and the reference take the maps between the pointers and the scalars.
    EXPECT_NE(expand_kernel_files(k.source).find(
                  "float* workspace,\n              const __grid_constant__ TensorMap tmap_a, const __grid_constant__ TensorMap tmap_b, int M, int N, int K,\n              int batches)"),
              std::string::npos);
    EXPECT_NE(k.reference_source.find("#define TENSOR_MAP_ARGS 1\n"), std::string::npos);
    EXPECT_NE(expand_kernel_files(k.reference_source).find("float* workspace,\n                                             const TensorMap tmap_a, const TensorMap tmap_b"),
              std::string::npos);
  }
}

TEST(GemmWgmmaTemplate, DecodeShapesGetSplitKAndPersistentGrids) {
  GemmWgmmaTemplate t(false);
  const auto limits = h100_test_limits();
  // Decode: M=16, N=K=4096: split-K offered up to 8, the persistent grid holds the SM count.
  const auto decode = parse_workload("gemm", "M=16,N=4096,K=4096", "f16");
  auto space = t.space(decode, limits);
  // BM BN CONSUMERS STAGES GROUP_M OUT_F32 SPLIT_K PERSISTENT EPILOGUE CLUSTER PINGPONG CLUSTER_K
  const search::Config c{64, 64, 1, 6, 8, 0, 4, 132, 0, 1, 0, 1};
  ASSERT_TRUE(space.is_valid(c)) << space.violation(c).value_or("");
  EXPECT_FALSE(space.is_valid({64, 64, 1, 6, 8, 0, 4, 114, 0, 1, 0, 1})) << "the persistent grid is this device's SM count";
  const auto k = t.instantiate(space, c, decode);
  // 64 tiles of 64 columns x 4 splits = 256 units on 132 persistent CTAs.
  EXPECT_EQ(k.launch.grid[0], 132u);
  EXPECT_EQ(k.profile.blocks, 256);
  EXPECT_TRUE(k.profile.persistent);
  EXPECT_EQ(k.profile.main_loop_iterations, 16) << "64 k-tiles over 4 splits";
  // Split-K costs the partials: each split writes and the last reads back 16 x 4096 fp32 values.
  const auto unsplit = t.profile(space, {64, 64, 1, 6, 8, 0, 1, 132, 0, 1, 0, 1}, decode);
  EXPECT_DOUBLE_EQ(k.profile.global_bytes - unsplit.global_bytes, 2.0 * 4.0 * 16 * 4096 * 4);
  const auto reduced = t.reduced_space(decode, limits);
  EXPECT_EQ(reduced.knobs()[6].values, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(reduced.knobs()[7].values, (std::vector<int64_t>{0, 132}));
  // Tunable in 200 trials with the compiled prior: the decode space stays near ten thousand (5,760 with
  // the staged epilogue, rings to 16 stages that only small tiles can hold, and 32-column tiles for BM
  // up to 128; 13,440 with 2-CTA clusters and 4-CTA ones for tiles up to 64 columns; 14,384 with
  // pingpong for persistent two-consumer grids without split-K; 15,288 with cluster-K 2 and 4 for the
  // tilings whose tiles leave SMs idle; 13,164 after stop 34 dropped 4-CTA clusters and cluster-K 4), 4096^3
  // (no split-K) smaller.
  RecordProperty("decode_space", static_cast<int>(space.size()));
  EXPECT_EQ(space.size(), 13164u);
  // Clusters: 2 CTAs (4 measured slower everywhere); never more CTAs than block columns.
  EXPECT_FALSE(space.is_valid({64, 32, 1, 16, 1, 0, 1, 0, 1, 4, 0, 1}));
  EXPECT_TRUE(space.is_valid({64, 64, 1, 6, 1, 0, 1, 132, 1, 2, 0, 1}));
  const auto narrow = parse_workload("gemm", "M=64,N=128,K=4096", "f16");
  EXPECT_FALSE(t.space(narrow, limits).is_valid({64, 128, 1, 6, 1, 0, 1, 0, 1, 2, 0, 1})) << "one block column";
  EXPECT_TRUE(t.space(narrow, limits).is_valid({64, 64, 1, 6, 1, 0, 1, 0, 1, 2, 0, 1}));
  // 4096 x 4096 x 512: 2^24 outputs are past the workspace's partials; persistent grids remain.
  const auto short_k = parse_workload("gemm", "M=4096,N=4096,K=512", "f16");
  auto sk = t.space(short_k, limits);
  EXPECT_FALSE(sk.is_valid({128, 128, 2, 4, 8, 0, 2, 0, 0, 1, 0, 1}));
  EXPECT_TRUE(sk.is_valid({128, 128, 2, 4, 8, 0, 1, 132, 0, 1, 0, 1}));
  EXPECT_EQ(t.reduced_space(short_k, limits).knobs()[6].values, (std::vector<int64_t>{1}));
  // Past K's k-tiles no split: K=192 has 3.
  const auto tiny_k = parse_workload("gemm", "M=64,N=512,K=192", "f16");
  EXPECT_TRUE(t.space(tiny_k, limits).is_valid({64, 64, 1, 2, 8, 0, 2, 0, 0, 1, 0, 1}));
  EXPECT_FALSE(t.space(tiny_k, limits).is_valid({64, 64, 1, 2, 8, 0, 4, 0, 0, 1, 0, 1}));
}

TEST(GemmWgmmaTemplate, GeneratedSourceIssuesTheWgmmaShapeOfTheTile) {
  for (int bn : {64, 192, 256}) {
    WgmmaTiling t;
    t.dtype = bn == 192 ? DType::kBF16 : DType::kF16;
    t.bm = 64;
    t.bn = bn;
    t.consumers = 1;
    const std::string config = gemm_wgmma_source(t);
    const std::string src = expand_kernel_files(config);
    // wgmma_tile.cuh picks the asm of BN, its operand type by the element define (f16 or bf16).
    EXPECT_NE(config.find("#define BN " + std::to_string(bn) + "\n"), std::string::npos);
    EXPECT_EQ(config.find("#define ELEM_BF16 1\n") != std::string::npos, bn == 192);
    EXPECT_NE(src.find("#if defined(ELEM_BF16)\n#define WGMMA_AB \"bf16\"\n#else\n#define WGMMA_AB \"f16\""),
              std::string::npos);
    EXPECT_NE(src.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(bn) + "k16.f32.\" WGMMA_AB \".\" WGMMA_AB"),
              std::string::npos);
    // bn/2 accumulator operands, then the two descriptors and the scale-d predicate's source.
    const std::string last = "%" + std::to_string(bn / 2 - 1) + "}, %" + std::to_string(bn / 2) + ", %" +
                             std::to_string(bn / 2 + 1) + ", p, 1, 1, 0, \" WGMMA_TRANS_B \";";
    EXPECT_NE(src.find(last), std::string::npos) << "trans-a 0 (K-major A), trans-b from WGMMA_TRANS_B";
    // The GEMM's B is N-major: trans-b 1 (B_K_MAJOR is conv2d_wgmma's).
    EXPECT_EQ(config.find("B_K_MAJOR"), std::string::npos);
    EXPECT_NE(src.find("#else\n#define WGMMA_TRANS_B \"1\""), std::string::npos);
    EXPECT_NE(src.find("setmaxnreg.inc.sync.aligned.u32"), std::string::npos);
    EXPECT_NE(src.find("cp.async.bulk.tensor.3d"), std::string::npos);
  }
}

TEST(GemmWgmmaTemplate, ConsumersNeverHoldMoreThan128Accumulators) {
  GemmWgmmaTemplate t(false);
  auto w = parse_workload("gemm", "M=8192,N=8192,K=8192", "f16");
  auto space = t.space(w, h100_test_limits());
  ASSERT_GT(space.size(), 50u);
  int pingpongs = 0;
  for (const auto& c : space.enumerate()) {
    const auto tl = GemmWgmmaTemplate::tiling(space, c, w.dtype);
    EXPECT_LE(wgmma_accumulators(tl), 128) << space.to_json_string(c);
    EXPECT_EQ(wgmma_rows_per_consumer(tl) % 64, 0) << space.to_json_string(c);
    EXPECT_LE(wgmma_shared_bytes(tl), static_cast<size_t>(h100_test_limits().max_shared_per_block_bytes));
    if (tl.pingpong) {
      ++pingpongs;
      EXPECT_TRUE(tl.consumers == 2 && tl.persistent_ctas > 0 && tl.split_k == 1) << space.to_json_string(c);
    }
  }
  EXPECT_GT(pingpongs, 0);
  // BM BN CONSUMERS STAGES GROUP_M OUT_F32 SPLIT_K PERSISTENT EPILOGUE CLUSTER PINGPONG CLUSTER_K
  EXPECT_FALSE(space.is_valid({128, 256, 1, 4, 8, 0, 1, 0, 0, 1, 0, 1})) << "one consumer with 256 accumulators";
  EXPECT_TRUE(space.is_valid({128, 256, 2, 4, 8, 0, 1, 0, 0, 1, 0, 1}));
  EXPECT_TRUE(space.is_valid({128, 256, 2, 4, 8, 0, 1, 132, 0, 1, 0, 1})) << "persistent";
  EXPECT_FALSE(space.is_valid({128, 256, 2, 5, 8, 0, 1, 0, 0, 1, 0, 1})) << "5 x 48 KiB stages exceed 227 KiB";
  EXPECT_FALSE(space.is_valid({128, 256, 2, 4, 8, 0, 2, 0, 0, 1, 0, 1})) << "no split-K past 2^21 outputs";
  // Pingpong: each consumer holds a whole unit's accumulators, on a persistent grid.
  EXPECT_TRUE(space.is_valid({128, 128, 2, 4, 8, 0, 1, 132, 1, 1, 1, 1}));
  EXPECT_TRUE(space.is_valid({64, 256, 2, 4, 8, 0, 1, 132, 1, 2, 1, 1})) << "64 rows per consumer, a 2-CTA cluster";
  EXPECT_FALSE(space.is_valid({128, 256, 2, 4, 8, 0, 1, 132, 1, 1, 1, 1})) << "256 accumulators per consumer";
  EXPECT_FALSE(space.is_valid({128, 128, 2, 4, 8, 0, 1, 0, 1, 1, 1, 1})) << "pingpong needs a persistent grid";
  EXPECT_FALSE(space.is_valid({128, 128, 1, 4, 8, 0, 1, 132, 1, 1, 1, 1})) << "pingpong needs two consumers";
}

// Cluster-K: a cluster's CTAs split one tile's k-tiles and rank 0 sums them from distributed shared memory.
// Offered only where the tiles leave SMs idle, with a CTA per unit, no split-K and no N-cluster; the grid has a
// CTA per (tile, rank), the shared memory holds the other ranks' accumulators, and the model sees split-K
// without partials in the workspace.
TEST(GemmWgmmaTemplate, ClusterKSplitsIdleShapesAcrossACluster) {
  GemmWgmmaTemplate t(false);
  const auto limits = h100_test_limits();
  const auto decode = parse_workload("gemm", "M=64,N=4096,K=4096", "f16");
  auto space = t.space(decode, limits);
  // BM BN CONSUMERS STAGES GROUP_M OUT_F32 SPLIT_K PERSISTENT EPILOGUE CLUSTER PINGPONG CLUSTER_K
  const search::Config c{64, 64, 1, 12, 1, 0, 1, 0, 1, 1, 0, 2};
  ASSERT_TRUE(space.is_valid(c)) << space.violation(c).value_or("");
  EXPECT_FALSE(space.is_valid({64, 64, 1, 8, 1, 0, 1, 0, 1, 1, 0, 4})) << "4 ranks: dropped at stop 34";
  EXPECT_FALSE(space.is_valid({64, 64, 1, 12, 1, 0, 1, 132, 1, 1, 0, 2})) << "a CTA per unit";
  EXPECT_FALSE(space.is_valid({64, 64, 1, 12, 1, 0, 2, 0, 1, 1, 0, 2})) << "not with split-K";
  EXPECT_FALSE(space.is_valid({64, 64, 1, 12, 1, 0, 1, 0, 1, 2, 0, 2})) << "not with an N-cluster";
  EXPECT_TRUE(space.is_valid({64, 32, 1, 12, 1, 0, 1, 0, 1, 1, 0, 2})) << "128 tiles leave 4 SMs idle: offered";
  EXPECT_FALSE(t.space(parse_workload("gemm", "M=256,N=4096,K=4096", "f16"), limits)
                   .is_valid({64, 64, 1, 8, 1, 0, 1, 0, 1, 1, 0, 2}))
      << "256 tiles fill the SMs";
  // Dynamic and static shared memory share the limit: a config whose dynamic bytes fit alone but not with
  // the ring's barriers (1,024 bytes of static shared memory) is out (a launch error on the GPU otherwise).
  const size_t dynamic = wgmma_shared_bytes(GemmWgmmaTemplate::tiling(space, c, decode.dtype));
  auto tight = limits;
  tight.max_shared_per_block_bytes = static_cast<int>(dynamic + 512);
  EXPECT_FALSE(t.space(decode, tight).is_valid(c)) << "fits alone, not with the barriers";
  tight.max_shared_per_block_bytes = static_cast<int>(dynamic + 1024);
  EXPECT_TRUE(t.space(decode, tight).is_valid(c)) << space.violation(c).value_or("");
  const auto k = t.instantiate(space, c, decode);
  EXPECT_EQ(k.launch.grid[0], 128u) << "64 tiles x 2 ranks";
  EXPECT_NE(k.source.find("#define CLUSTER_K 2\n"), std::string::npos);
  const auto tl = GemmWgmmaTemplate::tiling(space, c, decode.dtype);
  WgmmaTiling alone = tl;
  alone.cluster_k = 1;
  EXPECT_EQ(wgmma_shared_bytes(tl) - wgmma_shared_bytes(alone), 128u * 32 * 4) << "one rank's 32 accumulators a thread";
  EXPECT_EQ(k.profile.blocks, 128);
  EXPECT_EQ(k.profile.main_loop_iterations, 32) << "64 k-tiles over 2 ranks";
  EXPECT_EQ(k.profile.gemm.split_k, 2);
  EXPECT_TRUE(k.profile.gemm.split_in_cluster);
  // Split-K through the workspace moves partials; cluster-K moves none.
  const auto split = t.profile(space, {64, 64, 1, 12, 1, 0, 2, 0, 1, 1, 0, 1}, decode);
  EXPECT_GT(split.global_bytes, k.profile.global_bytes);
  // Big shapes fill the SMs with tiles: never offered there (the space stays as it was).
  const auto big = parse_workload("gemm", "M=4096,N=4096,K=4096", "f16");
  auto bs = t.space(big, limits);
  for (const auto& bc : bs.enumerate()) ASSERT_EQ(GemmWgmmaTemplate::tiling(bs, bc, big.dtype).cluster_k, 1);
  // Records without the knob are cluster_k 1 and keep their keys.
  const nlohmann::json old = {{"BM", 64}, {"BN", 64}, {"CONSUMERS", 1}, {"STAGES", 12}, {"GROUP_M", 1},
                              {"OUT_F32", 0}, {"SPLIT_K", 1}, {"PERSISTENT", 0}, {"EPILOGUE", 1}};
  const search::Config oc = space.from_json(old);
  EXPECT_EQ(GemmWgmmaTemplate::tiling(space, oc, decode.dtype).cluster_k, 1);
  EXPECT_EQ(nlohmann::json::parse(space.to_json_string(oc)), old);
}

// Records made before PINGPONG existed (no such key) are the cooperative kernel; its configs keep their
// keys, and a pingpong config's source and resources are the ones the kernel asks for.
TEST(GemmWgmmaTemplate, PingpongIsAKnobEarlierRecordsLackAndTheSourceCarries) {
  GemmWgmmaTemplate t(true);
  auto w = parse_workload("batched_gemm", "B=32,M=512,N=512,K=128", "f16");
  auto space = t.space(w, h100_test_limits());
  const nlohmann::json old = {{"BM", 128}, {"BN", 128}, {"CONSUMERS", 2}, {"STAGES", 5},   {"GROUP_M", 1},
                              {"OUT_F32", 0}, {"SPLIT_K", 1}, {"PERSISTENT", 132}, {"EPILOGUE", 1}};
  const search::Config c = space.from_json(old);
  EXPECT_EQ(GemmWgmmaTemplate::tiling(space, c, w.dtype).pingpong, 0);
  EXPECT_EQ(nlohmann::json::parse(space.to_json_string(c)), old) << "a cooperative config's key is unchanged";
  nlohmann::json pp = old;
  pp["PINGPONG"] = 1;
  const search::Config p = space.from_json(pp);
  ASSERT_TRUE(space.is_valid(p)) << space.violation(p).value_or("");
  const auto tl = GemmWgmmaTemplate::tiling(space, p, w.dtype);
  EXPECT_EQ(wgmma_rows_per_consumer(tl), 128);
  EXPECT_EQ(wgmma_accumulators(tl), 128);
  const auto k = t.instantiate(space, p, w);
  EXPECT_NE(k.source.find("#define PINGPONG 1\n"), std::string::npos);
  EXPECT_EQ(k.launch.grid[0], 132u);
  EXPECT_EQ(k.launch.block[0], 384u);
  // The model sees the overlap: one consumer's epilogue under the other's k-tiles.
  EXPECT_TRUE(k.profile.gemm.epilogue_overlapped);
  EXPECT_FALSE(t.instantiate(space, c, w).profile.gemm.epilogue_overlapped);
  // The reduced space (what the GPU tests run) has a pingpong config.
  auto reduced = t.reduced_space(w, h100_test_limits());
  bool any = false;
  for (const auto& rc : reduced.enumerate()) any = any || GemmWgmmaTemplate::tiling(reduced, rc, w.dtype).pingpong;
  EXPECT_TRUE(any);
}

}  // namespace
}  // namespace tuner::templates

namespace tuner::templates {
namespace {

// 128-byte swizzle as TMA writes it and wgmma reads it (CUTLASS's Swizzle<3,4,3> on byte addresses):
// the 16-byte chunk bits [4, 7) are XOR-ed with the 128-byte row bits [7, 10) of a 1024-aligned pattern.
uint32_t swizzle128(uint32_t addr) { return addr ^ (((addr >> 7) & 7u) << 4); }
// The 64-byte swizzle (CUTLASS Swizzle<2,4,3>): the 16-byte chunk within 64 bytes XOR address bits 7-8.
uint32_t swizzle64(uint32_t addr) { return addr ^ (((addr >> 7) & 3u) << 4); }

TEST(GemmWgmmaLayout, DescriptorsReadBackWhatTheTmaBoxesWrote) {
  for (const WgmmaTiling t : {WgmmaTiling{DType::kF16, 128, 256, 2, 4, 8, 0}, WgmmaTiling{DType::kF16, 256, 64, 1, 3, 1, 0},
                              WgmmaTiling{DType::kBF16, 64, 192, 1, 2, 1, 1}, WgmmaTiling{DType::kF16, 64, 32, 1, 12, 1, 0},
                              WgmmaTiling{DType::kF16, 128, 32, 2, 8, 1, 0}}) {
    SCOPED_TRACE(std::to_string(t.bm) + "x" + std::to_string(t.bn) + "/" + std::to_string(t.consumers));
    const WgmmaSmemLayout l = wgmma_smem_layout(t.bn);
    const auto swizzle_b = [&l](uint32_t a) { return l.b_swizzle == 128 ? swizzle128(a) : swizzle64(a); };
    const int box = l.b_box_cols, row_bytes = 2 * l.b_box_cols;
    EXPECT_EQ(row_bytes, l.b_swizzle) << "a box's k-row is one swizzle span";
    // One stage, 1024-aligned at 0. A box: element (row r, k c) at row r of 128 bytes; B box j: element
    // (k r, column c) at row r of its own box (64 k-rows of row_bytes), b_lbo after the previous one.
    const uint32_t a_bytes = static_cast<uint32_t>(t.bm * kWgmmaBk * 2);
    std::vector<uint32_t> smem((a_bytes + (t.bn / box) * l.b_lbo) / 2, 0);
    auto a_tag = [](int r, int c) { return 1u + static_cast<uint32_t>(r * kWgmmaBk + c); };
    auto b_tag = [](int k, int n) { return 100000u + static_cast<uint32_t>(k * 256 + n); };
    for (int r = 0; r < t.bm; ++r)
      for (int c = 0; c < kWgmmaBk; ++c) smem[swizzle128(static_cast<uint32_t>(r * 128 + c * 2)) / 2] = a_tag(r, c);
    for (int j = 0; j < t.bn / box; ++j)
      for (int r = 0; r < kWgmmaBk; ++r)
        for (int c = 0; c < box; ++c)
          smem[swizzle_b(a_bytes + static_cast<uint32_t>(j * l.b_lbo + r * row_bytes + c * 2)) / 2] = b_tag(r, j * box + c);

    // wgmma's canonical layouts (CUTLASS make_gmma_desc): K-major 128B-swizzle A element (m, k) of an
    // m64 x k16 operand at start + (m/8)*SBO + (m%8)*128 + 2k; N-major B element (k, n) at
    // start + (n/box)*LBO + 2*(n%box) + (k/8)*SBO + (k%8)*row_bytes (128B swizzle: box 64, 64B: box 32);
    // the address is then swizzled.
    const int rows_per_consumer = t.bm / t.consumers;
    int mismatches = 0;
    for (int kk = 0; kk < kWgmmaBk / 16; ++kk) {
      for (int c = 0; c < t.consumers; ++c)
        for (int i = 0; i < rows_per_consumer / 64; ++i) {
          const uint32_t start = static_cast<uint32_t>(c * rows_per_consumer * 128 + i * l.a_m64_step + kk * l.a_k16_step);
          for (int m = 0; m < 64; ++m)
            for (int k = 0; k < 16; ++k) {
              const uint32_t at = swizzle128(start + static_cast<uint32_t>((m / 8) * l.a_sbo + (m % 8) * 128 + 2 * k));
              mismatches += smem[at / 2] != a_tag(c * rows_per_consumer + i * 64 + m, kk * 16 + k);
            }
        }
      const uint32_t start = a_bytes + static_cast<uint32_t>(kk * l.b_k16_step);
      for (int n = 0; n < t.bn; ++n)
        for (int k = 0; k < 16; ++k) {
          const uint32_t at = swizzle_b(start + static_cast<uint32_t>((n / box) * l.b_lbo + 2 * (n % box) +
                                                                      (k / 8) * l.b_sbo + (k % 8) * row_bytes));
          mismatches += smem[at / 2] != b_tag(kk * 16 + k, n);
        }
    }
    EXPECT_EQ(mismatches, 0);
  }
  // The generated source carries exactly these strides.
  for (int bn : {128, 32}) {
    WgmmaTiling t;
    t.bn = bn;
    const WgmmaSmemLayout l = wgmma_smem_layout(bn);
    const std::string src = gemm_wgmma_source(t);
    for (const auto& [name, value] : std::vector<std::pair<std::string, int>>{
             {"A_SBO", l.a_sbo}, {"A_LBO", l.a_lbo}, {"A_K16", l.a_k16_step}, {"A_M64", l.a_m64_step},
             {"B_SBO", l.b_sbo}, {"B_LBO", l.b_lbo}, {"B_K16", l.b_k16_step}, {"B_BOX_COLS", l.b_box_cols},
             {"B_SWIZZLE", l.b_swizzle}})
      EXPECT_NE(src.find("#define " + name + " " + std::to_string(value) + "\n"), std::string::npos) << name;
  }
  EXPECT_NE(expand_kernel_files(gemm_wgmma_source(WgmmaTiling{})).find("constexpr unsigned kASbo = A_SBO, kALbo = A_LBO"),
            std::string::npos);
}

TEST(GemmWgmmaLayout, AWrongStrideIsCaught) {
  // The same check with B's k16 step halved reads the wrong k-rows: the emulation can fail.
  WgmmaSmemLayout l = wgmma_smem_layout();
  l.b_k16_step /= 2;
  std::vector<uint32_t> smem(64 * 128 / 2);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) smem[swizzle128(static_cast<uint32_t>(r * 128 + c * 2)) / 2] = static_cast<uint32_t>(r * 64 + c);
  int mismatches = 0;
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 64; ++n) {
      const uint32_t at =
          swizzle128(static_cast<uint32_t>(l.b_k16_step + 2 * n + (k / 8) * l.b_sbo + (k % 8) * 128));  // kk = 1
      mismatches += smem[at / 2] != static_cast<uint32_t>((16 + k) * 64 + n);
    }
  EXPECT_GT(mismatches, 0);
}

}  // namespace
}  // namespace tuner::templates
