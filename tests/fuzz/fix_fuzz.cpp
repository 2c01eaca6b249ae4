// Fuzz target: `--fix` strings (parallel::parse_pins). Accepted pins must print (to_string) as a
// string that parses back to the same pins.
#include <cstdint>

#include "search/parallel/planner.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  parallel::PlanPins p;
  if (!fuzz::parses(text, [&] { p = parallel::parse_pins(text); })) return 0;
  const std::string printed = parallel::to_string(p);
  if (p.empty()) return 0;
  parallel::PlanPins again;
  if (!fuzz::parses(text, [&] { again = parallel::parse_pins(printed); }))
    fuzz::fail("printed pins '" + printed + "' do not parse back", text);
  if (parallel::to_string(again) != printed)
    fuzz::fail("round trip changed '" + printed + "' into '" + parallel::to_string(again) + "'", text);
  return 0;
}
