#include "search/parallel/memory_model.h"

#include <algorithm>

namespace tuner::parallel {

std::string to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

std::string to_string(Schedule s) {
  switch (s) {
    case Schedule::kGpipe: return "gpipe";
    case Schedule::k1F1B: return "1f1b";
    case Schedule::kInterleaved: return "interleaved";
  }
  return "?";
}

double transformer_activation_bytes(double s, double b, double h, double a, int t, bool sp, Recompute r) {
  const double sbh = s * b * h;
  const double attn = 5 * a * s / h;
  if (r == Recompute::kFull) return sp ? 2 * sbh / t : 2 * sbh;
  const double attn_term = r == Recompute::kSelective ? 0 : attn;
  if (t <= 1) return sbh * (34 + attn_term);
  if (sp) return sbh / t * (34 + attn_term);
  return sbh * (10 + 24.0 / t + attn_term / t);
}

double in_flight_micro_batches(Schedule s, int p, int stage, int m, int v) {
  if (s == Schedule::kGpipe) return m;
  const double base = std::min(p - stage, m);
  if (s == Schedule::kInterleaved && v > 1) return base * (1.0 + (p - 1.0) / (static_cast<double>(p) * v));
  return base;
}

MemoryBreakdown model_state_bytes(double params, int zero, int dp) {
  MemoryBreakdown m;
  const double d = std::max(dp, 1);
  m.weights = 2 * params / (zero >= 3 ? d : 1);
  m.gradients = 2 * params / (zero >= 2 ? d : 1);
  m.optimizer = 12 * params / (zero >= 1 ? d : 1);
  return m;
}

}  // namespace tuner::parallel
