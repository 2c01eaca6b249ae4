#include "tuner/cudnn_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "tuner/host_dtype.h"

#if __has_include(<cudnn.h>)
#include "tuner/cuda_driver.h"
#include "tuner/cudnn_api.h"
#include "tuner/cudnn_conv_graph.h"
#define TUNER_HAVE_CUDNN 1
#endif

namespace tuner {

double relative_difference(const void* got, const void* want, size_t n, templates::DType d) {
  constexpr size_t kChunk = size_t{1} << 16;  // decoded a chunk at a time: outputs reach 10^8 elements
  const size_t size = static_cast<size_t>(templates::dtype_bytes(d));
  double diff = 0, scale = 0;
  for (size_t at = 0; at < n; at += kChunk) {
    const size_t m = std::min(kChunk, n - at);
    const auto g = decode_elements(static_cast<const char*>(got) + at * size, m, d);
    const auto w = decode_elements(static_cast<const char*>(want) + at * size, m, d);
    for (size_t i = 0; i < m; ++i) {
      if (!std::isfinite(g[i]) || !std::isfinite(w[i])) return std::numeric_limits<double>::infinity();
      diff = std::max(diff, std::abs(g[i] - w[i]));
      scale = std::max(scale, std::abs(w[i]));
    }
  }
  return scale > 0 ? diff / scale : diff;
}

double cudnn_agreement_tolerance(templates::DType d) {
  // Two right algorithms differ by their outputs' rounding and their summation order: f16 and bf16 outputs
  // round at 2^-11 and 2^-8 of their size; f32 ones (FMA only, no TF32) far below 1e-3.
  return d == templates::DType::kF32 ? 1e-3 : 2e-2;
}

#ifdef TUNER_HAVE_CUDNN

namespace {

constexpr size_t kMaxGraphPlans = 16;  ///< Graph plans timed per shape, in the heuristics' order.
constexpr double kPlanBudgetS = 20;    ///< Seconds of plan finalizing per shape (runtime compilation), then no more.
constexpr int kWarmupRuns = 2;         ///< Untimed runs per candidate (lazy module loading, clocks).
constexpr int kTimedRuns = 7;          ///< Timed runs per candidate; the median counts.
constexpr int kMaxCrossChecks = 4;     ///< Graph winners checked against the legacy output before legacy wins.

cudnnDataType_t cudnn_type(templates::DType d) {
  switch (d) {
    case templates::DType::kF16: return CUDNN_DATA_HALF;
    case templates::DType::kBF16: return CUDNN_DATA_BFLOAT16;
    case templates::DType::kF32: break;
  }
  return CUDNN_DATA_FLOAT;
}

std::string key_of(const ConvShape& s) {
  std::string k = templates::to_string(s.dtype);
  for (int v : {s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.stride, s.pad, s.dilation}) k += "," + std::to_string(v);
  return k;
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f ms", ms);
  return text;
}

/// CUDA events, destroyed with the driver's call.
struct Events {
  std::vector<CUevent> e;
  ~Events() {
    for (CUevent ev : e) cuda_driver().cuEventDestroy(ev);
  }
};

enum class Timed { kOk, kCandidateFailed, kCudaFailed };

/// The median ms of kTimedRuns runs of `once` after kWarmupRuns, each between its own pair of events on
/// the default stream. kCandidateFailed when `once` refused (a cuDNN status, *why says which);
/// kCudaFailed when the driver reported an error (the context may be unusable).
Timed time_candidate(const std::function<bool(std::string*)>& once, double* ms, std::string* why) {
  const CudaDriver& d = cuda_driver();
  if (!d.error.empty()) {
    *why = d.error;
    return Timed::kCudaFailed;
  }
  const auto failed = [&](CUresult rc, const char* call) {
    *why = std::string(call) + ": " + cuda_error_text(rc);
    return Timed::kCudaFailed;
  };
  Events ev;
  for (int i = 0; i < 2 * kTimedRuns; ++i) {
    CUevent e = nullptr;
    if (CUresult rc = d.cuEventCreate(&e, CU_EVENT_DEFAULT); rc != CUDA_SUCCESS) return failed(rc, "cuEventCreate");
    ev.e.push_back(e);
  }
  for (int i = 0; i < kWarmupRuns; ++i)
    if (!once(why)) return Timed::kCandidateFailed;
  for (int i = 0; i < kTimedRuns; ++i) {
    if (CUresult rc = d.cuEventRecord(ev.e[2 * i], nullptr); rc != CUDA_SUCCESS) return failed(rc, "cuEventRecord");
    if (!once(why)) return Timed::kCandidateFailed;
    if (CUresult rc = d.cuEventRecord(ev.e[2 * i + 1], nullptr); rc != CUDA_SUCCESS) return failed(rc, "cuEventRecord");
  }
  if (CUresult rc = d.cuEventSynchronize(ev.e.back()); rc != CUDA_SUCCESS) return failed(rc, "cuEventSynchronize");
  std::vector<double> times;
  for (int i = 0; i < kTimedRuns; ++i) {
    float t = 0;
    if (CUresult rc = d.cuEventElapsedTime(&t, ev.e[2 * i], ev.e[2 * i + 1]); rc != CUDA_SUCCESS)
      return failed(rc, "cuEventElapsedTime");
    times.push_back(t);
  }
  std::nth_element(times.begin(), times.begin() + kTimedRuns / 2, times.end());
  *ms = times[kTimedRuns / 2];
  return Timed::kOk;
}

}  // namespace

struct CudnnConv::Impl {
  /// What a shape runs: a graph plan, or (graph null) the legacy algorithm.
  struct Choice {
    std::unique_ptr<GraphConvPlan> graph;
    cudnnConvolutionFwdAlgoPerf_t legacy{};
    size_t workspace = 0;  ///< Bytes.
    std::string name;      ///< "cudnn graph eng12_k2=1", "cudnn legacy algo 1".
    std::string detail;    ///< The name and how it was chosen.
  };

  CudnnApi api;  // first: destroyed last
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t f = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::map<std::string, Choice> choices;  ///< Per shape key and buffer alignment.
  std::string described;                  ///< Key of the shape the legacy descriptors hold.
  const Choice* planned = nullptr;        ///< The choice of the shape last planned.
  const std::string no_plan;

  ~Impl() {
    choices.clear();  // plans before the handle they were made with
    if (conv) api.cudnnDestroyConvolutionDescriptor(conv);
    if (f) api.cudnnDestroyFilterDescriptor(f);
    if (y) api.cudnnDestroyTensorDescriptor(y);
    if (x) api.cudnnDestroyTensorDescriptor(x);
    if (handle) api.cudnnDestroy(handle);
  }

  bool ok(cudnnStatus_t st, const char* call, std::string* error) const { return api.ok(st, call, error); }

  /// Points the legacy descriptors at a shape (NHWC / KRSC / NPQK, fp32 compute) and checks that cuDNN's
  /// output size is the template's.
  bool describe(const ConvShape& s, std::string* error) {
    const std::string key = key_of(s);
    if (key == described) return true;
    described.clear();
    const cudnnDataType_t t = cudnn_type(s.dtype);
    if (!ok(api.cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, t, s.n, s.c, s.h, s.w), "cudnnSetTensor4dDescriptor",
            error) ||
        !ok(api.cudnnSetFilter4dDescriptor(f, t, CUDNN_TENSOR_NHWC, s.k, s.c, s.r, s.s), "cudnnSetFilter4dDescriptor",
            error) ||
        !ok(api.cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, s.stride, s.stride, s.dilation, s.dilation,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "cudnnSetConvolution2dDescriptor", error) ||
        !ok(api.cudnnSetConvolutionMathType(conv, s.dtype == templates::DType::kF32 ? CUDNN_FMA_MATH
                                                                                    : CUDNN_TENSOR_OP_MATH),
            "cudnnSetConvolutionMathType", error))
      return false;
    int n = 0, k = 0, p = 0, q = 0;
    if (!ok(api.cudnnGetConvolution2dForwardOutputDim(conv, x, f, &n, &k, &p, &q),
            "cudnnGetConvolution2dForwardOutputDim", error))
      return false;
    if (n != s.n || k != s.k || p != s.p || q != s.q) {  // cuDNN would write past the buffers
      *error = "cuDNN's output " + std::to_string(n) + "x" + std::to_string(p) + "x" + std::to_string(q) + "x" +
               std::to_string(k) + " differs from the template's " + std::to_string(s.n) + "x" + std::to_string(s.p) +
               "x" + std::to_string(s.q) + "x" + std::to_string(s.k);
      return false;
    }
    if (!ok(api.cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, t, n, k, p, q), "cudnnSetTensor4dDescriptor", error))
      return false;
    described = key;
    return true;
  }

  /// The fastest algorithm cudnnFindConvolutionForwardAlgorithm reports for the described shape that ran
  /// (for f32, one on plain FMAs: no TF32).
  bool legacy_find(templates::DType dtype, cudnnConvolutionFwdAlgoPerf_t* best, std::string* error) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    // The dtype's math type, not whatever an earlier choice for this shape left on the descriptor.
    if (!ok(api.cudnnSetConvolutionMathType(conv, dtype == templates::DType::kF32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
            "cudnnSetConvolutionMathType", error) ||
        !ok(api.cudnnFindConvolutionForwardAlgorithm(handle, x, f, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                     &returned, perf),
            "cudnnFindConvolutionForwardAlgorithm", error))
      return false;
    for (int i = 0; i < returned; ++i)  // sorted fastest first
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          (dtype != templates::DType::kF32 || perf[i].mathType == CUDNN_FMA_MATH)) {
        *best = perf[i];
        return true;
      }
    *error = "cudnnFindConvolutionForwardAlgorithm found no forward algorithm that ran";
    return false;
  }

  /// Enqueues one run of a choice; the legacy descriptors must hold its shape and math type.
  bool run_choice(const Choice& c, const ConvBuffers& b, uint64_t workspace, size_t workspace_bytes,
                  std::string* error) {
    if (c.graph) return c.graph->execute(handle, b, workspace, error);
    const float one = 1.0f, zero = 0.0f;  // beta 0: Y (NaN-poisoned by the runner) is never read
    return ok(api.cudnnConvolutionForward(handle, &one, x, reinterpret_cast<const void*>(b.x), f,
                                          reinterpret_cast<const void*>(b.f), conv, c.legacy.algo,
                                          reinterpret_cast<void*>(workspace), workspace_bytes, &zero, y,
                                          reinterpret_cast<void*>(b.y)),
              "cudnnConvolutionForward", error);
  }

  /// Y's bytes after one run of a candidate, on the host; false with *error on any failure, and
  /// *cuda_failed set when the driver reported it (the context may be unusable: choosing stops).
  bool output_of(const ConvShape& s, const Choice& c, const ConvBuffers& b, const ConvWorkspace& workspace,
                 std::string* out, std::string* error, bool* cuda_failed) {
    *cuda_failed = false;
    const uint64_t ws = c.workspace > 0 ? workspace(c.workspace) : 0;
    if (c.workspace > 0 && ws == 0) {
      *error = c.name + ": no workspace of " + std::to_string(c.workspace) + " bytes";
      return false;
    }
    if (!c.graph && !ok(api.cudnnSetConvolutionMathType(conv, c.legacy.mathType), "cudnnSetConvolutionMathType", error))
      return false;
    std::string why;
    if (!run_choice(c, b, ws, c.workspace, &why)) {
      *error = c.name + ": " + why;
      return false;
    }
    out->assign(output_elements(s) * static_cast<size_t>(templates::dtype_bytes(s.dtype)), '\0');
    if (CUresult rc = cuda_driver().cuMemcpyDtoH(out->data(), b.y, out->size()); rc != CUDA_SUCCESS) {
      *error = c.name + ": cuMemcpyDtoH: " + cuda_error_text(rc);
      *cuda_failed = true;
      return false;
    }
    return true;
  }

  static size_t output_elements(const ConvShape& s) {
    return static_cast<size_t>(s.n) * static_cast<size_t>(s.p) * static_cast<size_t>(s.q) * static_cast<size_t>(s.k);
  }

  /// Times every candidate of the described shape on the caller's buffers and returns the fastest (a
  /// graph plan only when its output agrees with the legacy algorithm's).
  bool choose(const ConvShape& shape, const ConvBuffers& buffers, const ConvWorkspace& workspace, Choice* out,
              std::string* error) {
    std::vector<Choice> candidates;
    std::string graph_note, graph_error;
    std::vector<std::unique_ptr<GraphConvPlan>> plans;
    // TUNER_CUDNN_GRAPH=0 keeps to the legacy algorithm (a graph engine that faults would otherwise take
    // the shape's baseline down with the context on every try).
    if (const char* env = std::getenv("TUNER_CUDNN_GRAPH"); env && std::string(env) == "0")
      graph_error = "off (TUNER_CUDNN_GRAPH=0)";
    else
      plans = graph_conv_plans(api, GraphTarget{handle, nullptr}, shape, conv_alignment(buffers), kMaxGraphPlans,
                               kPlanBudgetS, &graph_note, &graph_error);
    for (auto& p : plans) {
      Choice c;
      c.workspace = p->workspace_bytes();
      c.name = "cudnn graph " + p->tag();
      c.graph = std::move(p);
      candidates.push_back(std::move(c));
    }
    std::string legacy_error;
    Choice legacy;
    if (legacy_find(shape.dtype, &legacy.legacy, &legacy_error)) {
      legacy.workspace = legacy.legacy.memory;
      legacy.name = "cudnn legacy algo " + std::to_string(static_cast<int>(legacy.legacy.algo));
      candidates.push_back(std::move(legacy));
    }
    if (candidates.empty()) {
      *error = legacy_error + "; graph path: " + graph_error;
      return false;
    }
    int best = -1, timed = 0;
    double best_ms = std::numeric_limits<double>::infinity(), legacy_ms = -1;
    std::vector<double> times(candidates.size(), -1.0);  ///< Median ms per candidate; -1: did not run.
    std::string failures;
    for (size_t i = 0; i < candidates.size(); ++i) {
      Choice& c = candidates[i];
      const uint64_t ws = c.workspace > 0 ? workspace(c.workspace) : 0;
      std::string why;
      double ms = 0;
      Timed t = Timed::kCandidateFailed;
      if (c.workspace > 0 && ws == 0)
        why = "no workspace of " + std::to_string(c.workspace) + " bytes";
      else if (c.graph || ok(api.cudnnSetConvolutionMathType(conv, c.legacy.mathType), "cudnnSetConvolutionMathType", &why))
        t = time_candidate([&](std::string* e) { return run_choice(c, buffers, ws, c.workspace, e); }, &ms, &why);
      if (t == Timed::kCudaFailed) {
        *error = c.name + ": " + why;
        return false;
      }
      if (t == Timed::kOk) {
        ++timed;
        times[i] = ms;
        if (!c.graph) legacy_ms = ms;
        if (ms < best_ms) {
          best_ms = ms;
          best = static_cast<int>(i);
        }
        continue;
      }
      if (failures.empty()) failures = c.name + ": " + why;
    }
    if (best < 0) {
      *error = "no cuDNN candidate ran (" + failures + ")";
      return false;
    }
    // A graph plan wins only when its output agrees with the legacy algorithm's (when that ran): the
    // baseline is never a wrong answer where the legacy path was right.
    std::string disagreed;
    if (candidates[static_cast<size_t>(best)].graph && legacy_ms >= 0) {
      std::vector<std::pair<double, size_t>> order;  // (ms, candidate) of the graph plans that ran
      for (size_t i = 0; i < candidates.size(); ++i)
        if (candidates[i].graph && times[i] >= 0) order.emplace_back(times[i], i);
      std::sort(order.begin(), order.end());
      const size_t legacy_index = candidates.size() - 1;  // the legacy candidate is last
      std::string want, got;
      bool cuda_failed = false;
      if (!output_of(shape, candidates[legacy_index], buffers, workspace, &want, error, &cuda_failed)) return false;
      best = static_cast<int>(legacy_index);
      best_ms = legacy_ms;
      for (size_t j = 0; j < order.size() && j < static_cast<size_t>(kMaxCrossChecks); ++j) {
        if (order[j].first >= legacy_ms) break;  // legacy is as fast
        const Choice& c = candidates[order[j].second];
        std::string why;
        if (!output_of(shape, c, buffers, workspace, &got, &why, &cuda_failed)) {
          if (cuda_failed) {  // the run faulted: the runner finds the context's state and reports it
            *error = why;
            return false;
          }
          if (disagreed.empty()) disagreed = "check of " + why;
          continue;
        }
        const double diff = relative_difference(got.data(), want.data(), output_elements(shape), shape.dtype);
        if (diff <= cudnn_agreement_tolerance(shape.dtype)) {
          best = static_cast<int>(order[j].second);
          best_ms = order[j].first;
          break;
        }
        if (disagreed.empty()) disagreed = c.name + " differs from legacy by " + std::to_string(diff) + " (not taken)";
      }
    }
    *out = std::move(candidates[static_cast<size_t>(best)]);
    out->detail = out->name + " (" + format_ms(best_ms) + ", fastest of " + std::to_string(timed) + " timed";
    if (out->graph && legacy_ms >= 0) out->detail += "; legacy " + format_ms(legacy_ms);
    if (!legacy_error.empty()) out->detail += "; legacy path: " + legacy_error;
    out->detail += plans.empty() && !graph_error.empty() ? "; graph path: " + graph_error : "; graph: " + graph_note;
    if (!failures.empty()) out->detail += "; first failure: " + failures;
    if (!disagreed.empty()) out->detail += "; " + disagreed;
    out->detail += ")";
    return true;
  }
};

CudnnConv::CudnnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnConv::~CudnnConv() = default;

std::unique_ptr<CudnnConv> CudnnConv::create(std::string* error) {
  auto impl = std::make_unique<Impl>();
  if (!impl->api.load(error)) return nullptr;
  const CudnnApi& a = impl->api;
  if (!impl->ok(a.cudnnCreate(&impl->handle), "cudnnCreate", error) ||
      !impl->ok(a.cudnnCreateTensorDescriptor(&impl->x), "cudnnCreateTensorDescriptor", error) ||
      !impl->ok(a.cudnnCreateTensorDescriptor(&impl->y), "cudnnCreateTensorDescriptor", error) ||
      !impl->ok(a.cudnnCreateFilterDescriptor(&impl->f), "cudnnCreateFilterDescriptor", error) ||
      !impl->ok(a.cudnnCreateConvolutionDescriptor(&impl->conv), "cudnnCreateConvolutionDescriptor", error))
    return nullptr;
  return std::unique_ptr<CudnnConv>(new CudnnConv(std::move(impl)));
}

bool CudnnConv::plan(const ConvShape& shape, const ConvBuffers& buffers, const ConvWorkspace& workspace,
                     size_t* workspace_bytes, std::string* error) {
  Impl& m = *impl_;
  m.planned = nullptr;
  if (!m.describe(shape, error)) return false;
  // Per alignment too: a graph plan claims its tensors' alignment.
  const std::string key = m.described + "@" + std::to_string(conv_alignment(buffers));
  auto it = m.choices.find(key);
  if (it == m.choices.end()) {
    Impl::Choice c;
    if (!m.choose(shape, buffers, workspace, &c, error)) return false;
    it = m.choices.emplace(key, std::move(c)).first;
  }
  const Impl::Choice& c = it->second;
  if (!c.graph && !m.ok(m.api.cudnnSetConvolutionMathType(m.conv, c.legacy.mathType), "cudnnSetConvolutionMathType",
                        error))
    return false;
  m.planned = &c;
  *workspace_bytes = c.workspace;
  return true;
}

bool CudnnConv::run(const ConvBuffers& buffers, uint64_t workspace, size_t workspace_bytes, std::string* error) {
  Impl& m = *impl_;
  if (!m.planned) {
    *error = "cudnn_conv: run() before a successful plan()";
    return false;
  }
  if (workspace_bytes < m.planned->workspace) {
    *error = "cuDNN needs " + std::to_string(m.planned->workspace) + " workspace bytes, got " +
             std::to_string(workspace_bytes);
    return false;
  }
  return m.run_choice(*m.planned, buffers, workspace, workspace_bytes, error);
}

const std::string& CudnnConv::planned_detail() const {
  return impl_->planned ? impl_->planned->detail : impl_->no_plan;
}

#else  // built without cuDNN's headers: the baseline reports that it is missing

struct CudnnConv::Impl {
  const std::string no_plan;
};
CudnnConv::CudnnConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnConv::~CudnnConv() = default;
std::unique_ptr<CudnnConv> CudnnConv::create(std::string* error) {
  *error = "cuDNN (libcudnn.so.9) not found: tuner was built without cuDNN's headers";
  return nullptr;
}
bool CudnnConv::plan(const ConvShape&, const ConvBuffers&, const ConvWorkspace&, size_t*, std::string* error) {
  *error = "built without cuDNN";
  return false;
}
bool CudnnConv::run(const ConvBuffers&, uint64_t, size_t, std::string* error) {
  *error = "built without cuDNN";
  return false;
}
const std::string& CudnnConv::planned_detail() const { return impl_->no_plan; }

#endif

}  // namespace tuner
