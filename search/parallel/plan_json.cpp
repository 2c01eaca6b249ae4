#include "search/parallel/plan_json.h"

#include "search/parallel/plan_export.h"

namespace tuner::parallel {

namespace {

nlohmann::ordered_json memory_json(const MemoryBreakdown& m) {
  return {{"weights", m.weights},
          {"gradients", m.gradients},
          {"optimizer", m.optimizer},
          {"activations", m.activations},
          {"total", m.total()}};
}

}  // namespace

nlohmann::ordered_json time_json(const TimeBreakdown& t) {
  return {{"compute_s", t.compute_s},
          {"memory_bound_s", t.memory_bound_s},
          {"recompute_s", t.recompute_s},
          {"tp_comm_s", t.tp_comm_s},
          {"ep_comm_s", t.ep_comm_s},
          {"cp_comm_s", t.cp_comm_s},
          {"zero_comm_s", t.zero_comm_s},
          {"reshard_s", t.reshard_s},
          {"pp_p2p_s", t.pp_p2p_s},
          {"pp_bubble_s", t.pp_bubble_s},
          {"dp_comm_s", t.dp_comm_s},
          {"optimizer_s", t.optimizer_s},
          {"wait_s", t.wait_s},
          {"total_s", t.total()}};
}

namespace {

/// One stage: its layers, its own submesh shape, memory, time breakdown and per-operator sharding.
nlohmann::ordered_json stage_json(const StagePlan& sp, size_t s) {
  nlohmann::ordered_json js;
  js["stage"] = s;
  js["first_layer"] = sp.first_layer;
  js["last_layer"] = sp.end_layer - 1;
  js["layers"] = sp.end_layer - sp.first_layer;
  js["mesh"] = {sp.mesh.d0, sp.mesh.d1};
  js["tp"] = sp.shape.tp;
  js["dp"] = sp.shape.dp;
  js["gpus"] = sp.gpus;
  js["replicas"] = sp.shape.dp;
  js["micro_batch_size"] = sp.shape.micro_batch;
  js["memory_level"] = sp.memory_level;
  js["time_per_micro_batch_s"] = sp.time_per_micro_batch_s;
  js["params_per_device"] = sp.params_per_device;
  js["memory"] = memory_json(sp.memory);
  js["time_breakdown"] = time_json(sp.time);
  nlohmann::ordered_json sh = nlohmann::ordered_json::array();
  for (const auto& ls : sp.sharding) {
    nlohmann::ordered_json jl;
    jl["layer"] = ls.layer;
    jl["count"] = ls.count;
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const auto& op : ls.ops)
      ops.push_back({{"op", op.op},
                     {"strategy", op.strategy},
                     {"source", op.source},
                     {"fwd_compute_s", op.fwd_compute_s},
                     {"bwd_compute_s", op.bwd_compute_s},
                     {"comm_s", op.fwd_comm_s + op.bwd_comm_s}});
    jl["ops"] = ops;
    sh.push_back(jl);
  }
  js["sharding"] = sh;
  return js;
}

}  // namespace

nlohmann::ordered_json plan_to_json(const Plan& plan, const ModelGraph& model, const ClusterSpec& cluster,
                                    int64_t global_batch) {
  const ParallelConfig& c = plan.config;
  nlohmann::ordered_json j;
  j["model"] = model.name;
  j["cluster"] = cluster.name;
  j["gpu"] = cluster.gpu.key;
  j["gpus"] = cluster.total_gpus();
  j["parameters"] = model_params(model);
  j["global_batch"] = global_batch;
  j["seq_len"] = model.seq;
  j["tp"] = c.tp;
  j["pp"] = c.pp;
  j["dp"] = c.dp;
  j["cp"] = c.cp;
  j["ep"] = c.ep;
  j["micro_batch_size"] = c.micro_batch;
  j["num_micro_batches"] = c.num_micro_batches;
  j["schedule"] = to_string(c.schedule);
  j["virtual_stages"] = c.virtual_stages;
  j["recompute"] = to_string(c.recompute);
  j["zero_stage"] = c.zero;
  j["sequence_parallel"] = plan.sequence_parallel;
  j["partition"] = plan.partition;
  j["uniform_stages"] = plan.uniform_stages;
  j["attention"] = to_string(plan.attention);
  j["iteration_time_s"] = plan.iteration_time_s;
  j["tokens_per_s"] = plan.tokens_per_s;
  j["tflops_per_gpu"] = plan.tflops_per_gpu;
  j["mfu"] = plan.mfu;
  j["mfu_causal"] = plan.mfu_causal;
  j["peak_memory_bytes"] = static_cast<int64_t>(plan.peak_memory_bytes);
  j["memory_capacity_bytes"] = static_cast<int64_t>(plan.memory_capacity_bytes);
  j["peak_memory_stage"] = plan.peak_stage;
  j["peak_memory_breakdown"] = memory_json(plan.stages.at(plan.peak_stage).memory);
  // The critical stage's terms (they add up to the iteration time, as every stage's do), and the pipeline totals.
  nlohmann::ordered_json tb = time_json(plan.stages.at(plan.critical_stage).time);
  tb["stage"] = plan.critical_stage;
  tb["pipeline_s"] = plan.pipeline_s;
  tb["bubble_fraction"] = plan.bubble_fraction;
  tb["dp_exposed_s"] = plan.dp_exposed_s;
  j["time_breakdown"] = tb;
  j["cost_sources"] = {{"kernel_estimates", plan.kernel_estimates},
                       {"tuned", plan.tuned_estimates},
                       {"analytic", plan.kernel_estimates - plan.tuned_estimates}};
  j["ilp_optimal"] = plan.ilp_optimal;
  j["notes"] = plan.notes;
  j["search"] = {{"configs_evaluated", plan.configs_evaluated},
                 {"ilp_solves", plan.ilp_solves},
                 {"submesh_dp_cells", plan.submesh_dp_cells},
                 {"planning_s", plan.planning_s}};
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    nlohmann::ordered_json js = stage_json(plan.stages[s], s);
    // Interleaved: the rank's chunks of blocks as the engines lay them out (first_layer..last_layer count its share).
    const auto chunks = interleaved_chunks(plan, model, static_cast<int>(s));
    if (!chunks.empty()) {
      nlohmann::ordered_json jc = nlohmann::ordered_json::array();
      for (const auto& [first, last] : chunks) jc.push_back({first, last});
      js["interleaved_blocks"] = jc;
    }
    stages.push_back(js);
  }
  j["stages"] = stages;
  return j;
}

}  // namespace tuner::parallel
