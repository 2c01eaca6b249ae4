// What a JSON graph's transformer layers are, in the terms an engine's export
// needs to build the same model: grouped-query attention, the head width, the
// MLP's width and gating (or its experts), a Q/K norm. Presets and family
// forms state these; a JSON graph states ops, so they are read here from the
// first transformer layer's ops, and where the other transformer layers differ
// from it (widths, experts, dense and MoE layers mixed) that is named, for the
// exports to warn that an engine builds every layer alike. The same reading gives each layer's activation widths
// (block_widths) to the memory model.
#pragma once

#include "search/parallel/memory_model.h"
#include "search/parallel/op_graph.h"

namespace tuner::parallel {

/// Sets g's heads, kv_heads, head_dim, ffn, swiglu, qk_norm (from the first kTransformer layer) and layers_differ
/// (from all of them); nothing when it has none.
void read_architecture(ModelGraph& g);

/// The widths a transformer layer's activations follow (memory_model.h), read from its ops as the exports read
/// them: its attention's query and key/value widths, its MLP's or experts' width and gating, and the experts a token
/// visits; zeros (the GPT form) where its ops do not say.
BlockWidths block_widths(const Layer& l);

}  // namespace tuner::parallel
