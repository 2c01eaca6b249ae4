// Where the time of one training iteration goes, for one pipeline stage: the
// terms a plan's iteration time is made of, so a user can see why a plan wins.
//
// Every stage's terms add up to the iteration time: its busy time (compute,
// memory-bound kernels, recomputation, tensor/sequence-parallel collectives,
// expert-parallel all-to-alls, the context-parallel ring, resharding between layers and stages laid out
// differently, pipeline sends, ZeRO traffic: what a layer cannot hide and the slowdown of what it hides), the time
// it idles in the pipeline schedule (bubble), its own data-parallel reduction (exposed part and slowdown) and
// optimizer step, and the time it waits for slower stages to finish theirs.
// This file is plain data; the planner (planner.cpp) fills it.
#pragma once

namespace tuner::parallel {

struct TimeBreakdown {
  double compute_s = 0;       ///< Matmuls and fused attention, forward + backward, all micro-batches (seconds).
  double memory_bound_s = 0;  ///< Norms, softmax, elementwise, dropout, embedding lookups.
  double recompute_s = 0;     ///< Forward work repeated by activation recomputation.
  double tp_comm_s = 0;       ///< Tensor/sequence-parallel collectives and resharding between operators.
  double ep_comm_s = 0;       ///< Expert-parallel token dispatch and combine (all-to-all in the ep group).
  /// Context parallelism: the ring's K/V exchange (and its gradients') the attention kernels cannot hide, plus
  /// overlap_interference of the hidden part.
  double cp_comm_s = 0;
  /// ZeRO-2/3 per-micro-batch collectives: the part the layer's work cannot hide, plus overlap_interference of the
  /// hidden part (the slowdown they cause the work they run beside; all of them when it is 1).
  double zero_comm_s = 0;
  double reshard_s = 0;       ///< Activation resharding between layers of different shardings and stages of
                              ///< different submeshes (resharding.h).
  double pp_p2p_s = 0;        ///< Pipeline sends of activations and gradients between stages.
  double pp_bubble_s = 0;     ///< Idle in the pipeline schedule: fill, drain, and waiting on the slowest stage.
  /// Data-parallel gradient reduction: the part the last backward cannot hide (at least one layer's bucket), plus
  /// overlap_interference of the hidden part; and the ZeRO-1/2 weight all-gather after the step.
  double dp_comm_s = 0;
  double optimizer_s = 0;     ///< The optimizer step: parameters, gradients and Adam states through DRAM.
  double wait_s = 0;          ///< Waiting for slower stages' data-parallel reduction and optimizer step.
  double total() const {
    return compute_s + memory_bound_s + recompute_s + tp_comm_s + ep_comm_s + cp_comm_s + zero_comm_s + reshard_s + pp_p2p_s +
           pp_bubble_s + dp_comm_s + optimizer_s + wait_s;
  }
};

}  // namespace tuner::parallel
