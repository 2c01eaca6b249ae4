// Fuzz target: config JSON against a template's space (search::ConfigSpace::from_json, what
// replay records and `query` exports hold). Input: JSON text, checked against the space of every
// registered template (each on a fixed workload of its op, default sm_90 limits; one space where two
// templates share it) whose knob names are the object's keys, else against one chosen by the
// input's size; text that is not JSON is skipped. An accepted config must be in range and survive to_json/from_json.
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/config_space.h"
#include "templates/registry.h"
#include "templates/workload.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

namespace {

std::string shape_of(const std::string& op) {
  if (op == "gemm") return "M=1024,N=1024,K=1024";
  if (op == "batched_gemm") return "B=4,M=512,N=512,K=512";
  if (op == "conv2d") return "N=1,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1";
  return "rows=4096,cols=4096";
}

/// Templates whose space is another template's space, left out: batched_gemm_f32_simt's space is
/// gemm_f32_simt's (the same knobs and constraints on one batch, the same 90k configs whatever the shape),
/// and building it again would double the start-up, the longest of any target under ASan at -O0.
bool same_space_as_another(const templates::KernelTemplate& t) { return t.name() == "batched_gemm_f32_simt"; }

/// The spaces, built once (building one enumerates its valid configs).
const std::vector<search::ConfigSpace>& spaces() {
  static const std::vector<search::ConfigSpace> all = [] {
    std::vector<search::ConfigSpace> v;
    const templates::DeviceLimits limits;
    for (const auto* t : templates::all_templates()) {
      if (same_space_as_another(*t)) continue;
      const auto w = templates::parse_workload(t->op(), shape_of(t->op()), templates::to_string(t->dtypes().front()));
      if (t->unsupported(w) || t->unsupported_on(limits)) continue;
      v.push_back(t->space(w, limits));
    }
    return v;
  }();
  return all;
}

}  // namespace

// The spaces are built before the first input, outside its timeout: the f32 GEMM space (90k configs)
// takes seconds to enumerate under ASan at -O0.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)spaces();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (spaces().empty()) return 0;
  const std::string text = fuzz::as_text(data, size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  const search::ConfigSpace* chosen = &spaces()[size % spaces().size()];
  for (const auto& s : spaces()) {
    bool same = doc.is_object() && doc.size() == s.knobs().size();
    for (const auto& k : s.knobs()) same = same && doc.contains(k.name);
    if (same) {
      chosen = &s;
      break;
    }
  }
  const search::ConfigSpace& space = *chosen;
  search::Config c;
  if (!fuzz::parses(text, [&] { c = space.from_json(doc); })) return 0;
  if (c.size() != space.knobs().size()) fuzz::fail("accepted a config with the wrong number of knobs", text);
  if (!space.in_range(c)) fuzz::fail("accepted a config out of range", text);
  // Validity is a question the space answers without throwing.
  fuzz::parses(text, [&] {
    (void)space.violation(c);
    if (space.is_valid(c) != space.index_of(c).has_value()) fuzz::fail("is_valid and index_of disagree", text);
  });
  search::Config again;
  if (!fuzz::parses(text, [&] { again = space.from_json(nlohmann::json::parse(space.to_json_string(c))); }) ||
      again != c)
    fuzz::fail("to_json/from_json does not round-trip " + space.to_json_string(c), text);
  return 0;
}
