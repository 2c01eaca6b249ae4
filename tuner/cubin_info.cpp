#include "tuner/cubin_info.h"

#include <cstdint>
#include <vector>

namespace tuner {
namespace {

// ELF constants (only those we need).
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtNobits = 8;
constexpr std::size_t kElfHeaderSize = 64;
constexpr std::size_t kSectionHeaderSize = 64;
constexpr std::size_t kSymbolSize = 24;
constexpr std::uint8_t kSttFunc = 2;

// EIATTR record formats and the attribute ids we read (cuobjdump names).
constexpr std::uint8_t kEifmtNval = 0x01;  // fmt, attr, u16 zero: 4 bytes
constexpr std::uint8_t kEifmtBval = 0x02;  // fmt, attr, u16 value: 4 bytes
constexpr std::uint8_t kEifmtHval = 0x03;  // fmt, attr, u16 value: 4 bytes
constexpr std::uint8_t kEifmtSval = 0x04;  // fmt, attr, u16 size, size bytes
constexpr std::uint8_t kEiattrMaxThreads = 0x05;
constexpr std::uint8_t kEiattrFrameSize = 0x11;
constexpr std::uint8_t kEiattrRegcount = 0x2f;

// The block-reserved system shared memory that sm_90+ cubins place at the
// start of each kernel's .nv.shared section (matches `ptxas -v` smem figures).
constexpr std::uint64_t kReservedSharedPrefix = 1024;

// A bounds-checked little-endian reader over untrusted bytes.
class Bytes {
 public:
  explicit Bytes(std::string_view data) : data_(data) {}
  std::size_t size() const { return data_.size(); }
  bool in_range(std::uint64_t offset, std::uint64_t length) const {
    return offset <= data_.size() && length <= data_.size() - offset;
  }
  // Reads an N-byte little-endian unsigned integer; nullopt if out of range.
  std::optional<std::uint64_t> uint(std::uint64_t offset, unsigned n) const {
    if (!in_range(offset, n)) return std::nullopt;
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[offset + i])) << (8 * i);
    return v;
  }
  std::uint64_t u(std::uint64_t offset, unsigned n) const { return uint(offset, n).value_or(0); }
  // NUL-terminated string starting at offset inside [begin, begin+length).
  std::optional<std::string_view> cstr(std::uint64_t begin, std::uint64_t length, std::uint64_t offset) const {
    if (!in_range(begin, length) || offset >= length) return std::nullopt;
    std::string_view table = data_.substr(begin, length);
    std::size_t end = table.find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return table.substr(offset, end - offset);
  }

 private:
  std::string_view data_;
};

struct Section {
  std::string_view name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint32_t info = 0;
};

// Parses the ELF header and section table; nullopt with *error on failure.
std::optional<std::vector<Section>> read_sections(const Bytes& b, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::vector<Section>> {
    if (error) *error = "not a cubin: " + why;
    return std::nullopt;
  };
  if (b.size() < kElfHeaderSize) return fail("too short for an ELF header");
  if (b.u(0, 4) != 0x464c457fu) return fail("no ELF magic");
  if (b.u(4, 1) != 2) return fail("not ELF64");
  if (b.u(5, 1) != 1) return fail("not little-endian");
  const std::uint64_t shoff = b.u(0x28, 8);
  const std::uint64_t shentsize = b.u(0x3a, 2);
  const std::uint64_t shnum = b.u(0x3c, 2);
  const std::uint64_t shstrndx = b.u(0x3e, 2);
  if (shentsize < kSectionHeaderSize) return fail("bad section header size");
  if (shnum == 0 || shstrndx >= shnum) return fail("bad section count or name table index");
  if (shnum > b.size() / shentsize || !b.in_range(shoff, shnum * shentsize))
    return fail("section table out of range (truncated?)");

  std::vector<Section> sections(shnum);
  std::vector<std::uint32_t> name_offsets(shnum);
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint64_t h = shoff + i * shentsize;
    name_offsets[i] = static_cast<std::uint32_t>(b.u(h, 4));
    Section& s = sections[i];
    s.type = static_cast<std::uint32_t>(b.u(h + 4, 4));
    s.offset = b.u(h + 0x18, 8);
    s.size = b.u(h + 0x20, 8);
    s.link = static_cast<std::uint32_t>(b.u(h + 0x28, 4));
    s.info = static_cast<std::uint32_t>(b.u(h + 0x2c, 4));
    if (s.type != kShtNobits && !b.in_range(s.offset, s.size))
      return fail("section " + std::to_string(i) + " out of range (truncated?)");
  }
  const Section& names = sections[shstrndx];
  for (std::uint64_t i = 0; i < shnum; ++i) {
    if (i == 0 && name_offsets[i] == 0) continue;  // the null section
    auto name = b.cstr(names.offset, names.size, name_offsets[i]);
    if (!name) return fail("section name out of range");
    sections[i].name = *name;
  }
  return sections;
}

const Section* find_section(const std::vector<Section>& sections, std::string_view name) {
  for (const Section& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

// Index of the kernel's FUNC symbol in .symtab, or nullopt.
std::optional<std::uint32_t> find_kernel_symbol(const Bytes& b, const std::vector<Section>& sections,
                                                const std::string& kernel) {
  for (const Section& s : sections) {
    if (s.type != kShtSymtab || s.link >= sections.size()) continue;
    const Section& strtab = sections[s.link];
    const std::uint64_t count = s.size / kSymbolSize;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t e = s.offset + i * kSymbolSize;
      if ((b.u(e + 4, 1) & 0xf) != kSttFunc) continue;
      auto name = b.cstr(strtab.offset, strtab.size, b.u(e, 4));
      if (name && *name == kernel) return static_cast<std::uint32_t>(i);
    }
  }
  return std::nullopt;
}

// Calls visit(attr, value_offset, value_size) for each EIATTR record in the
// section; stops at the first malformed record.
template <typename Visit>
void for_each_attribute(const Bytes& b, const Section& s, Visit visit) {
  std::uint64_t p = s.offset;
  const std::uint64_t end = s.offset + s.size;
  while (p + 4 <= end) {
    const std::uint8_t fmt = static_cast<std::uint8_t>(b.u(p, 1));
    const std::uint8_t attr = static_cast<std::uint8_t>(b.u(p + 1, 1));
    if (fmt == kEifmtNval || fmt == kEifmtBval || fmt == kEifmtHval) {
      visit(attr, p + 2, std::uint64_t{fmt == kEifmtNval ? 0u : 2u});
      p += 4;
    } else if (fmt == kEifmtSval) {
      const std::uint64_t size = b.u(p + 2, 2);
      if (p + 4 + size > end) return;
      visit(attr, p + 4, size);
      p += 4 + size;
    } else {
      return;  // unknown format: the rest cannot be framed
    }
  }
}

int clamp_int(std::uint64_t v) { return v > 0x7fffffffu ? 0x7fffffff : static_cast<int>(v); }

}  // namespace

bool looks_like_cubin(std::string_view bytes) {
  Bytes b(bytes);
  return read_sections(b, nullptr).has_value();
}

std::optional<CubinResources> read_cubin_resources(std::string_view cubin, const std::string& kernel,
                                                   std::string* error) {
  Bytes b(cubin);
  auto sections = read_sections(b, error);
  if (!sections) return std::nullopt;

  const Section* text = find_section(*sections, ".text." + kernel);
  const auto symbol = find_kernel_symbol(b, *sections, kernel);
  if (text == nullptr || !symbol) {
    if (error) *error = "kernel '" + kernel + "' not found in cubin";
    return std::nullopt;
  }

  CubinResources r;
  bool have_regcount = false;
  std::uint64_t frame_bytes = 0;
  // Per-function attributes keyed by symbol index: {u32 symbol, u32 value}.
  auto keyed = [&](std::uint8_t attr, std::uint64_t at, std::uint64_t size) {
    if (size < 8 || b.u(at, 4) != *symbol) return;
    const std::uint64_t value = b.u(at + 4, 4);
    if (attr == kEiattrRegcount) {
      r.registers = clamp_int(value);
      have_regcount = true;
    } else if (attr == kEiattrFrameSize) {
      frame_bytes = value;
    }
  };
  if (const Section* info = find_section(*sections, ".nv.info")) for_each_attribute(b, *info, keyed);
  if (const Section* info = find_section(*sections, ".nv.info." + kernel)) {
    for_each_attribute(b, *info, keyed);
    for_each_attribute(b, *info, [&](std::uint8_t attr, std::uint64_t at, std::uint64_t size) {
      if (attr != kEiattrMaxThreads || size < 12) return;
      const std::uint64_t threads = b.u(at, 4) * b.u(at + 4, 4) * b.u(at + 8, 4);
      r.max_threads_per_block = clamp_int(threads);
    });
  }
  if (!have_regcount) r.registers = static_cast<int>(text->info >> 24);

  if (const Section* shared = find_section(*sections, ".nv.shared." + kernel)) {
    std::uint64_t bytes = shared->size;
    bool has_reserved_area = false;
    for (const Section& s : *sections)
      if (s.name.starts_with(".nv.shared.reserved.")) has_reserved_area = true;
    if (has_reserved_area && bytes >= kReservedSharedPrefix) {
      r.reserved_shared_bytes = static_cast<int>(kReservedSharedPrefix);
      bytes -= kReservedSharedPrefix;
    }
    r.static_shared_bytes = clamp_int(bytes);
  }

  std::uint64_t local = frame_bytes;
  if (const Section* l = find_section(*sections, ".nv.local." + kernel)) local += l->size;
  r.local_bytes = clamp_int(local);
  return r;
}

}  // namespace tuner
