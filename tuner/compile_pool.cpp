#include "tuner/compile_pool.h"

#include <utility>

namespace tuner {

CompilePool::CompilePool(const NvrtcBuilder& builder, unsigned threads) : builder_(builder) {
  if (threads == 0) threads = std::thread::hardware_concurrency();
  if (threads == 0) threads = 1;
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::future<CompileResult> CompilePool::submit(CompileRequest request) {
  std::packaged_task<CompileResult()> task(
      [this, request = std::move(request)] { return builder_.compile(request); });
  std::future<CompileResult> future = task.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return future;
}

void CompilePool::discard_queued() {
  std::deque<std::packaged_task<CompileResult()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(queue_);
  }
}

void CompilePool::work() {
  for (;;) {
    std::packaged_task<CompileResult()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // exceptions (e.g. bad_alloc) land in the future
  }
}

}  // namespace tuner
