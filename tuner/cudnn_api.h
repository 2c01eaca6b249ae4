// cudnn_api.h: cuDNN's entry points as tuner calls them, resolved by name (dlsym) from one dlopen'd
// libcudnn.so.9, so the tuner starts on machines without cuDNN. The legacy convolution API is
// required; the graph (backend) API is optional: when libcudnn lacks one of its entry points the
// conv baseline keeps to the legacy path and says why. Not the conv baseline itself (cudnn_conv.h).
// Implemented in cudnn_api.cpp (with cudnn_missing_entry_points of cudnn_conv.h). Only .cpp files
// include this header, and only where __has_include(<cudnn.h>): it brings in cudnn.h.
#pragma once

#include <string>

#include <cudnn.h>

namespace tuner {

// The legacy convolution API: every entry point must resolve for the baseline to exist.
#define TUNER_CUDNN_LEGACY_FUNCTIONS(X)                                                                      \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)                        \
  X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor)               \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)          \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionMathType)     \
  X(cudnnGetConvolution2dForwardOutputDim) X(cudnnFindConvolutionForwardAlgorithm) X(cudnnConvolutionForward)

// The graph (backend) API: optional, all or nothing.
#define TUNER_CUDNN_GRAPH_FUNCTIONS(X)                                                                     \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)              \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)

struct CudnnApi {
#define TUNER_DECLARE(fn) decltype(&::fn) fn = nullptr;
  TUNER_CUDNN_LEGACY_FUNCTIONS(TUNER_DECLARE)
  TUNER_CUDNN_GRAPH_FUNCTIONS(TUNER_DECLARE)
#undef TUNER_DECLARE
  /// cuDNN's reason for its last failure on this thread (read once, then cleared); optional.
  decltype(&::cudnnGetLastErrorString) cudnnGetLastErrorString = nullptr;
  void* lib = nullptr;
  std::string graph_missing;  ///< "cuDNN lacks cudnnBackendExecute" when the graph API is unusable; else empty.

  CudnnApi() = default;
  CudnnApi(const CudnnApi&) = delete;
  CudnnApi& operator=(const CudnnApi&) = delete;
  ~CudnnApi();

  /// Opens libcudnn.so.9 and resolves every entry point. False with *error ("... not found", "cuDNN
  /// lacks X") when the library or a legacy entry point is missing; a missing graph entry point only
  /// sets graph_missing.
  bool load(std::string* error);
  /// True, or false with *error = "<call> failed: <status> (<cuDNN's reason, when it gives one>)", one line.
  bool ok(cudnnStatus_t st, const char* call, std::string* error) const;
  bool has_graph() const { return graph_missing.empty() && cudnnBackendExecute != nullptr; }
};

}  // namespace tuner
