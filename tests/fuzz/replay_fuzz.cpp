// Fuzz target: replay files (tuner::parse_replay, what `--device replay:FILE` loads). Rejections
// must be one line of bounded length (values are cut to excerpts); an accepted file must hold only
// records the format allows.
#include <cmath>
#include <cstdint>
#include <set>

#include "tests/fuzz/fuzz_target.h"
#include "tuner/replay_data.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  ReplayData d;
  if (!fuzz::parses(text, [&] { d = parse_replay(text, "fuzz.json"); }, 1000)) return 0;
  static const std::set<std::string> kStatuses = {"ok",           "invalid_config", "compile_error",
                                                  "compile_timeout", "launch_error", "runtime_fault",
                                                  "run_timeout",  "wrong_answer",   "unknown"};
  if (d.space_size < 0) fuzz::fail("accepted a negative space_size", text);
  for (const auto& [config, r] : d.records) {
    if (!kStatuses.count(r.status)) fuzz::fail("accepted status " + r.status, text);
    if (!std::isfinite(r.time_ms) || r.time_ms < 0 || (r.status == "ok" && r.time_ms < 1e-6))
      fuzz::fail("accepted time_ms " + std::to_string(r.time_ms), text);
    if (!std::isfinite(r.time_spread_ms) || r.time_spread_ms < 0) fuzz::fail("accepted a bad time_spread_ms", text);
    if (r.registers < 0 || r.shared_bytes < 0 || r.spill_bytes < 0 || r.repeats < 0)
      fuzz::fail("accepted a negative count", text);
  }
  return 0;
}
