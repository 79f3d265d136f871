/*
 * Compiled, never run: includes rlock.hpp and instantiates every template
 * member with ordinary arguments, so that the header's warnings show
 * under each compiler and its strictest flags (test/meson.build compiles
 * this file with g++ and clang++, -std=c++17 -Wall -Wextra -pedantic
 * -Werror), and checks at compile time that the handles fit the standard
 * library's lock types.
 */
#include "rlock.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <type_traits>

static_assert(!std::is_copy_constructible<rlockpp::mutex>::value, "copy");
static_assert(std::is_nothrow_move_constructible<rlockpp::mutex>::value,
              "move");
static_assert(std::is_nothrow_move_assignable<rlockpp::shared_mutex>::value,
              "move");
static_assert(!std::is_copy_assignable<rlockpp::client>::value, "copy");
static_assert(std::is_move_constructible<rlockpp::client>::value, "move");
static_assert(std::is_error_code_enum<rlockpp::errc>::value, "errc");
static_assert(!std::is_copy_constructible<rlockpp::election>::value, "copy");
static_assert(std::is_nothrow_move_constructible<rlockpp::election>::value,
              "move");
static_assert(std::is_nothrow_move_assignable<rlockpp::election>::value,
              "move");

void every_member(rlockpp::client &c);
void every_member(rlockpp::client &c) {
  using namespace std::chrono_literals;
  std::error_code ec;
  c.wait_ready(1s);
  c.wait_ready(std::chrono::duration<double>(0.5), ec);
  (void)c.last_error();

  rlockpp::mutex m(c, "m");
  rlockpp::mutex m2(c, "m2", ec);
  m2 = std::move(m);
  {
    std::lock_guard<rlockpp::mutex> g(m2);
    std::unique_lock<rlockpp::mutex> u(m2, 10ms);
    u.try_lock_until(std::chrono::system_clock::now() + 1s);
  }
  m2.try_lock_for(1.5s, ec);
  m2.try_lock_until(std::chrono::steady_clock::now(), ec);
  m2.unlock(ec);
  (void)m2.fencing_token(ec);
  m2.on_lost([](std::uint64_t, bool) {});
  auto p = std::make_unique<int>(1);
  m2.lock_async(7, [p = std::move(p)](std::error_code) {});
  m2.lock_async(7, [](std::error_code) {}, ec);
  m2.try_lock_async_for(7, 100ms, [](std::error_code) {});
  m2.unlock_async(7, [](const std::error_code &) {});
  m2.unlock_async(7);

  rlockpp::fair_mutex f(c, "f");
  std::scoped_lock<rlockpp::mutex, rlockpp::fair_mutex> both(m2, f);

  rlockpp::shared_mutex s(c, "s");
  {
    std::shared_lock<rlockpp::shared_mutex> r(s, 10ms);
    std::unique_lock<rlockpp::shared_mutex> w(s, std::defer_lock);
    w.try_lock_for(1min);
  }
  s.try_lock_shared_until(std::chrono::steady_clock::now() + 1s, ec);
  s.on_lost([](std::uint64_t, bool) {});

  rlockpp::counting_semaphore sem(c, "sem", 3);
  sem.try_acquire_for(20ms);
  sem.try_acquire_until(std::chrono::steady_clock::now() + 20ms);
  sem.release(1, ec);
  sem.acquire_async(3, [](std::error_code) {});
  sem.release_async(3, [](std::error_code) {});
  sem.on_lost([](std::uint64_t, bool) {});

  rlockpp::latch l(c, "l");
  l.wait_for(std::chrono::hours::max());
  l.wait_until(std::chrono::steady_clock::now());
  l.wait_async(1, [](std::error_code) {});

  rlockpp::election e(c, "e");
  rlockpp::election e2(c, "e", ec);
  e2 = std::move(e);
  e2.campaign("v");
  e2.campaign("v", ec);
  e2.campaign_for("v", 2s);
  e2.campaign_for("v", 1500us, ec);
  e2.campaign_until("v", std::chrono::system_clock::now() + 1s);
  e2.campaign_async("v", 4, [](std::error_code) {});
  e2.campaign_async_for("v", 4, 10ms, [](const std::error_code &) {});
  e2.cancel();
  e2.proclaim("w");
  e2.proclaim("w", ec);
  std::uint64_t tok = e2.is_leader() ? e2.token() : 0;
  (void)tok;
  std::optional<rlockpp::leader_info> who = e2.leader();
  who = e2.leader(ec);
  if (who) (void)who->value.size();
  e2.observe([](const std::optional<rlockpp::leader_info> &) {});
  e2.stop_observing();
  e2.on_lost([] {});
  e2.on_risk([](bool) {});
  e2.resign();
  e2.resign(ec);
  (void)e2.name();
  (void)e2.get();
  bool same = ec == rlockpp::errc::timed_out ||
              ec == std::errc::timed_out || &ec.category() == &rlockpp::category();
  (void)same;
}
