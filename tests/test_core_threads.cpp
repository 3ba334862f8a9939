// core/threads.hpp: workers holding shares of the threads (ThreadShares) start on an equal share, take the
// threads a finished worker gives back at their next adopt_thread_share, and leave the thread count as it
// was; outside a share adopt_thread_share changes nothing. core/line_log.hpp: lines of threads writing at
// once reach the shared log whole.
#include <doctest/doctest.h>

#include <omp.h>

#include <atomic>   // std::atomic
#include <cstdio>   // std::sscanf
#include <mutex>    // std::mutex
#include <sstream>  // std::ostringstream, std::istringstream
#include <string>   // std::string
#include <thread>   // std::thread
#include <vector>   // std::vector

#include "darkbert/core/line_log.hpp"
#include "darkbert/core/threads.hpp"

TEST_CASE("ThreadShares: equal shares, a finished worker's threads go to the others, the count restored") {
  const int before = omp_get_max_threads();
  darkbert::ThreadShares shares(4, 2);
  CHECK(shares.share() == 2);
  std::atomic<int> phase{0};
  int first_share = 0, alone_share = 0, after_done = 0;
  std::thread early([&] {
    const darkbert::ThreadShareScope scope(shares);
    first_share = omp_get_max_threads();
    phase = 1;
  });
  early.join();
  {
    const darkbert::ThreadShareScope scope(shares);  // joins after the other left: 4 / 1
    alone_share = omp_get_max_threads();
    darkbert::adopt_thread_share();
    CHECK(omp_get_max_threads() == 4);
  }
  after_done = omp_get_max_threads();
  CHECK(phase == 1);
  CHECK(first_share == 2);
  CHECK(alone_share == 4);
  CHECK(after_done == before);

  // Two workers on three threads: one each (the floor, never zero); one that joins after the other left
  // takes all three.
  darkbert::ThreadShares three(3, 2);
  std::atomic<bool> left{false};
  int joined_late = 0, once_alone = 0;
  std::thread other([&] {
    const darkbert::ThreadShareScope scope(three);
    CHECK(omp_get_max_threads() == 1);
  });
  other.join();
  left = true;
  std::thread last([&] {
    // Joining late: the share reflects who is still working.
    const darkbert::ThreadShareScope scope(three);
    joined_late = omp_get_max_threads();
    darkbert::adopt_thread_share();
    once_alone = omp_get_max_threads();
  });
  last.join();
  CHECK(left);
  CHECK(joined_late == 3);
  CHECK(once_alone == 3);

  // Outside any share, and inside a parallel region, adopt_thread_share changes nothing.
  omp_set_num_threads(1);
  darkbert::adopt_thread_share();
  CHECK(omp_get_max_threads() == 1);
  omp_set_num_threads(before);
}

TEST_CASE("ThreadShares: a worker still working sees its share grow only when it adopts it") {
  darkbert::ThreadShares shares(2, 2);
  std::atomic<int> stage{0};
  int before_adopt = 0, after_adopt = 0;
  std::thread slow([&] {
    const darkbert::ThreadShareScope scope(shares);
    stage = 1;                                            // working, on its half
    while (stage.load() == 1) std::this_thread::yield();  // the other worker finishes meanwhile
    before_adopt = omp_get_max_threads();
    darkbert::adopt_thread_share();
    after_adopt = omp_get_max_threads();
  });
  {
    const darkbert::ThreadShareScope scope(shares);
    CHECK(omp_get_max_threads() == 1);
    while (stage.load() == 0) std::this_thread::yield();
  }
  stage = 2;
  slow.join();
  CHECK(before_adopt == 1);
  CHECK(after_adopt == 2);
}

TEST_CASE("LineLog: threads writing at once hand whole lines to the shared log; a null target discards") {
  std::ostringstream shared;
  std::mutex lock;
  constexpr int threads = 4, lines = 200;
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t)
    writers.emplace_back([&, t] {
      darkbert::LineLog log(&shared, lock);
      for (int i = 0; i < lines; ++i) log << "thread " << t << " line " << i << " of " << lines << "\n";
      log << "thread " << t << " unfinished";  // handed over when the LineLog ends
    });
  for (auto& w : writers) w.join();
  std::istringstream in(shared.str());
  int whole = 0, unfinished = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(" unfinished") != std::string::npos) {
      int t = -1;
      CHECK_MESSAGE(std::sscanf(line.c_str(), "thread %d unfinished", &t) == 1, line);
      CHECK(line == "thread " + std::to_string(t) + " unfinished");
      ++unfinished;
      continue;
    }
    int t = -1, i = -1, n = -1;
    char rest[8] = {};
    REQUIRE_MESSAGE(std::sscanf(line.c_str(), "thread %d line %d of %d%7s", &t, &i, &n, rest) == 3, line);
    CHECK(n == lines);
    ++whole;
  }
  CHECK(whole == threads * lines);
  CHECK(unfinished == threads);  // each ended with a newline when its LineLog was destroyed

  // A flush hands over nothing before the newline.
  std::ostringstream target;
  {
    darkbert::LineLog log(&target, lock);
    log << "half" << std::flush;
    CHECK(target.str().empty());
    log << " and half\n";
    CHECK(target.str() == "half and half\n");
  }
  darkbert::LineLog discard(nullptr, lock);
  discard << "nothing\n" << std::flush;
  CHECK(discard.good());
}
