// Samples [first, last) shared out among `workers` threads, thread w taking first + w, first + w +
// workers, ...: data pack's encoding and data inspect --verify's checking. Header-only.
#pragma once

#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace cvtrain {

// Runs body(i) for every i in [first, last) on `workers` threads and waits for them. An exception
// that escapes body stops its thread and is rethrown here (the first thread's first) once all end;
// what body handles itself (an unusable sample) is its own business.
template <class Body>
void for_each_strided(size_t first, size_t last, size_t workers, const Body& body) {
  std::vector<std::exception_ptr> failures(workers);
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        for (size_t i = first + w; i < last; i += workers) body(i);
      } catch (...) {
        failures[w] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace cvtrain
