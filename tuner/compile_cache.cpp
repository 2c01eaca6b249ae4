#include "tuner/compile_cache.h"

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <vector>
#include <system_error>
#include <unistd.h>

#include <openssl/evp.h>

#include "tuner/cubin_info.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

// Appends a length-prefixed field so that field boundaries are unambiguous.
void add_field(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
  out += '\n';
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // OpenSSL's one-shot digest; it fails only when out of memory, which the throw reports.
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1 || length != 32)
    throw std::runtime_error("OpenSSL EVP_Digest(SHA-256) failed");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

CompileCache::CompileCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

uint64_t CompileCache::default_max_bytes() {
  constexpr uint64_t kDefault = uint64_t{2} << 30;
  const std::string v = env_or_empty("TUNER_CACHE_MAX_MB");
  if (v.empty()) return kDefault;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || v[0] == '-') {  // not a number: the default, said once
    static std::once_flag told;
    std::call_once(told, [&] {
      std::fprintf(stderr, "tuner: TUNER_CACHE_MAX_MB '%s' is not a number of MiB (allowed: 0 for no cap, or a size); "
                           "the cache keeps its default cap of %llu MiB\n", v.c_str(),
                   static_cast<unsigned long long>(kDefault >> 20));
    });
    return kDefault;
  }
  return static_cast<uint64_t>(mb) << 20;
}

namespace {

struct Entry {
  std::filesystem::path path;
  uint64_t bytes;
  std::filesystem::file_time_type modified;
};

/// Cubins of the directory; temp files older than an hour (their writer died) are removed on the way.
std::vector<Entry> list_entries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<Entry> out;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    const fs::path p = it->path();
    const std::string name = p.filename().string();
    const auto modified = fs::last_write_time(p, e2);
    if (e2) continue;
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos) {
      if (now - modified > std::chrono::hours(1)) fs::remove(p, e2);
      continue;
    }
    if (p.extension() != ".cubin") continue;
    const uint64_t bytes = fs::file_size(p, e2);
    if (!e2) out.push_back({p, bytes, modified});
  }
  return out;
}

}  // namespace

CompileCache::Usage CompileCache::usage() const {
  Usage u;
  for (const auto& e : list_entries(dir_)) {
    ++u.files;
    u.bytes += e.bytes;
  }
  return u;
}

int64_t CompileCache::evict(uint64_t max_bytes, std::chrono::seconds min_age) const {
  try {
    namespace fs = std::filesystem;
    std::vector<Entry> entries = list_entries(dir_);
    uint64_t total = 0;
    for (const auto& e : entries) total += e.bytes;
    if (total <= max_bytes) return 0;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.modified < b.modified; });
    const auto young = fs::file_time_type::clock::now() - min_age;
    int64_t removed = 0;
    for (const auto& e : entries) {
      if (total <= max_bytes || e.modified > young) break;  // sorted: the rest are younger still
      std::error_code ec;
      if (fs::remove(e.path, ec)) {
        total -= e.bytes;
        ++removed;
      }
    }
    return removed;
  } catch (...) {  // a cache never fails a compile
    return 0;
  }
}

std::string CompileCache::default_dir() {
  if (std::string d = env_or_empty("TUNER_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env_or_empty("XDG_CACHE_HOME"); !d.empty()) return d + "/tuner/kernels";
  if (std::string d = env_or_empty("HOME"); !d.empty()) return d + "/.cache/tuner/kernels";
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return (tmp / "tuner-kernels").string();
}

std::string CompileCache::key(const CompileRequest& r, const std::string& nvrtc_version) {
  std::string material;
  add_field(material, "tuner-cubin-v1");  // bump when the builder's fixed options change
  add_field(material, nvrtc_version);
  add_field(material, r.arch);
  add_field(material, r.kernel_name);
  add_field(material, std::to_string(r.options.size()));
  for (const std::string& option : r.options) add_field(material, option);
  add_field(material, r.source);
  if (!r.headers.empty()) {  // (none: the key of every request before named headers, unchanged)
    add_field(material, "headers " + std::to_string(r.headers.size()));
    for (const auto& [name, text] : r.headers) {
      add_field(material, name);
      add_field(material, text);
    }
  }
  return sha256_hex(material);
}

std::string CompileCache::path_for(const std::string& key) const {
  return (std::filesystem::path(dir_) / (key + ".cubin")).string();
}

std::optional<std::string> CompileCache::load(const std::string& key) const {
  const std::string path = path_for(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad() || !looks_like_cubin(bytes)) return std::nullopt;
  std::error_code ec;  // a hit is a use: eviction goes by the last one
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
  return bytes;
}

bool CompileCache::store(const std::string& key, const std::string& cubin) const {
  try {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_, ec)) {
      // A cache folder that cannot be made (TUNER_CACHE_DIR naming a file, a read-only place) compiled every config
      // afresh without a word: said once.
      static std::once_flag told;
      std::call_once(told, [&] {
        std::fprintf(stderr, "tuner: warning: the compile cache '%s' is not a folder that can be made (%s); "
                             "compiling without a cache (set TUNER_CACHE_DIR to a writable folder)\n",
                     dir_.c_str(), ec ? ec.message().c_str() : "a file is in the way");
      });
      return false;
    }
    // Unique temp name per process and call, in the same directory so the
    // rename is atomic; concurrent writers of one key each rename a whole file.
    static std::atomic<unsigned long> counter{0};
    std::ostringstream tmp_name;
    tmp_name << "." << key << ".tmp." << ::getpid() << "." << counter.fetch_add(1);
    const fs::path tmp = fs::path(dir_) / tmp_name.str();
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) return false;
      out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
      out.flush();
      if (!out) {
        out.close();
        fs::remove(tmp, ec);
        return false;
      }
    }
    fs::rename(tmp, path_for(key), ec);
    if (ec) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return false;
    }
    if (max_bytes_ > 0 && stores_.fetch_add(1) % 32 == 0) evict(max_bytes_);
    return true;
  } catch (...) {  // bad_alloc or filesystem surprises: a cache never fails a compile
    return false;
  }
}

}  // namespace tuner
