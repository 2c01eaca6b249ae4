#include "runtime/catalog.h"

#include <algorithm>
#include <stdexcept>

#include "templates/registry.h"
#include "templates/workload.h"
#include "tuner/template_version.h"

namespace tuner::runtime {

namespace {

/// Tuner's own templates, not one a process registered (a user kernel of `tuner tune --kernel`'s).
bool builtin(const templates::KernelTemplate* t) { return !dynamic_cast<const templates::UserKernelTemplate*>(t); }

/// The built-in templates' versions: hashed once per process (their kernel files are compiled in).
const std::map<std::string, std::string, std::less<>>& builtin_versions() {
  static const std::map<std::string, std::string, std::less<>> versions = [] {
    std::map<std::string, std::string, std::less<>> v;
    for (const auto* t : templates::all_templates())
      if (builtin(t)) v[t->name()] = template_hash(*t);
    return v;
  }();
  return versions;
}

/// The built-in ops, in registration order.
const std::vector<std::string>& builtin_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (const auto* t : templates::all_templates())
      if (builtin(t) && std::find(v.begin(), v.end(), t->op()) == v.end())
        v.push_back(t->op());
    return v;
  }();
  return ops;
}

}  // namespace

bool Catalog::builtin_op(std::string_view op) {
  return std::find(builtin_ops().begin(), builtin_ops().end(), op) != builtin_ops().end();
}

Catalog::Catalog(std::vector<std::unique_ptr<const templates::UserKernelTemplate>> user) : user_(std::move(user)) {
  for (const auto* t : templates::all_templates()) {
    if (!builtin(t)) continue;  // a process's own registrations: not ours
    by_name_.emplace(t->name(), Entry{t, builtin_versions().at(t->name())});
  }
  for (const auto& u : user_) {
    const std::string name = u->name();
    if (builtin_op(name))
      throw std::invalid_argument("user kernel '" + name + "' (" + u->spec().path + ") is named like a built-in op; "
                                  "allowed: a name of no built-in op or template");
    if (by_name_.count(name))
      throw std::invalid_argument("user kernel '" + name + "' (" + u->spec().path + ") is named like " +
                                  (builtin(by_name_.at(name).tmpl) ? "a built-in template"
                                                                   : "another user kernel of the options") +
                                  "; allowed: one user kernel per name, none named like a built-in template");
    by_name_.emplace(name, Entry{u.get(), template_hash(*u)});
  }
}

const templates::KernelTemplate* Catalog::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.tmpl;
}

std::string Catalog::version(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? std::string() : it->second.version;
}

const templates::UserKernelTemplate* Catalog::user_op(std::string_view op) const {
  for (const auto& u : user_)
    if (u->op() == op) return u.get();
  return nullptr;
}

templates::Workload Catalog::parse(std::string_view op, std::string_view shape, std::string_view dtype) const {
  // A user kernel's sizes go to 2^40, as its spec's and `tune --shape`'s do.
  if (const auto* u = user_op(op))
    return templates::parse_workload_of(op, u->size_names(), shape, dtype, templates::kMaxUserSize);
  if (!builtin_op(op)) {
    std::string allowed;
    for (const auto& o : builtin_ops()) allowed += (allowed.empty() ? "" : ", ") + o;
    for (const auto& u : user_) allowed += ", " + u->op() + " (user kernel)";
    throw std::invalid_argument("unknown op '" + std::string(op) + "'; allowed: " + allowed);
  }
  return templates::parse_workload(op, shape, dtype);
}

}  // namespace tuner::runtime
