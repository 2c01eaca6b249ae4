// cuDNN as the vendor baseline of conv2d ("cudnn_conv"), loaded with dlopen (libcudnn.so.9, see
// cudnn_api.h) so the tuner starts on machines without it. On the workload's own layouts: X in NHWC,
// the filter KRSC (cuDNN's NHWC filter format), Y in NPQK; cross-correlation, fp32 compute; f32 data
// never on tensor cores (no TF32), like the templates.
//
// plan() chooses, once per shape, the fastest of: up to 16 execution plans of cuDNN's graph API
// (cudnn_conv_graph.h: the engines its heuristics propose, as PyTorch's cudnn.benchmark sees them)
// and the algorithm the legacy cudnnFindConvolutionForwardAlgorithm picks, each timed on the
// caller's own buffers (a warm-up, then the median of several runs, CUDA events). Choosing here
// rather than in the runner keeps the runner's protocol for the one figure it reports and keeps
// cuDNN's candidates out of it, as cudnnFind does. A graph plan wins only when its output agrees with
// the legacy algorithm's; when the graph path fails anywhere the legacy choice stands and
// planned_detail() says why; TUNER_CUDNN_GRAPH=0 in the environment keeps to the legacy path. Used
// inside the measurement worker, on the worker's current CUDA context and the default stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "templates/workload.h"

namespace tuner {

/// One conv2d problem as the conv2d templates' scalar arguments give it (p, q: the output size the
/// template's buffers hold; cuDNN's own is checked against it).
struct ConvShape {
  int n = 0, h = 0, w = 0, c = 0, k = 0, r = 0, s = 0, stride = 1, pad = 0, dilation = 1, p = 0, q = 0;
  templates::DType dtype = templates::DType::kF32;
};

/// Device pointers of one conv's buffers.
struct ConvBuffers {
  uint64_t x = 0, f = 0, y = 0;
};

/// Gives plan() a device workspace of at least `bytes` (the same memory grown is fine: plan() asks
/// again before each candidate); 0 when it cannot be had (that candidate is skipped).
using ConvWorkspace = std::function<uint64_t(size_t bytes)>;

class CudnnConv {
 public:
  /// nullptr with *error set when cuDNN cannot be loaded or initialised.
  static std::unique_ptr<CudnnConv> create(std::string* error);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  /// Sets the shape up: the first time per shape, times every candidate on `buffers` (Y is written)
  /// and keeps the fastest; returns the workspace bytes run() needs. False with *error when neither
  /// path can do the shape, or when a candidate's run left an error on the CUDA context.
  bool plan(const ConvShape& shape, const ConvBuffers& buffers, const ConvWorkspace& workspace,
            size_t* workspace_bytes, std::string* error);
  /// Enqueues Y = conv(X, F) for the shape last planned, and nothing else (it is what gets timed).
  bool run(const ConvBuffers& buffers, uint64_t workspace, size_t workspace_bytes, std::string* error);
  /// What the shape last planned runs, and why: "cudnn graph eng12_k2=1 (fastest of 9: ...)" or
  /// "cudnn legacy algo 1 (graph path: <why it failed>)".
  const std::string& planned_detail() const;

 private:
  struct Impl;
  explicit CudnnConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Why an engine whose numerical notes (cudnnBackendNumericalNote_t values) are `notes` may not be the
/// baseline for data of type `data`; "" when it may. As PyTorch with TF32 off: never an engine that
/// down-converts its inputs, never tensor cores (TF32) on f32 data; and, as the templates accumulate in
/// fp32, never one that reduces in reduced precision.
std::string cudnn_engine_refusal(templates::DType data, const std::vector<int>& notes);

/// max |got - want| / max |want| over two outputs of n elements of type d (max |got - want| when want
/// is all zeros); infinity when either holds a NaN or an infinity.
double relative_difference(const void* got, const void* want, size_t n, templates::DType d);
/// The relative_difference within which two cuDNN algorithms' outputs of data type `d` agree.
double cudnn_agreement_tolerance(templates::DType d);

/// The entry points tuner resolves (legacy and graph API) that libcudnn.so.9 lacks; empty with
/// *error set when the library itself is not found or tuner was built without cuDNN's headers.
std::vector<std::string> cudnn_missing_entry_points(std::string* error);

}  // namespace tuner
