#include "tuner/compile_pool.h"

#include <gtest/gtest.h>

namespace tuner {
namespace {

TEST(CompilePoolDiscard, DropsQueuedJobsAndLetsTheRunningOneFinish) {
  NvrtcBuilder builder(nullptr);
  CompilePool pool(builder, 1);
  std::vector<std::future<CompileResult>> futures;
  for (int i = 0; i < 6; ++i) {
    const std::string src = "extern \"C\" __global__ void k" + std::to_string(i) + "(float* p) { p[threadIdx.x] = " +
                            std::to_string(i) + ".0f; }";
    futures.push_back(pool.submit({src, "k" + std::to_string(i), "sm_90", {}}));
  }
  pool.discard_queued();
  int finished = 0, dropped = 0;
  for (auto& f : futures) {
    try {
      finished += f.get().ok();
    } catch (const std::future_error& e) {
      EXPECT_EQ(e.code(), std::future_errc::broken_promise);
      ++dropped;
    }
  }
  EXPECT_GE(finished, 0);
  EXPECT_LE(finished, 2);  // at most the job the single thread had already taken (plus a race)
  EXPECT_EQ(finished + dropped, 6);
  EXPECT_GE(dropped, 4);
  // The pool still works after a discard.
  EXPECT_TRUE(pool.submit({"extern \"C\" __global__ void z() {}", "z", "sm_90", {}}).get().ok());
}

}  // namespace
}  // namespace tuner
