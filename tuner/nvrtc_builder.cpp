#include "tuner/nvrtc_builder.h"

#include <nvrtc.h>

#include <algorithm>
#include <filesystem>
#include <cctype>
#include <chrono>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>

#include "templates/kernel_files.h"
#include "tuner/compile_cache.h"

#ifndef TUNER_CUDA_HOME
#define TUNER_CUDA_HOME "/usr/local/cuda"
#endif

namespace tuner {
namespace {

// The one NVRTC error helper: an error message for a failed call, nullopt on success.
std::optional<std::string> nvrtc_error(nvrtcResult rc, const char* call) {
  if (rc == NVRTC_SUCCESS) return std::nullopt;
  return std::string(call) + " failed: " + nvrtcGetErrorString(rc);
}

struct ProgramDeleter {
  void operator()(_nvrtcProgram* program) const { nvrtcDestroyProgram(&program); }
};
using Program = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

constexpr const char* kPtxasVerbose = "--ptxas-options=-v";

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtc_error(nvrtcGetProgramLogSize(program, &size), "nvrtcGetProgramLogSize") || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtc_error(nvrtcGetProgramLog(program, log.data()), "nvrtcGetProgramLog")) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  // ptxas's part of the log is NUL-separated from NVRTC's: a NUL inside cut the message a user saw at its error.
  std::replace(log.begin(), log.end(), '\0', '\n');
  return log;
}

void append_line(std::string& log, const std::string& line) {
  if (!log.empty() && log.back() != '\n') log += '\n';
  log += line;
}

// The kernel files (templates/kernels/*.cuh) as NVRTC named headers: names and texts, in one order.
struct NamedHeaders {
  std::vector<const char*> names;
  std::vector<const char*> texts;
};

const NamedHeaders& kernel_headers() {
  static const NamedHeaders headers = [] {
    NamedHeaders h;
    for (const auto& f : templates::kernel_files()) {
      h.names.push_back(f.name);
      h.texts.push_back(f.text);
    }
    return h;
  }();
  return headers;
}

CompileResult compile_failure(CompileResult result, const std::string& message) {
  result.status = "compile_error";
  append_line(result.log, message);
  result.cubin.clear();
  return result;
}

}  // namespace

NvrtcBuilder::NvrtcBuilder(CompileCache* cache) : cache_(cache) {}

std::string NvrtcBuilder::nvrtc_version() {
  static const std::string version = [] {
    int major = 0, minor = 0;
    if (nvrtc_error(nvrtcVersion(&major, &minor), "nvrtcVersion")) return std::string("unknown");
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return version;
}

std::vector<std::string> NvrtcBuilder::supported_archs() {
  int count = 0;
  if (nvrtc_error(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs") || count <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (nvrtc_error(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs")) return {};
  std::sort(archs.begin(), archs.end());
  std::vector<std::string> out;
  out.reserve(archs.size());
  for (int a : archs) out.push_back("sm_" + std::to_string(a));
  return out;
}

std::vector<std::string> NvrtcBuilder::effective_options(const CompileRequest& request) {
  std::vector<std::string> options = {"--gpu-architecture=" + request.arch, "-std=c++17",
                                      std::string("-I") + TUNER_CUDA_HOME + "/include", kPtxasVerbose};
  // CUDA 13 keeps libcu++ (<cuda/std/...>), CUB and Thrust under include/cccl.
  static const bool cccl = std::filesystem::is_directory(std::string(TUNER_CUDA_HOME) + "/include/cccl");
  if (cccl) options.insert(options.begin() + 3, std::string("-I") + TUNER_CUDA_HOME + "/include/cccl");
  options.insert(options.end(), request.options.begin(), request.options.end());
  return options;
}

CompileResult NvrtcBuilder::compile(const CompileRequest& request) const {
  const std::string key = CompileCache::key(request, nvrtc_version());
  if (cache_ != nullptr) {
    if (std::optional<std::string> cubin = cache_->load(key)) {
      // A hit must still contain the kernel; otherwise it is a miss and is overwritten.
      if (auto resources = read_cubin_resources(*cubin, request.kernel_name, nullptr)) {
        CompileResult hit;
        hit.cubin = std::move(*cubin);
        hit.resources = *resources;
        hit.from_cache = true;
        hit.cache_key = key;
        return hit;
      }
    }
  }
  CompileResult result = compile_uncached(request);
  result.cache_key = key;
  if (cache_ != nullptr && result.ok()) cache_->store(key, result.cubin);  // failure is fine: just no caching
  return result;
}

CompileResult NvrtcBuilder::compile_uncached(const CompileRequest& request) const {
  CompileResult result;
  nvrtcProgram raw = nullptr;
  const std::string name = (request.kernel_name.empty() ? std::string("kernel") : request.kernel_name) + ".cu";
  // Every kernel file is a named header: a template's source is its defines and one #include.
  NamedHeaders headers = kernel_headers();
  for (const auto& [header_name, text] : request.headers) {
    headers.names.push_back(header_name.c_str());
    headers.texts.push_back(text.c_str());
  }
  if (auto err = nvrtc_error(nvrtcCreateProgram(&raw, request.source.c_str(), name.c_str(),
                                                static_cast<int>(headers.names.size()), headers.texts.data(),
                                                headers.names.data()),
                             "nvrtcCreateProgram"))
    return compile_failure(std::move(result), *err);
  Program program(raw);

  std::vector<std::string> options = effective_options(request);
  auto run = [&](const std::vector<std::string>& opts) {
    std::vector<const char*> argv;
    argv.reserve(opts.size());
    for (const std::string& o : opts) argv.push_back(o.c_str());
    return nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  };

  const auto start = std::chrono::steady_clock::now();
  nvrtcResult rc = run(options);
  if (rc == NVRTC_ERROR_INVALID_OPTION) {
    // If the verbose ptxas flag is what NVRTC objects to, drop it and retry.
    std::vector<std::string> without;
    std::copy_if(options.begin(), options.end(), std::back_inserter(without),
                 [](const std::string& o) { return o != kPtxasVerbose; });
    if (without.size() != options.size()) rc = run(without);
  }
  result.log = program_log(program.get());
  // The error line with the call's failure: a trial's error and the session's "last error" end with this line.
  if (auto err = nvrtc_error(rc, "nvrtcCompileProgram"))
    return compile_failure(std::move(result), *err + ": " + first_error_line(result.log));

  std::size_t size = 0;
  if (auto err = nvrtc_error(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize"))
    return compile_failure(std::move(result), *err);
  if (size == 0) return compile_failure(std::move(result), "nvrtcGetCUBINSize returned 0 (is '" + request.arch +
                                                       "' a real sm_XX architecture?)");
  result.cubin.assign(size, '\0');
  if (auto err = nvrtc_error(nvrtcGetCUBIN(program.get(), result.cubin.data()), "nvrtcGetCUBIN"))
    return compile_failure(std::move(result), *err);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::string error;
  auto resources = read_cubin_resources(result.cubin, request.kernel_name, &error);
  if (!resources) return compile_failure(std::move(result), error + " (is the kernel declared extern \"C\"?)");
  result.resources = *resources;
  result.ptxas_spill_bytes = parse_ptxas_spill_bytes(result.log, request.kernel_name);
  return result;
}

std::string first_error_line(const std::string& log) {
  std::string last;
  for (size_t pos = 0; pos < log.size();) {
    const size_t end = std::min(log.find('\n', pos), log.size());
    std::string line = log.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    pos = end + 1;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // NVRTC's "x.cu(12): error: ...", ptxas's "ptxas error   : ..." and "ptxas fatal   : ...", not a warning
    // that names a variable error_count.
    static const std::regex error_line(R"((\): (catastrophic )?error\b|^\s*(ptxas|nvlink)\s+(error|fatal)\s*:|^error\b|\bfatal error\b))");
    if (std::regex_search(line, error_line)) return line.substr(0, 400);
    last = line;
  }
  return last.substr(0, 400);
}

int parse_ptxas_spill_bytes(const std::string& log, const std::string& kernel) {
  std::size_t from = 0;
  const std::string header = "Function properties for ";
  if (log.find(header) != std::string::npos) {
    // Find the header naming exactly this kernel (followed by end of line or a quote).
    std::size_t at = 0;
    from = std::string::npos;
    while ((at = log.find(header + kernel, at)) != std::string::npos) {
      const std::size_t end = at + header.size() + kernel.size();
      if (end == log.size() || log[end] == '\n' || log[end] == '\r' || log[end] == '\'') {
        from = end;
        break;
      }
      at = end;
    }
    if (from == std::string::npos) return -1;
  }
  // "<N> bytes spill stores, <M> bytes spill loads": read the numbers before each phrase.
  auto number_before = [&](std::size_t phrase) -> long long {
    std::size_t digits_end = phrase;
    while (digits_end > 0 && log[digits_end - 1] == ' ') --digits_end;
    std::size_t digits_begin = digits_end;
    while (digits_begin > 0 && std::isdigit(static_cast<unsigned char>(log[digits_begin - 1]))) --digits_begin;
    if (digits_begin == digits_end || digits_end - digits_begin > 9) return -1;
    return std::stoll(log.substr(digits_begin, digits_end - digits_begin));
  };
  const std::size_t stores = log.find("bytes spill stores", from);
  if (stores == std::string::npos) return -1;
  const std::size_t loads = log.find("bytes spill loads", stores);
  if (loads == std::string::npos) return -1;
  const long long store_bytes = number_before(stores);
  const long long load_bytes = number_before(loads);
  if (store_bytes < 0 || load_bytes < 0) return -1;
  return static_cast<int>(std::min<long long>(store_bytes + load_bytes, 0x7fffffff));
}

}  // namespace tuner
