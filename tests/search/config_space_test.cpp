#include "search/config_space.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace tuner::search {
namespace {

// A space of 3 x 4 x 2 = 24 products; the constraint "A * B <= 8" keeps
// A=1: B in {1,2,4,8} (4), A=2: B in {1,2,4} (3), A=4: B in {1,2} (2) -> 9 x 2 = 18 valid.
ConfigSpace small_space() {
  return ConfigSpace({{"A", {1, 2, 4}, ""}, {"B", {1, 2, 4, 8}, ""}, {"C", {0, 1}, ""}},
                     {{"A * B <= 8", [](const ConfigView& v) { return v["A"] * v["B"] <= 8; }}});
}

TEST(ConfigSpace, CountsProductAndValidConfigs) {
  auto s = small_space();
  EXPECT_EQ(s.product_size(), 24u);
  EXPECT_EQ(s.size(), 18u);
}

// The constructor skips the run of configs that share a failing constraint's knob values (the knobs it
// read); the valid set must equal the one each constraint gives config by config. Constraints that read
// an early knob only, read knobs conditionally, read nothing, or take the whole config.
TEST(ConfigSpace, SkippingFailedRunsKeepsExactlyTheValidConfigs) {
  const std::vector<Knob> knobs = {{"A", {1, 2, 3, 4}, ""}, {"B", {0, 1, 2}, ""}, {"C", {1, 2, 4}, ""},
                                   {"D", {0, 1}, ""}, {"E", {5, 6, 7}, ""}};
  const std::vector<std::vector<Constraint>> sets = {
      {{"A != 2", [](const ConfigView& v) { return v["A"] != 2; }}},
      {{"A < 3 or B == 1", [](const ConfigView& v) { return v["A"] < 3 || v["B"] == 1; }},
       {"D == 0 or C >= 2", [](const ConfigView& v) { return v["D"] == 0 || v["C"] >= 2; }},
       {"E != 6 or B != 0", [](const ConfigView& v) { return v["E"] != 6 || v["B"] != 0; }}},
      {{"whole config: sum odd", [](const ConfigView& v) {
         int64_t sum = 0;
         for (int64_t x : v.config()) sum += x;
         return sum % 2 == 1;
       }}},
      {{"never", [](const ConfigView&) { return false; }}},
  };
  for (const auto& cs : sets) {
    ConfigSpace s(knobs, cs);
    uint64_t expected = 0;
    std::vector<Config> all;
    for (int64_t a : knobs[0].values)
      for (int64_t b : knobs[1].values)
        for (int64_t c : knobs[2].values)
          for (int64_t d : knobs[3].values)
            for (int64_t e : knobs[4].values) {
              const Config cfg{a, b, c, d, e};
              bool ok = true;
              for (const auto& con : cs) ok = ok && con.holds(ConfigView(s, cfg));
              expected += ok;
              EXPECT_EQ(s.index_of(cfg).has_value(), ok) << cs[0].name << " " << a << b << c << d << e;
            }
    EXPECT_EQ(s.size(), expected) << cs[0].name;
  }
}

// Checking one config must not walk the space (the runtime checks a record's config at each new shape); the walk
// happens once, on the first call that needs it, also when threads ask together, and copies share it.
TEST(ConfigSpace, EnumeratesOnFirstNeedOnceAndSharesItWithCopies) {
  std::atomic<int> calls{0};
  ConfigSpace s({{"A", {1, 2, 4}, ""}, {"B", {1, 2, 4, 8}, ""}, {"C", {0, 1}, ""}},
                {{"A * B <= 8", [&calls](const ConfigView& v) {
                    ++calls;
                    return v["A"] * v["B"] <= 8;
                  }}});
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(s.is_valid({2, 4, 1}));
  EXPECT_FALSE(s.is_valid({4, 4, 0}));
  EXPECT_EQ(s.violation({4, 4, 0}).value_or(""), "A * B <= 8");
  EXPECT_EQ(calls, 3);
  const ConfigSpace copy = s;
  std::vector<std::thread> threads;
  std::vector<uint64_t> sizes(4);
  for (size_t i = 0; i < sizes.size(); ++i) threads.emplace_back([&, i] { sizes[i] = (i % 2 ? copy : s).size(); });
  for (auto& t : threads) t.join();
  for (uint64_t n : sizes) EXPECT_EQ(n, 18u);
  const int walked = calls - 3;
  EXPECT_GT(walked, 0);
  EXPECT_EQ(copy.index_of({2, 4, 1}), s.index_of({2, 4, 1}));
  EXPECT_EQ(copy.enumerate(), s.enumerate());
  EXPECT_EQ(calls - 3, walked);  // neither the copy nor later calls walked again
  // Moved from, a space is empty (as when the enumeration was eager), not a crash.
  ConfigSpace moved = std::move(s);
  EXPECT_EQ(moved.size(), 18u);
  EXPECT_EQ(s.size(), 0u);  // NOLINT(bugprone-use-after-move): what a moved-from space says is the point
  EXPECT_TRUE(s.enumerate().empty());
}

TEST(ConfigSpace, IndexIsABijectionOverValidConfigs) {
  auto s = small_space();
  std::set<Config> seen;
  for (uint64_t i = 0; i < s.size(); ++i) {
    Config c = s.at(i);
    EXPECT_TRUE(s.is_valid(c));
    ASSERT_TRUE(s.index_of(c).has_value());
    EXPECT_EQ(*s.index_of(c), i);
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), s.size());
  EXPECT_EQ(s.enumerate().size(), s.size());
  EXPECT_THROW(s.at(s.size()), std::out_of_range);
}

TEST(ConfigSpace, RejectsInvalidAndOutOfRangeConfigs) {
  auto s = small_space();
  EXPECT_FALSE(s.is_valid({4, 4, 0}));  // 16 > 8
  EXPECT_EQ(s.violation({4, 4, 0}).value(), "A * B <= 8");
  EXPECT_FALSE(s.is_valid({3, 1, 0}));  // 3 is not a value of A
  EXPECT_EQ(s.violation({3, 1, 0}).value(), "value out of range");
  EXPECT_FALSE(s.index_of({4, 4, 0}).has_value());
  EXPECT_FALSE(s.violation({2, 4, 1}).has_value());
}

TEST(ConfigSpace, SamplingIsDeterministicUnderASeedAndCoversTheSpace) {
  auto s = small_space();
  Rng a(7), b(7), c(8);
  std::vector<Config> xs, ys, zs;
  for (int i = 0; i < 200; ++i) {
    xs.push_back(s.sample(a));
    ys.push_back(s.sample(b));
    zs.push_back(s.sample(c));
  }
  EXPECT_EQ(xs, ys);
  EXPECT_NE(xs, zs);
  std::set<Config> distinct(xs.begin(), xs.end());
  EXPECT_EQ(distinct.size(), s.size());  // 200 uniform draws over 18 configs hit them all
  for (const auto& x : xs) EXPECT_TRUE(s.is_valid(x));
}

TEST(ConfigSpace, NeighboursDifferInExactlyOneKnobAndAreValid) {
  auto s = small_space();
  Config c{2, 2, 0};
  auto ns = s.neighbours(c);
  // A in {1,4} (2*.. : 1*2 ok, 4*2 ok) -> 2; B in {1,4} (8 breaks: 16) -> 2; C -> 1. Total 5.
  EXPECT_EQ(ns.size(), 5u);
  for (const auto& n : ns) {
    int diff = 0;
    for (size_t i = 0; i < c.size(); ++i) diff += n[i] != c[i];
    EXPECT_EQ(diff, 1);
    EXPECT_TRUE(s.is_valid(n));
  }
}

TEST(ConfigSpace, JsonIsStableAndRoundTrips) {
  auto s = small_space();
  Config c{4, 2, 1};
  EXPECT_EQ(s.to_json_string(c), R"({"A":4,"B":2,"C":1})");
  EXPECT_EQ(s.from_json(nlohmann::json::parse(R"({"C":1,"B":2,"A":4})")), c);
  EXPECT_THROW(s.from_json(nlohmann::json::parse(R"({"A":4,"B":2})")), std::invalid_argument);
  EXPECT_THROW(s.from_json(nlohmann::json::parse(R"({"A":4,"B":2,"C":1,"D":0})")), std::invalid_argument);
  EXPECT_THROW(s.from_json(nlohmann::json::parse(R"({"A":3,"B":2,"C":1})")), std::invalid_argument);
  EXPECT_THROW(s.from_json(nlohmann::json::parse(R"({"A":"4","B":2,"C":1})")), std::invalid_argument);
}

TEST(ConfigSpace, AKnobAddedLaterKeepsOlderConfigsJson) {
  // E was added after configs {A, B} were stored; E = 0 is the kernel they ran.
  ConfigSpace s({{"A", {1, 2}, "a"}, {"B", {3, 4}, "b"}, {"E", {0, 1}, "added later", 0}}, {});
  EXPECT_EQ(s.to_json_string({2, 3, 0}), R"({"A":2,"B":3})");
  EXPECT_EQ(s.to_json_string({2, 3, 1}), R"({"A":2,"B":3,"E":1})");
  EXPECT_EQ(s.from_json(nlohmann::json::parse(R"({"A":2,"B":3})")), (Config{2, 3, 0}));
  EXPECT_EQ(s.from_json(nlohmann::json::parse(R"({"A":2,"B":3,"E":1})")), (Config{2, 3, 1}));
  EXPECT_EQ(s.from_json(nlohmann::json::parse(R"({"A":2,"B":3,"E":0})")), (Config{2, 3, 0}));
  // A knob without an `absent` value is still required.
  EXPECT_THROW(s.from_json(nlohmann::json::parse(R"({"A":2,"E":1})")), std::invalid_argument);
  for (const Config& c : s.enumerate()) EXPECT_EQ(s.from_json(s.to_json(c)), c);
}

}  // namespace
}  // namespace tuner::search
