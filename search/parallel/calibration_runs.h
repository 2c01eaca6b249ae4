// Published training runs the analytic cost model is calibrated against, and
// the error of the model on each: the same CostParams for every run, no
// per-run constants. Each run names its source and the configuration it used,
// pinned through --fix as a user would; the planner predicts its iteration time.
//
// The held-out set of issue 14 (Narayanan et al. 2021, dense GPTs 1.7B-1T on
// A100) is kept apart (held_out_runs): no parameter is fitted to it. Its pins
// are what the reviewers pin (tp, pp, dp, batch, recomputation); the
// configuration the runs actually used (micro-batch, schedule) is recorded
// beside them. docs/calibration.md lists the runs, the fitted parameters and
// the per-run errors; plan_bench prints the same tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/parallel/memory_model.h"
#include "search/parallel/op_cost.h"

namespace tuner::parallel {

struct PublishedRun {
  std::string label;            ///< e.g. "GPT 175B, selective".
  std::string source;           ///< Paper and table.
  std::string model;            ///< Model spec as `tuner plan --model` takes it.
  std::string cluster;          ///< Cluster spec.
  int64_t global_batch = 0;     ///< Sequences per iteration.
  std::string fix;              ///< The run's configuration, as --fix pins.
  /// Held-out runs: the rest of the configuration the run used (e.g. "mbs=8,schedule=1f1b,zero=0"), which `fix`
  /// leaves to the planner; empty for calibration runs (their `fix` is the whole configuration).
  std::string published_config;
  AttentionKernel attention = AttentionKernel::kFlash;
  /// The run's fused attention kernel against the FlashAttention-2 class kernel CostParams::attention_efficiency
  /// stands for, as a factor on it (1: that class). From published kernel benchmarks, not fitted.
  double attention_kernel_factor = 1;
  Engine engine = Engine::kGeneric;  ///< The engine that ran it, for its bytes per parameter (FSDP2: torchtitan's).
  std::optional<bool> loss_fp32;     ///< Its loss keeps the softmax in fp32 (PlannerOptions::loss_fp32).
  double iteration_time_s = 0;  ///< Published (or derived from published throughput; see note).
  std::string note;             ///< How the figure was read; how sure we are of it.
};

/// The calibration set: dense GPTs on A100 with Megatron-LM (Korthikanti et al.), and on H100 a dense Llama and an
/// MoE trained with FSDP2 (NeMo AutoModel); see docs/calibration.md for the sources and the runs left out.
const std::vector<PublishedRun>& calibration_runs();

/// The held-out set: Narayanan et al. 2021 (SC21), table 1, dense GPTs 1.7B-1T on DGX A100 with Megatron-LM,
/// full recomputation; iteration times derived from the published TFLOP/s per GPU. Not fitted.
const std::vector<PublishedRun>& held_out_runs();

/// A second held-out set, found after the first was used: MosaicML llm-foundry's MPT benchmarks, dense GPTs of
/// 760M-30B on 8 A100-80GB with PyTorch FSDP (ZeRO-3), tensor parallelism 1. Not fitted; docs/calibration.md says
/// how far the model is from it.
const std::vector<PublishedRun>& fsdp_held_out_runs();

struct RunPrediction {
  double predicted_s = 0;
  double error = 0;             ///< predicted / published - 1.
  std::string config;           ///< describe() of the planned configuration.
};

/// Plans the run with its pins under `params` (its attention kernel replacing params.attention); with
/// `published_config`, the run's whole published configuration is pinned (its fix and its published_config).
RunPrediction predict_run(const PublishedRun& run, const CostParams& params = {}, bool published_config = false);

}  // namespace tuner::parallel
