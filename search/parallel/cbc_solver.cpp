// solve_sharding_ilp (declared in sharding_ilp.h): the sharding problem as a
// mixed-integer program for CBC, through its C API. This is the only file that
// includes Cbc_C_Interface.h; the model handle lives in a unique_ptr with
// Cbc_deleteModel as deleter, and check() turns a failed call into an error.
//
// Variables: s_v[p] binary, one-hot per node; e_uv[p][q] continuous in [0, 1].
// With s binary, sum_q e[p][q] <= s_u[p], sum_p e[p][q] <= s_v[q] and
// sum e = 1 leave exactly one e = 1, at the chosen pair, so the edge variables
// need not be integer (fewer integers, same optimum). Costs are scaled to
// microseconds and memory to fractions of the budget, to keep coefficients near 1.
#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "search/parallel/sharding_ilp.h"

namespace tuner::parallel {

namespace {

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};
using CbcModelPtr = std::unique_ptr<Cbc_Model, CbcDeleter>;

void check(int rc, const char* call) {
  if (rc != 0) throw std::runtime_error(std::string("CBC ") + call + " failed with status " + std::to_string(rc));
}

constexpr double kTimeScale = 1e6;  // seconds -> microseconds
/// Columns up to which CBC runs bare branch and bound (a transformer layer's problem has ~150).
constexpr int kSmallProblemColumns = 2000;

/// One binary column per strategy with its cost, and sum_p s_v[p] = 1 per node; the first column of each node.
std::vector<int> add_strategy_columns(Cbc_Model* m, const ShardingRequest& req, int& cols) {
  std::vector<int> s_first(req.nodes.size());
  for (size_t v = 0; v < req.nodes.size(); ++v) {
    s_first[v] = cols;
    std::vector<int> idx;
    std::vector<double> one;
    for (size_t p = 0; p < req.nodes[v].cost.size(); ++p) {
      Cbc_addCol(m, "", 0, 1, req.nodes[v].cost[p] * kTimeScale, 1, 0, nullptr, nullptr);
      idx.push_back(cols++);
      one.push_back(1.0);
    }
    Cbc_addRow(m, "", static_cast<int>(idx.size()), idx.data(), one.data(), 'E', 1.0);
  }
  return s_first;
}

/// The e variables of one edge and their linking rows (Alpa's linearisation of s_u^T R s_v).
void add_edge(Cbc_Model* m, const ShardingRequest& req, const ShardingEdge& e, const std::vector<int>& s_first,
              int& cols) {
  const int ns = static_cast<int>(req.nodes[e.src].cost.size()), nd = static_cast<int>(req.nodes[e.dst].cost.size());
  const int e_first = cols;
  for (int k = 0; k < ns * nd; ++k) {
    Cbc_addCol(m, "", 0, 1, e.resharding[k] * kTimeScale, 0, 0, nullptr, nullptr);
    ++cols;
  }
  std::vector<int> idx;
  std::vector<double> coef;
  for (int p = 0; p < ns; ++p) {  // sum_q e[p][q] - s_src[p] <= 0
    idx.clear();
    coef.clear();
    for (int q = 0; q < nd; ++q) idx.push_back(e_first + p * nd + q), coef.push_back(1.0);
    idx.push_back(s_first[e.src] + p), coef.push_back(-1.0);
    Cbc_addRow(m, "", static_cast<int>(idx.size()), idx.data(), coef.data(), 'L', 0.0);
  }
  for (int q = 0; q < nd; ++q) {  // sum_p e[p][q] - s_dst[q] <= 0
    idx.clear();
    coef.clear();
    for (int p = 0; p < ns; ++p) idx.push_back(e_first + p * nd + q), coef.push_back(1.0);
    idx.push_back(s_first[e.dst] + q), coef.push_back(-1.0);
    Cbc_addRow(m, "", static_cast<int>(idx.size()), idx.data(), coef.data(), 'L', 0.0);
  }
  idx.clear();
  coef.clear();
  for (int k = 0; k < ns * nd; ++k) idx.push_back(e_first + k), coef.push_back(1.0);
  Cbc_addRow(m, "", static_cast<int>(idx.size()), idx.data(), coef.data(), 'E', 1.0);
}

/// Memory: sum_v s_v . m_v / budget <= 1 (no row without a finite budget).
void add_memory_row(Cbc_Model* m, const ShardingRequest& req, const std::vector<int>& s_first) {
  if (!std::isfinite(req.memory_budget)) return;
  std::vector<int> idx;
  std::vector<double> coef;
  for (size_t v = 0; v < req.nodes.size(); ++v)
    for (size_t p = 0; p < req.nodes[v].memory.size() && p < req.nodes[v].cost.size(); ++p) {
      if (req.nodes[v].memory[p] == 0) continue;
      idx.push_back(s_first[v] + static_cast<int>(p));
      coef.push_back(req.memory_budget > 0 ? req.nodes[v].memory[p] / req.memory_budget : 1e9);
    }
  if (!idx.empty()) Cbc_addRow(m, "", static_cast<int>(idx.size()), idx.data(), coef.data(), 'L', 1.0);
}

/// Reads the solved model back: each node's strategy, the objective recomputed exactly, the status.
void read_solution(Cbc_Model* m, const ShardingRequest& req, const std::vector<int>& s_first, ShardingSolution& sol) {
  if (Cbc_isProvenInfeasible(m)) {
    sol.status = "infeasible";
    return;
  }
  const double* x = Cbc_getColSolution(m);
  if (!x) {
    sol.status = "no solution";
    return;
  }
  sol.choice.assign(req.nodes.size(), 0);
  for (size_t v = 0; v < req.nodes.size(); ++v) {
    int best = 0;
    for (size_t p = 1; p < req.nodes[v].cost.size(); ++p)
      if (x[s_first[v] + p] > x[s_first[v] + best]) best = static_cast<int>(p);
    sol.choice[v] = best;
  }
  sol.optimal = Cbc_isProvenOptimal(m) != 0;
  sol.status = sol.optimal ? "optimal" : "time limit";
  const ShardingEvaluation ev = evaluate(req, sol);  // the objective in seconds, recomputed exactly
  sol.objective = ev.total;
  sol.feasible = ev.violations.empty();
  if (!sol.feasible) sol.status = "infeasible";
}

}  // namespace

ShardingSolution solve_sharding_ilp(const ShardingRequest& req, const IlpOptions& opts) {
  ShardingSolution sol;
  for (const auto& n : req.nodes)
    if (n.cost.empty()) {
      sol.status = "infeasible: node " + n.name + " has no strategy";
      return sol;
    }
  CbcModelPtr model(Cbc_newModel());
  if (!model) throw std::runtime_error("CBC Cbc_newModel returned null");
  Cbc_Model* m = model.get();
  Cbc_setLogLevel(m, 0);
  Cbc_setObjSense(m, 1);
  int cols = 0;
  const std::vector<int> s_first = add_strategy_columns(m, req, cols);
  // Edges whose matrix is all zero cost nothing and are left out.
  for (const auto& e : req.edges) {
    if (e.resharding.size() != req.nodes[e.src].cost.size() * req.nodes[e.dst].cost.size())
      throw std::invalid_argument("sharding edge matrix has the wrong size");
    if (std::any_of(e.resharding.begin(), e.resharding.end(), [](double r) { return r != 0; }))
      add_edge(m, req, e, s_first, cols);
  }
  add_memory_row(m, req, s_first);
  // A layer's problem is tens of binaries: CBC's preprocessing, presolve, cut generators and primal heuristics cost
  // more than the branch and bound they would shorten (a graph of 240 distinct blocks planned in 45 s with them,
  // 15 s without, the same plans). Branch and bound on the LP relaxation with a zero gap stays exact.
  // Past a few thousand columns (a JSON layer of hundreds of ops) the defaults win again, and without heuristics a
  // time limit may leave no incumbent at all: there they stay on.
  if (cols <= kSmallProblemColumns)
    for (const char* off : {"preprocess", "presolve", "cuts", "heuristics"}) Cbc_setParameter(m, off, "off");
  Cbc_setMaximumSeconds(m, opts.time_limit_s);
  Cbc_setAllowableGap(m, 0.0);
  Cbc_setAllowableFractionGap(m, 0.0);
  check(Cbc_solve(m), "Cbc_solve");
  read_solution(m, req, s_first, sol);
  return sol;
}

}  // namespace tuner::parallel
