// Fuzz target: model strings (parallel::parse_model_spec): presets and family forms such as
// "gpt:layers=..,hidden=..". Strings ending in .json name files and are skipped (no file access).
#include <cstdint>

#include "search/parallel/model_spec.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  if (text.size() >= 5 && text.compare(text.size() - 5, 5, ".json") == 0) return 0;
  fuzz::parses(text, [&] { (void)parallel::parse_model_spec(text); });
  return 0;
}
