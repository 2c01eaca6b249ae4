// A user-written kernel as a KernelTemplate: `tuner tune --kernel FILE.cu --spec FILE.json` builds one
// from a UserKernelSpec (user_kernel_spec.h) and registers it (registry.h), so the tuning loop compiles,
// measures, checks and stores it exactly as it does the built-in templates.
//
// The source of a config is the kernel file's text after one #define per knob and a #line directive
// (NVRTC's errors name the user's file and line); sizes are not macros (they are formulas' names and
// reach the kernel as scalar arguments). The template's op and name are the spec's name; its version
// text is the kernel file's text plus the spec's formulas, so a changed kernel is a new version. On sim
// devices the analytic model estimates a config from the spec's flops and bytes, the launch geometry,
// the optional ilp and vector_width, and the cubin's registers: a roofline with occupancy, no more.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "templates/kernel_template.h"
#include "templates/user_kernel_spec.h"

namespace tuner::templates {

class UserKernelTemplate final : public KernelTemplate {
 public:
  explicit UserKernelTemplate(UserKernelSpec spec);

  std::string name() const override { return spec_.name; }
  std::string op() const override { return spec_.name; }
  std::vector<DType> dtypes() const override { return {spec_.dtype}; }
  std::string source_text() const override;
  std::optional<std::string> unsupported(const Workload& w) const override;
  search::ConfigSpace space(const Workload& w, const DeviceLimits& limits) const override;
  search::ConfigSpace reduced_space(const Workload& w, const DeviceLimits& limits) const override {
    return space(w, limits);
  }
  costmodel::KernelProfile profile(const search::ConfigSpace& space, const search::Config& c,
                                   const Workload& w) const override;
  KernelInstance instantiate(const search::ConfigSpace& space, const search::Config& c,
                             const Workload& w) const override;
  /// The spec's first output buffer's dtype.
  DType output_dtype(const Workload& w, const std::string& config_json) const override;

  /// The workload of the spec's sizes (op = name, dims = sizes, dtype).
  Workload workload() const;
  /// The spec's size names in its order: the dimensions of its workloads.
  std::vector<std::string> size_names() const;
  const UserKernelSpec& spec() const { return spec_; }
  /// Why no config can launch for every knob value, when an expression of the launch fails for all of them (a grid
  /// that divides by zero): the first config's error, e.g. "grid[0] 'C / (TILE - TILE)': division by zero". nullopt
  /// when the first config's launch evaluates.
  std::optional<std::string> launch_error(const Workload& w) const;
  /// Why no config is valid on a device with these limits (called when the space is empty): a constraint that
  /// fails to evaluate ("constraints[0] 'BLOCK / (VEC - VEC)': division by zero"), one that holds for no config,
  /// or the launch limit the configs that pass the constraints break. Scans up to 200,000 configs.
  std::string no_config_reason(const Workload& w, const DeviceLimits& limits) const;
  /// Bytes of all the spec's buffers at w's sizes (what compulsory_bytes is for a built-in op); 0 when a buffer's
  /// formula does not evaluate (unsupported() says why).
  double buffer_bytes(const Workload& w) const { return bytes_of(w, false); }
  /// Bytes of the spec's output buffers alone (the worker keeps a reference copy of each).
  double output_bytes(const Workload& w) const { return bytes_of(w, true); }

 private:
  /// Bytes of the spec's buffers (its output buffers alone) at w's sizes; 0 when a formula does not evaluate.
  double bytes_of(const Workload& w, bool outputs_only) const;
  /// Knob values and sizes: what the formulas read.
  ExprScope scope(const ExprScope& knobs, const Workload& w) const;
  std::string source_for(const ExprScope& knobs) const;
  LaunchGeometry launch_for(const UserLaunch& l, const ExprScope& scope) const;

  UserKernelSpec spec_;
  std::string source_path_;  ///< The kernel file's canonical path, as compiled sources name it.
};

/// Reads the kernel file, the headers beside it it includes, and the spec (sizes overridden by `shape`,
/// "N=4096,..." or empty), and builds the template, registered nowhere (the runtime library keeps its own).
/// Throws SpecError with one line on a bad or unreadable file, naming the files as `kernel_label` and `spec_label`
/// (the CLI's flags; the runtime library names its options' fields).
std::unique_ptr<UserKernelTemplate> load_user_kernel(const std::string& kernel_path, const std::string& spec_path,
                                                    const std::string& shape, const std::string& kernel_label = "--kernel",
                                                    const std::string& spec_label = "--spec");
/// load_user_kernel, then registers the template (registry.h) and its op's sizes (workload.h) for the rest of
/// the process, as `tuner tune --kernel` does. Throws SpecError with one line on a bad or unreadable file.
const UserKernelTemplate& register_user_kernel(const std::string& kernel_path, const std::string& spec_path,
                                               const std::string& shape);

}  // namespace tuner::templates
