// Compiles every kernel file of templates/kernels/ with nvcc's device front end (--ptx -fdevice-syntax-only)
// for sm_80 and sm_90 with one valid config (the first of a template's reduced space, its reference,
// and the measurement worker's kernels), so a syntax error names its file and line: nvcc reads the
// files from the source tree (-I templates/kernels), not the embedded copies. Skips with a reason
// where nvcc is absent. The compiles run four at a time.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>

#include "costmodel/gpu_spec.h"
#include "templates/kernel_files.h"
#include "templates/registry.h"
#include "tuner/device_registry.h"
#include "tuner/runner_kernels.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

#ifndef TUNER_NVCC
#define TUNER_NVCC "/usr/local/cuda/bin/nvcc"
#endif

struct NvccCase {
  std::string label;   ///< "gemm_tc.cuh (gemm_tc_mma f16)".
  std::string source;  ///< Defines + #include of the entry file.
  std::string arch;    ///< "sm_80", "sm_90", "sm_90a".
};

struct NvccResult {
  int rc = 0;
  std::string output;
};

/// Runs nvcc on the source; its output (errors name templates/kernels/<file>(<line>)).
NvccResult run_nvcc(const NvccCase& c, const fs::path& dir, int index) {
  const fs::path cu = dir / ("case" + std::to_string(index) + ".cu");
  std::ofstream(cu) << c.source;
  const std::string kernels = (fs::path(TUNER_SOURCE_DIR) / "templates" / "kernels").string();
  const std::string cmd = std::string(TUNER_NVCC) + " -std=c++17 -fdevice-syntax-only --ptx -arch=" + c.arch + " -I" +
                          kernels + " -x cu " + cu.string() + " -o " + (dir / ("case" + std::to_string(index) + ".ptx")).string() +
                          " 2>&1";
  NvccResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed: " + cmd};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// One config of every template that runs on `gpu`, each reference, and the worker kernels of each dtype:
/// every kernel file is an entry or included by one.
std::vector<NvccCase> cases_for(const char* gpu) {
  const auto limits = limits_of(*costmodel::find_gpu_spec(gpu));
  const std::vector<std::pair<std::string, std::string>> workloads = {
      {"gemm", "M=256,N=256,K=256"}, {"batched_gemm", "B=2,M=256,N=256,K=256"},
      {"conv2d", "N=1,H=16,W=16,C=16,K=32,R=3,S=3,stride=1,pad=1"}, {"softmax", "rows=64,cols=1024"},
      {"layernorm", "rows=64,cols=1024"}};
  std::vector<NvccCase> out;
  std::set<std::string> seen;  // one case per distinct source
  auto add = [&](const std::string& label, const std::string& source, const std::string& arch) {
    if (seen.insert(source + arch).second) out.push_back({label, source, arch});
  };
  for (const auto* t : templates::all_templates()) {
    if (t->unsupported_on(limits)) continue;
    for (const auto& [op, shape] : workloads) {
      if (op != t->op()) continue;
      const auto d = t->dtypes().back();
      const auto w = templates::parse_workload(op, shape, templates::to_string(d));
      const auto space = t->reduced_space(w, limits);
      if (space.size() == 0) continue;
      const auto k = t->instantiate(space, space.at(0), w);
      add(t->name() + " " + templates::to_string(d), k.source, templates::compile_arch(k, limits));
      add(t->name() + " reference", k.reference_source, limits.arch);
    }
  }
  for (auto d : {templates::DType::kF32, templates::DType::kF16, templates::DType::kBF16})
    add("runner_kernels " + templates::to_string(d), runner_kernels_source(d), limits.arch);
  return out;
}

/// Compiles every case for `gpu`; with `every_file`, also checks that every kernel file was compiled.
void compile_all(const char* gpu, bool every_file) {
  if (!fs::exists(TUNER_NVCC)) GTEST_SKIP() << "nvcc not found at " << TUNER_NVCC << ": kernel files not checked with nvcc";
  const fs::path dir = fs::temp_directory_path() / ("tuner_nvcc_" + std::string(gpu) + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto cases = cases_for(gpu);
  std::set<std::string> entries;
  constexpr size_t kParallel = 4;
  for (size_t first = 0; first < cases.size(); first += kParallel) {
    std::vector<std::future<NvccResult>> running;
    for (size_t i = first; i < std::min(cases.size(), first + kParallel); ++i)
      running.push_back(std::async(std::launch::async, run_nvcc, std::cref(cases[i]), std::cref(dir), static_cast<int>(i)));
    for (size_t i = first; i < first + running.size(); ++i) {
      const NvccResult r = running[i - first].get();
      EXPECT_EQ(r.rc, 0) << cases[i].label << " for " << cases[i].arch << ":\n" << r.output;
      for (const auto& f : templates::kernel_file_closure(
               cases[i].source.substr(cases[i].source.rfind("#include \"") + 10,
                                      cases[i].source.rfind('"') - cases[i].source.rfind("#include \"") - 10)))
        entries.insert(f);
    }
  }
  fs::remove_all(dir);
  // Every kernel file was compiled, as an entry or through one (sm_90: the wgmma files too).
  if (!every_file) return;
  for (const auto& f : templates::kernel_files()) {
    EXPECT_TRUE(entries.count(f.name)) << f.name << " never compiled";
  }
}

TEST(KernelFilesNvcc, EveryKernelFileCompilesForSm80) { compile_all("a100-sxm4-80gb", false); }
TEST(KernelFilesNvcc, EveryKernelFileCompilesForSm90) { compile_all("h100-sxm", true); }

}  // namespace
}  // namespace tuner
