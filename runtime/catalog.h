// catalog.h: the kernel templates one Runtime launches: tuner's built-in templates and the user kernels its
// options name (RuntimeOptions::user_kernels). A user kernel is read from its files when the Runtime opens and
// belongs to that Runtime: it is never registered for the whole process, so Runtimes of different kernels, or of
// one kernel edited between them, live side by side in one program and in any thread.
//
// For each template: its current version hash (records of another are left out) and, for a user kernel's op, the
// shape parsing of its sizes (a built-in op's shapes parse through templates/workload.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "templates/kernel_template.h"
#include "templates/user_kernel.h"

namespace tuner::runtime {

class Catalog {
 public:
  /// The built-in templates and `user` (an op and template name each; none may be a built-in template's name or
  /// a built-in op's, nor another user kernel's: std::invalid_argument names the clash).
  explicit Catalog(std::vector<std::unique_ptr<const templates::UserKernelTemplate>> user = {});

  /// The template of that name; nullptr when this catalog has none.
  const templates::KernelTemplate* find(const std::string& name) const;
  /// The template's current version hash (as records store it); empty when unknown.
  std::string version(const std::string& name) const;
  /// Whether a built-in template implements this op (gemm, softmax, ...).
  static bool builtin_op(std::string_view op);
  /// The user kernel whose op this is; nullptr for any other op.
  const templates::UserKernelTemplate* user_op(std::string_view op) const;
  /// A workload of a built-in op, or of a user kernel's op over its spec's sizes. Throws std::invalid_argument
  /// naming the bad value (unknown op, unknown or missing size, ...).
  templates::Workload parse(std::string_view op, std::string_view shape, std::string_view dtype) const;

 private:
  struct Entry {
    const templates::KernelTemplate* tmpl;
    std::string version;
  };
  std::vector<std::unique_ptr<const templates::UserKernelTemplate>> user_;
  std::map<std::string, Entry, std::less<>> by_name_;
};

}  // namespace tuner::runtime
