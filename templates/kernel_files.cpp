#include "templates/kernel_files.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

namespace tuner::templates {
namespace detail {
// Defined in <build>/generated/kernel_files_data.cpp (cmake/embed_kernels.cmake).
extern const EmbeddedKernelFile kEmbeddedKernelFiles[];
extern const int kEmbeddedKernelFileCount;
}  // namespace detail

namespace {

/// The kernel files a text includes with `#include "name"`, in order (lines that start with #include).
std::vector<std::string> includes_of(std::string_view text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line.substr(first, 8) != "#include") continue;
    const size_t open = line.find('"'), close = line.rfind('"');
    if (open == std::string_view::npos || close <= open) continue;
    out.emplace_back(line.substr(open + 1, close - open - 1));
  }
  return out;
}

void closure_into(std::string_view name, std::vector<std::string>& order, std::unordered_set<std::string>& seen) {
  if (!seen.insert(std::string(name)).second) return;
  order.emplace_back(name);
  for (const auto& inc : includes_of(kernel_file(name).text)) closure_into(inc, order, seen);
}

/// Appends `text` to `out` with each kernel-file include replaced by that file's expansion.
void expand_into(std::string_view text, std::string& out, std::unordered_set<std::string>& seen) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(at, end - at);
    at = end;
    const auto inc = includes_of(line);
    if (inc.empty()) {
      if (line.rfind("#pragma once", 0) != 0) out.append(line);
      continue;
    }
    if (seen.insert(inc[0]).second) expand_into(kernel_file(inc[0]).text, out, seen);
  }
}

}  // namespace

const std::vector<EmbeddedKernelFile>& kernel_files() {
  static const std::vector<EmbeddedKernelFile> files = [] {
    std::vector<EmbeddedKernelFile> v(detail::kEmbeddedKernelFiles,
                                      detail::kEmbeddedKernelFiles + detail::kEmbeddedKernelFileCount);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return std::string_view(a.name) < b.name; });
    return v;
  }();
  return files;
}

const EmbeddedKernelFile& kernel_file(std::string_view name) {
  for (const auto& f : kernel_files())
    if (name == f.name) return f;
  throw std::invalid_argument("no kernel file " + std::string(name) + " in templates/kernels/");
}

std::vector<std::string> kernel_file_closure(std::string_view entry) {
  std::vector<std::string> order;
  std::unordered_set<std::string> seen;
  closure_into(entry, order, seen);
  return order;
}

std::string kernel_files_text(const std::vector<std::string>& entries) {
  std::string out;
  std::unordered_set<std::string> seen;
  for (const auto& e : entries)
    for (const auto& name : kernel_file_closure(e))
      if (seen.insert(name).second) out.append(kernel_file(name).text);
  return out;
}

KernelSource::KernelSource(std::string entry, std::string banner)
    : entry_(std::move(entry)), banner_(std::move(banner)) {}

KernelSource& KernelSource::define(const std::string& name, const std::string& value) {
  defines_.emplace_back(name, value);
  return *this;
}

KernelSource& KernelSource::element(DType d) {
  if (d == DType::kF16) define("ELEM_F16", 1);
  if (d == DType::kBF16) define("ELEM_BF16", 1);
  return *this;
}

std::string KernelSource::str() const {
  std::string out = "// " + banner_ + "\n// kernel files:";
  for (const auto& name : kernel_file_closure(entry_))
    out += " " + name + "@" + std::string(kernel_file(name).sha256).substr(0, 16);
  out += "\n";
  for (const auto& [name, value] : defines_) out += "#define " + name + " " + value + "\n";
  out += "#include \"" + entry_ + "\"\n";
  return out;
}

std::string expand_kernel_files(const std::string& source) {
  std::string out;
  std::unordered_set<std::string> seen;
  expand_into(source, out, seen);
  return out;
}

}  // namespace tuner::templates
