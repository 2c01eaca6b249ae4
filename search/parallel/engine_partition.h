// Stage partitions an engine can run as planned. Megatron-LM splits the transformer blocks evenly over the
// pipeline stages, except that the first and the last stage may hold their own counts
// (--decoder-first/last-pipeline-num-layers): a partition whose middle stages differ is one it cannot
// express (it would refuse the run, or split evenly and run a pipeline the plan did not predict). The
// planner's stage DP finds the best partition of any shape; when the plan is for Megatron and that one
// is not expressible, the best expressible partition (first f blocks, middle m each, last the rest) is
// searched here under the same objective and memory test (stage_dp.h's pipeline_objective). DeepSpeed
// and torchtitan take the partition as exported (their export says where they cannot).
#pragma once

#include <vector>

#include "search/parallel/memory_model.h"
#include "search/parallel/op_graph.h"
#include "search/parallel/stage_dp.h"

namespace tuner::parallel {

/// Transformer blocks in each stage of the partition `starts` (stages + 1 layer indices).
std::vector<int> blocks_per_stage(const ModelGraph& g, const std::vector<int>& starts);

/// Whether `engine` runs the partition `starts` as it is: for Megatron-LM with pp > 1, every stage holds a
/// transformer block and every stage but the first and the last the same number; any partition for the others.
bool engine_expresses_partition(Engine engine, const ModelGraph& g, const std::vector<int>& starts);

/// The partition of `req` (same layer chain as g) with the smallest pipeline_objective among those
/// Megatron-LM expresses: the first stage ends after f blocks, every middle stage holds m, the last the rest
/// (each at least one). m is searched within `window` of the even share. Empty when none is feasible.
std::vector<int> best_megatron_partition(const StageDpRequest& req, const ModelGraph& g, int window = 3);

}  // namespace tuner::parallel
