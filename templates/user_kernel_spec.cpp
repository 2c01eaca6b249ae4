#include "templates/user_kernel_spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

namespace tuner::templates {
namespace {

using nlohmann::json;

/// Reads the fields of one spec with its file name in every message.
class SpecReader {
 public:
  explicit SpecReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw SpecError("spec " + path_ + ": " + field + ": " + what);
  }

  void only_keys(const json& j, const std::string& field, const std::set<std::string>& allowed) const {
    if (!j.is_object()) fail(field.empty() ? "(top level)" : field, "is not a JSON object");
    for (const auto& [key, value] : j.items()) {
      if (allowed.count(key)) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(field.empty() ? key : field + "." + key, "unknown key; allowed: " + list);
    }
  }

  const json& need(const json& j, const std::string& key, const std::string& field) const {
    if (!j.contains(key)) fail(field.empty() ? key : field + "." + key, "missing (required)");
    return j.at(key);
  }

  std::string identifier(const json& j, const std::string& field) const {
    if (!j.is_string()) fail(field, "is not a string; allowed: an identifier such as \"my_kernel\"");
    const std::string s = j.get<std::string>();
    const bool ok = !s.empty() && s.size() <= 64 && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
                    std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!ok) fail(field, "'" + s + "' is not an identifier; allowed: letters, digits and _, not starting with a digit, at most 64");
    return s;
  }

  DType dtype(const json& j, const std::string& field) const {
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s == "f32") return DType::kF32;
      if (s == "f16") return DType::kF16;
      if (s == "bf16") return DType::kBF16;
      fail(field, "'" + s + "' is not a dtype; allowed: f32, f16, bf16");
    }
    fail(field, "is not a string; allowed: f32, f16, bf16");
  }

  /// An expression (a JSON string or integer) whose names are all in `names`.
  Expr expr(const json& j, const std::string& field, const std::set<std::string>& names) const {
    std::string text;
    if (j.is_number_integer()) text = std::to_string(j.get<int64_t>());
    else if (j.is_string()) text = j.get<std::string>();
    else fail(field, "is not an expression; allowed: a string such as \"BLOCK * 2\" or an integer");
    Expr e;
    try {
      e = Expr::parse(text);
    } catch (const ExprError& err) {
      fail(field, err.what());
    }
    for (const auto& n : e.names())
      if (!names.count(n)) fail(field, "unknown name '" + n + "' in '" + text + "'; allowed: " + names_list(names));
    return e;
  }

  std::array<std::optional<Expr>, 3> dims(const json& j, const std::string& field, const std::set<std::string>& names) const {
    if (!j.is_array() || j.empty() || j.size() > 3) fail(field, "allowed: a list of 1 to 3 expressions (x, y, z)");
    std::array<std::optional<Expr>, 3> out;
    for (size_t i = 0; i < j.size(); ++i) out[i] = expr(j[i], field + "[" + std::to_string(i) + "]", names);
    return out;
  }

  static std::string names_list(const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "(none)" : out;
  }

 private:
  std::string path_;
};

void read_sizes(const SpecReader& r, const json& j, const std::string& shape, UserKernelSpec& s) {
  const json& sizes = r.need(j, "sizes", "");
  if (!sizes.is_object() || sizes.empty()) r.fail("sizes", "allowed: an object of size names and positive integers, e.g. {\"N\": 4096}");
  for (const auto& [name, value] : sizes.items()) {
    r.identifier(json(name), "sizes." + name);
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > kMaxUserSize)
      r.fail("sizes." + name, value.dump().substr(0, 40) + " is not a size; allowed: an integer 1 .. 2^40");
    s.sizes.emplace_back(name, value.get<int64_t>());
  }
  // --shape NAME=V,...: each name must be a size of the spec.
  size_t at = 0;
  std::set<std::string> given;
  while (!shape.empty() && at <= shape.size()) {
    size_t end = shape.find(',', at);
    if (end == std::string::npos) end = shape.size();
    const std::string item = shape.substr(at, end - at);
    at = end + 1;
    const size_t eq = item.find('=');
    auto it = std::find_if(s.sizes.begin(), s.sizes.end(), [&](const auto& p) { return p.first == item.substr(0, eq); });
    int64_t v = 0;
    const bool number = eq != std::string::npos && eq + 1 < item.size() &&
                        std::all_of(item.begin() + eq + 1, item.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) &&
                        item.size() - eq - 1 <= 13;
    if (number) v = std::stoll(item.substr(eq + 1));
    if (it == s.sizes.end() || !number || v < 1 || v > kMaxUserSize)
      throw SpecError("--shape '" + item + "': allowed: NAME=VALUE with NAME a size of the spec (" +
                      [&] { std::string l; for (auto& p : s.sizes) l += (l.empty() ? "" : ", ") + p.first; return l; }() +
                      ") and VALUE 1 .. 2^40");
    // R=1024,R=2048 took the last silently; built-in ops refuse it.
    if (!given.insert(it->first).second)
      throw SpecError("--shape '" + shape + "': size '" + it->first + "' given twice; allowed: each size once");
    it->second = v;
  }
}

void read_knobs(const SpecReader& r, const json& j, UserKernelSpec& s) {
  const json& knobs = r.need(j, "knobs", "");
  if (!knobs.is_object() || knobs.empty()) r.fail("knobs", "allowed: an object of knob names and lists of integers, e.g. {\"BLOCK\": [64, 128]}");
  for (const auto& [name, values] : knobs.items()) {
    r.identifier(json(name), "knobs." + name);
    if (std::any_of(s.sizes.begin(), s.sizes.end(), [&](const auto& p) { return p.first == name; }))
      r.fail("knobs." + name, "is also a size; allowed: names that differ from the sizes");
    if (!values.is_array() || values.empty() || values.size() > 4096) r.fail("knobs." + name, "allowed: a list of 1 .. 4096 integers");
    search::Knob k{name, {}, "user knob"};
    for (const auto& v : values) {
      if (!v.is_number_integer()) r.fail("knobs." + name, "value " + v.dump() + " is not an integer");
      if (std::find(k.values.begin(), k.values.end(), v.get<int64_t>()) != k.values.end())
        r.fail("knobs." + name, "value " + v.dump() + " is repeated");
      k.values.push_back(v.get<int64_t>());
    }
    s.knobs.push_back(std::move(k));
  }
}

void read_buffers(const SpecReader& r, const json& j, const std::set<std::string>& sizes, UserKernelSpec& s) {
  const json& buffers = r.need(j, "buffers", "");
  if (!buffers.is_array() || buffers.empty()) r.fail("buffers", "allowed: a list of {name, dtype, elements, role}");
  bool any_output = false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::string f = "buffers[" + std::to_string(i) + "]";
    r.only_keys(buffers[i], f, {"name", "dtype", "elements", "role"});
    UserBuffer b;
    b.name = r.identifier(r.need(buffers[i], "name", f), f + ".name");
    b.dtype = r.dtype(r.need(buffers[i], "dtype", f), f + ".dtype");
    b.elements = r.expr(r.need(buffers[i], "elements", f), f + ".elements", sizes);
    const json& role = r.need(buffers[i], "role", f);
    b.role = role.is_string() ? role.get<std::string>() : "";
    if (b.role != "input" && b.role != "output" && b.role != "workspace")
      r.fail(f + ".role", role.dump() + " is not a role; allowed: input, output, workspace");
    any_output = any_output || b.role == "output";
    s.buffers.push_back(std::move(b));
  }
  if (!any_output) r.fail("buffers", "no buffer has role output; allowed: at least one output to check");
}

void read_reference(const SpecReader& r, const json& j, const std::set<std::string>& names, UserKernelSpec& s) {
  const json& ref = r.need(j, "reference", "");
  r.only_keys(ref, "reference", {"kernel", "config", "grid", "block"});
  if (ref.contains("kernel")) s.reference_kernel = r.identifier(ref.at("kernel"), "reference.kernel");
  if (!ref.contains("kernel") && !ref.contains("config"))
    r.fail("reference", "allowed: {\"kernel\": NAME} (a second kernel in the file) or {\"config\": {KNOB: VALUE, ...}}");
  for (const auto& k : s.knobs) s.reference_config[k.name] = *std::min_element(k.values.begin(), k.values.end());
  if (ref.contains("config")) {
    const json& c = ref.at("config");
    if (!c.is_object()) r.fail("reference.config", "allowed: an object of knob values");
    for (const auto& [name, value] : c.items()) {
      const auto knob = std::find_if(s.knobs.begin(), s.knobs.end(), [&](const auto& k) { return k.name == name; });
      if (knob == s.knobs.end()) {
        std::string knobs;
        for (const auto& k : s.knobs) knobs += (knobs.empty() ? "" : ", ") + k.name;
        r.fail("reference.config." + name, "is not a knob; allowed: " + knobs);
      }
      if (!value.is_number_integer() ||
          std::find(knob->values.begin(), knob->values.end(), value.get<int64_t>()) == knob->values.end()) {
        std::string values;
        for (int64_t v : knob->values) values += (values.empty() ? "" : ", ") + std::to_string(v);
        r.fail("reference.config." + name, value.dump().substr(0, 40) + " is not one of the knob's values; allowed: " +
                                               values.substr(0, 300));
      }
      s.reference_config[name] = value.get<int64_t>();
    }
  }
  if (ref.contains("grid") != ref.contains("block"))
    r.fail(ref.contains("grid") ? "reference.block" : "reference.grid",
           "missing; allowed: \"grid\" and \"block\" together (the reference's own launch), or neither (the "
           "kernel's launch)");
  if (ref.contains("grid") || ref.contains("block")) {
    UserLaunch l;
    l.grid = r.dims(r.need(ref, "grid", "reference"), "reference.grid", names);
    l.block = r.dims(r.need(ref, "block", "reference"), "reference.block", names);
    s.reference_launch = l;
  }
}

std::optional<Expr> optional_expr(const SpecReader& r, const json& j, const std::string& key, const std::set<std::string>& names) {
  if (!j.contains(key)) return std::nullopt;
  return r.expr(j.at(key), key, names);
}

}  // namespace

UserKernelSpec parse_user_kernel_spec(const std::string& spec_path, const std::string& spec_json,
                                      const std::string& kernel_path, const std::string& kernel_text,
                                      const std::string& shape, const std::string& header_texts) {
  const SpecReader r(spec_path);
  json j;
  try {
    j = json::parse(spec_json);
  } catch (const json::parse_error& e) {
    throw SpecError("spec " + spec_path + ": not JSON: " + std::string(e.what()));
  }
  r.only_keys(j, "", {"name", "kernel", "dtype", "sizes", "knobs", "constraints", "grid", "block", "shared_bytes",
                      "buffers", "scalars", "reference", "tolerance", "flops", "bytes", "ilp", "vector_width"});
  UserKernelSpec s;
  s.path = spec_path;
  s.kernel_path = kernel_path;
  s.kernel_text = kernel_text;
  s.compile_text = kernel_text;  // (register_user_kernel makes its own headers' includes absolute)
  s.name = r.identifier(r.need(j, "name", ""), "name");
  // The name is the kernel's op in the database: a built-in op's name would mix its records with that op's.
  bool builtin = true;
  try {
    op_dimensions(s.name);
  } catch (const std::invalid_argument&) {
    builtin = false;
  }
  if (builtin) r.fail("name", "'" + s.name + "' is a built-in op; allowed: a name other than " + known_ops());
  s.kernel = r.identifier(r.need(j, "kernel", ""), "kernel");
  s.dtype = j.contains("dtype") ? r.dtype(j.at("dtype"), "dtype") : DType::kF32;
  read_sizes(r, j, shape, s);
  read_knobs(r, j, s);
  std::set<std::string> sizes, names;
  for (const auto& [n, v] : s.sizes) sizes.insert(n), names.insert(n);
  for (const auto& k : s.knobs) names.insert(k.name);
  if (j.contains("constraints")) {
    const json& cs = j.at("constraints");
    if (!cs.is_array()) r.fail("constraints", "allowed: a list of expressions such as \"BLOCK * ITEMS <= 4096\"");
    for (size_t i = 0; i < cs.size(); ++i) s.constraints.push_back(r.expr(cs[i], "constraints[" + std::to_string(i) + "]", names));
  }
  s.launch.grid = r.dims(r.need(j, "grid", ""), "grid", names);
  s.launch.block = r.dims(r.need(j, "block", ""), "block", names);
  s.shared_bytes = optional_expr(r, j, "shared_bytes", names);
  read_buffers(r, j, sizes, s);
  if (j.contains("scalars")) {
    const json& sc = j.at("scalars");
    if (!sc.is_array()) r.fail("scalars", "allowed: a list of expressions (int arguments after the buffers)");
    for (size_t i = 0; i < sc.size(); ++i) s.scalars.push_back(r.expr(sc[i], "scalars[" + std::to_string(i) + "]", sizes));
  }
  read_reference(r, j, names, s);
  const DType out = std::find_if(s.buffers.begin(), s.buffers.end(), [](const auto& b) { return b.role == "output"; })->dtype;
  s.tolerance = out == DType::kF32 ? 1e-4 : out == DType::kF16 ? 2e-3 : 1e-2;
  if (j.contains("tolerance")) {
    const json& t = j.at("tolerance");
    if (!t.is_number() || !(t.get<double>() > 0 && t.get<double>() <= 1)) r.fail("tolerance", "allowed: a number in (0, 1]");
    s.tolerance = t.get<double>();
  }
  s.flops = optional_expr(r, j, "flops", names);
  s.bytes = optional_expr(r, j, "bytes", names);
  s.ilp = optional_expr(r, j, "ilp", names);
  s.vector_width = optional_expr(r, j, "vector_width", names);
  // The file's kernels (its own headers' too), for the message: every name a __global__ declares.
  const std::string all_text = s.kernel_text + "\n" + header_texts;
  auto kernels = [&] {
    static const std::regex global(R"re(__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?([A-Za-z_]\w*)\s*\()re");
    std::string names;
    for (std::sregex_iterator it(all_text.begin(), all_text.end(), global), end; it != end; ++it)
      names += (names.empty() ? "" : ", ") + (*it)[1].str();
    return names.empty() ? std::string("a __global__ function of the file (it declares none)") : names;
  };
  if (all_text.find(s.kernel) == std::string::npos)
    throw SpecError("spec " + spec_path + ": kernel: '" + s.kernel + "' does not appear in " + kernel_path +
                    "; allowed: " + kernels());
  if (!s.reference_kernel.empty() && all_text.find(s.reference_kernel) == std::string::npos)
    throw SpecError("spec " + spec_path + ": reference.kernel: '" + s.reference_kernel + "' does not appear in " +
                    kernel_path + "; allowed: " + kernels());
  return s;
}

}  // namespace tuner::templates
