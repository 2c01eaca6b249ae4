// Config space: the knobs of a kernel template, each with a finite list of
// integer values, and the constraints a config must satisfy.
//
// A Config is a plain vector of knob values in knob order: cheap to copy,
// immutable in use. The space gives enumeration of the valid configs, uniform
// sampling, one-knob neighbours, a bijection between valid configs and the
// indices 0..size()-1, and a stable JSON form ({"knob": value, ...} in knob
// order). The valid configs are enumerated on first need (size, at, index_of,
// enumerate, sample, neighbours), once, thread-safely, and shared by copies:
// checking one config (is_valid, violation, from_json) never enumerates, so the
// runtime's first lookup of a shape does not walk a 387k-config space. A
// constraint must outlive the copies of its space (all capture by value, but a
// user kernel's read its template) and may first run at size() or index_of().
// It knows nothing of CUDA or SQLite; device limits enter through the
// constraint predicates a template builds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tuner::search {

/// The random engine every search uses; passed explicitly so a search replays under a seed.
using Rng = std::mt19937_64;

/// A knob: a name and its finite, ordered set of integer values.
struct Knob {
  Knob() = default;
  Knob(std::string name_, std::vector<int64_t> values_, std::string doc_ = {},
       std::optional<int64_t> absent_ = std::nullopt)
      : name(std::move(name_)), values(std::move(values_)), doc(std::move(doc_)), absent(absent_) {}

  std::string name;
  std::vector<int64_t> values;
  std::string doc;  ///< One line for users: what the knob controls.
  /// For a knob added to a template after configs were stored: the value that gives the kernel those
  /// configs ran. A config's JSON leaves the knob out at this value and a JSON without the knob reads
  /// as this value, so records, replay files and best-config files written before it stay valid.
  std::optional<int64_t> absent;
};

/// Knob values in the order of ConfigSpace::knobs().
using Config = std::vector<int64_t>;

class ConfigSpace;

/// Read access to a config by knob name, handed to constraint predicates. With `read` it records
/// which knobs were read (bit i: knob i; config() counts as reading every knob): a deterministic
/// predicate gives the same answer on every config that agrees on the knobs it read, which lets the
/// space skip those configs when it fails.
class ConfigView {
 public:
  ConfigView(const ConfigSpace& space, const Config& config, uint64_t* read = nullptr)
      : space_(space), config_(config), read_(read) {}
  int64_t operator[](std::string_view knob) const;
  const Config& config() const {
    if (read_) *read_ = ~uint64_t{0};
    return config_;
  }
  const ConfigSpace& space() const { return space_; }

 private:
  const ConfigSpace& space_;
  const Config& config_;
  uint64_t* read_;
};

/// A named predicate; a config is valid when every constraint holds.
struct Constraint {
  std::string name;  ///< Shown when a config is rejected, e.g. "threads per block <= 1024".
  std::function<bool(const ConfigView&)> holds;
};

class ConfigSpace {
 public:
  ConfigSpace() = default;
  ConfigSpace(std::vector<Knob> knobs, std::vector<Constraint> constraints);

  const std::vector<Knob>& knobs() const { return knobs_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  /// Position of a knob by name; throws std::out_of_range for an unknown name.
  size_t knob_index(std::string_view name) const;
  int64_t value(const Config& c, std::string_view knob) const { return c.at(knob_index(knob)); }

  /// Size of the cartesian product of the knob values (valid or not).
  uint64_t product_size() const { return product_size_; }
  /// Number of valid configs.
  uint64_t size() const { return valid().size(); }

  /// True when every value is one of its knob's values.
  bool in_range(const Config& c) const;
  /// True when in range and every constraint holds (checks c alone: does not enumerate the space).
  bool is_valid(const Config& c) const;
  /// Name of the first constraint the config breaks (or "value out of range"); nullopt if valid.
  std::optional<std::string> violation(const Config& c) const;

  /// The i-th valid config (0 <= i < size()), in product (mixed-radix) order.
  Config at(uint64_t index) const;
  /// Index of a valid config in 0..size()-1; nullopt when the config is not valid.
  std::optional<uint64_t> index_of(const Config& c) const;
  /// All valid configs in index order.
  std::vector<Config> enumerate() const;
  /// A valid config drawn uniformly; the space must not be empty.
  Config sample(Rng& rng) const;
  /// Valid configs that differ from c in exactly one knob.
  std::vector<Config> neighbours(const Config& c) const;

  /// Stable JSON object {"knob": value, ...} in knob order.
  nlohmann::ordered_json to_json(const Config& c) const;
  std::string to_json_string(const Config& c) const { return to_json(c).dump(); }
  /// Parses a JSON object naming every knob; throws std::invalid_argument naming the bad key or value.
  Config from_json(const nlohmann::json& j) const;

 private:
  uint64_t product_index(const Config& c) const;
  Config from_product_index(uint64_t p) const;
  /// from_product_index into `c`, reusing its storage.
  void fill_from_product_index(uint64_t p, Config& c) const;
  /// The product indices of the valid configs, ascending; enumerated on the first call.
  const std::vector<uint64_t>& valid() const;
  std::vector<uint64_t> enumerate_valid() const;

  /// Filled once (by the first caller of valid()) and shared by copies, which have the same knobs and constraints.
  struct Valid {
    std::once_flag once;
    std::vector<uint64_t> products;
  };

  std::vector<Knob> knobs_;
  /// Each knob name's first 8 bytes (zero-padded), so knob_index, called for every knob a constraint
  /// reads on every config the enumeration visits, compares one integer per knob instead of calling memcmp.
  std::vector<uint64_t> name_heads_;
  std::vector<Constraint> constraints_;
  uint64_t product_size_ = 0;
  std::shared_ptr<Valid> valid_ = std::make_shared<Valid>();  ///< Null once moved from: the space is empty.
};

/// `space` with each named knob narrowed to one value (`tune --fix`): the configs of the space that have
/// those values, under the same constraints. Throws std::invalid_argument naming a knob the space lacks
/// (and the knobs it has), a knob named twice, or a value the knob does not take (and those it takes).
ConfigSpace with_knobs_fixed(const ConfigSpace& space, const std::vector<std::pair<std::string, int64_t>>& fixed);

}  // namespace tuner::search
