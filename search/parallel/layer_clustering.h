// Layer clustering before the stage DP (Alpa clusters operators into a few
// layers of balanced FLOPs; our operators already come in layers, so this
// groups consecutive layers into units of balanced time). The DP then places
// stage boundaries between units only, so its work falls from O(L^2) cells per
// stage to O(K^2) while stages stay balanced to within one unit.
//
// Rules: a unit never mixes layers of different kinds (signatures), so the
// embedding and the head stay units of their own and every boundary between
// different layers stays a possible stage boundary; a run of identical layers is
// cut into pieces of equal count whose cost is near total / target (never more
// pieces than the run has layers); a chain of at most `target` layers is left as
// it is. Plain data in and out; the planner's submesh search (submesh.h) uses it.
#pragma once

#include <vector>

namespace tuner::parallel {

/// Unit starts (K + 1 entries, first 0, last L) for a chain of L layers with per-layer `cost` (>= 0) and
/// `kind` (equal values: identical layers), aiming at about `target` units.
std::vector<int> cluster_layers(const std::vector<double>& cost, const std::vector<int>& kind, int target);

}  // namespace tuner::parallel
