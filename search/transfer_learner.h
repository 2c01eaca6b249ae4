// The interface through which a learning search strategy takes knowledge from
// outside the workload it tunes: records of the same template on other shapes
// and GPUs, and the cost model an earlier session saved (and saves its own).
//
// The tuning session feeds it in its transfer stage (tuner/session_transfer.h)
// when SearchStrategy::transfer_learner() is not null; strategies that learn
// nothing from other workloads (grid, random, ga) have none. Featurising the
// records is the caller's job: this interface sees feature rows only.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tuner::search {

class TransferLearner {
 public:
  virtual ~TransferLearner() = default;
  /// A record of another workload or GPU: its features, and its speed relative to the best of its own
  /// workload and GPU (0 for failures). Learned from at the strategy's next observe().
  virtual void add_transfer(std::vector<float> features, float relative_speed) = 0;
  virtual size_t transfer_rows() const = 0;
  /// Starts from a model saved by an earlier session: it scores proposals until the strategy has rows to
  /// refit on. False with *error set when the bytes do not load.
  virtual bool start_from_saved(const std::string& bytes, std::string* error) = 0;
  /// The model as bytes when it was fitted in this session (empty otherwise), for the next session.
  virtual std::string saved_model() const = 0;
  /// Rows (own + transferred) the model was last fitted on.
  virtual size_t fitted_rows() const = 0;
};

}  // namespace tuner::search
