#include "search/strategy.h"

#include <gtest/gtest.h>

#include <set>

namespace tuner::search {
namespace {

ConfigSpace space_of(int a_values, int b_values) {
  std::vector<int64_t> a, b;
  for (int i = 0; i < a_values; ++i) a.push_back(i);
  for (int i = 0; i < b_values; ++i) b.push_back(i);
  return ConfigSpace({{"A", a, ""}, {"B", b, ""}}, {});
}

std::vector<Config> drain(SearchStrategy& s, size_t batch) {
  std::vector<Config> all;
  while (true) {
    auto got = s.propose(batch);
    if (got.empty()) break;
    std::vector<TrialOutcome> outcomes(got.size(), TrialOutcome{true, 1.0});
    s.observe(got, outcomes);
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

TEST(GridStrategy, VisitsEveryConfigOnceInIndexOrder) {
  auto space = space_of(5, 7);
  auto s = make_strategy("grid", space, 1);
  auto all = drain(*s, 4);
  ASSERT_EQ(all.size(), 35u);
  for (uint64_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], space.at(i));
}

TEST(RandomStrategy, NeverProposesAConfigTwiceAndExhaustsTheSpace) {
  auto space = space_of(10, 10);
  auto s = make_strategy("random", space, 42);
  auto all = drain(*s, 16);
  EXPECT_EQ(all.size(), 100u);
  EXPECT_EQ(std::set<Config>(all.begin(), all.end()).size(), 100u);
}

TEST(RandomStrategy, ReplaysExactlyUnderASeed) {
  auto space = space_of(30, 30);
  auto a = make_strategy("random", space, 9);
  auto b = make_strategy("random", space, 9);
  auto c = make_strategy("random", space, 10);
  auto pa = a->propose(50), pb = b->propose(50), pc = c->propose(50);
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
}

TEST(Strategies, NeverProposeConfigsAlreadyObserved) {
  auto space = space_of(4, 4);
  for (const char* name : {"grid", "random", "ga"}) {
    auto s = make_strategy(name, space, 3);
    for (uint64_t i = 0; i < space.size(); i += 2) s->observe({space.at(i)}, {TrialOutcome{true, 1.0}});
    auto all = drain(*s, 3);
    EXPECT_EQ(all.size(), 8u) << name;
    for (const auto& c : all) EXPECT_EQ(*space.index_of(c) % 2, 1u) << name;
  }
}

TEST(Strategies, UnknownNameIsRejectedWithTheAllowedNames) {
  auto space = space_of(2, 2);
  try {
    make_strategy("annealing", space, 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("annealing"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("random"), std::string::npos);
  }
}

}  // namespace
}  // namespace tuner::search
