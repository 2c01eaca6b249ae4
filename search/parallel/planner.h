// The parallel planner: which tensor (tp), pipeline (pp) and data (dp)
// degrees, micro-batch size, schedule, recomputation and ZeRO stage train a
// model fastest on a cluster, and what that configuration costs.
//
// Map of the planner (start reading here):
//   model_spec.h / op_graph.h    the model as a chain of layers of operators
//   cluster_spec.h               nodes, GPUs, links
//   op_cost.h                    kernel times: tuned records or analytic
//   collective_cost.h            alpha-beta collectives
//   expert_parallel.h            MoE experts over the ep group: the rule, the groups, the load imbalance
//   layer_sharding.h             intra-op sharding of a layer by ILP (sharding_ilp.h, cbc_solver.cpp)
//   stage_dp.h                   inter-op stages by DP (one way to run every stage)
//   submesh.h                    ... when stages differ: per-stage submesh shapes, memory levels
//   layer_clustering.h           consecutive layers grouped into balanced units for that DP
//   layer_table.h                per-layer costs of one stage shape, prefix sums for stage ranges
//   resharding.h                 layout changes between layers of different kinds and between stages
//   memory_model.h               bytes per device
//   planner.h (this)             the search over configurations and the iteration-time model
//   plan_json.h, plan_export.h   what users read: JSON, Megatron/DeepSpeed/torchtitan
//
// Context parallelism (cp) splits each sequence over cp GPUs: every operator sees seq / cp tokens, attention
// computes its query chunk against all keys (ring attention, K/V passed around the cp group, overlapped with
// the attention kernels: the excess counts, and overlap_interference of the hidden part), gradients are reduced
// and ZeRO-sharded over dp x cp. N = tp x cp x pp x dp.
//
// Expert parallelism (ep, MoE models only; expert_parallel.h) divides each MoE layer's experts over ep GPUs of the
// dp x cp group (ep divides the experts and dp x cp): tokens go to their experts and back by all-to-all in the ep
// group, expert states shrink by ep and expert gradients are reduced over dp x cp / ep. It adds no GPUs: N is still
// tp x cp x pp x dp. Dense models are planned with ep = 1 only.
//
// Iteration time of a configuration (what the search minimises):
//   t_l   = layer forward + backward (+ recomputation) per micro-batch, collectives of its sharding
//           included; ZeRO-2/3 per-micro-batch collectives overlap the layer's compute (the excess counts, and
//           CostParams::overlap_interference of the hidden part: NCCL's kernels take SMs and DRAM bandwidth)
//   t_i   = sum of its layers' t_l + p2p sends (activation forward, gradient backward) of stage i
//   pipe  = m t_max + (sum_i t_i - t_max) / v   (= sum t_i + (m-1) t_max for v = 1; bubble (1/v)(p-1)/m)
//   dp    = the data-parallel gradient reduction, overlapped with the last micro-batch's backward except
//           one layer's bucket (the hidden part charged overlap_interference); the ZeRO-1/2 weight all-gather
//           after the step is not overlapped
//   opt   = the Adam step streaming the local optimizer states through DRAM
//   T     = pipe + max over stages of dp + max over stages of opt
// GPipe costs the same time as 1F1B with more memory, so it is only planned when pinned.
//
// Per-stage submeshes (Alpa): every stage holds N / pp GPUs, but each may view them as its own tp_i x dp_i
// (x cp) mesh: the pipeline's micro-batch of mbs x dp sequences is split over dp_i replicas, each stage's
// layers are sharded by the ILP on tp_i, its gradients reduced over dp_i x cp, and a boundary between stages
// of different shapes pays a resharding (resharding.h). After the uniform search, the best few configurations
// (1F1B/GPipe, tp and dp not pinned) are re-solved with a shape per stage (submesh.h); the result replaces
// the uniform plan only when faster. Memory: a stage's layer shardings are chosen under that stage's budget
// inside the DP (memory levels, submesh.h) when the fastest shardings do not fit. Under expert parallelism every
// stage keeps the configuration's ep, its experts divided over ep of its own dp_i x cp ranks and their gradients
// reduced over its own dp_i x cp / ep: only shapes whose dp_i x cp ep divides are offered.
//
// Unequal GPU counts per stage (Alpa's submeshes covering the cluster): a stage may hold half or twice the
// configuration's N / pp GPUs (a power of two inside a node, or whole nodes), the counts adding up to N. Every
// stage keeps the pipeline's micro-batch of mbs x dp sequences, split over its own dp_i replicas (dp_i must divide
// it), so every stage sees the same global batch; a stage with fewer GPUs than its neighbour receives (and sends
// back) more bytes per device, charged with the resharding at the boundary. Tried after the submesh search on the
// best few 1F1B/GPipe configurations whose stages are unbalanced (unequal_min_imbalance) or that no uniform split
// fits, never with tp, dp or pp pinned; kept only when faster than the best plan so far.
//
// Evaluating one configuration (evaluate_impl), step by step:
//   check_config -> layer tables (fill_table) -> partition (stage DP, or memory levels) -> assemble (stages,
//   breakdown, pipeline and iteration totals).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/parallel/cluster_spec.h"
#include "search/parallel/collective_cost.h"
#include "search/parallel/layer_sharding.h"
#include "search/parallel/layer_table.h"
#include "search/parallel/memory_model.h"
#include "search/parallel/op_cost.h"
#include "search/parallel/op_graph.h"
#include "search/parallel/resharding.h"
#include "search/parallel/submesh.h"
#include "search/parallel/time_breakdown.h"

namespace tuner::parallel {

/// Sequences per iteration the planner accepts: 1..16,777,216.
inline constexpr int64_t kMaxGlobalBatch = 1 << 24;
/// Throws SpecError naming the allowed range when global_batch is outside 1..kMaxGlobalBatch.
void check_global_batch(int64_t global_batch);

/// Choices a user pins with --fix; unset ones are planned.
struct PlanPins {
  std::optional<int> tp, pp, dp, cp, ep, micro_batch, zero, virtual_stages;
  std::optional<Schedule> schedule;
  std::optional<Recompute> recompute;
  /// sp=0: no sequence parallelism (norms, dropout and residual adds whole on every tensor-parallel rank, as
  /// Megatron-LM without --sequence-parallel); sp=1 or unset: the layer ILP may split their tokens.
  std::optional<bool> sequence_parallel;
  bool empty() const;
};
/// "tp=8,pp=8,dp=16,cp=2,ep=8,mbs=1,schedule=1f1b|gpipe|interleaved,v=2,recompute=none|selective|full,zero=0..3,sp=0|1";
/// tp, pp, dp, cp, ep and mbs in 1..1,048,576, v in 1..64. Throws SpecError (one line naming the item and the range).
PlanPins parse_pins(const std::string& text);
std::string to_string(const PlanPins& p);

struct PlannerOptions {
  int64_t global_batch = 1024;            ///< Sequences per iteration.
  PlanPins pins;                          ///< Pinned choices.
  CostParams cost;                        ///< Analytic efficiency factors (cost.attention is set from `attention`).
  /// How attention cores run; unset: the model's recipe (ModelGraph::flash_attention: unfused for the GPT family).
  std::optional<AttentionKernel> attention;
  TunedLookup lookup;                     ///< Tuned kernel times; empty: analytic only.
  double memory_reserve_bytes = kMemoryReserveBytes;  ///< Kept free per GPU (CUDA context, workspaces, fragmentation).
  std::vector<int> micro_batch_sizes = {1, 2, 4, 8};  ///< Tried unless pinned.
  std::vector<int> virtual_stages = {2, 3, 4};        ///< Interleaved chunks per device tried (where pp * v chunks divide the blocks).
  /// Context-parallel degrees tried when the sequence is at least long_sequence tokens (else cp = 1 unless pinned).
  std::vector<int> context_parallel = {1, 2, 4, 8, 16};
  int64_t long_sequence = 32768;          ///< Tokens from which context parallelism is searched.
  /// ...and at any length when the global batch holds fewer than this many sequences per tensor-parallel group
  /// (GPUs / the largest tp tried): a pipeline would then have too few micro-batches to hide its bubble.
  double batch_starved_sequences = 4;
  /// There, degrees up to twice the shortfall that leave each GPU at least this many tokens of a sequence.
  int64_t starved_cp_min_tokens = 1024;
  int max_tp = 0;                         ///< Largest tensor-parallel degree tried (0: GPUs per node).
  /// Let each pipeline stage run its own tp x dp view of its GPUs when faster (Alpa's per-stage submeshes).
  /// Use false for plans whose every stage runs the configuration's tp and dp (what the engines run).
  bool per_stage_submeshes = true;
  /// Best uniform configurations re-solved with per-stage shapes (and half as many that no uniform split fits).
  int submesh_candidates = 4;
  /// Let stages hold unequal GPU counts (Alpa's submeshes covering the cluster: half or twice N / pp) when the
  /// best uniform plans' stages are unbalanced; needs per_stage_submeshes, and no tp, dp or pp pin.
  bool unequal_stage_gpus = true;
  /// Stage-time imbalance (t_max / mean t_i - 1) of a uniform plan from which unequal GPU counts are tried.
  double unequal_min_imbalance = 0.05;
  /// Choose each stage's layer shardings under its own memory budget inside the DP when the fastest do not fit.
  /// Use false for the old fallback: every layer capped at usable / ceil(L / pp), whatever its stage.
  bool memory_levels_in_dp = true;
  int cluster_units = 48;                 ///< Units the per-stage DP clusters layers into (at least 2 per stage).
  Engine engine = Engine::kGeneric;       ///< Engine the plan is for: its ZeRO stages and bytes per parameter.
  /// Whether the loss keeps its softmax in fp32 for backward or in the model's dtype. Unset: fp32 for Megatron-LM
  /// (its vocab-parallel cross-entropy casts the logits up and saves exp_logits), the model's dtype otherwise.
  std::optional<bool> loss_fp32;
};

struct ParallelConfig {
  int tp = 1, pp = 1, dp = 1;
  int cp = 1;                             ///< Context parallelism: each sequence split over cp GPUs (ring attention).
  int ep = 1;                             ///< Expert parallelism: MoE experts divided over ep of the dp x cp GPUs.
  int micro_batch = 1;                    ///< Sequences per micro-batch.
  int num_micro_batches = 1;              ///< Per data-parallel replica per iteration.
  int virtual_stages = 1;                 ///< Chunks per device (interleaved; 1 otherwise).
  Schedule schedule = Schedule::k1F1B;
  Recompute recompute = Recompute::kNone;
  int zero = 0;
};
std::string describe(const ParallelConfig& c);

/// The sharding of one kind of layer inside a stage.
struct StageLayerSharding {
  std::string layer;                      ///< Layer name ("block").
  int count = 0;                          ///< How many such layers the stage holds.
  std::vector<OpShardingPlan> ops;
};

struct StagePlan {
  int first_layer = 0, end_layer = 0;     ///< Layers [first, end) of the model's chain.
  Mesh mesh;                              ///< Tensor-parallel mesh of the stage (each of dp replicas).
  StageShape shape;                       ///< The stage's own tp, dp and per-device micro-batch.
  int gpus = 0;                           ///< GPUs the stage holds: shape.tp x shape.dp x cp.
  int memory_level = 0;                   ///< 0: fastest layer shardings; > 0: solved under a memory budget.
  double time_per_micro_batch_s = 0;      ///< t_i.
  double params_per_device = 0;
  MemoryBreakdown memory;                 ///< Peak per device.
  TimeBreakdown time;                     ///< This stage's iteration: its terms add up to the iteration time.
  std::vector<StageLayerSharding> sharding;
};

struct Plan {
  ParallelConfig config;
  std::vector<StagePlan> stages;
  /// "dp" (stage DP), "uniform", "submesh" (per-stage shapes) or "unequal" (per-stage shapes and GPU counts).
  std::string partition;
  bool uniform_stages = true;             ///< Every stage runs config.tp x config.dp (else see stages[i].shape).
  bool sequence_parallel = false;
  AttentionKernel attention = AttentionKernel::kFlash;  ///< How the cost model ran attention cores.
  double iteration_time_s = 0;
  double pipeline_s = 0, bubble_fraction = 0, dp_exposed_s = 0, optimizer_s = 0;
  double tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  /// MFU with causal attention counted at the half its kernels compute (mfu counts it in full, as PaLM and
  /// Megatron-LM do); they differ where attention is a large share, at long sequences.
  double mfu_causal = 0;
  double model_flops_per_iteration = 0;
  double peak_memory_bytes = 0;           ///< Largest per-device peak.
  int peak_stage = 0;
  int critical_stage = 0;                 ///< The stage with the largest time per micro-batch (sets the pipeline).
  double memory_capacity_bytes = 0;       ///< Usable per GPU (memory minus reserve).
  int64_t kernel_estimates = 0, tuned_estimates = 0;  ///< Sources of the compute costs in the plan's layers.
  bool ilp_optimal = true;                ///< Every layer's ILP proven optimal.
  // Search statistics.
  int64_t configs_evaluated = 0;
  int64_t ilp_solves = 0;
  int64_t submesh_dp_cells = 0;           ///< Work of the per-stage DPs (submesh.h), over the whole search.
  double planning_s = 0;
  /// What the user may want to change about the inputs (e.g. a global batch too small for the cluster).
  std::vector<std::string> notes;
};

class Planner {
 public:
  /// Throws SpecError when the model cannot be placed on the cluster at all.
  Planner(const ModelGraph& model, const ClusterSpec& cluster, PlannerOptions opts);
  ~Planner();

  /// The fastest configuration honouring the pins; throws SpecError with one line when none fits.
  Plan plan();
  /// One configuration by the same model: stage DP (uniform = false) or an even split of the layers
  /// (uniform = true, as hand-written configs do). nullopt with *why set when it is invalid or does not fit.
  std::optional<Plan> evaluate(const ParallelConfig& c, bool uniform, std::string* why = nullptr);
  /// The configuration with a submesh shape per stage (all tp_i x dp_i = tp x dp, the pipeline micro-batch
  /// mbs x dp split over dp_i); nullopt with *why when it is invalid, interleaved or does not fit.
  std::optional<Plan> evaluate_submeshes(const ParallelConfig& c, std::string* why = nullptr);
  /// The shapes a stage of this configuration may take (the configuration's own first).
  std::vector<StageShape> stage_shapes(const ParallelConfig& c) const;
  /// The configuration with unequal GPU counts per stage (Alpa): each stage holds tp x cp x dp GPUs (the
  /// configuration's own, half or twice as many: a power of two inside a node or whole nodes), the counts adding
  /// up to the cluster, each stage's dp replicas splitting the pipeline micro-batch of mbs x dp sequences evenly.
  /// nullopt with *why when it is invalid, interleaved, has no other count or does not fit.
  std::optional<Plan> evaluate_unequal(const ParallelConfig& c, std::string* why = nullptr);
  /// The shapes evaluate_unequal offers a stage (the configuration's own first); their GPUs are tp x dp x cp.
  std::vector<StageShape> unequal_shapes(const ParallelConfig& c) const;

  const ModelGraph& model() const { return model_; }
  const ClusterSpec& cluster() const { return cluster_; }
  const PlannerOptions& options() const { return opts_; }
  int64_t ilp_solves() const { return ilp_solves_; }

 private:
  const LayerPlan& layer_plan(size_t signature_index, int tp, int cp, int ep, int mbs, double budget,
                              double state_bytes_per_param);
  struct Eval;       // one configuration's derived quantities (planner.cpp)
  struct Search;     // the choices plan() enumerates (planner.cpp)
  std::optional<Plan> evaluate_impl(const ParallelConfig& c, bool uniform, double best_time, std::string* why);
  /// Validates c, fills its micro-batch count and virtual stages; the reason it is invalid, or "".
  std::string check_config(ParallelConfig& c, bool& uniform) const;
  Eval make_eval(const ParallelConfig& c) const;
  /// Per-layer costs of `shape` with the layer ILP's memory row (states + outputs per layer) capped at budget.
  bool fill_table(const Eval& e, const StageShape& shape, double budget, LayerTable& out);
  MemoryBreakdown stage_memory(const Eval& e, const LayerTable& t, int stage, int i, int j) const;
  /// A stage's pipeline sends per micro-batch. `first_gpu` (p + 1 entries: where each stage's GPUs start, the last the
  /// total), when the stages' sizes are known, prices a one-chunk pipeline of unequal stages per boundary too; without
  /// it (the stage DP, which does not know its neighbours' sizes) such a pipeline pays the network on every send
  /// once any boundary crosses a node.
  double stage_p2p_s(const Eval& e, const StageShape& shape, int stage,
                     const std::vector<int64_t>* first_gpu = nullptr) const;
  /// Entering layer l (run from `cur`) after layer l - 1 (run from `prev`), per micro-batch: layer_entry_s.
  /// `cross_node`: whether the boundary's sends cross a node (known once the stages' sizes are; else whether any
  /// boundary of the pipeline does).
  double entry_s(const Eval& e, const LayerTable& prev, const LayerTable& cur, int l,
                 std::optional<bool> cross_node = std::nullopt) const;
  /// The stages a plan may not choose: the one the export's engine computes itself (engine_fixed_partition,
  /// cached per pp and method: DeepSpeed's "parameters", or with `uniform` its "uniform"), else with
  /// `uniform` the even split; empty when the stage DP chooses.
  std::vector<int> given_partition(int stages, bool uniform) const;
  /// Stage starts over one table: the stage DP, or the given partition; empty when nothing fits.
  std::vector<int> partition(const Eval& e, const LayerTable& t, bool uniform) const;
  /// When the fastest shardings fit no partition: each stage picks its memory level (tables[0] the fastest).
  bool memory_level_partition(const Eval& e, bool uniform, std::vector<LayerTable>& tables, std::vector<int>& starts,
                              std::vector<int>& level);
  Plan assemble(const Eval& e, const std::vector<const LayerTable*>& tables, const std::vector<int>& starts,
                const std::string& partition, const std::vector<int>& level) const;
  /// check_config for a plan with a variant per stage: also refuses interleaved (uniform) schedules.
  std::string check_variant_config(ParallelConfig& c) const;
  /// The layer tables of the shapes that fit (fill_table without a memory cap), in order.
  std::vector<LayerTable> variant_tables(const Eval& e, const std::vector<StageShape>& shapes);
  /// The per-stage variant DP over `tables` (req: its units, and weights/budget if any; the rest is filled
  /// here), assembled as `partition`; nullopt with `infeasible` as the reason when nothing fits.
  std::optional<Plan> solve_variants(const Eval& e, const std::vector<LayerTable>& tables, VariantDpRequest req,
                                     const std::string& partition, const std::string& infeasible, std::string* why);
  void finish_totals(const Eval& e, Plan& plan, const std::vector<double>& stage_dp,
                     const std::vector<double>& stage_opt) const;
  Search search_space() const;
  /// Whether the engine the plan is for (PlannerOptions::engine) runs this pipeline schedule.
  bool engine_runs_schedule(Schedule s) const;
  /// Its schedules, "1f1b, interleaved", for error messages.
  std::string engine_schedule_names() const;
  /// The largest tensor-parallel degree tried: PlannerOptions::max_tp, else the GPUs of a node.
  int max_tensor_parallel() const;
  /// Sequences of the global batch per tensor-parallel group of the largest tp tried (GPUs / max tp).
  double sequences_per_tensor_group() const;
  /// Throws SpecError when a pinned ep cannot run: no experts, or it does not divide them or dp x cp.
  void check_ep_pin() const;
  /// Re-solves up to `limit` distinct candidates with a shape per stage; keeps a faster plan in best.
  void refine_submeshes(std::optional<Plan>& best, const std::vector<ParallelConfig>& candidates, int limit);
  /// The same with unequal GPU counts per stage (evaluate_unequal).
  void refine_unequal(std::optional<Plan>& best, const std::vector<ParallelConfig>& candidates, int limit);
  /// Exposed data-parallel communication of a stage holding g_bytes of gradients over `layers` layers, of which
  /// expert_bytes are expert gradients reduced over the expert data-parallel group instead.
  double dp_exposed_s(const ParallelConfig& c, CommGroup dp_group, double g_bytes, double last_bwd, int layers,
                      double expert_bytes = 0, CommGroup expert_dp_group = {}) const;

  ModelGraph model_;
  ClusterSpec cluster_;
  PlannerOptions opts_;
  std::unique_ptr<OpCostModel> costs_;
  /// The context-parallel degrees the search tries without a cp pin (before the attention and engine checks):
  /// opts_.context_parallel for long sequences, degrees below twice the shortfall for a starved batch, else 1.
  std::vector<int> context_parallel_degrees() const;
  /// The tensor layouts the layer ILP may use: the sp pin and the export's engine.
  TensorLayoutRules layout_rules() const {
    return {opts_.pins.sequence_parallel, opts_.engine, opts_.loss_fp32.value_or(opts_.engine == Engine::kMegatron)};
  }
  /// Why the export's engine cannot run the sp pin with tensor parallelism ("" when it can, or nothing is pinned).
  std::string sequence_parallel_conflict() const;
  /// torchtitan's ZeRO-2 (FSDP2, reshard_after_forward "never"): the weights are gathered at every micro-batch's
  /// forward and freed after its backward, instead of once after the optimizer step.
  bool fsdp_gathers_every_forward(const ParallelConfig& c) const;
  /// torchtitan's FSDP2 (ZeRO-2/3) under a pipeline schedule: PyTorch's pipelining keeps gradient sync and
  /// resharding after backward off through the micro-batches and reduces after the last one, so the weights are
  /// gathered once a step (and, at ZeRO-3, again at each backward after the forward resharded them) and the
  /// gradients, accumulated whole in fp32, are reduce-scattered once a step, exposed (dp_exposed_s), not at every
  /// micro-batch.
  bool fsdp_syncs_once_per_step(const ParallelConfig& c) const;
  /// The gcd of every attention op's query and key/value heads (0: no attention), which tp must divide, and those
  /// counts for messages ("32, 8").
  int head_divisor_ = 0;
  /// Whether some layer has a residual stream (norms, residual adds) that sequence parallelism would split.
  bool has_residual_stream_ = false;
  std::string head_counts_;
  /// Whether tensor parallelism of degree tp splits every attention op's heads (the uniform search, the pins and
  /// the per-stage submeshes all keep to it).
  bool splits_heads(int tp) const { return head_divisor_ == 0 || head_divisor_ % tp == 0; }
  /// Whether tensor groups of tp consecutive ranks fill part of a node evenly or whole nodes: otherwise some
  /// straddle two nodes, which the mesh (within a node, or whole nodes) cannot price.
  bool tiles_nodes(int tp) const { return cluster_.gpus_per_node % tp == 0 || tp % cluster_.gpus_per_node == 0; }
  /// When no (tp, cp, pp) of the search leaves a data-parallel degree the global batch divides: the error that
  /// says so, with the smallest dp reached and a cp pin that plans; "" otherwise.
  std::string batch_divisibility_error(const Search& space) const;
  std::vector<std::string> signatures_;   ///< Distinct layer signatures.
  std::vector<int> layer_sig_;            ///< Per layer: index into signatures_.
  std::vector<int> sig_example_;          ///< Per signature: one layer index.
  std::map<std::string, LayerPlan> cache_;
  std::vector<BlockWidths> sig_widths_;  ///< Per distinct layer: the widths its activations follow.
  std::map<int, ModelGraph> by_cp_;       ///< The model with seq / cp tokens per GPU, per context-parallel degree.
  int64_t ilp_solves_ = 0;
  int64_t evaluated_ = 0;
  int64_t submesh_cells_ = 0;
  mutable int64_t inexpressible_ = 0;  ///< Stage partitions dropped as the export's engine cannot run them (engine_partition.h).
  mutable std::map<std::pair<int, bool>, std::vector<int>> engine_partitions_;  ///< engine_fixed_partition per (pp, uniform).
  int64_t model_params_ = 0;              ///< Parameters of the whole model (computed once).
  TiedEmbedding tied_;                    ///< The head sharing the embedding's weights, if any.
  double model_flops_ = 0;                ///< Forward FLOPs of the model per sample (computed once).
  double model_flops_causal_ = 0;         ///< The same with causal attention counted at half.
  int model_experts_ = 0;                 ///< Experts every MoE layer divides by (0: a dense model).
  int64_t model_expert_params_ = 0;       ///< Expert parameters of the whole model.
};

/// Even split used by uniform plans: transformer blocks spread over stages (the first stages take the
/// remainder), embedding with the first stage, head with the last; other models split all layers.
/// Empty when the stages outnumber the layers.
std::vector<int> uniform_partition(const ModelGraph& g, int stages);

}  // namespace tuner::parallel
