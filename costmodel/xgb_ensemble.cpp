#include "costmodel/xgb_ensemble.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <sstream>
#include <utility>

namespace tuner::costmodel {
namespace {

constexpr const char* kMagic = "tuner-xgb-ensemble 1\n";

// Resample counts: n draws with replacement among the rows of positive weight.
std::vector<float> bootstrap_counts(const std::vector<float>& weights, size_t n, uint64_t seed) {
  std::vector<size_t> live;
  for (size_t i = 0; i < n; ++i)
    if (weights.empty() || weights[i] > 0) live.push_back(i);
  std::vector<float> counts(n, 0.0f);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 0x51ED27);
  for (size_t k = 0; k < live.size(); ++k) counts[live[rng() % live.size()]] += 1.0f;
  return counts;
}

}  // namespace

XgbEnsemble::XgbEnsemble(EnsembleParams p) : params_(std::move(p)) {}

bool XgbEnsemble::fit(const FeatureMatrix& x, const std::vector<float>& targets, const std::vector<float>& weights,
                      std::string* error) {
  const int k = std::max(1, params_.members);
  std::vector<Member> fitted;
  for (int m = 0; m < k; ++m) {
    XgbParams mp = params_.member;
    mp.seed = params_.member.seed + static_cast<uint64_t>(m);
    Member member{XgbModel(mp), 0, 1};
    std::vector<float> w = weights;
    if (params_.bootstrap && k > 1 && targets.size() == x.rows) {
      std::vector<float> counts = bootstrap_counts(weights, x.rows, mp.seed);
      // A resample needs two distinct targets among its rows for a ranking to learn anything.
      std::set<float> distinct;
      for (size_t i = 0; i < x.rows; ++i)
        if (counts[i] > 0) distinct.insert(targets[i]);
      if (distinct.size() >= 2) {
        w.resize(x.rows, 1.0f);
        for (size_t i = 0; i < x.rows; ++i) w[i] *= counts[i];
      }
    }
    std::string member_error;
    if (!member.model.fit(x, targets, w, &member_error) && !member.model.fit(x, targets, weights, &member_error))
      return fail_with(error, "XgbEnsemble::fit: member " + std::to_string(m) + ": " + member_error);
    // Standardise by the member's own scores on the training rows.
    const std::vector<float> s = member.model.predict(x);
    double sum = 0, sq = 0;
    for (float v : s) sum += v;
    const double mean = s.empty() ? 0 : sum / static_cast<double>(s.size());
    for (float v : s) sq += (v - mean) * (v - mean);
    const double sd = s.size() > 1 ? std::sqrt(sq / static_cast<double>(s.size())) : 0;
    member.mean = mean;
    member.sd = sd > 1e-12 ? sd : 1.0;
    fitted.push_back(std::move(member));
  }
  members_ = std::move(fitted);
  return true;
}

std::vector<float> XgbEnsemble::predict(const FeatureMatrix& x) const {
  std::vector<float> mean, spread;
  predict_spread(x, &mean, &spread);
  return mean;
}

bool XgbEnsemble::predict_spread(const FeatureMatrix& x, std::vector<float>* mean, std::vector<float>* spread) const {
  mean->clear();
  spread->clear();
  if (members_.empty() || x.rows == 0) return x.rows == 0 && !members_.empty();
  std::vector<double> sum(x.rows, 0.0), sq(x.rows, 0.0);
  std::vector<const XgbModel*> models;
  for (const Member& m : members_) models.push_back(&m.model);
  const std::vector<std::vector<float>> scores = XgbModel::predict_all(models, x);
  if (scores.size() != members_.size()) return false;
  for (size_t i = 0; i < members_.size(); ++i) {
    const Member& m = members_[i];
    const std::vector<float>& s = scores[i];
    if (s.size() != x.rows) return false;
    for (size_t r = 0; r < x.rows; ++r) {
      const double z = (s[r] - m.mean) / m.sd;
      sum[r] += z;
      sq[r] += z * z;
    }
  }
  const double k = static_cast<double>(members_.size());
  mean->resize(x.rows);
  spread->resize(x.rows);
  for (size_t r = 0; r < x.rows; ++r) {
    const double mu = sum[r] / k;
    (*mean)[r] = static_cast<float>(mu);
    (*spread)[r] = static_cast<float>(std::sqrt(std::max(0.0, sq[r] / k - mu * mu)));
  }
  return true;
}

std::string XgbEnsemble::save() const {
  if (members_.empty()) return {};
  std::ostringstream out;
  out << kMagic << members_.size() << "\n";
  for (const Member& m : members_) {
    const std::string bytes = m.model.save();
    if (bytes.empty()) return {};
    char head[96];
    std::snprintf(head, sizeof head, "%.17g %.17g %zu\n", m.mean, m.sd, bytes.size());
    out << head << bytes;
  }
  return out.str();
}

bool XgbEnsemble::load(const std::string& bytes, std::string* error) {
  std::vector<Member> loaded;
  const std::string magic = kMagic;
  if (bytes.compare(0, magic.size(), magic) != 0) {
    // A lone booster saved before ensembles: one member, spread 0.
    Member m{XgbModel(params_.member), 0, 1};
    if (!m.model.load(bytes, error)) return false;
    loaded.push_back(std::move(m));
  } else {
    size_t pos = magic.size();
    auto line = [&](std::string* out) {
      const size_t end = bytes.find('\n', pos);
      if (end == std::string::npos) return false;
      *out = bytes.substr(pos, end - pos);
      pos = end + 1;
      return true;
    };
    std::string l;
    if (!line(&l)) return fail_with(error, "XgbEnsemble::load: truncated header");
    const long count = std::strtol(l.c_str(), nullptr, 10);
    if (count < 1 || count > 1024) return fail_with(error, "XgbEnsemble::load: bad member count '" + l + "'");
    for (long i = 0; i < count; ++i) {
      Member m{XgbModel(params_.member), 0, 1};
      size_t size = 0;
      if (!line(&l) || std::sscanf(l.c_str(), "%lf %lf %zu", &m.mean, &m.sd, &size) != 3 || !(m.sd > 0) ||
          size > bytes.size() - pos)
        return fail_with(error, "XgbEnsemble::load: bad or truncated member " + std::to_string(i));
      if (!m.model.load(bytes.substr(pos, size), error)) return false;
      pos += size;
      loaded.push_back(std::move(m));
    }
  }
  members_ = std::move(loaded);
  return true;
}

}  // namespace tuner::costmodel
