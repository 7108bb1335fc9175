// A fixed pool of worker threads that runs work ranges for kernel launches.
#ifndef HPF_PLUGINS_CPU_THREAD_POOL_HPP_
#define HPF_PLUGINS_CPU_THREAD_POOL_HPP_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace hpf::cpu {

// `threads` is the total parallelism including the calling thread, which always takes part:
// the pool owns threads - 1 workers, started on the first launch that needs them. An idle
// worker spins for kSpin before it sleeps: kernels launch back to back, and a wake-up through
// the condition variable takes about as long as a small kernel runs.
// Thread-safety: parallel_for may be called from several threads at once; their ranges
// interleave on the same workers and each call returns when its own ranges are done.
class ThreadPool {
 public:
  using RangeFn = void (*)(void* context, int64_t begin, int64_t end);

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Calls fn(context, begin, end) over [0, items) cut into ranges. `grain` is the smallest range
  // worth a thread (0: 1 item); ranges are about 16 per thread, or grain items, whichever is
  // longer: fine enough that unequal items (a ragged last block) even out (ResNet-50's auto plan
  // with two threads, 4 alternating runs each: 10.85 -> 10.21 ms mean of medians against 4 ranges
  // per thread), coarse enough that handing them out costs nothing measurable.
  // Thread t of the pool (the caller is thread 0) owns the t-th of `size()` contiguous chunks of
  // the ranges and runs them in order; a thread done with its own takes what is left of the
  // others' from their far ends, one range at a time. So a thread walks consecutive items (the
  // kernels' prefetches of the next item's lines, and the hardware prefetchers, work for the
  // thread that uses them), and the same part of consecutive kernels (an output block it wrote is
  // in its own cache when the next kernel reads it). Against ranges handed to whichever thread was
  // free, with two threads, 5 alternating runs each: ResNet-50 FP32 34.0 -> 32.2 ms, MobileNetV2
  // 4.58 -> 4.21 ms; BERT-base (4 runs) 85.3 -> 82.8 ms.
  // `fn` must not throw.
  void parallel_for(int64_t items, int64_t grain, RangeFn fn, void* context);

  // The range length parallel_for uses for `items` and `grain` on `threads` threads.
  static int64_t range_size(int64_t items, int64_t grain, int threads);

 private:
  struct Job;
  struct Chunk;
  void start_workers_locked();
  void worker_loop(int self);
  static void run_ranges(Job& job, int self);

  const int threads_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable job_released_;
  std::deque<Job*> jobs_;
  std::atomic<int64_t> queued_{0};  // jobs_.size(), for workers spinning without the mutex
  std::vector<std::thread> workers_;
  bool started_ = false;
  bool stopping_ = false;
};

}  // namespace hpf::cpu

#endif  // HPF_PLUGINS_CPU_THREAD_POOL_HPP_
