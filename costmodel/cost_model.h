// The cost-model interface the model-guided search uses: fit on measured
// candidates, predict scores for new ones. Larger scores mean predicted faster.
//
// Candidates reach a model as rows of features (costmodel/features.h); the
// search never sees how a model works. XgbModel (xgboost_model.h) is the
// implementation tuner uses.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tuner::costmodel {

/// A dense feature matrix, row-major; NaN marks a missing value.
struct FeatureMatrix {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<float> values;

  /// Appends one row; its size must equal cols (or set cols when the matrix is empty).
  void add_row(const std::vector<float>& row) {
    if (rows == 0 && cols == 0) cols = row.size();
    values.insert(values.end(), row.begin(), row.end());
    ++rows;
  }
};

/// The error convention of the models' bool methods: sets *error (when given) and returns false.
inline bool fail_with(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Trains from scratch. Targets: larger is better (0 for failed trials). Weights: per row, empty = 1.
  /// Returns false with *error set when training is impossible; the previous model is kept.
  virtual bool fit(const FeatureMatrix& x, const std::vector<float>& targets, const std::vector<float>& weights,
                   std::string* error) = 0;
  /// Scores, larger = predicted better; empty when the model has never been fitted.
  virtual std::vector<float> predict(const FeatureMatrix& x) const = 0;
  /// Scores with their uncertainty: per row the mean score (larger = predicted better) and its spread
  /// (a standard deviation in the same units, >= 0). A model without a notion of uncertainty (the
  /// default) gives predict()'s scores and spread 0. False (outputs cleared) when predict() would be empty.
  virtual bool predict_spread(const FeatureMatrix& x, std::vector<float>* mean, std::vector<float>* spread) const {
    *mean = predict(x);
    spread->assign(mean->size(), 0.0f);
    return !mean->empty() || x.rows == 0;
  }
  /// The trained model as bytes, so a later session can start from it; empty when not fitted or when
  /// the model cannot be saved.
  virtual std::string save() const { return {}; }
  /// Replaces the model by one saved with save(); false with *error set (model kept) on failure.
  virtual bool load(const std::string& bytes, std::string* error) {
    (void)bytes;
    if (error) *error = "this cost model cannot be loaded";
    return false;
  }
};

}  // namespace tuner::costmodel
