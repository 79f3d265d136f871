/*
 * rlock from C++ (rlock.hpp): four threads add to a counter under one
 * distributed mutex, taken with std::lock_guard, and each write carries
 * the lock's fencing token. The count comes out exact, and the tokens
 * grow, because only the lock's holder is ever inside.
 *
 *   cpp_mutex MASTER [MASTER...]      (e.g. cpp_mutex 127.0.0.1:6379)
 */
#include <rlock.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MASTER [MASTER...]\n", argv[0]);
    return 2;
  }
  try {
    rlockpp::client client(std::vector<std::string>(argv + 1, argv + argc));
    rlockpp::mutex mutex(client, "example:counter");

    long counter = 0;           // stands for a shared resource
    std::uint64_t last_token = 0;
    bool ordered = true;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
      threads.emplace_back([&] {
        for (int i = 0; i < 25; i++) {
          std::lock_guard<rlockpp::mutex> guard(mutex);  // released on exit
          std::uint64_t token = mutex.fencing_token();
          if (token <= last_token) ordered = false;  // a storage would refuse
          last_token = token;
          counter++;
        }
      });
    for (std::thread &t : threads) t.join();

    // A timed attempt, as with std::timed_mutex.
    if (mutex.try_lock_for(std::chrono::milliseconds(500))) {
      std::printf("counter %ld, last token %llu\n", counter,
                  static_cast<unsigned long long>(last_token));
      mutex.unlock();
    }
    return counter == 100 && ordered ? 0 : 1;
  } catch (const std::system_error &e) {
    // e.code() is in rlockpp::category(): its value is an RLOCK_E* code.
    std::fprintf(stderr, "rlock: %s\n", e.what());
    return 1;
  }
}
