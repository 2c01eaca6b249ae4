// The config space's enumeration skips runs of product indices on what a constraint read (a failure skips
// the run, a pass is not asked again within it). Here, for every template, dtype and device and its full
// space: a config is in the space exactly when every constraint holds on it asked directly (violation()),
// on a seeded sample of the whole cartesian product and on every valid config's one-knob neighbours.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "templates/registry.h"
#include "tuner/device_limits.h"

namespace tuner::templates {
namespace {

std::string shape_for_space_test(const std::string& op) {
  if (op == "gemm") return "M=1000,N=1000,K=1000";
  if (op == "batched_gemm") return "B=3,M=200,N=136,K=300";
  if (op == "conv2d") return "N=2,H=28,W=28,C=64,K=96,R=3,S=3,stride=1,pad=1";
  return "rows=4096,cols=4096";
}

search::Config random_product_config(const search::ConfigSpace& space, search::Rng& rng) {
  search::Config c;
  for (const auto& k : space.knobs())
    c.push_back(k.values[std::uniform_int_distribution<size_t>(0, k.values.size() - 1)(rng)]);
  return c;
}

TEST(SpaceEnumeration, AConfigIsInTheSpaceExactlyWhenEveryConstraintHolds) {
  int spaces = 0, valid_seen = 0, invalid_seen = 0;
  for (const char* gpu : {"sim:h100-sxm", "sim:a100-sxm4-80gb"}) {
    const DeviceLimits limits =
        gpu[6] == 'h' ? limits_of_recorded(gpu, 9, 0, 132) : limits_of_recorded(gpu, 8, 0, 108);
    for (const auto* t : all_templates()) {
      for (DType d : t->dtypes()) {
        const Workload w = parse_workload(t->op(), shape_for_space_test(t->op()), to_string(d));
        if (t->unsupported(w) || t->unsupported_on(limits)) continue;
        const search::ConfigSpace space = t->space(w, limits);
        ++spaces;
        search::Rng rng(7);
        for (int i = 0; i < 3000; ++i) {
          const search::Config c = random_product_config(space, rng);
          const bool valid = !space.violation(c).has_value();
          ASSERT_EQ(space.index_of(c).has_value(), valid)
              << t->name() << " " << to_string(d) << " on " << gpu << ": " << space.to_json_string(c);
          (valid ? valid_seen : invalid_seen)++;
        }
        for (int i = 0; i < 20 && space.size() > 0; ++i) {
          const search::Config c = space.sample(rng);
          ASSERT_FALSE(space.violation(c).has_value()) << t->name() << " " << space.to_json_string(c);
          for (size_t k = 0; k < c.size(); ++k) {
            for (int64_t v : space.knobs()[k].values) {
              search::Config n = c;
              n[k] = v;
              ASSERT_EQ(space.index_of(n).has_value(), !space.violation(n).has_value())
                  << t->name() << " " << to_string(d) << " on " << gpu << ": " << space.to_json_string(n);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(spaces, 20);
  EXPECT_GT(invalid_seen, 1000) << "the sample reaches configs the constraints refuse";
  EXPECT_GT(valid_seen, 0);
}

}  // namespace
}  // namespace tuner::templates
