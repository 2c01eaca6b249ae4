#include "tuner/replay_transfer.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "costmodel/features.h"

namespace tuner {

bool transferable(const RecordedSpace& from, const RecordedSpace& to) {
  if (!from.tmpl || !to.tmpl || from.tmpl->name() != to.tmpl->name()) return false;
  if (from.workload.op != to.workload.op || from.workload.dtype != to.workload.dtype) return false;
  // Another GPU: another spec key, or another device under the same key (an H200 maps to the H100's).
  return from.workload.shape_string() != to.workload.shape_string() || from.gpu.key != to.gpu.key ||
         from.data.device.name != to.data.device.name;
}

std::vector<TransferRow> transfer_rows(const RecordedSpace& from, size_t most, uint64_t seed) {
  std::vector<size_t> picked(from.configs.size());
  std::iota(picked.begin(), picked.end(), size_t{0});
  if (most > 0 && most < picked.size()) {
    std::mt19937_64 rng(seed);
    std::shuffle(picked.begin(), picked.end(), rng);
    picked.resize(most);
    std::sort(picked.begin(), picked.end());
  }
  double best_speed = 0;
  for (size_t i : picked) best_speed = std::max(best_speed, 1.0 / from.configs[i].time_ms);
  std::vector<int64_t> dims;
  for (const auto& [n, v] : from.workload.dims) dims.push_back(v);
  const int dtype_bytes = templates::dtype_bytes(from.workload.dtype);
  std::vector<TransferRow> rows;
  rows.reserve(picked.size());
  for (size_t i : picked) {
    const RecordedConfig& rc = from.configs[i];
    TransferRow row;
    row.features = costmodel::kernel_features(rc.config, rc.profile, dims, dtype_bytes, from.gpu);
    row.relative_speed = static_cast<float>((1.0 / rc.time_ms) / best_speed);
    rows.push_back(std::move(row));
  }
  return rows;
}

void feed_transfer(search::TransferLearner& learner, const std::vector<TransferRow>& rows) {
  for (const auto& r : rows) learner.add_transfer(r.features, r.relative_speed);
}

}  // namespace tuner
