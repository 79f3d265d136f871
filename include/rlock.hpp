/*
 * rlock.hpp: C++17 wrappers over rlock.h, header-only.
 *
 * The classes here are thin owners of the C library's handles: every call
 * goes to the C function of the same meaning, and nothing is implemented a
 * second time. They fit the standard library's locking vocabulary, so that
 * std::lock_guard, std::unique_lock, std::shared_lock, std::scoped_lock
 * and std::lock work over distributed locks as they do over std::mutex:
 *
 *   rlockpp::client c({"127.0.0.1:6379"});
 *   rlockpp::mutex m(c, "orders");
 *   {
 *     std::lock_guard<rlockpp::mutex> guard(m);
 *     write_with_token(m.fencing_token());
 *   }
 *
 * What differs from the standard mutexes, because the lock lives on Redis
 * masters and not in this process:
 *
 * - The owner of a lock taken by lock(), try_lock() and their kin is the
 *   calling thread (as for std::mutex), and the locks are reentrant: a
 *   thread that holds a lock may take it again, and must unlock it as many
 *   times. Two handles of one name in one client are the same lock for a
 *   thread; handles of different clients are different owners.
 * - A lock taken here has no fixed lease: the library's watchdog renews it
 *   while it is held. If it cannot (the masters are unreachable for longer
 *   than the lease, or someone deleted the lock), the lock is lost; the
 *   callback given to on_lost() is told, and fencing tokens let a storage
 *   layer refuse the writes of a holder that lost its lock.
 * - Failures that std::mutex cannot have (no quorum of masters, a closed
 *   client, a name the library refuses) are thrown as std::system_error
 *   whose code belongs to rlockpp::category(): its value is the RLOCK_E*
 *   code and its message rlock_strerror's text. Every throwing call has an
 *   overload taking a std::error_code & that reports instead of throwing.
 * - The blocking calls must not be made on the client's loop thread (the
 *   thread that runs async callbacks and lost callbacks): there they fail
 *   with RLOCK_EDEADLK instead of blocking forever.
 * - A client must outlive every handle got from it (mutexes, semaphores,
 *   latches), as a container outlives its iterators: declare the client
 *   first. Handles may be shared by threads; they are movable, not
 *   copyable.
 */
#ifndef RLOCK_HPP
#define RLOCK_HPP

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "rlock.h"

namespace rlockpp {

/*
 * The library's error codes by name, for comparing a std::error_code with
 * (ec == rlockpp::errc::timed_out). Each value is the RLOCK_E* code of
 * rlock.h whose meaning rlock.h describes; lower-case names are used
 * because the E* names are <cerrno>'s macros.
 */
enum class errc : int {
  timed_out = RLOCK_ETIMEDOUT,
  not_owner = RLOCK_ENOTOWNER,
  no_quorum = RLOCK_ENOQUORUM,
  lost = RLOCK_ELOST,
  invalid = RLOCK_EINVAL,
  no_memory = RLOCK_ENOMEM,
  closed = RLOCK_ECLOSED,
  redis = RLOCK_EREDIS,
  deadlock = RLOCK_EDEADLK,
  canceled = RLOCK_ECANCELED,
  limit = RLOCK_ELIMIT,
  not_found = RLOCK_ENOTFOUND,
  conflict = RLOCK_ECONFLICT,
  no_entry = RLOCK_ENOENT,
  forked = RLOCK_EFORKED,
  protocol = RLOCK_EPROTO,
};

}  // namespace rlockpp

namespace std {
/* Lets rlockpp::errc values convert to and compare with
 * std::error_code. */
template <>
struct is_error_code_enum<rlockpp::errc> : true_type {};
}  // namespace std

namespace rlockpp {

namespace detail {

/* The category behind rlockpp::category(). */
class category_impl final : public std::error_category {
 public:
  const char *name() const noexcept override { return "rlock"; }
  std::string message(int code) const override {
    return rlock_strerror(code);
  }
  /* The codes that have a portable meaning map to std::errc, so that a
   * program may test for std::errc::timed_out whatever raised it. */
  std::error_condition default_error_condition(
      int code) const noexcept override {
    switch (code) {
      case RLOCK_ETIMEDOUT:
        return std::errc::timed_out;
      case RLOCK_ENOTOWNER:
        return std::errc::operation_not_permitted;
      case RLOCK_EINVAL:
        return std::errc::invalid_argument;
      case RLOCK_ENOMEM:
        return std::errc::not_enough_memory;
      case RLOCK_EDEADLK:
        return std::errc::resource_deadlock_would_occur;
      case RLOCK_ECANCELED:
        return std::errc::operation_canceled;
      default:
        return std::error_condition(code, *this);
    }
  }
};

}  // namespace detail

/*
 * The error category of every std::error_code and std::system_error that
 * these wrappers produce: name() is "rlock", a code's value is the
 * RLOCK_E* code and message() is rlock_strerror()'s text. One object for
 * the program, so that codes compare equal wherever they were made.
 */
inline const std::error_category &category() noexcept {
  static const detail::category_impl instance;
  return instance;
}

/* Makes a std::error_code of rlockpp::category() from an errc value; it
 * lets errc compare with and convert to std::error_code. */
inline std::error_code make_error_code(errc e) noexcept {
  return std::error_code(static_cast<int>(e), category());
}

/* A std::error_code for a C return code: empty for RLOCK_OK (and for the
 * positive answers of queries), else the code in rlockpp::category(). */
inline std::error_code to_error_code(int rc) noexcept {
  return rc < 0 ? std::error_code(rc, category()) : std::error_code();
}

namespace detail {

/* Throws std::system_error for a negative C return code; what() starts
 * with the name of the call that failed. Returns rc otherwise. */
inline int check(int rc, const char *what) {
  if (rc < 0) throw std::system_error(to_error_code(rc), what);
  return rc;
}

/* A wait for the C API in ms from a duration: 0 for none or a negative
 * one, rounded up to whole ms so that a wait is never shorter than asked,
 * and RLOCK_WAIT_FOREVER for one too long to count in int64_t ms. */
template <class Rep, class Period>
std::int64_t wait_ms(const std::chrono::duration<Rep, Period> &d) {
  if (d <= d.zero()) return 0;
  const std::chrono::duration<long double, std::milli> ms = d;
  if (!(ms.count() < 1e18L)) return RLOCK_WAIT_FOREVER;
  return static_cast<std::int64_t>(std::ceil(ms.count()));
}

/* The wait until a time point of any clock, measured once against that
 * clock's now(). */
template <class Clock, class Dur>
std::int64_t wait_until_ms(const std::chrono::time_point<Clock, Dur> &t) {
  return wait_ms(t - Clock::now());
}

/*
 * A lost callback's C++ side. The C library calls the trampoline with a
 * pointer to the box; the box lives in the client's state until the
 * client closes (after which no callback runs), never in the handle, so
 * a callback that the loop thread began just as its handle was destroyed
 * never reaches freed memory. The function runs under the box's mutex,
 * which a handle's destructor also takes to clear it, so that once the
 * destructor returns the function is not running and will not run.
 */
struct lost_box {
  std::mutex mu;
  std::function<void(std::uint64_t, bool)> fn;
  std::function<void(bool)> risk; /* a lock's at-risk callable, the same way */

  void call(std::uint64_t owner, int is_thread) noexcept {
    std::lock_guard<std::mutex> g(mu);
    if (fn) fn(owner, is_thread != 0);
  }
  void set(std::function<void(std::uint64_t, bool)> f) {
    std::lock_guard<std::mutex> g(mu);
    fn = std::move(f);
  }
  void call_risk(int at_risk) noexcept {
    std::lock_guard<std::mutex> g(mu);
    if (risk) risk(at_risk != 0);
  }
  void set_risk(std::function<void(bool)> f) {
    std::lock_guard<std::mutex> g(mu);
    risk = std::move(f);
  }
};

inline void lost_trampoline(rlock *, std::uint64_t owner, int is_thread,
                            void *arg) noexcept {
  static_cast<lost_box *>(arg)->call(owner, is_thread);
}

inline void risk_trampoline(rlock *, int at_risk, void *arg) noexcept {
  static_cast<lost_box *>(arg)->call_risk(at_risk);
}

inline void sem_risk_trampoline(rlock_sem *, int at_risk, void *arg) noexcept {
  static_cast<lost_box *>(arg)->call_risk(at_risk);
}

inline void sem_lost_trampoline(rlock_sem *, std::uint64_t owner,
                                int is_thread, void *arg) noexcept {
  static_cast<lost_box *>(arg)->call(owner, is_thread);
}

}  // namespace detail

/* A leader as rlock_leader reads it: its value and its fencing token. */
struct leader_info {
  std::string value;
  std::uint64_t token = 0;
};

namespace detail {

/* An election's callbacks, kept as lost_box keeps a lock's: in the
 * client's state, each called under the box's mutex, which the
 * election's destructor takes to clear them. */
struct election_box {
  std::mutex mu;
  std::function<void()> lost;
  std::function<void(bool)> risk;
  std::function<void(const std::optional<leader_info> &)> observer;

  void call_lost() noexcept {
    std::lock_guard<std::mutex> g(mu);
    if (lost) lost();
  }
  void call_risk(int at_risk) noexcept {
    std::lock_guard<std::mutex> g(mu);
    if (risk) risk(at_risk != 0);
  }
  void call_observer(const char *value, std::uint64_t token) noexcept {
    std::lock_guard<std::mutex> g(mu);
    if (!observer) return;
    if (value == nullptr)
      observer(std::nullopt);
    else
      observer(leader_info{value, token});
  }
  void clear() noexcept {
    std::lock_guard<std::mutex> g(mu);
    lost = nullptr;
    risk = nullptr;
    observer = nullptr;
  }
};

inline void election_lost_trampoline(rlock_election *, void *arg) noexcept {
  static_cast<election_box *>(arg)->call_lost();
}

inline void election_risk_trampoline(rlock_election *, int at_risk,
                                     void *arg) noexcept {
  static_cast<election_box *>(arg)->call_risk(at_risk);
}

inline void election_observe_trampoline(rlock_election *, const char *value,
                                        std::uint64_t token,
                                        void *arg) noexcept {
  static_cast<election_box *>(arg)->call_observer(value, token);
}

/* What a client owns besides its rlock_client: the lost callbacks' boxes,
 * freed after rlock_client_close. It is on the heap so that a client can
 * move while handles point at it. */
struct client_state {
  rlock_client *c = nullptr;
  std::mutex mu;
  std::vector<std::unique_ptr<lost_box>> boxes;
  std::vector<std::unique_ptr<election_box>> election_boxes;

  lost_box *new_box() {
    std::lock_guard<std::mutex> g(mu);
    boxes.push_back(std::make_unique<lost_box>());
    return boxes.back().get();
  }
  election_box *new_election_box() {
    std::lock_guard<std::mutex> g(mu);
    election_boxes.push_back(std::make_unique<election_box>());
    return election_boxes.back().get();
  }
  ~client_state() {
    if (c != nullptr) rlock_client_close(c);
  }
};

/*
 * An async callable on the heap. The C library calls the trampoline once,
 * on the loop thread, with the box as its argument; the trampoline takes
 * the box back, calls the callable with the status as a std::error_code
 * and frees it. When the C call itself fails, the callback never runs and
 * the caller frees the box at once. Callables need only be movable.
 * The trampolines are noexcept: an exception escaping a callable on the
 * loop thread ends the program with std::terminate, as one escaping a
 * std::thread's function does, rather than unwinding through C.
 */
template <class F>
struct async_box {
  F fn;
};

template <class F>
void lock_trampoline(rlock *, int status, void *arg) noexcept {
  std::unique_ptr<async_box<F>> b(static_cast<async_box<F> *>(arg));
  b->fn(to_error_code(status));
}

template <class F>
void sem_trampoline(rlock_sem *, int status, void *arg) noexcept {
  std::unique_ptr<async_box<F>> b(static_cast<async_box<F> *>(arg));
  b->fn(to_error_code(status));
}

template <class F>
void latch_trampoline(rlock_latch *, int status, void *arg) noexcept {
  std::unique_ptr<async_box<F>> b(static_cast<async_box<F> *>(arg));
  b->fn(to_error_code(status));
}

template <class F>
void election_trampoline(rlock_election *, int status, void *arg) noexcept {
  std::unique_ptr<async_box<F>> b(static_cast<async_box<F> *>(arg));
  b->fn(to_error_code(status));
}

/* Posts an async call: start(box) is the C call with the trampoline and
 * the box. Throws (or fills ec) and frees the box if the call failed. */
template <class F, class Start>
void post_async(F &&fn, Start start, const char *what, std::error_code *ec) {
  using box_t = async_box<std::decay_t<F>>;
  std::unique_ptr<box_t> b(new box_t{std::forward<F>(fn)});
  int rc = start(b.get());
  if (rc >= 0) {
    b.release(); /* the trampoline frees it */
    if (ec != nullptr) ec->clear();
    return;
  }
  if (ec != nullptr) {
    *ec = to_error_code(rc);
    return;
  }
  check(rc, what);
}

/* Stores rc in ec and answers whether the call succeeded. */
inline bool report(int rc, std::error_code &ec) noexcept {
  ec = to_error_code(rc);
  return rc >= 0;
}

}  // namespace detail

/*
 * A connection to the masters: one rlock_client, with its loop thread.
 * It closes on destruction (rlock_client_close): pending requests fail
 * with RLOCK_ECLOSED, and the locks its handles still hold are released.
 * Movable, not copyable; a moved-from client holds nothing.
 */
class client {
 public:
  /*
   * Opens a client on the given masters (each "host:port" or a URL as
   * rlock_options.masters describes: redis://, rediss://, unix://,
   * redis-cluster://, redis-sentinel://) with the default options.
   * Throws std::system_error if the library refuses them; what() then
   * carries rlock_open_error's explanation, which names the bad entry.
   */
  explicit client(const std::vector<std::string> &masters)
      : client(masters, defaults()) {}

  /* Opens a client on the given masters with other options: masters and
   * nmasters of options are replaced by the list. Throws as above. */
  client(const std::vector<std::string> &masters, rlock_options options) {
    std::vector<const char *> urls;
    urls.reserve(masters.size());
    for (const std::string &m : masters) urls.push_back(m.c_str());
    options.masters = urls.data();
    options.nmasters = urls.size();
    open(options);
  }

  /* Opens a client with options filled by rlock_options_init and then
   * set, masters included. The strings they point to need only live
   * during the call. Throws as above. */
  explicit client(const rlock_options &options) { open(options); }

  /* Moves the connection (handles got from it stay valid); the
   * moved-from client holds nothing and closes nothing. Assigning closes
   * the connection this client held first. */
  client(client &&) noexcept = default;
  client &operator=(client &&) noexcept = default;
  /* Not copyable: one object closes the connection. */
  client(const client &) = delete;
  client &operator=(const client &) = delete;

  /* Closes the client as rlock_client_close does. With a loop of the
   * caller's (rlock_options.loop), destroy it on that loop's thread. */
  ~client() = default;

  /* The C client, for calls these wrappers do not cover; it stays owned
   * by this object. */
  rlock_client *get() const noexcept { return st_ ? st_->c : nullptr; }

  /*
   * Waits until a majority of masters has completed its handshake, at
   * most timeout (rlock_client_wait_ready). Operations do not need it; it
   * tells a program at start whether its masters are usable. Returns
   * true when they are, false at the timeout; throws for other errors
   * (a refused handshake is RLOCK_EREDIS, and last_error() says why).
   */
  template <class Rep, class Period>
  bool wait_ready(const std::chrono::duration<Rep, Period> &timeout) {
    std::error_code ec;
    bool ok = wait_ready(timeout, ec);
    if (!ok && ec != errc::no_quorum)
      throw std::system_error(ec, "rlock_client_wait_ready");
    return ok;
  }
  /* wait_ready that reports every failure, the timeout included
   * (RLOCK_ENOQUORUM), in ec instead of throwing. */
  template <class Rep, class Period>
  bool wait_ready(const std::chrono::duration<Rep, Period> &timeout,
                  std::error_code &ec) noexcept {
    return detail::report(
        rlock_client_wait_ready(get(), detail::wait_ms(timeout)), ec);
  }

  /* The text of the last error reply a master sent, or the reason the
   * last call was refused for its lease or wait (rlock_client_last_error);
   * empty if there is none. Read it right after the call that failed. */
  std::string last_error() const {
    char buf[512];
    size_t n = rlock_client_last_error(get(), buf, sizeof buf);
    return std::string(buf, n < sizeof buf ? n : sizeof buf - 1);
  }

  /* The shared state that handles keep a pointer to; for the wrappers
   * of this header. */
  detail::client_state *state() const noexcept { return st_.get(); }

 private:
  static rlock_options defaults() noexcept {
    rlock_options o;
    rlock_options_init(&o);
    return o;
  }

  void open(const rlock_options &options) {
    st_ = std::make_unique<detail::client_state>();
    int rc = rlock_client_open(&st_->c, &options);
    if (rc < 0) {
      st_->c = nullptr;
      char why[512];
      size_t n = rlock_open_error(why, sizeof why);
      std::string what = "rlock_client_open";
      if (n > 0) what += std::string(": ") + why;
      throw std::system_error(to_error_code(rc), what);
    }
  }

  std::unique_ptr<detail::client_state> st_;
};

namespace detail {

/*
 * The members that every exclusive lock kind shares (mutex, fair_mutex,
 * and the write side of shared_mutex), over one rlock handle. See mutex
 * for what each does.
 */
class lock_handle {
 public:
  using getter = int (*)(rlock_client *, const char *, rlock **);

  /* No handle: every call fails with RLOCK_EINVAL. */
  lock_handle() noexcept = default;

  lock_handle(client &c, const std::string &name, getter open,
              const char *what)
      : st_(c.state()) {
    check(open(c.get(), name.c_str(), &h_), what);
  }
  lock_handle(client &c, const std::string &name, getter open,
              std::error_code &ec) noexcept
      : st_(c.state()) {
    if (!report(open(c.get(), name.c_str(), &h_), ec)) h_ = nullptr;
  }

  lock_handle(lock_handle &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)),
        st_(o.st_),
        box_(std::exchange(o.box_, nullptr)) {}
  lock_handle &operator=(lock_handle &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
      st_ = o.st_;
      box_ = std::exchange(o.box_, nullptr);
    }
    return *this;
  }
  lock_handle(const lock_handle &) = delete;
  lock_handle &operator=(const lock_handle &) = delete;
  ~lock_handle() { reset(); }

  void lock() { check(rlock_lock(h_, RLOCK_WATCHDOG), "rlock_lock"); }
  void lock(std::error_code &ec) noexcept {
    report(rlock_lock(h_, RLOCK_WATCHDOG), ec);
  }

  bool try_lock() { return try_wait(0, "rlock_trylock"); }
  bool try_lock(std::error_code &ec) noexcept { return try_wait(0, ec); }

  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
    return try_wait(wait_ms(d), "rlock_trylock");
  }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d,
                    std::error_code &ec) noexcept {
    return try_wait(wait_ms(d), ec);
  }
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur> &t) {
    return try_wait(wait_until_ms(t), "rlock_trylock");
  }
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur> &t,
                      std::error_code &ec) noexcept {
    return try_wait(wait_until_ms(t), ec);
  }

  void unlock() { unlock_checked(rlock_unlock(h_), "rlock_unlock"); }
  void unlock(std::error_code &ec) noexcept { report(rlock_unlock(h_), ec); }

  std::uint64_t fencing_token() const {
    std::uint64_t t = 0;
    check(rlock_fencing_token(h_, &t), "rlock_fencing_token");
    return t;
  }
  std::uint64_t fencing_token(std::error_code &ec) const noexcept {
    std::uint64_t t = 0;
    report(rlock_fencing_token(h_, &t), ec);
    return t;
  }

  bool held_by_this_thread() const {
    return check(rlock_is_held_by_current_thread(h_),
                 "rlock_is_held_by_current_thread") == 1;
  }
  int hold_count() const {
    return check(rlock_hold_count(h_), "rlock_hold_count");
  }
  bool is_locked() const {
    return check(rlock_is_locked(h_), "rlock_is_locked") == 1;
  }
  void force_unlock() { check(rlock_force_unlock(h_), "rlock_force_unlock"); }
  std::string name() const { return h_ ? rlock_name(h_) : std::string(); }
  rlock *get() const noexcept { return h_; }

  template <class F>
  void on_lost(F &&fn) {
    std::function<void(std::uint64_t, bool)> f(std::forward<F>(fn));
    if (h_ == nullptr) check(RLOCK_EINVAL, "rlock_set_lost_cb");
    if (box_ == nullptr) box_ = st_->new_box();
    box_->set(std::move(f));
    check(rlock_set_lost_cb(h_, lost_trampoline, box_), "rlock_set_lost_cb");
  }

  template <class F>
  void on_risk(F &&fn) {
    std::function<void(bool)> f(std::forward<F>(fn));
    if (h_ == nullptr) check(RLOCK_EINVAL, "rlock_set_risk_cb");
    if (box_ == nullptr) box_ = st_->new_box();
    box_->set_risk(std::move(f));
    check(rlock_set_risk_cb(h_, risk_trampoline, box_), "rlock_set_risk_cb");
  }

  template <class F>
  void lock_async(std::uint64_t owner, F &&done) {
    start_lock_async(owner, RLOCK_WAIT_FOREVER, std::forward<F>(done),
                     nullptr);
  }
  template <class F>
  void lock_async(std::uint64_t owner, F &&done,
                  std::error_code &ec) noexcept {
    start_lock_async(owner, RLOCK_WAIT_FOREVER, std::forward<F>(done), &ec);
  }
  template <class Rep, class Period, class F>
  void try_lock_async_for(std::uint64_t owner,
                          const std::chrono::duration<Rep, Period> &d,
                          F &&done) {
    start_lock_async(owner, wait_ms(d), std::forward<F>(done), nullptr);
  }
  template <class Rep, class Period, class F>
  void try_lock_async_for(std::uint64_t owner,
                          const std::chrono::duration<Rep, Period> &d,
                          F &&done, std::error_code &ec) noexcept {
    start_lock_async(owner, wait_ms(d), std::forward<F>(done), &ec);
  }
  template <class F>
  void unlock_async(std::uint64_t owner, F &&done) {
    start_unlock_async(owner, std::forward<F>(done), nullptr);
  }
  template <class F>
  void unlock_async(std::uint64_t owner, F &&done,
                    std::error_code &ec) noexcept {
    start_unlock_async(owner, std::forward<F>(done), &ec);
  }
  void unlock_async(std::uint64_t owner) {
    check(rlock_unlock_async(h_, owner, nullptr, nullptr),
          "rlock_unlock_async");
  }
  void unlock_async(std::uint64_t owner, std::error_code &ec) noexcept {
    report(rlock_unlock_async(h_, owner, nullptr, nullptr), ec);
  }
  bool cancel_async(std::uint64_t owner) {
    int rc = rlock_cancel_async(h_, owner);
    if (rc == RLOCK_ENOTOWNER) return false;
    check(rc, "rlock_cancel_async");
    return true;
  }
  std::uint64_t owner_fencing_token(std::uint64_t owner) const {
    std::uint64_t t = 0;
    check(rlock_owner_fencing_token(h_, owner, &t),
          "rlock_owner_fencing_token");
    return t;
  }
  int owner_hold_count(std::uint64_t owner) const {
    return check(rlock_owner_hold_count(h_, owner), "rlock_owner_hold_count");
  }

 private:
  bool try_wait(std::int64_t wait, const char *what) {
    int rc = rlock_trylock(h_, wait, RLOCK_WATCHDOG);
    if (rc == RLOCK_ETIMEDOUT) return false;
    check(rc, what);
    return true;
  }
  bool try_wait(std::int64_t wait, std::error_code &ec) noexcept {
    int rc = rlock_trylock(h_, wait, RLOCK_WATCHDOG);
    if (rc == RLOCK_ETIMEDOUT) {
      ec.clear();
      return false;
    }
    return report(rc, ec);
  }

  template <class F>
  void start_unlock_async(std::uint64_t owner, F &&done, std::error_code *ec) {
    rlock *h = h_;
    post_async(
        std::forward<F>(done),
        [h, owner](auto *b) {
          using box_t = std::remove_pointer_t<decltype(b)>;
          return rlock_unlock_async(h, owner,
                                    lock_trampoline<decltype(box_t::fn)>, b);
        },
        "rlock_unlock_async", ec);
  }

  template <class F>
  void start_lock_async(std::uint64_t owner, std::int64_t wait, F &&done,
                        std::error_code *ec) {
    rlock *h = h_;
    post_async(
        std::forward<F>(done),
        [h, owner, wait](auto *b) {
          using box_t = std::remove_pointer_t<decltype(b)>;
          return rlock_lock_async(h, owner, wait, RLOCK_WATCHDOG,
                                  lock_trampoline<decltype(box_t::fn)>, b);
        },
        "rlock_lock_async", ec);
  }

 public:
  /* unlock()'s rule, shared with the semaphore's release(): see
   * mutex::unlock. */
  static void unlock_checked(int rc, const char *what) {
    if (rc >= 0) return;
    if (std::uncaught_exceptions() > 0) return;
    if (rc == RLOCK_ELOST || rc == RLOCK_ENOQUORUM || rc == RLOCK_EREDIS)
      return;
    check(rc, what);
  }

 private:
  void reset() noexcept {
    if (h_ == nullptr) return;
    if (box_ != nullptr) {
      rlock_set_lost_cb(h_, nullptr, nullptr);
      rlock_set_risk_cb(h_, nullptr, nullptr);
      box_->set(nullptr);
      box_->set_risk(nullptr);
    }
    rlock_free(h_);
    h_ = nullptr;
    box_ = nullptr;
  }

  rlock *h_ = nullptr;
  client_state *st_ = nullptr;
  lost_box *box_ = nullptr;
};

}  // namespace detail

/*
 * A distributed reentrant mutex (rlock_get): Lockable and TimedLockable,
 * so std::lock_guard, std::unique_lock, std::scoped_lock and std::lock
 * take it. The owner is the calling thread; the lease is kept by the
 * watchdog while the lock is held.
 *
 * Destroying a mutex frees its handle, not the lock (rlock_free): a lock
 * still held stays held until the owner unlocks it through another handle
 * of the name, the client closes, or its lease runs out.
 */
class mutex : private detail::lock_handle {
 public:
  /* A handle on the lock called name (1 to 512 bytes, no '{', '}' or
   * NUL). It holds no lock. Throws std::system_error (RLOCK_EINVAL for a
   * name the library refuses, RLOCK_ECLOSED for a closed client). */
  mutex(client &c, const std::string &name)
      : lock_handle(c, name, rlock_get, "rlock_get") {}
  /* The same, reporting a failure in ec; the mutex then has no handle
   * (get() is null) and every call on it fails with RLOCK_EINVAL. */
  mutex(client &c, const std::string &name, std::error_code &ec) noexcept
      : lock_handle(c, name, rlock_get, ec) {}

  /*
   * Handles move (with their lost callback; the moved-from mutex has no
   * handle, and calls on it fail with RLOCK_EINVAL) and do not copy.
   * Each member below that throws has an overload with a trailing
   * std::error_code & that sets it instead (and clears it on success);
   * the try_ members then answer false with an empty code when another
   * owner held the lock, and false with the code on a failure.
   */

  /* Blocks until the calling thread holds the lock (or holds it once
   * more). Throws std::system_error if it cannot be had: RLOCK_ENOQUORUM
   * when the masters are unreachable, RLOCK_EDEADLK on the loop thread,
   * RLOCK_ECLOSED when the client closed. */
  using lock_handle::lock;
  /* Takes the lock if it is free (one attempt); false if another owner
   * holds it. Throws for the errors lock() throws for. */
  using lock_handle::try_lock;
  /* Waits at most the duration (rounded up to whole ms) for the lock;
   * false if another owner held it for the whole wait. */
  using lock_handle::try_lock_for;
  /* Waits until the time point of any clock for the lock, as
   * try_lock_for(t - Clock::now()). */
  using lock_handle::try_lock_until;
  /*
   * Releases one hold of the calling thread; the last one frees the lock
   * and wakes a waiter. Throws std::system_error with RLOCK_ENOTOWNER if
   * the thread does not hold it (where std::mutex has undefined
   * behaviour), and for RLOCK_EINVAL, RLOCK_ECLOSED and RLOCK_EFORKED.
   * It does not throw when the lock had been lost (RLOCK_ELOST) or its
   * release could not be confirmed by a majority (RLOCK_ENOQUORUM,
   * RLOCK_EREDIS): the hold has ended either way and there is nothing to
   * retry, and unlock() runs in lock guards' destructors, where a throw
   * ends the program. Those are reported by the std::error_code overload,
   * and a loss also by the on_lost() callback when the watchdog finds it.
   * Nor does it throw while an exception is propagating (it is then
   * running in a guard's destructor during unwinding).
   */
  using lock_handle::unlock;
  /* The fencing token of the calling thread's hold, taken at its first
   * acquisition and larger than every earlier holder's: pass it to the
   * storage that must refuse a holder whose lock ran out. Throws with
   * RLOCK_ENOTOWNER if the thread does not hold the lock. */
  using lock_handle::fencing_token;
  /* Whether the calling thread holds the lock (on a majority). */
  using lock_handle::held_by_this_thread;
  /* The calling thread's reentry count: 0 if it does not hold the lock. */
  using lock_handle::hold_count;
  /* Whether any owner holds the lock on a majority of masters. */
  using lock_handle::is_locked;
  /* Deletes the lock whoever holds it (an operator's action; the holder
   * learns it lost the lock). */
  using lock_handle::force_unlock;
  /* The name the handle was got with. */
  using lock_handle::name;
  /* The C handle, for calls these wrappers do not cover; it stays owned
   * by this object. */
  using lock_handle::get;
  /*
   * Sets the callable run when a hold first acquired through this handle
   * is lost: fn(std::uint64_t owner, bool is_thread), where owner is the
   * async owner or, for a thread, its rlock_thread_id(). It runs on the
   * loop thread, so it must not block on rlock calls; it must not set the
   * callback again or destroy this handle either. Set it before
   * acquiring; a later call replaces it. After the handle is destroyed
   * it is not running and will not run.
   */
  using lock_handle::on_lost;
  /*
   * Sets the callable told when a hold first acquired through this
   * handle is at risk: fn(bool at_risk), true when its renewals missed a
   * majority with less than half its validity left, false when a renewal
   * holds again (rlock_set_risk_cb: once per change; a loss is told by
   * on_lost() alone). Same rules as on_lost(): the loop thread, no
   * blocking rlock calls, not running once the handle is destroyed.
   */
  using lock_handle::on_risk;
  /*
   * Acquires the lock for an async owner (a 64-bit id of the caller's,
   * one per logical task) without blocking: done(std::error_code) runs
   * later, once, on the loop thread, with an empty code when the owner
   * holds the lock. done may be any callable that is movable (a lambda
   * that captures a std::unique_ptr, say); it must not make blocking
   * calls, and an exception escaping it ends the program. Throws (and
   * done never runs) if the request cannot be made. An owner may have
   * one acquisition of a lock in flight at a time.
   */
  using lock_handle::lock_async;
  /* lock_async that gives up after the duration: done then gets
   * errc::timed_out. */
  using lock_handle::try_lock_async_for;
  /* Releases one hold of an async owner; done(std::error_code) runs on
   * the loop thread with the status. Without done, the release is fire
   * and forget. Each of lock_async, try_lock_async_for and unlock_async
   * also takes a std::error_code & last: a request that cannot be made
   * then fills it (and done never runs) instead of throwing; a request
   * made clears it. */
  using lock_handle::unlock_async;
  /* Cancels owner's pending lock_async: its done gets errc::canceled.
   * false if none was pending (it may just have completed). */
  using lock_handle::cancel_async;
  /* The fencing token and the reentry count of an async owner. */
  using lock_handle::owner_fencing_token;
  using lock_handle::owner_hold_count;
};

/*
 * A fair mutex (rlock_get_fair): the members of mutex, with waiters
 * served first come, first served across clients and processes. A fair
 * and a plain handle of one name are the same lock; do not mix them,
 * since a plain acquisition does not queue.
 */
class fair_mutex : private detail::lock_handle {
 public:
  /* A handle on the fair lock called name; throws as mutex's does. */
  fair_mutex(client &c, const std::string &name)
      : lock_handle(c, name, rlock_get_fair, "rlock_get_fair") {}
  /* The same, reporting a failure in ec. */
  fair_mutex(client &c, const std::string &name,
             std::error_code &ec) noexcept
      : lock_handle(c, name, rlock_get_fair, ec) {}

  /* Each as mutex's member of the same name. */
  using lock_handle::cancel_async;
  using lock_handle::fencing_token;
  using lock_handle::force_unlock;
  using lock_handle::get;
  using lock_handle::held_by_this_thread;
  using lock_handle::hold_count;
  using lock_handle::is_locked;
  using lock_handle::lock;
  using lock_handle::lock_async;
  using lock_handle::name;
  using lock_handle::on_lost;
  using lock_handle::on_risk;
  using lock_handle::owner_fencing_token;
  using lock_handle::owner_hold_count;
  using lock_handle::try_lock;
  using lock_handle::try_lock_async_for;
  using lock_handle::try_lock_for;
  using lock_handle::try_lock_until;
  using lock_handle::unlock;
  using lock_handle::unlock_async;
};

/*
 * A read-write lock (rlock_get_write and rlock_get_read of one name):
 * SharedTimedLockable, so std::unique_lock takes the write side and
 * std::shared_lock the read side. Any number of owners may read at once;
 * a writer excludes readers and writers. Both sides are reentrant; the
 * writer may also read, and keeps reading after it stops writing. A
 * reader that asks to write gets RLOCK_EDEADLK at once (thrown) instead
 * of waiting forever. A waiting writer holds new readers back, so
 * writers are not starved.
 */
class shared_mutex {
 public:
  /* Handles on both sides of the read-write lock called name; throws as
   * mutex's constructor does. */
  shared_mutex(client &c, const std::string &name)
      : w_(c, name, rlock_get_write, "rlock_get_write"),
        r_(c, name, rlock_get_read, "rlock_get_read") {}
  /* The same, reporting a failure in ec. */
  shared_mutex(client &c, const std::string &name,
               std::error_code &ec) noexcept
      : w_(c, name, rlock_get_write, ec) {
    if (!ec) r_ = detail::lock_handle(c, name, rlock_get_read, ec);
  }

  /* The write side, each as mutex's member of the same name. */
  void lock() { w_.lock(); }
  void lock(std::error_code &ec) noexcept { w_.lock(ec); }
  bool try_lock() { return w_.try_lock(); }
  bool try_lock(std::error_code &ec) noexcept { return w_.try_lock(ec); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
    return w_.try_lock_for(d);
  }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period> &d,
                    std::error_code &ec) noexcept {
    return w_.try_lock_for(d, ec);
  }
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur> &t) {
    return w_.try_lock_until(t);
  }
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur> &t,
                      std::error_code &ec) noexcept {
    return w_.try_lock_until(t, ec);
  }
  void unlock() { w_.unlock(); }
  void unlock(std::error_code &ec) noexcept { w_.unlock(ec); }
  /* The write hold's fencing token. */
  std::uint64_t fencing_token() const { return w_.fencing_token(); }
  std::uint64_t fencing_token(std::error_code &ec) const noexcept {
    return w_.fencing_token(ec);
  }

  /* The read side, each as the write side's member without _shared. */
  void lock_shared() { r_.lock(); }
  void lock_shared(std::error_code &ec) noexcept { r_.lock(ec); }
  bool try_lock_shared() { return r_.try_lock(); }
  bool try_lock_shared(std::error_code &ec) noexcept {
    return r_.try_lock(ec);
  }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) {
    return r_.try_lock_for(d);
  }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d,
                           std::error_code &ec) noexcept {
    return r_.try_lock_for(d, ec);
  }
  template <class Clock, class Dur>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Dur> &t) {
    return r_.try_lock_until(t);
  }
  template <class Clock, class Dur>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Dur> &t,
                             std::error_code &ec) noexcept {
    return r_.try_lock_until(t, ec);
  }
  void unlock_shared() { r_.unlock(); }
  void unlock_shared(std::error_code &ec) noexcept { r_.unlock(ec); }
  /* The read hold's fencing token: larger than that of every hold of
   * either side that ended before it began (concurrent readers may share
   * one). */
  std::uint64_t fencing_token_shared() const { return r_.fencing_token(); }

  /* Sets one callable (as mutex::on_lost) for holds of both sides. */
  template <class F>
  void on_lost(F &&fn) {
    std::function<void(std::uint64_t, bool)> f(std::forward<F>(fn));
    w_.on_lost(f);
    r_.on_lost(std::move(f));
  }
  /* Sets one callable (as mutex::on_risk) for holds of both sides. */
  template <class F>
  void on_risk(F &&fn) {
    std::function<void(bool)> f(std::forward<F>(fn));
    w_.on_risk(f);
    r_.on_risk(std::move(f));
  }

  /* The C handles of the write side (get) and of the read side
   * (get_shared), owned by this object. */
  rlock *get() const noexcept { return w_.get(); }
  rlock *get_shared() const noexcept { return r_.get(); }
  /* The name the handles were got with. */
  std::string name() const { return w_.name(); }

 private:
  detail::lock_handle w_;
  detail::lock_handle r_;
};

/*
 * A distributed counting semaphore (rlock_sem_get), in the manner of
 * std::counting_semaphore: at most max() permits are held at once across
 * every client of the masters. Unlike std::counting_semaphore, permits
 * have owners: the calling thread holds the permits it acquired (each
 * kept alive by the watchdog), acquisitions add up, and only that thread
 * may release them, so that a holder that crashes gives its permits back
 * when their lease runs out. Every client of one semaphore must use the
 * same limit; another is refused with RLOCK_ECONFLICT.
 */
class counting_semaphore {
 public:
  /* A handle on the semaphore called name with limit (1 to 100000)
   * permits; it holds none. Throws std::system_error (RLOCK_EINVAL for a
   * bad name or limit). */
  counting_semaphore(client &c, const std::string &name, std::ptrdiff_t limit)
      : st_(c.state()), limit_(limit) {
    detail::check(rlock_sem_get(c.get(), name.c_str(),
                                static_cast<std::int64_t>(limit), &h_),
                  "rlock_sem_get");
  }
  /* The same, reporting a failure in ec. */
  counting_semaphore(client &c, const std::string &name, std::ptrdiff_t limit,
                     std::error_code &ec) noexcept
      : st_(c.state()), limit_(limit) {
    if (!detail::report(rlock_sem_get(c.get(), name.c_str(),
                                      static_cast<std::int64_t>(limit), &h_),
                        ec))
      h_ = nullptr;
  }
  /* Moves the handle and its lost callback; the moved-from semaphore has
   * no handle, and calls on it fail with RLOCK_EINVAL. */
  counting_semaphore(counting_semaphore &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)),
        st_(o.st_),
        box_(std::exchange(o.box_, nullptr)),
        limit_(o.limit_) {}
  counting_semaphore &operator=(counting_semaphore &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
      st_ = o.st_;
      box_ = std::exchange(o.box_, nullptr);
      limit_ = o.limit_;
    }
    return *this;
  }
  /* Not copyable: one object frees the handle. */
  counting_semaphore(const counting_semaphore &) = delete;
  counting_semaphore &operator=(const counting_semaphore &) = delete;
  /* Frees the handle, not the permits: those held stay held until
   * released through another handle, the client closes, or their lease
   * runs out. */
  ~counting_semaphore() { reset(); }

  /* Blocks until the calling thread holds one more permit. Throws
   * std::system_error for RLOCK_ENOQUORUM, RLOCK_ECONFLICT and the
   * other failures of rlock_sem_acquire. */
  void acquire() { detail::check(take(RLOCK_WAIT_FOREVER), "rlock_sem_acquire"); }
  void acquire(std::error_code &ec) noexcept {
    detail::report(take(RLOCK_WAIT_FOREVER), ec);
  }
  /* Takes a permit if one is free (one attempt); false if none is. */
  bool try_acquire() { return try_take(0); }
  bool try_acquire(std::error_code &ec) noexcept { return try_take(0, ec); }
  /* Waits at most the duration for a permit; false if none came free. */
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period> &d) {
    return try_take(detail::wait_ms(d));
  }
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period> &d,
                       std::error_code &ec) noexcept {
    return try_take(detail::wait_ms(d), ec);
  }
  /* Waits until the time point for a permit. */
  template <class Clock, class Dur>
  bool try_acquire_until(const std::chrono::time_point<Clock, Dur> &t) {
    return try_take(detail::wait_until_ms(t));
  }
  template <class Clock, class Dur>
  bool try_acquire_until(const std::chrono::time_point<Clock, Dur> &t,
                         std::error_code &ec) noexcept {
    return try_take(detail::wait_until_ms(t), ec);
  }
  /*
   * Gives back update of the calling thread's permits, the most recent
   * first, and wakes waiters. Throws std::system_error with
   * RLOCK_ENOTOWNER, nothing changed, if the thread holds fewer; like
   * mutex::unlock, it does not throw for permits already lost or a
   * release a majority did not confirm (they are given up either way);
   * the std::error_code overload reports those.
   */
  void release(std::ptrdiff_t update = 1) {
    detail::lock_handle::unlock_checked(
        rlock_sem_release(h_, static_cast<std::int64_t>(update)),
        "rlock_sem_release");
  }
  void release(std::ptrdiff_t update, std::error_code &ec) noexcept {
    detail::report(rlock_sem_release(h_, static_cast<std::int64_t>(update)),
                   ec);
  }

  /* The limit the handle was got with. */
  std::ptrdiff_t max() const noexcept { return limit_; }
  /* The permits free now, as a majority of masters sees them. */
  std::int64_t available() const {
    std::int64_t n = 0;
    detail::check(rlock_sem_available(h_, &n), "rlock_sem_available");
    return n;
  }
  /* The permits the calling thread holds (no round trip). */
  std::int64_t held() const {
    std::int64_t n = 0;
    detail::check(rlock_sem_held(h_, &n), "rlock_sem_held");
    return n;
  }
  /* The fencing token of the calling thread's permits, taken at its
   * first acquisition; throws RLOCK_ENOTOWNER if it holds none. */
  std::uint64_t fencing_token() const {
    std::uint64_t t = 0;
    detail::check(rlock_sem_fencing_token(h_, &t), "rlock_sem_fencing_token");
    return t;
  }
  /* Sets the callable run, on the loop thread, when permits held through
   * this handle are lost, as mutex::on_lost. */
  template <class F>
  void on_lost(F &&fn) {
    std::function<void(std::uint64_t, bool)> f(std::forward<F>(fn));
    if (h_ == nullptr) detail::check(RLOCK_EINVAL, "rlock_sem_set_lost_cb");
    if (box_ == nullptr) box_ = st_->new_box();
    box_->set(std::move(f));
    rlock_sem_set_lost_cb(h_, detail::sem_lost_trampoline, box_);
  }
  /* Sets the callable told, on the loop thread, when permits held
   * through this handle are at risk (true) or no longer (false), as
   * mutex::on_risk. */
  template <class F>
  void on_risk(F &&fn) {
    std::function<void(bool)> f(std::forward<F>(fn));
    if (h_ == nullptr) detail::check(RLOCK_EINVAL, "rlock_sem_set_risk_cb");
    if (box_ == nullptr) box_ = st_->new_box();
    box_->set_risk(std::move(f));
    rlock_sem_set_risk_cb(h_, detail::sem_risk_trampoline, box_);
  }
  /* Acquires one permit for an async owner without blocking;
   * done(std::error_code) runs once on the loop thread, as for
   * mutex::lock_async. */
  template <class F>
  void acquire_async(std::uint64_t owner, F &&done) {
    rlock_sem *h = h_;
    detail::post_async(
        std::forward<F>(done),
        [h, owner](auto *b) {
          using box_t = std::remove_pointer_t<decltype(b)>;
          return rlock_sem_acquire_async(
              h, owner, 1, RLOCK_WAIT_FOREVER, RLOCK_WATCHDOG,
              detail::sem_trampoline<decltype(box_t::fn)>, b);
        },
        "rlock_sem_acquire_async", nullptr);
  }
  /* Gives back one permit of an async owner; done(std::error_code) runs
   * on the loop thread with the status. */
  template <class F>
  void release_async(std::uint64_t owner, F &&done) {
    rlock_sem *h = h_;
    detail::post_async(
        std::forward<F>(done),
        [h, owner](auto *b) {
          using box_t = std::remove_pointer_t<decltype(b)>;
          return rlock_sem_release_async(
              h, owner, 1, detail::sem_trampoline<decltype(box_t::fn)>, b);
        },
        "rlock_sem_release_async", nullptr);
  }
  /* The name the handle was got with. */
  std::string name() const { return h_ ? rlock_sem_name(h_) : std::string(); }
  /* The C handle, owned by this object. */
  rlock_sem *get() const noexcept { return h_; }

 private:
  int take(std::int64_t wait) noexcept {
    return rlock_sem_acquire(h_, 1, wait, RLOCK_WATCHDOG);
  }
  bool try_take(std::int64_t wait) {
    int rc = take(wait);
    if (rc == RLOCK_ETIMEDOUT) return false;
    detail::check(rc, "rlock_sem_acquire");
    return true;
  }
  bool try_take(std::int64_t wait, std::error_code &ec) noexcept {
    int rc = take(wait);
    if (rc == RLOCK_ETIMEDOUT) {
      ec.clear();
      return false;
    }
    return detail::report(rc, ec);
  }
  void reset() noexcept {
    if (h_ == nullptr) return;
    if (box_ != nullptr) {
      rlock_sem_set_lost_cb(h_, nullptr, nullptr);
      rlock_sem_set_risk_cb(h_, nullptr, nullptr);
      box_->set(nullptr);
      box_->set_risk(nullptr);
    }
    rlock_sem_free(h_);
    h_ = nullptr;
    box_ = nullptr;
  }

  rlock_sem *h_ = nullptr;
  detail::client_state *st_ = nullptr;
  detail::lost_box *box_ = nullptr;
  std::ptrdiff_t limit_ = 0;
};

/*
 * A distributed count-down latch (rlock_latch_get), in the manner of
 * std::latch: set once to a count, counted down by anyone (any thread or
 * process, one at a time), awaited by many, which return when it reaches
 * zero. Unlike std::latch it is set apart from its construction, since
 * many processes get a handle and one of them sets it, and a latch that
 * opened may be set again for a new round.
 */
class latch {
 public:
  /* A handle on the latch called name (as a lock name). Throws
   * std::system_error (RLOCK_EINVAL for a bad name). */
  latch(client &c, const std::string &name) {
    detail::check(rlock_latch_get(c.get(), name.c_str(), &h_),
                  "rlock_latch_get");
  }
  /* The same, reporting a failure in ec. */
  latch(client &c, const std::string &name, std::error_code &ec) noexcept {
    if (!detail::report(rlock_latch_get(c.get(), name.c_str(), &h_), ec))
      h_ = nullptr;
  }
  /* Moves the handle; the moved-from latch has no handle, and calls on
   * it fail with RLOCK_EINVAL. */
  latch(latch &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  latch &operator=(latch &&o) noexcept {
    if (this != &o) {
      if (h_ != nullptr) rlock_latch_free(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  /* Not copyable: one object frees the handle. */
  latch(const latch &) = delete;
  latch &operator=(const latch &) = delete;
  /* Frees the handle; the latch itself stays for the others. */
  ~latch() {
    if (h_ != nullptr) rlock_latch_free(h_);
  }

  /* Sets the latch to count (>= 1) unless it is counting: true when it
   * was set (a new round begins), false when it was already counting and
   * nothing changed. */
  bool set(std::int64_t count) {
    return detail::check(rlock_latch_set(h_, count), "rlock_latch_set") == 1;
  }
  /* Counts down by one. Throws std::system_error with RLOCK_ENOENT if the
   * latch is not set, RLOCK_ENOQUORUM if no majority counted it. */
  void count_down() {
    detail::check(rlock_latch_count_down(h_), "rlock_latch_count_down");
  }
  void count_down(std::error_code &ec) noexcept {
    detail::report(rlock_latch_count_down(h_), ec);
  }
  /* The count as a majority sees it: 0 when open or not set. */
  std::int64_t count() const {
    std::int64_t n = 0;
    detail::check(rlock_latch_count(h_, &n), "rlock_latch_count");
    return n;
  }
  /* Whether the latch is open now (one look at the masters). */
  bool try_wait() const { return await(0, "rlock_latch_await"); }
  /* Blocks until the latch opens. Throws std::system_error with
   * RLOCK_ELOST if it went away without opening (deleted, or expired
   * unused). */
  void wait() const { await(RLOCK_WAIT_FOREVER, "rlock_latch_await"); }
  void wait(std::error_code &ec) const noexcept {
    detail::report(rlock_latch_await(h_, RLOCK_WAIT_FOREVER), ec);
  }
  /* Waits at most the duration for the latch to open; false if it did
   * not. A latch not set yet is waited for, since it may be set later. */
  template <class Rep, class Period>
  bool wait_for(const std::chrono::duration<Rep, Period> &d) const {
    return await(detail::wait_ms(d), "rlock_latch_await");
  }
  /* Waits until the time point for the latch to open. */
  template <class Clock, class Dur>
  bool wait_until(const std::chrono::time_point<Clock, Dur> &t) const {
    return await(detail::wait_until_ms(t), "rlock_latch_await");
  }
  /* Counts down by one, then waits for the latch to open. */
  void arrive_and_wait() {
    count_down();
    wait();
  }
  /* Deletes the latch (an operator's reset): awaiters get RLOCK_ELOST. */
  void remove() { detail::check(rlock_latch_delete(h_), "rlock_latch_delete"); }
  /* Waits for the latch to open without blocking: done(std::error_code)
   * runs once on the loop thread (an empty code when it opened), as for
   * mutex::lock_async; owner names the wait for cancel_async. */
  template <class F>
  void wait_async(std::uint64_t owner, F &&done) {
    rlock_latch *h = h_;
    detail::post_async(
        std::forward<F>(done),
        [h, owner](auto *b) {
          using box_t = std::remove_pointer_t<decltype(b)>;
          return rlock_latch_await_async(
              h, owner, RLOCK_WAIT_FOREVER,
              detail::latch_trampoline<decltype(box_t::fn)>, b);
        },
        "rlock_latch_await_async", nullptr);
  }
  /* Cancels owner's pending wait_async (its done gets errc::canceled);
   * false if none was pending. */
  bool cancel_async(std::uint64_t owner) {
    int rc = rlock_latch_cancel_async(h_, owner);
    if (rc == RLOCK_ENOTOWNER) return false;
    detail::check(rc, "rlock_latch_cancel_async");
    return true;
  }
  /* The name the handle was got with. */
  std::string name() const {
    return h_ ? rlock_latch_name(h_) : std::string();
  }
  /* The C handle, owned by this object. */
  rlock_latch *get() const noexcept { return h_; }

 private:
  bool await(std::int64_t wait, const char *what) const {
    int rc = rlock_latch_await(h_, wait);
    if (rc == RLOCK_ETIMEDOUT) return false;
    detail::check(rc, what);
    return true;
  }

  rlock_latch *h_ = nullptr;
};

/*
 * A leader election (rlock_election_get; rlock.h, "Elections"): a handle
 * campaigns, leads, proclaims a value, resigns, and observes who leads.
 * Leadership is a watchdog hold of the fair lock of the election's name:
 * it lasts until resign(), the election's destruction, the client's
 * close, or its loss (on_lost() is told). Each leadership has a fencing
 * token larger than every earlier leader's.
 *
 *   rlockpp::election e(c, "scheduler");
 *   e.on_lost([&] { stop_jobs(); });
 *   if (e.campaign_for("host-a", 10s)) { run_jobs(e.token()); e.resign(); }
 *
 * The leader is the handle, not a thread: any thread may proclaim or
 * resign. Destroying the election frees its handle (rlock_election_free):
 * a leadership it holds is resigned, a campaign cancelled, the observer
 * stopped, and none of its callables runs after the destructor returns.
 * The callables given to on_lost, on_risk and observe run on the
 * client's loop thread under a mutex of their own, which the destructor
 * also takes: they must not destroy the election or replace its
 * callables. Movable, not copyable.
 */
class election {
 public:
  /* No handle: every call fails with RLOCK_EINVAL. */
  election() noexcept = default;

  /* A handle on the election called name (as a lock name). Throws
   * std::system_error (RLOCK_EINVAL for a bad name or a Cluster master). */
  election(client &c, const std::string &name) : st_(c.state()) {
    detail::check(rlock_election_get(c.get(), name.c_str(), &h_),
                  "rlock_election_get");
  }
  /* The same, reporting a failure in ec. */
  election(client &c, const std::string &name, std::error_code &ec) noexcept
      : st_(c.state()) {
    if (!detail::report(rlock_election_get(c.get(), name.c_str(), &h_), ec))
      h_ = nullptr;
  }

  /* Moves the handle with its leadership and callables; the moved-from
   * election has no handle. */
  election(election &&o) noexcept
      : h_(std::exchange(o.h_, nullptr)),
        st_(o.st_),
        box_(std::exchange(o.box_, nullptr)) {}
  election &operator=(election &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
      st_ = o.st_;
      box_ = std::exchange(o.box_, nullptr);
    }
    return *this;
  }
  election(const election &) = delete;
  election &operator=(const election &) = delete;
  ~election() { reset(); }

  /* Campaigns until this handle leads (rlock_campaign, waiting as long as
   * it takes). value is what the observers see (at most 4096 bytes).
   * Throws std::system_error: RLOCK_EINVAL when the handle already
   * campaigns or leads, RLOCK_ECANCELED after cancel(), and the rest as
   * rlock_campaign returns them. */
  void campaign(const std::string &value) {
    detail::check(rlock_campaign(h_, value.c_str(), RLOCK_WAIT_FOREVER),
                  "rlock_campaign");
  }
  void campaign(const std::string &value, std::error_code &ec) noexcept {
    detail::report(rlock_campaign(h_, value.c_str(), RLOCK_WAIT_FOREVER), ec);
  }
  /* Campaigns for at most the duration (zero: one attempt): true when
   * this handle leads, false when the time ran out; throws otherwise. */
  template <class Rep, class Period>
  bool campaign_for(const std::string &value,
                    const std::chrono::duration<Rep, Period> &d) {
    return run_campaign(value, detail::wait_ms(d), nullptr);
  }
  template <class Rep, class Period>
  bool campaign_for(const std::string &value,
                    const std::chrono::duration<Rep, Period> &d,
                    std::error_code &ec) noexcept {
    return run_campaign(value, detail::wait_ms(d), &ec);
  }
  /* Campaigns until the time point; as campaign_for. */
  template <class Clock, class Dur>
  bool campaign_until(const std::string &value,
                      const std::chrono::time_point<Clock, Dur> &t) {
    return run_campaign(value, detail::wait_until_ms(t), nullptr);
  }

  /* Campaigns without blocking (rlock_campaign_async, waiting as long as
   * it takes): done(std::error_code) runs once on the loop thread, empty
   * when this handle leads. owner is the leadership's async owner, below
   * 2^63. Throws if the campaign could not start (done then never runs). */
  template <class F>
  void campaign_async(const std::string &value, std::uint64_t owner,
                      F &&done) {
    start_campaign_async(value, owner, RLOCK_WAIT_FOREVER,
                         std::forward<F>(done));
  }
  /* The same, giving up after the duration (done gets errc::timed_out). */
  template <class Rep, class Period, class F>
  void campaign_async_for(const std::string &value, std::uint64_t owner,
                          const std::chrono::duration<Rep, Period> &d,
                          F &&done) {
    start_campaign_async(value, owner, detail::wait_ms(d),
                         std::forward<F>(done));
  }

  /* Ends the handle's campaign (rlock_campaign_cancel): it completes with
   * errc::canceled. false if the handle was not campaigning. */
  bool cancel() {
    int rc = rlock_campaign_cancel(h_);
    if (rc == RLOCK_ENOTOWNER) return false;
    detail::check(rc, "rlock_campaign_cancel");
    return true;
  }

  /* The leader only: sets a new value and tells the observers. Throws
   * RLOCK_ENOTOWNER when the handle does not lead, RLOCK_ELOST when the
   * masters say it no longer does, RLOCK_ENOQUORUM. */
  void proclaim(const std::string &value) {
    detail::check(rlock_proclaim(h_, value.c_str()), "rlock_proclaim");
  }
  void proclaim(const std::string &value, std::error_code &ec) noexcept {
    detail::report(rlock_proclaim(h_, value.c_str()), ec);
  }

  /* The leader only: gives the leadership up, which wakes the campaigner
   * that has waited longest. The leadership ends whatever the masters
   * answer; throws RLOCK_ENOTOWNER when the handle does not lead, and
   * reports the masters' failures in the overload with ec. */
  void resign() {
    int rc = rlock_resign(h_);
    if (rc == RLOCK_ENOTOWNER || rc == RLOCK_EINVAL || rc == RLOCK_EDEADLK)
      detail::check(rc, "rlock_resign");
  }
  void resign(std::error_code &ec) noexcept {
    detail::report(rlock_resign(h_), ec);
  }

  /* Whether this handle leads now (no round trip). */
  bool is_leader() const noexcept {
    std::uint64_t t = 0;
    return h_ != nullptr && rlock_election_token(h_, &t) == 0;
  }
  /* This handle's leadership token; throws RLOCK_ENOTOWNER if it does not
   * lead. */
  std::uint64_t token() const {
    std::uint64_t t = 0;
    detail::check(rlock_election_token(h_, &t), "rlock_election_token");
    return t;
  }

  /* The current leader as a majority of masters stores it, or
   * std::nullopt when there is none (rlock_leader's RLOCK_ENOENT).
   * Throws RLOCK_ENOQUORUM when neither can be told (a change under way,
   * too few masters). */
  std::optional<leader_info> leader() const {
    std::error_code ec;
    std::optional<leader_info> l = leader(ec);
    if (ec) throw std::system_error(ec, "rlock_leader");
    return l;
  }
  std::optional<leader_info> leader(std::error_code &ec) const {
    std::string buf(4097, '\0'); /* the longest value and its NUL */
    std::uint64_t token = 0;
    int rc = rlock_leader(h_, &buf[0], buf.size(), &token);
    if (rc == RLOCK_ENOENT) {
      ec.clear();
      return std::nullopt;
    }
    if (!detail::report(rc, ec)) return std::nullopt;
    buf.resize(std::char_traits<char>::length(buf.c_str()));
    return leader_info{std::move(buf), token};
  }

  /* Observes the election (rlock_observe): fn(const
   * std::optional<leader_info> &) runs on the loop thread once with the
   * current leader (std::nullopt for none), then at every change of
   * leader or value, in token order. A new callable replaces the old
   * one; none of the replaced one runs after this returns. */
  template <class F>
  void observe(F &&fn) {
    std::function<void(const std::optional<leader_info> &)> f(
        std::forward<F>(fn));
    if (h_ == nullptr) detail::check(RLOCK_EINVAL, "rlock_observe");
    /* Stopped first: the box's callable is not replaced while it runs. */
    detail::check(rlock_observe(h_, nullptr, nullptr), "rlock_observe");
    election_box *b = box();
    {
      std::lock_guard<std::mutex> g(b->mu);
      b->observer = std::move(f);
    }
    detail::check(rlock_observe(h_, detail::election_observe_trampoline, b),
                  "rlock_observe");
  }
  /* Stops observing; no call of the observer runs after this returns. */
  void stop_observing() {
    detail::check(rlock_observe(h_, nullptr, nullptr), "rlock_observe");
    if (box_ != nullptr) {
      std::lock_guard<std::mutex> g(box_->mu);
      box_->observer = nullptr;
    }
  }

  /* fn() on the loop thread when the leadership is found lost (its
   * renewals failed, or it is gone from the masters); the handle then no
   * longer leads. */
  template <class F>
  void on_lost(F &&fn) {
    std::function<void()> f(std::forward<F>(fn));
    if (h_ == nullptr) detail::check(RLOCK_EINVAL, "rlock_election_set_lost_cb");
    election_box *b = box();
    {
      std::lock_guard<std::mutex> g(b->mu);
      b->lost = std::move(f);
    }
    detail::check(rlock_election_set_lost_cb(
                      h_, detail::election_lost_trampoline, b),
                  "rlock_election_set_lost_cb");
  }
  /* fn(true) on the loop thread when the leadership's renewals missed a
   * majority with less than half its validity left, fn(false) when one
   * holds again; a loss is told by on_lost alone. */
  template <class F>
  void on_risk(F &&fn) {
    std::function<void(bool)> f(std::forward<F>(fn));
    if (h_ == nullptr) detail::check(RLOCK_EINVAL, "rlock_election_set_risk_cb");
    election_box *b = box();
    {
      std::lock_guard<std::mutex> g(b->mu);
      b->risk = std::move(f);
    }
    detail::check(rlock_election_set_risk_cb(
                      h_, detail::election_risk_trampoline, b),
                  "rlock_election_set_risk_cb");
  }

  /* The name the handle was got with. */
  std::string name() const {
    return h_ ? rlock_election_name(h_) : std::string();
  }
  /* The C handle, owned by this object. */
  rlock_election *get() const noexcept { return h_; }

 private:
  using election_box = detail::election_box;

  election_box *box() {
    if (box_ == nullptr) box_ = st_->new_election_box();
    return box_;
  }

  bool run_campaign(const std::string &value, std::int64_t wait,
                    std::error_code *ec) {
    int rc = rlock_campaign(h_, value.c_str(), wait);
    if (rc == RLOCK_ETIMEDOUT) {
      if (ec != nullptr) ec->clear();
      return false;
    }
    if (ec != nullptr) return detail::report(rc, *ec);
    detail::check(rc, "rlock_campaign");
    return true;
  }

  template <class F>
  void start_campaign_async(const std::string &value, std::uint64_t owner,
                            std::int64_t wait, F &&done) {
    rlock_election *h = h_;
    const char *v = value.c_str(); /* copied by the call */
    detail::post_async(
        std::forward<F>(done),
        [h, v, owner, wait](auto *b) {
          using box_t = std::remove_pointer_t<decltype(b)>;
          return rlock_campaign_async(
              h, v, owner, wait,
              detail::election_trampoline<decltype(box_t::fn)>, b);
        },
        "rlock_campaign_async", nullptr);
  }

  /* Frees the handle: rlock_election_free clears the C callbacks and
   * passes a barrier on the loop (off the loop thread); the box is then
   * cleared under its mutex, so that a call already begun has ended. */
  void reset() noexcept {
    if (h_ == nullptr) return;
    rlock_election_free(h_);
    if (box_ != nullptr) box_->clear();
    h_ = nullptr;
    box_ = nullptr;
  }

  rlock_election *h_ = nullptr;
  detail::client_state *st_ = nullptr;
  detail::election_box *box_ = nullptr;
};

}  // namespace rlockpp

#endif /* RLOCK_HPP */
