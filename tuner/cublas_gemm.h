// cuBLAS SGEMM as the vendor baseline, loaded with dlopen (libcublas.so.13)
// so the tuner starts on machines without it. Row-major C = A·B is computed as
// the column-major C^T = B^T·A^T; FP32 math (no TF32), like the template.
// Used inside the measurement worker, on the worker's current CUDA context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tuner {

class CublasSgemm {
 public:
  /// nullptr with *error set when cuBLAS cannot be loaded or initialised.
  static std::unique_ptr<CublasSgemm> create(std::string* error);
  ~CublasSgemm();
  CublasSgemm(const CublasSgemm&) = delete;
  CublasSgemm& operator=(const CublasSgemm&) = delete;

  /// Enqueues C = A·B (row-major, device pointers) on the default stream; false with *error on failure.
  bool run(uint64_t a, uint64_t b, uint64_t c, int m, int n, int k, std::string* error);

 private:
  struct Impl;
  explicit CublasSgemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner
