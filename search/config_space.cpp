#include "search/config_space.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tuner::search {
namespace {

uint64_t name_head(std::string_view name) {
  uint64_t h = 0;
  std::memcpy(&h, name.data(), std::min<size_t>(name.size(), sizeof h));
  return h;
}

}  // namespace

int64_t ConfigView::operator[](std::string_view knob) const {
  const size_t i = space_.knob_index(knob);
  if (read_) *read_ |= i < 64 ? uint64_t{1} << i : ~uint64_t{0};
  return config_.at(i);
}

ConfigSpace::ConfigSpace(std::vector<Knob> knobs, std::vector<Constraint> constraints)
    : knobs_(std::move(knobs)), constraints_(std::move(constraints)) {
  product_size_ = 1;
  for (const auto& k : knobs_) {
    if (k.values.empty()) throw std::invalid_argument("knob " + k.name + " has no values");
    product_size_ *= k.values.size();
    name_heads_.push_back(name_head(k.name));
  }
}

const std::vector<uint64_t>& ConfigSpace::valid() const {
  static const std::vector<uint64_t> none;
  if (!valid_) return none;  // moved from: an empty space, as before enumeration was lazy
  std::call_once(valid_->once, [&] { valid_->products = enumerate_valid(); });
  return valid_->products;
}

std::vector<uint64_t> ConfigSpace::enumerate_valid() const {
  // stride[i]: product indices between consecutive values of knob i (the last knob varies fastest).
  std::vector<uint64_t> stride(knobs_.size() + 1, 1);
  for (size_t i = knobs_.size(); i-- > 0;) stride[i] = stride[i + 1] * knobs_[i].values.size();
  // A constraint that read knobs 0..last only gives the same answer on every config that shares c's
  // values of those knobs: the contiguous run of product indices up to the returned one. A failure
  // skips the run; a pass is not asked again within it.
  const auto run_end = [&](uint64_t p, uint64_t read) {
    int last = -1;
    for (size_t i = 0; i < knobs_.size(); ++i)
      if (i >= 64 || (read >> i) & 1) last = static_cast<int>(i);
    const uint64_t run = stride[static_cast<size_t>(last + 1)];
    return (p / run + 1) * run;
  };
  std::vector<uint64_t> valid;
  std::vector<uint64_t> holds_until(constraints_.size(), 0);
  Config c;
  for (uint64_t p = 0; p < product_size_;) {
    fill_from_product_index(p, c);
    uint64_t next = p + 1;
    bool ok = true;
    for (size_t k = 0; k < constraints_.size(); ++k) {
      if (p < holds_until[k]) continue;
      uint64_t read = 0;
      const bool holds = constraints_[k].holds(ConfigView(*this, c, &read));
      if (holds) {
        holds_until[k] = run_end(p, read);
        continue;
      }
      ok = false;
      next = run_end(p, read);
      break;
    }
    if (ok) valid.push_back(p);
    p = next;
  }
  return valid;
}

size_t ConfigSpace::knob_index(std::string_view name) const {
  const uint64_t head = name_head(name);
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (name_heads_[i] == head && knobs_[i].name.size() == name.size() &&
        (name.size() <= sizeof head || knobs_[i].name == name))
      return i;
  throw std::out_of_range("unknown knob '" + std::string(name) + "'");
}

bool ConfigSpace::in_range(const Config& c) const {
  if (c.size() != knobs_.size()) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    const auto& v = knobs_[i].values;
    if (std::find(v.begin(), v.end(), c[i]) == v.end()) return false;
  }
  return true;
}

std::optional<std::string> ConfigSpace::violation(const Config& c) const {
  if (!in_range(c)) return std::string("value out of range");
  for (const auto& con : constraints_)
    if (!con.holds(ConfigView(*this, c))) return con.name;
  return std::nullopt;
}

bool ConfigSpace::is_valid(const Config& c) const { return !violation(c).has_value(); }

uint64_t ConfigSpace::product_index(const Config& c) const {
  uint64_t p = 0;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const auto& v = knobs_[i].values;
    auto pos = static_cast<uint64_t>(std::find(v.begin(), v.end(), c[i]) - v.begin());
    p = p * v.size() + pos;
  }
  return p;
}

Config ConfigSpace::from_product_index(uint64_t p) const {
  Config c;
  fill_from_product_index(p, c);
  return c;
}

void ConfigSpace::fill_from_product_index(uint64_t p, Config& c) const {
  c.resize(knobs_.size());
  for (size_t i = knobs_.size(); i-- > 0;) {
    const auto& v = knobs_[i].values;
    c[i] = v[p % v.size()];
    p /= v.size();
  }
}

Config ConfigSpace::at(uint64_t index) const {
  const auto& valid = this->valid();
  if (index >= valid.size()) throw std::out_of_range("config index " + std::to_string(index) + " >= space size " + std::to_string(valid.size()));
  return from_product_index(valid[index]);
}

std::optional<uint64_t> ConfigSpace::index_of(const Config& c) const {
  if (!in_range(c)) return std::nullopt;
  const auto& valid = this->valid();
  uint64_t p = product_index(c);
  auto it = std::lower_bound(valid.begin(), valid.end(), p);
  if (it == valid.end() || *it != p) return std::nullopt;
  return static_cast<uint64_t>(it - valid.begin());
}

std::vector<Config> ConfigSpace::enumerate() const {
  std::vector<Config> out;
  const auto& valid = this->valid();
  out.reserve(valid.size());
  for (uint64_t p : valid) out.push_back(from_product_index(p));
  return out;
}

Config ConfigSpace::sample(Rng& rng) const {
  const auto& valid = this->valid();
  if (valid.empty()) throw std::logic_error("sample() on an empty config space");
  std::uniform_int_distribution<uint64_t> d(0, valid.size() - 1);
  return from_product_index(valid[d(rng)]);
}

std::vector<Config> ConfigSpace::neighbours(const Config& c) const {
  std::vector<Config> out;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    for (int64_t v : knobs_[i].values) {
      if (v == c[i]) continue;
      Config n = c;
      n[i] = v;
      if (index_of(n)) out.push_back(std::move(n));
    }
  }
  return out;
}

nlohmann::ordered_json ConfigSpace::to_json(const Config& c) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (!knobs_[i].absent || c.at(i) != *knobs_[i].absent) j[knobs_[i].name] = c.at(i);
  return j;
}

Config ConfigSpace::from_json(const nlohmann::json& j) const {
  if (!j.is_object()) throw std::invalid_argument("config must be a JSON object of knob: value");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = std::any_of(knobs_.begin(), knobs_.end(), [&](const Knob& k) { return k.name == it.key(); });
    if (!known) {
      std::string names;
      for (const auto& k : knobs_) names += (names.empty() ? "" : ", ") + k.name;
      throw std::invalid_argument("unknown knob '" + it.key() + "'; allowed: " + names);
    }
  }
  Config c(knobs_.size());
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const auto& k = knobs_[i];
    if (!j.contains(k.name)) {
      if (!k.absent) throw std::invalid_argument("config lacks knob '" + k.name + "'");
      c[i] = *k.absent;
      continue;
    }
    const auto& v = j.at(k.name);
    if (!v.is_number_integer()) throw std::invalid_argument("knob '" + k.name + "' must be an integer");
    c[i] = v.get<int64_t>();
    if (std::find(k.values.begin(), k.values.end(), c[i]) == k.values.end()) {
      std::string values;
      for (int64_t x : k.values) values += (values.empty() ? "" : ", ") + std::to_string(x);
      throw std::invalid_argument("knob '" + k.name + "' = " + std::to_string(c[i]) +
                                  " is not one of its values; allowed: " + values);
    }
  }
  return c;
}

ConfigSpace with_knobs_fixed(const ConfigSpace& space, const std::vector<std::pair<std::string, int64_t>>& fixed) {
  if (fixed.empty()) return space;  // nothing to narrow: no second enumeration
  std::vector<Knob> knobs = space.knobs();
  std::vector<bool> seen(knobs.size(), false);
  for (const auto& [name, value] : fixed) {
    size_t i = 0;
    while (i < knobs.size() && knobs[i].name != name) ++i;
    if (i == knobs.size()) {
      std::string names;
      for (const auto& k : knobs) names += (names.empty() ? "" : ", ") + k.name;
      throw std::invalid_argument("'" + name + "' is not a knob of this template; allowed: " + names);
    }
    if (seen[i]) throw std::invalid_argument("knob " + name + " is fixed twice; allowed: each knob once");
    seen[i] = true;
    const auto& vals = space.knobs()[i].values;
    if (std::find(vals.begin(), vals.end(), value) == vals.end()) {
      std::string allowed;
      for (int64_t v : vals) allowed += (allowed.empty() ? "" : ", ") + std::to_string(v);
      throw std::invalid_argument(name + "=" + std::to_string(value) + " is not a value of the knob; allowed: " + allowed);
    }
    knobs[i].values = {value};
  }
  return ConfigSpace(std::move(knobs), space.constraints());
}

}  // namespace tuner::search
