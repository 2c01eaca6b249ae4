// Resharding of the activation that crosses a boundary whose two sides lay it
// out differently (Alpa's R_uv, applied between layers and between stages):
//   - between consecutive layers of different kinds in a stage (embedding ->
//     block, block -> head): the first leaves its output in one layout per mesh
//     dimension (R replicated, T token split, F feature split), the second reads
//     another. Per mesh dimension: R <-> split is an all-gather (forward or, for
//     the gradient, backward), T <-> F an all-to-all each way. Identical layers
//     of one sharding never pay here: the layer ILP already charges a layer's
//     output -> input edge. Identical layers of two memory levels (submesh.h) may
//     be sharded differently and pay like layers of different kinds.
//   - between pipeline stages whose submeshes differ (per-stage shapes,
//     submesh.h): the receiving stage all-gathers the micro-batch's boundary
//     activation over its tensor-parallel group in forward, and the sending stage
//     all-gathers its gradient over its own group in backward, since the point-to-
//     point sends deliver each device a shard laid out for the other side.
//     Stages of the same shape pay nothing beyond the sends the planner charges.
// Arithmetic only; the planner decides where boundaries are and adds the time.
#pragma once

#include "search/parallel/cluster_spec.h"
#include "search/parallel/layer_sharding.h"

namespace tuner::parallel {

/// Seconds per micro-batch (forward + backward) to turn an activation of `bytes` (all of it, one micro-batch,
/// unsharded) from layout `from` into layout `to` on `mesh`. 0 when the layouts agree.
double layout_reshard_s(const ClusterSpec& c, const Mesh& mesh, const char from[2], const char to[2], double bytes);

/// The shape of one pipeline stage's submesh: tp x dp GPUs (x cp), each data-parallel replica holding
/// micro_batch sequences of the pipeline's micro-batch.
struct StageShape {
  int tp = 1;
  int dp = 1;
  int micro_batch = 1;   ///< Sequences per device per pipeline micro-batch.
  bool operator==(const StageShape& o) const { return tp == o.tp && dp == o.dp && micro_batch == o.micro_batch; }
  bool operator!=(const StageShape& o) const { return !(*this == o); }
};

/// Seconds per micro-batch to reshard the boundary activation from stage shape `from` to `to`; `sample_bytes` is
/// one sequence's activation (seq x hidden x dtype). 0 when the shapes agree, positive otherwise.
double stage_reshard_s(const ClusterSpec& c, const StageShape& from, const StageShape& to, double sample_bytes);

struct LayerTable;  // layer_table.h
/// Seconds per micro-batch to enter layer l (l > 0) run from table `cur` after layer l - 1 run from `prev`: the
/// resharding between their shapes when those differ (it gathers the activation whole: no layout change remains),
/// else the change from l - 1's output layout to l's input layout. 0 when both run one sharding of one identical
/// layer (the layer ILP charges that edge), but not between two tables of one shape: memory levels solved under
/// different caps may lay the same kind of layer out differently (head-split vs token-split attention).
double layer_entry_s(const ClusterSpec& c, const LayerTable& prev, const LayerTable& cur, int l, double sample_bytes);

}  // namespace tuner::parallel
