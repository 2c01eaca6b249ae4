// cuDNN as the vendor baseline of conv2d ("cudnn_conv"), loaded with dlopen
// (libcudnn.so.9) so the tuner starts on machines without it. The legacy
// convolution API on the workload's own layouts: X in NHWC, the filter KRSC
// (cuDNN's NHWC filter format), Y in NPQK; cross-correlation, fp32 compute;
// tensor-core math for f16/bf16, FMA math only (no TF32) for f32, like the
// templates. The algorithm is the fastest cudnnFindConvolutionForwardAlgorithm
// reports for the shape, found once per shape. Used inside the measurement
// worker, on the worker's current CUDA context and the default stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "templates/workload.h"

namespace tuner {

/// One conv2d problem as the conv2d templates' scalar arguments give it (p, q: the output size the
/// template's buffers hold; cuDNN's own is checked against it).
struct ConvShape {
  int n = 0, h = 0, w = 0, c = 0, k = 0, r = 0, s = 0, stride = 1, pad = 0, dilation = 1, p = 0, q = 0;
  templates::DType dtype = templates::DType::kF32;
};

class CudnnConv {
 public:
  /// nullptr with *error set when cuDNN cannot be loaded or initialised.
  static std::unique_ptr<CudnnConv> create(std::string* error);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  /// Sets the shape up: descriptors, the algorithm (benchmarked once per shape) and its math type;
  /// returns the workspace bytes run() needs. False with *error when cuDNN cannot do the shape.
  bool plan(const ConvShape& shape, size_t* workspace_bytes, std::string* error);
  /// Enqueues Y = conv(X, F) for the shape last planned, and nothing else (it is what gets timed);
  /// x, f, y, workspace are device pointers.
  bool run(uint64_t x, uint64_t f, uint64_t y, uint64_t workspace, size_t workspace_bytes, std::string* error);

 private:
  struct Impl;
  explicit CudnnConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner
