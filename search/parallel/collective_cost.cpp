#include "search/parallel/collective_cost.h"

#include <algorithm>

namespace tuner::parallel {

namespace {

double alpha(const LinkSpec& l) { return l.latency_us * 1e-6; }
double beta(const LinkSpec& l) { return 1.0 / (l.bandwidth_gbps * 1e9); }

/// Ring all-gather or reduce-scatter over n members on one link.
double ring_half(const LinkSpec& l, int n, double bytes) {
  if (n <= 1) return 0;
  return alpha(l) + beta(l) * (n - 1) / n * bytes;
}

const LinkSpec& flat_link(const ClusterSpec& c, CommGroup g) { return g.per_node >= g.size ? c.intra : c.inter; }

CommGroup normalise(CommGroup g) {
  g.size = std::max(1, g.size);
  g.per_node = std::clamp(g.per_node, 1, g.size);
  return g;
}

}  // namespace

double all_gather_s(const ClusterSpec& c, CommGroup g, double bytes) {
  g = normalise(g);
  if (g.size <= 1) return 0;
  if (g.per_node == g.size || g.per_node == 1) return ring_half(flat_link(c, g), g.size, bytes);
  // Across nodes on the per-node share (B / per_node), then inside the node on the whole.
  const int nodes = g.size / g.per_node;
  return ring_half(c.inter, nodes, bytes / g.per_node) + ring_half(c.intra, g.per_node, bytes);
}

double reduce_scatter_s(const ClusterSpec& c, CommGroup g, double bytes) {
  return all_gather_s(c, g, bytes);  // the mirror image moves the same bytes
}

double all_reduce_s(const ClusterSpec& c, CommGroup g, double bytes) {
  g = normalise(g);
  if (g.size <= 1) return 0;
  if (g.per_node == g.size || g.per_node == 1) {
    const LinkSpec& l = flat_link(c, g);
    return alpha(l) + 2 * beta(l) * (g.size - 1) / g.size * bytes;
  }
  // Hierarchical: reduce-scatter in the node, all-reduce across nodes on B/per_node, all-gather in the node.
  const int nodes = g.size / g.per_node;
  const double inter = alpha(c.inter) + 2 * beta(c.inter) * (nodes - 1) / nodes * (bytes / g.per_node);
  return 2 * ring_half(c.intra, g.per_node, bytes) + inter;
}

double all_to_all_s(const ClusterSpec& c, CommGroup g, double bytes) {
  g = normalise(g);
  if (g.size <= 1) return 0;
  const LinkSpec& l = g.per_node >= g.size ? c.intra : c.inter;
  const double n = g.size;
  return alpha(l) + beta(l) * (n - 1) / (n * n) * bytes * n / 2;
}

double all_to_all_per_gpu_s(const ClusterSpec& c, CommGroup g, double bytes_per_gpu) {
  g = normalise(g);
  if (g.size <= 1) return 0;
  const double n = g.size, k = g.per_node;
  const double intra = beta(c.intra) * (k - 1) / n * bytes_per_gpu;
  const double inter = beta(c.inter) * (n - k) / n * bytes_per_gpu;
  return alpha(g.per_node >= g.size ? c.intra : c.inter) + std::max(intra, inter);
}

double p2p_s(const ClusterSpec& c, bool cross_node, double bytes) {
  const LinkSpec& l = cross_node ? c.inter : c.intra;
  return alpha(l) + beta(l) * bytes;
}

}  // namespace tuner::parallel
