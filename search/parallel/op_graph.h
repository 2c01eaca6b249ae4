// The planner's view of a model: a chain of layers, each a small graph of
// operators on activations of shape [tokens, features] per sample.
//
// This file holds the plain data (operators, layers, the model graph), the
// per-operator arithmetic the rest of the planner needs (parameters, forward
// FLOPs, output bytes) and validation (cycles, shape mismatches, non-positive
// sizes). It is not the parser of model specs (model_spec.h) and knows nothing
// of devices, sharding or costs.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::parallel {

/// A model or cluster spec the planner cannot use; the message is one line naming the bad value.
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What the planner accepts: validate() and the spec parsers refuse larger models with a message naming the
// limit, so the arithmetic below stays inside int64 and no spec makes the planner copy without bound.
inline constexpr int64_t kMaxLayers = 10000;            ///< Layers in a model's chain, repeats counted (family forms: blocks).
inline constexpr int64_t kMaxLayerOps = 1000;           ///< Operators in one layer.
inline constexpr int64_t kMaxModelOps = 1000000;        ///< Operators in a model, repeats counted.
inline constexpr int64_t kMaxFeatures = 1 << 24;        ///< An operator's in/out features, expert width, vocabulary.
inline constexpr int64_t kMaxHidden = 1 << 20;          ///< Hidden size of a family form (its 4h, 3h fit kMaxFeatures).
inline constexpr int64_t kMaxFfn = 1 << 23;             ///< MLP width of a family form (a gated fc1 is 2 x ffn).
inline constexpr int64_t kMaxSeq = 1 << 20;             ///< Tokens per sample.
inline constexpr int64_t kMaxHeads = 1 << 16;           ///< Attention heads, key/value heads, experts, top_k.
inline constexpr int64_t kMaxParams = 1000000000000000; ///< Parameters of a model (10^15).

/// Operator kinds the planner knows how to shard.
enum class OpType {
  kLinear,        ///< [T,in] x [in,out] matmul (weights in*out).
  kAttention,     ///< Attention core: softmax(QK^T)V over heads; in = (heads + 2*kv_heads)*head_dim, out = heads*head_dim.
  kLayerNorm,     ///< Normalisation over features (2*features parameters).
  kElementwise,   ///< Activation, residual add, gating: memory-bound, no parameters.
  kEmbedding,     ///< Token embedding: in = vocabulary, out = hidden (weights vocab*hidden).
  kCrossEntropy,  ///< Softmax cross-entropy over in = vocabulary logits; out = 1.
  kMoeFfn,        ///< Mixture-of-experts FFN: router + experts x (gated) MLP of width ffn, top_k experts per token.
};
std::string to_string(OpType t);
std::optional<OpType> op_type_from_string(std::string_view s);
/// "linear, attention, ..." for error messages.
std::string op_type_names();

/// One operator. Activations are [tokens, features] per sample; a micro-batch of b samples has b*tokens rows.
struct Operator {
  std::string name;
  OpType type = OpType::kLinear;
  int64_t in_features = 0;    ///< Features of each input (linear K; embedding: vocabulary).
  int64_t out_features = 0;   ///< Features of the output (linear N).
  std::vector<std::string> inputs;  ///< Names of producing ops in the same layer, or "input" (the layer's input).
  int heads = 0, kv_heads = 0;      ///< Attention: query heads and key/value heads (GQA when fewer).
  bool causal = true;               ///< Attention: causal mask (FLOPs are counted without halving, as MFU conventions do).
  int experts = 0, top_k = 0;       ///< MoE: experts and experts per token.
  int64_t ffn = 0;                  ///< MoE: hidden width of each expert.
  bool gated = false;               ///< MoE experts: SwiGLU (3 matrices) instead of 2.
  double dropout = 0;               ///< Dropout probability applied by this op (attention scores; elementwise: its output).
  bool bias = true;                 ///< Linear: adds a bias (JSON "bias"; the engines' exports read it, params do not count it).
  bool rms = false;                 ///< Layernorm: RMSNorm, a scale and no shift (JSON "rms").
};

/// What a layer is, for the memory model (transformer layers use the published activation formula).
enum class LayerKind { kEmbedding, kTransformer, kHead, kGeneric };

struct Layer {
  std::string name;                 ///< e.g. "block", "embedding", "head".
  LayerKind kind = LayerKind::kGeneric;
  std::vector<Operator> ops;        ///< In a topological order after validate().
  std::string output;               ///< Name of the op whose output leaves the layer (default: the last op).
  /// Transformer dimensions (kTransformer): hidden, heads for the activation formula.
  int64_t hidden = 0;
  int heads = 0;
  /// Where a layer of a JSON model came from, for errors: "model 'm.json' layers[0], repeat 2 of 4"; empty
  /// for presets (errors then name the layer by its place in the chain).
  std::string origin;
  /// Key of identical layers: layers with equal signatures share one sharding solution.
  std::string signature() const;
};

struct ModelGraph {
  std::string name;                 ///< Preset or family form or file name.
  int64_t seq = 1;                  ///< Tokens per sample.
  std::string dtype = "bf16";       ///< Activation and weight dtype: bf16, f16, f32.
  std::vector<Layer> layers;        ///< The chain, in order: one entry per layer (repeats expanded).
  int64_t vocab = 0;                ///< Vocabulary (0 when the model has none).
  int64_t hidden = 0;               ///< Width of the activations passed between layers.
  int heads = 0;                    ///< Attention heads (0 when none): tensor-parallel degrees should divide it.
  int transformer_layers = 0;       ///< Number of kTransformer layers.
  // Transformer hyperparameters the exports need (0 / false where they do not apply).
  int kv_heads = 0;                 ///< Key/value heads when fewer than `heads` (grouped-query attention).
  int64_t head_dim = 0;             ///< Width of each attention head when it is not hidden / heads (0: hidden / heads).
  int64_t ffn = 0;                  ///< MLP width.
  bool swiglu = false;              ///< Gated MLP (Llama).
  int experts = 0;                  ///< Experts per MoE layer.
  int top_k = 0;                    ///< Experts each token is routed to.
  int64_t moe_ffn = 0;              ///< Width of each expert (JSON graphs; 0: `ffn`, as presets have it).
  /// Which transformer layers are MoE where dense and MoE layers mix (JSON graphs), as Megatron-LM's
  /// --moe-layer-freq pattern takes it: "[0]*3+[1]*29" (empty: every layer alike).
  std::string moe_layer_pattern;
  // Architecture details an engine must be told to build the same model (family forms and presets set them).
  bool rope = false;                ///< Rotary position embeddings (else learned absolute positions).
  /// Without rope: a learned position embedding (the GPT presets; a JSON graph with an embedding besides its token
  /// embedding). False: the graph states no position encoding.
  bool position_embedding = true;
  int64_t position_rows = 0;        ///< A JSON graph's learned position embedding's rows (0: the sequence's).
  double rope_base = 10000;         ///< Rotary base (theta).
  bool rmsnorm = false;             ///< RMSNorm (else LayerNorm).
  bool linear_bias = true;          ///< Linear layers carry biases (GPT) or not (Llama).
  /// Of linear layers without biases, the QKV projection still has one (Qwen; JSON graphs): --add-qkv-bias.
  bool qkv_bias = false;
  /// Which of a JSON graph's linears have biases where no engine flag says it (some, not only the QKV projection's):
  /// the exports warn; empty otherwise.
  std::string bias_differs;
  /// A JSON graph's first transformer layer mixing RMSNorm and LayerNorm, which no engine flag says ("1 of the 2
  /// norms of layer 'block' are RMSNorm"): the exports warn; empty otherwise.
  std::string norms_differ;
  /// LM head weights separate from the input embedding. Presets and family forms say (GPT ties, Llama does not); a
  /// JSON graph is untied unless it says "tied_embeddings": true.
  bool untied_embeddings = false;
  double dropout = 0;               ///< Hidden and attention dropout (GPT-3 runs: 0.1; Llama: 0).
  bool qk_norm = false;             ///< A norm on the queries and keys before attention (JSON graphs).
  bool bidirectional = false;       ///< An attention op is not causal (an encoder; JSON graphs): the engines mask.
  /// The MLP reads the layer's input, not attention's result, and the two are summed (GPT-J, PaLM; JSON graphs):
  /// the engines build them in sequence.
  bool parallel_block = false;
  /// How a JSON graph's transformer layers differ from its first (empty: alike), which the engines' exports, building
  /// every layer alike, cannot express (graph_architecture.h).
  std::string layers_differ;
  /// A JSON graph whose first transformer layer's MLP width could not be read from its ops (the exports warn).
  bool mlp_unread = false;
  /// The recipe's attention kernel (`--attention auto`): flash for Llama/MoE and JSON graphs, unfused for the GPT
  /// family, whose published runs (Megatron-LM 2020-22) predate flash attention.
  bool flash_attention = true;
};

int dtype_bytes(const std::string& dtype);

/// Parameters of one operator.
int64_t op_params(const Operator& op);
/// Forward FLOPs of one operator for one sample of `seq` tokens (matmuls: 2 per multiply-add). A causal attention
/// core counts its whole score matrix, as MFU conventions do (PaLM's 6N + 12LHQT, Megatron-LM's formula), unless
/// `causal_half`: then the half its kernels compute.
double op_forward_flops(const Operator& op, int64_t seq, bool causal_half = false);
/// Bytes of the operator's output for one sample.
double op_output_bytes(const Operator& op, int64_t seq, int dtype_size);

int64_t layer_params(const Layer& l);
/// The LM head that shares the token embedding's weights (when the model ties them): where the two live in the chain
/// and the shared parameters. A stage holding both keeps one copy; a pipeline keeps one on each end (Megatron-LM and
/// DeepSpeed copy the embedding to the last stage and all-reduce the two gradients).
struct TiedEmbedding {
  int embedding = -1;   ///< Layer index of the token embedding (-1: nothing tied).
  int head = -1;        ///< Layer index of the head whose linear reuses it.
  int64_t params = 0;   ///< The shared weights (vocab x hidden).
  std::string embedding_op, head_op;  ///< The two ops sharing them.
  bool tied() const { return head >= 0; }
};
/// The token embedding: the (largest) embedding that a head layer's linear maps back to (its transposed shape: the
/// LM head), else the one of `vocab` rows when vocab > 0 (none if no embedding has them), else the largest (a
/// learned position embedding is another, and may be larger: nanoGPT's character model has 65 tokens, 256 positions).
struct TokenEmbedding {
  int layer = -1;
  const Operator* op = nullptr;
};
TokenEmbedding token_embedding(const ModelGraph& g, int64_t vocab = 0);
/// The model's tied embedding, if any: the token embedding and its head linear.
TiedEmbedding tied_embedding(const ModelGraph& g);
/// Distinct parameters: a tied head's weights are counted once.
int64_t model_params(const ModelGraph& g);
/// Forward FLOPs of the whole model per sample (`causal_half` as op_forward_flops).
double model_forward_flops(const ModelGraph& g, bool causal_half = false);

/// Checks the graph: positive sizes, known inputs, no cycles, matching feature widths,
/// and orders each layer's ops topologically. Throws SpecError with one line.
void validate(ModelGraph& g);

}  // namespace tuner::parallel
