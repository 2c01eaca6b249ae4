#include "templates/row_norm.h"

#include <algorithm>

namespace tuner::templates {

namespace {


constexpr const char* kCacheDoc =
    "0: re-read the row per pass; 1: keep it in registers as fp32; 2: as elements, all loads issued first";

// Layernorm's knob added after the first recordings: 1 (absent from their configs) is the kernel they
// measured.
search::Knob min_blocks_knob() {
  return {"MIN_BLOCKS", {1, 2},
          "layernorm: blocks per SM the compiler must leave registers for (__launch_bounds__); 2 caps them at "
          "32768 / threads per block",
          1};
}

/// Layernorm's rule for MIN_BLOCKS 2: for two-pass prefetched rows (CACHE 2, ONE_PASS 0) in blocks of
/// 512 threads or more (below, the cap 32768 / threads is above what the kernel uses: the same kernel),
/// with 16-byte vectors, whose packed row leaves 32 working registers under the cap. Compiled for sm_90:
/// a 32-register row at 64 spills 8 bytes; one-pass or fp32-cached rows and 1,024-thread blocks spilled
/// 24-72, 2-element vectors (a register of column arithmetic per vector) 276.
bool min_blocks_allowed(const search::ConfigView& v, int64_t cols, int bytes) {
  const int64_t threads = v["ROW_THREADS"] * v["ROWS_PER_BLOCK"];
  if (v["CACHE"] != 2 || v["ONE_PASS"] != 0 || threads < 512 || v["VEC"] * bytes != 16) return false;
  const int64_t per_thread = costmodel::ceil_div(cols, v["ROW_THREADS"] * v["VEC"]) * v["VEC"];
  return costmodel::ceil_div(per_thread * bytes, 4) + 32 <= 32768 / threads;
}

search::Constraint min_blocks_constraint(const Workload& w) {
  return {"MIN_BLOCKS == 1, or CACHE 2, ONE_PASS 0, 16-byte vectors, 512+ threads per block and the packed "
          "row + 32 registers <= 32768 / threads",
          [cols = w.dim("cols"), bytes = dtype_bytes(w.dtype)](const search::ConfigView& v) {
            return v["MIN_BLOCKS"] == 1 || min_blocks_allowed(v, cols, bytes);
          }};
}

std::vector<search::Knob> row_knobs(bool reduced) {
  if (reduced) {
    return {
        {"ROW_THREADS", {32, 128, 512}, "threads per row (whole warps)"},
        {"ROWS_PER_BLOCK", {1, 4}, "rows per block"},
        {"VEC", {1, 8}, "elements per global access"},
        {"ONE_PASS", {0, 1}, "1: online softmax / pairwise-merged moments; 0: two passes"},
        {"CACHE", {0, 1, 2}, kCacheDoc},
    };
  }
  return {
      {"ROW_THREADS", {32, 64, 128, 256, 512, 1024}, "threads per row (whole warps)"},
      {"ROWS_PER_BLOCK", {1, 2, 4, 8}, "rows per block"},
      {"VEC", {1, 2, 4, 8}, "elements per global access"},
      {"ONE_PASS", {0, 1}, "1: online softmax / pairwise-merged moments; 0: two passes"},
      {"CACHE", {0, 1, 2}, kCacheDoc},
  };
}

std::vector<search::Constraint> row_constraints(const Workload& w, const DeviceLimits& limits) {
  const int64_t cols = w.dim("cols");
  const bool layernorm = w.op == "layernorm";
  const int bytes = dtype_bytes(w.dtype);
  return {
      {"ROW_THREADS * ROWS_PER_BLOCK <= " + std::to_string(limits.max_threads_per_block),
       [max = limits.max_threads_per_block](const search::ConfigView& v) {
         return v["ROW_THREADS"] * v["ROWS_PER_BLOCK"] <= max;
       }},
      {"VEC * element bytes <= 16", [bytes](const search::ConfigView& v) { return v["VEC"] * bytes <= 16; }},
      // Past this, half of a row's threads or more would have no column to read.
      {"ROW_THREADS == 32 or ROW_THREADS / 2 * VEC < cols", [cols](const search::ConfigView& v) {
         return v["ROW_THREADS"] == 32 || v["ROW_THREADS"] / 2 * v["VEC"] < cols;
       }},
      // 64 registers of row per thread (256 bytes) leave room under 255 without spills.
      {"CACHE needs the row in at most 64 registers per thread", [cols, bytes](const search::ConfigView& v) {
         const int64_t per_thread = costmodel::ceil_div(cols, v["ROW_THREADS"] * v["VEC"]) * v["VEC"];
         return v["CACHE"] == 0 || per_thread * (v["CACHE"] == 2 ? bytes : 4) <= 256;
       }},
      // The block's threads share 64K registers: a cached row plus the kernel's working registers (about
      // 32 for softmax, 40 for layernorm's gamma and beta, from the cubins) must fit a thread's share, or
      // ptxas spills the row (1024 threads x 64 cached floats: 1.6 KB of spills per thread on sm_90).
      {"CACHE needs the row + working registers within 64K / threads per block",
       [cols, bytes, work = layernorm ? 40 : 32](const search::ConfigView& v) {
         const int64_t per_thread = costmodel::ceil_div(cols, v["ROW_THREADS"] * v["VEC"]) * v["VEC"];
         const int64_t row_regs = v["CACHE"] == 2 ? costmodel::ceil_div(per_thread * bytes, 4) : per_thread;
         return v["CACHE"] == 0 || row_regs + work <= 65536 / (v["ROW_THREADS"] * v["ROWS_PER_BLOCK"]);
       }},
      // A lone 16-bit element still takes a whole 32-bit register: CACHE 2 would save nothing.
      {"CACHE == 2 needs VEC * element bytes >= 4", [bytes](const search::ConfigView& v) {
         return v["CACHE"] != 2 || v["VEC"] * bytes >= 4;
       }},
  };
}

}  // namespace

double RowNormTemplate::tolerance(DType d) {
  // f32: fp32 arithmetic with __expf / rsqrtf against a double reference: typically ~1e-6, but a
  // thread sums up to cols/ROW_THREADS terms serially (1024 at 32768 columns over 32 threads), whose
  // worst-case rounding is ~1024 * 2^-24 ~ 6e-5: 1e-4, as the fp32 GEMM.
  // f16: the output is rounded to binary16 (11-bit significand); the kernel and the reference may
  // round one element to neighbouring halves, 2^-10 ~ 9.8e-4 of it: 2e-3 leaves room for the fp32
  // arithmetic. bf16: an 8-bit significand, a neighbouring value is 2^-7 ~ 7.8e-3 away: 1e-2.
  switch (d) {
    case DType::kF16: return 2e-3;
    case DType::kBF16: return 1e-2;
    case DType::kF32: break;
  }
  return 1e-4;
}

std::string RowNormTemplate::source_text() const { return row_norm_template_text(op_); }

std::optional<std::string> RowNormTemplate::unsupported(const Workload& w) const {
  const int64_t rows = w.dim("rows"), cols = w.dim("cols");
  // Rows are indexed with size_t offsets; rows and cols are int kernel arguments and the grid's x
  // dimension (one block per row at most) allows 2^31 - 1 blocks: the parser's limits already hold.
  if (static_cast<double>(rows) * static_cast<double>(cols) > 1e11)
    return "rows*cols=" + std::to_string(rows) + "*" + std::to_string(cols) + " is " +
           std::to_string(static_cast<int64_t>(static_cast<double>(rows) * static_cast<double>(cols))) + " elements; " +
           name() + " allows at most 100000000000 (1e11)";
  return std::nullopt;
}

search::ConfigSpace RowNormTemplate::space(const Workload& w, const DeviceLimits& limits) const {
  auto knobs = row_knobs(false);
  auto cs = row_constraints(w, limits);
  if (op_ == RowOp::kLayernorm) {
    knobs.push_back(min_blocks_knob());
    cs.push_back(min_blocks_constraint(w));
  }
  return search::ConfigSpace(std::move(knobs), std::move(cs));
}

search::ConfigSpace RowNormTemplate::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  auto cs = row_constraints(w, limits);
  // Tens of configs: tie ROWS_PER_BLOCK to ONE_PASS.
  cs.push_back({"reduced: ROWS_PER_BLOCK == 4 iff ONE_PASS == 0",
                [](const search::ConfigView& v) { return (v["ROWS_PER_BLOCK"] == 4) == (v["ONE_PASS"] == 0); }});
  const int bytes = dtype_bytes(w.dtype);
  // VEC 8 is 32 bytes of f32: use 4 there instead.
  auto knobs = row_knobs(true);
  if (bytes == 4) knobs[2].values = {1, 4};
  if (op_ == RowOp::kLayernorm) {
    // Where the shape has configs the rule allows, MIN_BLOCKS 2 is tied to them (so it adds no
    // configs); else only 1 is offered.
    const auto tied = [cols = w.dim("cols"), bytes](const search::ConfigView& v) {
      return min_blocks_allowed(v, cols, bytes);
    };
    knobs.push_back(min_blocks_knob());
    knobs.back().values = {1};
    const search::ConfigSpace without(knobs, cs);
    bool any = false;
    for (const auto& c : without.enumerate()) any = any || tied(search::ConfigView(without, c));
    if (any) knobs.back().values = {1, 2};
    cs.push_back(min_blocks_constraint(w));
    cs.push_back({"reduced: MIN_BLOCKS == 2 wherever the rule allows it",
                  [tied](const search::ConfigView& v) { return (v["MIN_BLOCKS"] == 2) == tied(v); }});
  }
  return search::ConfigSpace(std::move(knobs), std::move(cs));
}

RowTiling RowNormTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, const Workload& w) const {
  const search::ConfigView v(space, c);
  RowTiling t;
  t.op = op_;
  t.dtype = w.dtype;
  t.row_threads = static_cast<int>(v["ROW_THREADS"]);
  t.rows_per_block = static_cast<int>(v["ROWS_PER_BLOCK"]);
  t.vec = static_cast<int>(v["VEC"]);
  t.one_pass = static_cast<int>(v["ONE_PASS"]);
  t.cache = static_cast<int>(v["CACHE"]);
  t.items = static_cast<int>(costmodel::ceil_div(w.dim("cols"), int64_t{t.row_threads} * t.vec));
  if (op_ == RowOp::kLayernorm) t.min_blocks = static_cast<int>(v["MIN_BLOCKS"]);
  return t;
}

costmodel::KernelProfile RowNormTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                  const Workload& w) const {
  const RowTiling t = tiling(space, c, w);
  const int64_t rows = w.dim("rows"), cols = w.dim("cols");
  const double elems = static_cast<double>(rows) * static_cast<double>(cols);
  const double bytes = dtype_bytes(w.dtype);
  const bool layernorm = op_ == RowOp::kLayernorm;
  costmodel::KernelProfile p;
  // What the analytic model's row-op path reads (costmodel/row_op_model.h).
  p.row.rows = rows;
  p.row.cols = cols;
  p.row.elem_bytes = dtype_bytes(w.dtype);
  p.row.row_threads = t.row_threads;
  p.row.rows_per_block = t.rows_per_block;
  p.row.vec = t.vec;
  p.row.one_pass = t.one_pass != 0;
  p.row.cache = t.cache != 0;
  p.row.prefetch = t.cache == 2;
  p.row.layernorm = layernorm;
  const int passes = p.row.global_reads();

  p.flops = (layernorm ? 8.0 : 5.0) * elems;
  p.dram_bytes = 2.0 * elems * bytes + (layernorm ? 2.0 * static_cast<double>(cols) * bytes : 0.0);
  p.global_bytes = (passes + 1.0) * elems * bytes + (layernorm ? 2.0 * elems * bytes : 0.0);
  p.shared_bytes = static_cast<double>(rows) * (t.row_threads / 32) * 4.0 * (t.one_pass ? 3 : 4);
  p.shared_conflict_ways = 1;
  p.blocks = costmodel::ceil_div(rows, t.rows_per_block);
  p.threads_per_block = t.row_threads * t.rows_per_block;
  p.dynamic_shared_bytes = 0;
  p.ilp = t.vec * (t.cache ? std::min(t.items, 4) : 1);
  p.vector_width = p.row.vector_width();
  p.coalescing = 1.0;
  p.stages = t.cache ? 2 : 1;  // a cached row's later passes do not wait on memory
  p.main_loop_iterations = costmodel::ceil_div(cols, int64_t{t.row_threads} * t.vec) * passes;
  p.l2_reuse = 1.0;
  p.tensor_cores = false;
  return p;
}

KernelInstance RowNormTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                            const Workload& w) const {
  const RowTiling t = tiling(space, c, w);
  const int64_t rows = w.dim("rows"), cols = w.dim("cols");
  KernelInstance k;
  k.profile = profile(space, c, w);
  k.source = row_norm_source(t);
  k.kernel_name = row_kernel_name(op_);
  k.launch.grid = {static_cast<unsigned>(k.profile.blocks), 1, 1};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.buffers.push_back({"X", rows * cols, w.dtype, false, false});
  if (op_ == RowOp::kLayernorm) {
    k.buffers.push_back({"gamma", cols, w.dtype, false, false});
    k.buffers.push_back({"beta", cols, w.dtype, false, false});
  }
  k.buffers.push_back({"Y", rows * cols, w.dtype, true, false});
  k.scalar_args = {static_cast<int32_t>(rows), static_cast<int32_t>(cols)};
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = row_norm_reference_source(op_, w.dtype);
  k.reference_kernel_name = row_reference_kernel_name(op_);
  k.reference_launch.grid = {static_cast<unsigned>(rows), 1, 1};
  k.reference_launch.block = {kRowReferenceThreads, 1, 1};
  k.tolerance = tolerance(w.dtype);
  return k;
}

}  // namespace tuner::templates
