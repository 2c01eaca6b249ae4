// Expert parallelism (ep) for mixture-of-experts models, as Megatron-LM
// (core_r0.12) runs it: the experts of every MoE layer are divided over ep GPUs
// carved out of the data-parallel group (dp x cp GPUs that hold the same layers),
// tokens travel to the GPU that holds their expert and back by all-to-all within
// the ep group (dispatch and combine, forward and backward), and the expert
// weights, gradients and optimizer states are divided by ep. The non-expert
// weights (attention, norms, router) stay replicated over dp x cp as before.
//
// The rule (Megatron's validate_args and initialize_model_parallel, with the
// expert tensor-parallel size etp = the tensor-parallel split the layer's ILP
// chose for the experts, 1 or tp):
//   ep divides the experts of every MoE layer    (num_experts % ep == 0)
//   ep divides dp x cp                           (world % (etp x ep x pp) == 0 for etp in {1, tp})
//   ep = 1 for a model without experts
// Expert gradients are reduced (and ZeRO-sharded) over the expert data-parallel
// group of dp x cp / ep GPUs only; the others over dp x cp.
//
// Placement: ep ranks are data-parallel ranks, tp apart (as Megatron places them
// when etp = tp), so a node holds gpus_per_node / tp of them; an ep group wider
// than that spans nodes and its all-to-all pays the network.
//
// This file holds the rule, the groups and the expert arithmetic; the layer's
// costs are in layer_sharding.cpp and the search in planner.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/op_graph.h"

namespace tuner::parallel {

/// Tokens the busiest GPU of an ep group receives, relative to an even split over the experts: routers trained
/// with a load-balancing loss still leave some experts busier than others (dropless routing, no capacity cap).
/// Scales the expert GEMMs and the dispatch/combine all-to-all. Not calibrated per run; see docs/calibration.md.
inline constexpr double kMoeLoadImbalance = 1.1;

/// Experts every MoE layer of the model can be divided by: the gcd of its MoE operators' experts; 0 without any.
int model_experts(const ModelGraph& g);
/// Parameters of an operator that belong to its experts (the MoE FFN's expert matrices; not the router).
int64_t op_expert_params(const Operator& op);
/// Expert parameters of one layer.
int64_t layer_expert_params(const Layer& layer);
/// Expert parameters of the whole model.
int64_t model_expert_params(const ModelGraph& g);

/// The fewest of `params` parameters (`expert_params` of them expert weights) one device can hold when every weight
/// is split `split` ways (tp, or tp x pp for a whole model) and the experts are also divided over ep ranks.
double least_params_per_device(double params, double expert_params, int split, int ep);

/// Why `ep` cannot run with `experts` (model_experts) on dp x cp = dpc GPUs; empty when it can.
std::string expert_parallel_violation(int ep, int experts, int dpc);
/// The ep degrees that divide the experts and dpc, ascending ({1} without experts).
std::vector<int> expert_parallel_degrees(int experts, int dpc);

/// The ep group: ep data-parallel ranks, tp apart (gpus_per_node / tp of them per node).
CommGroup expert_group(const ClusterSpec& c, int tp, int ep);
/// The expert data-parallel group: dp x cp / ep GPUs that hold the same experts (ep x tp apart).
CommGroup expert_data_group(const ClusterSpec& c, int tp, int ep, int dpc);

}  // namespace tuner::parallel
