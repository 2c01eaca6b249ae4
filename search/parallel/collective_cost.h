// Alpha-beta costs of collectives and point-to-point transfers on a cluster.
//
// A group of n GPUs is described by how many of them share a node (per_node):
// all in one node -> the NVLink link; one per node -> the network link; both ->
// hierarchical (intra-node step, inter-node step over n/per_node nodes on the
// per-node shard, intra-node step). With B the message in bytes (the full
// tensor), alpha the latency and beta = 1 / per-GPU bandwidth (one direction):
//   all-gather      alpha + beta (n-1)/n B
//   reduce-scatter  alpha + beta (n-1)/n B
//   all-reduce      alpha + 2 beta (n-1)/n B
//   all-to-all      alpha + beta (n-1)/n^2 B n/2  (Alpa's form; a spanning group pays the network link)
//   p2p             alpha + beta B
// and, for token dispatch in expert parallelism, an all-to-all in which each member
// sends b bytes spread evenly over the n members, k of them in its node: the
// (k-1)/n share goes over NVLink, the (n-k)/n share over the network, both at once:
//   all-to-all (per GPU)  alpha + max(beta_intra (k-1)/n, beta_inter (n-k)/n) b
// (alpha of the network once the group spans nodes).
// This file is arithmetic only: which collectives a plan needs is decided by
// the sharding and the planner.
#pragma once

#include "search/parallel/cluster_spec.h"

namespace tuner::parallel {

/// A communication group: size members, per_node of them in each node (1 <= per_node <= size).
struct CommGroup {
  int size = 1;
  int per_node = 1;
};

/// Seconds for the collective over the group; B = bytes of the whole (unsharded) tensor.
double all_gather_s(const ClusterSpec& c, CommGroup g, double bytes);
double reduce_scatter_s(const ClusterSpec& c, CommGroup g, double bytes);
double all_reduce_s(const ClusterSpec& c, CommGroup g, double bytes);
double all_to_all_s(const ClusterSpec& c, CommGroup g, double bytes);
/// All-to-all in which each member sends `bytes_per_gpu` spread evenly over the group (MoE dispatch/combine).
double all_to_all_per_gpu_s(const ClusterSpec& c, CommGroup g, double bytes_per_gpu);
/// One transfer of `bytes` between two GPUs, inside a node or across nodes.
double p2p_s(const ClusterSpec& c, bool cross_node, double bytes);

}  // namespace tuner::parallel
