// Model specs as users write them, turned into a validated ModelGraph:
// presets (GPT-3 family, Llama 2 and 3, an MLP, an MoE), family forms
// ("gpt:layers=96,hidden=12288,heads=96,seq=2048,vocab=50257", "llama:...",
// "moe:...", "mlp:...") and a JSON graph file of operators grouped into layers.
//
// It parses and builds; the operator arithmetic and validation rules live in
// op_graph.h. It does not plan anything. Every failure is a SpecError with one
// line naming the bad value and what is allowed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/parallel/op_graph.h"

namespace tuner::parallel {

/// Hyperparameters of a decoder-only transformer (GPT, Llama, MoE).
struct TransformerConfig {
  std::string name;
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;        ///< 0: same as heads (no GQA).
  int64_t head_dim = 0;    ///< Width of each attention head; 0: hidden / heads (Qwen3 and others use wider ones).
  int64_t ffn = 0;         ///< 0: 4*hidden.
  bool swiglu = false;     ///< Gated MLP (Llama): 3 matrices, fc1 produces 2*ffn.
  int64_t seq = 2048;
  int64_t vocab = 50257;
  int experts = 0;         ///< > 0: every MLP is a mixture of experts.
  int top_k = 0;
  std::string dtype = "bf16";
  // Architecture details (GPT-3 style by default; the Llama presets and family forms change them).
  bool rope = false;            ///< Rotary position embeddings (else learned absolute positions).
  double rope_base = 10000;     ///< Rotary base.
  bool rmsnorm = false;         ///< RMSNorm (else LayerNorm).
  bool linear_bias = true;      ///< Biases on linear layers.
  bool untied_embeddings = false;  ///< Separate LM-head weights.
  double dropout = 0.1;         ///< Hidden and attention dropout.
  bool flash_attention = false; ///< The recipe's attention kernel: GPT-3-style runs (Megatron-LM to 2022) unfused.
};

/// Builds embedding layer, `layers` transformer blocks and the head (final norm, LM head, loss).
ModelGraph build_transformer(const TransformerConfig& c);
/// `layers` blocks of fc1 (hidden->ffn), activation, fc2 (ffn->hidden), residual add.
ModelGraph build_mlp(const std::string& name, int layers, int64_t hidden, int64_t ffn, int64_t seq);

/// Preset names: gpt3-350m ... gpt3-175b, llama2-7b/13b/70b, llama3-8b/70b/405b, mlp, moe.
std::vector<std::string> model_preset_names();
/// A preset, a family form or a JSON file path; throws SpecError.
ModelGraph parse_model_spec(const std::string& text);
/// A model from its JSON graph document (see README "Model specs"); throws SpecError.
ModelGraph model_from_json(const nlohmann::json& doc, const std::string& name);

}  // namespace tuner::parallel
