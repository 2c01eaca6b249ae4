// compile_cache.h: an on-disk cache of cubins, keyed by a SHA-256 over
// everything that determines the cubin (source, options, arch, kernel name,
// NVRTC version), plus the small SHA-256 the key is built from. It is
// responsible for key derivation, the file layout (<dir>/<key>.cubin), and
// crash-safe writes (temp file + rename). It is not responsible for deciding
// whether an entry is usable for a kernel (the builder validates hits with
// read_cubin_resources and overwrites bad ones) nor for eviction. A cache is
// an optimisation: no I/O failure here ever throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tuner {

struct CompileRequest;

/// Lowercase hex SHA-256 (FIPS 180-4) of the bytes.
std::string sha256_hex(std::string_view data);

/// Directory of cubin files, one per key. Safe to share between threads and
/// processes (writes are atomic renames).
class CompileCache {
 public:
  /// The directory is created (recursively) on the first store, not here.
  explicit CompileCache(std::string dir);

  /// $TUNER_CACHE_DIR, else $XDG_CACHE_HOME/tuner/kernels, else
  /// $HOME/.cache/tuner/kernels, else <temp dir>/tuner-kernels.
  static std::string default_dir();

  /// 64 hex chars: SHA-256 over a format tag, nvrtc_version, arch,
  /// kernel name, each option, and the source (each length-prefixed).
  static std::string key(const CompileRequest& r, const std::string& nvrtc_version);

  /// Cubin bytes for the key; nullopt if absent, unreadable, or not
  /// structurally an ELF cubin (a truncated file is a miss).
  std::optional<std::string> load(const std::string& key) const;

  /// Writes atomically (temp file + rename). Returns false on any failure
  /// (unwritable dir, full disk); never throws.
  bool store(const std::string& key, const std::string& cubin) const;

  const std::string& dir() const { return dir_; }

  /// Where the cubin for a key lives (the measurement worker loads it there).
  std::string path_for(const std::string& key) const;

 private:
  std::string dir_;
};

}  // namespace tuner
