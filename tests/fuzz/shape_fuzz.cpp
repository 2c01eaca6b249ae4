// Fuzz target: the shape parser (templates::parse_workload). Input: "op\nshape\ndtype"; missing
// lines default to gemm and f32. An accepted workload must print a shape that parses back to itself.
#include <cstdint>

#include "templates/workload.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  const size_t a = text.find('\n');
  const size_t b = a == std::string::npos ? std::string::npos : text.find('\n', a + 1);
  std::string op = "gemm", shape = text, dtype = "f32";
  if (a != std::string::npos) {
    op = text.substr(0, a);
    shape = text.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
    if (b != std::string::npos) dtype = text.substr(b + 1);
  }
  templates::Workload w;
  if (!fuzz::parses(text, [&] { w = templates::parse_workload(op, shape, dtype); })) return 0;
  for (const auto& [name, value] : w.dims)
    if (value < 0) fuzz::fail("accepted a negative dimension " + name, text);
  templates::Workload again;
  if (!fuzz::parses(text, [&] { again = templates::parse_workload(w.op, w.shape_string(), templates::to_string(w.dtype)); }))
    fuzz::fail("the canonical shape '" + w.shape_string() + "' does not parse back", text);
  if (again.to_string() != w.to_string())
    fuzz::fail("round trip changed '" + w.to_string() + "' into '" + again.to_string() + "'", text);
  return 0;
}
