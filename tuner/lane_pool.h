// LanePool: a fixed set of long-lived threads, one per measurement lane, that run the same job with
// their lane index each time run() is called, and return when every lane has finished it.
//
// The threads live as long as the pool (the tuning session), not one batch: a measurement worker is
// started with PR_SET_PDEATHSIG, which kills it when the *thread* that forked it ends, so a lane that
// started (or restarted) its worker must outlive the batch for the worker to survive to the next one.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tuner {

class LanePool {
 public:
  explicit LanePool(size_t lanes);
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  /// Runs job(lane) on every lane at once and waits for all of them. The job must not throw.
  void run(const std::function<void(size_t)>& job);
  size_t size() const { return threads_.size(); }

 private:
  void lane_main(size_t lane);

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(size_t)>* job_ = nullptr;
  uint64_t generation_ = 0;
  size_t running_ = 0;
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tuner
