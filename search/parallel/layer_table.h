// What every layer of the chain costs when a stage runs it on one submesh shape
// at one memory level of the layer ILP: the terms of its time per micro-batch,
// its parameters and activations per device, and prefix sums so that a range of
// layers (a stage) costs O(1). The planner fills one table per (shape, level) a
// configuration needs; the stage DPs and the plan read them. Plain data: it does
// not solve, plan or decide what fits.
#pragma once

#include <algorithm>
#include <vector>

#include "search/parallel/layer_sharding.h"
#include "search/parallel/resharding.h"

namespace tuner::parallel {

/// The largest of a vector's values over a range [i, j), in O(1) after an O(L log L) build (a sparse table).
struct RangeMax {
  void build(const std::vector<double>& v) {
    const int L = static_cast<int>(v.size());
    table_.assign(1, v);
    for (int k = 1; (1 << k) <= L; ++k) {
      table_.emplace_back(L, 0.0);
      for (int i = 0; i + (1 << k) <= L; ++i)
        table_[k][i] = std::max(table_[k - 1][i], table_[k - 1][i + (1 << (k - 1))]);
    }
  }
  /// i < j.
  double of(int i, int j) const {
    int k = 0;
    while ((2 << k) <= j - i) ++k;
    return std::max(table_[k][i], table_[k][j - (1 << k)]);
  }

 private:
  std::vector<std::vector<double>> table_;  ///< table_[k][i] = max of v[i, i + 2^k).
};

struct LayerTable {
  StageShape shape;                       ///< The submesh the layers run on.
  std::vector<const LayerPlan*> lp;       ///< Per layer: its sharding (owned by the planner's cache).
  // Per layer, per micro-batch (seconds): t = comp + mem + comm + epc + cpc + rec + zex + reshard (cpc: the
  // context-parallel ring's K/V exchange; epc: the expert
  // dispatch/combine all-to-alls).
  std::vector<double> t, comp, mem, comm, epc, cpc, rec, zex, reshard, bwd;
  std::vector<double> params;             ///< Parameters per device.
  std::vector<double> eparams;            ///< Of params, expert weights (already divided by ep).
  std::vector<double> act;                ///< Activation bytes kept per micro-batch (recomputation applied).
  std::vector<double> full_act;           ///< ... without recomputation (what a recomputed layer holds).
  bool sequence_parallel = false;         ///< Some layer's residual stream splits by tokens.
  // A head sharing the embedding's weights (TiedEmbedding): a stage holding both layers keeps one copy of them,
  // and gathers and reduce-scatters it once under ZeRO-2/3.
  int tied_embedding = -1, tied_head = -1;
  double tied_params = 0;                 ///< The shared weights per device (0: nothing tied).
  double tied_zex = 0;                    ///< The head's ZeRO-2/3 time (zex) for them, per micro-batch.
  /// Whether [i, j) holds both the embedding and the head that share weights.
  bool holds_tied(int i, int j) const { return tied_params > 0 && i <= tied_embedding && tied_head < j; }

  /// Prefix sums and the range maxima of full_act and params; call after filling the per-layer vectors.
  void finish() {
    const int L = static_cast<int>(t.size());
    pre_t_.assign(L + 1, 0), pre_p_.assign(L + 1, 0), pre_e_.assign(L + 1, 0), pre_a_.assign(L + 1, 0);
    pre_b_.assign(L + 1, 0);
    for (int l = 0; l < L; ++l) {
      pre_t_[l + 1] = pre_t_[l] + t[l];
      pre_p_[l + 1] = pre_p_[l] + params[l];
      pre_e_[l + 1] = pre_e_[l] + eparams[l];
      pre_a_[l + 1] = pre_a_[l] + act[l];
      pre_b_[l + 1] = pre_b_[l] + bwd[l];
    }
    max_full_.build(full_act);
    max_params_.build(params);
  }
  /// Time of layers [i, j) per micro-batch, the tied weights' ZeRO collectives counted once.
  double time(int i, int j) const { return pre_t_[j] - pre_t_[i] - (holds_tied(i, j) ? tied_zex : 0.0); }
  /// Parameters per device of layers [i, j), a tied embedding and head counted once when both are in it.
  double params_of(int i, int j) const { return pre_p_[j] - pre_p_[i] - (holds_tied(i, j) ? tied_params : 0.0); }
  double eparams_of(int i, int j) const { return pre_e_[j] - pre_e_[i]; }
  double act_of(int i, int j) const { return pre_a_[j] - pre_a_[i]; }
  double bwd_of(int i, int j) const { return pre_b_[j] - pre_b_[i]; }
  /// The largest full_act in [i, j) (i < j).
  double max_full_of(int i, int j) const { return max_full_.of(i, j); }
  /// The most parameters per device of one layer in [i, j) (i < j).
  double max_params_of(int i, int j) const { return max_params_.of(i, j); }

 private:
  std::vector<double> pre_t_, pre_p_, pre_e_, pre_a_, pre_b_;
  RangeMax max_full_, max_params_;
};

}  // namespace tuner::parallel
