#include "tuner/template_version.h"

#include "tuner/compile_cache.h"

namespace tuner {

std::string template_hash(const templates::KernelTemplate& t) { return sha256_hex(t.source_text()).substr(0, 16); }

}  // namespace tuner
