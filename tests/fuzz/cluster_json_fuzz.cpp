// Fuzz target: cluster JSON specs (parallel::cluster_from_json, what `plan --cluster FILE.json`
// reads). Input that is not JSON is skipped. An accepted cluster must have GPUs and memory.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "search/parallel/cluster_spec.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  parallel::ClusterSpec c;
  if (!fuzz::parses(text, [&] { c = parallel::cluster_from_json(doc, "fuzz.json"); })) return 0;
  if (c.nodes <= 0 || c.gpus_per_node <= 0 || c.memory_per_gpu_bytes <= 0)
    fuzz::fail("accepted a cluster without GPUs or memory", text);
  return 0;
}
