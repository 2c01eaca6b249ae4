// template_version.h: the version hash every record of a kernel template carries (a prefix of the
// SHA-256 of the template's source text), shared by the tuner, the CLI and the runtime library, so a
// record is judged current the same way everywhere.
#pragma once

#include <string>

#include "templates/kernel_template.h"

namespace tuner {

/// The version hash of a template (16 hex digits of the SHA-256 of its source text).
std::string template_hash(const templates::KernelTemplate& t);

}  // namespace tuner
