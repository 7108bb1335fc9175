#include "plugins/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

namespace hpf::cpu {
namespace {
constexpr std::chrono::microseconds kSpin{200};
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
// Spins while `busy()` holds, kSpin at most.
template <class Busy>
void spin_while(Busy busy) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int spins = 1; busy(); ++spins) {
    cpu_relax();
    if (spins % 64 == 0 && std::chrono::steady_clock::now() > until) return;
  }
}
}  // namespace

struct ThreadPool::Job {
  RangeFn fn;
  void* context;
  int64_t items;
  int64_t range;
  int64_t count;                 // number of ranges
  std::atomic<int64_t> next{0};  // next range to hand out
  // Workers that may still touch this job: changed under mutex_, read without it by the caller
  // spinning for the job's end.
  std::atomic<int> holders{0};
};

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : workers_) t.join();
}

int64_t ThreadPool::range_size(int64_t items, int64_t grain, int threads) {
  const int64_t parts = int64_t{16} * std::max(1, threads);
  const int64_t even = std::max<int64_t>(1, (items + parts - 1) / parts);
  return std::max(even, grain);
}

void ThreadPool::start_workers_locked() {
  started_ = true;
  // A thread that cannot be created only lowers the parallelism: the caller still runs every
  // range that no worker takes.
  try {
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (...) {
  }
}

void ThreadPool::run_ranges(Job& job) {
  for (;;) {
    const int64_t r = job.next.fetch_add(1, std::memory_order_relaxed);
    if (r >= job.count) return;
    const int64_t begin = r * job.range;
    job.fn(job.context, begin, std::min(job.items, begin + job.range));
  }
}

void ThreadPool::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (jobs_.empty() && !stopping_) {
      lock.unlock();
      spin_while([this] { return queued_.load(std::memory_order_acquire) == 0; });
      lock.lock();
    }
    work_ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job* job = jobs_.front();
    ++job->holders;
    lock.unlock();
    run_ranges(*job);
    lock.lock();
    // Every range of this job is handed out: nobody should pick it up again.
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) {
      jobs_.erase(it);
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (--job->holders == 0) job_released_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t items, int64_t grain, RangeFn fn, void* context) {
  if (items <= 0) return;
  Job job;
  job.fn = fn;
  job.context = context;
  job.items = items;
  job.range = range_size(items, grain, threads_);
  job.count = (items + job.range - 1) / job.range;
  if (threads_ == 1 || job.count == 1) {
    fn(context, 0, items);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (!started_) start_workers_locked();
    jobs_.push_back(&job);
    queued_.fetch_add(1, std::memory_order_release);
  }
  if (job.count - 1 >= static_cast<int64_t>(workers_.size()))
    work_ready_.notify_all();
  else
    for (int64_t i = 1; i < job.count; ++i) work_ready_.notify_one();

  run_ranges(job);

  // All ranges are handed out; wait until no worker still holds the job (each finishes the
  // ranges it took before letting go), then it may leave this stack frame. A worker usually
  // finishes its last range within microseconds: spin for it first, as the workers spin for
  // jobs (a sleep and a wake-up cost each launch 10-50 us on a VM, most of a small kernel).
  spin_while([&job] { return job.holders.load(std::memory_order_acquire) != 0; });
  std::unique_lock lock(mutex_);
  auto it = std::find(jobs_.begin(), jobs_.end(), &job);
  if (it != jobs_.end()) {
    jobs_.erase(it);
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }
  job_released_.wait(lock, [&] { return job.holders == 0; });
}

}  // namespace hpf::cpu
