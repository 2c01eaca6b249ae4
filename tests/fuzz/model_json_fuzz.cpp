// Fuzz target: model JSON graphs (parallel::model_from_json, what `plan --model FILE.json` reads).
// Input that is not JSON is skipped: the JSON library's parser is not under test.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "search/parallel/model_spec.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  fuzz::parses(text, [&] { (void)parallel::model_from_json(doc, "fuzz.json"); });
  return 0;
}
