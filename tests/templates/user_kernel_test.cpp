// Tests for templates/user_kernel.h and user_kernel_spec.h on the example of examples/user_kernel/: the
// space the spec's knobs and constraints give, an instance's source, launch, buffers and reference, the
// sim profile from the spec's formulas, and that its source compiles with NVRTC.
#include "templates/user_kernel.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "costmodel/gpu_spec.h"
#include "templates/launch_check.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"

namespace tuner::templates {
namespace {

const std::string kDir = std::string(TUNER_SOURCE_DIR) + "/examples/user_kernel/";

std::string read(const std::string& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

UserKernelTemplate example(const std::string& shape = "") {
  return UserKernelTemplate(parse_user_kernel_spec(kDir + "saxpy.json", read(kDir + "saxpy.json"), kDir + "saxpy.cu",
                                                   read(kDir + "saxpy.cu"), shape));
}

TEST(UserKernel, SpaceInstanceAndReferenceFollowTheSpec) {
  const UserKernelTemplate t = example("N=5000");
  const Workload w = t.workload();
  EXPECT_EQ(w.op, "saxpy_user");
  EXPECT_EQ(w.shape_string(), "N=5000");
  const auto limits = limits_of(*costmodel::find_gpu_spec("h100-sxm"));
  const auto space = t.space(w, limits);
  EXPECT_EQ(space.size(), 19u);  // 5 BLOCKs x 4 ITEMS, less BLOCK 1024 x ITEMS 8 (8192 > 4096)
  const search::Config c{256, 8};  // BLOCK, ITEMS
  ASSERT_TRUE(space.is_valid(c));
  const KernelInstance k = t.instantiate(space, c, w);
  EXPECT_NE(k.source.find("#define BLOCK 256\n#define ITEMS 8\n#line 1 \"" + kDir + "saxpy.cu\"\n"), std::string::npos)
      << k.source;
  EXPECT_EQ(k.kernel_name, "saxpy");
  EXPECT_EQ(k.launch.grid[0], 3u);  // ceil(5000 / 2048)
  EXPECT_EQ(k.launch.block[0], 256u);
  ASSERT_EQ(k.buffers.size(), 3u);
  EXPECT_TRUE(k.buffers[2].output && !k.buffers[0].output);
  EXPECT_EQ(k.buffers[1].elements, 5000);
  EXPECT_EQ(k.scalar_args, std::vector<int32_t>{5000});
  EXPECT_EQ(k.reference_kernel_name, "saxpy_reference");
  EXPECT_EQ(k.reference_launch.grid[0], 20u);  // ceil(5000 / 256)
  EXPECT_NE(k.reference_source.find("#define BLOCK 64\n#define ITEMS 1\n"), std::string::npos) << "smallest values";
  EXPECT_DOUBLE_EQ(k.profile.flops, 10000);  // 2 * N
  EXPECT_DOUBLE_EQ(k.profile.dram_bytes, 60000);  // 12 * N
  EXPECT_EQ(k.profile.ilp, 8);
  EXPECT_EQ(k.profile.blocks, 3);
  EXPECT_DOUBLE_EQ(k.tolerance, 1e-6);
}

TEST(UserKernel, AGridPastTheDevicesLimitIsNamedWithItsValue) {
  // A grid formula past 2^31 - 1 read as "grid x is 0" in the runtime's passed-over reason.
  std::string spec = read(kDir + "saxpy.json");
  const std::string grid = "ceil_div(N, BLOCK * ITEMS)";
  spec.replace(spec.find(grid), grid.size(), "N * 600000");
  const UserKernelTemplate t(parse_user_kernel_spec("s.json", spec, kDir + "saxpy.cu", read(kDir + "saxpy.cu"), "N=5000"));
  const auto limits = limits_of(*costmodel::find_gpu_spec("h100-sxm"));
  const search::ConfigSpace space = t.space(t.workload(), limits);
  EXPECT_EQ(space.size(), 0u) << "no config launches";
  const KernelInstance k = t.instantiate(space, {256, 1}, t.workload());
  EXPECT_EQ(k.launch.grid[0], 3000000000u);
  EXPECT_EQ(launch_problem(k.launch, 32, 0, limits).value_or(""), "grid x = 3000000000 > 2147483647");
  spec.replace(spec.find("N * 600000"), 10, "N * 6000000");  // past 2^32 - 1: named at that bound
  const UserKernelTemplate u(parse_user_kernel_spec("s.json", spec, kDir + "saxpy.cu", read(kDir + "saxpy.cu"), "N=5000"));
  EXPECT_EQ(launch_problem(u.instantiate(space, {256, 1}, u.workload()).launch, 32, 0, limits).value_or(""),
            "grid x = 4294967295 > 2147483647");
}

TEST(UserKernel, VersionFollowsTheKernelText) {
  const auto spec = read(kDir + "saxpy.json");
  const UserKernelTemplate a(parse_user_kernel_spec("s.json", spec, "k.cu", read(kDir + "saxpy.cu"), ""));
  const UserKernelTemplate b(parse_user_kernel_spec("s.json", spec, "k.cu", read(kDir + "saxpy.cu") + "// x\n", ""));
  EXPECT_NE(a.source_text(), b.source_text());
  EXPECT_EQ(a.source_text(), example().source_text().substr(0, a.source_text().size()));
}

TEST(UserKernel, CompilesWithNvrtc) {
  const UserKernelTemplate t = example();
  const auto limits = limits_of(*costmodel::find_gpu_spec("h100-sxm"));
  const auto space = t.space(t.workload(), limits);
  const KernelInstance k = t.instantiate(space, space.at(0), t.workload());
  NvrtcBuilder builder(nullptr);
  const auto r = builder.compile({k.source, k.kernel_name, limits.arch, {}});
  ASSERT_TRUE(r.ok()) << r.log;
  EXPECT_GT(r.resources.registers, 0);
  const auto ref = builder.compile({k.reference_source, k.reference_kernel_name, limits.arch, {}});
  ASSERT_TRUE(ref.ok()) << ref.log;
  // A compile error names the user's file and line (#line).
  const auto bad = builder.compile({k.source + "\nthis is not cuda;\n", k.kernel_name, limits.arch, {}});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.log.find("saxpy.cu(22)"), std::string::npos) << bad.log;
}

TEST(UserKernelSpec, ShapeOverridesAndBadValues) {
  EXPECT_EQ(example("N=77").workload().shape_string(), "N=77");
  EXPECT_THROW(example("M=77"), SpecError);
  EXPECT_THROW(example("N=0"), SpecError);
  const std::string spec = read(kDir + "saxpy.json"), text = read(kDir + "saxpy.cu");
  auto error_of = [&](const std::string& from, const std::string& to) -> std::string {
    std::string s = spec;
    s.replace(s.find(from), from.size(), to);
    try {
      parse_user_kernel_spec("s.json", s, "k.cu", text, "");
    } catch (const SpecError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of("\"role\": \"output\"", "\"role\": \"out\""),
            "spec s.json: buffers[2].role: \"out\" is not a role; allowed: input, output, workspace");
  EXPECT_EQ(error_of("[64, 128, 256, 512, 1024]", "[64, 64]"), "spec s.json: knobs.BLOCK: value 64 is repeated");
  EXPECT_EQ(error_of("\"kernel\": \"saxpy\"", "\"kernel\": \"saxpy_v2\""),
            "spec s.json: kernel: 'saxpy_v2' does not appear in k.cu; allowed: saxpy, saxpy_reference");
  EXPECT_EQ(error_of("\"scalars\": [\"N\"]", "\"scalars\": [\"BLOCK\"]"),
            "spec s.json: scalars[0]: unknown name 'BLOCK' in 'BLOCK'; allowed: N");
}

}  // namespace
}  // namespace tuner::templates
