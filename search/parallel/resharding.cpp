#include "search/parallel/resharding.h"

#include <algorithm>

#include "search/parallel/collective_cost.h"
#include "search/parallel/layer_table.h"

namespace tuner::parallel {

namespace {


CommGroup tensor_group(const ClusterSpec& c, int tp) { return {tp, std::clamp(c.gpus_per_node, 1, tp)}; }

}  // namespace

double layout_reshard_s(const ClusterSpec& c, const Mesh& mesh, const char from[2], const char to[2], double bytes) {
  double s = 0;
  for (int d = 0; d < 2; ++d) {
    if (from[d] == to[d] || mesh.dim_size(d) == 1) continue;
    // The tensor the collective moves is what one group along d holds: split by the other dimension's layout.
    const char other = from[1 - d] != 'R' ? from[1 - d] : to[1 - d];
    const double b = other == 'R' ? bytes : bytes / mesh.dim_size(1 - d);
    if (from[d] == 'R' || to[d] == 'R') s += all_gather_s(c, mesh.group(d), b);  // one direction gathers
    else s += 2 * all_to_all_s(c, mesh.group(d), b);                            // T <-> F both ways
  }
  return s;
}

double stage_reshard_s(const ClusterSpec& c, const StageShape& from, const StageShape& to, double sample_bytes) {
  if (from == to) return 0;
  // Forward: each receiving replica gets its micro_batch sequences in pieces from the sending devices and
  // all-gathers them over its tensor-parallel group; backward: the same for the sender's replicas and the
  // gradient. A side without tensor parallelism receives whole sequences and gathers nothing.
  const double fwd = to.tp > 1 ? all_gather_s(c, tensor_group(c, to.tp), sample_bytes * to.micro_batch) : 0.0;
  const double bwd = from.tp > 1 ? all_gather_s(c, tensor_group(c, from.tp), sample_bytes * from.micro_batch) : 0.0;
  return fwd + bwd;
}

double layer_entry_s(const ClusterSpec& c, const LayerTable& prev, const LayerTable& cur, int l, double sample_bytes) {
  if (prev.shape != cur.shape) return stage_reshard_s(c, prev.shape, cur.shape, sample_bytes);
  if (l == 0 || prev.lp[l - 1] == cur.lp[l]) return 0;
  return layout_reshard_s(c, tensor_mesh(c, cur.shape.tp), prev.lp[l - 1]->out_layout, cur.lp[l]->in_layout,
                          sample_bytes * cur.shape.micro_batch);
}

}  // namespace tuner::parallel
