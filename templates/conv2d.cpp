#include "templates/conv2d.h"

#include <algorithm>

namespace tuner::templates {

namespace {


std::vector<search::Knob> conv_knobs(bool reduced) {
  if (reduced) {
    return {
        {"BM", {32, 128}, "block tile: output pixels"},
        {"BN", {32, 64}, "block tile: filters"},
        {"TM", {2, 8}, "register tile rows per thread"},
        {"TN", {2, 4}, "register tile columns per thread"},
        {"BK", {8, 32}, "taps per shared slab"},
        {"STAGES", {1, 2}, "1: load, sync, compute; 2: register double buffering"},
    };
  }
  return {
      {"BM", {16, 32, 64, 128, 256}, "block tile: output pixels"},
      {"BN", {16, 32, 64, 128}, "block tile: filters"},
      {"TM", {1, 2, 4, 8}, "register tile rows per thread"},
      {"TN", {1, 2, 4, 8}, "register tile columns per thread"},
      {"BK", {4, 8, 16, 32}, "taps per shared slab"},
      {"STAGES", {1, 2}, "1: load, sync, compute; 2: register double buffering"},
  };
}

ConvTiling conv_tiling_of(const search::ConfigView& v, DType d) {
  ConvTiling t;
  t.dtype = d;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.tm = static_cast<int>(v["TM"]);
  t.tn = static_cast<int>(v["TN"]);
  t.bk = static_cast<int>(v["BK"]);
  t.stages = static_cast<int>(v["STAGES"]);
  return t;
}

std::vector<search::Constraint> conv_constraints(const DeviceLimits& limits) {
  return {
      {"BM % TM == 0 and BN % TN == 0",
       [](const search::ConfigView& v) { return v["BM"] % v["TM"] == 0 && v["BN"] % v["TN"] == 0; }},
      {"64 <= threads <= " + std::to_string(std::min(512, limits.max_threads_per_block)),
       [max = std::min(512, limits.max_threads_per_block)](const search::ConfigView& v) {
         const int64_t threads = (v["BM"] / v["TM"]) * (v["BN"] / v["TN"]);
         return threads >= 64 && threads <= max;
       }},
      {"(BM + BN) * BK <= 32 staged values per thread", [](const search::ConfigView& v) {
         const int64_t threads = (v["BM"] / v["TM"]) * (v["BN"] / v["TN"]);
         return (v["BM"] + v["BN"]) * v["BK"] <= 32 * threads;
       }},
      // Beyond 48 KiB a block needs more staged values per thread than the constraint above allows.
      {"shared memory <= min(48 KiB, " + std::to_string(limits.max_shared_per_block_bytes) + " bytes)",
       [max = std::min(48 * 1024, limits.max_shared_per_block_bytes)](const search::ConfigView& v) {
         return v["STAGES"] * v["BK"] * (v["BM"] + v["BN"]) * 4 <= max;
       }},
  };
}

}  // namespace

ConvDims conv_dims(const Workload& w) {
  return {w.dim("N"), w.dim("H"), w.dim("W"), w.dim("C"), w.dim("K"), w.dim("R"), w.dim("S"), w.dim("stride"),
          w.dim("pad"), w.dim("dilation"), conv_output_p(w), conv_output_q(w)};
}

KernelInstance conv2d_contract_instance(const Workload& w) {
  Conv2dTemplate simt;
  const auto space = simt.reduced_space(w, DeviceLimits{});
  return simt.instantiate(space, space.at(0), w);
}

int64_t conv_output_p(const Workload& w) {
  return (w.dim("H") + 2 * w.dim("pad") - w.dim("dilation") * (w.dim("R") - 1) - 1) / w.dim("stride") + 1;
}
int64_t conv_output_q(const Workload& w) {
  return (w.dim("W") + 2 * w.dim("pad") - w.dim("dilation") * (w.dim("S") - 1) - 1) / w.dim("stride") + 1;
}

double Conv2dTemplate::tolerance(DType d) {
  // f32: fp32 accumulation over R*S*C taps against double (gemm_f32's 1e-4). f16/bf16: operands are
  // the same rounded values in both; the output's rounding dominates: one f16 ulp is 2^-10 of an
  // element (2e-3), one bf16 ulp 2^-7 (1e-2).
  switch (d) {
    case DType::kF16: return 2e-3;
    case DType::kBF16: return 1e-2;
    case DType::kF32: break;
  }
  return 1e-4;
}

std::string Conv2dTemplate::source_text() const { return conv2d_template_text(); }

std::optional<std::string> Conv2dTemplate::unsupported(const Workload& w) const {
  const ConvDims d = conv_dims(w);
  if (d.h + 2 * d.pad < d.dilation * (d.r - 1) + 1 || d.w + 2 * d.pad < d.dilation * (d.s - 1) + 1)
    return "the dilated filter (R=" + std::to_string(d.r) + ", S=" + std::to_string(d.s) + ", dilation=" +
           std::to_string(d.dilation) + ") is larger than the padded input; no output";
  constexpr double kMax = 2147483647.0;  // int indices in the kernel
  for (auto [what, v] : {std::pair<const char*, double>{"input N*H*W*C", double(d.n) * d.h * d.w * d.c},
                         {"filter K*R*S*C", double(d.k) * d.kg()}, {"output N*P*Q*K", double(d.m()) * d.k}})
    if (v > kMax) return std::string(what) + " has " + std::to_string(static_cast<long long>(v)) +
                         " elements; conv2d allows at most 2147483647";
  return std::nullopt;
}

search::ConfigSpace Conv2dTemplate::space(const Workload&, const DeviceLimits& limits) const {
  return search::ConfigSpace(conv_knobs(false), conv_constraints(limits));
}

search::ConfigSpace Conv2dTemplate::reduced_space(const Workload&, const DeviceLimits& limits) const {
  auto cs = conv_constraints(limits);
  cs.push_back({"reduced: STAGES == 2 iff BK == 32",
                [](const search::ConfigView& v) { return (v["STAGES"] == 2) == (v["BK"] == 32); }});
  cs.push_back({"reduced: TN == 4 iff BN == 64", [](const search::ConfigView& v) { return (v["TN"] == 4) == (v["BN"] == 64); }});
  return search::ConfigSpace(conv_knobs(true), std::move(cs));
}

ConvTiling Conv2dTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return conv_tiling_of(search::ConfigView(space, c), d);
}

costmodel::KernelProfile Conv2dTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                 const Workload& w) const {
  const ConvTiling t = tiling(space, c, w.dtype);
  const ConvDims d = conv_dims(w);
  const double bytes = dtype_bytes(w.dtype);
  const int64_t grid_m = costmodel::ceil_div(d.m(), t.bm), grid_n = costmodel::ceil_div(d.k, t.bn);
  const int64_t slabs = costmodel::ceil_div(d.kg(), t.bk);
  const double blocks = static_cast<double>(grid_m * grid_n);
  const int threads = conv_threads(t);

  costmodel::KernelProfile p;
  p.flops = 2.0 * static_cast<double>(d.m()) * static_cast<double>(d.k) * static_cast<double>(d.kg());
  p.dram_bytes = bytes * static_cast<double>(d.n * d.h * d.w * d.c + d.k * d.kg() + d.m() * d.k);
  const double tile_elems = static_cast<double>(t.bm * t.bk + t.bk * t.bn);
  p.global_bytes = blocks * static_cast<double>(slabs) * tile_elems * bytes + bytes * static_cast<double>(d.m() * d.k);
  p.shared_bytes = blocks * static_cast<double>(slabs) *
                   (tile_elems * 4.0 + static_cast<double>(threads) * t.bk * (t.tm + t.tn) * 4.0);
  // As[k][m] is written with stride BM between the threads of a warp that share a tap row: 32-way
  // when BK divides 32 threads' runs; the reads broadcast (A) or are consecutive (B).
  p.shared_conflict_ways = 1.0 + static_cast<double>(std::min(t.bk, 32)) / 32.0;
  p.blocks = grid_m * grid_n;
  p.threads_per_block = threads;
  p.dynamic_shared_bytes = conv_shared_bytes(t);
  p.ilp = t.tm * t.tn;
  p.vector_width = 1;
  p.coalescing = d.c >= t.bk ? 1.0 : std::max(0.25, static_cast<double>(d.c) / t.bk);
  p.stages = t.stages;
  p.main_loop_iterations = slabs;
  p.l2_reuse = 1.0;
  p.tensor_cores = false;
  return p;
}

KernelInstance Conv2dTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                           const Workload& w) const {
  const ConvTiling t = tiling(space, c, w.dtype);
  const ConvDims d = conv_dims(w);
  KernelInstance k;
  k.profile = profile(space, c, w);
  k.source = conv2d_source(t);
  k.kernel_name = kConvKernelName;
  k.launch.grid = {static_cast<unsigned>(k.profile.blocks), 1, 1};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  k.buffers = {{"X", d.n * d.h * d.w * d.c, w.dtype, false, false},
               {"F", d.k * d.kg(), w.dtype, false, false},
               {"Y", d.m() * d.k, w.dtype, true, false}};
  for (int64_t v : {d.n, d.h, d.w, d.c, d.k, d.r, d.s, d.stride, d.pad, d.dilation, d.p, d.q})
    k.scalar_args.push_back(static_cast<int32_t>(v));
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = conv2d_reference_source(w.dtype);
  k.reference_kernel_name = kConvReferenceKernelName;
  const int64_t rows16 = costmodel::ceil_div(d.m(), 16);
  const int64_t y = std::min<int64_t>(rows16, 65535);
  k.reference_launch.grid = {static_cast<unsigned>(costmodel::ceil_div(d.k, 16)), static_cast<unsigned>(y),
                             static_cast<unsigned>(costmodel::ceil_div(rows16, y))};
  k.reference_launch.block = {16, 16, 1};
  k.tolerance = tolerance(w.dtype);
  return k;
}

}  // namespace tuner::templates
