// Stage partitions an engine can run as planned. Megatron-LM splits the transformer blocks evenly over the
// pipeline stages, except that the first and the last stage may hold their own counts
// (--decoder-first/last-pipeline-num-layers): a partition whose middle stages differ is one it cannot
// express (it would refuse the run, or split evenly and run a pipeline the plan did not predict). The
// planner's stage DP finds the best partition of any shape; when the plan is for Megatron and that one
// is not expressible, the best expressible partition (first f blocks, middle m each, last the rest) is
// searched here under the same objective and memory test (stage_dp.h's pipeline_objective). DeepSpeed
// does not take a partition at all: its PipelineModule computes one from the layers' parameter counts
// (partition_method "parameters", its default and what the export writes), so a plan for DeepSpeed is
// evaluated on that partition, reproduced here. torchtitan takes the partition as exported (its export
// says where it cannot).
#pragma once

#include <vector>

#include "search/parallel/memory_model.h"
#include "search/parallel/op_graph.h"
#include "search/parallel/stage_dp.h"

namespace tuner::parallel {

/// Transformer blocks in each stage of the partition `starts` (stages + 1 layer indices).
std::vector<int> blocks_per_stage(const ModelGraph& g, const std::vector<int>& starts);

/// Whether `engine` runs the partition `starts` as it is: for Megatron-LM with pp > 1, every stage holds a
/// transformer block and every stage but the first and the last the same number; for DeepSpeed one of its
/// own two (engine_fixed_partition); any partition for the others (torchtitan takes it as split points).
bool engine_expresses_partition(Engine engine, const ModelGraph& g, const std::vector<int>& starts);

/// The partition of `req` (same layer chain as g) with the smallest pipeline_objective among those
/// Megatron-LM expresses: the first stage ends after f blocks, every middle stage holds m, the last the rest
/// (each at least one). m is searched within `window` of the even share. Empty when none is feasible.
std::vector<int> best_megatron_partition(const StageDpRequest& req, const ModelGraph& g, int window = 3);

/// DeepSpeed's partition_balanced (deepspeed/runtime/utils.py as in its current source, read in 2026; older
/// releases had another one, a bisection on the heaviest part, which can cut elsewhere): the
/// cut positions (parts + 1 of them, 0 first, weights.size() last) of the contiguous split of `weights`
/// that minimises the heaviest part minus the lightest, by its dynamic programme over prefix sums, ties
/// going to the later cut as its `>=` does. With no more items than parts: its partition_uniform.
std::vector<int> deepspeed_partition_balanced(const std::vector<double>& weights, int parts);

/// DeepSpeed's partition_uniform: `items` split into `parts` runs of items / parts, the first
/// items % parts runs one longer; with no more items than parts, one each and then empty parts.
std::vector<int> deepspeed_partition_uniform(int items, int parts);

/// The partition `engine` runs for pp = stages whatever the plan says, or empty when it runs the plan's
/// own (Megatron-LM within engine_expresses_partition's rule, torchtitan any). DeepSpeed's PipelineModule
/// splits its layer list, here the model's (embedding, transformer blocks, head with its final norm), by
/// partition_method "parameters" (deepspeed_partition_balanced over each layer's trainable parameters; a
/// tied head counts its weights again, as DeepSpeed's TiedLayerSpec does) or, with `uniform`, by
/// "uniform" (deepspeed_partition_uniform over the layers, embedding and head counted as layers). Empty
/// also for pp = 1, and when a stage would hold no layer.
std::vector<int> engine_fixed_partition(Engine engine, const ModelGraph& g, int stages, bool uniform = false);

}  // namespace tuner::parallel
