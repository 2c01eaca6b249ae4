#include "templates/user_kernel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "templates/kernel_files.h"
#include "templates/registry.h"

namespace tuner::templates {
namespace {

std::string read_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw SpecError(flag + " '" + path + "' is a directory; allowed: a readable file");
  std::ifstream in(path, std::ios::binary);
  if (path.empty() || !in) throw SpecError(flag + " '" + path + "': cannot read the file; allowed: a readable file");
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().size() > (size_t{1} << 24)) throw SpecError(flag + " '" + path + "': larger than 16 MiB");
  return s.str();
}

/// `#include "x"` at the start of a line (whatever follows: comments, a CR of Windows line ends): x and where it
/// starts in the line, else "".
std::string quoted_include(const std::string& line, size_t* at = nullptr) {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::smatch m;
  if (!std::regex_search(line, m, include_line)) return std::string();
  if (at) *at = static_cast<size_t>(m.position(1));
  return m[1].str();
}

/// The header a line includes when it is `#include "x"` and x is a file beside `file` (as a C compiler looks first).
std::optional<std::filesystem::path> local_include(const std::string& line, const std::filesystem::path& file,
                                                   const std::string& label, std::string* name, size_t* at = nullptr) {
  *name = quoted_include(line, at);
  std::error_code ec;
  const std::filesystem::path header = file.parent_path() / *name;
  if (name->empty()) return std::nullopt;
  if (!std::filesystem::is_regular_file(header, ec)) {
    // NVRTC would look in the working directory next: a header found there is outside the version and the cache
    // key, and the same kernel compiles otherwise from another folder. (Tuner's own kernel files are named
    // headers, found first.)
    const bool own = std::any_of(kernel_files().begin(), kernel_files().end(),
                                 [&](const EmbeddedKernelFile& f) { return *name == f.name; });
    if (!own && !std::filesystem::path(*name).is_absolute() && std::filesystem::is_regular_file(*name, ec))
      throw SpecError(label + "'s file '" + file.string() + "' includes \"" + *name + "\", which is not beside it (in '" +
                      (file.parent_path().empty() ? std::string(".") : file.parent_path().string()) +
                      "') but in the working directory; allowed: a header beside the including file, or a CUDA "
                      "toolkit header");
    return std::nullopt;
  }
  return header;
}

/// A stable 64-bit FNV-1a digest of a header's text, in hex: what the version and the cache key follow.
std::string digest(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

/// The user's own headers: every `#include "x"` naming a file beside the including one (its folder, whatever the
/// working directory), followed into them, listed as "name digest" lines with the name as written relative to the
/// kernel's folder. A header's edit is then a new template version and a new compile-cache key (neither saw it:
/// the old cubins were measured). Includes in comments or dead #if branches are listed too, which costs nothing.
std::string with_absolute_includes(const std::string& text, const std::filesystem::path& file);

void collect_headers(const std::filesystem::path& file, const std::string& text, const std::string& label,
                     const std::string& prefix, int depth, std::set<std::string>& seen, std::string& out,
                     std::vector<std::pair<std::string, std::string>>& headers) {
  if (depth >= 64)  // (`seen` stops cycles: this is a chain of 64 distinct headers)
    throw SpecError(label + "'s headers nest more than 64 deep at '" + file.string() +
                    "'; allowed: at most 64 levels of headers beside the kernel");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::string name;
    const auto header = local_include(line, file, label, &name);
    if (!header) {
      // One of tuner's kernel files (not beside it): its text is NVRTC's named header, in neither the version nor
      // the key otherwise; a tuner whose file changed compiles anew.
      for (const auto& f : kernel_files())
        if (!name.empty() && name == f.name && seen.insert(std::string("tuner:") + f.name).second)
          out += "// tuner header " + name + " " + f.sha256 + "\n";
      continue;
    }
    // A header's own includes are beside the file it really is (a symlink's target), as a compiler finds them.
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::weakly_canonical(*header, ec);
    if (!seen.insert(real.string()).second) continue;
    const std::string body = read_file(header->string(), label + "'s #include \"" + name + "\"");
    const std::string rel = (std::filesystem::path(prefix) / name).lexically_normal().generic_string();
    out += "// header " + rel + " " + digest(body) + "\n";  // (of the text as written: no absolute path)
    headers.emplace_back(real.string(), with_absolute_includes(body, real));
    collect_headers(real, body, label, std::filesystem::path(rel).parent_path().generic_string(), depth + 1, seen, out,
                    headers);
  }
}

/// A text as NVRTC compiles it: each `#include "x"` naming a file beside `file` names it by its absolute path, the
/// name NVRTC is given that header's text under (read once, at registration: an edit mid-session waits for the next
/// session, under its own digest). So it is found from any working directory, a header's own includes beside it,
/// and a header named like one of tuner's kernel files is the user's. The preprocessor does the rest: #if,
/// comments, guards and #pragma once work as in any compiler.
std::string with_absolute_includes(const std::string& text, const std::filesystem::path& file) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::string name;
    size_t at = 0;
    if (const auto header = local_include(line, file, "the kernel", &name, &at)) {
      std::error_code ec;
      const std::string abs = std::filesystem::weakly_canonical(std::filesystem::absolute(*header, ec), ec).string();
      if (!ec && abs.find('"') == std::string::npos) {
        out += line.substr(0, at) + abs + line.substr(at + name.size()) + "\n";  // (the rest of the line kept)
        continue;
      }
    }
    out += line + "\n";
  }
  return out;
}

int64_t product(const std::array<unsigned, 3>& v) { return int64_t{v[0]} * v[1] * v[2]; }

/// A formula's value as a launch dimension: 0 when below 1, else the value up to 2^32-1 (past it, 2^32-1), for the
/// launch check to compare with the device's limit and name (a grid of 3e9 read as "grid x is 0").
unsigned dim_value(const std::optional<Expr>& e, const ExprScope& scope) {
  if (!e) return 1;
  const int64_t v = e->eval(scope);
  if (v < 1) return 0;
  return static_cast<unsigned>(std::min<int64_t>(v, std::numeric_limits<unsigned>::max()));
}

}  // namespace

UserKernelTemplate::UserKernelTemplate(UserKernelSpec spec) : spec_(std::move(spec)) {
  // The kernel's path as the file is, not as typed: the compile cache's key must not change with the working
  // directory.
  std::error_code ec;
  source_path_ = std::filesystem::weakly_canonical(std::filesystem::absolute(spec_.kernel_path, ec), ec).string();
  if (ec || source_path_.empty() || source_path_.find('"') != std::string::npos) source_path_ = spec_.kernel_path;
}

std::string UserKernelTemplate::source_text() const {
  // The kernel's text, its headers' digests and every formula of what runs and how it is checked: a change to any
  // is a new template version. flops, bytes, ilp and vector_width are left out on purpose: they describe the kernel
  // to the sim's model and to the GFLOP/s and GB/s columns (each trial stores its own counts), they change neither
  // what a config computes nor its measured time, so fixing a count keeps a GPU's records.
  nlohmann::json f;
  f["kernel"] = spec_.kernel;
  f["reference"] = spec_.reference_kernel;
  for (const auto& k : spec_.knobs) f["knobs"][k.name] = k.values;
  for (const auto& c : spec_.constraints) f["constraints"].push_back(c.text());
  for (int i = 0; i < 3; ++i) {
    f["grid"].push_back(spec_.launch.grid[i] ? spec_.launch.grid[i]->text() : "1");
    f["block"].push_back(spec_.launch.block[i] ? spec_.launch.block[i]->text() : "1");
  }
  if (spec_.shared_bytes) f["shared_bytes"] = spec_.shared_bytes->text();
  for (const auto& b : spec_.buffers) f["buffers"].push_back({b.name, to_string(b.dtype), b.elements.text(), b.role});
  for (const auto& s : spec_.scalars) f["scalars"].push_back(s.text());
  for (const auto& [k, v] : spec_.reference_config) f["reference_config"][k] = v;
  f["tolerance"] = spec_.tolerance;
  return spec_.kernel_text + "\n" + spec_.header_digests + "// spec: " + f.dump() + "\n";
}

DType UserKernelTemplate::output_dtype(const Workload& w, const std::string& config_json) const {
  (void)config_json;
  for (const auto& b : spec_.buffers)
    if (b.role == "output") return b.dtype;
  return w.dtype;
}

Workload UserKernelTemplate::workload() const { return Workload{spec_.name, spec_.sizes, spec_.dtype}; }

std::optional<std::string> UserKernelTemplate::unsupported(const Workload& w) const {
  if (w.dims.size() != spec_.sizes.size()) return "the workload's sizes are not the spec's";
  for (size_t i = 0; i < w.dims.size(); ++i)
    if (w.dims[i].first != spec_.sizes[i].first) return "the workload's sizes are not the spec's";
  const ExprScope s = scope({}, w);
  try {
    for (const auto& e : spec_.scalars) {
      const int64_t v = e.eval(s);
      if (v < INT32_MIN || v > INT32_MAX)
        return "scalar '" + e.text() + "' = " + std::to_string(v) + " does not fit an int; allowed: -2^31 .. 2^31-1";
    }
    for (const auto& b : spec_.buffers)
      if (b.elements.eval(s) < 1 || b.elements.eval(s) > (int64_t{1} << 36))
        return "spec buffers: '" + b.name + "' has " + std::to_string(b.elements.eval(s)) + " elements ('" +
               b.elements.text() + "'); allowed: 1 .. 2^36";
  } catch (const ExprError& e) {
    return e.what();
  }
  return std::nullopt;
}

std::string UserKernelTemplate::no_config_reason(const Workload& w, const DeviceLimits& limits) const {
  const size_t n = spec_.constraints.size();
  std::vector<int64_t> holds(n, 0);
  std::vector<std::string> error(n);
  std::string launch_problem;
  std::vector<size_t> at(spec_.knobs.size(), 0);
  for (int64_t scanned = 0; scanned < 200000; ++scanned) {
    ExprScope knobs;
    for (size_t k = 0; k < spec_.knobs.size(); ++k) knobs[spec_.knobs[k].name] = spec_.knobs[k].values[at[k]];
    const ExprScope s = scope(knobs, w);
    bool all = true;
    for (size_t i = 0; i < n; ++i) {
      try {
        if (spec_.constraints[i].eval(s) != 0) ++holds[i];
        else all = false;
      } catch (const ExprError& e) {
        if (error[i].empty()) error[i] = e.what();
        all = false;
      }
    }
    if (all && launch_problem.empty()) {
      try {
        const LaunchGeometry g = launch_for(spec_.launch, s);
        for (int d = 0; d < 3 && launch_problem.empty(); ++d) {
          if (g.grid[d] == 0) launch_problem = "grid[" + std::to_string(d) + "] is below 1";
          else if (g.grid[d] > limits.max_grid[d])
            launch_problem = "grid[" + std::to_string(d) + "] " + std::to_string(g.grid[d]) + " exceeds the device's " +
                             std::to_string(limits.max_grid[d]);
          else if (g.block[d] == 0 || g.block[d] > limits.max_block[d])
            launch_problem = "block[" + std::to_string(d) + "] " + std::to_string(g.block[d]) + " is outside 1 .. " +
                             std::to_string(limits.max_block[d]);
        }
        if (launch_problem.empty() && product(g.block) > limits.max_threads_per_block)
          launch_problem = std::to_string(product(g.block)) + " threads per block exceed the device's " +
                           std::to_string(limits.max_threads_per_block);
        if (launch_problem.empty() && (g.dynamic_shared_bytes < 0 || g.dynamic_shared_bytes > limits.max_shared_per_block_bytes))
          launch_problem = "shared_bytes " + std::to_string(g.dynamic_shared_bytes) + " is outside 0 .. " +
                           std::to_string(limits.max_shared_per_block_bytes);
      } catch (const ExprError& e) {
        launch_problem = e.what();
      }
    }
    size_t k = 0;  // the next config, as a mixed-radix counter
    while (k < at.size() && ++at[k] == spec_.knobs[k].values.size()) at[k++] = 0;
    if (k == at.size()) break;
  }
  for (size_t i = 0; i < n; ++i)
    if (!error[i].empty())
      return "constraints[" + std::to_string(i) + "] '" + spec_.constraints[i].text() + "' cannot be computed: " +
             error[i];
  for (size_t i = 0; i < n; ++i)
    if (holds[i] == 0)
      return "constraints[" + std::to_string(i) + "] '" + spec_.constraints[i].text() + "' holds for no config";
  if (!launch_problem.empty()) return "the configs that meet the constraints break a launch limit: " + launch_problem;
  return "no two constraints hold together";
}

double UserKernelTemplate::bytes_of(const Workload& w, bool outputs_only) const {
  double bytes = 0;
  try {
    for (const auto& b : spec_.buffers)
      if (!outputs_only || b.role == "output")
        bytes += static_cast<double>(b.elements.eval(scope({}, w))) * dtype_bytes(b.dtype);
  } catch (const ExprError&) {
    return 0;
  }
  return bytes;
}

ExprScope UserKernelTemplate::scope(const ExprScope& knobs, const Workload& w) const {
  ExprScope s = knobs;
  for (const auto& [name, value] : w.dims) s[name] = value;
  return s;
}

search::ConfigSpace UserKernelTemplate::space(const Workload& w, const DeviceLimits& limits) const {
  std::vector<search::Constraint> cs;
  // Knob values of a config as a scope (the sizes added).
  auto scope_of = [this, w](const search::ConfigView& v) {
    ExprScope knobs;
    for (const auto& k : spec_.knobs) knobs[k.name] = v[k.name];
    return scope(knobs, w);
  };
  for (const auto& c : spec_.constraints)
    cs.push_back({c.text(), [c, scope_of](const search::ConfigView& v) {
                    try {
                      return c.eval(scope_of(v)) != 0;
                    } catch (const ExprError&) {
                      return false;  // e.g. a division by zero: the config is not valid
                    }
                  }});
  cs.push_back({"block and grid within the device's limits, shared memory <= " +
                    std::to_string(limits.max_shared_per_block_bytes) + " bytes",
                [this, scope_of, limits](const search::ConfigView& v) {
                  try {
                    const ExprScope s = scope_of(v);
                    const LaunchGeometry g = launch_for(spec_.launch, s);
                    for (int i = 0; i < 3; ++i)
                      if (g.grid[i] == 0 || g.block[i] == 0 || g.grid[i] > limits.max_grid[i] ||
                          g.block[i] > limits.max_block[i])
                        return false;
                    return product(g.block) <= limits.max_threads_per_block && g.dynamic_shared_bytes >= 0 &&
                           g.dynamic_shared_bytes <= limits.max_shared_per_block_bytes;
                  } catch (const ExprError&) {
                    return false;
                  }
                }});
  return search::ConfigSpace(spec_.knobs, std::move(cs));
}

std::optional<std::string> UserKernelTemplate::launch_error(const Workload& w) const {
  ExprScope knobs;
  for (const auto& k : spec_.knobs)
    if (!k.values.empty()) knobs[k.name] = k.values.front();
  try {
    (void)launch_for(spec_.launch, scope(knobs, w));
  } catch (const ExprError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

LaunchGeometry UserKernelTemplate::launch_for(const UserLaunch& l, const ExprScope& s) const {
  LaunchGeometry g;
  for (int i = 0; i < 3; ++i) {
    g.grid[i] = dim_value(l.grid[i], s);
    g.block[i] = dim_value(l.block[i], s);
  }
  if (spec_.shared_bytes) {
    const int64_t b = spec_.shared_bytes->eval(s);
    // Out of range either way is refused by the launch check, which names the value: clamped to its bounds' far
    // side so that a negative value reads as one (it read "-1" for "0 - 8").
    g.dynamic_shared_bytes = b < 0 ? static_cast<int>(std::max<int64_t>(b, INT32_MIN))
                                   : static_cast<int>(std::min<int64_t>(b, int64_t{1} << 30 | 1));
  }
  return g;
}

costmodel::KernelProfile UserKernelTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                     const Workload& w) const {
  const search::ConfigView v(space, c);
  ExprScope knobs;
  for (const auto& k : spec_.knobs) knobs[k.name] = v[k.name];
  const ExprScope s = scope(knobs, w);
  const LaunchGeometry g = launch_for(spec_.launch, s);
  double buffer_bytes = 0;
  for (const auto& b : spec_.buffers)
    if (b.role != "workspace") buffer_bytes += static_cast<double>(b.elements.eval(s)) * dtype_bytes(b.dtype);
  costmodel::KernelProfile p;
  p.flops = spec_.flops ? static_cast<double>(spec_.flops->eval(s)) : 0.0;
  p.dram_bytes = spec_.bytes ? static_cast<double>(spec_.bytes->eval(s)) : buffer_bytes;
  p.global_bytes = p.dram_bytes;
  p.blocks = product(g.grid);
  p.threads_per_block = static_cast<int>(product(g.block));
  p.dynamic_shared_bytes = g.dynamic_shared_bytes;
  p.ilp = spec_.ilp ? static_cast<int>(std::max<int64_t>(1, spec_.ilp->eval(s))) : 1;
  p.vector_width = spec_.vector_width ? static_cast<int>(std::max<int64_t>(1, spec_.vector_width->eval(s))) : 1;
  return p;
}

std::string UserKernelTemplate::source_for(const ExprScope& knobs) const {
  // The header digests first: the compile cache's key is the source, and must follow the headers' text.
  std::string out = "// user kernel " + spec_.name + " (" + source_path_ + ")\n" + spec_.header_digests;
  for (const auto& k : spec_.knobs) out += "#define " + k.name + " " + std::to_string(knobs.at(k.name)) + "\n";
  out += "#line 1 \"" + source_path_ + "\"\n";
  return out + spec_.compile_text;
}

KernelInstance UserKernelTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                               const Workload& w) const {
  const search::ConfigView v(space, c);
  ExprScope knobs;
  for (const auto& k : spec_.knobs) knobs[k.name] = v[k.name];
  const ExprScope s = scope(knobs, w);
  KernelInstance k;
  k.profile = profile(space, c, w);
  k.source = source_for(knobs);
  k.kernel_name = spec_.kernel;
  k.launch = launch_for(spec_.launch, s);
  for (const auto& b : spec_.buffers)
    k.buffers.push_back({b.name, b.elements.eval(s), b.dtype, b.role == "output", b.role == "workspace"});
  for (const auto& e : spec_.scalars) k.scalar_args.push_back(static_cast<int32_t>(e.eval(s)));
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  // The reference: the second kernel, or this kernel at the reference config, compiled with that config.
  const ExprScope ref_scope = scope(spec_.reference_config, w);
  k.headers = spec_.headers;
  k.reference_source = source_for(spec_.reference_config);
  k.reference_kernel_name = spec_.reference_kernel.empty() ? spec_.kernel : spec_.reference_kernel;
  k.reference_launch = launch_for(spec_.reference_launch ? *spec_.reference_launch : spec_.launch, ref_scope);
  k.tolerance = spec_.tolerance;
  return k;
}

std::unique_ptr<UserKernelTemplate> load_user_kernel(const std::string& kernel_path, const std::string& spec_path,
                                                    const std::string& shape, const std::string& kernel_label,
                                                    const std::string& spec_label) {
  const std::string kernel = read_file(kernel_path, kernel_label);
  const std::string spec = read_file(spec_path, spec_label);
  // The headers first: a kernel may be defined in one of them (the spec's kernel names are looked up in all).
  std::set<std::string> seen;
  std::string digests, header_texts;
  std::vector<std::pair<std::string, std::string>> headers;
  collect_headers(kernel_path, kernel, kernel_label, "", 0, seen, digests, headers);
  for (const auto& [name, text] : headers) header_texts += text + "\n";
  UserKernelSpec parsed = parse_user_kernel_spec(spec_path, spec, kernel_path, kernel, shape, header_texts);
  parsed.header_digests = digests;
  parsed.headers = std::move(headers);
  parsed.compile_text = with_absolute_includes(kernel, kernel_path);
  return std::make_unique<UserKernelTemplate>(std::move(parsed));
}

std::vector<std::string> UserKernelTemplate::size_names() const {
  std::vector<std::string> names;
  for (const auto& [name, v] : spec_.sizes) names.push_back(name);
  return names;
}

const UserKernelTemplate& register_user_kernel(const std::string& kernel_path, const std::string& spec_path,
                                               const std::string& shape) {
  auto t = load_user_kernel(kernel_path, spec_path, shape);
  try {
    // Its records then parse like a built-in op's: other shapes' records for transfer, its replay recordings.
    register_op_dimensions(t->op(), t->size_names());
    return static_cast<const UserKernelTemplate&>(register_template(std::move(t)));
  } catch (const std::invalid_argument& e) {
    throw SpecError("spec " + spec_path + ": name: " + e.what());
  }
}

}  // namespace tuner::templates
