/*
 * The C++ wrappers (include/rlock.hpp) against a real master: the
 * standard lock types over rlockpp handles (unique_lock, shared_lock,
 * scoped_lock over two mutexes), a timed wait against a holder in another
 * process (the rlock tool), the release of a lock when an exception
 * leaves its critical section, the semaphore and the latch, the error
 * category and the std::error_code overloads, and async and lost
 * callbacks given as lambdas. Each test looks at the lock's state through
 * a second client (another owner) or the C API, so that a wrapper that
 * did nothing, or the wrong thing, fails it.
 *
 * It uses the C test harness (harness.h) for the servers and the runner.
 */
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "harness.h"
}
#include "rlock.hpp"

extern char **environ;

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

static rt_redis srv[1];

/* Options for a test client: a master timeout generous enough for
 * valgrind, quick retries. */
static rlock_options test_options(int64_t watchdog_ms = 0) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = 1000;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  return o;
}

static rlockpp::client open_client(int64_t watchdog_ms = 0) {
  return rlockpp::client({srv[0].url}, test_options(watchdog_ms));
}

static long long ms_since(steady::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() -
                                                               t0)
      .count();
}

/* Whether another thread of the same client can take m at once (it then
 * lets it go again): the lock's owner is the thread. */
template <class M>
static bool other_thread_takes(M &m) {
  bool took = false;
  std::thread t([&] {
    took = m.try_lock();
    if (took) m.unlock();
  });
  t.join();
  return took;
}

/* std::unique_lock: owns, reenters, releases, relocks; the owner is the
 * thread, and another client sees the lock held exactly while it is. */
static void unique_lock_basic() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::mutex m(c1, "cpp:unique"), other(c2, "cpp:unique");
  {
    std::unique_lock<rlockpp::mutex> lk(m);
    RT_CHECK(lk.owns_lock());
    RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(m.get()), 1);
    RT_CHECK(m.held_by_this_thread());
    std::uint64_t token = m.fencing_token();
    RT_CHECK(token > 0);
    auto t0 = steady::now();
    RT_CHECK(!other.try_lock());
    RT_CHECK(ms_since(t0) < 900); /* one attempt, no wait */
    RT_CHECK(!other_thread_takes(m));
    /* Reentrant: the same thread takes it again, and one unlock leaves
     * it held. */
    RT_CHECK(m.try_lock());
    RT_CHECK_EQ_INT(m.hold_count(), 2);
    m.unlock();
    RT_CHECK_EQ_INT(m.hold_count(), 1);
    RT_CHECK(!other.try_lock());
    lk.unlock();
    RT_CHECK(!lk.owns_lock());
    RT_CHECK_EQ_INT(m.hold_count(), 0);
    RT_CHECK(other.try_lock());
    other.unlock();
    /* A second holder's token is larger. */
    lk.lock();
    RT_CHECK(m.fencing_token() > token);
  }
  RT_CHECK_EQ_INT(rlock_hold_count(m.get()), 0);
  RT_CHECK(other.try_lock());
  other.unlock();
  /* unique_lock's timed constructor, against a holder. */
  std::unique_lock<rlockpp::mutex> held(other);
  auto t0 = steady::now();
  std::unique_lock<rlockpp::mutex> timed(m, 150ms);
  RT_CHECK(!timed.owns_lock());
  RT_CHECK(ms_since(t0) >= 140);
}

/* std::shared_lock: two readers at once, a writer kept out while they
 * read and let in after; a writer keeps readers out. */
static void shared_lock_readers_writer() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::shared_mutex a(c1, "cpp:rw"), b(c2, "cpp:rw");
  {
    std::shared_lock<rlockpp::shared_mutex> r1(a);
    std::shared_lock<rlockpp::shared_mutex> r2(b, 2s);
    RT_CHECK(r1.owns_lock());
    RT_CHECK(r2.owns_lock());
    RT_CHECK_EQ_INT(rlock_hold_count(a.get_shared()), 1);
    RT_CHECK_EQ_INT(rlock_hold_count(b.get_shared()), 1);
    RT_CHECK(a.fencing_token_shared() > 0);
    /* A writer of a third owner (another thread of c1) is kept out. */
    bool wrote = true;
    std::thread t([&] { wrote = a.try_lock_for(100ms); });
    t.join();
    RT_CHECK(!wrote);
    /* A reader that asks to write is refused at once, not deadlocked. */
    std::error_code ec;
    RT_CHECK(!b.try_lock(ec));
    RT_CHECK(ec == rlockpp::errc::deadlock);
  }
  RT_CHECK_EQ_INT(rlock_hold_count(a.get_shared()), 0);
  {
    std::unique_lock<rlockpp::shared_mutex> w(a);
    RT_CHECK(a.fencing_token() > 0);
    RT_CHECK(!b.try_lock_shared());
    RT_CHECK(!b.try_lock_shared_for(100ms));
  }
  std::shared_lock<rlockpp::shared_mutex> r(b, std::try_to_lock);
  RT_CHECK(r.owns_lock());
}

/* std::scoped_lock over two mutexes takes both, and gives both back. */
static void scoped_lock_two() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::mutex a(c1, "cpp:a"), b(c1, "cpp:b");
  rlockpp::mutex a2(c2, "cpp:a"), b2(c2, "cpp:b");
  {
    std::scoped_lock<rlockpp::mutex, rlockpp::mutex> both(a, b);
    RT_CHECK_EQ_INT(rlock_hold_count(a.get()), 1);
    RT_CHECK_EQ_INT(rlock_hold_count(b.get()), 1);
    RT_CHECK(!a2.try_lock());
    RT_CHECK(!b2.try_lock());
  }
  RT_CHECK_EQ_INT(rlock_hold_count(a.get()), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(b.get()), 0);
  /* With b held by another client, scoped_lock waits for it without
   * keeping a meanwhile (std::lock backs off): the other client can take
   * a while the waiter waits, and the waiter gets both once b is free. */
  RT_REQUIRE(b2.try_lock());
  std::atomic<bool> done{false};
  std::thread t([&] {
    std::scoped_lock<rlockpp::mutex, rlockpp::mutex> both(a, b);
    done = true;
    RT_CHECK_EQ_INT(rlock_hold_count(a.get()), 1);
    RT_CHECK_EQ_INT(rlock_hold_count(b.get()), 1);
  });
  std::this_thread::sleep_for(300ms);
  RT_CHECK(!done);
  bool a_free = a2.try_lock_for(2s);
  RT_CHECK(a_free);
  if (a_free) a2.unlock();
  RT_CHECK(!done);
  b2.unlock();
  t.join();
  RT_CHECK(done);
  RT_CHECK(a2.try_lock());
  a2.unlock();
}

/* Starts `rlock exec NAME -- sh -c 'echo held; sleep SECONDS'` holding
 * the lock in another process; returns its pid once it says it holds
 * the lock, or -1. */
static pid_t spawn_holder(const char *name, const char *seconds) {
  const char *tool = getenv("RLOCK_TOOL");
  if (tool == nullptr) return -1;
  int fds[2];
  if (pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::string script = std::string("echo held; exec sleep ") + seconds;
  std::vector<std::string> args = {tool,   "--masters", srv[0].url, "exec",
                                   name,   "--",        "sh",       "-c",
                                   script};
  std::vector<char *> argv;
  for (std::string &a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, tool, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  char buf[8] = {0};
  ssize_t n = rc == 0 ? read(fds[0], buf, 4) : -1;
  close(fds[0]);
  if (rc != 0) return -1;
  if (n != 4 || memcmp(buf, "held", 4) != 0) {
    rt_reap(pid);
    return -1;
  }
  return pid;
}

/* try_lock_for and try_lock_until wait out their time against a holder
 * in another process, and try_lock_for gets the lock once it lets go. */
static void try_lock_for_other_process() {
  rlockpp::client c = open_client();
  rlockpp::mutex m(c, "cpp:proc");
  pid_t pid = spawn_holder("cpp:proc", "2");
  RT_REQUIRE(pid > 0);
  RT_CHECK(m.is_locked());
  auto t0 = steady::now();
  RT_CHECK(!m.try_lock_for(300ms));
  long long waited = ms_since(t0);
  RT_CHECK(waited >= 290);
  RT_CHECK(waited < 1500);
  t0 = steady::now();
  RT_CHECK(!m.try_lock_until(steady::now() + 200ms));
  RT_CHECK(ms_since(t0) >= 190);
  RT_CHECK(!m.try_lock());
  /* The holder sleeps 2 s, then releases: a longer wait gets it. */
  t0 = steady::now();
  bool got = m.try_lock_for(10s);
  RT_CHECK(got);
  RT_CHECK(ms_since(t0) < 9000);
  if (got) {
    RT_CHECK(m.fencing_token() > 0);
    m.unlock();
  }
  RT_CHECK_EQ_INT(rt_reap(pid), 0);
}

/* An exception thrown inside a lock_guard's critical section releases the
 * lock on the way out: another client takes it at once. */
static void exception_releases() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::mutex m(c1, "cpp:exc"), other(c2, "cpp:exc");
  bool caught = false;
  try {
    std::lock_guard<rlockpp::mutex> g(m);
    RT_CHECK(!other.try_lock());
    throw std::runtime_error("inside");
  } catch (const std::runtime_error &e) {
    caught = std::strcmp(e.what(), "inside") == 0;
  }
  RT_CHECK(caught);
  RT_CHECK_EQ_INT(rlock_hold_count(m.get()), 0);
  RT_CHECK(other.try_lock());
  other.unlock();
  /* And with the guard around a lock that was lost meanwhile (deleted on
   * the master): the unwinding unlock neither throws nor terminates. */
  caught = false;
  try {
    std::lock_guard<rlockpp::mutex> g(m);
    other.force_unlock();
    throw std::runtime_error("inside");
  } catch (const std::runtime_error &) {
    caught = true;
  }
  RT_CHECK(caught);
  RT_CHECK(other.try_lock());
  other.unlock();
}

/* The semaphore: at most its limit of permits held across clients;
 * a release lets a waiter in; another limit is a conflict. */
static void semaphore() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::counting_semaphore s1(c1, "cpp:sem", 2), s2(c2, "cpp:sem", 2);
  RT_CHECK_EQ_INT(s1.max(), 2);
  RT_CHECK_EQ_INT(s1.available(), 2);
  s1.acquire();
  RT_CHECK(s2.try_acquire());
  RT_CHECK_EQ_INT(s1.held(), 1);
  RT_CHECK_EQ_INT(s2.held(), 1);
  RT_CHECK_EQ_INT(s1.available(), 0);
  RT_CHECK(s1.fencing_token() > 0);
  auto t0 = steady::now();
  RT_CHECK(!s1.try_acquire());
  RT_CHECK(ms_since(t0) < 900); /* one attempt, no wait */
  t0 = steady::now();
  RT_CHECK(!s2.try_acquire_for(150ms));
  RT_CHECK(ms_since(t0) >= 140);
  /* A waiter in another thread gets the permit that main releases. */
  std::promise<bool> got;
  std::thread t([&] {
    bool ok = s2.try_acquire_for(5s);
    got.set_value(ok);
    if (ok) s2.release();
  });
  std::this_thread::sleep_for(100ms);
  s1.release();
  auto f = got.get_future();
  RT_CHECK(f.wait_for(5s) == std::future_status::ready && f.get());
  t.join();
  /* Releasing what the thread does not hold is refused, and said so. */
  RT_CHECK_EQ_INT(s1.held(), 0);
  bool threw = false;
  try {
    s1.release();
  } catch (const std::system_error &e) {
    threw = e.code() == rlockpp::errc::not_owner;
  }
  RT_CHECK(threw);
  /* Another limit for the same semaphore. */
  rlockpp::counting_semaphore s3(c1, "cpp:sem", 3);
  std::error_code ec;
  RT_CHECK(!s3.try_acquire(ec));
  RT_CHECK(ec == rlockpp::errc::conflict);
  s2.release();
  RT_CHECK_EQ_INT(s2.held(), 0);
}

/* The latch: set, counted down by two others, opens its awaiters. */
static void latch() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::latch l1(c1, "cpp:latch"), l2(c2, "cpp:latch");
  RT_CHECK(l1.set(2));
  RT_CHECK(!l2.set(5)); /* already counting: unchanged */
  RT_CHECK_EQ_INT(l2.count(), 2);
  RT_CHECK(!l1.try_wait());
  RT_CHECK(!l1.wait_for(100ms));
  std::atomic<bool> opened{false};
  std::thread waiter([&] {
    l1.wait();
    opened = true;
  });
  l2.count_down();
  std::this_thread::sleep_for(200ms);
  RT_CHECK(!opened);
  RT_CHECK_EQ_INT(l1.count(), 1);
  l2.count_down();
  waiter.join();
  RT_CHECK(opened);
  RT_CHECK_EQ_INT(l1.count(), 0);
  RT_CHECK(l2.try_wait());
  /* Counting down a latch that was never set. */
  rlockpp::latch unset(c1, "cpp:latch:unset");
  std::error_code ec;
  unset.count_down(ec);
  RT_CHECK(ec == rlockpp::errc::no_entry);
  bool threw = false;
  try {
    unset.count_down();
  } catch (const std::system_error &e) {
    threw = e.code().value() == RLOCK_ENOENT;
  }
  RT_CHECK(threw);
}

/* The error category, the exceptions and the error_code overloads. */
static void errors() {
  const std::error_category &cat = rlockpp::category();
  RT_CHECK(std::strcmp(cat.name(), "rlock") == 0);
  RT_CHECK(cat.message(RLOCK_EINVAL) == rlock_strerror(RLOCK_EINVAL));
  RT_CHECK(cat.message(RLOCK_ETIMEDOUT) == rlock_strerror(RLOCK_ETIMEDOUT));
  std::error_code inval = rlockpp::errc::invalid;
  RT_CHECK(inval.value() == RLOCK_EINVAL);
  RT_CHECK(&inval.category() == &cat);
  RT_CHECK(inval == std::errc::invalid_argument);
  RT_CHECK(std::error_code(rlockpp::errc::timed_out) == std::errc::timed_out);

  rlockpp::client c = open_client();
  /* A name with a brace is refused by rlock_get. */
  bool threw = false;
  try {
    rlockpp::mutex bad(c, "a{b}");
  } catch (const std::system_error &e) {
    threw = e.code() == std::error_code(RLOCK_EINVAL, rlockpp::category()) &&
            std::strstr(e.what(), rlock_strerror(RLOCK_EINVAL)) != nullptr;
  }
  RT_CHECK(threw);
  std::error_code ec;
  rlockpp::mutex bad(c, "a{b}", ec);
  RT_CHECK(ec == rlockpp::errc::invalid);
  RT_CHECK(bad.get() == nullptr);
  bad.lock(ec);
  RT_CHECK(ec == rlockpp::errc::invalid);
  RT_CHECK(!bad.try_lock(ec));
  RT_CHECK(ec == rlockpp::errc::invalid);
  rlockpp::shared_mutex bad_rw(c, "{", ec);
  RT_CHECK(ec == rlockpp::errc::invalid);
  threw = false;
  try {
    bad_rw.on_lost([](std::uint64_t, bool) {});
  } catch (const std::system_error &e) {
    threw = e.code() == rlockpp::errc::invalid;
  }
  RT_CHECK(threw);
  RT_CHECK(!bad_rw.try_lock_shared(ec));
  RT_CHECK(ec == rlockpp::errc::invalid);
  rlockpp::counting_semaphore bad_sem(c, "cpp:sem:bad", 0, ec);
  RT_CHECK(ec == rlockpp::errc::invalid);

  /* Unlocking a lock the thread does not hold throws (not_owner); the
   * error_code overload reports it. */
  rlockpp::mutex m(c, "cpp:err");
  threw = false;
  try {
    m.unlock();
  } catch (const std::system_error &e) {
    threw = e.code() == rlockpp::errc::not_owner &&
            e.code() == std::errc::operation_not_permitted;
  }
  RT_CHECK(threw);
  m.unlock(ec);
  RT_CHECK(ec == rlockpp::errc::not_owner);
  threw = false;
  try {
    (void)m.fencing_token();
  } catch (const std::system_error &e) {
    threw = e.code() == rlockpp::errc::not_owner;
  }
  RT_CHECK(threw);
  /* The success paths clear ec. */
  ec = rlockpp::errc::lost;
  RT_CHECK(m.try_lock(ec));
  RT_CHECK(!ec);
  RT_CHECK(m.fencing_token(ec) > 0);
  RT_CHECK(!ec);
  m.unlock(ec);
  RT_CHECK(!ec);

  /* A client on a malformed address: what() says which. */
  threw = false;
  try {
    rlockpp::client broken({"redis://127.0.0.1:99999"});
  } catch (const std::system_error &e) {
    threw = e.code() == rlockpp::errc::invalid &&
            std::strstr(e.what(), "masters[0]") != nullptr;
  }
  RT_CHECK(threw);
  /* Blocking calls on the loop thread: deadlock, reported to the
   * callback that made it. */
  std::promise<std::error_code> inner;
  m.lock_async(42, [&](std::error_code status) {
    std::error_code e2;
    m.lock(e2); /* on the loop thread */
    inner.set_value(status ? status : e2);
  });
  auto f = inner.get_future();
  RT_REQUIRE(f.wait_for(10s) == std::future_status::ready);
  RT_CHECK(f.get() == rlockpp::errc::deadlock);
  m.unlock_async(42);
}

/* Async lock and unlock with lambdas: they run once, on the loop thread,
 * with the status; the lock is held by the owner in between; a
 * move-only callable works. */
static void async_lambda() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::mutex m(c1, "cpp:async"), other(c2, "cpp:async");
  const std::uint64_t owner = 7;
  std::promise<std::error_code> locked;
  std::thread::id cb_thread;
  auto token = std::make_unique<int>(5); /* makes the lambda move-only */
  int seen = 0;
  m.lock_async(owner, [&, token = std::move(token)](std::error_code ec) {
    cb_thread = std::this_thread::get_id();
    seen = *token;
    locked.set_value(ec);
  });
  auto f = locked.get_future();
  RT_REQUIRE(f.wait_for(10s) == std::future_status::ready);
  RT_CHECK(!f.get());
  RT_CHECK_EQ_INT(seen, 5);
  RT_CHECK(cb_thread != std::this_thread::get_id());
  RT_CHECK_EQ_INT(m.owner_hold_count(owner), 1);
  RT_CHECK(m.owner_fencing_token(owner) > 0);
  RT_CHECK_EQ_INT(m.hold_count(), 0); /* the thread is not the owner */
  RT_CHECK(!other.try_lock());
  /* A second owner waits, and is cancelled. */
  std::promise<std::error_code> second;
  m.lock_async(8, [&](std::error_code ec) { second.set_value(ec); });
  std::this_thread::sleep_for(100ms);
  RT_CHECK(m.cancel_async(8));
  auto f2 = second.get_future();
  RT_REQUIRE(f2.wait_for(10s) == std::future_status::ready);
  RT_CHECK(f2.get() == rlockpp::errc::canceled);
  RT_CHECK(!m.cancel_async(8));

  std::promise<std::error_code> unlocked;
  m.unlock_async(owner, [&](std::error_code ec) { unlocked.set_value(ec); });
  auto u = unlocked.get_future();
  RT_REQUIRE(u.wait_for(10s) == std::future_status::ready);
  RT_CHECK(!u.get());
  RT_CHECK_EQ_INT(m.owner_hold_count(owner), 0);
  RT_CHECK(other.try_lock());
  /* Against that holder, a timed async acquisition times out. */
  std::promise<std::error_code> timed;
  m.try_lock_async_for(owner, 100ms,
                       [&](std::error_code ec) { timed.set_value(ec); });
  auto ft = timed.get_future();
  RT_REQUIRE(ft.wait_for(10s) == std::future_status::ready);
  RT_CHECK(ft.get() == rlockpp::errc::timed_out);
  other.unlock();
  /* A request the library refuses throws, and its callable is freed
   * without running (valgrind sees a leak otherwise). */
  std::error_code bad;
  rlockpp::mutex none(c1, "{", bad);
  bool threw = false, ran = false;
  try {
    none.lock_async(1, [&ran, p = std::make_unique<int>(1)](std::error_code) {
      ran = true;
    });
  } catch (const std::system_error &e) {
    threw = e.code() == rlockpp::errc::invalid;
  }
  RT_CHECK(threw);
  RT_CHECK(!ran);
  /* The error_code forms fill it instead, and free the callable. */
  std::error_code e1 = rlockpp::errc::lost, e2 = e1, e3 = e1;
  none.try_lock_async_for(1, 100ms,
                          [&ran, p = std::make_unique<int>(1)](
                              std::error_code) { ran = true; },
                          e1);
  none.unlock_async(1, [&ran](std::error_code) { ran = true; }, e2);
  none.unlock_async(1, e3);
  RT_CHECK(e1 == rlockpp::errc::invalid);
  RT_CHECK(e2 == rlockpp::errc::invalid);
  RT_CHECK(e3 == rlockpp::errc::invalid);
  RT_CHECK(!ran);
  /* And a request made clears it; done runs with the status. */
  std::promise<std::error_code> got, gone;
  std::error_code made = rlockpp::errc::lost;
  m.try_lock_async_for(9, 2s, [&](std::error_code ec) { got.set_value(ec); },
                       made);
  RT_CHECK(!made);
  auto fg = got.get_future();
  RT_REQUIRE(fg.wait_for(10s) == std::future_status::ready);
  RT_CHECK(!fg.get());
  made = rlockpp::errc::lost;
  m.unlock_async(9, [&](std::error_code ec) { gone.set_value(ec); }, made);
  RT_CHECK(!made);
  auto fu = gone.get_future();
  RT_REQUIRE(fu.wait_for(10s) == std::future_status::ready);
  RT_CHECK(!fu.get());
  RT_CHECK_EQ_INT(m.owner_hold_count(9), 0);
}

/* A lost callback as a lambda: the lock is deleted behind its holder's
 * back, the watchdog finds it lost and the lambda runs with the thread's
 * id; unlock() then does not throw, unlock(ec) says lost. Moving and
 * destroying the mutex then leaves the callback unset. */
static void lost_lambda() {
  rlockpp::client c1 = open_client(1500), c2 = open_client();
  rlockpp::mutex m(c1, "cpp:lost"), other(c2, "cpp:lost");
  std::promise<std::pair<std::uint64_t, bool>> lost;
  std::atomic<int> calls{0};
  m.on_lost([&](std::uint64_t owner, bool is_thread) {
    if (calls++ == 0) lost.set_value({owner, is_thread});
  });
  m.lock();
  other.force_unlock();
  auto f = lost.get_future();
  RT_REQUIRE(f.wait_for(10s) == std::future_status::ready);
  auto who = f.get();
  RT_CHECK(who.first == rlock_thread_id());
  RT_CHECK(who.second);
  RT_CHECK(!m.held_by_this_thread());
  std::error_code ec;
  m.unlock(ec);
  RT_CHECK(ec == rlockpp::errc::lost);
  RT_CHECK_EQ_INT(calls.load(), 1);
  /* A moved mutex keeps its handle and its callback. */
  rlockpp::mutex moved(std::move(m));
  RT_CHECK(m.get() == nullptr);
  RT_CHECK(moved.get() != nullptr);
  std::promise<void> again;
  moved.on_lost([&](std::uint64_t, bool) {
    if (calls++ == 1) again.set_value();
  });
  moved.lock();
  other.force_unlock();
  RT_CHECK(again.get_future().wait_for(10s) == std::future_status::ready);
  moved.unlock(); /* lost: does not throw */
  RT_CHECK_EQ_INT(calls.load(), 2);
}

/* An at-risk callback as a lambda: the only master stopped past the
 * validity, the lambda is told true, then the loss comes, in that order,
 * and nothing says false. The shared_mutex takes one for both sides. */
static void risk_lambda() {
  rlockpp::client c1 = open_client(3000);
  rlockpp::mutex m(c1, "cpp:risk");
  std::mutex mu;
  std::vector<int> seen; /* 1 and 0 at risk, 2 lost */
  std::promise<void> lost;
  m.on_risk([&](bool at_risk) {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(at_risk ? 1 : 0);
  });
  m.on_lost([&](std::uint64_t, bool) {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(2);
    if (seen.size() <= 2) lost.set_value();
  });
  m.lock();
  std::this_thread::sleep_for(1200ms); /* renewals held: nothing said */
  {
    std::lock_guard<std::mutex> g(mu);
    RT_CHECK(seen.empty());
  }
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  bool told = lost.get_future().wait_for(10s) == std::future_status::ready;
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_REQUIRE(told);
  {
    std::lock_guard<std::mutex> g(mu);
    RT_CHECK(seen == std::vector<int>({1, 2}));
  }
  m.unlock(); /* lost: does not throw */
  rlockpp::shared_mutex rw(c1, "cpp:risk-rw");
  rw.on_risk([](bool) {});
  rlockpp::counting_semaphore sem(c1, "cpp:risk-sem", 2);
  sem.on_risk([](bool) {});
}

/* Whether call throws std::system_error with code want. */
template <class F>
static bool throws_code(F call, rlockpp::errc want) {
  try {
    call();
  } catch (const std::system_error &e) {
    return e.code() == want;
  }
  return false;
}

/* An observer's record: what it was told, in order ("" for no leader). */
struct observed {
  std::mutex mu;
  std::vector<std::pair<std::string, std::uint64_t>> seen;
  bool none_first = false;

  void add(const std::optional<rlockpp::leader_info> &l) {
    std::lock_guard<std::mutex> g(mu);
    if (l && l->value.empty()) seen.push_back({"(empty)", l->token});
    else seen.push_back({l ? l->value : "", l ? l->token : 0});
  }
  /* Waits until the last thing told is value ("" for none). */
  bool wait(const std::string &value) {
    auto end = steady::now() + 10s;
    while (steady::now() < end) {
      {
        std::lock_guard<std::mutex> g(mu);
        if (!seen.empty() && seen.back().first == value) return true;
      }
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }
};

/* rlockpp::election: campaign with a timeout, proclaim, resign, leader()
 * as an optional, observe with a lambda, async campaigns and cancel, the
 * errors of a non-leader, and the destructor resigning (RAII). */
static void election_basics() {
  rlockpp::client c1 = open_client(), c2 = open_client();
  rlockpp::election a(c1, "cpp:elect"), b(c2, "cpp:elect");
  RT_CHECK(a.name() == "cpp:elect");
  RT_CHECK(!b.leader().has_value());
  observed obs;
  b.observe([&](const std::optional<rlockpp::leader_info> &l) { obs.add(l); });
  RT_CHECK(obs.wait(""));
  RT_REQUIRE(a.campaign_for("alpha", 2s));
  RT_CHECK(a.is_leader());
  RT_CHECK(!b.is_leader());
  std::uint64_t t1 = a.token();
  RT_CHECK(t1 > 0);
  std::optional<rlockpp::leader_info> l = b.leader();
  RT_CHECK(l.has_value() && l->value == "alpha" && l->token == t1);
  RT_CHECK(obs.wait("alpha"));
  /* One attempt, and a short wait: the leader stays. */
  RT_CHECK(!b.campaign_for("beta", 0ms));
  auto t0 = steady::now();
  RT_CHECK(!b.campaign_for("beta", 300ms));
  RT_CHECK(ms_since(t0) >= 250);
  std::error_code ec;
  RT_CHECK(!b.campaign_for("beta", 0ms, ec) && !ec);
  /* A non-leader's calls. */
  RT_CHECK(throws_code([&] { b.proclaim("x"); }, rlockpp::errc::not_owner));
  RT_CHECK(throws_code([&] { b.resign(); }, rlockpp::errc::not_owner));
  RT_CHECK(throws_code([&] { (void)b.token(); }, rlockpp::errc::not_owner));
  b.proclaim("x", ec);
  RT_CHECK(ec == rlockpp::errc::not_owner);
  RT_CHECK(throws_code([&] { a.campaign("again"); }, rlockpp::errc::invalid));
  RT_CHECK(throws_code([&] { a.proclaim(std::string(5000, 'v')); },
                       rlockpp::errc::invalid));
  a.proclaim("alpha2");
  RT_CHECK(obs.wait("alpha2"));
  RT_CHECK(b.leader()->value == "alpha2");
  /* An async campaign waits in the queue; the resign makes it leader. */
  std::promise<std::error_code> won;
  b.campaign_async("beta", 7, [&](std::error_code e) { won.set_value(e); });
  std::this_thread::sleep_for(100ms);
  a.resign();
  RT_CHECK(!a.is_leader());
  auto fw = won.get_future();
  RT_REQUIRE(fw.wait_for(10s) == std::future_status::ready);
  RT_CHECK(!fw.get());
  RT_CHECK(b.is_leader());
  RT_CHECK(b.token() > t1);
  RT_CHECK(obs.wait("beta"));
  /* A cancelled one. */
  std::promise<std::error_code> gave_up;
  a.campaign_async_for("a2", 8, 30s,
                       [&](std::error_code e) { gave_up.set_value(e); });
  std::this_thread::sleep_for(100ms);
  RT_CHECK(a.cancel());
  auto fg = gave_up.get_future();
  RT_REQUIRE(fg.wait_for(10s) == std::future_status::ready);
  RT_CHECK(fg.get() == rlockpp::errc::canceled);
  RT_CHECK(!a.cancel());
  /* Moved, the leadership goes with the handle. */
  rlockpp::election moved(std::move(b));
  RT_CHECK(b.get() == nullptr && !b.is_leader());
  RT_CHECK(moved.is_leader());
  RT_CHECK(throws_code([&] { b.proclaim("x"); }, rlockpp::errc::invalid));
  /* The observer stopped: nothing more is told. */
  b = rlockpp::election(c2, "cpp:elect");
  moved.stop_observing();
  size_t n_seen;
  {
    std::lock_guard<std::mutex> g(obs.mu);
    n_seen = obs.seen.size();
  }
  moved.proclaim("");
  std::this_thread::sleep_for(200ms);
  {
    std::lock_guard<std::mutex> g(obs.mu);
    RT_CHECK_EQ_INT((int)obs.seen.size(), (int)n_seen);
    /* In token order, the values in the order set. */
    std::vector<std::string> want = {"", "alpha", "alpha2", "beta"};
    std::vector<std::string> got;
    for (auto &p : obs.seen)
      if (got.empty() || got.back() != p.first) got.push_back(p.first);
    RT_CHECK(got == want || (got.size() == 5 && got[3] == "" &&
                             got[4] == "beta")); /* a none between */
  }
  RT_CHECK(a.leader()->value.empty());
  /* RAII: the destructor resigns; nothing is left. */
  {
    rlockpp::election tmp(c1, "cpp:elect-raii");
    RT_REQUIRE(tmp.campaign_for("x", 2s));
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{cpp:elect-raii}"), 1);
  }
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{cpp:elect-raii}"), 0);
  moved = rlockpp::election(); /* resigns */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{cpp:elect}"), 0);
  rlockpp::election bad(c1, "{", ec);
  RT_CHECK(ec == rlockpp::errc::invalid && bad.get() == nullptr);
}

/* The leader's on_risk and on_lost lambdas: the only master stopped past
 * the validity says true, then lost; a force unlock of the fair lock is a
 * loss at the next renewal. About 5 s. */
static void election_risk_lost() {
  rlockpp::client c = open_client(3000), other = open_client();
  rlockpp::election e(c, "cpp:elect-risk");
  std::mutex mu;
  std::vector<int> seen; /* 1 and 0 at risk, 2 lost */
  std::promise<void> lost;
  e.on_risk([&](bool at_risk) {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(at_risk ? 1 : 0);
  });
  e.on_lost([&] {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(2);
    if (std::count(seen.begin(), seen.end(), 2) == 1) lost.set_value();
  });
  RT_REQUIRE(e.campaign_for("r", 2s));
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  bool told = lost.get_future().wait_for(10s) == std::future_status::ready;
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_REQUIRE(told);
  {
    std::lock_guard<std::mutex> g(mu);
    RT_CHECK(seen == std::vector<int>({1, 2}));
  }
  RT_CHECK(!e.is_leader());
  /* Found gone: lost without a risk first. */
  std::promise<void> lost2;
  e.on_lost([&] { lost2.set_value(); });
  RT_REQUIRE(e.campaign_for("r2", 5s));
  rlockpp::fair_mutex f(other, "cpp:elect-risk");
  f.force_unlock();
  RT_CHECK(lost2.get_future().wait_for(10s) == std::future_status::ready);
  RT_CHECK(!e.is_leader());
  {
    std::lock_guard<std::mutex> g(mu);
    RT_CHECK(seen == std::vector<int>({1, 2}));
  }
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"unique_lock_basic", unique_lock_basic},
      {"shared_lock_readers_writer", shared_lock_readers_writer},
      {"scoped_lock_two", scoped_lock_two},
      {"try_lock_for_other_process", try_lock_for_other_process},
      {"exception_releases", exception_releases},
      {"semaphore", semaphore},
      {"latch", latch},
      {"errors", errors},
      {"async_lambda", async_lambda},
      {"lost_lambda", lost_lambda},
      {"risk_lambda", risk_lambda},
      {"election_basics", election_basics},
      {"election_risk_lost", election_risk_lost},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
