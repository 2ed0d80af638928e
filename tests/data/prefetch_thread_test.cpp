// PrefetchThread: items in order and at most `depth` ahead, the producer's error after the items
// before it, and a prompt stop when destroyed with items still coming.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "cvtrain/data/prefetch_thread.h"

using cvtrain::PrefetchThread;

TEST_CASE("a prefetch thread hands its items over in order, staying at most depth ahead", "[data]") {
  std::atomic<int> produced{0};
  PrefetchThread<int> ahead([&]() -> std::optional<int> {
    if (produced == 20) return std::nullopt;
    return produced++;
  }, /*depth=*/2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(produced <= 3);  // two waiting and at most one in the making
  for (int i = 0; i < 20; ++i) {
    const std::optional<int> item = ahead.next();
    REQUIRE(item);
    CHECK(*item == i);
  }
  CHECK_FALSE(ahead.next());
  CHECK_FALSE(ahead.next());  // and stays finished
}

TEST_CASE("a prefetch thread's error surfaces after the items produced before it", "[data]") {
  int produced = 0;
  PrefetchThread<int> ahead([&]() -> std::optional<int> {
    if (produced == 3) throw std::runtime_error("sample 3 is unreadable");
    return produced++;
  }, /*depth=*/4);
  for (int i = 0; i < 3; ++i) CHECK(ahead.next() == i);
  CHECK_THROWS_WITH(ahead.next(), "sample 3 is unreadable");
}

TEST_CASE("a prefetch thread destroyed early stops after the item in hand", "[data]") {
  std::atomic<int> produced{0};
  {
    PrefetchThread<int> ahead([&]() -> std::optional<int> {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return produced++;
    }, /*depth=*/1, [&] { produced = 100; });  // the start function runs on the thread, first
    CHECK(ahead.next() == 100);
  }
  const int at_stop = produced;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(produced == at_stop);
  CHECK(at_stop <= 103);
}
