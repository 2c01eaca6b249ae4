// The Runtime of include/tuner/runtime.h: opening (records and device), lookups (cached per
// problem), and launches (compile once through the NVRTC cache, load once per CUDA context, a
// zeroed workspace per context and stream). Every entry point catches everything and turns it into
// a Status plus the thread's last_error() line.
#include "tuner/runtime.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <tuple>

#include "costmodel/gpu_spec.h"
#include "runtime/catalog.h"
#include "runtime/kernel_choice.h"
#include "runtime/tuned_records.h"
#include "templates/launch_check.h"
#include "templates/registry.h"
#include "templates/workload.h"
#include "tuner/compile_cache.h"
#include "tuner/cuda_driver.h"
#include "tuner/device_limits.h"
#include "tuner/instance_compile.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {

namespace {

thread_local std::string t_last_error;

/// Thrown inside the runtime; every API function turns it into its Status.
struct Failure : std::runtime_error {
  Failure(Status s, const std::string& what) : std::runtime_error(what), status(s) {}
  Status status;
};

template <class F>
Status guarded(F&& body) noexcept {
  try {
    body();
    return Status::kOk;
  } catch (const Failure& f) {
    t_last_error = f.what();
    return f.status;
  } catch (const std::bad_alloc&) {
    t_last_error = "out of host memory";
    return Status::kInternal;
  } catch (const std::exception& e) {
    t_last_error = e.what();
    return Status::kInternal;
  } catch (...) {
    t_last_error = "unknown failure";
    return Status::kInternal;
  }
}

void check(CUresult rc, const char* call, Status status = Status::kLaunchError) {
  if (rc != CUDA_SUCCESS) throw Failure(status, std::string(call) + " failed: " + cuda_error_text(rc));
}

templates::DType dtype_of(DType d) {
  switch (d) {
    case DType::kF32: return templates::DType::kF32;
    case DType::kF16: return templates::DType::kF16;
    case DType::kBF16: return templates::DType::kBF16;
  }
  throw Failure(Status::kInvalidArgument, "dtype " + std::to_string(static_cast<int>(d)) + " is not f32, f16 or bf16");
}

/// A kernel loaded into one context.
struct Loaded {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

}  // namespace

const char* status_name(Status s) noexcept {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kInvalidArgument: return "invalid_argument";
    case Status::kNotFound: return "not_found";
    case Status::kNoDevice: return "no_device";
    case Status::kSourceError: return "source_error";
    case Status::kCompileError: return "compile_error";
    case Status::kLaunchError: return "launch_error";
    case Status::kInternal: return "internal";
  }
  return "unknown";
}

std::string last_error() { return t_last_error; }

struct Runtime::Impl {
  RuntimeOptions options;
  runtime::Catalog catalog;
  runtime::TunedRecords tuned;
  runtime::DeviceMatch match;
  templates::DeviceLimits limits;
  bool has_gpu = false;
  CompileCache cache;
  NvrtcBuilder builder{&cache};

  std::mutex mu;  // guards everything below
  std::map<std::string, std::shared_ptr<const runtime::Choice>> choices;             // problem key ->
  /// problem key -> the not_found message: the records do not change, and a lookup where nothing fits tries them all.
  std::map<std::string, std::string> not_found;
  std::map<std::pair<CUcontext, std::string>, Loaded> loaded;                      // (ctx, cubin key) ->
  /// (ctx, stream, template, buffer index) -> memory: a template's own, as a user kernel may leave its workspace in
  /// any state its next launch reads (a built-in's split-K counters must be zero).
  std::map<std::tuple<CUcontext, CUstream, std::string, size_t>, std::pair<CUdeviceptr, size_t>> workspaces;
  CUcontext primary = nullptr;  // retained when a launch found no current context

  Impl(const RuntimeOptions& o, runtime::Catalog c)
      : options(o), catalog(std::move(c)), cache(o.cache_dir.empty() ? CompileCache::default_dir() : o.cache_dir) {}
  ~Impl();

  void find_device();
  std::shared_ptr<const runtime::Choice> choice_for(const Problem& p);
  CUcontext context();
  CUfunction function(CUcontext ctx, const runtime::Choice& c);
  CUdeviceptr workspace(CUcontext ctx, CUstream stream, const std::string& owner, size_t index, size_t bytes);
};

Runtime::Impl::~Impl() {
  const CudaDriver& d = cuda_driver();
  if (!d.error.empty()) return;
  for (auto& [key, l] : loaded) {
    d.cuCtxSetCurrent(key.first);
    d.cuModuleUnload(l.module);
  }
  for (auto& [key, w] : workspaces) {
    d.cuCtxSetCurrent(std::get<0>(key));
    d.cuMemFree(w.first);
  }
  if (primary) {
    CUdevice dev;
    if (d.cuDeviceGet(&dev, options.device_ordinal) == CUDA_SUCCESS) d.cuDevicePrimaryCtxRelease(dev);
  }
}

void Runtime::Impl::find_device() {
  std::string driver_error;
  auto gpus = cuda_devices(&driver_error);
  const bool have = options.device_ordinal >= 0 && options.device_ordinal < static_cast<int>(gpus.size());
  has_gpu = have;
  if (!options.device_name.empty()) {
    match.name = options.device_name;
    const auto r = std::find_if(tuned.records.begin(), tuned.records.end(),
                                [&](const runtime::TunedRecord& t) { return match.accepts(t); });
    const bool sim = match.name.rfind("sim:", 0) == 0 && costmodel::find_gpu_spec(match.name.substr(4));
    if (r == tuned.records.end() && !sim) {
      // A name that is neither recorded nor a sim device would only fail every lookup later.
      std::set<std::string> names;
      for (const auto& t : tuned.records) names.insert(t.device_name);
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
      const std::string allowed = "; allowed: a recorded device (" +
                                  (list.empty() ? std::string("none recorded") : list) +
                                  "), a recorded GPU's name for its replayed records, or sim:<gpu>";
      // Records of older template versions are records: "has no records" sent users looking for a wrong name.
      int64_t stale = 0;
      for (const auto& [op, by_device] : tuned.stale_by_op)
        for (const auto& [name, n] : by_device)
          if (match.names(name)) stale += n;
      if (stale > 0)
        throw Failure(Status::kInvalidArgument,
                      "RuntimeOptions::device_name '" + match.name + "' has " + std::to_string(stale) + " record" +
                          (stale == 1 ? "" : "s") + " in '" + options.source +
                          "', all of other versions of their templates than this runtime builds (re-tune with this "
                          "tuner; `tuner query --all-versions` shows them)" + allowed);
      throw Failure(Status::kInvalidArgument,
                    "RuntimeOptions::device_name '" + match.name + "' has no records in '" + options.source + "'" +
                        allowed);
    }
    limits = r == tuned.records.end() ? limits_of_recorded(match.name, 0, 0, 0)
                                      : limits_of_recorded(match.name, r->cc_major, r->cc_minor, r->sm_count);
    return;
  }
  if (!have)
    throw Failure(Status::kNoDevice, (driver_error.empty() ? "no GPU cuda:" + std::to_string(options.device_ordinal)
                                                           : driver_error) +
                                         "; set RuntimeOptions::device_name to look configs up without a GPU");
  const CudaDeviceInfo& info = gpus[static_cast<size_t>(options.device_ordinal)];
  match = {info.name, true, info.cc_major, info.cc_minor, info.sm_count};
  limits = limits_of(info);
}

/// A built-in op's question no tuning can answer is a wrong question, not a missing record: an output type none of
/// its templates writes (an f16 GEMM's C in bf16, a softmax's in f32), or a shape past every template's limits (a
/// GEMM's C past 2^31 elements). Throws kInvalidArgument naming what is allowed.
static void check_builtin_problem(const templates::Workload& w, std::optional<templates::DType> out,
                                  const templates::DeviceLimits& limits) {
  const std::vector<const templates::KernelTemplate*> ts = templates::templates_for(w.op, w.dtype, limits);
  if (ts.empty()) return;  // none runs on this device: not_found says what the records hold
  std::string reasons;
  bool supported = false;
  for (const auto* t : ts) {
    if (auto why = t->unsupported(w)) reasons += (reasons.empty() ? "" : "; ") + t->name() + ": " + *why;
    else supported = true;
  }
  if (!supported) throw Failure(Status::kInvalidArgument, w.to_string() + " is past what its kernels take (" + reasons + ")");
  if (!out || *out == w.dtype) return;
  // A template writing another type says so through a knob (OUT_F32 on the f16/bf16 GEMMs').
  std::set<std::string> writes = {templates::to_string(w.dtype)};
  for (const auto* t : ts) writes.insert(templates::to_string(t->output_dtype(w, R"({"OUT_F32":1})")));
  if (writes.count(templates::to_string(*out))) return;
  std::string list;
  for (const auto& d : writes) list += (list.empty() ? "" : ", ") + d;
  throw Failure(Status::kInvalidArgument, "no kernel of " + w.op + " " + templates::to_string(w.dtype) + " writes " +
                                              templates::to_string(*out) + "; allowed output dtypes: " + list);
}

std::shared_ptr<const runtime::Choice> Runtime::Impl::choice_for(const Problem& p) {
  const std::string key = p.op + " " + p.shape + " " + std::to_string(static_cast<int>(p.dtype)) + " " + p.output_dtype;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = choices.find(key);
    if (it != choices.end()) return it->second;
    if (auto nf = not_found.find(key); nf != not_found.end()) throw Failure(Status::kNotFound, nf->second);
  }
  templates::Workload w;
  std::optional<templates::DType> out;
  const std::string dtype = templates::to_string(dtype_of(p.dtype));
  // Records left out when read (another template version, a template this runtime does not have) are named, or a
  // database that query shows the record in reads as "no record" here.
  // Only this device's: another GPU's old records are no reason to re-tune this one.
  const auto left_out = [&](const std::map<std::string, std::map<std::string, int64_t>>& counts, const std::string& why) {
    const auto it = counts.find(p.op + " " + dtype);
    int64_t n = 0;
    if (it != counts.end())
      for (const auto& [device, count] : it->second)
        if (match.names(device)) n += count;
    if (n == 0) return std::string();
    return "; " + std::to_string(n) + " record" + (n == 1 ? "" : "s") + " of " + p.op + " " + dtype + " on this device" +
           (n == 1 ? " was" : " were") + " left out as " + why;
  };
  const std::string unknown = left_out(
      tuned.unknown_by_op,
      runtime::Catalog::builtin_op(p.op)
          ? "made by a template this runtime does not have (another tuner build's: re-tune with this tuner)"
          : "made by a template this runtime does not have (a kernel of your own: name its files in "
            "RuntimeOptions::user_kernels)");
  try {
    w = catalog.parse(p.op, p.shape, dtype);
    if (!p.output_dtype.empty()) out = templates::dtype_from_string(p.output_dtype);
  } catch (const std::invalid_argument& e) {
    throw Failure(Status::kInvalidArgument, e.what() + unknown);
  }
  const templates::UserKernelTemplate* user = catalog.user_op(p.op);
  // A user kernel has its spec's dtype only: another is a wrong question, not a missing record. Nor can it take
  // every size its spec parses (an int argument past 2^31, a buffer past 2^36 elements).
  if (user && user->spec().dtype != w.dtype)
    throw Failure(Status::kInvalidArgument, p.op + " is a kernel of your own whose spec's dtype is " +
                                                templates::to_string(user->spec().dtype) + ", not " + dtype +
                                                "; allowed: " + templates::to_string(user->spec().dtype));
  if (user)
    if (auto why = user->unsupported(w)) throw Failure(Status::kInvalidArgument, p.op + " " + p.shape + ": " + *why);
  // A user kernel's output buffers have its spec's types: another is a wrong question too (one of several outputs of
  // different types cannot be asked for alone: the lookup takes the spec's types when none is given).
  if (user && out) {
    std::set<std::string> types;
    std::string first;
    for (const auto& b : user->spec().buffers)
      if (b.role == "output") {
        types.insert(templates::to_string(b.dtype));
        if (first.empty()) first = b.name;
      }
    if (types.size() > 1 || (types.size() == 1 && *types.begin() != templates::to_string(*out))) {
      std::string list;
      for (const auto& t : types) list += (list.empty() ? "" : ", ") + t;
      throw Failure(Status::kInvalidArgument,
                    p.op + " writes its output" + (types.size() > 1 ? "s in " + list : " '" + first + "' in " + list) +
                        " (its spec's), not " + templates::to_string(*out) + "; allowed output dtype: " +
                        (types.size() > 1 ? "none given (the spec's types)" : list));
    }
  }
  if (!user) check_builtin_problem(w, out, limits);
  std::string why;
  auto c = runtime::choose(tuned.records, catalog, match, limits, w, out, options.nearest_shape, &why);
  if (!c) {
    const std::string message =
        why + unknown +
        left_out(tuned.stale_by_op,
                 user ? "made from other texts of the kernel file, its headers or its spec than this "
                        "runtime read (re-tune it, or open the runtime with the files it was tuned with)"
                      : "another template version than this runtime builds (re-tune with this tuner)");
    std::lock_guard<std::mutex> lock(mu);
    not_found.emplace(key, message);
    throw Failure(Status::kNotFound, message);
  }
  auto shared = std::make_shared<const runtime::Choice>(std::move(*c));
  std::lock_guard<std::mutex> lock(mu);
  return choices.emplace(key, shared).first->second;
}

CUcontext Runtime::Impl::context() {
  const CudaDriver& d = cuda_driver();
  // The driver's own advice (a sim: device) is for tuning; a launch needs a GPU.
  if (!d.error.empty())
    throw Failure(Status::kNoDevice, "launching needs a GPU: " + d.error.substr(0, d.error.find("; use a sim:")));
  if (!has_gpu) throw Failure(Status::kNoDevice, "no GPU cuda:" + std::to_string(options.device_ordinal));
  CUcontext ctx = nullptr;
  check(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx) {
    CUdevice dev;
    check(d.cuCtxGetDevice(&dev), "cuCtxGetDevice");
    CUdevice want;
    check(d.cuDeviceGet(&want, options.device_ordinal), "cuDeviceGet");
    if (dev != want)
      throw Failure(Status::kInvalidArgument, "the calling thread's CUDA context is on another GPU than cuda:" +
                                                  std::to_string(options.device_ordinal) + ", which this Runtime serves");
    return ctx;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (!primary) {
    CUdevice dev;
    check(d.cuDeviceGet(&dev, options.device_ordinal), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
  }
  check(d.cuCtxSetCurrent(primary), "cuCtxSetCurrent");
  return primary;
}

CUfunction Runtime::Impl::function(CUcontext ctx, const runtime::Choice& c) {
  const templates::KernelInstance& k = c.instance;
  const CompileRequest req = kernel_request(k, limits);
  const std::string key = CompileCache::key(req, NvrtcBuilder::nvrtc_version());
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = loaded.find({ctx, key});
    if (it != loaded.end()) return it->second.function;
  }
  CompileResult compiled = builder.compile(req);  // outside the lock: compiling takes seconds
  if (!compiled.ok()) throw Failure(Status::kCompileError, "NVRTC failed on " + k.kernel_name + ": " + compiled.log);
  const CudaDriver& d = cuda_driver();
  Loaded l;
  check(d.cuModuleLoadData(&l.module, compiled.cubin.data()), "cuModuleLoadData");
  try {
    check(d.cuModuleGetFunction(&l.function, l.module, k.kernel_name.c_str()), "cuModuleGetFunction");
    int registers = 0, static_shared = 0;
    check(d.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, l.function), "cuFuncGetAttribute");
    check(d.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l.function), "cuFuncGetAttribute");
    if (auto why = templates::launch_problem(k.launch, registers, static_shared, limits))
      throw Failure(Status::kLaunchError, "launch refused: " + *why);
    if (templates::needs_shared_opt_in(k.launch, static_shared))
      check(d.cuFuncSetAttribute(l.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 k.launch.dynamic_shared_bytes),
            "cuFuncSetAttribute (dynamic shared memory)");
  } catch (...) {
    d.cuModuleUnload(l.module);
    throw;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = loaded.emplace(std::make_pair(ctx, key), l);
  if (!inserted) d.cuModuleUnload(l.module);  // another thread loaded it meanwhile
  return it->second.function;
}

CUdeviceptr Runtime::Impl::workspace(CUcontext ctx, CUstream stream, const std::string& owner, size_t index,
                                     size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = workspaces[{ctx, stream, owner, index}];
  if (slot.second >= bytes) return slot.first;
  const CudaDriver& d = cuda_driver();
  if (slot.first) {
    check(d.cuCtxSynchronize(), "cuCtxSynchronize");  // the old one may still be in use on the stream
    d.cuMemFree(slot.first);
    slot = {0, 0};
  }
  CUdeviceptr p = 0;
  check(d.cuMemAlloc(&p, bytes), "cuMemAlloc (workspace)");
  // Zeroed once: kernels leave their workspace (split-K partials, tile counters) zeroed.
  check(d.cuMemsetD32(p, 0u, (bytes + 3) / 4), "cuMemsetD32 (workspace)");
  slot = {p, bytes};
  return p;
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

Status Runtime::open(const RuntimeOptions& options, std::unique_ptr<Runtime>* out) noexcept {
  return guarded([&] {
    if (!out) throw Failure(Status::kInvalidArgument, "Runtime::open: out is null");
    if (options.source.empty())
      throw Failure(Status::kInvalidArgument, "RuntimeOptions::source is empty; give a tuning database or a "
                                              "best-configs file (tuner export --format best)");
    std::vector<std::unique_ptr<const templates::UserKernelTemplate>> user;
    std::unique_ptr<Impl> impl;
    try {
      for (size_t i = 0; i < options.user_kernels.size(); ++i) {
        const UserKernelFiles& f = options.user_kernels[i];
        if (f.kernel.empty() || f.spec.empty())
          throw std::invalid_argument("RuntimeOptions::user_kernels[" + std::to_string(i) + "] has no " +
                                      (f.kernel.empty() ? "kernel" : "spec") +
                                      " file; allowed: the .cu file and the spec `tuner tune --kernel --spec` tuned");
        try {
          user.push_back(templates::load_user_kernel(f.kernel, f.spec, "", "kernel", "spec"));
        } catch (const std::invalid_argument& e) {  // its files as `tuner tune --kernel --spec` reads them
          throw std::invalid_argument("RuntimeOptions::user_kernels[" + std::to_string(i) + "]: " + e.what());
        }
      }
      impl = std::make_unique<Impl>(options, runtime::Catalog(std::move(user)));
    } catch (const std::invalid_argument& e) {
      throw Failure(Status::kInvalidArgument, e.what());
    }
    try {
      impl->tuned = runtime::read_tuned_records(options.source, impl->catalog);
    } catch (const std::runtime_error& e) {
      throw Failure(Status::kSourceError, e.what());
    }
    impl->find_device();
    out->reset(new Runtime(std::move(impl)));
  });
}

const std::string& Runtime::device() const noexcept { return impl_->match.name; }
int64_t Runtime::records() const noexcept {
  // Of this runtime's device: records of other devices in the source are never looked up.
  return static_cast<int64_t>(std::count_if(impl_->tuned.records.begin(), impl_->tuned.records.end(),
                                            [&](const runtime::TunedRecord& t) { return impl_->match.accepts(t); }));
}

Status Runtime::lookup(const Problem& problem, KernelChoice* out) const noexcept {
  return guarded([&] {
    if (!out) throw Failure(Status::kInvalidArgument, "Runtime::lookup: out is null");
    auto c = impl_->choice_for(problem);
    KernelChoice k;
    k.workload = problem.op + " " + problem.shape + " " + templates::to_string(dtype_of(problem.dtype));
    k.tuned_shape = c->record->shape;
    k.exact = c->exact;
    k.template_name = c->tmpl->name();
    k.config = c->record->config_json;
    k.device = c->record->device_name;
    k.tuned_time_ms = c->record->time_ms;
    k.estimate = c->record->estimate;
    k.kernel_name = c->instance.kernel_name;
    for (int i = 0; i < 3; ++i) {
      k.grid[i] = c->instance.launch.grid[static_cast<size_t>(i)];
      k.block[i] = c->instance.launch.block[static_cast<size_t>(i)];
    }
    k.dynamic_shared_bytes = c->instance.launch.dynamic_shared_bytes;
    for (const auto& b : c->instance.buffers)
      if (!b.workspace) k.buffers.push_back(b.name + " " + templates::to_string(b.dtype));
    *out = std::move(k);
  });
}

Status Runtime::launch(const Problem& problem, const std::vector<const void*>& buffers, CUstream_st* stream) noexcept {
  return guarded([&] {
    auto c = impl_->choice_for(problem);
    const templates::KernelInstance& k = c->instance;
    std::vector<CUdeviceptr> ptrs;
    size_t given = 0;
    for (size_t i = 0; i < k.buffers.size(); ++i) {
      if (k.buffers[i].workspace) {
        ptrs.push_back(0);  // filled once the context is known
        continue;
      }
      if (given >= buffers.size() || !buffers[given])
        throw Failure(Status::kInvalidArgument, k.kernel_name + " takes buffer " + k.buffers[i].name + " as pointer " +
                                                    std::to_string(given) + ", which is " +
                                                    (given >= buffers.size() ? "missing" : "null"));
      ptrs.push_back(reinterpret_cast<CUdeviceptr>(buffers[given++]));
    }
    if (given != buffers.size())
      throw Failure(Status::kInvalidArgument, k.kernel_name + " takes " + std::to_string(given) + " buffers, not " +
                                                  std::to_string(buffers.size()));
    CUcontext ctx = impl_->context();
    for (size_t i = 0; i < k.buffers.size(); ++i)
      if (k.buffers[i].workspace)
        ptrs[i] = impl_->workspace(ctx, stream, c->tmpl->name(), i,
                                   static_cast<size_t>(k.buffers[i].elements) * templates::dtype_bytes(k.buffers[i].dtype));
    CUfunction fn = impl_->function(ctx, *c);
    std::vector<CUtensorMap> maps(k.tensor_maps.size());
    for (size_t i = 0; i < maps.size(); ++i) {
      const auto& m = k.tensor_maps[i];
      std::string why = encode_tensor_map(m, k.buffers[static_cast<size_t>(m.buffer)].dtype,
                                          ptrs[static_cast<size_t>(m.buffer)], &maps[i]);
      if (!why.empty()) throw Failure(Status::kLaunchError, "tensor map " + std::to_string(i) + ": " + why);
    }
    std::vector<int32_t> scalars = k.scalar_args;
    std::vector<void*> args;
    for (auto& p : ptrs) args.push_back(&p);
    for (auto& m : maps) args.push_back(&m);
    for (auto& s : scalars) args.push_back(&s);
    const auto& g = k.launch;
    check(cuda_driver().cuLaunchKernel(fn, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                                       static_cast<unsigned>(g.dynamic_shared_bytes), stream, args.data(), nullptr),
          "cuLaunchKernel");
  });
}

}  // namespace tuner
