// The worker pool: a queue of jobs, each of which takes indices of a parallel loop until none is left.
#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace tilejit::detail {

struct ThreadPool::State {
  std::mutex m;
  std::condition_variable work;
  std::deque<std::function<void()>> jobs;
};

namespace {

// One parallel loop. Jobs that start after every index is taken return at once, so a loop's state
// is shared with the jobs rather than kept on the caller's stack.
struct Loop {
  size_t n = 0;
  const std::function<void(size_t)>* fn = nullptr;  // valid while indices remain
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::mutex m;
  std::condition_variable done;

  void run() {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      (*fn)(i);
      if (finished.fetch_add(1) + 1 == n) {
        std::lock_guard lock(m);
        done.notify_all();
      }
    }
  }
};

}  // namespace

ThreadPool& ThreadPool::shared() {
  // The calling thread works too: one worker fewer than hardware threads keeps them all busy.
  static auto* pool =
      new ThreadPool(std::max(2u, std::thread::hardware_concurrency()) - 1);  // lives until process exit
  return *pool;
}

ThreadPool::ThreadPool(size_t workers) : state_(new State), workers_(workers) {
  for (size_t w = 0; w < workers; ++w)
    std::thread([s = state_] {
      for (;;) {
        std::function<void()> job;
        {
          std::unique_lock lock(s->m);
          s->work.wait(lock, [&] { return !s->jobs.empty(); });
          job = std::move(s->jobs.front());
          s->jobs.pop_front();
        }
        job();
      }
    }).detach();
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  auto loop = std::make_shared<Loop>();
  loop->n = n;
  loop->fn = &fn;
  {
    std::lock_guard lock(state_->m);
    for (size_t j = 0; j < std::min(n, workers_); ++j) state_->jobs.emplace_back([loop] { loop->run(); });
  }
  state_->work.notify_all();
  loop->run();
  std::unique_lock lock(loop->m);
  loop->done.wait(lock, [&] { return loop->finished.load() == n; });
}

}  // namespace tilejit::detail
