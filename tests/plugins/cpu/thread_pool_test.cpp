// ThreadPool (plugins/cpu/thread_pool.hpp): every item runs exactly once, whatever the split,
// the thread count, and concurrent callers; a thread runs its own chunk in order, from its front.
#include "plugins/cpu/thread_pool.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct Record {
  std::vector<std::atomic<int>> hits;
  std::mutex m;
  std::vector<std::pair<std::thread::id, int64_t>> starts;  // (thread, range begin) in call order
  explicit Record(int64_t n) : hits(static_cast<size_t>(n)) {}
};

void count_range(void* context, int64_t begin, int64_t end) {
  auto* r = static_cast<Record*>(context);
  {
    std::lock_guard lock(r->m);
    r->starts.emplace_back(std::this_thread::get_id(), begin);
  }
  for (int64_t i = begin; i < end; ++i) r->hits[static_cast<size_t>(i)].fetch_add(1);
}

bool each_once(const Record& r) {
  return std::all_of(r.hits.begin(), r.hits.end(), [](const std::atomic<int>& h) { return h.load() == 1; });
}

}  // namespace

TEST_CASE("ThreadPool: every item exactly once, any items, grain and threads") {
  for (int threads : {1, 2, 3, 8}) {
    hpf::cpu::ThreadPool pool(threads);
    for (int64_t items : {1, 2, 7, 31, 32, 33, 100, 1000, 4097})
      for (int64_t grain : {0, 1, 5, 64, 5000}) {
        CAPTURE(threads);
        CAPTURE(items);
        CAPTURE(grain);
        Record r(items);
        pool.parallel_for(items, grain, count_range, &r);
        CHECK(each_once(r));
        // Every range but the last is range_size long.
        const int64_t range = hpf::cpu::ThreadPool::range_size(items, grain, threads);
        for (const auto& s : r.starts) CHECK(s.second % range == 0);
      }
    Record none(0);
    pool.parallel_for(0, 0, count_range, &none);
    CHECK(none.starts.empty());
  }
}

TEST_CASE("ThreadPool: a thread runs its own chunk in order from the front, others' from the back") {
  // Two threads, 32 ranges of 2 items: the caller owns ranges [0, 16) (items [0, 32)), the worker
  // [16, 32). However the work ends up shared (the worker may come late, or not at all), a
  // thread's ranges from its own chunk are consecutive from the chunk's start, and those it takes
  // from the other chunk consecutive down from that chunk's end.
  hpf::cpu::ThreadPool pool(2);
  for (int rep = 0; rep < 50; ++rep) {
    Record r(64);
    pool.parallel_for(64, 1, count_range, &r);
    REQUIRE(each_once(r));
    const std::thread::id caller = std::this_thread::get_id();
    for (bool is_caller : {true, false})
      for (int chunk = 0; chunk < 2; ++chunk) {
        std::vector<int64_t> seq;
        for (const auto& s : r.starts)
          if ((s.first == caller) == is_caller && (s.second < 32) == (chunk == 0)) seq.push_back(s.second);
        const bool own = (chunk == 0) == is_caller;
        for (size_t k = 0; k < seq.size(); ++k) {
          CAPTURE(rep);
          CAPTURE(is_caller);
          CAPTURE(chunk);
          CHECK(seq[k] == (own ? 32 * chunk + 2 * static_cast<int64_t>(k) : 32 * chunk + 30 - 2 * static_cast<int64_t>(k)));
        }
      }
  }
}

TEST_CASE("ThreadPool: concurrent callers share the workers and each gets its own items") {
  hpf::cpu::ThreadPool pool(3);
  std::deque<Record> records;
  for (int c = 0; c < 4; ++c) records.emplace_back(5000);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&pool, &records, c] {
      for (int rep = 0; rep < 25; ++rep) {
        Record r(777);
        pool.parallel_for(777, 0, count_range, &r);
        if (!each_once(r)) records[static_cast<size_t>(c)].hits[0].fetch_add(100);
      }
      pool.parallel_for(5000, 3, count_range, &records[static_cast<size_t>(c)]);
    });
  for (auto& t : callers) t.join();
  for (const Record& r : records) CHECK(each_once(r));
}
