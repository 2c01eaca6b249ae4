// compile_cache.h: an on-disk cache of cubins, keyed by a SHA-256 over
// everything that determines the cubin (source, options, arch, kernel name,
// NVRTC version), plus the small SHA-256 the key is built from. It is
// responsible for key derivation, the file layout (<dir>/<key>.cubin), and
// crash-safe writes (temp file + rename). It is not responsible for deciding
// whether an entry is usable for a kernel (the builder validates hits with
// read_cubin_resources and overwrites bad ones). It keeps itself under a size
// cap by evicting the least recently used cubins. A cache is an optimisation:
// no I/O failure here ever throws. SHA-256 is OpenSSL's (EVP).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
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
  /// The directory is created (recursively) on the first store, not here. max_bytes: the size cap
  /// (0: none), enforced every 32 stores of this object.
  explicit CompileCache(std::string dir, uint64_t max_bytes = default_max_bytes());

  /// $TUNER_CACHE_MAX_MB (MiB, a positive integer; 0 turns the cap off) when set, else 2 GiB.
  static uint64_t default_max_bytes();

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

  struct Usage {
    int64_t files = 0;
    uint64_t bytes = 0;
  };
  /// Cubins in the directory and their total size.
  Usage usage() const;

  /// Deletes the least recently used cubins (oldest modification time first; a load refreshes it)
  /// until the directory holds at most max_bytes, sparing files younger than min_age (a worker may
  /// be about to load them); temp files of writers dead for an hour go too. Returns the number of
  /// cubins deleted. Safe while other processes read and write the cache.
  int64_t evict(uint64_t max_bytes, std::chrono::seconds min_age = std::chrono::seconds(60)) const;

  uint64_t max_bytes() const { return max_bytes_; }

 private:
  std::string dir_;
  uint64_t max_bytes_;
  mutable std::atomic<uint64_t> stores_{0};
};

}  // namespace tuner
