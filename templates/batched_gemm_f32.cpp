#include "templates/batched_gemm_f32.h"

#include "templates/kernel_files.h"

namespace tuner::templates {

namespace {

/// One batch of the workload as a gemm workload.
Workload one_batch(const Workload& w) {
  return parse_workload("gemm", "M=" + std::to_string(w.dim("M")) + ",N=" + std::to_string(w.dim("N")) +
                                    ",K=" + std::to_string(w.dim("K")), "f32");
}

}  // namespace

std::string BatchedGemmF32Template::source_text() const {
  // gemm_f32's kernel files, and the BATCHED define that makes them the batched kernels.
  return kernel_files_text({"gemm_f32.cuh", "gemm_f32_reference.cuh"}) + "#define BATCHED 1\n";
}

std::optional<std::string> BatchedGemmF32Template::unsupported(const Workload& w) const {
  if (auto why = gemm_.unsupported(one_batch(w))) return why;
  if (w.dim("B") > 65535) return "B=" + std::to_string(w.dim("B")) + " is past the grid's z limit (B <= 65535)";
  return std::nullopt;
}

search::ConfigSpace BatchedGemmF32Template::space(const Workload& w, const DeviceLimits& limits) const {
  return gemm_.space(one_batch(w), limits);
}

search::ConfigSpace BatchedGemmF32Template::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  return gemm_.reduced_space(one_batch(w), limits);
}

costmodel::KernelProfile BatchedGemmF32Template::profile(const search::ConfigSpace& space, const search::Config& c,
                                                         const Workload& w) const {
  costmodel::KernelProfile p = gemm_.profile(space, c, one_batch(w));
  const double b = static_cast<double>(w.dim("B"));
  p.flops *= b;
  p.dram_bytes *= b;
  p.global_bytes *= b;
  p.shared_bytes *= b;
  p.blocks *= w.dim("B");
  return p;
}

KernelInstance BatchedGemmF32Template::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                                   const Workload& w) const {
  const int64_t B = w.dim("B");
  KernelInstance k = gemm_.instantiate(space, c, one_batch(w));
  const unsigned per_batch_blocks = k.launch.grid[0];
  k.profile = profile(space, c, w);
  k.source = gemm_f32_batched_source(GemmF32Template::tiling(space, c));
  k.kernel_name = kGemmBatchedKernelName;
  k.launch.grid = {per_batch_blocks, 1, static_cast<unsigned>(B)};
  for (auto& buf : k.buffers) buf.elements *= B;
  k.flops = k.profile.flops;
  k.bytes = k.profile.dram_bytes;
  k.reference_source = gemm_f32_batched_reference_source();
  k.reference_kernel_name = kGemmBatchedReferenceKernelName;
  k.reference_launch.grid[2] = static_cast<unsigned>(B);
  return k;
}

}  // namespace tuner::templates
