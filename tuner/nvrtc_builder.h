// nvrtc_builder.h: turns one CUDA C++ source plus a kernel name and an
// architecture into a cubin with NVRTC, and reports the kernel's resource
// usage as read from that cubin (cubin_info.h). It is responsible for the
// NVRTC program lifetime, the option list, the compile log, timing, and
// consulting an optional on-disk CompileCache, and handing NVRTC the kernel
// files of templates/kernels/ as named headers (templates/kernel_files.h: a
// source includes them by name, and names their hashes in a comment so the
// cache key follows their text). It is not responsible for
// loading or launching the cubin (the measurement worker does that with the
// driver API), for generating sources (templates/), or for parallelism
// (compile_pool.h). This is the only place in the project that includes
// nvrtc.h; nothing here needs a GPU or a driver.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tuner/cubin_info.h"

namespace tuner {

class CompileCache;

/// What to compile.
struct CompileRequest {
  /// Full CUDA C++ source.
  std::string source;
  /// extern "C" name of the kernel whose resources are reported.
  std::string kernel_name;
  /// Target architecture, "sm_80", "sm_90", ... (a real arch: NVRTC emits a cubin).
  std::string arch;
  /// Extra NVRTC options, e.g. "-lineinfo", "-maxrregcount=64". The builder
  /// always adds --gpu-architecture=<arch>, -std=c++17, -I<CUDA>/include and
  /// --ptxas-options=-v.
  std::vector<std::string> options = {};
  /// Named headers besides tuner's kernel files, (name, text): the source includes them by these names (a user
  /// kernel's own headers, by absolute path), and NVRTC reads these texts, not the disk. Part of the cache key.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

/// Outcome of one compile. Failures are data: status says which.
struct CompileResult {
  /// "ok" or "compile_error" (NVRTC rejected the source, an NVRTC call
  /// failed, or the cubin lacks the kernel); `log` says why.
  std::string status = "ok";
  /// NVRTC program log (kept on failure; on success holds ptxas -v output).
  std::string log;
  /// Cubin bytes when ok.
  std::string cubin;
  /// Kernel resources read from the cubin (not from the log).
  CubinResources resources;
  /// Spill stores + spill loads in bytes from the ptxas -v log, else -1
  /// (always -1 on a cache hit). A cross-check only.
  int ptxas_spill_bytes = -1;
  /// Wall time of nvrtcCompileProgram + nvrtcGetCUBIN in ms (0 when from cache).
  double compile_ms = 0;
  /// True when the cubin came from the CompileCache.
  bool from_cache = false;
  /// CompileCache::key of the request (set even without a cache).
  std::string cache_key;

  bool ok() const { return status == "ok"; }
};

/// Compiles requests with NVRTC, optionally through a CompileCache.
class NvrtcBuilder {
 public:
  /// cache may be null: always compile. The cache must outlive the builder.
  explicit NvrtcBuilder(CompileCache* cache = nullptr);

  /// Compiles (or loads from cache) one request. Thread-safe.
  CompileResult compile(const CompileRequest& request) const;

  /// NVRTC version as "major.minor", e.g. "13.0".
  static std::string nvrtc_version();
  /// Architectures NVRTC can target, as "sm_XX", ascending.
  static std::vector<std::string> supported_archs();
  /// The options the builder passes for a request, in order (for logs and tests).
  static std::vector<std::string> effective_options(const CompileRequest& request);

 private:
  CompileResult compile_uncached(const CompileRequest& request) const;

  CompileCache* cache_;
};

/// Parses "N bytes spill stores, M bytes spill loads" for the kernel from a
/// ptxas -v log; returns N+M, or -1 if the log has no such line. If the log
/// names functions, the figures under "Function properties for <kernel>" win.
int parse_ptxas_spill_bytes(const std::string& log, const std::string& kernel);

/// The line of a compile log to show a user: the first that says "error" (NVRTC's "x.cu(12): error: ..." or
/// ptxas's "ptxas error : ... uses too much shared data"), else its last non-empty line; at most 400 bytes.
std::string first_error_line(const std::string& log);

}  // namespace tuner
