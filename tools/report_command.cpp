// `tuner report`: one self-contained HTML file (inline SVG, no scripts, no external styles or fonts) that
// shows, per tuned workload, how each session converged, how the measured times spread (and what failed),
// and where the tuned kernels sit on the device's roofline; and, for a logged plan, the pipeline timeline
// of one iteration. The database is only read. Charts are drawn by tools/svg.h.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "costmodel/gpu_spec.h"
#include "templates/workload.h"
#include "tools/cli_common.h"
#include "tools/options.h"
#include "tools/svg.h"
#include "tuner/device_limits.h"

namespace tuner::cli {

namespace {

using svg::xml_escape;

constexpr double kWidthPx = 800;  ///< Every chart is this wide (readable on a laptop screen and in a README).

/// A chart as it goes into the report: its SVG document and a short name for --svg-dir files.
struct ChartOut {
  std::string name;  ///< e.g. "convergence"; file name part.
  std::string svg;   ///< Inline form (no xmlns).
  std::string standalone;
};

ChartOut finish(svg::Chart& c, const std::string& name) {
  return {name, c.doc().str(false), c.doc().str(true)};
}

/// Bytes a workload moves at the least (each operand read once, the result written once), for the roofline;
/// 0 when the shape does not parse or the op has no formula.
double roofline_bytes(const db::WorkloadKey& w) {
  try {
    return templates::compulsory_bytes(templates::parse_workload(w.op, w.shape, w.dtype));
  } catch (const std::exception&) {
    return 0;
  }
}

/// The spec-table GPU behind a recorded device (spec_of_recorded: an H200 is not an H100).
std::optional<costmodel::GpuSpec> device_spec(const db::ResultRow& r) {
  return spec_of_recorded(r.device_name, r.device_cc_major, r.device_cc_minor, r.device_sm_count);
}

/// Peak compute of a GPU for a dtype in GFLOP/s.
/// Row ops compute in fp32 on the CUDA cores whatever their storage type: their compute roof is the FP32 peak, not
/// the tensor cores'.
bool runs_on_cuda_cores(const db::WorkloadKey& w) { return w.dtype == "f32" || templates::is_row_op(w.op); }

double peak_gflops(const costmodel::GpuSpec& g, const db::WorkloadKey& w) {
  if (runs_on_cuda_cores(w)) return g.peak_fp32_tflops * 1e3;
  if (w.dtype == "f16") return g.peak_fp16_tflops * 1e3;
  if (w.dtype == "bf16") return g.peak_bf16_tflops * 1e3;
  return g.peak_fp32_tflops * 1e3;
}

std::string workload_label(const db::ResultRow& r) {
  return r.workload.op + " " + r.workload.shape + " " + r.workload.dtype + " on " + r.device_name;
}

// ---------------------------------------------------------------------------------------------------------
// Workload charts

struct SessionSeries {
  int64_t id = 0;
  std::string label;  ///< "session 3: xgb, seed 1 (gemm_f32_simt)"
  std::vector<std::pair<double, double>> best_so_far;  ///< (trial number, best ok time in ms so far)
  int64_t trials = 0, ok = 0;
  double best_ms = 0, best_gflops = 0, best_gbps = 0;  ///< GB/s: memory-bound ops and user kernels, else 0
  std::string template_name;
};

std::vector<SessionSeries> session_series(const std::vector<db::ResultRow>& rows,
                                          const std::map<int64_t, db::SessionRow>& sessions) {
  std::map<int64_t, SessionSeries> by_id;
  for (const auto& r : rows) {
    if (r.trial.purpose != "search") continue;  // re-measured finalists are not search steps
    auto& s = by_id[r.trial.session_id];
    s.id = r.trial.session_id;
    s.template_name = r.template_name;
    ++s.trials;
    if (r.trial.status != "ok" || r.trial.time_ms <= 0) continue;
    ++s.ok;
    if (s.best_ms == 0 || r.trial.time_ms < s.best_ms) {
      s.best_ms = r.trial.time_ms;
      s.best_gflops = r.trial.gflops;
      s.best_gbps = gbps(r);
    }
    s.best_so_far.push_back({static_cast<double>(s.trials), s.best_ms});
  }
  std::vector<SessionSeries> out;
  for (auto& [id, s] : by_id) {
    const auto it = sessions.find(id);
    s.label = "session " + std::to_string(id) +
              (it == sessions.end() ? std::string()
                                    : ": " + it->second.strategy + ", seed " + std::to_string(it->second.seed)) +
              " (" + s.template_name + ")";
    out.push_back(std::move(s));
  }
  return out;
}

ChartOut convergence_chart(const std::vector<SessionSeries>& series, bool estimate) {
  double max_trial = 1, lo = 0, hi = 0;
  for (const auto& s : series) {
    max_trial = std::max(max_trial, static_cast<double>(s.trials));
    for (const auto& [t, ms] : s.best_so_far) {
      lo = lo == 0 ? ms : std::min(lo, ms);
      hi = std::max(hi, ms);
    }
  }
  svg::Axis x{0, max_trial + 0.5, false, "trial number (search trials of the session)"};
  svg::Axis y{lo, hi, false, std::string("best time so far, ms") + (estimate ? " (sim estimate)" : "")};
  if (hi > 5 * lo && lo > 0) {
    y.log = true;
  } else {
    y.min = 0;
    y.max = hi > 0 ? hi * 1.05 : 1;
  }
  x.nice();
  y.nice();
  svg::Chart c(kWidthPx, 380, "Best-so-far time vs trial, one line per session", x, y);
  c.draw_frame();
  std::vector<std::pair<std::string, std::string>> legend;
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    legend.push_back({svg::color(i), s.label});
    if (s.best_so_far.empty()) continue;
    // A step line: the best stays until a trial improves it, then drops.
    std::vector<std::pair<double, double>> pts;
    for (size_t k = 0; k < s.best_so_far.size(); ++k) {
      const auto [t, ms] = s.best_so_far[k];
      if (!pts.empty()) pts.push_back({c.px(t), pts.back().second});
      pts.push_back({c.px(t), c.py(ms)});
    }
    pts.push_back({c.px(static_cast<double>(s.trials)), pts.back().second});
    c.doc().polyline(pts, svg::color(i), 2, "session");
    // The marker sits where the session's best was first reached (best_so_far has a point per ok trial).
    const auto found = std::find_if(s.best_so_far.begin(), s.best_so_far.end(),
                                    [&](const auto& p) { return p.second == s.best_so_far.back().second; });
    c.doc().circle(c.px(found->first), c.py(found->second), 3.5, svg::color(i), "best-marker",
                   s.label + ": best " + svg::label_num(found->second) + " ms at trial " + svg::num(found->first));
  }
  c.legend(legend);
  return finish(c, "convergence");
}

ChartOut histogram_chart(const std::vector<db::ResultRow>& rows, bool estimate) {
  std::vector<double> times;
  std::map<std::string, int64_t> failures;
  for (const auto& r : rows) {
    if (r.trial.purpose != "search") continue;  // a re-measured finalist is one config, counted once
    if (r.trial.status == "ok" && r.trial.time_ms > 0)
      times.push_back(r.trial.time_ms);
    else if (r.trial.status != "ok")
      ++failures[r.trial.status];
  }
  double lo = times.empty() ? 1 : *std::min_element(times.begin(), times.end());
  double hi = times.empty() ? 10 : *std::max_element(times.begin(), times.end());
  if (hi <= lo * 1.0001) {
    lo *= 0.9;
    hi *= 1.1;
  }
  lo *= 0.999;
  hi *= 1.001;
  const int bins = std::clamp(static_cast<int>(std::ceil(2 * std::sqrt(static_cast<double>(times.size())))), 5, 30);
  std::vector<int64_t> count(bins, 0);
  const double llo = std::log10(lo), lhi = std::log10(hi);
  for (double t : times) {
    int b = static_cast<int>((std::log10(t) - llo) / (lhi - llo) * bins);
    ++count[std::clamp(b, 0, bins - 1)];
  }
  const int64_t most = count.empty() ? 1 : std::max<int64_t>(1, *std::max_element(count.begin(), count.end()));
  svg::Axis x{lo, hi, true, std::string(estimate ? "estimated time (sim device)" : "measured time") + ", ms (log-scale bins)"};
  svg::Axis y{0, static_cast<double>(most), false, "ok trials"};
  y.integer = true;  // counts: no 0.2 ticks
  y.nice();
  svg::Chart c(kWidthPx, 340, std::string(estimate ? "Estimated" : "Measured") + " ok times (" + std::to_string(times.size()) + (times.size() == 1 ? " trial" : " trials") + ") and failures", x, y,
               210);
  c.draw_frame();
  for (int b = 0; b < bins; ++b) {
    if (count[b] == 0) continue;
    const double b0 = std::pow(10.0, llo + (lhi - llo) * b / bins), b1 = std::pow(10.0, llo + (lhi - llo) * (b + 1) / bins);
    c.doc().rect(c.px(b0) + 0.5, c.py(static_cast<double>(count[b])), c.px(b1) - c.px(b0) - 1,
                 c.py(0) - c.py(static_cast<double>(count[b])), svg::color(0), "bin",
                 std::to_string(count[b]) + (count[b] == 1 ? " trial in " : " trials in ") + svg::label_num(b0) + "-" + svg::label_num(b1) + " ms");
  }
  // Failure counts beside the histogram.
  const double fx = c.right() + 16;
  double fy = c.top() + 14;
  c.doc().text(fx, fy, "failed trials", 12, "start", "failures-title", 0, "#111");
  fy += 20;
  if (failures.empty()) c.doc().text(fx, fy, "none", 11, "start", "failure");
  for (const auto& [status, n] : failures) {
    c.doc().text(fx, fy, status + ": " + std::to_string(n), 11, "start", "failure", 0, "#b22222");
    fy += 17;
  }
  return finish(c, "histogram");
}

ChartOut roofline_chart(const std::vector<db::ResultRow>& rows, const std::vector<db::ResultRow>& best,
                        std::vector<std::string>& notes) {
  const auto& first = rows.front();
  double bytes = roofline_bytes(first.workload);
  // An op without a formula here (a user kernel's): the count its template stored with the trials.
  for (const auto& r : rows)
    if (bytes <= 0 && r.trial.bytes > 0) bytes = r.trial.bytes;
  double flops = 0;
  for (const auto& r : rows)
    if (r.trial.status == "ok" && r.trial.time_ms > 0 && r.trial.gflops > 0) {
      flops = r.trial.gflops * 1e9 * r.trial.time_ms * 1e-3;
      break;
    }
  const double ai = bytes > 0 ? flops / bytes : 0;
  const auto spec = device_spec(first);
  bool estimate = false;
  double gmin = 0, gmax = 0;
  for (const auto& r : rows) {
    estimate = estimate || r.trial.estimate;
    if (r.trial.status != "ok" || r.trial.gflops <= 0) continue;
    gmin = gmin == 0 ? r.trial.gflops : std::min(gmin, r.trial.gflops);
    gmax = std::max(gmax, r.trial.gflops);
  }
  const double peak = spec ? peak_gflops(*spec, first.workload) : 0;
  const double bw = spec ? spec->dram_bandwidth_gbps : 0;
  const double ridge = bw > 0 ? peak / bw : 0;
  double xlo = ai > 0 ? ai : 1, xhi = xlo;
  if (ridge > 0) {
    xlo = std::min(xlo, ridge);
    xhi = std::max(xhi, ridge);
  }
  svg::Axis x{xlo / 10, xhi * 10, true, "arithmetic intensity, FLOP/byte (FLOPs / bytes the shape moves)"};
  svg::Axis y{std::max(1e-3, (gmin > 0 ? gmin : 1) / 5), std::max({gmax, peak, 1.0}) * 1.5, true,
              std::string("achieved GFLOP/s") + (estimate ? " (estimate)" : "")};
  if (bw > 0) y.min = std::min(y.min, bw * x.min * 2);
  x.nice();
  y.nice();
  std::string title = "Roofline of " + (spec ? spec->key + " (" + spec->name + ")" : first.device_name);
  if (estimate) title += ": sim estimate";
  svg::Chart c(kWidthPx, 420, title, x, y);
  c.draw_frame();
  std::vector<std::pair<std::string, std::string>> legend;
  if (spec) {
    const double x0 = x.min, x1 = x.max;
    // DRAM roof: y = AI * bandwidth, up to the ridge; compute roof: y = peak, from the ridge on.
    c.doc().line(c.px(x0), c.py(x0 * bw), c.px(ridge), c.py(peak), "#555", 2, "roof-dram");
    c.doc().line(c.px(ridge), c.py(peak), c.px(x1), c.py(peak), "#000", 2, "roof-compute");
    const std::string peak_text =
        "peak " + std::string(runs_on_cuda_cores(first.workload) ? "FP32" : first.workload.dtype + " tensor") + " " +
        svg::label_num(peak / 1e3) + " TFLOP/s";
    c.doc().text(c.px(x1) - 6, c.py(peak) - 6, peak_text, 11, "end", "roof-label");
    const double xm = std::sqrt(x0 * ridge);
    c.doc().text(c.px(xm), c.py(xm * bw) - 8, "DRAM " + svg::label_num(bw) + " GB/s", 11, "middle", "roof-label", 0,
                 "#555");
    legend.push_back({"#000", "peak compute (" + spec->key + " spec table)"});
    legend.push_back({"#555", "DRAM bandwidth roof"});
  } else {
    notes.push_back("No spec-table GPU matches device '" + first.device_name + "': the roofline has no peak lines.");
  }
  if (ai > 0) {
    for (const auto& r : rows)
      if (r.trial.status == "ok" && r.trial.gflops > 0)
        c.doc().circle(c.px(ai), c.py(r.trial.gflops), 2.5, "#bbbbbb", "trial");
    for (size_t i = 0; i < best.size(); ++i) {
      const auto& b = best[i];
      c.doc().circle(c.px(ai), c.py(b.trial.gflops), 5, svg::color(i), "tuned",
                     b.template_name + ": " + svg::label_num(b.trial.gflops) + " GFLOP/s, " +
                         svg::label_num(b.trial.time_ms) + " ms");
      legend.push_back({svg::color(i), "best " + b.template_name + ": " + svg::label_num(b.trial.gflops) + " GFLOP/s"});
    }
    legend.push_back({"#bbbbbb", "every ok trial"});
  } else {
    notes.push_back(std::string(bytes > 0 ? "No FLOP count (only bytes: `query` shows its GB/s)" : "No FLOP or byte count") +
                    " for " + workload_label(first) + ": no kernels on the roofline.");
  }
  c.legend(legend, true);
  return finish(c, "roofline");
}

// ---------------------------------------------------------------------------------------------------------
// Plan timeline

/// One (stage, micro-batch, pass) box of the pipeline timeline.
struct PassBox {
  int stage = 0, micro_batch = 0;
  int chunk = 0;  ///< The stage's model chunk (interleaved schedules; 0 otherwise).
  bool backward = false;
  double start_s = 0, end_s = 0;
};

/// Simulates one iteration of a pipeline: stage s runs its passes in schedule order, a forward waits for
/// the previous stage's forward of the same micro-batch, a backward for the next stage's backward.
/// GPipe: all forwards, then all backwards. 1F1B: p-s-1 warm-up forwards, then one forward one backward,
/// then the remaining backwards. Interleaved (v > 1 chunks a stage, m a multiple of p): Megatron-LM's order, in
/// which chunk c of stage s is virtual stage c*p + s; a stage runs (p-s-1)*2 + (v-1)*p warm-up forwards, its
/// forwards take p micro-batches through chunk 0, then the same p through chunk 1 and so on (backwards the chunks
/// in reverse), and each chunk's pass takes the stage's time over v.
std::vector<PassBox> simulate_pipeline(const std::vector<double>& fwd_s, const std::vector<double>& bwd_s, int m,
                                       bool gpipe, int v = 1) {
  const int p = static_cast<int>(fwd_s.size());
  if (v < 1 || gpipe || m % p != 0) v = 1;
  struct Pass {
    int micro_batch, chunk;
    bool backward;
  };
  // The k-th forward (or backward) of a stage: its micro-batch and chunk.
  auto nth = [&](int k, bool back) {
    const int group = k % (p * v);
    const int chunk = v == 1 ? 0 : back ? v - 1 - group / p : group / p;
    const int mb = v == 1 ? k : (k / (p * v)) * p + group % p;
    return Pass{mb, chunk, back};
  };
  const int passes = m * v;
  std::vector<std::vector<Pass>> order(p);
  for (int s = 0; s < p; ++s) {
    if (gpipe) {
      for (int i = 0; i < m; ++i) order[s].push_back({i, 0, false});
      for (int i = 0; i < m; ++i) order[s].push_back({i, 0, true});
      continue;
    }
    const int warm = std::min(v == 1 ? p - s - 1 : (p - s - 1) * 2 + (v - 1) * p, passes);
    for (int k = 0; k < warm; ++k) order[s].push_back(nth(k, false));
    for (int k = 0; k < passes - warm; ++k) {
      order[s].push_back(nth(warm + k, false));
      order[s].push_back(nth(k, true));
    }
    for (int k = passes - warm; k < passes; ++k) order[s].push_back(nth(k, true));
  }
  // End times by virtual stage (chunk * p + stage) and micro-batch; -1 until run.
  std::vector<std::vector<double>> fwd_end(p * v, std::vector<double>(m, -1)), bwd_end(p * v, std::vector<double>(m, -1));
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  std::vector<PassBox> out;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < order[s].size()) {
        const Pass pass = order[s][next[s]];
        const int i = pass.micro_batch, vs = pass.chunk * p + s;
        double ready = free_at[s];
        if (!pass.backward && vs > 0) {
          if (fwd_end[vs - 1][i] < 0) break;
          ready = std::max(ready, fwd_end[vs - 1][i]);
        }
        if (pass.backward) {
          const double dep = vs + 1 < p * v ? bwd_end[vs + 1][i] : fwd_end[vs][i];
          if (dep < 0) break;
          ready = std::max(ready, dep);
        }
        const double end = ready + (pass.backward ? bwd_s[s] : fwd_s[s]) / v;
        (pass.backward ? bwd_end : fwd_end)[vs][i] = end;
        free_at[s] = end;
        out.push_back({s, i, pass.chunk, pass.backward, ready, end});
        ++next[s];
        progress = true;
      }
    }
  }
  return out;
}

struct PlanSection {
  std::string html;
  std::vector<ChartOut> charts;
};

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

PlanSection plan_section(const db::PlanRecord& rec) {
  PlanSection out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(rec.plan_json);
  } catch (const std::exception&) {
    j = nlohmann::json::object();
  }
  if (!j.is_object()) j = nlohmann::json::object();
  std::vector<std::string> missing;
  const std::string cluster_name = j.value("cluster", std::string());
  int m = static_cast<int>(number_or(j, "num_micro_batches", 0));
  if (m <= 0) {
    missing.push_back("the micro-batch count (num_micro_batches): drawn with 1 micro-batch");
    m = 1;
  }
  std::string schedule = j.value("schedule", std::string());
  if (schedule.empty()) {
    missing.push_back("the schedule: drawn as 1F1B");
    schedule = "1f1b";
  } else if (schedule != "gpipe" && schedule != "1f1b" && schedule != "interleaved") {
    missing.push_back("a schedule this report knows ('" + schedule + "'): drawn as 1F1B");
  }
  std::vector<double> fwd, bwd;
  bool split_known = true;
  if (j.contains("stages") && j["stages"].is_array()) {
    for (const auto& st : j["stages"]) {
      const double t = number_or(st, "time_per_micro_batch_s", -1);
      if (t < 0) {
        fwd.clear();
        break;
      }
      // The forward share of the stage's time: its operators' forward compute (plus half their
      // communication) over all of it; the plan stores no per-stage forward/backward times.
      double f = 0, all = 0;
      if (st.contains("sharding") && st["sharding"].is_array())
        for (const auto& ls : st["sharding"]) {
          const double count = number_or(ls, "count", 1);
          if (!ls.contains("ops") || !ls["ops"].is_array()) continue;
          for (const auto& op : ls["ops"]) {
            const double comm = number_or(op, "comm_s", 0);
            f += count * (number_or(op, "fwd_compute_s", 0) + comm / 2);
            all += count * (number_or(op, "fwd_compute_s", 0) + number_or(op, "bwd_compute_s", 0) + comm);
          }
        }
      double share = all > 0 ? f / all : 1.0 / 3;
      if (all <= 0) split_known = false;
      fwd.push_back(t * share);
      bwd.push_back(t * (1 - share));
    }
  }
  if (!split_known)
    missing.push_back("per-operator forward/backward times: backward drawn as twice the forward");
  if (fwd.empty()) missing.push_back("per-stage times (stages[].time_per_micro_batch_s): no timeline drawn");

  std::string html = "<section class=\"plan\">\n<h2>Plan " + std::to_string(rec.id) + ": " + xml_escape(rec.model) +
                     " on " + xml_escape(rec.cluster) + "</h2>\n<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    html += "<tr><th>" + xml_escape(k) + "</th><td>" + xml_escape(v) + "</td></tr>\n";
  };
  row("cluster", cluster_name.empty() || cluster_name == rec.cluster ? rec.cluster : cluster_name + " (" + rec.cluster + ")");
  // cp and ep too: tp x cp x pp x dp is the GPU count (ep divides dp x cp).
  row("parallelism", "tp " + std::to_string(rec.tp) + ", cp " + std::to_string(rec.cp) + ", pp " +
                         std::to_string(rec.pp) + ", dp " + std::to_string(rec.dp) + ", ep " + std::to_string(rec.ep));
  row("schedule", schedule + ", " + std::to_string(m) + " micro-batches");
  row("iteration time", fixed(rec.iteration_time_s, 3) + " s (predicted)");
  row("TFLOP/s per GPU, MFU", fixed(rec.tflops_per_gpu, 1) + ", " + fixed(rec.mfu * 100, 1) + "%");
  row("logged", rec.created_at);

  if (!fwd.empty()) {
    const bool gpipe = schedule == "gpipe";
    const int stages = static_cast<int>(fwd.size());
    // Interleaved: v chunks a stage, in Megatron-LM's order, which needs the micro-batches in groups of p.
    // v as the planner pins it (2..64; a hand-edited plan's 100,000 drew for a minute, 3e9 overflowed).
    const double v_given = schedule == "interleaved" ? number_or(j, "virtual_stages", 1) : 1;
    int v = v_given >= 2 && v_given <= 64 && v_given == std::floor(v_given) ? static_cast<int>(v_given) : 1;
    if (schedule == "interleaved" && v == 1)
      missing.push_back("a number of model chunks a stage from 2 to 64 (virtual_stages): drawn as 1F1B over whole "
                        "stages");
    if (v > 1 && m % stages != 0) {
      missing.push_back("an interleaved schedule over a micro-batch count that is a multiple of the stages (" +
                        std::to_string(m) + " over " + std::to_string(stages) + "): drawn as 1F1B over whole stages");
      v = 1;
    }
    // A box per stage, micro-batch and pass: past a few times the stages, more micro-batches only repeat the steady
    // state (a global batch of 16,777,213 sequences on one GPU drew millions of boxes and ran for minutes).
    int drawn = std::min(m, std::max(32, 4 * stages));
    if (v > 1) drawn -= drawn % stages;  // whole groups of p
    const auto boxes = simulate_pipeline(fwd, bwd, drawn, gpipe, v);
    double makespan = 0;
    for (const auto& b : boxes) makespan = std::max(makespan, b.end_s);
    const double predicted = j.contains("time_breakdown") ? number_or(j["time_breakdown"], "pipeline_s", 0) : 0;
    if (drawn < m)
      row("pipeline time", (predicted > 0 ? fixed(predicted * 1e3, 2) + " ms predicted by the planner for " +
                                                std::to_string(m) + " micro-batches; drawn: "
                                          : std::string("drawn: ")) +
                               "an iteration of " + std::to_string(drawn) + " (" + fixed(makespan * 1e3, 2) + " ms)");
    else
      row("pipeline time", fixed(makespan * 1e3, 2) + " ms drawn" +
                               (predicted > 0 ? ", " + fixed(predicted * 1e3, 2) + " ms predicted by the planner" : ""));
    svg::Axis x{0, makespan * 1e3, false, "time in the iteration, ms"};
    x.nice();
    svg::Axis y{0, static_cast<double>(stages), false, "pipeline stage"};
    for (int s = stages - 1; s >= 0; --s) y.categories.push_back("stage " + std::to_string(s));
    const double height = std::max(240.0, 130.0 + 34.0 * stages);
    svg::Chart c(kWidthPx, height,
                 (drawn < m ? "Pipeline of an iteration of " + std::to_string(drawn) + " micro-batches (the plan has " +
                                  std::to_string(m) + "): "
                            : std::string("Pipeline of one iteration: ")) +
                     schedule + (v > 1 ? " (" + std::to_string(v) + " chunks a stage)" : std::string()) + ", " + std::to_string(stages) + " stage" + (stages == 1 ? "" : "s") +
                     (drawn < m ? "" : ", " + std::to_string(m) + " micro-batches"),
                 x, y);
    c.draw_frame();
    for (const auto& b : boxes) {
      const double band = static_cast<double>(stages - 1 - b.stage);  // stage 0 on top
      const double y0 = c.py(band + 0.88), y1 = c.py(band + 0.12);
      const double x0 = c.px(b.start_s * 1e3), x1 = c.px(b.end_s * 1e3);
      const std::string fill = b.backward ? "#ff7f0e" : "#1f77b4";
      c.doc().rect(x0, y0, x1 - x0, y1 - y0, fill, b.backward ? "pass-bwd" : "pass-fwd",
                   "stage " + std::to_string(b.stage) + (b.backward ? " backward" : " forward") + " micro-batch " +
                       std::to_string(b.micro_batch) + (v > 1 ? " chunk " + std::to_string(b.chunk) : "") + ": " + fixed(b.start_s * 1e3, 3) + "-" +
                       fixed(b.end_s * 1e3, 3) + " ms",
                   x1 - x0 >= 4 ? "#ffffff" : "");  // a white edge only where boxes are wide enough
      if (x1 - x0 >= 16)
        c.doc().text((x0 + x1) / 2, (y0 + y1) / 2 + 4, std::to_string(b.micro_batch), 10, "middle", "mb-label", 0,
                     "#ffffff");
    }
    c.legend_in_margin({{"#1f77b4", "forward"}, {"#ff7f0e", "backward"}});
    out.charts.push_back(finish(c, "plan-" + std::to_string(rec.id) + "-timeline"));
  }
  html += "</table>\n";
  for (const auto& ch : out.charts) html += "<figure>" + ch.svg + "</figure>\n";
  if (!missing.empty()) {
    html += "<p class=\"note\">The plan JSON lacks ";
    for (size_t i = 0; i < missing.size(); ++i) html += (i ? "; " : "") + xml_escape(missing[i]);
    html += ".</p>\n";
  }
  html += "</section>\n";
  out.html = std::move(html);
  return out;
}

// ---------------------------------------------------------------------------------------------------------

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
         "</title>\n<style>\n"
         "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;max-width:840px;margin:24px auto;color:#222}\n"
         "h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}\n"
         "table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;"
         "text-align:left}\nfigure{margin:12px 0}svg{max-width:100%;height:auto}.note{color:#8a4b00;font-size:13px}\n"
         "</style>\n</head>\n<body>\n" +
         body + "</body>\n</html>\n";
}

}  // namespace

int report_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string db_path, plan_arg, out_path, svg_dir;
  RecordFilterOptions fo;
  po::options_description desc("tuner report: one self-contained HTML file of charts for tuned workloads and a plan");
  desc.add_options()
      ("help,h", "show this help")
      ("db", po::value(&db_path)->default_value(default_db_path()), "tuning database, only read ($TUNER_DB or ./tuning.db)")
      ("op", po::value(&fo.op)->default_value(""), "only this operator")
      ("shape", po::value(&fo.shape)->default_value(""), "only this shape (needs --op)")
      ("dtype", po::value(&fo.dtype)->default_value(""), "only this dtype: f32, f16, bf16")
      ("device", po::value(&fo.device)->default_value(""), "only this device: cuda:N, sim:<gpu>, replay:FILE or a recorded name")
      ("template", po::value(&fo.template_name)->default_value(""), "only this kernel template")
      ("all-versions", "include records of older template versions")
      ("plan", po::value(&plan_arg)->default_value(""), "also (or, without workload filters, only) this plan: an id or 'latest'")
      ("out", po::value(&out_path)->required(), "the HTML file to write (- for stdout)")
      ("svg-dir", po::value(&svg_dir)->default_value(""), "also write each chart as a standalone .svg file in this folder");
  po::variables_map vm;
  if (!parse_options("report", args, desc, vm)) {
    std::cout << desc;
    return 0;
  }
  refuse_empty_values("report", vm, {"op", "shape", "dtype", "device", "template", "plan", "svg-dir"});
  fo.all_versions = vm.count("all-versions") != 0;
  int64_t plan_id = 0;  // 0: none; -1: latest
  if (!plan_arg.empty()) {
    if (plan_arg == "latest") {
      plan_id = -1;
    } else {
      auto [end, ec] = std::from_chars(plan_arg.data(), plan_arg.data() + plan_arg.size(), plan_id);
      if (ec != std::errc() || end != plan_arg.data() + plan_arg.size() || plan_id <= 0)
        throw UsageError("--plan '" + plan_arg + "' is not a plan id; allowed: a plan id (1 or more) or 'latest'");
    }
  }
  if (out_path.empty()) throw UsageError("--out is empty; allowed: a file path for the HTML report");
  refuse_output_over_db("--out", out_path, db_path);
  if (!svg_dir.empty() && std::filesystem::exists(svg_dir) && !std::filesystem::is_directory(svg_dir))
    throw UsageError("--svg-dir '" + svg_dir + "' is a file; allowed: a folder (made when missing)");
  if (!std::filesystem::exists(db_path)) throw UsageError("database '" + db_path + "' does not exist");
  auto db = open_for_reading(db_path);

  const bool filters = !fo.op.empty() || !fo.shape.empty() || !fo.dtype.empty() || !fo.device.empty() ||
                       !fo.template_name.empty();
  const bool workloads = plan_id == 0 || filters;
  std::string body = "<h1>tuner report</h1>\n<p>Database " + xml_escape(db_path) + ".</p>\n";
  std::vector<ChartOut> all_charts;
  std::string title = "tuner report";

  if (workloads) {
    RecordFilter rf = build_record_filter(fo, *db);
    const auto rows = run_history(*db, rf);
    if (rows.empty()) {
      const std::string older = older_versions_note(*db, rf, false);
      throw UsageError("no records match in '" + db_path + "'" +
                       (filters        ? std::string(" for the filters given")
                        : older.empty() ? std::string(" (the database has no trials)")
                                        : std::string(" (no trials of this build's template versions)")) +
                       (rf.unrecorded_note.empty() ? std::string() : "; " + rf.unrecorded_note) +
                       (rf.template_note.empty() ? std::string() : "; " + rf.template_note) +
                       (older.empty() ? older : "; " + older));
    }
    const auto best = run_best_per_workload(*db, rf);
    std::map<int64_t, db::SessionRow> sessions;
    for (const auto& s : db->sessions(db::QueryFilter{})) sessions[s.id] = s;
    // Workloads in a fixed order: op, shape, dtype, device.
    std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<db::ResultRow>> groups;
    for (const auto& r : rows) groups[{r.workload.op, r.workload.shape, r.workload.dtype, r.device_name}].push_back(r);
    if (groups.size() == 1) title = "tuner report: " + workload_label(rows.front());
    for (const auto& [key, g] : groups) {
      std::vector<db::ResultRow> g_best;
      for (const auto& b : best)
        if (std::tie(b.workload.op, b.workload.shape, b.workload.dtype, b.device_name) ==
            std::tie(std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key)))
          g_best.push_back(b);
      // A sim device's times are estimates, also where every trial failed and none has a time (replay devices are
      // simulated too, their times measurements).
      bool estimate = false;
      for (const auto& r : g)
        estimate = estimate || r.trial.estimate || (r.device_simulated && r.device_name.rfind("sim:", 0) == 0);
      const auto series = session_series(g, sessions);
      std::vector<std::string> notes;
      std::vector<ChartOut> charts = {convergence_chart(series, estimate), histogram_chart(g, estimate),
                                      roofline_chart(g, g_best, notes)};
      body += "<section class=\"workload\">\n<h2>" + xml_escape(workload_label(g.front())) + "</h2>\n";
      if (estimate)
        body += "<p class=\"note\">Times on this device are estimates of the analytic model of a sim device, not "
                "measurements.</p>\n";
      // GB/s where the op is memory-bound (a row op, a user kernel with bytes), as `query` shows it.
      const bool bytes = std::any_of(series.begin(), series.end(), [](const SessionSeries& s) { return s.best_gbps > 0; });
      body += "<table>\n<tr><th>session</th><th>strategy</th><th>seed</th><th>template</th><th>search trials</th>"
              "<th>ok</th><th>best ms</th><th>best GFLOP/s</th>" + std::string(bytes ? "<th>best GB/s</th>" : "") +
              "</tr>\n";
      for (const auto& s : series) {
        const auto it = sessions.find(s.id);
        body += "<tr><td>" + std::to_string(s.id) + "</td><td>" +
                xml_escape(it == sessions.end() ? "?" : it->second.strategy) + "</td><td>" +
                (it == sessions.end() ? "?" : std::to_string(it->second.seed)) + "</td><td>" +
                xml_escape(s.template_name) + "</td><td>" + std::to_string(s.trials) + "</td><td>" +
                std::to_string(s.ok) + "</td><td>" + (s.ok ? fixed(s.best_ms, 4) : "-") + "</td><td>" +
                (s.ok ? fixed(s.best_gflops, 1) : "-") + "</td>" +
                (bytes ? "<td>" + (s.ok && s.best_gbps > 0 ? fixed(s.best_gbps, 1) : std::string("-")) + "</td>" : "") +
                "</tr>\n";
      }
      body += "</table>\n";
      for (auto& ch : charts) {
        body += "<figure>" + ch.svg + "</figure>\n";
        ch.name = std::get<0>(key) + "-" + ch.name;
        all_charts.push_back(std::move(ch));
      }
      for (const auto& n : notes) body += "<p class=\"note\">" + xml_escape(n) + "</p>\n";
      body += "</section>\n";
    }
  }

  if (plan_id != 0) {
    const auto plans = db->plans(0);
    if (plans.empty()) throw UsageError("--plan " + plan_arg + ": no plans are logged in '" + db_path + "'");
    const db::PlanRecord* rec = plan_id < 0 ? &plans.front() : nullptr;
    for (const auto& p : plans)
      if (p.id == plan_id) rec = &p;
    if (!rec)
      throw UsageError("--plan " + plan_arg + " is not logged in '" + db_path + "'; logged plans: " +
                       std::to_string(plans.back().id) + ".." + std::to_string(plans.front().id) + " or 'latest'");
    auto ps = plan_section(*rec);
    body += ps.html;
    if (!workloads) title = "tuner report: plan " + std::to_string(rec->id);
    for (auto& ch : ps.charts) all_charts.push_back(std::move(ch));
  }

  // The chart folder is made (and must be writable) before the page is written: a bad --svg-dir exited 2 with the
  // page already written.
  if (!svg_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(svg_dir, ec);
    if (ec) throw UsageError("cannot make --svg-dir '" + svg_dir + "': " + ec.message() + "; allowed: a writable folder");
    if (::access(svg_dir.c_str(), W_OK) != 0)
      throw UsageError("cannot write in --svg-dir '" + svg_dir + "': " + std::strerror(errno) + "; allowed: a writable folder");
  }
  // --out - writes the page to stdout, as export's does; the "wrote" line then goes to stderr.
  const bool to_stdout = out_path == "-";
  if (to_stdout) {
    std::cout << page(title, body);
    // Flushed now: the "wrote" line must not follow a page that never arrived (a full disk; main then says so).
    std::cout.flush();
    if (!std::cout) return 1;
  } else {
    write_output_file("--out file", out_path, page(title, body));
  }
  if (!svg_dir.empty())
    for (size_t i = 0; i < all_charts.size(); ++i) {
      char prefix[32];
      std::snprintf(prefix, sizeof prefix, "%02zu-", i + 1);
      write_output_file("--svg-dir file", (std::filesystem::path(svg_dir) / (prefix + all_charts[i].name + ".svg")).string(),
                        all_charts[i].standalone);
    }
  (to_stdout ? std::cerr : std::cout) << "wrote " << (to_stdout ? "stdout" : out_path) << " (" << all_charts.size()
                                       << " chart" << (all_charts.size() == 1 ? "" : "s") << ")\n";
  return 0;
}

}  // namespace tuner::cli
