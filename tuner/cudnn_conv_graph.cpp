#include "tuner/cudnn_conv.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#if __has_include(<cudnn.h>)
#include "tuner/cudnn_conv_graph.h"
#define TUNER_HAVE_CUDNN 1
#endif

namespace tuner {

namespace {
// cudnnBackendNumericalNote_t's values (cudnn_graph.h), checked against the header where it is present.
constexpr int kNoteTensorCore = 0;
constexpr int kNoteDownConvertInputs = 1;
constexpr int kNoteReducedPrecisionReduction = 2;
#ifdef TUNER_HAVE_CUDNN
static_assert(CUDNN_NUMERICAL_NOTE_TENSOR_CORE == kNoteTensorCore, "cuDNN renumbered its numerical notes");
static_assert(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS == kNoteDownConvertInputs, "cuDNN renumbered its numerical notes");
static_assert(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION == kNoteReducedPrecisionReduction,
              "cuDNN renumbered its numerical notes");
#endif
}  // namespace

std::string cudnn_engine_refusal(templates::DType data, const std::vector<int>& notes) {
  for (int n : notes) {
    // Inputs converted to a narrower type: never (as PyTorch's cuDNN v8 path filters them).
    if (n == kNoteDownConvertInputs) return "down-converts its inputs";
    // A reduction in a narrower type than the fp32 the graph asks for (and the templates accumulate in).
    if (n == kNoteReducedPrecisionReduction) return "reduces in reduced precision";
    // Tensor cores on f32 data means TF32: the f32 baseline stays FMA-only, like the templates.
    if (n == kNoteTensorCore && data == templates::DType::kF32) return "tensor cores (TF32) on f32 data";
  }
  return "";
}

#ifdef TUNER_HAVE_CUDNN

BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& o) noexcept {
  if (this != &o) {
    reset();
    api_ = o.api_;
    d_ = o.d_;
    o.d_ = nullptr;
  }
  return *this;
}

void BackendDescriptor::reset() {
  if (d_ && api_) api_->cudnnBackendDestroyDescriptor(d_);  // status ignored: nothing to do about it here
  d_ = nullptr;
}

namespace {

cudnnDataType_t graph_type(templates::DType d) {
  switch (d) {
    case templates::DType::kF16: return CUDNN_DATA_HALF;
    case templates::DType::kBF16: return CUDNN_DATA_BFLOAT16;
    case templates::DType::kF32: break;
  }
  return CUDNN_DATA_FLOAT;
}

// The tensors' unique ids in the graph and in the variant pack.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

/// Builds descriptors with every status checked; the first failure names the call and cuDNN's message.
class Builder {
 public:
  Builder(const CudnnApi& api, std::string* error) : api_(api), error_(error) {}

  bool create(cudnnBackendDescriptorType_t type, BackendDescriptor* out, const char* what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!api_.ok(api_.cudnnBackendCreateDescriptor(type, &d), what, error_)) return false;
    *out = BackendDescriptor(&api_, d);
    return true;
  }
  template <typename T>
  bool set(const BackendDescriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           int64_t count, const T* values, const char* what) {
    return api_.ok(api_.cudnnBackendSetAttribute(d.get(), name, type, count, values), what, error_);
  }
  bool finalize(const BackendDescriptor& d, const char* what) {
    return api_.ok(api_.cudnnBackendFinalize(d.get()), what, error_);
  }

  /// A 4-d tensor with NCHW-ordered dims and strides over channels-last memory.
  bool tensor(int64_t uid, cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w, int64_t alignment,
              BackendDescriptor* out) {
    const int64_t dims[4] = {n, c, h, w};
    const int64_t strides[4] = {h * w * c, 1, w * c, c};
    return create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, out, "cudnnBackendCreateDescriptor(tensor)") &&
           set(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "set tensor data type") &&
           set(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "set tensor dimensions") &&
           set(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "set tensor strides") &&
           set(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "set tensor unique id") &&
           set(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "set tensor alignment") &&
           finalize(*out, "cudnnBackendFinalize(tensor)");
  }

 private:
  const CudnnApi& api_;
  std::string* error_;
};

}  // namespace

bool graph_conv_operation(const CudnnApi& api, const ConvShape& s, int64_t alignment,
                          std::vector<BackendDescriptor>* out, std::string* error) {
  if (!api.has_graph()) {
    *error = api.graph_missing.empty() ? "cuDNN's graph API is not loaded" : api.graph_missing;
    return false;
  }
  Builder b(api, error);
  std::vector<BackendDescriptor> d(5);
  const cudnnDataType_t t = graph_type(s.dtype);
  if (!b.tensor(kUidX, t, s.n, s.c, s.h, s.w, alignment, &d[0]) ||
      !b.tensor(kUidW, t, s.k, s.c, s.r, s.s, alignment, &d[1]) ||
      !b.tensor(kUidY, t, s.n, s.k, s.p, s.q, alignment, &d[2]))
    return false;
  const int64_t spatial = 2;
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t pad[2] = {s.pad, s.pad}, stride[2] = {s.stride, s.stride}, dilation[2] = {s.dilation, s.dilation};
  if (!b.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &d[3], "cudnnBackendCreateDescriptor(convolution)") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, "set conv spatial dims") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, "set conv compute type") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "set conv mode") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "set conv pre-paddings") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "set conv post-paddings") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride, "set conv strides") ||
      !b.set(d[3], CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation, "set conv dilations") ||
      !b.finalize(d[3], "cudnnBackendFinalize(convolution)"))
    return false;
  const float alpha = 1.0f, beta = 0.0f;  // beta 0: Y (NaN-poisoned by the runner) is never read
  cudnnBackendDescriptor_t x = d[0].get(), w = d[1].get(), y = d[2].get(), conv = d[3].get();
  if (!b.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &d[4],
                "cudnnBackendCreateDescriptor(convolution forward)") ||
      !b.set(d[4], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "set conv X") ||
      !b.set(d[4], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w, "set conv W") ||
      !b.set(d[4], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "set conv Y") ||
      !b.set(d[4], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv,
             "set conv descriptor") ||
      !b.set(d[4], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "set conv alpha") ||
      !b.set(d[4], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "set conv beta") ||
      !b.finalize(d[4], "cudnnBackendFinalize(convolution forward)"))
    return false;
  *out = std::move(d);
  return true;
}

namespace {

// The handle attributes are deprecated from cuDNN 9.x headers on (device properties replace them) but
// remain the way every cuDNN 9 release takes a GPU's handle.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

/// The operation graph of Y = conv(X, W) on the target: graph_conv_operation's descriptors, the graph appended.
bool build_graph(const CudnnApi& api, const GraphTarget& target, const ConvShape& s, int64_t alignment,
                 std::vector<BackendDescriptor>* out, std::string* error) {
  std::vector<BackendDescriptor> d;
  if (!graph_conv_operation(api, s, alignment, &d, error)) return false;
  Builder b(api, error);
  cudnnBackendDescriptor_t op = d.back().get();
  d.emplace_back();
  if (!b.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d.back(), "cudnnBackendCreateDescriptor(operation graph)") ||
      !b.set(d.back(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op, "set graph ops") ||
      (target.handle && !b.set(d.back(), kGraphHandle, CUDNN_TYPE_HANDLE, 1, &target.handle, "set graph handle")) ||
      !b.finalize(d.back(), "cudnnBackendFinalize(operation graph)"))
    return false;
  *out = std::move(d);
  return true;
}

/// The engine configs heuristics mode `mode` proposes for the graph, best first.
bool heuristic_configs(const CudnnApi& api, const GraphTarget& target, const BackendDescriptor& graph,
                       cudnnBackendHeurMode_t mode, std::vector<BackendDescriptor>* out, std::string* error) {
  Builder b(api, error);
  BackendDescriptor heur;
  cudnnBackendDescriptor_t g = graph.get();
  if (!b.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur, "cudnnBackendCreateDescriptor(heuristics)") ||
      !b.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g, "set heuristics graph") ||
      !b.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "set heuristics mode") ||
      (!target.handle && !b.set(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &target.device_properties, "set heuristics device properties")) ||
      !b.finalize(heur, "cudnnBackendFinalize(heuristics)"))
    return false;
  int64_t count = 0;
  if (!api.ok(api.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                           &count, nullptr),
              "cudnnBackendGetAttribute(heuristics result count)", error))
    return false;
  std::vector<BackendDescriptor> configs(static_cast<size_t>(std::max<int64_t>(count, 0)));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (auto& c : configs) {
    if (!b.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c, "cudnnBackendCreateDescriptor(engine config)")) return false;
    raw.push_back(c.get());
  }
  int64_t got = 0;
  if (count > 0 && !api.ok(api.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                           "cudnnBackendGetAttribute(heuristics results)", error))
    return false;
  configs.resize(static_cast<size_t>(std::min(std::max<int64_t>(got, 0), count)));
  *out = std::move(configs);
  return true;
}

/// The engine of a config (its global index and numerical notes) and the config's tag: "eng<index>" and
/// "_k<type>=<value>" per knob choice, by knob type ascending.
bool config_identity(const CudnnApi& api, const BackendDescriptor& config, int64_t* index, std::vector<int>* notes,
                     std::string* tag, std::string* error) {
  Builder b(api, error);
  BackendDescriptor engine;
  if (!b.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine, "cudnnBackendCreateDescriptor(engine)")) return false;
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (!api.ok(api.cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                           &n, &e),
              "cudnnBackendGetAttribute(config engine)", error) ||
      !api.ok(api.cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index),
              "cudnnBackendGetAttribute(engine index)", error))
    return false;
  cudnnBackendNumericalNote_t raw[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (!api.ok(api.cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                           CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, raw),
              "cudnnBackendGetAttribute(engine numerical notes)", error))
    return false;
  notes->clear();
  for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) notes->push_back(static_cast<int>(raw[i]));
  // The knob choices, into as many pre-created choice descriptors as there are knob types (a count
  // query, requesting 0, answers 0 here: cuDNN 9.19).
  const int64_t knobs = CUDNN_KNOB_TYPE_COUNTS;
  std::vector<BackendDescriptor> choices(static_cast<size_t>(knobs));
  std::vector<cudnnBackendDescriptor_t> raw_choices;
  for (auto& c : choices) {
    if (!b.create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &c, "cudnnBackendCreateDescriptor(knob choice)")) return false;
    raw_choices.push_back(c.get());
  }
  int64_t got = 0;
  if (!api.ok(api.cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                           knobs, &got, raw_choices.data()),
              "cudnnBackendGetAttribute(config knob choices)", error))
    return false;
  std::vector<std::pair<int64_t, int64_t>> kv;  // (knob type, value)
  for (int64_t i = 0; i < std::min(got, knobs); ++i) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0, m = 0;
    if (!api.ok(api.cudnnBackendGetAttribute(raw_choices[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                             CUDNN_TYPE_KNOB_TYPE, 1, &m, &type),
                "cudnnBackendGetAttribute(knob type)", error) ||
        !api.ok(api.cudnnBackendGetAttribute(raw_choices[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                             CUDNN_TYPE_INT64, 1, &m, &value),
                "cudnnBackendGetAttribute(knob value)", error))
      return false;
    kv.emplace_back(static_cast<int64_t>(type), value);
  }
  std::sort(kv.begin(), kv.end());
  *tag = "eng" + std::to_string(*index);
  for (const auto& [type, value] : kv) *tag += "_k" + std::to_string(type) + "=" + std::to_string(value);
  return true;
}

}  // namespace

int64_t conv_alignment(const ConvBuffers& b) {
  const uint64_t bits = b.x | b.f | b.y | 16;
  return static_cast<int64_t>(bits & (~bits + 1));  // the lowest set bit
}

bool GraphConvPlan::execute(cudnnHandle_t handle, const ConvBuffers& b, uint64_t workspace, std::string* error) {
  if (conv_alignment(b) < alignment_) {
    *error = "cudnn graph plan built for " + std::to_string(alignment_) + "-byte aligned buffers, got " +
             std::to_string(conv_alignment(b));
    return false;
  }
  if (!pack_.get() || b.x != packed_.x || b.f != packed_.f || b.y != packed_.y || workspace != packed_workspace_) {
    pack_.reset();
    Builder builder(api_, error);
    BackendDescriptor pack;
    void* ptrs[3] = {reinterpret_cast<void*>(b.x), reinterpret_cast<void*>(b.f), reinterpret_cast<void*>(b.y)};
    const int64_t uids[3] = {kUidX, kUidW, kUidY};
    void* ws = reinterpret_cast<void*>(workspace);
    if (!builder.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack, "cudnnBackendCreateDescriptor(variant pack)") ||
        !builder.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs, "set pack pointers") ||
        !builder.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "set pack unique ids") ||
        !builder.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, "set pack workspace") ||
        !builder.finalize(pack, "cudnnBackendFinalize(variant pack)"))
      return false;
    pack_ = std::move(pack);
    packed_ = b;
    packed_workspace_ = workspace;
  }
  return api_.ok(api_.cudnnBackendExecute(handle, plan_.get(), pack_.get()), "cudnnBackendExecute", error);
}

std::vector<std::unique_ptr<GraphConvPlan>> graph_conv_plans(const CudnnApi& api, const GraphTarget& target,
                                                             const ConvShape& shape, int64_t alignment,
                                                             size_t max_plans, double budget_s, std::string* note,
                                                             std::string* error) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<GraphConvPlan>> plans;
  if (!api.has_graph()) {
    *error = api.graph_missing.empty() ? "no graph API" : api.graph_missing;
    return plans;
  }
  if (!target.handle && !target.device_properties) {
    *error = "graph plans need a handle or device properties";
    return plans;
  }
  auto graph = std::make_shared<std::vector<BackendDescriptor>>();
  if (!build_graph(api, target, shape, alignment, graph.get(), error)) return plans;
  // Mode A's list, then the fallback list (its configs mode A named already are skipped as repeats);
  // a mode that fails is skipped.
  std::vector<BackendDescriptor> configs;
  std::string first_failure;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<BackendDescriptor> more;
    std::string why;
    if (!heuristic_configs(api, target, graph->back(), mode, &more, &why)) {
      if (first_failure.empty()) first_failure = why;
      continue;
    }
    for (auto& c : more) configs.push_back(std::move(c));
  }
  // One plan per tag (engine and knobs): mode A proposes several knob variants of its best engines, and
  // they differ in speed as much as engines do (PyTorch times each tag once).
  std::vector<std::string> seen;
  int refused = 0, unfinalized = 0, duplicates = 0;
  std::string refusal, finalize_failure;
  bool out_of_time = false;
  for (auto& config : configs) {
    if (plans.size() >= max_plans) break;
    // Runtime-compiled engines compile at finalize (seconds each): planning stops at the budget.
    if (!plans.empty() && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budget_s) {
      out_of_time = true;
      break;
    }
    int64_t engine = -1;
    std::vector<int> notes;
    std::string tag, why;
    if (!config_identity(api, config, &engine, &notes, &tag, &why)) {
      ++unfinalized;
      if (finalize_failure.empty()) finalize_failure = why;
      continue;
    }
    if (std::find(seen.begin(), seen.end(), tag) != seen.end()) {
      ++duplicates;
      continue;
    }
    seen.push_back(tag);
    const std::string refused_why = cudnn_engine_refusal(shape.dtype, notes);
    if (!refused_why.empty()) {
      ++refused;
      if (refusal.empty()) refusal = refused_why;
      continue;
    }
    BackendDescriptor plan;
    cudnnBackendDescriptor_t c = config.get();
    int64_t workspace = 0, n = 0;
    Builder pb(api, &why);
    if (!pb.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan, "cudnnBackendCreateDescriptor(plan)") ||
        (target.handle ? !pb.set(plan, kPlanHandle, CUDNN_TYPE_HANDLE, 1, &target.handle, "set plan handle")
                       : !pb.set(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &target.device_properties, "set plan device properties")) ||
        !pb.set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "set plan config") ||
        !pb.finalize(plan, "cudnnBackendFinalize(plan)") ||
        !api.ok(api.cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                             &n, &workspace),
                "cudnnBackendGetAttribute(plan workspace)", &why) ||
        workspace < 0) {
      ++unfinalized;
      if (finalize_failure.empty()) finalize_failure = why.empty() ? "negative workspace size" : why;
      continue;
    }
    plans.push_back(std::make_unique<GraphConvPlan>(api, graph, std::move(config), std::move(plan), engine, tag,
                                                    std::move(notes), static_cast<size_t>(workspace), alignment));
  }
  *note = std::to_string(configs.size()) + " configs";
  if (duplicates) *note += ", " + std::to_string(duplicates) + " repeated";
  if (refused) *note += ", " + std::to_string(refused) + " refused (" + refusal + ")";
  if (unfinalized) *note += ", " + std::to_string(unfinalized) + " not finalized (" + finalize_failure + ")";
  if (out_of_time) *note += ", planning stopped after " + std::to_string(static_cast<int>(budget_s)) + " s";
  if (plans.empty())
    *error = configs.empty() ? (first_failure.empty() ? "the heuristics proposed no engine config" : first_failure)
                             : "no usable plan: " + *note;
  return plans;
}

#endif  // TUNER_HAVE_CUDNN

}  // namespace tuner
