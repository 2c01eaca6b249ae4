// Tests for tuner/nvrtc_builder.h and tuner/compile_pool.h. NVRTC only: no GPU needed.
#include "tuner/nvrtc_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <regex>
#include <string>
#include <vector>

#include "tuner/compile_pool.h"

namespace tuner {
namespace {

// 64*33 floats = 8448 bytes of static shared memory.
const char* kTileSource = R"(
extern "C" __global__ void __launch_bounds__(256) tile_kernel(const float* in, float* out, int n) {
  __shared__ float tile[64 * 33];
  for (int i = threadIdx.x; i < 64 * 33; i += blockDim.x) tile[i] = in[(blockIdx.x * 64 * 33 + i) % n];
  __syncthreads();
  float acc = 0;
  for (int i = 0; i < 33; ++i) acc += tile[(threadIdx.x + i * 7) % (64 * 33)];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
)";

// A dynamically indexed per-thread array lives in local memory (a stack frame).
const char* kLocalSource = R"(
extern "C" __global__ void local_kernel(const float* in, float* out, int idx) {
  float buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = in[i] * i;
  buf[threadIdx.x % 256] = idx;
  out[threadIdx.x] = buf[(idx * 7) % 256];
}
)";

// 64 live values cannot fit: __launch_bounds__(1024, 1) caps registers at
// 65536/1024 = 64 (ptxas lets that override -maxrregcount=32), minus addressing.
const char* kSpillSource = R"(
extern "C" __global__ void __launch_bounds__(1024, 1) spill_kernel(const float* in, float* out, int n) {
  float v[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) v[i] = in[threadIdx.x + i * n];
  float acc = 0;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int i = 0; i < 64; ++i) acc += v[i] * v[(i * 7 + r) % 64];
  out[threadIdx.x] = acc;
}
)";

// First integer captured by `pattern` in the ptxas log, or -1.
int log_figure(const std::string& log, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(pattern))) return -1;
  return std::stoi(m[1].str());
}

TEST(NvrtcBuilder, ReportsVersionAndArchs) {
  const std::string version = NvrtcBuilder::nvrtc_version();
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+)"))) << version;
  const auto archs = NvrtcBuilder::supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_80"), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90"), archs.end());
}

TEST(NvrtcBuilder, EffectiveOptionsAddArchStdAndInclude) {
  CompileRequest r{kTileSource, "tile_kernel", "sm_90", {"-lineinfo"}};
  const auto options = NvrtcBuilder::effective_options(r);
  EXPECT_EQ(options.front(), "--gpu-architecture=sm_90");
  EXPECT_NE(std::find(options.begin(), options.end(), "-std=c++17"), options.end());
  EXPECT_EQ(options.back(), "-lineinfo");
  EXPECT_TRUE(std::any_of(options.begin(), options.end(), [](const std::string& o) { return o.rfind("-I", 0) == 0; }));
}

TEST(NvrtcBuilder, CompilesTiledKernelForSm80AndSm90) {
  NvrtcBuilder builder;
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const CompileResult r = builder.compile({kTileSource, "tile_kernel", arch, {}});
    ASSERT_EQ(r.status, "ok") << r.log;
    EXPECT_FALSE(r.cubin.empty());
    EXPECT_FALSE(r.from_cache);
    EXPECT_GT(r.compile_ms, 0);
    EXPECT_EQ(r.cache_key.size(), 64u);
    EXPECT_GT(r.resources.registers, 0);
    EXPECT_EQ(r.resources.static_shared_bytes, 64 * 33 * 4);  // 8448
    EXPECT_EQ(r.resources.local_bytes, 0);
    EXPECT_EQ(r.resources.max_threads_per_block, 256);
    // Cross-check the cubin against ptxas -v where the log has the figures.
    if (int regs = log_figure(r.log, R"(Used (\d+) registers)"); regs >= 0) {
      EXPECT_EQ(r.resources.registers, regs);
    }
    if (int smem = log_figure(r.log, R"((\d+) bytes smem)"); smem >= 0) {
      EXPECT_EQ(r.resources.static_shared_bytes, smem);
    }
    if (r.ptxas_spill_bytes >= 0) {
      EXPECT_EQ(r.ptxas_spill_bytes, 0);
    }
  }
}

TEST(NvrtcBuilder, DynamicallyIndexedArrayUsesLocalMemory) {
  NvrtcBuilder builder;
  const CompileResult r = builder.compile({kLocalSource, "local_kernel", "sm_90", {}});
  ASSERT_EQ(r.status, "ok") << r.log;
  EXPECT_GE(r.resources.local_bytes, 256 * 4);
  EXPECT_EQ(r.resources.static_shared_bytes, 0);
  EXPECT_EQ(r.resources.max_threads_per_block, 0);  // no __launch_bounds__
  if (int frame = log_figure(r.log, R"((\d+) bytes stack frame)"); frame >= 0) {
    EXPECT_EQ(r.resources.local_bytes, frame);
  }
}

TEST(NvrtcBuilder, RegisterCapForcesSpills) {
  NvrtcBuilder builder;
  const CompileResult r = builder.compile({kSpillSource, "spill_kernel", "sm_90", {"-maxrregcount=32"}});
  ASSERT_EQ(r.status, "ok") << r.log;
  EXPECT_LE(r.resources.registers, 64);  // the launch bound wins over -maxrregcount=32
  EXPECT_EQ(r.resources.max_threads_per_block, 1024);
  EXPECT_GT(r.resources.local_bytes, 0);
  ASSERT_GT(r.ptxas_spill_bytes, 0) << "ptxas log: " << r.log;
  // Spills live in the stack frame, which is what the cubin records (EIATTR_FRAME_SIZE).
  if (int frame = log_figure(r.log, R"((\d+) bytes stack frame)"); frame >= 0) {
    EXPECT_EQ(r.resources.local_bytes, frame);
  }
}

TEST(NvrtcBuilder, SyntaxErrorIsACompileError) {
  NvrtcBuilder builder;
  const CompileResult r =
      builder.compile({"extern \"C\" __global__ void broken(float* p) { p[0] = ; }", "broken", "sm_90", {}});
  EXPECT_EQ(r.status, "compile_error");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
  EXPECT_TRUE(r.cubin.empty());
}

TEST(NvrtcBuilder, MissingKernelIsACompileError) {
  NvrtcBuilder builder;
  const CompileResult r = builder.compile({kTileSource, "no_such_kernel", "sm_90", {}});
  EXPECT_EQ(r.status, "compile_error");
  EXPECT_NE(r.log.find("no_such_kernel"), std::string::npos) << r.log;
}

TEST(NvrtcBuilder, UnknownOptionIsACompileError) {
  NvrtcBuilder builder;
  const CompileResult r = builder.compile({kTileSource, "tile_kernel", "sm_90", {"--no-such-option"}});
  EXPECT_EQ(r.status, "compile_error");
  EXPECT_FALSE(r.log.empty());
}

TEST(NvrtcBuilderPtxasLog, ParsesSpillsForTheNamedKernel) {
  const std::string log =
      "ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
      "ptxas info    : Function properties for a\n"
      "    0 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Function properties for ab\n"
      "    0 bytes stack frame, 1 bytes spill stores, 1 bytes spill loads\n"
      "ptxas info    : Function properties for b\n"
      "    16 bytes stack frame, 16 bytes spill stores, 32 bytes spill loads\n";
  EXPECT_EQ(parse_ptxas_spill_bytes(log, "a"), 12);   // 4+8
  EXPECT_EQ(parse_ptxas_spill_bytes(log, "b"), 48);   // 16+32
  EXPECT_EQ(parse_ptxas_spill_bytes(log, "ab"), 2);   // 1+1
  EXPECT_EQ(parse_ptxas_spill_bytes(log, "c"), -1);
  EXPECT_EQ(parse_ptxas_spill_bytes("", "a"), -1);
  EXPECT_EQ(parse_ptxas_spill_bytes("    0 bytes stack frame, 3 bytes spill stores, 5 bytes spill loads", "x"), 8);
}

// The line a user is shown: NVRTC's or ptxas's error, not a warning naming a variable error_count, and not the
// empty text before a NUL (ptxas's part of the log followed one, and a user saw "does not compile: ").
TEST(NvrtcBuilderLog, TheFirstErrorLineIsTheErrorsOwn) {
  EXPECT_EQ(first_error_line("k.cu(3): warning #177-D: variable \"error_count\" was declared but never referenced\n"
                             "k.cu(9): error: identifier \"x\" is undefined\n"),
            "k.cu(9): error: identifier \"x\" is undefined");
  EXPECT_EQ(first_error_line("ptxas info    : 0 bytes gmem\nptxas error   : Entry function 'k' uses too much shared "
                             "data (0x10000 bytes, 0xc000 max)\n"),
            "ptxas error   : Entry function 'k' uses too much shared data (0x10000 bytes, 0xc000 max)");
  EXPECT_EQ(first_error_line("ptxas info : x\nptxas fatal   : Unresolved extern function 'f'\n"),
            "ptxas fatal   : Unresolved extern function 'f'");
  EXPECT_EQ(first_error_line("ptxas info : 0 bytes gmem\nkernel 'k' not found in cubin\n\n"),
            "kernel 'k' not found in cubin");
  // A real compile whose ptxas fails: the log holds the error line whole.
  const std::string src = "extern \"C\" __global__ void k(float* o) { __shared__ float s[16384]; "
                          "s[threadIdx.x] = 1.f; __syncthreads(); o[threadIdx.x] = s[(threadIdx.x + 1) % 16384]; }\n";
  const CompileResult r = NvrtcBuilder().compile({src, "k", "sm_90", {}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.log.find('\0'), std::string::npos);
  EXPECT_NE(first_error_line(r.log).find("uses too much shared data"), std::string::npos) << r.log;
}

TEST(CompilePool, ResultsComeBackInRequestOrder) {
  NvrtcBuilder builder;
  CompilePool pool(builder, 4);
  EXPECT_EQ(pool.size(), 4u);
  std::vector<std::future<CompileResult>> futures;
  for (int i = 0; i < 8; ++i) {
    // Request i declares (i+1)*128 floats of shared memory, so results identify their request.
    const std::string n = std::to_string((i + 1) * 128);
    const std::string source = "extern \"C\" __global__ void k" + std::to_string(i) +
                               "(float* out) {\n  __shared__ float s[" + n + "];\n  s[threadIdx.x % " + n +
                               "] = threadIdx.x;\n  __syncthreads();\n  out[threadIdx.x] = s[(threadIdx.x * 3) % " +
                               n + "];\n}\n";
    futures.push_back(pool.submit({source, "k" + std::to_string(i), i % 2 ? "sm_80" : "sm_90", {}}));
  }
  for (int i = 0; i < 8; ++i) {
    const CompileResult r = futures[i].get();
    ASSERT_EQ(r.status, "ok") << r.log;
    EXPECT_EQ(r.resources.static_shared_bytes, (i + 1) * 128 * 4) << "request " << i;
  }
}

TEST(CompilePool, ZeroThreadsMeansHardwareConcurrency) {
  NvrtcBuilder builder;
  CompilePool pool(builder, 0);
  EXPECT_GE(pool.size(), 1u);
  EXPECT_EQ(pool.submit({kTileSource, "tile_kernel", "sm_80", {}}).get().status, "ok");
}

}  // namespace
}  // namespace tuner
