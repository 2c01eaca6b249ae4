#include "templates/conv2d_tc.h"

#include "templates/kernel_files.h"

#include <algorithm>

#include "templates/conv2d.h"
#include "templates/gemm_tc.h"

namespace tuner::templates {

namespace {


std::vector<search::Knob> conv_tc_knobs(bool reduced) {
  if (reduced) {
    return {
        {"BM", {64, 128}, "block tile: output pixels"},
        {"BN", {64, 128}, "block tile: filters"},
        {"BK", {32, 64}, "taps per pipeline stage"},
        {"WM", {32, 64}, "warp tile rows"},
        {"WN", {32, 64}, "warp tile columns"},
        {"STAGES", {2, 3, 4}, "cp.async pipeline stages"},
    };
  }
  return {
      {"BM", {32, 64, 128, 256}, "block tile: output pixels"},
      {"BN", {32, 64, 128}, "block tile: filters"},
      {"BK", {16, 32, 64}, "taps per pipeline stage"},
      {"WM", {16, 32, 64}, "warp tile rows"},
      {"WN", {16, 32, 64}, "warp tile columns"},
      {"STAGES", {2, 3, 4, 5}, "cp.async pipeline stages"},
  };
}

ConvTcTiling conv_tc_tiling_of(const search::ConfigView& v, DType d) {
  ConvTcTiling t;
  t.dtype = d;
  t.bm = static_cast<int>(v["BM"]);
  t.bn = static_cast<int>(v["BN"]);
  t.bk = static_cast<int>(v["BK"]);
  t.wm = static_cast<int>(v["WM"]);
  t.wn = static_cast<int>(v["WN"]);
  t.stages = static_cast<int>(v["STAGES"]);
  return t;
}

std::vector<search::Constraint> conv_tc_constraints(const DeviceLimits& limits) {
  std::vector<search::Constraint> out = tc_warp_tile_constraints(limits);  // as gemm_tc_mma
  out.push_back({"shared memory <= " + std::to_string(limits.max_shared_per_block_bytes) + " bytes per block",
                 [max = limits.max_shared_per_block_bytes](const search::ConfigView& v) {
                   return conv_tc_shared_bytes(conv_tc_tiling_of(v, DType::kF16)) <= max;
                 }});
  return out;
}

}  // namespace

std::string Conv2dTcTemplate::source_text() const {
  return kernel_files_text({"conv2d_tc.cuh", "conv2d_reference.cuh"});
}

std::optional<std::string> Conv2dTcTemplate::unsupported(const Workload& w) const { return Conv2dTemplate().unsupported(w); }

search::ConfigSpace Conv2dTcTemplate::space(const Workload&, const DeviceLimits& limits) const {
  return search::ConfigSpace(conv_tc_knobs(false), conv_tc_constraints(limits));
}

search::ConfigSpace Conv2dTcTemplate::reduced_space(const Workload&, const DeviceLimits& limits) const {
  auto cs = conv_tc_constraints(limits);
  // 4 configs (a tensor-core conv config takes NVRTC several seconds): square block and warp tiles.
  cs.push_back({"reduced: BN == BM and WN == WM",
                [](const search::ConfigView& v) { return v["BN"] == v["BM"] && v["WN"] == v["WM"]; }});
  cs.push_back({"reduced: STAGES == 2 + (BM == 128) + (BK == 64)",
                [](const search::ConfigView& v) { return v["STAGES"] == 2 + (v["BM"] == 128) + (v["BK"] == 64); }});
  return search::ConfigSpace(conv_tc_knobs(true), std::move(cs));
}

ConvTcTiling Conv2dTcTemplate::tiling(const search::ConfigSpace& space, const search::Config& c, DType d) {
  return conv_tc_tiling_of(search::ConfigView(space, c), d);
}

costmodel::KernelProfile Conv2dTcTemplate::profile(const search::ConfigSpace& space, const search::Config& c,
                                                   const Workload& w) const {
  const ConvTcTiling t = tiling(space, c, w.dtype);
  const int64_t m = w.dim("N") * conv_output_p(w) * conv_output_q(w);
  const int64_t kg = w.dim("R") * w.dim("S") * w.dim("C");
  const int64_t k = w.dim("K");
  const int64_t grid_m = costmodel::ceil_div(m, t.bm), grid_n = costmodel::ceil_div(k, t.bn);
  const int64_t slabs = costmodel::ceil_div(kg, t.bk);
  const double tiles = static_cast<double>(grid_m * grid_n);
  const int warps = (t.bm / t.wm) * (t.bn / t.wn);

  costmodel::KernelProfile p;
  p.flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(kg);
  p.dram_bytes = 2.0 * static_cast<double>(w.dim("N") * w.dim("H") * w.dim("W") * w.dim("C") + k * kg + m * k);
  const double tile_bytes = static_cast<double>((t.bm + t.bn) * t.bk) * 2.0;
  p.global_bytes = tiles * static_cast<double>(slabs) * tile_bytes + 2.0 * static_cast<double>(m * k);
  p.shared_bytes = tiles * static_cast<double>(slabs) *
                   (tile_bytes + static_cast<double>(warps) * static_cast<double>(t.wm + t.wn) * t.bk * 2.0);
  p.shared_conflict_ways = 1;  // XOR swizzle
  p.blocks = grid_m * grid_n;
  p.threads_per_block = conv_tc_threads(t);
  p.dynamic_shared_bytes = conv_tc_shared_bytes(t);
  p.ilp = (t.wm / 16) * (t.wn / 8);
  p.vector_width = w.dim("C") % 8 == 0 ? 8 : 1;  // else the im2col gather is element-wise
  p.coalescing = w.dim("C") % 8 == 0 ? 1.0 : 0.25;
  p.stages = t.stages;
  p.main_loop_iterations = slabs;
  p.l2_reuse = 1.0;
  p.tensor_cores = true;
  return p;
}

KernelInstance Conv2dTcTemplate::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                             const Workload& w) const {
  KernelInstance k = conv2d_contract_instance(w);
  k.profile = profile(space, c, w);
  k.source = conv2d_tc_source(tiling(space, c, w.dtype));
  k.kernel_name = kConvTcKernelName;
  k.launch.grid = {static_cast<unsigned>(k.profile.blocks), 1, 1};
  k.launch.block = {static_cast<unsigned>(k.profile.threads_per_block), 1, 1};
  k.launch.dynamic_shared_bytes = k.profile.dynamic_shared_bytes;
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  return k;
}

}  // namespace tuner::templates
