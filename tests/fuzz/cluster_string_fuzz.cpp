// Fuzz target: cluster strings (parallel::parse_cluster_spec): "dgx-h100:N", "dgx-a100:N".
// Strings containing .json name files and are skipped (no file access).
#include <cstdint>

#include "search/parallel/cluster_spec.h"
#include "tests/fuzz/fuzz_target.h"

using namespace tuner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::as_text(data, size);
  if (text.find(".json") != std::string::npos) return 0;
  parallel::ClusterSpec c;
  if (!fuzz::parses(text, [&] { c = parallel::parse_cluster_spec(text); })) return 0;
  if (c.nodes <= 0 || c.total_gpus() <= 0) fuzz::fail("accepted a cluster without GPUs", text);
  return 0;
}
