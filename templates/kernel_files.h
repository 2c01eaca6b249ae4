// The kernel files (templates/kernels/*.cuh) as the program carries them, and the source a template
// hands to NVRTC for one config.
//
// cmake/embed_kernels.cmake embeds every .cuh in the templates library at build time with its SHA-256.
// A config's source is a few lines: a banner, one comment line naming every kernel file it includes
// (transitively) with the file's hash, so the compile cache key changes when a file's text does, the
// config's values as #define macros, and `#include "<entry>.cuh"`. tuner/nvrtc_builder.cpp gives NVRTC
// every kernel file as a named header. Not responsible for the tiling arithmetic (the templates) nor
// for compiling (tuner/).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "templates/workload.h"

namespace tuner::templates {

/// One embedded kernel file.
struct EmbeddedKernelFile {
  const char* name;    ///< "gemm_f32.cuh": the name kernels #include it by.
  const char* text;    ///< The file's text.
  const char* sha256;  ///< Lowercase hex SHA-256 of the text (computed by CMake).
};

/// Every embedded kernel file, sorted by name.
const std::vector<EmbeddedKernelFile>& kernel_files();
/// The file named `name`; throws std::invalid_argument when there is none (a programming error).
const EmbeddedKernelFile& kernel_file(std::string_view name);
/// `entry` and every kernel file it includes, transitively, each once, in first-include order.
std::vector<std::string> kernel_file_closure(std::string_view entry);
/// The texts of the closures of `entries`, each file once: what versions a template.
std::string kernel_files_text(const std::vector<std::string>& entries);

/// The source of one kernel for NVRTC: a banner line, the kernel-file hash line, the defines in order,
/// then `#include "<entry>"`.
class KernelSource {
 public:
  KernelSource(std::string entry, std::string banner);
  /// Adds `#define name value`.
  KernelSource& define(const std::string& name, const std::string& value);
  KernelSource& define(const std::string& name, long long value) { return define(name, std::to_string(value)); }
  /// Adds the element type's define: `#define ELEM_F16 1` or `#define ELEM_BF16 1`; nothing for f32.
  KernelSource& element(DType d);
  /// The whole source.
  std::string str() const;

 private:
  std::string entry_;
  std::string banner_;
  std::vector<std::pair<std::string, std::string>> defines_;
};


/// `source` with every `#include "x.cuh"` of a kernel file replaced by the file's text (each file once,
/// as #pragma once would): what NVRTC compiles, as one text, for tests and for reading.
std::string expand_kernel_files(const std::string& source);

}  // namespace tuner::templates
