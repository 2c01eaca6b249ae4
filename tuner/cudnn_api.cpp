#include "tuner/cudnn_conv.h"

#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <vector>

#if __has_include(<cudnn.h>)
#include "tuner/cudnn_api.h"
#define TUNER_HAVE_CUDNN 1
#endif

namespace tuner {

#ifdef TUNER_HAVE_CUDNN

namespace {

void* open_cudnn() {
  for (const char* name : {"libcudnn.so.9", "libcudnn.so", TUNER_CUDA_HOME "/lib64/libcudnn.so.9"})
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
  dlerror();  // clear the failed opens' errors
  return nullptr;
}

}  // namespace

CudnnApi::~CudnnApi() {
  if (lib) dlclose(lib);
}

bool CudnnApi::load(std::string* error) {
  lib = open_cudnn();
  if (!lib) {
    *error = "cuDNN (libcudnn.so.9) not found";
    return false;
  }
#define TUNER_RESOLVE(fn)                                              \
  fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn));             \
  if (!fn) {                                                           \
    dlerror();                                                         \
    *error = std::string("cuDNN lacks ") + #fn;                        \
    return false;                                                      \
  }
  TUNER_CUDNN_LEGACY_FUNCTIONS(TUNER_RESOLVE)
#undef TUNER_RESOLVE
#define TUNER_RESOLVE_OPTIONAL(fn)                                     \
  fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn));             \
  if (!fn && graph_missing.empty()) graph_missing = std::string("cuDNN lacks ") + #fn;
  TUNER_CUDNN_GRAPH_FUNCTIONS(TUNER_RESOLVE_OPTIONAL)
#undef TUNER_RESOLVE_OPTIONAL
  cudnnGetLastErrorString = reinterpret_cast<decltype(&::cudnnGetLastErrorString)>(dlsym(lib, "cudnnGetLastErrorString"));
  dlerror();  // a missing optional entry point leaves nothing behind
  return true;
}

bool CudnnApi::ok(cudnnStatus_t st, const char* call, std::string* error) const {
  if (st == CUDNN_STATUS_SUCCESS) return true;
  *error = std::string(call) + " failed: " + (cudnnGetErrorString ? cudnnGetErrorString(st) : std::to_string(st));
  if (cudnnGetLastErrorString) {  // which check failed ("_nbDims < 1"): what a status alone never says
    char reason[512] = "";
    cudnnGetLastErrorString(reason, sizeof reason);
    std::string r(reason);
    std::replace(r.begin(), r.end(), '\n', ' ');
    if (!r.empty()) *error += " (" + r + ")";
  }
  return false;
}

std::vector<std::string> cudnn_missing_entry_points(std::string* error) {
  void* lib = open_cudnn();
  if (!lib) {
    *error = "cuDNN (libcudnn.so.9) not found";
    return {};
  }
  std::vector<std::string> missing;
#define TUNER_CHECK(fn) \
  if (!dlsym(lib, #fn)) missing.push_back(#fn);
  TUNER_CUDNN_LEGACY_FUNCTIONS(TUNER_CHECK)
  TUNER_CUDNN_GRAPH_FUNCTIONS(TUNER_CHECK)
#undef TUNER_CHECK
  dlerror();
  dlclose(lib);
  return missing;
}

#else  // built without cuDNN's headers

std::vector<std::string> cudnn_missing_entry_points(std::string* error) {
  *error = "tuner was built without cuDNN's headers";
  return {};
}

#endif

}  // namespace tuner
