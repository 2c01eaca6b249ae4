// Tests for tuner/compile_cache.h and the builder's use of it.
#include "tuner/compile_cache.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <unistd.h>

#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

const char* kSource = R"(
extern "C" __global__ void __launch_bounds__(256) cached_kernel(const float* in, float* out, int n) {
  __shared__ float tile[64 * 33];
  for (int i = threadIdx.x; i < 64 * 33; i += blockDim.x) tile[i] = in[(blockIdx.x + i) % n];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 5) % (64 * 33)];
}
)";

// A fresh directory per test, removed afterwards.
class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    root_ = fs::temp_directory_path() /
            ("tuner-compile-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  fs::path root_;
};

// Sets an environment variable for one scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CompileCacheSha256, KnownVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Exactly one block of input (64 bytes).
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_F(CompileCacheTest, KeyCoversEveryInput) {
  const CompileRequest base{kSource, "cached_kernel", "sm_90", {"-lineinfo"}};
  const std::string k = CompileCache::key(base, "13.0");
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, CompileCache::key(base, "13.0"));
  CompileRequest other = base;
  other.arch = "sm_80";
  EXPECT_NE(k, CompileCache::key(other, "13.0"));
  other = base;
  other.options = {"-lineinfo", "-maxrregcount=64"};
  EXPECT_NE(k, CompileCache::key(other, "13.0"));
  other = base;
  other.options = {};
  EXPECT_NE(k, CompileCache::key(other, "13.0"));
  other = base;
  other.source += " ";
  EXPECT_NE(k, CompileCache::key(other, "13.0"));
  other = base;
  other.kernel_name = "other";
  EXPECT_NE(k, CompileCache::key(other, "13.0"));
  EXPECT_NE(k, CompileCache::key(base, "13.1"));
  // Field boundaries are unambiguous: moving a character between options changes the key.
  CompileRequest a = base, b = base;
  a.options = {"-ab", "c"};
  b.options = {"-a", "bc"};
  EXPECT_NE(CompileCache::key(a, "13.0"), CompileCache::key(b, "13.0"));
  // A user kernel's named headers: their text is part of what is compiled (an edited header got the old cubin).
  other = base;
  other.headers = {{"/k/inc/a.cuh", "#define A 1\n"}};
  const std::string with = CompileCache::key(other, "13.0");
  EXPECT_NE(k, with);
  other.headers[0].second = "#define A 2\n";
  EXPECT_NE(with, CompileCache::key(other, "13.0"));
  other.headers[0] = {"/k/inc/b.cuh", "#define A 1\n"};
  EXPECT_NE(with, CompileCache::key(other, "13.0"));
}

TEST_F(CompileCacheTest, SecondCompileComesFromCache) {
  CompileCache cache((root_ / "nested" / "kernels").string());  // created lazily, recursively
  NvrtcBuilder builder(&cache);
  const CompileRequest request{kSource, "cached_kernel", "sm_90", {}};

  const CompileResult cold = builder.compile(request);
  ASSERT_EQ(cold.status, "ok") << cold.log;
  EXPECT_FALSE(cold.from_cache);
  EXPECT_TRUE(fs::exists(cache.path_for(cold.cache_key)));
  EXPECT_EQ(cold.cache_key, CompileCache::key(request, NvrtcBuilder::nvrtc_version()));

  const auto start = std::chrono::steady_clock::now();
  const CompileResult warm = builder.compile(request);
  const double warm_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(warm.status, "ok");
  EXPECT_TRUE(warm.from_cache);
  EXPECT_EQ(warm.compile_ms, 0);
  EXPECT_EQ(warm.cubin, cold.cubin);
  EXPECT_EQ(warm.cache_key, cold.cache_key);
  EXPECT_EQ(warm.resources.registers, cold.resources.registers);
  EXPECT_EQ(warm.resources.static_shared_bytes, 8448);
  EXPECT_EQ(warm.resources.max_threads_per_block, 256);
  EXPECT_LT(warm_ms * 5, cold.compile_ms) << "cold " << cold.compile_ms << " ms, cached " << warm_ms << " ms";
  std::printf("[ timing ] cold compile %.2f ms, cache hit %.3f ms\n", cold.compile_ms, warm_ms);

  CompileRequest other_arch = request;
  other_arch.arch = "sm_80";
  const CompileResult r80 = builder.compile(other_arch);
  EXPECT_FALSE(r80.from_cache);
  EXPECT_NE(r80.cache_key, cold.cache_key);
}

TEST_F(CompileCacheTest, CorruptEntryIsAMissAndIsRewritten) {
  CompileCache cache(root_.string());
  NvrtcBuilder builder(&cache);
  const CompileRequest request{kSource, "cached_kernel", "sm_80", {}};
  const CompileResult first = builder.compile(request);
  ASSERT_EQ(first.status, "ok") << first.log;
  const std::string path = cache.path_for(first.cache_key);

  for (const std::string& bad : {std::string("garbage"), first.cubin.substr(0, first.cubin.size() / 2),
                                 std::string()}) {
    write_file(path, bad);
    EXPECT_FALSE(cache.load(first.cache_key));
    const CompileResult again = builder.compile(request);
    ASSERT_EQ(again.status, "ok");
    EXPECT_FALSE(again.from_cache);
    EXPECT_EQ(read_file(path), first.cubin);
    EXPECT_TRUE(builder.compile(request).from_cache);
  }

  // A well-formed cubin that lacks the kernel is also a miss.
  const CompileResult other = NvrtcBuilder().compile(
      {"extern \"C\" __global__ void other(float* p) { p[0] = 1; }", "other", "sm_80", {}});
  ASSERT_EQ(other.status, "ok");
  write_file(path, other.cubin);
  EXPECT_FALSE(builder.compile(request).from_cache);
  EXPECT_EQ(read_file(path), first.cubin);
}

TEST_F(CompileCacheTest, StoreLoadAndNoLeftoverTempFiles) {
  CompileCache cache((root_ / "c").string());
  EXPECT_FALSE(cache.load("0123"));  // dir does not exist yet
  const CompileResult r = NvrtcBuilder().compile({kSource, "cached_kernel", "sm_90", {}});
  ASSERT_EQ(r.status, "ok");
  EXPECT_TRUE(cache.store("k1", r.cubin));
  EXPECT_EQ(cache.load("k1"), r.cubin);
  EXPECT_TRUE(cache.store("k2", "not a cubin"));  // store does not judge content...
  EXPECT_FALSE(cache.load("k2"));                  // ...but load rejects what is not a cubin
  int files = 0;
  for (const auto& entry : fs::directory_iterator(cache.dir())) {
    EXPECT_EQ(entry.path().extension(), ".cubin") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
}

TEST_F(CompileCacheTest, UnwritableDirectoryDoesNotThrow) {
  const fs::path regular_file = root_ / "a-file";
  write_file(regular_file.string(), "x");
  CompileCache cache((regular_file / "sub" / "dir").string());
  bool stored = true;
  EXPECT_NO_THROW(stored = cache.store("key", "bytes"));
  EXPECT_FALSE(stored);
  EXPECT_FALSE(cache.load("key"));
  NvrtcBuilder builder(&cache);
  CompileResult r;
  EXPECT_NO_THROW(r = builder.compile({kSource, "cached_kernel", "sm_90", {}}));
  EXPECT_EQ(r.status, "ok");
  EXPECT_FALSE(r.from_cache);
}

TEST_F(CompileCacheTest, DefaultDirFollowsEnvironment) {
  {
    ScopedEnv env("TUNER_CACHE_DIR", "/some/where/cache");
    EXPECT_EQ(CompileCache::default_dir(), "/some/where/cache");
  }
  ScopedEnv no_tuner("TUNER_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(CompileCache::default_dir(), "/xdg/tuner/kernels");
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(CompileCache::default_dir(), "/home/someone/.cache/tuner/kernels");
  EXPECT_EQ(CompileCache("/d").path_for("abc"), "/d/abc.cubin");
}

/// Sets a cache file's modification time `age` into the past (what eviction orders by).
void age_file(const std::string& path, std::chrono::seconds age) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

TEST_F(CompileCacheTest, EvictionRemovesLeastRecentlyUsedDownToTheCap) {
  CompileCache cache((root_ / "c").string(), 0);  // no automatic cap: evict() is called here
  const std::string kb(1024, 'x');
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(cache.store("k" + std::to_string(i), kb));
    age_file(cache.path_for("k" + std::to_string(i)), std::chrono::seconds(3600 - 60 * i));  // k0 oldest
  }
  EXPECT_EQ(cache.usage().files, 10);
  EXPECT_EQ(cache.usage().bytes, 10u * 1024);
  // A load is a use: k1 becomes the most recent although it was stored second.
  const CompileResult r = NvrtcBuilder().compile({kSource, "cached_kernel", "sm_90", {}});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(cache.store("k1", r.cubin));
  age_file(cache.path_for("k1"), std::chrono::seconds(7200));
  ASSERT_TRUE(cache.load("k1"));  // refreshes k1's time to now
  EXPECT_EQ(cache.evict(6 * 1024 + r.cubin.size(), std::chrono::seconds(0)), 3);
  for (int i : {0, 2, 3}) EXPECT_FALSE(fs::exists(cache.path_for("k" + std::to_string(i)))) << i;
  for (int i : {1, 4, 9}) EXPECT_TRUE(fs::exists(cache.path_for("k" + std::to_string(i)))) << i;
  EXPECT_EQ(cache.evict(1 << 30), 0);  // under the cap: nothing goes
}

TEST_F(CompileCacheTest, EvictionSparesYoungFilesAndTheCapHoldsWhileStoring) {
  CompileCache cache((root_ / "c").string(), 0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(cache.store("y" + std::to_string(i), std::string(4096, 'y')));
  EXPECT_EQ(cache.evict(0, std::chrono::seconds(60)), 0);  // all stored just now: a worker may need them
  EXPECT_EQ(cache.usage().files, 4);

  // With a cap, storing keeps the directory near it (checked every 32 stores).
  CompileCache capped((root_ / "capped").string(), 40 * 1024);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(capped.store("c" + std::to_string(i), std::string(1024, 'c')));
    age_file(capped.path_for("c" + std::to_string(i)), std::chrono::seconds(10000 - i));
  }
  EXPECT_LE(capped.usage().bytes, 40u * 1024 + 31 * 1024);
  EXPECT_TRUE(fs::exists(capped.path_for("c99")));
  EXPECT_FALSE(fs::exists(capped.path_for("c0")));
}

TEST_F(CompileCacheTest, CapComesFromTheEnvironment) {
  {
    ScopedEnv env("TUNER_CACHE_MAX_MB", "64");
    EXPECT_EQ(CompileCache::default_max_bytes(), uint64_t{64} << 20);
  }
  {
    ScopedEnv env("TUNER_CACHE_MAX_MB", "0");
    EXPECT_EQ(CompileCache::default_max_bytes(), 0u);
  }
  ScopedEnv env("TUNER_CACHE_MAX_MB", "lots");
  testing::internal::CaptureStderr();
  EXPECT_EQ(CompileCache::default_max_bytes(), uint64_t{2} << 30);
  // Said once (it was silent), not at every lookup.
  EXPECT_EQ(CompileCache::default_max_bytes(), uint64_t{2} << 30);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("TUNER_CACHE_MAX_MB 'lots' is not a number"), std::string::npos) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
}

}  // namespace
}  // namespace tuner
