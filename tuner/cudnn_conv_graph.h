// cudnn_conv_graph.h: the conv baseline through cuDNN's graph (backend) API, the API PyTorch's
// cudnn.benchmark uses: one convolution-forward operation graph over the workload's own buffers
// (X NHWC, the filter KRSC, Y NPQK; dims given in NCHW order with NHWC strides, fp32 compute,
// cross-correlation), the engine configs cuDNN's heuristics propose (mode A, then the fallback list;
// an engine's knob variants each count, as PyTorch's plan tags) that cudnn_engine_refusal lets through,
// finalized as execution plans, and one plan's execution on device pointers. Choosing among the plans
// (timing them) is cudnn_conv.cpp's, not this file's. Plans are made for a handle (the GPU they run
// on) or, without a GPU, for a device-property descriptor (cuDNN 9.8+; tests): those finalize but
// never execute.
// Only .cpp files include this header, and only where __has_include(<cudnn.h>).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tuner/cudnn_api.h"
#include "tuner/cudnn_conv.h"

namespace tuner {

/// One backend descriptor, destroyed with the library's own call; move-only.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;
  BackendDescriptor(const CudnnApi* api, cudnnBackendDescriptor_t d) : api_(api), d_(d) {}
  BackendDescriptor(BackendDescriptor&& o) noexcept : api_(o.api_), d_(o.d_) { o.d_ = nullptr; }
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  ~BackendDescriptor() { reset(); }
  cudnnBackendDescriptor_t get() const { return d_; }
  void reset();

 private:
  const CudnnApi* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

/// What plans are made for: the handle of the GPU they will run on, or (handle null) a finalized
/// CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR describing one, for plans that finalize without a GPU.
struct GraphTarget {
  cudnnHandle_t handle = nullptr;
  cudnnBackendDescriptor_t device_properties = nullptr;
};

/// One finalized execution plan of the conv graph, with what it keeps alive (the graph and its engine
/// config) and the variant pack of the pointers it last ran on.
class GraphConvPlan {
 public:
  GraphConvPlan(const CudnnApi& api, std::shared_ptr<const std::vector<BackendDescriptor>> graph,
                BackendDescriptor config, BackendDescriptor plan, int64_t engine, std::string tag,
                std::vector<int> notes, size_t workspace_bytes, int64_t alignment)
      : api_(api), graph_(std::move(graph)), config_(std::move(config)), plan_(std::move(plan)), engine_(engine),
        tag_(std::move(tag)), notes_(std::move(notes)), workspace_bytes_(workspace_bytes), alignment_(alignment) {}
  int64_t engine() const { return engine_; }                 ///< cuDNN's global engine index.
  /// The engine and its knob choices, as PyTorch tags plans: "eng62_k2=3_k5=1" (knobs by type, ascending).
  const std::string& tag() const { return tag_; }
  const std::vector<int>& numerical_notes() const { return notes_; }  ///< The engine's cudnnBackendNumericalNote_t values.
  size_t workspace_bytes() const { return workspace_bytes_; }  ///< Workspace the plan needs, bytes.
  /// Enqueues Y = conv(X, F) on the handle's stream; false with *error on a cuDNN failure or when a
  /// pointer is less aligned than the plan was built for.
  bool execute(cudnnHandle_t handle, const ConvBuffers& b, uint64_t workspace, std::string* error);

 private:
  const CudnnApi& api_;
  std::shared_ptr<const std::vector<BackendDescriptor>> graph_;  ///< Tensors, convolution, operation, graph.
  BackendDescriptor config_, plan_, pack_;
  int64_t engine_;
  std::string tag_;
  std::vector<int> notes_;
  size_t workspace_bytes_;
  int64_t alignment_;
  ConvBuffers packed_{};  ///< The pointers pack_ holds (with packed_workspace_).
  uint64_t packed_workspace_ = 0;
};

/// The convolution-forward operation on its own, which needs no handle (nor a GPU): descriptors
/// [x, w, y, convolution, operation], each finalized. False with *error naming the call cuDNN refused
/// (an output size that does not follow from the input, a dtype it cannot take).
bool graph_conv_operation(const CudnnApi& api, const ConvShape& shape, int64_t alignment,
                          std::vector<BackendDescriptor>* out, std::string* error);

/// The largest power of two up to 16 that divides every pointer: the byte alignment the tensors claim.
int64_t conv_alignment(const ConvBuffers& b);

/// Up to max_plans finalized plans for `shape`, in the heuristics' order (mode A's configs, then the
/// fallback configs; a config whose tag was seen already is skipped), on tensors aligned to `alignment`
/// bytes; no further plan is finalized once budget_s seconds have passed and one plan exists. *note
/// gets a one-line account ("44 configs, 3 repeated, 2 refused (tensor cores (TF32) on f32 data), 1 not
/// finalized (...)"). Empty with *error when no plan could be made.
std::vector<std::unique_ptr<GraphConvPlan>> graph_conv_plans(const CudnnApi& api, const GraphTarget& target,
                                                             const ConvShape& shape, int64_t alignment,
                                                             size_t max_plans, double budget_s, std::string* note,
                                                             std::string* error);

}  // namespace tuner
