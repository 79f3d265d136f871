/*
 * Client lifecycle and the bridge between application threads and the
 * loop.
 *
 * Application threads never touch a hiredis context or a libuv handle:
 * they put a request on the client's queue and wake the loop with
 * uv_async_send, which may coalesce many sends into one callback, so the
 * callback drains the whole queue. The send happens under the queue mutex,
 * so that a close, which takes the same mutex to refuse new requests,
 * cannot close the async handle between a request's check and its send.
 *
 * The fast path: a lone blocking call that crossed to the loop thread and
 * back would pay two thread wake-ups on top of the round trip. So, with
 * the client's own loop thread, that thread runs the loop under
 * the loop lock (c->loopmu): it holds it while libuv runs callbacks and
 * lets go only while it sleeps in poll(2) on the loop's backend fd
 * (run_locked), then runs the loop once more without blocking. A
 * blocking caller that finds the lock free (trylock; never waits for it)
 * and every master a single connection that is ready, starts its
 * request itself (a plain acquire or unlock: lib/lock/fast.c decides),
 * exactly as on_async would, and writes its commands at once; the reply
 * still arrives on the loop thread, which finishes the request. Why that
 * is safe:
 *  - Every field "loop thread only" in client.h, every connection and
 *    stream, the lock layer's tables and the loop's own libuv state are
 *    touched only with loopmu held: by the loop thread between polls, by
 *    a caller inside the fast path. Lock order: loopmu, then qmu
 *    (or a waiter's mutex, readymu); nobody takes loopmu holding another.
 *  - While the loop thread sleeps, poll(2) reads no user memory. What a
 *    caller changed that the sleeping loop must see is handed over before
 *    the lock is let go or soon after: a new or changed I/O watcher, a
 *    started prepare or idle handle or a pending callback wake the loop at
 *    once (rl_client_wake); a timer earlier than the one the loop sleeps
 *    for wakes it if the caller's wait outlasts its spin (api.c). The loop
 *    never sleeps longer than one command timeout (run_locked), so a
 *    command deadline armed on a caller, a command timeout from then, is
 *    never earlier than its wake-up and needs no wake. Any reply wakes the
 *    loop anyway, and every loop turn recomputes its timeout.
 *  - User code never runs on the caller: the path is taken only when every
 *    master's connection is ready, so no send fails and no round decides
 *    inside the start; a send that fails off the loop does not fail the
 *    stream there but leaves it to the loop (stream.c); a request that
 *    finishes at once (not the owner) only signals its own caller. A
 *    blocking call from inside the start gets RLOCK_EDEADLK as on the loop.
 *  - The caller checks closed (qmu) and shut_down under loopmu, so a
 *    close, whose shutdown runs on the loop under loopmu, sees the request
 *    in c->active and fails it as any other.
 *
 * A caller may also read the replies of what it started, and wait for
 * its lock's unlock message, on its own thread under the loop lock, and
 * finish the request there (its own round and its own wait):
 * lib/lock/fast.c, which decides what a caller may start itself, says
 * when and why that is safe; the core gives it the loop lock
 * (rl_client_fast_enter, rl_client_fast_leave) and the loop's timeout.
 * With a caller's loop there is no loop lock: every request is posted.
 *
 * Memory: the client is reference counted by its opener, by every lock
 * handle, and by its libuv handles while they are open, so that a handle
 * freed after close, or a close callback that runs late on a caller's
 * loop, never touches freed memory.
 */
#include "client.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "stream.h"
#include "util.h"
#include "wait.h"

static void client_free(rl_client *c) {
  rl_log_flush(c, 0);
  c->hooks->quarantine_free(c);
  rl_holds_free(&c->holds);
  rl_holds_free(&c->pending);
  for (int i = 0; c->masters != NULL && i < c->nmasters; i++)
    if (c->masters[i] != NULL) rl_master_free(c->masters[i]);
  free(c->masters);
  free(c->prefix);
  free(c->tls_server_name);
  rl_tls_ctx_free(c->tls);
  uv_mutex_destroy(&c->qmu);
  uv_mutex_destroy(&c->loopmu);
  uv_mutex_destroy(&c->errmu);
  uv_mutex_destroy(&c->readymu);
  uv_cond_destroy(&c->readycond);
  free(c);
}

void rl_client_unref(rl_client *c) {
  if (atomic_fetch_sub(&c->refs, 1) == 1) client_free(c);
}

void rl_lock_ref(rlock *lock) { atomic_fetch_add(&lock->refs, 1); }

void rl_lock_unref(rlock *lock) {
  if (atomic_fetch_sub(&lock->refs, 1) != 1) return;
  rl_client *c = lock->client;
  free(lock->lost);
  free(lock);
  rl_client_unref(c);
}

int rl_client_on_loop(rl_client *c) {
  if (rl_client_in_fast_start()) return 1;
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &c->loop_thread);
}

int rl_client_post(rl_client *c, rl_req *req) {
  if (rl_client_forked(c)) return RLOCK_EFORKED;
  uv_mutex_lock(&c->qmu);
  if (c->closed) {
    uv_mutex_unlock(&c->qmu);
    return RLOCK_ECLOSED;
  }
  rl_list_push_back(&c->queue, &req->node);
  uv_async_send(&c->async);
  uv_mutex_unlock(&c->qmu);
  return 0;
}

static void note(rl_client *c, const char *text, size_t len, int call) {
  if (rl_client_forked(c)) return; /* errmu may be held for ever there */
  uv_mutex_lock(&c->errmu);
  if (len >= sizeof c->last_error) len = sizeof c->last_error - 1;
  memcpy(c->last_error, text, len);
  c->last_error[len] = '\0';
  atomic_store_explicit(&c->call_error, call, memory_order_relaxed);
  uv_mutex_unlock(&c->errmu);
}

void rl_client_note_error(rl_client *c, const char *text, size_t len) {
  note(c, text, len, 1);
}

void rl_client_note_master_error(rl_client *c, const char *text,
                                 size_t len) {
  note(c, text, len, 0);
}

/* A call succeeded: an earlier call's reason no longer describes the
 * client (a master's refusal of its connection still may). */
static void clear_call_error(rl_client *c) {
  if (!atomic_load_explicit(&c->call_error, memory_order_relaxed)) return;
  uv_mutex_lock(&c->errmu);
  if (atomic_load_explicit(&c->call_error, memory_order_relaxed)) {
    c->last_error[0] = '\0';
    atomic_store_explicit(&c->call_error, 0, memory_order_relaxed);
  }
  uv_mutex_unlock(&c->errmu);
}

size_t rlock_client_last_error(rlock_client *c, char *buf, size_t size) {
  if (c == NULL) return 0;
  if (rl_client_forked(c)) {
    char text[200];
    int n = snprintf(text, sizeof text,
                     "this client was opened by process %d and inherited "
                     "across fork(): open a client of this process's own",
                     c->opener_pid);
    if (buf != NULL && size > 0) snprintf(buf, size, "%s", text);
    return (size_t)n;
  }
  uv_mutex_lock(&c->errmu);
  size_t len = strlen(c->last_error);
  if (buf != NULL && size > 0) {
    size_t n = len < size - 1 ? len : size - 1;
    memcpy(buf, c->last_error, n);
    buf[n] = '\0';
  }
  uv_mutex_unlock(&c->errmu);
  return len;
}

void rl_client_wake(rl_client *c) {
  uv_mutex_lock(&c->qmu);
  if (!c->closed) uv_async_send(&c->async);
  uv_mutex_unlock(&c->qmu);
}

/* libuv 1.44 keeps its queues as two pointers; empty points to itself. */
static int queue_busy(void *const *q) { return q[0] != (const void *)q; }

/* 1 when the loop must turn again before it may sleep: watchers to give
 * to epoll, prepare handles to run (a connection's flush). loopmu. */
static int loop_needs_turn(const uv_loop_t *l) {
  return queue_busy(l->watcher_queue) || queue_busy(l->prepare_handles);
}

/*
 * The loop's poll timeout as uv_backend_timeout gives it, except that
 * handles being closed do not make it 0. A caller under the loop lock
 * closes only timers whose close callbacks free them (a waiter's, a
 * sleep's: connections that fail there are closed by the loop, stream.c),
 * which the loop does at its next turn, within one command timeout
 * (run_locked); counting them, every own wait would end in a wake of the
 * loop thread for nothing, on the CPU the next hand-off needs, and a call
 * right after one would not get an own round. loopmu.
 */
static int loop_timeout(uv_loop_t *l) {
  uv_handle_t *closing = l->closing_handles;
  l->closing_handles = NULL;
  int timeout = uv_backend_timeout(l);
  l->closing_handles = closing;
  return timeout;
}

/* Every master is one plain connection that is ready: then a send cannot
 * fail at once. loopmu. */
static int masters_ready(const rl_client *c) {
  for (int i = 0; i < c->nmasters; i++)
    if (c->masters[i]->kind != RL_MASTER_SINGLE ||
        !rl_master_ready(c->masters[i]))
      return 0;
  return 1;
}

int rl_client_loop_timeout(rl_client *c) { return loop_timeout(c->loop); }

int rl_client_fast_enter(rl_client *c) {
  if (uv_mutex_trylock(&c->loopmu) != 0) return 0;
  uv_mutex_lock(&c->qmu);
  int closed = c->closed;
  uv_mutex_unlock(&c->qmu);
  if (closed || c->shut_down || !masters_ready(c)) {
    uv_mutex_unlock(&c->loopmu);
    return 0;
  }
  /* The loop's clock stopped when it went to sleep: deadlines and timers
   * count from now. */
  uv_update_time(c->loop);
  rl_stream_off_loop = 1;
  atomic_fetch_add_explicit(&c->fast_starts, 1, memory_order_relaxed);
  return 1;
}

int rl_client_fast_leave(rl_client *c, rl_req *req, int own) {
  rl_stream_off_loop = 0;
  int timeout = loop_timeout(c->loop);
  int now = timeout == 0 || loop_needs_turn(c->loop) ||
            !rl_list_empty(&c->done) || !rl_list_empty(&c->logs);
  int timers = timeout > 0 && uv_now(c->loop) + (uint64_t)timeout <
                                  c->poll_until;
  if (own && !atomic_load_explicit(&req->finished, memory_order_relaxed))
    now = 1; /* the loop takes over: what the caller left, it must see */
  uv_mutex_unlock(&c->loopmu);
  /* After its own round the caller wakes the loop for an earlier timer
   * at once: it may have taken the reply that would have woken it. */
  if (now || (own && timers)) rl_client_wake(c);
  return RL_FAST_STARTED | (own ? RL_FAST_OWN : 0) |
         (timers && !now && !own ? RL_FAST_TIMERS : 0);
}

/*
 * Wakes the blocking callers whose requests finished in the loop turn
 * just ended. Signalled one by one as each reply was handed over, a
 * caller woken on the loop's CPU would run at once, ahead of the replies
 * and posted requests still to be served in that turn; woken together
 * after it, they post their next calls to a loop that has caught up, and
 * those go out together. Measured on the 2-core VM of README's figures,
 * 4 interleaved rounds each of bench_throughput 2 1 16,64 - (N = 1):
 * 64 threads 24,899-26,502 pairs/s signalled at once against
 * 27,498-38,044 at the turn's end; 16 threads 21,070-24,364 against
 * 23,556-25,425. A turn does not block (uv_run with UV_RUN_NOWAIT), so
 * a caller is woken at most one turn late: after that turn's other
 * callbacks, an application's async callbacks among them, which the loop
 * thread runs before it wakes anyone. loopmu.
 */
static void wake_callers(rl_client *c) {
  for (int i = 0; i < c->nwakes; i++) uv_cond_signal(&c->wakes[i]->cond);
  c->nwakes = 0;
}

/* The own loop thread's loop: uv_run's, with the loop lock let go only
 * while it sleeps (see the top of this file). */
static void run_locked(rl_client *c) {
  uv_loop_t *l = c->loop;
  struct pollfd p = {.fd = uv_backend_fd(l), .events = POLLIN};
  uv_mutex_lock(&c->loopmu);
  /* It sleeps no longer than one command timeout: a command started on a
   * caller while it sleeps has its deadline a command timeout from then,
   * so the loop is awake by then without being woken for it (a wake per
   * call for N > 1, whose last replies come after the caller is done). */
  uint64_t cap = c->conn_cfg.command_timeout_ms;
  for (;;) {
    c->defer_wakes = 1;
    int alive = uv_run(l, UV_RUN_NOWAIT);
    c->defer_wakes = 0;
    wake_callers(c);
    if (!alive) break;
    int timeout = uv_backend_timeout(l);
    if (timeout == 0 || loop_needs_turn(l)) continue;
    if (cap > 0 && cap < INT_MAX && (timeout < 0 || (uint64_t)timeout > cap))
      timeout = (int)cap;
    c->poll_until = timeout < 0 ? UINT64_MAX : uv_now(l) + (uint64_t)timeout;
    uv_mutex_unlock(&c->loopmu);
    poll(&p, 1, timeout); /* EINTR: the loop turns early, no harm */
    uv_mutex_lock(&c->loopmu);
  }
  uv_mutex_unlock(&c->loopmu);
}

static void count_acquire(rl_client *c, rl_req *req, int status) {
  rl_metrics *m = &c->metrics;
  if (status != RLOCK_OK) {
    rl_metrics_count_failure(m, status);
    return;
  }
  RL_ADD(m->acquisitions, 1);
  rl_hist_observe(&m->wait, rl_now_ms() - req->t_post);
}

static void run_callback(rl_req *req) {
  rlock *lock = req->lock;
  req->cb(lock, req->status, req->arg);
  free(req);
  rl_lock_unref(lock);
}

void rl_req_finish(rl_req *req, int status) {
  const rl_client_hooks *hooks = req->lock->client->hooks;
  if (req->end != NULL) req->end(req, status);
  /* An acquisition's grants are kept by its hold, or given back; the
   * round lets go of the request. */
  hooks->end(req, status);
  rl_list_remove(&req->node);
  /* Out of its wait queue, its retry timer stopped. */
  hooks->cancel(req);
  req->status = status;
  if (status >= 0) clear_call_error(req->lock->client);
  if (req->kind == RL_REQ_ACQUIRE) count_acquire(req->lock->client, req, status);
  if (req->pending != NULL) {
    rl_holds_remove(&req->lock->client->pending, req->pending);
    req->pending = NULL;
  }
  if (req->waiter != NULL) {
    rl_waiter *w = req->waiter;
    rl_client *c = req->lock->client; /* req is not to be read after */
    uv_mutex_lock(&w->mu);
    /* The caller may return and free req from here on. */
    atomic_store_explicit(&req->finished, 1, memory_order_release);
    uv_mutex_unlock(&w->mu);
    /* After the mutex, so that the woken caller does not wait for it at
     * once (one more sleep and wake, in the 16-thread case about one
     * per call); waiters live for good (wait.c), so this is safe even
     * when the caller has returned and its thread is gone. On the own
     * loop thread, at the end of its turn (run_locked says why). */
    if (c->defer_wakes && c->nwakes < RL_DEFER_WAKES) {
      c->wakes[c->nwakes++] = w;
      atomic_fetch_add_explicit(&c->wakes_deferred, 1, memory_order_relaxed);
    } else {
      if (c->defer_wakes)
        atomic_fetch_add_explicit(&c->wakes_overflow, 1, memory_order_relaxed);
      uv_cond_signal(&w->cond);
    }
  } else if (rl_client_in_fast_start()) {
    /* Finished on a caller under the loop lock: its callback is user
     * code, which runs on the loop (on_async; the caller wakes it). */
    rl_list_push_back(&req->lock->client->done, &req->node);
  } else {
    run_callback(req);
  }
}

static void shutdown_loop_side(rl_client *c);

static void on_async(uv_async_t *a) {
  rl_client *c = a->data;
  rl_list batch, *n;
  rl_log_flush(c, 1);
  while ((n = rl_list_pop_front(&c->done)) != NULL)
    run_callback(rl_container_of(n, rl_req, node));
  rl_list_init(&batch);
  uv_mutex_lock(&c->qmu);
  rl_list_splice(&batch, &c->queue);
  int close = c->close_requested;
  uv_mutex_unlock(&c->qmu);
  while ((n = rl_list_pop_front(&batch)) != NULL) {
    rl_req *req = rl_container_of(n, rl_req, node);
    rl_list_push_back(&c->active, &req->node);
    if (c->shut_down)
      rl_req_finish(req, RLOCK_ECLOSED);
    else
      c->hooks->start(req);
  }
  /* Everything this batch queued goes out now, in one write per master,
   * rather than one poll round later. */
  /* Not when this batch carries the close: the connections close right
   * after, and a grant written now would be left behind for its lease. */
  if (!c->shut_down && !close)
    for (int i = 0; i < c->nmasters; i++) rl_master_flush(c->masters[i]);
  if (close) shutdown_loop_side(c);
}

static void on_handle_closed(rl_client *c) {
  if (--c->handles_open == 0) rl_client_unref(c);
}

static void on_async_closed(uv_handle_t *h) { on_handle_closed(h->data); }

static void on_master_closed(rl_master *m) { on_handle_closed(m->data); }

static void close_connections(rl_client *c) {
  /* Undos of acquisitions in flight and releases are queued: write them
   * before the sockets close, or the masters keep those grants. */
  for (int i = 0; i < c->nmasters; i++) rl_master_flush(c->masters[i]);
  for (int i = 0; i < c->nmasters; i++) rl_master_close(c->masters[i]);
  uv_close((uv_handle_t *)&c->async, on_async_closed);
}

/* Fails everything pending, releases held locks, then closes every
 * handle. Loop thread. */
static void shutdown_loop_side(rl_client *c) {
  if (c->shut_down) return;
  c->shut_down = 1;
  uv_mutex_lock(&c->qmu);
  rl_list_splice(&c->active, &c->queue);
  uv_mutex_unlock(&c->qmu);
  while (!rl_list_empty(&c->active)) {
    rl_req *req = rl_container_of(c->active.next, rl_req, node);
    rl_req_finish(req, RLOCK_ECLOSED);
  }
  /* Give back what is still held (semaphore permits, then locks), so that
   * others need not wait out the leases; the release rounds end within the
   * master timeout, then the connections close. The holds are dropped
   * (their wheel entries cancelled) before the wheel goes. */
  c->hooks->shutdown(c, close_connections);
  rl_watchdog_close(&c->watchdog, on_async_closed);
}

static void master_log(rl_master *m, rl_conn *node, int level,
                       const char *msg) {
  rl_client *c = m->data;
  char addr[300];
  if (node == NULL || m->kind == RL_MASTER_SINGLE) {
    rl_log(c, level, "master %s: %s", m->name, msg);
    return;
  }
  rl_node_address(node, addr, sizeof addr);
  rl_log(c, level, "master %s, node %s: %s", m->name, addr, msg);
}

/* Keeps the counts rlock_client_wait_ready waits on, and the restart
 * records' view of which connections are live (quarantine.c). */
static void master_on_state(rl_master *m, rl_conn *node, int state) {
  rl_client *c = m->data;
  c->hooks->node_state(m, node, state);
  int ready = 0, refused = 0;
  for (int i = 0; i < c->nmasters; i++) {
    if (c->masters[i] == NULL) continue;
    if (rl_master_ready(c->masters[i]))
      ready++;
    else if (rl_master_refused(c->masters[i]))
      refused++;
  }
  uv_mutex_lock(&c->readymu);
  c->nready = ready;
  c->nrefused = refused;
  uv_cond_broadcast(&c->readycond);
  uv_mutex_unlock(&c->readymu);
}

/* A master refused the handshake, or TLS failed: the caller learns it
 * from rlock_client_last_error (once per change of text). */
static void master_on_error(rl_master *m, rl_conn *node, const char *text,
                            int refused, int tls) {
  (void)node;
  if (refused || tls)
    rl_client_note_master_error(m->data, text, strlen(text));
}

typedef struct thread_start {
  rl_client *c;
  uv_sem_t started;
} thread_start;

static void loop_main(void *arg) {
  thread_start *ts = arg;
  rl_client *c = ts->c;
  /* Signals are the application's business: the loop thread takes none,
   * and a write to a dead master raises a SIGPIPE that stays blocked. */
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  sigdelset(&all, SIGABRT);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  c->loop_thread = uv_thread_self();
  uv_sem_post(&ts->started);
  run_locked(c);
  if (c->detached) {
    /* Closed from one of its own callbacks: nobody can join this thread,
     * so it finishes the close itself. */
    uv_loop_close(c->loop);
    rl_client_unref(c);
  }
}

static int client_init(rl_client *c, const rlock_options *opts) {
  unsigned char raw[16];
  if (rl_random_bytes(raw, sizeof raw) != 0) return RLOCK_ENOMEM;
  rl_hex(raw, sizeof raw, c->id);
  c->opts = *opts;
  c->opts.masters = NULL;
  c->opts.tls_ca_file = c->opts.tls_ca_dir = NULL;
  c->opts.tls_cert_file = c->opts.tls_key_file = NULL;
  c->opts.tls_server_name = NULL;
  c->prefix = strdup(opts->key_prefix);
  c->nmasters = (int)opts->nmasters;
  c->masters = calloc(opts->nmasters, sizeof *c->masters);
  if (c->prefix == NULL || c->masters == NULL) return RLOCK_ENOMEM;
  if (opts->tls_server_name != NULL &&
      (c->tls_server_name = strdup(opts->tls_server_name)) == NULL)
    return RLOCK_ENOMEM;
  c->opts.key_prefix = c->prefix;
  if (rl_holds_init(&c->holds, c->id) != 0 ||
      rl_holds_init(&c->pending, c->id) != 0)
    return RLOCK_ENOMEM;
  c->conn_cfg.command_timeout_ms = (uint64_t)opts->master_timeout_ms;
  c->conn_cfg.connect_timeout_ms = (uint64_t)opts->connect_timeout_ms;
  c->conn_cfg.mode = RL_CONN_COMMAND;
  snprintf(c->conn_name, sizeof c->conn_name, "rlock-%s", c->id);
  c->conn_cfg.client_name = c->conn_name;
  c->conn_cfg.tls_server_name = c->tls_server_name;
  rl_list_init(&c->queue);
  rl_list_init(&c->active);
  rl_list_init(&c->done);
  return 0;
}

/* Makes the TLS context when a master needs it or a TLS file is given (a
 * bad file is an error at open either way). 0, or RLOCK_EINVAL with the
 * reason for rlock_open_error. */
static int tls_init(rl_client *c, const rlock_options *opts,
                    const rl_master_url *urls) {
  int any = opts->tls_ca_file || opts->tls_ca_dir || opts->tls_cert_file ||
            opts->tls_key_file;
  for (size_t i = 0; i < opts->nmasters; i++) any |= urls[i].url.tls;
  if (!any) return 0;
  rl_tls_config cfg = {opts->tls_ca_file, opts->tls_ca_dir,
                       opts->tls_cert_file, opts->tls_key_file,
                       opts->tls_insecure};
  char why[300];
  c->tls = rl_tls_ctx_new(&cfg, why, sizeof why);
  if (c->tls == NULL) {
    rl_open_error("%s", why);
    return RLOCK_EINVAL;
  }
  c->conn_cfg.tls = c->tls;
  return 0;
}

/* The client's synchronization objects; 0 or RLOCK_ENOMEM (nothing to
 * undo then). */
static int client_sync_init(rl_client *c) {
  rl_list_init(&c->logs); /* client_free reads it, whatever failed */
  if (uv_mutex_init(&c->qmu) != 0) return RLOCK_ENOMEM;
  if (uv_mutex_init(&c->loopmu) != 0) goto fail_loopmu;
  if (uv_mutex_init(&c->errmu) != 0) goto fail_errmu;
  if (uv_mutex_init(&c->readymu) != 0) goto fail_readymu;
  if (uv_cond_init(&c->readycond) != 0) goto fail_readycond;
  return 0;
fail_readycond:
  uv_mutex_destroy(&c->readymu);
fail_readymu:
  uv_mutex_destroy(&c->errmu);
fail_errmu:
  uv_mutex_destroy(&c->loopmu);
fail_loopmu:
  uv_mutex_destroy(&c->qmu);
  return RLOCK_ENOMEM;
}

/* Makes the masters (before anything else can fail). 0 or RLOCK_ENOMEM. */
static int make_masters(rl_client *c, const rl_master_url *urls) {
  for (int i = 0; i < c->nmasters; i++) {
    rl_master *m = rl_master_new(&urls[i], c->loop, &c->conn_cfg, i);
    if (m == NULL) return RLOCK_ENOMEM;
    m->data = c;
    m->acks = c->opts.replica_acks;
    m->ack_timeout_ms = (uint64_t)c->opts.replica_ack_timeout_ms;
    m->on_node_info = c->hooks->node_info;
    m->on_node_state = master_on_state;
    m->on_error = master_on_error;
    m->on_log = master_log;
    m->on_closed = on_master_closed;
    c->masters[i] = m;
  }
  return 0;
}

static void start_connections(rl_client *c) {
  /* The mutex init is the only failure, and glibc's cannot fail. */
  for (int i = 0; i < c->nmasters; i++) rl_master_start(c->masters[i]);
}

static int open_client(rlock_client **out, const rlock_options *opts,
                       const rl_client_hooks *hooks) {
  if (out == NULL) {
    rl_open_error("out: NULL");
    return RLOCK_EINVAL;
  }
  *out = NULL;
  if (opts == NULL || opts->nmasters == 0 || opts->nmasters > RL_MAX_MASTERS)
    return rl_options_check(opts, NULL);
  rl_master_url *urls = calloc(opts->nmasters, sizeof *urls);
  if (urls == NULL) {
    rl_open_error("out of memory");
    return RLOCK_ENOMEM;
  }
  rl_fork_watch();
  int rc = rl_options_check(opts, urls);
  for (size_t i = 0; rc == 0 && i < opts->nmasters; i++) {
    rc = rl_master_url_resolve(&urls[i]);
    /* A single server whose name does not resolve now (DNS down for one
     * record) is a master that is down, not a wrong option: its
     * connection resolves the name again with the reconnect backoff
     * (conn.c), and a majority serves meanwhile. A cluster's seeds and a
     * Sentinel group's sentinels must still resolve. */
    if (rc == RLOCK_ENOTFOUND && urls[i].kind == 0) {
      rl_open_error_clear();
      rc = 0;
    }
  }
  if (rc == 0) rc = rl_masters_check_unique(opts, urls);
  if (rc != 0) goto fail_urls;
  rl_client *c = calloc(1, sizeof *c);
  rc = RLOCK_ENOMEM;
  if (c == NULL) goto fail_urls;
  c->hooks = hooks;
  c->forks = atomic_load_explicit(&rl_forks, memory_order_relaxed);
  c->opener_pid = (int)getpid();
  if (client_sync_init(c) != 0) {
    free(c);
    goto fail_urls;
  }
  rc = client_init(c, opts);
  if (rc == 0) rc = tls_init(c, opts, urls);
  if (rc == 0 && opts->loop == NULL && uv_loop_init(&c->own_loop) != 0)
    rc = RLOCK_ENOMEM;
  if (rc != 0) goto fail_client;
  c->own_thread = opts->loop == NULL;
  c->fast = c->own_thread;
  c->loop = c->own_thread ? &c->own_loop : opts->loop;
  c->loop_thread = uv_thread_self();
  uint64_t period = (uint64_t)c->opts.watchdog_timeout_ms / 3;
  if (make_masters(c, urls) != 0 || hooks->quarantine_init(c, urls) != 0 ||
      rl_watchdog_init(&c->watchdog, c->loop, period,
                       (size_t)c->opts.watchdog_batch, hooks->renew_due,
                       c) != 0) {
    rc = RLOCK_ENOMEM;
    goto fail_loop;
  }
  c->watchdog.timer.data = c;
  uv_async_init(c->loop, &c->async, on_async);
  c->async.data = c;
  start_connections(c);
  free(urls);
  c->handles_open = 2 + c->nmasters; /* async, watchdog timer, conns */
  atomic_init(&c->refs, 2); /* the opener, and the open handles */
  if (c->own_thread) {
    thread_start ts = {.c = c};
    uv_sem_init(&ts.started, 0);
    if (uv_thread_create(&c->thread, loop_main, &ts) != 0) {
      /* Unwind on this thread: nothing else has seen the loop. */
      c->closed = 1;
      shutdown_loop_side(c);
      uv_run(c->loop, UV_RUN_DEFAULT);
      uv_loop_close(c->loop);
      uv_sem_destroy(&ts.started);
      rl_client_unref(c);
      return RLOCK_ENOMEM;
    }
    uv_sem_wait(&ts.started);
    uv_sem_destroy(&ts.started);
  }
  *out = c;
  return 0;
fail_loop:
  if (c->own_thread) uv_loop_close(c->loop);
fail_client:
  client_free(c);
fail_urls:
  free(urls);
  return rc;
}

int rl_client_open(rlock_client **out, const rlock_options *opts,
                   const rl_client_hooks *hooks) {
  rl_open_error_clear();
  int rc = open_client(out, opts, hooks);
  char probe[2];
  if (rc != 0 && rlock_open_error(probe, sizeof probe) == 0)
    rl_open_error("%s", rlock_strerror(rc));
  return rc;
}

void rlock_client_close(rlock_client *c) {
  if (c == NULL) return;
  if (rl_client_forked(c)) {
    /* A child lets go of the opener's reference and nothing else: the
     * connections, the loop and its thread are the parent's, so nothing
     * is sent, closed or joined, and the memory stays (the open handles'
     * reference keeps it), as do the inherited descriptors. */
    atomic_fetch_sub(&c->refs, 1);
    return;
  }
  uv_mutex_lock(&c->qmu);
  if (c->closed) {
    uv_mutex_unlock(&c->qmu);
    return;
  }
  c->closed = 1;
  c->close_requested = 1;
  uv_mutex_lock(&c->readymu);
  c->ready_closed = 1;
  uv_cond_broadcast(&c->readycond);
  uv_mutex_unlock(&c->readymu);
  /* The shutdown itself always runs in the async callback, on a clean
   * stack: called from inside one of rlock's callbacks (a lost-lock or
   * completion callback), it must not free what that callback's callers
   * are still using. */
  uv_async_send(&c->async);
  uv_mutex_unlock(&c->qmu);
  if (c->own_thread && rl_client_on_loop(c)) {
    c->detached = 1;
    pthread_detach(c->thread);
    return; /* loop_main drops the opener's reference */
  }
  if (c->own_thread) {
    uv_thread_join(&c->thread);
    uv_loop_close(c->loop);
  }
  /* On a caller's loop, the shutdown runs when the caller next runs it;
   * the open handles keep the memory until they have closed. */
  rl_client_unref(c);
}

/* Waits on the readiness counts; see rlock.h. The caller holds a
 * reference, so a close from another thread cannot free the client under
 * the wait. */
static int wait_ready_locked(rl_client *c, int64_t timeout_ms) {
  uint64_t deadline = timeout_ms < 0 ? RL_FOREVER
                                     : rl_now_ms() + (uint64_t)timeout_ms;
  int quorum = c->nmasters / 2 + 1;
  for (;;) {
    if (c->ready_closed) return RLOCK_ECLOSED;
    if (c->nready >= quorum) return 0;
    /* Refusals (a wrong password, a database the master lacks) do not
     * mend themselves: once too many refused, waiting longer is useless. */
    if (c->nrefused > c->nmasters - quorum) return RLOCK_EREDIS;
    uint64_t now = rl_now_ms();
    if (now >= deadline)
      return c->nrefused > 0 ? RLOCK_EREDIS : RLOCK_ENOQUORUM;
    if (deadline == RL_FOREVER)
      uv_cond_wait(&c->readycond, &c->readymu);
    else
      uv_cond_timedwait(&c->readycond, &c->readymu,
                        (deadline - now) * 1000000ull);
  }
}

/* After a wait that ran out: why each master that is not up is not, as
 * its metrics say (a Sentinel group whose sentinels disagree, a name that
 * does not resolve, a refused connection), so that the caller's last
 * error is not empty. Addresses carry no password. */
static void note_not_ready(rl_client *c) {
  char why[512];
  size_t n = 0;
  for (int i = 0; i < c->nmasters && n < sizeof why - 1; i++) {
    rlock_master_metrics mm;
    rl_master_metrics(c->masters[i], &mm);
    if (mm.up) continue;
    int k = snprintf(why + n, sizeof why - n, "%smasters[%d] %s: %s",
                     n > 0 ? "; " : "", i, mm.address,
                     mm.error[0] != '\0' ? mm.error : "not connected yet");
    if (k < 0) break;
    n += (size_t)k < sizeof why - n ? (size_t)k : sizeof why - n - 1;
  }
  if (n > 0) rl_client_note_error(c, why, n);
}

int rlock_client_wait_ready(rlock_client *c, int64_t timeout_ms) {
  if (c == NULL || timeout_ms < RLOCK_WAIT_FOREVER) return RLOCK_EINVAL;
  if (rl_client_forked(c)) return RLOCK_EFORKED;
  if (rl_client_on_loop(c)) return RLOCK_EDEADLK;
  atomic_fetch_add(&c->refs, 1);
  uv_mutex_lock(&c->readymu);
  int rc = wait_ready_locked(c, timeout_ms);
  uv_mutex_unlock(&c->readymu);
  if (rc == RLOCK_ENOQUORUM) note_not_ready(c);
  rl_client_unref(c);
  return rc;
}

/* A line made on a caller inside the fast path, for the loop to hand
 * over: log_cb is user code and runs on the loop thread (rlock.h). */
typedef struct deferred_log {
  rl_list node;
  int level;
  char msg[];
} deferred_log;

void rl_log(rl_client *c, int level, const char *fmt, ...) {
  if (c->opts.log_cb == NULL || level > c->opts.log_level) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (rl_client_in_fast_start()) {
    size_t n = strlen(msg) + 1;
    deferred_log *d = malloc(sizeof *d + n);
    if (d == NULL) return; /* a line lost, nothing else */
    d->level = level;
    memcpy(d->msg, msg, n);
    rl_list_push_back(&c->logs, &d->node); /* under the loop lock */
    return;
  }
  c->opts.log_cb(level, msg, c->opts.log_arg);
}

void rl_log_flush(rl_client *c, int emit) {
  rl_list *n;
  while ((n = rl_list_pop_front(&c->logs)) != NULL) {
    deferred_log *d = rl_container_of(n, deferred_log, node);
    if (emit) c->opts.log_cb(d->level, d->msg, c->opts.log_arg);
    free(d);
  }
}
