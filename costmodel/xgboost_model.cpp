#include "costmodel/xgboost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace tuner::costmodel {
namespace {

// An XGBoost failure. check() throws it; every public method of XgbModel
// catches it and returns it as an error value, so it never leaves this file.
// (Throwing inside lets the RAII handles clean up on every early exit.)
class XgbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// XGBoost's last error without its timestamp and stack trace, copied out at
// once (the buffer is reused by the next call).
std::string last_error() {
  std::string msg = XGBGetLastError();
  if (auto pos = msg.find("\nStack trace"); pos != std::string::npos) msg.resize(pos);
  if (msg.size() > 11 && msg[0] == '[' && msg[9] == ']' && msg[10] == ' ') msg.erase(0, 11);  // "[hh:mm:ss] "
  while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
  return msg;
}

// The one place XGBoost return codes are checked.
void check(int rc, const char* call) {
  if (rc != 0) throw XgbError(std::string(call) + ": " + last_error());
}

struct DMatrixFree {
  void operator()(DMatrixHandle h) const { XGDMatrixFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixFree>;

struct BoosterFree {
  void operator()(BoosterHandle h) const { XGBoosterFree(h); }
};
using Booster = std::unique_ptr<void, BoosterFree>;

DMatrix make_dmatrix(const float* values, size_t rows, size_t cols, int threads) {
  DMatrixHandle h = nullptr;
  check(XGDMatrixCreateFromMat_omp(values, rows, cols, std::nanf(""), &h, threads), "XGDMatrixCreateFromMat_omp");
  return DMatrix(h);
}

Booster make_booster(DMatrixHandle train) {
  BoosterHandle h = nullptr;
  DMatrixHandle dmats[1] = {train};
  check(XGBoosterCreate(dmats, train ? 1 : 0, &h), "XGBoosterCreate");
  return Booster(h);
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void set_param(BoosterHandle b, const char* name, const std::string& value) {
  if (XGBoosterSetParam(b, name, value.c_str()) != 0)
    throw XgbError(std::string("XGBoosterSetParam(") + name + "=" + value + "): " + last_error());
}

// Parameters that do not travel with a saved model.
void set_runtime_params(BoosterHandle b, const XgbParams& p) {
  set_param(b, "verbosity", "0");
  if (p.threads > 0) set_param(b, "nthread", std::to_string(p.threads));
}

void set_training_params(BoosterHandle b, const XgbParams& p) {
  set_runtime_params(b, p);
  set_param(b, "objective", p.objective);
  set_param(b, "tree_method", p.tree_method);
  set_param(b, "max_depth", std::to_string(p.max_depth));
  set_param(b, "eta", format_double(p.eta));
  set_param(b, "gamma", format_double(p.gamma));
  set_param(b, "min_child_weight", format_double(p.min_child_weight));
  set_param(b, "lambda", format_double(p.lambda));
  set_param(b, "seed", std::to_string(static_cast<int64_t>(p.seed & INT64_MAX)));
}

// Margin scores of every row of `d`, copied out of XGBoost's buffer.
std::vector<float> predict_scores(BoosterHandle b, DMatrixHandle d, size_t rows, bool training) {
  const char* config = training
      ? R"({"type": 0, "training": true, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})"
      : R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  check(XGBoosterPredictFromDMatrix(b, d, config, &shape, &dim, &out), "XGBoosterPredictFromDMatrix");
  size_t total = 1;
  for (bst_ulong i = 0; i < dim; ++i) total *= shape[i];
  if (total != rows)
    throw XgbError("XGBoosterPredictFromDMatrix: " + std::to_string(total) + " scores for " +
                   std::to_string(rows) + " rows");
  return std::vector<float>(out, out + total);
}

// Gradient and hessian of the pairwise logistic ranking loss, sampled as
// XGBoost's rank:pairwise does: rows sorted by target, each row paired with
// `pairs_per_row` random rows of a different target; for the pair
// (better, worse), p = sigmoid(s_better - s_worse), the better row gets
// gradient (p - 1) w and the worse -(p - 1) w, both hessian 2 p (1 - p) w,
// with w = weight[better] * weight[worse] (1 when weights is empty).
void pairwise_gradient(const std::vector<float>& targets, const std::vector<float>& weights,
                       const std::vector<float>& scores, int pairs_per_row, std::mt19937_64& rng,
                       std::vector<float>* grad, std::vector<float>* hess) {
  const size_t n = targets.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return targets[a] > targets[b]; });
  std::vector<double> g(n, 0.0), h(n, 0.0);
  for (size_t begin = 0; begin < n;) {
    size_t end = begin;
    while (end < n && targets[order[end]] == targets[order[begin]]) ++end;
    const size_t others = n - (end - begin);  // rows with a different target
    for (size_t i = begin; i < end && others > 0; ++i) {
      for (int k = 0; k < pairs_per_row; ++k) {
        const size_t r = static_cast<size_t>(rng() % others);
        const bool partner_better = r < begin;  // sorted descending: indices before `begin` are better
        const size_t partner = order[partner_better ? r : r + (end - begin)];
        const size_t better = partner_better ? partner : order[i];
        const size_t worse = partner_better ? order[i] : partner;
        const double w = weights.empty() ? 1.0 : double(weights[better]) * weights[worse];
        const double p = 1.0 / (1.0 + std::exp(-(double(scores[better]) - scores[worse])));
        const double gw = (p - 1.0) * w;
        const double hw = 2.0 * std::max(p * (1.0 - p), 1e-16) * w;
        g[better] += gw;
        g[worse] -= gw;
        h[better] += hw;
        h[worse] += hw;
      }
    }
    begin = end;
  }
  grad->assign(g.begin(), g.end());
  hess->assign(h.begin(), h.end());
}

// Early-stopping score, larger = better: the mean over j = 1..k of the
// fraction of the predicted top-j rows whose target is at least the true
// j-th best target (ties in the targets count as hits; ties in the scores
// break by row index). 1 means the top k are ordered perfectly.
double top_k_recall_score(const std::vector<float>& targets, const std::vector<float>& scores, int top_k) {
  const size_t n = targets.size();
  const size_t k = std::min(n, static_cast<size_t>(top_k));
  if (k == 0) return 0;
  std::vector<float> best(targets);
  std::partial_sort(best.begin(), best.begin() + k, best.end(), std::greater<float>());
  std::vector<size_t> predicted(n);
  std::iota(predicted.begin(), predicted.end(), size_t{0});
  std::partial_sort(predicted.begin(), predicted.begin() + k, predicted.end(), [&](size_t a, size_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  double sum = 0;
  for (size_t j = 1; j <= k; ++j) {
    const float threshold = best[j - 1];
    size_t hits = 0;
    for (size_t t = 0; t < j; ++t) hits += targets[predicted[t]] >= threshold;
    sum += double(hits) / double(j);
  }
  return sum / double(k);
}

// Empty when fit() may proceed, else what is wrong with its input.
std::string fit_input_problem(const XgbParams& p, const FeatureMatrix& x, const std::vector<float>& targets,
                              const std::vector<float>& weights) {
  if (x.values.size() != x.rows * x.cols)
    return "feature matrix holds " + std::to_string(x.values.size()) + " values, expected rows x cols = " +
           std::to_string(x.rows) + " x " + std::to_string(x.cols);
  if (targets.size() != x.rows)
    return std::to_string(targets.size()) + " targets for " + std::to_string(x.rows) + " rows";
  if (!weights.empty() && weights.size() != x.rows)
    return std::to_string(weights.size()) + " weights for " + std::to_string(x.rows) + " rows";
  if (x.rows > 0 && x.cols == 0) return "feature matrix has no columns";
  for (size_t i = 0; i < targets.size(); ++i)
    if (!std::isfinite(targets[i])) return "target of row " + std::to_string(i) + " is not finite";
  for (size_t i = 0; i < weights.size(); ++i)
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      return "weight of row " + std::to_string(i) + " is negative or not finite";
  if (p.rounds < 1) return "XgbParams::rounds must be at least 1";
  if (p.pairs_per_row < 1) return "XgbParams::pairs_per_row must be at least 1";
  if (p.early_stop_rounds < 0) return "XgbParams::early_stop_rounds must be >= 0";
  if (p.early_stop_rounds > 0 && p.early_stop_top_k < 1) return "XgbParams::early_stop_top_k must be at least 1";
  return {};
}

}  // namespace

void XgbModel::BoosterDeleter::operator()(void* handle) const { XGBoosterFree(handle); }

XgbModel::XgbModel(XgbParams p) : params_(std::move(p)) {}
XgbModel::~XgbModel() = default;
XgbModel::XgbModel(XgbModel&&) noexcept = default;
XgbModel& XgbModel::operator=(XgbModel&&) noexcept = default;

bool XgbModel::fitted() const { return booster_ != nullptr; }

bool XgbModel::fit(const FeatureMatrix& x, const std::vector<float>& targets, const std::vector<float>& weights,
                   std::string* error) {
  if (std::string problem = fit_input_problem(params_, x, targets, weights); !problem.empty())
    return fail_with(error, "XgbModel::fit: " + problem);

  // Rows of weight 0 are dropped; the rest are copied into a compact matrix.
  std::vector<size_t> rows;
  for (size_t i = 0; i < x.rows; ++i)
    if (weights.empty() || weights[i] > 0) rows.push_back(i);
  const size_t n = rows.size();
  if (n < 2)
    return fail_with(error, "XgbModel::fit: needs at least 2 rows of positive weight, got " + std::to_string(n));
  const size_t cols = x.cols;
  std::vector<float> values(n * cols), labels(n), row_weights;
  for (size_t r = 0; r < n; ++r) {
    std::copy_n(x.values.begin() + rows[r] * cols, cols, values.begin() + r * cols);
    labels[r] = targets[rows[r]];
  }
  bool uniform = true;
  if (!weights.empty()) {
    float max_weight = 0;
    for (size_t i : rows) max_weight = std::max(max_weight, weights[i]);
    for (size_t i : rows) {
      row_weights.push_back(weights[i] / max_weight);
      uniform = uniform && weights[i] == max_weight;
    }
    if (uniform) row_weights.clear();
  }

  const bool own_pairwise = params_.objective == "rank:pairwise";
  const bool ranking = std::string_view(params_.objective).starts_with("rank:");
  if (ranking && !own_pairwise && !uniform)
    return fail_with(error, "XgbModel::fit: objective " + params_.objective +
                           " takes one weight per query group; per-row weights need rank:pairwise or a "
                           "pointwise objective");

  try {
    DMatrix train = make_dmatrix(values.data(), n, cols, params_.threads);
    check(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), n), "XGDMatrixSetFloatInfo(label)");
    if (ranking && !own_pairwise) {
      const unsigned group_size = static_cast<unsigned>(n);  // one query group of all rows, as AutoTVM
      check(XGDMatrixSetUIntInfo(train.get(), "group", &group_size, 1), "XGDMatrixSetUIntInfo(group)");
    }
    if (!ranking && !row_weights.empty())
      check(XGDMatrixSetFloatInfo(train.get(), "weight", row_weights.data(), n), "XGDMatrixSetFloatInfo(weight)");

    Booster booster = make_booster(train.get());
    set_training_params(booster.get(), params_);

    std::mt19937_64 rng(params_.seed);
    std::vector<float> scores, grad, hess;
    if (own_pairwise) scores = predict_scores(booster.get(), train.get(), n, /*training=*/true);
    const bool early_stop = params_.early_stop_rounds > 0;
    double best_score = -1;
    int best_round = -1, done = 0;
    for (int round = 0; round < params_.rounds; ++round) {
      if (own_pairwise) {
        pairwise_gradient(labels, row_weights, scores, params_.pairs_per_row, rng, &grad, &hess);
        check(XGBoosterBoostOneIter(booster.get(), train.get(), grad.data(), hess.data(), n),
              "XGBoosterBoostOneIter");
      } else {
        check(XGBoosterUpdateOneIter(booster.get(), round, train.get()), "XGBoosterUpdateOneIter");
      }
      done = round + 1;
      if (own_pairwise || early_stop) scores = predict_scores(booster.get(), train.get(), n, /*training=*/true);
      if (!early_stop) continue;
      const double score = top_k_recall_score(labels, scores, params_.early_stop_top_k);
      if (score > best_score) {
        best_score = score;
        best_round = round;
      } else if (round - best_round >= params_.early_stop_rounds) {
        break;
      }
    }
    if (early_stop && best_round + 1 < done) {  // keep the trees up to the best round
      BoosterHandle sliced = nullptr;
      check(XGBoosterSlice(booster.get(), 0, best_round + 1, 1, &sliced), "XGBoosterSlice");
      booster.reset(sliced);
      done = best_round + 1;
    }
    bst_ulong features = 0;
    check(XGBoosterGetNumFeature(booster.get(), &features), "XGBoosterGetNumFeature");

    booster_.reset(booster.release());
    num_features_ = static_cast<size_t>(features);
    rounds_ = done;
    return true;
  } catch (const XgbError& e) {
    return fail_with(error, std::string("XgbModel::fit: ") + e.what());
  }
}

std::vector<float> XgbModel::predict(const FeatureMatrix& x) const { return predict(x, nullptr); }

std::vector<float> XgbModel::predict(const FeatureMatrix& x, std::string* error) const {
  if (!booster_) {
    fail_with(error, "XgbModel::predict: the model was never fitted");
    return {};
  }
  if (x.values.size() != x.rows * x.cols) {
    fail_with(error, "XgbModel::predict: feature matrix holds " + std::to_string(x.values.size()) +
                    " values, expected rows x cols = " + std::to_string(x.rows) + " x " + std::to_string(x.cols));
    return {};
  }
  if (x.cols != num_features_) {
    fail_with(error, "XgbModel::predict: " + std::to_string(x.cols) + " features, the model was trained on " +
                    std::to_string(num_features_));
    return {};
  }
  if (x.rows == 0) return {};
  try {
    DMatrix d = make_dmatrix(x.values.data(), x.rows, x.cols, params_.threads);
    return predict_scores(booster_.get(), d.get(), x.rows, /*training=*/false);
  } catch (const XgbError& e) {
    fail_with(error, std::string("XgbModel::predict: ") + e.what());
    return {};
  }
}

std::vector<std::vector<float>> XgbModel::predict_all(const std::vector<const XgbModel*>& models,
                                                      const FeatureMatrix& x, std::string* error) {
  std::vector<std::vector<float>> out;
  if (models.empty() || x.rows == 0) return out;
  for (const XgbModel* m : models) {
    if (!m->booster_ || m->num_features_ != x.cols || x.values.size() != x.rows * x.cols) {
      fail_with(error, "XgbModel::predict_all: a model is not fitted or was trained on another feature count");
      return {};
    }
  }
  try {
    DMatrix d = make_dmatrix(x.values.data(), x.rows, x.cols, models.front()->params_.threads);
    for (const XgbModel* m : models) out.push_back(predict_scores(m->booster_.get(), d.get(), x.rows, false));
    return out;
  } catch (const XgbError& e) {
    fail_with(error, std::string("XgbModel::predict_all: ") + e.what());
    return {};
  }
}

std::string XgbModel::save() const {
  if (!booster_) return {};
  bst_ulong len = 0;
  const char* bytes = nullptr;
  if (XGBoosterSaveModelToBuffer(booster_.get(), R"({"format": "ubj"})", &len, &bytes) != 0) return {};
  return std::string(bytes, len);
}

bool XgbModel::load(const std::string& bytes, std::string* error) {
  if (bytes.empty()) return fail_with(error, "XgbModel::load: no bytes");
  try {
    Booster booster = make_booster(nullptr);
    check(XGBoosterLoadModelFromBuffer(booster.get(), bytes.data(), bytes.size()), "XGBoosterLoadModelFromBuffer");
    set_runtime_params(booster.get(), params_);
    bst_ulong features = 0;
    int rounds = 0;
    check(XGBoosterGetNumFeature(booster.get(), &features), "XGBoosterGetNumFeature");
    check(XGBoosterBoostedRounds(booster.get(), &rounds), "XGBoosterBoostedRounds");
    if (features == 0) return fail_with(error, "XgbModel::load: the model has no features");
    booster_.reset(booster.release());
    num_features_ = static_cast<size_t>(features);
    rounds_ = rounds;
    return true;
  } catch (const XgbError& e) {
    return fail_with(error, std::string("XgbModel::load: ") + e.what());
  }
}

}  // namespace tuner::costmodel
