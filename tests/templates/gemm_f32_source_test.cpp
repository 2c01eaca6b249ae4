#include "templates/gemm_f32_source.h"

#include "templates/kernel_files.h"

#include <gtest/gtest.h>

#include <string>

namespace tuner::templates {
namespace {

bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

TEST(GemmF32Source, ThreadsArithmetic) {
  // Defaults: (64/4) * (64/4) = 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{}), 256);
  // 128x128 with 8x8: (128/8) * (128/8) = 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 128, .bn = 128, .tm = 8, .tn = 8, .bk = 8}), 256);
  // 128x64 with 8x4: (128/8) * (64/4) = 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 128, .bn = 64, .tm = 8, .tn = 4}), 256);
  // 256x128 with 16x8: (256/16) * (128/8) = 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 256, .bn = 128, .tm = 16, .tn = 8}), 256);
  // 64x256 with 4x16: (64/4) * (256/16) = 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 64, .bn = 256, .tm = 4, .tn = 16}), 256);
  // 32x32 with 2x2: (32/2) * (32/2) = 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 32, .bn = 32, .tm = 2, .tn = 2}), 256);
  // 64x32 with 4x1: (64/4) * (32/1) = 16 * 32 = 512.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 64, .bn = 32, .tm = 4, .tn = 1}), 512);
  // 16x16 with 1x1: 16 * 16 = 256.
  EXPECT_EQ(gemm_threads(GemmTiling{.bm = 16, .bn = 16, .tm = 1, .tn = 1}), 256);
}

TEST(GemmF32Source, SharedBytesArithmetic) {
  // stages * bk * ((bm+pad) + (bn+pad)) * 4 bytes.
  // Defaults: 2 * 16 * (64 + 64) * 4 = 2 * 16 * 128 * 4 = 16384.
  EXPECT_EQ(gemm_shared_bytes(GemmTiling{}), 16384u);
  // 128x128, bk 8, 2 stages, pad 0: 2 * 8 * 256 * 4 = 16384.
  EXPECT_EQ(gemm_shared_bytes(GemmTiling{.bm = 128, .bn = 128, .tm = 8, .tn = 8, .bk = 8}), 16384u);
  // Same with pad 4: 2 * 8 * (132 + 132) * 4 = 2 * 8 * 264 * 4 = 16896.
  EXPECT_EQ(gemm_shared_bytes(GemmTiling{.bm = 128, .bn = 128, .tm = 8, .tn = 8, .bk = 8, .pad = 4}), 16896u);
  // 1 stage, 128x64, bk 16, pad 0: 1 * 16 * (128 + 64) * 4 = 16 * 192 * 4 = 12288.
  EXPECT_EQ(gemm_shared_bytes(GemmTiling{.bm = 128, .bn = 64, .tm = 8, .tn = 4, .bk = 16, .stages = 1}), 12288u);
  // 256x128, bk 32, 2 stages, pad 4: 2 * 32 * (260 + 132) * 4 = 2 * 32 * 392 * 4 = 100352 (> 48 KiB).
  EXPECT_EQ(gemm_shared_bytes(GemmTiling{.bm = 256, .bn = 128, .tm = 16, .tn = 8, .bk = 32, .pad = 4}), 100352u);
  // 16x16, bk 8, 1 stage, pad 1: 1 * 8 * (17 + 17) * 4 = 8 * 34 * 4 = 1088.
  EXPECT_EQ(gemm_shared_bytes(GemmTiling{.bm = 16, .bn = 16, .tm = 1, .tn = 1, .bk = 8, .stages = 1, .pad = 1}),
            1088u);
}

TEST(GemmF32Source, SourceDefinesTheTilingAndIncludesTheKernelFile) {
  const GemmTiling t{.bm = 128, .bn = 64, .tm = 8, .tn = 4, .bk = 32, .vec = 2, .stages = 1, .pad = 4, .group_m = 8};
  const std::string src = gemm_f32_source(t);
  for (const char* d : {"#define BM 128\n", "#define BN 64\n", "#define TM 8\n", "#define TN 4\n", "#define BK 32\n",
                        "#define VEC 2\n", "#define STAGES 1\n", "#define PAD 4\n", "#define GROUP_M 8\n",
                        "#define WARP_N 0\n", "#define FRAG_DB 0\n", "#define CP_ASYNC 0\n",
                        "#define BATCHED 0\n", "#include \"gemm_f32.cuh\"\n"})
    EXPECT_TRUE(contains(src, d)) << d;
  // What NVRTC compiles, as one text: the kernel file with its constants taken from the macros.
  const std::string all = expand_kernel_files(src);
  EXPECT_TRUE(contains(all, "extern \"C\""));
  EXPECT_TRUE(contains(all, "#define GEMM_F32_KERNEL " + std::string(kGemmKernelName) + "\n"));
  EXPECT_TRUE(contains(all, "__launch_bounds__(kThreads"));
  EXPECT_TRUE(contains(all, "extern __shared__"));
  EXPECT_TRUE(contains(all, "constexpr int kBM = BM;"));
  EXPECT_TRUE(contains(all, "constexpr int kGroupM = GROUP_M;"));
  EXPECT_TRUE(contains(all, "raster_block"));  // output_tile.cuh
  EXPECT_TRUE(contains(all, "F32_HD int f32_row_base"));  // gemm_f32_layout.cuh
  EXPECT_TRUE(contains(all, "cp.async.ca.shared.global"));  // cp_async.cuh
  // Warp tiling and the two pipeline knobs go in as macros; warp_n = 0 is one group for the block.
  const GemmTiling w{.bm = 128, .bn = 128, .tm = 8, .tn = 8, .bk = 8, .warp_n = 8, .frag_db = true, .cp_async = true};
  const std::string warp = gemm_f32_source(w);
  for (const char* d : {"#define WARP_N 8\n", "#define FRAG_DB 1\n", "#define CP_ASYNC 1\n"})
    EXPECT_TRUE(contains(warp, d)) << d;
  EXPECT_EQ(w.wm(), 32);  // 4 x 8 lanes of 8 x 8 registers
  EXPECT_EQ(w.wn(), 64);
  EXPECT_EQ(t.wm(), 128);  // warp_n = 0: the block tile
  EXPECT_EQ(t.wn(), 64);
  EXPECT_FALSE(contains(all, "#include \""));
  EXPECT_FALSE(contains(all, "@BM@")) << "no placeholders of the old string generator";
  EXPECT_FALSE(contains(all, "__shared__ float "));
}

TEST(GemmF32Source, DifferentTilingsGiveDifferentSources) {
  const GemmTiling a{};
  GemmTiling b{};
  b.pad = 4;
  GemmTiling c{};
  c.group_m = 8;
  EXPECT_NE(gemm_f32_source(a), gemm_f32_source(b));
  EXPECT_NE(gemm_f32_source(a), gemm_f32_source(c));
  EXPECT_NE(gemm_f32_source(b), gemm_f32_source(c));
  EXPECT_EQ(gemm_f32_source(a), gemm_f32_source(GemmTiling{}));  // deterministic
}

TEST(GemmF32Source, TemplateTextIndependentOfTiling) {
  const std::string text = gemm_f32_template_text();
  EXPECT_EQ(text, gemm_f32_template_text());
  EXPECT_TRUE(contains(text, "constexpr int kBM = BM;"));
  EXPECT_TRUE(contains(text, "constexpr int kGroupM = GROUP_M;"));
  // The template text is the kernel files' text, so every fixed piece of a compiled source appears in it.
  const std::string src = expand_kernel_files(gemm_f32_source(GemmTiling{.bm = 128, .bn = 128, .tm = 8, .tn = 8, .bk = 8}));
  const size_t body_at = src.find("constexpr int kThreads = ");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_TRUE(contains(text, src.substr(body_at)));
}

TEST(GemmF32Source, ReferenceSource) {
  const std::string ref = expand_kernel_files(gemm_f32_reference_source());
  EXPECT_TRUE(contains(ref, "extern \"C\""));
  EXPECT_TRUE(contains(ref, "#define GEMM_F32_REFERENCE " + std::string(kGemmReferenceKernelName) + "\n"));
  EXPECT_TRUE(contains(ref, "double acc"));
  EXPECT_FALSE(contains(ref, "#include \""));
  EXPECT_FALSE(contains(gemm_f32_template_text(), kGemmReferenceKernelName));
}

}  // namespace
}  // namespace tuner::templates
