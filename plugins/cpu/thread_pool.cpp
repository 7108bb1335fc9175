#include "plugins/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>

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

// The ranges [front, back) of one thread's chunk not yet taken, as front << 32 | back: the owner
// takes the front, other threads the back. (A job has at most 16 ranges per thread.)
struct alignas(64) ThreadPool::Chunk {
  std::atomic<uint64_t> span{0};
  // Takes a range from the front or the back; false when none is left.
  bool take(bool from_front, int64_t& r) {
    uint64_t v = span.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = v >> 32, back = v & 0xffffffffu;
      if (front >= back) return false;
      const uint64_t nv = from_front ? (front + 1) << 32 | back : front << 32 | (back - 1);
      if (span.compare_exchange_weak(v, nv, std::memory_order_relaxed)) {
        r = static_cast<int64_t>(from_front ? front : back - 1);
        return true;
      }
    }
  }
};

struct ThreadPool::Job {
  RangeFn fn;
  void* context;
  int64_t items;
  int64_t range;
  int64_t count;  // number of ranges
  int chunks;     // one per thread of the pool
  std::unique_ptr<Chunk[]> chunk;
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
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  } catch (...) {
  }
}

void ThreadPool::run_ranges(Job& job, int self) {
  auto run = [&job](int64_t r) {
    const int64_t begin = r * job.range;
    job.fn(job.context, begin, std::min(job.items, begin + job.range));
  };
  int64_t r;
  while (job.chunk[self].take(true, r)) run(r);
  for (int d = 1; d < job.chunks; ++d)
    for (Chunk& c = job.chunk[(self + d) % job.chunks]; c.take(false, r);) run(r);
}

void ThreadPool::worker_loop(int self) {
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
    run_ranges(*job, self);
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
  job.chunks = threads_;
  job.chunk = std::make_unique<Chunk[]>(threads_);
  for (int t = 0; t < threads_; ++t)
    job.chunk[t].span.store(static_cast<uint64_t>(job.count * t / threads_) << 32 |
                                static_cast<uint64_t>(job.count * (t + 1) / threads_),
                            std::memory_order_relaxed);
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

  run_ranges(job, 0);

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
