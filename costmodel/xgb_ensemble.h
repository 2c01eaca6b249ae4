// An ensemble of boosted models (XgbModel members) that gives each candidate
// a mean score and a spread, so the model-guided search can pick by an upper
// confidence bound instead of a fixed share of random picks.
//
// Each member trains on its own bootstrap resample of the rows (drawn as
// integer multiplicities, passed to XGBoost as row weights; rows drawn zero
// times are left out) with its own seed. Rank scores are only meaningful up
// to their order and scale, so each member's scores are standardised by the
// mean and standard deviation of its own predictions on the full training
// set: "1.0" means one standard deviation of that member's training scores.
// The ensemble's score is the members' mean; its spread the standard
// deviation across members. Where rows are dense the members agree (small
// spread); far from them the resamples disagree.
//
// Not responsible for the acquisition rule (the search combines mean and
// spread), for targets or weights (as XgbModel), nor for featurisation.
// Deterministic: the same data, weights and seed give the same predictions.
// Not thread-safe (as XgbModel).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "costmodel/xgboost_model.h"

namespace tuner::costmodel {

struct EnsembleParams {
  int members = 5;        ///< Boosted models in the ensemble (1: a plain XgbModel with spread 0).
  bool bootstrap = true;  ///< Each member trains on a bootstrap resample of the rows (false: seeds differ only).
  /// Per-member training parameters; member m uses seed member.seed + m. Fewer rounds than a lone
  /// model's default keep the ensemble's fit and prediction cost near one model's.
  XgbParams member = [] {
    XgbParams p;
    p.rounds = 30;
    p.early_stop_rounds = 10;
    return p;
  }();
};

/// Mean and spread of a bootstrap ensemble of XGBoost rankers; a CostModel. Move-only.
class XgbEnsemble final : public CostModel {
 public:
  explicit XgbEnsemble(EnsembleParams p = {});

  /// Fits every member on its own resample (weights multiply the resample counts). Fails, keeping the
  /// previous ensemble, when the data fail XgbModel::fit's checks; a member whose resample holds fewer
  /// than 2 distinct rows trains on all rows instead.
  bool fit(const FeatureMatrix& x, const std::vector<float>& targets, const std::vector<float>& weights,
           std::string* error) override;
  /// The members' mean standardised score, larger = predicted better; empty when not fitted.
  std::vector<float> predict(const FeatureMatrix& x) const override;
  /// Mean (as predict()) and the standard deviation across members, per row.
  bool predict_spread(const FeatureMatrix& x, std::vector<float>* mean, std::vector<float>* spread) const override;
  /// All members and their standardisation, as bytes for load().
  std::string save() const override;
  /// Bytes from save(), or a lone XgbModel's bytes (an older session's model: one member, spread 0).
  bool load(const std::string& bytes, std::string* error) override;

  size_t members() const { return members_.size(); }
  const EnsembleParams& params() const { return params_; }

 private:
  struct Member {
    XgbModel model;
    double mean = 0;  ///< Mean of its predictions on the training rows.
    double sd = 1;    ///< Their standard deviation (1 when they are all equal).
  };
  EnsembleParams params_;
  std::vector<Member> members_;
};

}  // namespace tuner::costmodel
