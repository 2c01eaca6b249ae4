#include "templates/row_norm_source.h"

#include <string_view>

#include "templates/element_source.h"
#include "templates/output_tile_source.h"

namespace tuner::templates {
namespace {

constexpr std::string_view kConstants = R"cuda(
// ---- tiling, baked in at generation time ----
constexpr int kRT = @RT@;           // threads per row
constexpr int kRPB = @RPB@;         // rows per block
constexpr int kVec = @VEC@;         // elements per global access
constexpr int kOnePass = @ONE_PASS@;  // online softmax / Welford
constexpr int kCache = @CACHE@;     // row kept in registers
constexpr int kItems = @ITEMS@;     // vectors per thread when cached
constexpr int kIsLayernorm = @LAYERNORM@;
)cuda";

constexpr std::string_view kCommon = R"cuda(
constexpr int kThreads = kRT * kRPB;
constexpr int kWarpsPerRow = kRT / 32;
constexpr float kLowest = -3.0e38f;  // finite "minus infinity": exp(kLowest - m) is 0, never NaN
static_assert(kRT % 32 == 0 && kRT <= 1024, "row_threads must be whole warps");
static_assert(kThreads <= 1024, "threads per block <= 1024");
static_assert(kVec == 1 || kVec == 2 || kVec == 4 || kVec == 8, "vec must be 1, 2, 4 or 8");
static_assert(kVec * sizeof(elem_t) <= 16, "at most 16 bytes per access");
static_assert(kRPB <= 15, "one named barrier per row group");

// Barrier of one row group (named barrier group+1; barrier 0 is __syncthreads).
__device__ __forceinline__ void row_sync(int group) {
  if constexpr (kWarpsPerRow > 1) asm volatile("bar.sync %0, %1;" : : "r"(group + 1), "r"(kRT) : "memory");
}

// Reads kVec elements at column col of a row as floats; out-of-row elements read `fill`.
__device__ __forceinline__ void load_chunk(const elem_t* __restrict__ row, int col, int cols, bool vec_ok,
                                           float fill, float (&v)[kVec]) {
  if (kVec > 1 && vec_ok && col + kVec <= cols) {
    const ElemVec<kVec> e = *reinterpret_cast<const ElemVec<kVec>*>(row + col);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = to_float(e.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = col + j < cols ? to_float(row[col + j]) : fill;
  }
}

__device__ __forceinline__ void store_chunk(elem_t* __restrict__ row, int col, int cols, bool vec_ok,
                                            const float (&v)[kVec]) {
  if (kVec > 1 && vec_ok && col + kVec <= cols) {
    ElemVec<kVec> e;
#pragma unroll
    for (int j = 0; j < kVec; ++j) e.v[j] = from_float(v[j]);
    *reinterpret_cast<ElemVec<kVec>*>(row + col) = e;
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (col + j < cols) row[col + j] = from_float(v[j]);
  }
}

// Visits this thread's chunks of the row: from registers when cached (loaded on the first visit
// through `load`), else from global memory. f(col, values) gets only chunks that start in the row.
template <class F>
__device__ __forceinline__ void for_each_chunk(const elem_t* __restrict__ row, int cols, bool vec_ok, int t,
                                               float fill, float (&cache)[kItems][kVec], bool load, F f) {
  if constexpr (kCache) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int col = (i * kRT + t) * kVec;
      if (col >= cols) break;
      if (load) load_chunk(row, col, cols, vec_ok, fill, cache[i]);
      f(col, cache[i]);
    }
  } else {
    for (int col = t * kVec; col < cols; col += kRT * kVec) {
      float v[kVec];
      load_chunk(row, col, cols, vec_ok, fill, v);
      f(col, v);
    }
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (or max) over the row group; every thread of the group gets the result.
template <bool kMax>
__device__ __forceinline__ float row_reduce(float v, float* scratch, int group, int t) {
  v = kMax ? warp_max(v) : warp_sum(v);
  if constexpr (kWarpsPerRow == 1) {
    return v;
  } else {
    if (t % 32 == 0) scratch[t / 32] = v;
    row_sync(group);
    float r = scratch[0];
#pragma unroll
    for (int w = 1; w < kWarpsPerRow; ++w) r = kMax ? fmaxf(r, scratch[w]) : r + scratch[w];
    row_sync(group);  // scratch is reused by the next reduction
    return r;
  }
}
)cuda";

constexpr std::string_view kSoftmax = R"cuda(
// Online-softmax merge of two (max, sum-of-exp) pairs.
__device__ __forceinline__ void merge_ms(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
  m = mn;
}

extern "C" __global__ void __launch_bounds__(kThreads)
softmax_rows(const elem_t* __restrict__ X, elem_t* __restrict__ Y, int rows, int cols) {
  __shared__ float scratch_all[kRPB][kWarpsPerRow * 2 + 1];
  const int group = static_cast<int>(threadIdx.x) / kRT;
  const int t = static_cast<int>(threadIdx.x) % kRT;
  const int r = static_cast<int>(blockIdx.x) * kRPB + group;
  if (r >= rows) return;  // the group's named barrier counts only its own threads
  float* scratch = scratch_all[group];
  const elem_t* row = X + static_cast<size_t>(r) * cols;
  elem_t* out = Y + static_cast<size_t>(r) * cols;
  const bool vec_ok = cols % kVec == 0;
  float cache[kItems][kVec];
  float m = kLowest, s = 0.0f;
  if constexpr (kOnePass) {
    for_each_chunk(row, cols, vec_ok, t, kLowest, cache, true, [&](int, const float (&v)[kVec]) {
      float cm = v[0];
#pragma unroll
      for (int j = 1; j < kVec; ++j) cm = fmaxf(cm, v[j]);
      float cs = 0.0f;
#pragma unroll
      for (int j = 0; j < kVec; ++j) cs += __expf(v[j] - cm);
      merge_ms(m, s, cm, cs);
    });
    // Merge the pairs of the group: first across the warp, then across warps.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
      merge_ms(m, s, m2, s2);
    }
    if constexpr (kWarpsPerRow > 1) {
      if (t % 32 == 0) { scratch[2 * (t / 32)] = m; scratch[2 * (t / 32) + 1] = s; }
      row_sync(group);
      m = scratch[0];
      s = scratch[1];
#pragma unroll
      for (int w = 1; w < kWarpsPerRow; ++w) merge_ms(m, s, scratch[2 * w], scratch[2 * w + 1]);
    }
  } else {
    for_each_chunk(row, cols, vec_ok, t, kLowest, cache, true, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[j]);
    });
    m = row_reduce<true>(m, scratch, group, t);
    for_each_chunk(row, cols, vec_ok, t, kLowest, cache, false, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) s += __expf(v[j] - m);
    });
    s = row_reduce<false>(s, scratch, group, t);
  }
  const float inv = 1.0f / s;
  for_each_chunk(row, cols, vec_ok, t, kLowest, cache, false, [&](int col, const float (&v)[kVec]) {
    float y[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) y[j] = __expf(v[j] - m) * inv;
    store_chunk(out, col, cols, vec_ok, y);
  });
}
)cuda";

constexpr std::string_view kLayernorm = R"cuda(
constexpr float kEps = 1e-5f;

// Welford merge of (count, mean, M2) with (n2, mean2, M2_2).
__device__ __forceinline__ void merge_welford(float& n, float& mean, float& m2, float n2, float mean2, float m22) {
  const float nn = n + n2;
  if (nn == 0.0f) return;
  const float delta = mean2 - mean;
  const float f = n2 / nn;
  mean += delta * f;
  m2 += m22 + delta * delta * n * f;
  n = nn;
}

extern "C" __global__ void __launch_bounds__(kThreads)
layernorm_rows(const elem_t* __restrict__ X, const elem_t* __restrict__ gamma, const elem_t* __restrict__ beta,
               elem_t* __restrict__ Y, int rows, int cols) {
  __shared__ float scratch_all[kRPB][kWarpsPerRow * 3 + 1];
  const int group = static_cast<int>(threadIdx.x) / kRT;
  const int t = static_cast<int>(threadIdx.x) % kRT;
  const int r = static_cast<int>(blockIdx.x) * kRPB + group;
  if (r >= rows) return;
  float* scratch = scratch_all[group];
  const elem_t* row = X + static_cast<size_t>(r) * cols;
  elem_t* out = Y + static_cast<size_t>(r) * cols;
  const bool vec_ok = cols % kVec == 0;
  float cache[kItems][kVec];
  float mean = 0.0f, var = 0.0f;
  if constexpr (kOnePass) {
    float n = 0.0f, m2 = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, true, [&](int col, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        if (col + j < cols) {
          n += 1.0f;
          const float d = v[j] - mean;
          mean += __fdividef(d, n);
          m2 += d * (v[j] - mean);
        }
      }
    });
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float n2 = __shfl_xor_sync(0xffffffffu, n, o);
      const float mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
      const float m22 = __shfl_xor_sync(0xffffffffu, m2, o);
      merge_welford(n, mean, m2, n2, mean2, m22);
    }
    if constexpr (kWarpsPerRow > 1) {
      if (t % 32 == 0) {
        scratch[3 * (t / 32)] = n; scratch[3 * (t / 32) + 1] = mean; scratch[3 * (t / 32) + 2] = m2;
      }
      row_sync(group);
      n = scratch[0]; mean = scratch[1]; m2 = scratch[2];
#pragma unroll
      for (int w = 1; w < kWarpsPerRow; ++w) merge_welford(n, mean, m2, scratch[3 * w], scratch[3 * w + 1], scratch[3 * w + 2]);
    }
    var = m2 / static_cast<float>(cols);
  } else {
    float sum = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, true, [&](int, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) sum += v[j];  // out-of-row elements read 0
    });
    mean = row_reduce<false>(sum, scratch, group, t) / static_cast<float>(cols);
    float sq = 0.0f;
    for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, false, [&](int col, const float (&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float d = col + j < cols ? v[j] - mean : 0.0f;
        sq += d * d;
      }
    });
    var = row_reduce<false>(sq, scratch, group, t) / static_cast<float>(cols);
  }
  const float rstd = rsqrtf(var + kEps);
  for_each_chunk(row, cols, vec_ok, t, 0.0f, cache, false, [&](int col, const float (&v)[kVec]) {
    float g[kVec], b[kVec], y[kVec];
    load_chunk(gamma, col, cols, vec_ok, 0.0f, g);
    load_chunk(beta, col, cols, vec_ok, 0.0f, b);
#pragma unroll
    for (int j = 0; j < kVec; ++j) y[j] = (v[j] - mean) * rstd * g[j] + b[j];
    store_chunk(out, col, cols, vec_ok, y);
  });
}
)cuda";

constexpr std::string_view kReferenceCommon = R"cuda(
// One block of 256 threads per row; double accumulation and a shared-memory tree reduction.
__device__ double block_reduce(double v, bool is_max) {
  __shared__ double red[256];
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = is_max ? fmax(red[threadIdx.x], red[threadIdx.x + s])
                                                   : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();
  return r;
}
)cuda";

constexpr std::string_view kSoftmaxReference = R"cuda(
extern "C" __global__ void softmax_reference(const elem_t* X, elem_t* Y, int rows, int cols) {
  const elem_t* row = X + static_cast<size_t>(blockIdx.x) * cols;
  elem_t* out = Y + static_cast<size_t>(blockIdx.x) * cols;
  double m = -1.0e300;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmax(m, static_cast<double>(to_float(row[c])));
  m = block_reduce(m, true);
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += exp(static_cast<double>(to_float(row[c])) - m);
  s = block_reduce(s, false);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = from_float(static_cast<float>(exp(static_cast<double>(to_float(row[c])) - m) / s));
}
)cuda";

constexpr std::string_view kLayernormReference = R"cuda(
extern "C" __global__ void layernorm_reference(const elem_t* X, const elem_t* gamma, const elem_t* beta, elem_t* Y,
                                               int rows, int cols) {
  const elem_t* row = X + static_cast<size_t>(blockIdx.x) * cols;
  elem_t* out = Y + static_cast<size_t>(blockIdx.x) * cols;
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += static_cast<double>(to_float(row[c]));
  const double mean = block_reduce(s, false) / cols;
  double q = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const double d = static_cast<double>(to_float(row[c])) - mean;
    q += d * d;
  }
  const double rstd = 1.0 / sqrt(block_reduce(q, false) / cols + 1e-5);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = from_float(static_cast<float>((static_cast<double>(to_float(row[c])) - mean) * rstd *
                                           static_cast<double>(to_float(gamma[c])) +
                                           static_cast<double>(to_float(beta[c]))));
}
)cuda";

}  // namespace

std::string row_kernel_name(RowOp op) { return op == RowOp::kSoftmax ? "softmax_rows" : "layernorm_rows"; }
std::string row_reference_kernel_name(RowOp op) {
  return op == RowOp::kSoftmax ? "softmax_reference" : "layernorm_reference";
}

std::string row_norm_source(const RowTiling& t) {
  std::string constants(kConstants);
  replace_all(constants, "@RT@", std::to_string(t.row_threads));
  replace_all(constants, "@RPB@", std::to_string(t.rows_per_block));
  replace_all(constants, "@VEC@", std::to_string(t.vec));
  replace_all(constants, "@ONE_PASS@", std::to_string(t.one_pass));
  replace_all(constants, "@CACHE@", std::to_string(t.cache));
  replace_all(constants, "@ITEMS@", std::to_string(t.cache ? t.items : 1));
  replace_all(constants, "@LAYERNORM@", t.op == RowOp::kLayernorm ? "1" : "0");
  std::string out = "// " + row_kernel_name(t.op) + ": generated by tuner::templates::row_norm_source().\n";
  out += element_source(t.dtype);
  out.append(constants).append(kCommon).append(t.op == RowOp::kSoftmax ? kSoftmax : kLayernorm);
  return out;
}

std::string row_norm_reference_source(RowOp op, DType d) {
  std::string out = "// " + row_reference_kernel_name(op) + ": double-accumulation reference.\n";
  out += element_source(d);
  out.append(kReferenceCommon).append(op == RowOp::kSoftmax ? kSoftmaxReference : kLayernormReference);
  return out;
}

std::string row_norm_template_text() {
  std::string out = element_source_text();
  out.append(kConstants).append(kCommon).append(kSoftmax).append(kLayernorm).append(kReferenceCommon)
      .append(kSoftmaxReference).append(kLayernormReference);
  return out;
}

}  // namespace tuner::templates
