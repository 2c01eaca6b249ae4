// The runtime library with a kernel of the user's own (RuntimeOptions::user_kernels), through its public API:
// records that `tuner tune --kernel --spec` made of examples/user_kernel/saxpy on sim:h100-sxm are looked up as
// `tuner query --best` ranks them, from the database and from its best-configs export; records of another text
// of the kernel are not used, and a runtime that was not given the kernel says how to give it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_fixture.h"
#include "tuner/runtime.h"

namespace {

namespace fs = std::filesystem;

class UserKernelRuntime : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tuner_user_runtime_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // The kernel and spec copied, so a test can edit the copies.
    for (const char* f : {"saxpy.cu", "saxpy.json"})
      fs::copy_file(fs::path(TUNER_SOURCE_DIR) / "examples" / "user_kernel" / f, dir_ / f);
    // Three sizes: more than 16 records tie on the sim (a memory-bound kernel), past where std::sort stays stable.
    for (const std::string shape : {"N=1048576", "N=4096", "N=65536"})
      ASSERT_EQ(tuner_cli("tune --kernel " + kernel() + " --spec " + spec() + " --shape " + shape +
                          " --device sim:h100-sxm --trials 12 --strategy random --seed 2 --db " + db()),
                0);
    ASSERT_EQ(tuner_cli("export --format best --db " + db() + " --out " + (dir_ / "best.json").string()), 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static int tuner_cli(const std::string& args) {
    const int status = std::system((std::string(TUNER_BIN) + " " + args + " >" + (dir_ / "out").string() + " 2>" +
                                    (dir_ / "err").string())
                                       .c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  static std::string kernel() { return (dir_ / "saxpy.cu").string(); }
  static std::string spec() { return (dir_ / "saxpy.json").string(); }
  static std::string db() { return (dir_ / "u.db").string(); }

  static tuner::Status open_with(const std::string& source, std::vector<tuner::UserKernelFiles> user,
                                 std::unique_ptr<tuner::Runtime>* rt) {
    tuner::RuntimeOptions o;
    o.source = source;
    o.device_name = "sim:h100-sxm";
    o.cache_dir = (dir_ / "cache").string();
    o.user_kernels = std::move(user);
    return tuner::Runtime::open(o, rt);
  }
  static tuner::Problem saxpy(const std::string& shape) { return {"saxpy_user", shape, tuner::DType::kF32, ""}; }

  static inline fs::path dir_;
};

TEST_F(UserKernelRuntime, LookupGivesTheConfigQueryCallsBestWithItsLaunchAndBuffers) {
  for (const std::string& source : {db(), (dir_ / "best.json").string()}) {
    std::unique_ptr<tuner::Runtime> rt;
    ASSERT_EQ(open_with(source, {{kernel(), spec()}}, &rt), tuner::Status::kOk) << tuner::last_error();
    EXPECT_EQ(rt->records(), source == db() ? 36 : 3)
        << source << ": from the database the 12 measured configs of each of the three shapes, from the file the best";
    for (const std::string shape : {"N=1048576", "N=4096", "N=65536"}) {
      ASSERT_EQ(tuner_cli("query --db " + db() + " --op saxpy_user --shape " + shape + " --best --json"), 0);
      nlohmann::json best = nlohmann::json::parse(tuner_cli_test::slurp((dir_ / "out").string()));
      if (best.is_array()) best = best.at(0);
      tuner::KernelChoice c;
      ASSERT_EQ(rt->lookup(saxpy(shape), &c), tuner::Status::kOk) << tuner::last_error();
      EXPECT_TRUE(c.exact);
      EXPECT_EQ(c.template_name, "saxpy_user");
      EXPECT_EQ(c.kernel_name, "saxpy");
      EXPECT_EQ(nlohmann::json::parse(c.config), best.at("config")) << source << " " << shape;
      const int64_t n = std::stoll(shape.substr(2));
      const nlohmann::json cfg = nlohmann::json::parse(c.config);
      const int64_t per_block = cfg.at("BLOCK").get<int64_t>() * cfg.at("ITEMS").get<int64_t>();
      EXPECT_EQ(c.grid[0], static_cast<unsigned>((n + per_block - 1) / per_block)) << "the spec's grid formula";
      EXPECT_EQ(c.block[0], cfg.at("BLOCK").get<unsigned>());
      EXPECT_EQ(c.buffers, (std::vector<std::string>{"x f32", "y f32", "out f32"}));
    }
    // Its output's type is its spec's: asking another is a wrong question, not a missing record.
    tuner::KernelChoice c;
    EXPECT_EQ(rt->lookup({"saxpy_user", "N=4096", tuner::DType::kF32, "f16"}, &c), tuner::Status::kInvalidArgument);
    EXPECT_NE(tuner::last_error().find("saxpy_user writes its output 'out' in f32 (its spec's), not f16; allowed "
                                       "output dtype: f32"),
              std::string::npos)
        << tuner::last_error();
  }
}

TEST_F(UserKernelRuntime, AnUntunedSizeTakesTheNearestTunedOnesConfigAndBadShapesNameTheSizes) {
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(open_with(db(), {{kernel(), spec()}}, &rt), tuner::Status::kOk) << tuner::last_error();
  tuner::KernelChoice near, tuned;
  ASSERT_EQ(rt->lookup(saxpy("N=8192"), &near), tuner::Status::kOk) << tuner::last_error();
  ASSERT_EQ(rt->lookup(saxpy("N=4096"), &tuned), tuner::Status::kOk);
  EXPECT_FALSE(near.exact);
  EXPECT_EQ(near.tuned_shape, "N=4096");
  EXPECT_EQ(near.config, tuned.config);

  tuner::KernelChoice c;
  EXPECT_EQ(rt->lookup(saxpy("M=8192"), &c), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("expected N"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(rt->lookup({"saxpy_user", "N=4096", tuner::DType::kF16, ""}, &c), tuner::Status::kInvalidArgument)
      << "the spec's dtype is f32";
  EXPECT_NE(tuner::last_error().find("allowed: f32"), std::string::npos) << tuner::last_error();
  // Sizes parse to 2^40 as the spec's do (2^33 said 'at most 2147483647'); one the kernel cannot take (its int
  // argument n) is a wrong question, named, not a missing record.
  EXPECT_EQ(rt->lookup(saxpy("N=8589934592"), &c), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("scalar 'N' = 8589934592 does not fit an int"), std::string::npos)
      << tuner::last_error();
  EXPECT_EQ(rt->lookup(saxpy("N=4096,N=8"), &c), tuner::Status::kInvalidArgument);
}

TEST_F(UserKernelRuntime, WithoutTheKernelItsRecordsAreCountedAndTheOptionNamed) {
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(open_with(db(), {}, &rt), tuner::Status::kOk) << tuner::last_error();
  EXPECT_EQ(rt->records(), 0);
  tuner::KernelChoice c;
  EXPECT_EQ(rt->lookup(saxpy("N=4096"), &c), tuner::Status::kInvalidArgument);
  const std::string e = tuner::last_error();
  EXPECT_NE(e.find("unknown op 'saxpy_user'"), std::string::npos) << e;
  EXPECT_NE(e.find("RuntimeOptions::user_kernels"), std::string::npos) << e;
  EXPECT_NE(e.find(" records of saxpy_user f32 on this device were left out"), std::string::npos) << e;
}

TEST_F(UserKernelRuntime, AnEditedKernelIsAnotherVersionAndTheOriginalStillServesBesideIt) {
  const fs::path edited = dir_ / "edited";
  fs::create_directories(edited);
  fs::copy_file(spec(), edited / "saxpy.json", fs::copy_options::overwrite_existing);
  fs::copy_file(kernel(), edited / "saxpy.cu", fs::copy_options::overwrite_existing);
  std::ofstream((edited / "saxpy.cu").string(), std::ios::app) << "// an edit\n";
  std::unique_ptr<tuner::Runtime> old_rt, new_rt;
  ASSERT_EQ(open_with(db(), {{kernel(), spec()}}, &old_rt), tuner::Status::kOk) << tuner::last_error();
  ASSERT_EQ(open_with(db(), {{(edited / "saxpy.cu").string(), (edited / "saxpy.json").string()}}, &new_rt),
            tuner::Status::kOk)
      << tuner::last_error();
  tuner::KernelChoice c;
  EXPECT_EQ(new_rt->lookup(saxpy("N=4096"), &c), tuner::Status::kNotFound);
  EXPECT_NE(tuner::last_error().find("other texts of the kernel file"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(old_rt->lookup(saxpy("N=4096"), &c), tuner::Status::kOk) << "two runtimes of one op side by side";
}

TEST_F(UserKernelRuntime, BadFilesAndNameClashesAreInvalidArguments) {
  std::unique_ptr<tuner::Runtime> rt;
  EXPECT_EQ(open_with(db(), {{(dir_ / "missing.cu").string(), spec()}}, &rt), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("user_kernels[0]"), std::string::npos) << tuner::last_error();
  EXPECT_NE(tuner::last_error().find("missing.cu"), std::string::npos) << tuner::last_error();
  // In the library's words, not the CLI's flags ("--kernel '...': cannot read the file").
  EXPECT_NE(tuner::last_error().find("user_kernels[0]: kernel '"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(tuner::last_error().find("--"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(open_with(db(), {{kernel(), (dir_ / "missing.json").string()}}, &rt), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("user_kernels[0]: spec '"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(open_with(db(), {{kernel(), ""}}, &rt), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("no spec file"), std::string::npos) << tuner::last_error();
  EXPECT_EQ(open_with(db(), {{kernel(), spec()}, {kernel(), spec()}}, &rt), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("another user kernel"), std::string::npos) << tuner::last_error();

  nlohmann::json j = nlohmann::json::parse(tuner_cli_test::slurp(spec()));
  j["name"] = "gemm_f32_simt";
  std::ofstream((dir_ / "clash.json").string()) << j.dump();
  EXPECT_EQ(open_with(db(), {{kernel(), (dir_ / "clash.json").string()}}, &rt), tuner::Status::kInvalidArgument);
  EXPECT_NE(tuner::last_error().find("built-in template"), std::string::npos) << tuner::last_error();
  EXPECT_FALSE(rt) << "nothing is opened on a failure";
}

TEST_F(UserKernelRuntime, LaunchingWithoutAGpuSaysNoDevice) {
  std::unique_ptr<tuner::Runtime> rt;
  ASSERT_EQ(open_with(db(), {{kernel(), spec()}}, &rt), tuner::Status::kOk) << tuner::last_error();
  float x = 0, y = 0, out = 0;
  const tuner::Status s = rt->launch(saxpy("N=4096"), {&x, &y, &out}, nullptr);
  if (s == tuner::Status::kOk || s == tuner::Status::kLaunchError)
    GTEST_SKIP() << "a GPU is present: tests/gpu launch user kernels";
  EXPECT_EQ(s, tuner::Status::kNoDevice) << tuner::last_error();
  EXPECT_EQ(rt->launch(saxpy("N=4096"), {&x, &y}, nullptr), tuner::Status::kInvalidArgument)
      << "the buffer count is checked before the device";
  EXPECT_NE(tuner::last_error().find("buffer out"), std::string::npos) << tuner::last_error();
}

}  // namespace
