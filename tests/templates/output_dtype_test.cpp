// KernelTemplate::output_dtype reads the type a config writes from its knobs alone (query --best asks it of every
// row; building each workload's space to instantiate the config took 20 s for 800 rows). It must agree with the
// output buffer instantiate() gives, for every template, dtype and config of its reduced space, and for a user kernel.
#include <gtest/gtest.h>

#include <string>

#include "templates/registry.h"
#include "templates/user_kernel.h"
#include "tuner/device_limits.h"

namespace tuner::templates {
namespace {

std::string shape_for_output_test(const std::string& op) {
  if (op == "gemm") return "M=256,N=256,K=256";
  if (op == "batched_gemm") return "B=2,M=128,N=128,K=128";
  if (op == "conv2d") return "N=1,H=16,W=16,C=16,K=32,R=3,S=3,stride=1,pad=1";
  return "rows=64,cols=512";
}

DType instantiated_output(const KernelTemplate& t, const search::ConfigSpace& space, const search::Config& c,
                          const Workload& w) {
  for (const auto& b : t.instantiate(space, c, w).buffers)
    if (b.output) return b.dtype;
  ADD_FAILURE() << t.name() << " has no output buffer";
  return w.dtype;
}

TEST(OutputDtype, TheKnobsSayWhatInstantiateWrites) {
  const DeviceLimits limits = limits_of_recorded("sim:h100-sxm", 9, 0, 132);
  int f32_from_f16 = 0, checked = 0;
  for (const auto* t : all_templates()) {
    for (DType d : t->dtypes()) {
      const Workload w = parse_workload(t->op(), shape_for_output_test(t->op()), to_string(d));
      if (t->unsupported(w) || t->unsupported_on(limits)) continue;
      const search::ConfigSpace space = t->reduced_space(w, limits);
      for (uint64_t i = 0; i < space.size(); ++i) {
        const search::Config c = space.at(i);
        const DType want = instantiated_output(*t, space, c, w);
        EXPECT_EQ(t->output_dtype(w, space.to_json_string(c)), want) << t->name() << " " << space.to_json_string(c);
        f32_from_f16 += want == DType::kF32 && d != DType::kF32;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(f32_from_f16, 0) << "the case covers configs writing f32 for an f16/bf16 workload (OUT_F32)";
}

TEST(OutputDtype, AUserKernelWritesItsSpecsOutputBuffer) {
  const std::string ex = std::string(TUNER_SOURCE_DIR) + "/examples/user_kernel/";
  const auto t = load_user_kernel(ex + "saxpy.cu", ex + "saxpy.json", "");
  const Workload w = t->workload();
  const DeviceLimits limits = limits_of_recorded("sim:h100-sxm", 9, 0, 132);
  const search::ConfigSpace space = t->space(w, limits);
  ASSERT_GT(space.size(), 0u);
  EXPECT_EQ(t->output_dtype(w, space.to_json_string(space.at(0))), instantiated_output(*t, space, space.at(0), w));
}

}  // namespace
}  // namespace tuner::templates
