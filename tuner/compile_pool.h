// compile_pool.h: a fixed pool of threads that runs NvrtcBuilder::compile
// ahead of measurement, so NVRTC's CPU time overlaps GPU timing. It is
// responsible for queueing requests (FIFO) and handing back one future per
// request; callers keep the futures in their own order. It is not responsible for scheduling
// measurements, deduplicating identical requests (the cache does that on
// disk), or cancelling work: the destructor finishes every queued request
// before joining.
#pragma once

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "tuner/nvrtc_builder.h"

namespace tuner {

class CompilePool {
 public:
  /// threads == 0 -> std::thread::hardware_concurrency() (at least 1).
  /// The builder must outlive the pool.
  CompilePool(const NvrtcBuilder& builder, unsigned threads);
  /// Runs what is still queued, then joins.
  ~CompilePool();

  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// Queues one compile; the future becomes ready when it is done.
  std::future<CompileResult> submit(CompileRequest request);

  /// Number of worker threads.
  /// Drops every job not yet started (their futures report broken_promise); running ones finish.
  void discard_queued();

  unsigned size() const { return static_cast<unsigned>(workers_.size()); }

 private:
  void work();

  const NvrtcBuilder& builder_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<CompileResult()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tuner
