// Tests for templates/kernel_files.h: the embedded kernel files are exactly templates/kernels/*.cuh
// (text and SHA-256), a config's source names every file it includes with its hash (so the compile
// cache key follows the files' text) and carries every knob of the config as a #define, and the
// expanded source is one self-contained text.
#include "templates/kernel_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "costmodel/gpu_spec.h"
#include "templates/gemm_f32_source.h"
#include "templates/registry.h"
#include "tuner/compile_cache.h"
#include "tuner/device_registry.h"

namespace tuner::templates {
namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::filesystem::path kKernelDir = std::filesystem::path(TUNER_SOURCE_DIR) / "templates" / "kernels";

TEST(KernelFiles, EmbeddedFilesAreTheKernelDirectoryAsItIsNow) {
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(kKernelDir))
    if (e.path().extension() == ".cuh") on_disk.insert(e.path().filename().string());
  std::set<std::string> embedded;
  for (const auto& f : kernel_files()) {
    embedded.insert(f.name);
    // A stale build would embed old text: the custom command re-runs when a file changes.
    EXPECT_EQ(std::string(f.text), read_text(kKernelDir / f.name)) << f.name;
    EXPECT_EQ(std::string(f.sha256), sha256_hex(f.text)) << f.name;
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_GE(embedded.size(), 13u);
  EXPECT_THROW(kernel_file("no_such.cuh"), std::invalid_argument);
}

TEST(KernelFiles, ClosureFollowsIncludesTransitivelyOnce) {
  const auto c = kernel_file_closure("gemm_tc.cuh");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0], "gemm_tc.cuh");
  for (const char* dep : {"element.cuh", "tc_ptx.cuh", "output_tile.cuh"})
    EXPECT_EQ(std::count(c.begin(), c.end(), dep), 1) << dep;
  // softmax_rows.cuh -> row_norm.cuh -> element.cuh, row_stats.cuh
  const auto s = kernel_file_closure("softmax_rows.cuh");
  EXPECT_EQ(s, (std::vector<std::string>{"softmax_rows.cuh", "row_norm.cuh", "element.cuh", "row_stats.cuh"}));
}

TEST(KernelFiles, ConfigSourceNamesItsFilesHashesAndDefines) {
  const std::string src = gemm_f32_source(GemmTiling{.bm = 128, .bn = 64, .tm = 8, .tn = 4, .bk = 16, .vec = 2,
                                                     .stages = 1, .pad = 1, .group_m = 8});
  for (const char* d : {"#define BM 128\n", "#define BN 64\n", "#define TM 8\n", "#define TN 4\n", "#define BK 16\n",
                        "#define VEC 2\n", "#define STAGES 1\n", "#define PAD 1\n", "#define GROUP_M 8\n",
                        "#define BATCHED 0\n", "#include \"gemm_f32.cuh\"\n"})
    EXPECT_NE(src.find(d), std::string::npos) << d << " in\n" << src;
  // The hash of every file it includes, transitively: editing output_tile.cuh changes this source and
  // with it the compile cache key (CompileCache::key hashes the source).
  for (const char* f : {"gemm_f32.cuh", "output_tile.cuh"}) {
    const std::string tag = std::string(f) + "@" + sha256_hex(read_text(kKernelDir / f)).substr(0, 16);
    EXPECT_NE(src.find(tag), std::string::npos) << tag << " in\n" << src;
  }
  EXPECT_EQ(src.find("element.cuh"), std::string::npos) << "gemm_f32 does not include element.cuh";
}

TEST(KernelFiles, EveryTemplateSourceDefinesEveryKnobAndExpandsToOneText) {
  const auto h100 = limits_of(*costmodel::find_gpu_spec("h100-sxm"));
  const std::vector<std::pair<std::string, std::string>> workloads = {
      {"gemm", "M=256,N=256,K=256"}, {"batched_gemm", "B=2,M=256,N=256,K=256"},
      {"conv2d", "N=1,H=16,W=16,C=16,K=32,R=3,S=3,stride=1,pad=1"}, {"softmax", "rows=64,cols=1024"},
      {"layernorm", "rows=64,cols=1024"}};
  int checked = 0;
  for (const KernelTemplate* t : all_templates()) {
    for (const auto& [op, shape] : workloads) {
      if (op != t->op()) continue;
      const DType d = t->dtypes().back();
      const Workload w = parse_workload(op, shape, to_string(d));
      if (t->unsupported(w) || t->unsupported_on(h100)) continue;
      const auto space = t->reduced_space(w, h100);
      ASSERT_GT(space.size(), 0u) << t->name();
      const auto c = space.at(space.size() / 2);
      const KernelInstance k = t->instantiate(space, c, w);
      const auto json = nlohmann::json::parse(space.to_json_string(c));
      for (const auto& [knob, value] : json.items()) {
        const std::string define = "#define " + knob + " " + std::to_string(value.get<long long>()) + "\n";
        EXPECT_NE(k.source.find(define), std::string::npos) << t->name() << ": " << define << "in\n" << k.source;
      }
      const std::string elem = d == DType::kBF16 ? "#define ELEM_BF16 1\n" : d == DType::kF16 ? "#define ELEM_F16 1\n" : "";
      if (!elem.empty()) {
        EXPECT_NE(k.source.find(elem), std::string::npos) << t->name();
      }
      for (const std::string& s : {k.source, k.reference_source}) {
        const std::string all = expand_kernel_files(s);
        EXPECT_EQ(all.find("#include \""), std::string::npos) << t->name();
        EXPECT_GT(all.size(), s.size() * 4) << t->name();
      }
      EXPECT_NE(expand_kernel_files(k.source).find("__global__"), std::string::npos) << t->name();
      // The template's version text holds the text of the file its source includes.
      const size_t open = k.source.rfind("#include \"") + 10;
      const std::string entry = k.source.substr(open, k.source.find('"', open) - open);
      EXPECT_NE(t->source_text().find(kernel_file(entry).text), std::string::npos) << t->name() << " " << entry;
      ++checked;
    }
  }
  EXPECT_GE(checked, 9);
}

// Each template's version covers its own kernel and reference files only: softmax_rows and layernorm_rows shared
// one hash, so an edit of one op's kernel made the other's records a previous version.
TEST(KernelFiles, TheRowTemplatesAreVersionedByTheirOwnKernelsOnly) {
  const KernelTemplate& softmax = find_template("softmax", DType::kF16, nullptr, "softmax_rows");
  const KernelTemplate& layernorm = find_template("layernorm", DType::kF16, nullptr, "layernorm_rows");
  EXPECT_NE(softmax.source_text(), layernorm.source_text());
  EXPECT_EQ(softmax.source_text().find(kernel_file("layernorm_rows.cuh").text), std::string::npos);
  EXPECT_EQ(layernorm.source_text().find(kernel_file("softmax_rows.cuh").text), std::string::npos);
  // What both include (row_norm.cuh) versions both.
  for (const KernelTemplate* t : {&softmax, &layernorm})
    EXPECT_NE(t->source_text().find(kernel_file("row_norm.cuh").text), std::string::npos) << t->name();
}

}  // namespace
}  // namespace tuner::templates
