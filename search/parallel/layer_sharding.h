// Intra-operator sharding of one layer on a 2-D logical mesh, through the ILP.
//
// The mesh of a tensor-parallel group is (d0, d1): d1 GPUs inside a node
// (NVLink), d0 nodes (network). On each mesh dimension an operator picks one
// strategy letter:
//   R replicated            B batch (token) split      C column (output) split, all-reduce of the input
//                                                       gradient in backward
//   K reduction split,      H attention-head split     F feature split (elementwise, vocab-parallel loss)
//     all-reduce of output  V vocabulary split of the   P split inside experts (all-reduce fwd and bwd;
//                             embedding, all-reduce       Megatron's expert tensor parallelism)
// Experts themselves are divided over the expert-parallel group (ep data-parallel ranks, expert_parallel.h),
// not over the tensor mesh: the MoE op's cost includes its dispatch and combine all-to-alls over that group.
// An op's strategy is its letters on (d0, d1), e.g. "R,C"; on a (1, t) mesh just "C".
// Activations are [tokens, features]; each strategy reads and writes a layout
// per mesh dimension (R, T = token split, F = feature split); edges between
// layouts charge all-gathers (R <-> split) or all-to-alls (T <-> F), once in
// forward and once in backward; where a token split meets an all-reduce, the
// edge credits the all-reduce's excess over a reduce-scatter (Megatron's
// sequence parallelism). A pseudo-node "input" stands for the layer's
// input; for a layer whose output can feed a copy of itself, an edge from the
// output back to "input" charges what the next identical layer would pay.
//
// This file builds the ShardingRequest, solves it and reads the solution back as
// per-op costs. It does not pick tensor-parallel degrees or stages (planner.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/memory_model.h"
#include "search/parallel/op_cost.h"
#include "search/parallel/op_graph.h"
#include "search/parallel/sharding_ilp.h"

namespace tuner::parallel {

/// Logical mesh of a tensor-parallel group: d0 across nodes, d1 inside a node.
struct Mesh {
  int d0 = 1;
  int d1 = 1;
  int size() const { return d0 * d1; }
  /// GPUs along mesh dimension dim (0 or 1).
  int dim_size(int dim) const { return dim == 0 ? d0 : d1; }
  /// The communication group of one line of the mesh along dim: d1 GPUs in one node, or d0 GPUs one per node.
  CommGroup group(int dim) const { return dim == 1 ? CommGroup{d1, d1} : CommGroup{d0, 1}; }
};

/// The mesh for a tensor-parallel degree on this cluster: (1, tp) inside a node, else (tp / gpn, gpn).
Mesh tensor_mesh(const ClusterSpec& c, int tp);

struct OpShardingPlan {
  std::string op;
  std::string strategy;        ///< e.g. "C" or "R,C".
  double fwd_compute_s = 0;    ///< Forward kernel time of the shard.
  double bwd_compute_s = 0;    ///< Backward (2x forward).
  double fwd_memory_s = 0;     ///< Of fwd_compute_s, memory-bound kernels (backward: twice as much).
  double fwd_comm_s = 0;       ///< The strategy's own collectives in forward.
  double bwd_comm_s = 0;       ///< ... and in backward.
  double params_per_device = 0;
  std::string source;          ///< "tuned", "analytic", "mixed".
};

struct LayerPlan {
  std::vector<OpShardingPlan> ops;
  double fwd_s = 0;             ///< Forward time per micro-batch: compute + collectives + half the resharding.
  double bwd_s = 0;             ///< Backward time per micro-batch.
  double attention_fwd_s = 0;   ///< Forward of the attention cores (what selective recomputation repeats).
  double compute_s = 0;         ///< Forward + backward time of compute-bound kernels (matmuls, fused attention).
  double memory_bound_s = 0;    ///< Forward + backward time of memory-bound kernels (norms, softmax, elementwise).
  double comm_s = 0;            ///< Forward + backward collectives of the sharding and resharding between ops.
  double ep_comm_s = 0;         ///< Forward + backward expert dispatch/combine all-to-alls (not in comm_s).
  double cp_comm_s = 0;         ///< Forward + backward context-parallel K/V ring exchange (not in comm_s).
  double params_per_device = 0;
  double expert_params_per_device = 0;  ///< Of params_per_device, expert weights (already divided by ep).
  double activation_bytes = 0;  ///< Sum of op outputs per device for one micro-batch (generic layers).
  bool sequence_parallel = false;  ///< Residual-stream ops split by tokens on a mesh dimension > 1.
  bool optimal = false;         ///< CBC proved the solution optimal.
  /// Layout of the layer's input and output activation per mesh dimension (d0, d1): R replicated,
  /// T token split, F feature split. Consecutive layers whose layouts differ pay a resharding (resharding.h).
  char in_layout[2] = {'R', 'R'};
  char out_layout[2] = {'R', 'R'};
  std::string status;
  int parts = 0, tuned_parts = 0;
};

/// Which strategies an op may take on a tensor-parallel mesh dimension (> 1 GPU).
struct TensorLayoutRules {
  /// Sequence parallelism. Unset: the ILP chooses per op without an engine; an engine runs its own way (Megatron-LM
  /// and torchtitan split the residual stream's tokens over the tensor group, DeepSpeed's AutoTP does not). true
  /// (--fix sp=1): every residual-stream op splits its tokens. false (--fix sp=0): no op splits tokens over a
  /// tensor-parallel dimension and the residual stream stays whole on every rank, as Megatron-LM runs without
  /// --sequence-parallel (and as it ran before 2022).
  std::optional<bool> sequence_parallel;
  /// The engine the plan is for. kGeneric: any strategy (Alpa's space, e.g. a linear split by tokens inside the
  /// tensor group). An engine: only the layouts its tensor parallelism runs, the same letter on both mesh
  /// dimensions (one tensor group), per op:
  ///   Megatron-LM   linears C or K, attention H, vocab-parallel embedding V and loss F, other elementwise ops F
  ///                 or R, the residual stream B (R under sp=0);
  ///   torchtitan    the same (its TP plan always runs SequenceParallel);
  ///   DeepSpeed     AutoTP: linears C or K but the head's K (LmHeadLinearAllreduce: whole logits), attention H,
  ///                 the embedding split over hidden (C), the loss R, the residual stream R (no sequence
  ///                 parallelism).
  Engine engine = Engine::kGeneric;
  /// Whether the engine's loss keeps its softmax in fp32 for backward (PlannerOptions::loss_fp32).
  bool loss_fp32 = true;
  /// Whether the residual stream must split its tokens over the tensor group (the engine's way or sp=1).
  bool residual_split_required() const;
};

/// Per op of a layer (in its order), whether it is on the residual stream: a norm or an elementwise op that reads
/// the layer's input or another residual-stream op (a block's norms and residual adds, pre- or post-LN), not one
/// inside a block (an activation, a gating multiply of two projections, a Q/K norm after the qkv projection).
std::vector<bool> residual_stream(const Layer& layer);

/// The sharding problem of one layer for `micro_batch` samples on `mesh`. A strategy's memory is
/// state_bytes_per_param x its local parameters (16: weights, gradients and Adam states unsharded;
/// less under ZeRO) plus its output activations; memory_budget caps their sum (bytes).
/// Under context parallelism (cp > 1) g.seq is the tokens each GPU holds (seq / cp): attention computes them
/// against all cp x g.seq keys, passing K/V around the cp group overlapped with its kernels (the excess counts, and
/// CostParams::overlap_interference of the hidden part).
/// Under expert parallelism (ep > 1) MoE experts are divided over ep data-parallel ranks (expert_parallel.h).
ShardingRequest build_layer_request(const Layer& layer, const ModelGraph& g, const ClusterSpec& c, Mesh mesh,
                                    int micro_batch, OpCostModel& costs, double memory_budget,
                                    double state_bytes_per_param = 16, int cp = 1, int ep = 1,
                                    TensorLayoutRules rules = {});
/// Solves the layer's sharding with CBC and reads the result back, each op within `rules`.
LayerPlan plan_layer_sharding(const Layer& layer, const ModelGraph& g, const ClusterSpec& c, Mesh mesh,
                              int micro_batch, OpCostModel& costs, double memory_budget,
                              double state_bytes_per_param = 16, int cp = 1, int ep = 1,
                              TensorLayoutRules rules = {});

}  // namespace tuner::parallel
