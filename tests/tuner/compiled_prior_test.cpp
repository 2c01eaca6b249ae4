// The analytic prior fed compiled resources (tuner/compiled_resources.h through
// tuner/strategy_factory.h): xgb's first proposal on the softmax space of an
// H100 is the config the analytic model ranks best with the registers NVRTC
// really gives the prior's best candidates, not the one it ranks best with
// estimated registers; compiles are counted and remembered; a seed replays.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include "costmodel/analytic_model.h"
#include "costmodel/features.h"
#include "templates/registry.h"
#include "tuner/compile_cache.h"
#include "tuner/compiled_resources.h"
#include "tuner/device_registry.h"
#include "tuner/nvrtc_builder.h"
#include "tuner/strategy_factory.h"

namespace tuner {
namespace {

constexpr size_t kRefine = 12;  // compiles per run (kept small: NVRTC takes a second or so per config)

class CompiledPrior : public ::testing::Test {
 protected:
  CompiledPrior()
      : dir_(std::filesystem::temp_directory_path() /  // one folder per process and test: ctest runs them in parallel
             ("compiled_prior_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        cache_(dir_.string()),
        builder_(&cache_),
        pool_(builder_, 2),
        gpu_(*costmodel::find_gpu_spec("h100-sxm")),
        limits_(limits_of(gpu_)),
        workload_(templates::parse_workload("softmax", "rows=4096,cols=4096", "f16")),
        tmpl_(templates::find_template("softmax", workload_.dtype, &limits_)),
        space_(tmpl_.space(workload_, limits_)),
        compiled_(tmpl_, space_, workload_, limits_, pool_) {}
  ~CompiledPrior() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  /// Minus the log of the analytic model's time with these resources (larger = faster).
  double value(const search::Config& c, const costmodel::KernelResources& r) const {
    const auto e = costmodel::estimate(tmpl_.profile(space_, c, workload_), r, gpu_);
    return e.launchable ? -std::log(e.time_ms) : -1e30;
  }
  double estimated_value(const search::Config& c) const {
    const auto p = tmpl_.profile(space_, c, workload_);
    return value(c, {costmodel::estimated_registers(p), 0, 0});
  }

  std::unique_ptr<search::SearchStrategy> strategy(uint64_t seed, bool with_resources) {
    StrategyOptions o;
    o.analytic_prior = true;
    o.annealing.prior_refine = kRefine;
    if (with_resources)
      o.resources = [this](const std::vector<search::Config>& cs) { return compiled_.resources(cs); };
    return build_strategy("xgb", space_, seed, tmpl_, workload_, gpu_, o);
  }

  std::filesystem::path dir_;
  CompileCache cache_;
  NvrtcBuilder builder_;
  CompilePool pool_;
  costmodel::GpuSpec gpu_;
  templates::DeviceLimits limits_;
  templates::Workload workload_;
  const templates::KernelTemplate& tmpl_;
  search::ConfigSpace space_;
  CompiledResources compiled_;
};

TEST_F(CompiledPrior, TheFirstProposalIsTheBestByCompiledRegistersAmongThePriorsBest) {
  ASSERT_LE(space_.size(), 4096u) << "the prior ranks the whole space";
  // The prior's ranking with estimated registers, and its best kRefine configs.
  std::vector<search::Config> all;
  for (uint64_t i = 0; i < space_.size(); ++i) all.push_back(space_.at(i));
  std::stable_sort(all.begin(), all.end(),
                   [&](const auto& a, const auto& b) { return estimated_value(a) > estimated_value(b); });
  const std::vector<search::Config> top(all.begin(), all.begin() + kRefine);
  // What NVRTC says of them, and the best of them by the analytic model fed those resources.
  const auto resources = compiled_.resources(top);
  ASSERT_EQ(compiled_.stats().compiled + compiled_.stats().from_cache, static_cast<int64_t>(kRefine));
  size_t best = 0;
  double best_value = -1e300;
  for (size_t i = 0; i < top.size(); ++i) {
    ASSERT_TRUE(resources[i]) << "softmax configs compile";
    EXPECT_GT(resources[i]->registers, 0);
    if (value(top[i], *resources[i]) > best_value) {
      best_value = value(top[i], *resources[i]);
      best = i;
    }
  }
  ASSERT_NE(best, 0u) << "the compiled registers must change the ranking, or this test shows nothing";

  const auto first = strategy(3, true)->propose(64);
  ASSERT_FALSE(first.empty());
  // Configs of equal estimate may be ordered otherwise by the strategy: every config estimated above the
  // kRefine-th is in its refined set whatever the order of ties, and its first pick is the refined best.
  const double cut = estimated_value(top.back());
  EXPECT_GE(estimated_value(first.front()), cut) << "the first pick is among the prior's best";
  const auto picked = compiled_.resources({first.front()}).front();
  ASSERT_TRUE(picked);
  for (size_t i = 0; i < top.size(); ++i)
    if (estimated_value(top[i]) > cut) {
      EXPECT_GE(value(first.front(), *picked), value(top[i], *resources[i])) << "the refined best comes first";
    }
  EXPECT_NE(estimated_value(first.front()), estimated_value(top[0]))
      << "compiled registers moved another config first than the estimate's favourite";
  EXPECT_EQ(first.size(), search::AnnealingParams{}.prior_first_batch);
  EXPECT_LE(compiled_.stats().compiled + compiled_.stats().from_cache, static_cast<int64_t>(kRefine) + 1)
      << "the strategy's configs were compiled once (ties may swap one of the last)";
  // Without resources the prior's own favourite (or one estimated the same) comes first.
  EXPECT_EQ(estimated_value(strategy(3, false)->propose(64).front()), estimated_value(top[0]));
  // The same seed replays the same first batch.
  EXPECT_EQ(strategy(3, true)->propose(64), first);
}

TEST_F(CompiledPrior, EachConfigCompilesOnceAndOneOutsideTheSpaceHasNoResources) {
  // Two configs, one asked twice: both compile once; an index outside the space has no resources.
  const std::vector<search::Config> cs = {space_.at(0), space_.at(1), space_.at(0), search::Config{-1, -1, -1, -1, -1}};
  const auto r = compiled_.resources(cs);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0] && r[1] && r[2]);
  EXPECT_EQ(r[0]->registers, r[2]->registers);
  EXPECT_FALSE(r[3]);
  EXPECT_EQ(compiled_.stats().compiled + compiled_.stats().from_cache, 2);
  EXPECT_GT(compiled_.stats().wall_s, 0);
}

}  // namespace
}  // namespace tuner
