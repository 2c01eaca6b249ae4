// The typed entry points of include/tuner/runtime.h (gemm, batched_gemm, softmax, layernorm,
// conv2d): each names its workload the way the tuner does and launches through Runtime::launch.
#include <string>

#include "tuner/runtime.h"

namespace tuner {

namespace {

std::string dims(std::initializer_list<std::pair<const char*, int64_t>> items) {
  std::string s;
  for (const auto& [name, value] : items) s += (s.empty() ? "" : ",") + std::string(name) + "=" + std::to_string(value);
  return s;
}

Status run(Runtime& rt, const char* op, std::string shape, DType dtype, std::vector<const void*> buffers,
           CUstream_st* stream) noexcept {
  try {
    return rt.launch(Problem{op, std::move(shape), dtype, ""}, buffers, stream);
  } catch (...) {  // std::string / vector allocation before launch
    return Status::kInternal;
  }
}

}  // namespace

Status gemm(Runtime& rt, DType dtype, int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c,
            CUstream_st* stream) noexcept {
  return run(rt, "gemm", dims({{"M", m}, {"N", n}, {"K", k}}), dtype, {a, b, c}, stream);
}

Status batched_gemm(Runtime& rt, DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
                    const void* b, void* c, CUstream_st* stream) noexcept {
  return run(rt, "batched_gemm", dims({{"B", batch}, {"M", m}, {"N", n}, {"K", k}}), dtype, {a, b, c}, stream);
}

Status softmax(Runtime& rt, DType dtype, int64_t rows, int64_t cols, const void* x, void* y,
               CUstream_st* stream) noexcept {
  return run(rt, "softmax", dims({{"rows", rows}, {"cols", cols}}), dtype, {x, y}, stream);
}

Status layernorm(Runtime& rt, DType dtype, int64_t rows, int64_t cols, const void* x, const void* gamma,
                 const void* beta, void* y, CUstream_st* stream) noexcept {
  return run(rt, "layernorm", dims({{"rows", rows}, {"cols", cols}}), dtype, {x, gamma, beta, y}, stream);
}

Status conv2d(Runtime& rt, DType dtype, const Conv2dShape& s, const void* x, const void* filter, void* y,
              CUstream_st* stream) noexcept {
  return run(rt, "conv2d",
             dims({{"N", s.n}, {"H", s.h}, {"W", s.w}, {"C", s.c}, {"K", s.k}, {"R", s.r}, {"S", s.s},
                   {"stride", s.stride}, {"pad", s.pad}, {"dilation", s.dilation}}),
             dtype, {x, filter, y}, stream);
}

}  // namespace tuner
