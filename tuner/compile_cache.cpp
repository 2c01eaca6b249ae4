#include "tuner/compile_cache.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "tuner/cubin_info.h"
#include "tuner/nvrtc_builder.h"

namespace tuner {
namespace {

constexpr std::array<std::uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(std::array<std::uint32_t, 8>& h, const unsigned char* block) {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (std::uint32_t{block[4 * i]} << 24) | (std::uint32_t{block[4 * i + 1]} << 16) |
           (std::uint32_t{block[4 * i + 2]} << 8) | std::uint32_t{block[4 * i + 3]};
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                             kRoundConstants[i] + w[i];
    const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

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
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t full = data.size() / 64;
  for (std::size_t i = 0; i < full; ++i) compress(h, bytes + 64 * i);

  // Padding: 0x80, zeros, then the bit length as a big-endian u64.
  unsigned char tail[128] = {};
  const std::size_t rest = data.size() - 64 * full;
  for (std::size_t i = 0; i < rest; ++i) tail[i] = bytes[64 * full + i];
  tail[rest] = 0x80;
  const std::size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  compress(h, tail);
  if (tail_len == 128) compress(h, tail + 64);

  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (std::uint32_t word : h)
    for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(word >> shift) & 0xf];
  return out;
}

CompileCache::CompileCache(std::string dir) : dir_(std::move(dir)) {}

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
  return sha256_hex(material);
}

std::string CompileCache::path_for(const std::string& key) const {
  return (std::filesystem::path(dir_) / (key + ".cubin")).string();
}

std::optional<std::string> CompileCache::load(const std::string& key) const {
  std::ifstream in(path_for(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad() || !looks_like_cubin(bytes)) return std::nullopt;
  return bytes;
}

bool CompileCache::store(const std::string& key, const std::string& cubin) const {
  try {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return false;
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
    return true;
  } catch (...) {  // bad_alloc or filesystem surprises: a cache never fails a compile
    return false;
  }
}

}  // namespace tuner
