#include "templates/conv2d_gemm_f32.h"

#include "templates/conv2d.h"
#include "templates/kernel_files.h"

namespace tuner::templates {

namespace {

/// A gemm_f32 space with CP_ASYNC offered at 0 only: the transposed filter is read along K.
search::ConfigSpace without_cp_async(const search::ConfigSpace& gemm) {
  std::vector<search::Knob> knobs = gemm.knobs();
  for (auto& k : knobs)
    if (k.name == "CP_ASYNC") {
      k.values = {0};
      k.doc = "0 only here: B (the filter, transposed) is read along K, not copied along N";
    }
  return search::ConfigSpace(std::move(knobs), gemm.constraints());
}

}  // namespace

Workload Conv2dGemmF32Template::as_gemm(const Workload& w) {
  return parse_workload("gemm", "M=" + std::to_string(w.dim("N") * w.dim("H") * w.dim("W")) +
                                    ",N=" + std::to_string(w.dim("K")) + ",K=" + std::to_string(w.dim("C")),
                        "f32");
}

std::string Conv2dGemmF32Template::source_text() const {
  // gemm_f32's kernel, conv2d's reference, and the defines that make the kernel the 1x1 conv.
  return kernel_files_text({"gemm_f32.cuh", "conv2d_reference.cuh"}) + "#define B_TRANS 1\n#define CONV_1X1 1\n";
}

std::optional<std::string> Conv2dGemmF32Template::unsupported(const Workload& w) const {
  if (auto why = Conv2dTemplate().unsupported(w)) return why;
  if (w.dim("R") != 1 || w.dim("S") != 1 || w.dim("stride") != 1 || w.dim("pad") != 0)
    return name() + " takes 1x1 convolutions with stride 1 and pad 0 (a plain GEMM), got R=" +
           std::to_string(w.dim("R")) + ", S=" + std::to_string(w.dim("S")) + ", stride=" +
           std::to_string(w.dim("stride")) + ", pad=" + std::to_string(w.dim("pad")) +
           "; conv2d_igemm_simt takes any shape";
  return gemm_.unsupported(as_gemm(w));
}

search::ConfigSpace Conv2dGemmF32Template::space(const Workload& w, const DeviceLimits& limits) const {
  return without_cp_async(gemm_.space(as_gemm(w), limits));
}

search::ConfigSpace Conv2dGemmF32Template::reduced_space(const Workload& w, const DeviceLimits& limits) const {
  return without_cp_async(gemm_.reduced_space(as_gemm(w), limits));
}

costmodel::KernelProfile Conv2dGemmF32Template::profile(const search::ConfigSpace& space, const search::Config& c,
                                                        const Workload& w) const {
  return gemm_.profile(space, c, as_gemm(w));
}

KernelInstance Conv2dGemmF32Template::instantiate(const search::ConfigSpace& space, const search::Config& c,
                                                  const Workload& w) const {
  // The conv's instance (buffers X, F, Y, its scalars, reference and tolerance), with the GEMM's kernel.
  KernelInstance k = conv2d_contract_instance(w);
  const KernelInstance g = gemm_.instantiate(space, c, as_gemm(w));
  k.profile = g.profile;
  k.source = conv2d_gemm_f32_source(GemmF32Template::tiling(space, c));
  k.kernel_name = "conv2d_gemm_simt";
  k.launch = g.launch;
  k.flops = g.flops;
  k.bytes = g.bytes;
  return k;
}

}  // namespace tuner::templates
