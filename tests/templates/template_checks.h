// Checks every kernel template must pass, shared by the per-template tests:
// profile() equals instantiate().profile, the reduced space is small and covers
// every knob value, and every reduced config is valid in the full space.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "templates/kernel_files.h"
#include "templates/kernel_template.h"

namespace tuner::templates {

inline DeviceLimits h100_test_limits() {
  DeviceLimits l;
  l.arch = "sm_90";
  l.max_shared_per_block_bytes = 227 * 1024;
  return l;
}

/// The direct convolution of a conv2d workload (NHWC input x, KRSC filter f) in double: NPQK output.
inline std::vector<double> direct_conv(const Workload& w, const std::vector<double>& x, const std::vector<double>& f) {
  const int64_t N = w.dim("N"), H = w.dim("H"), W = w.dim("W"), C = w.dim("C"), K = w.dim("K"), R = w.dim("R");
  const int64_t S = w.dim("S"), st = w.dim("stride"), pad = w.dim("pad"), dil = w.dim("dilation");
  const int64_t P = (H + 2 * pad - dil * (R - 1) - 1) / st + 1, Q = (W + 2 * pad - dil * (S - 1) - 1) / st + 1;
  std::vector<double> y(static_cast<size_t>(N * P * Q * K), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t k = 0; k < K; ++k) {
          double ref = 0;
          for (int64_t r = 0; r < R; ++r)
            for (int64_t s = 0; s < S; ++s) {
              const int64_t h = p * st - pad + r * dil, ww = q * st - pad + s * dil;
              if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
              for (int64_t c = 0; c < C; ++c)
                ref += x[static_cast<size_t>(((n * H + h) * W + ww) * C + c)] * f[static_cast<size_t>(((k * R + r) * S + s) * C + c)];
            }
          y[static_cast<size_t>(((n * P + p) * Q + q) * K + k)] = ref;
        }
  return y;
}

/// The shared checks on workload w; `max_reduced` bounds the reduced space's size.
inline void check_template_contract(const KernelTemplate& t, const Workload& w, size_t max_reduced = 64) {
  SCOPED_TRACE(t.name() + " " + w.to_string());
  EXPECT_EQ(t.unsupported(w), std::nullopt);
  const auto limits = h100_test_limits();
  auto full = t.space(w, limits);
  auto reduced = t.reduced_space(w, limits);
  EXPECT_GT(full.size(), reduced.size());
  EXPECT_GE(reduced.size(), 4u);
  EXPECT_LE(reduced.size(), max_reduced);
  auto configs = reduced.enumerate();
  for (size_t k = 0; k < reduced.knobs().size(); ++k)
    for (int64_t v : reduced.knobs()[k].values) {
      bool seen = false;
      for (const auto& c : configs) seen = seen || c[k] == v;
      EXPECT_TRUE(seen) << reduced.knobs()[k].name << "=" << v << " is in no reduced config";
    }
  for (const auto& c : configs) {
    const std::string cfg = reduced.to_json_string(c);
    auto in_full = full.from_json(reduced.to_json(c));
    ASSERT_TRUE(full.is_valid(in_full)) << cfg;
    const auto k = t.instantiate(reduced, c, w);
    const auto p = t.profile(reduced, c, w);
    EXPECT_EQ(nlohmann::json(p), nlohmann::json(k.profile)) << cfg;
    EXPECT_EQ(t.profile(full, in_full, w).flops, p.flops) << cfg;
    EXPECT_GE(k.launch.block[0] * k.launch.block[1] * k.launch.block[2], 32u) << cfg;
    EXPECT_LE(k.launch.block[0] * k.launch.block[1] * k.launch.block[2], 1024u) << cfg;
    EXPECT_LE(k.launch.dynamic_shared_bytes, limits.max_shared_per_block_bytes) << cfg;
    EXPECT_GT(p.dram_bytes, 0) << cfg;
    EXPECT_GT(p.blocks, 0) << cfg;
    EXPECT_FALSE(k.source.empty());
    // The kernel names appear in the code NVRTC compiles (the kernel files the sources include).
    EXPECT_NE(templates::expand_kernel_files(k.source).find(k.kernel_name), std::string::npos) << cfg;
    EXPECT_NE(templates::expand_kernel_files(k.reference_source).find(k.reference_kernel_name), std::string::npos) << cfg;
    int outputs = 0;
    for (const auto& b : k.buffers) {
      // An output may be wider (fp32 accumulators); a workspace is the kernel's own fp32 scratch.
      if (!b.output && !b.workspace) {
        EXPECT_EQ(b.dtype, w.dtype) << b.name;
      }
      outputs += b.output;
    }
    EXPECT_EQ(outputs, 1) << cfg;
  }
  // The version text does not depend on the workload or config.
  EXPECT_EQ(t.source_text(), t.source_text());
}

}  // namespace tuner::templates
