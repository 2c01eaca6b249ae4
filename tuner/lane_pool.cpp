#include "tuner/lane_pool.h"

namespace tuner {

LanePool::LanePool(size_t lanes) {
  for (size_t i = 0; i < lanes; ++i) threads_.emplace_back(&LanePool::lane_main, this, i);
}

LanePool::~LanePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void LanePool::run(const std::function<void(size_t)>& job) {
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &job;
  running_ = threads_.size();
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
}

void LanePool::lane_main(size_t lane) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    start_.wait(lock, [&] { return quit_ || generation_ != seen; });
    if (quit_) return;
    seen = generation_;
    const auto* job = job_;
    lock.unlock();
    (*job)(lane);
    lock.lock();
    if (--running_ == 0) done_.notify_all();
  }
}

}  // namespace tuner
