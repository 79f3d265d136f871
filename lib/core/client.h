/*
 * The client: options, masters, the loop and its thread, the request queue
 * from application threads to the loop, and the table of locks this client
 * holds. Everything below "loop thread only" is touched by the loop thread
 * alone; the queue is the one place threads meet, under one mutex.
 */
#ifndef RL_CLIENT_H
#define RL_CLIENT_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "conn.h"
#include "holds.h"
#include "master.h"
#include "list.h"
#include "metrics.h"
#include "rlock.h"
#include "stream.h"
#include "tls.h"
#include "wait.h"
#include "watchdog.h"

#define RL_MAX_MASTERS 64
#define RL_OWNER_MAX 64
#define RL_FOREVER UINT64_MAX

/* An attempt found the lock held by another owner: RLOCK_ETIMEDOUT, the
 * code that says so once the wait is over. The acquisition engines tell
 * it from their other failures (ENOQUORUM, EREDIS) to wait for the
 * holder rather than retry. */
#define RL_EBUSY RLOCK_ETIMEDOUT

typedef struct rlock_client rl_client;
typedef struct rl_waiter rl_waiter;

enum rl_req_kind {
  RL_REQ_ACQUIRE = 1,
  RL_REQ_UNLOCK,
  RL_REQ_FORCE,
  RL_REQ_IS_LOCKED,
  RL_REQ_IS_HELD,
  RL_REQ_HOLD_COUNT,
  RL_REQ_PTTL,
  RL_REQ_TOKEN,
  RL_REQ_EXTEND,
  RL_REQ_CANCEL,
  RL_REQ_FAMILY /* the lock family's (family.h): start and end say what */
};

typedef struct rl_sleep rl_sleep;
struct rl_round;

/*
 * A request from an application thread, and the state of the operation
 * it starts. A blocking request lives on the caller's stack and is never
 * touched after it is finished; an async one is freed after its callback.
 */
typedef struct rl_req {
  rl_list node; /* in the client's queue, then in its active list */
  int kind;
  rlock *lock;
  char owner[RL_OWNER_MAX];
  size_t ownerlen;
  uint64_t owner_id;     /* the thread id, or the async owner */
  int owner_is_thread;
  int64_t lease_ms;      /* resolved: never RLOCK_WATCHDOG here */
  int watchdog;          /* lease_ms came from RLOCK_WATCHDOG */
  uint64_t deadline;     /* monotonic ms, RL_FOREVER for no deadline */
  uint64_t t_post;       /* monotonic ms when the call was made */
  /* Completion. */
  rl_waiter *waiter;     /* blocking */
  atomic_int finished;   /* blocking: set under the waiter's mutex */
  rlock_cb cb;           /* async */
  void *arg;
  int status;
  int64_t out_i64;
  uint64_t out_u64;
  /* Operation state, loop thread only. */
  struct rl_round *round; /* in flight; its data points back here */
  rl_sleep *sleep;        /* retry timer */
  struct rl_psw *psw;     /* pubsub/: its place in a wait queue */
  int last_err;
  struct rl_grants *grants; /* acquire.c: the current attempt's grants,
                               until they are kept or given back */
  uint64_t token;
  int64_t count;
  rl_hold *pending;      /* async: this acquisition's mark in c->pending */
  int deciding;          /* user code runs inside its decision: no cancel */
  uint64_t t_start;
  uint64_t ticket;       /* fair: its place in the queues (wall-clock us) */
  int queued;            /* an attempt queued it on the masters */
  int read_cleared;      /* write side: a leftover read hold was dropped */
  /* RL_REQ_FAMILY (semaphores, latches, several locks: family.h): how
   * the loop starts the request, and what rl_req_finish runs first, to
   * give back what the operation still has (grants, its place in a wait
   * queue, timers). */
  void (*start)(struct rl_req *req);
  void (*end)(struct rl_req *req, int status);
} rl_req;

/*
 * The client's hooks: how the core, and the quorum layer's rounds, reach
 * the layers above them without naming them (the core is below
 * lib/quorum, lib/lock and lib/family, and calls nothing of theirs). One
 * constant table, lib/api/open.c's, filled with those layers' functions
 * and handed to rl_client_open by rlock_client_open; a client keeps a
 * pointer to it (c->hooks) and every hook is set. A request of the lock
 * family also carries its own start and end (rl_req), which the lock
 * layer's start and the core's rl_req_finish honour.
 */
typedef struct rl_client_hooks {
  /* lib/quorum (quarantine.c): the masters' restart records. quarantine_init
   * makes them (c->quarantine) from the resolved addresses urls[nmasters]
   * before the connections start, 0 or RLOCK_ENOMEM; quarantine_free frees
   * them with the client. node_info and node_state become every master's
   * on_node_info and on_node_state (master.h; the core's own state hook
   * calls node_state first). node_quarantined is called by round.c for each
   * reply: 1 if the node that answered for master idx is in restart
   * quarantine. */
  int (*quarantine_init)(struct rlock_client *c, const rl_master_url *urls);
  void (*quarantine_free)(struct rlock_client *c);
  void (*node_info)(rl_master *m, rl_conn *node, const char *run_id,
                    uint64_t uptime_ms);
  void (*node_state)(rl_master *m, rl_conn *node, int state);
  int (*node_quarantined)(struct rlock_client *c, int idx,
                          const rl_conn *node);
  /* lib/lock: start runs a request the loop took from the queue (lock.c's
   * rl_req_start, which dispatches by kind or runs req->start). end runs
   * in rl_req_finish after req->end, before the request leaves the
   * client's active list: an acquisition's grants are kept by its hold or
   * given back, and the round in flight (which lives on for late replies)
   * lets go of the request. cancel runs after it left the list: the
   * request leaves its wait queue and its retry timer stops (acquire.c's
   * rl_sleep_cancel). */
  void (*start)(rl_req *req);
  void (*end)(rl_req *req, int status);
  void (*cancel)(rl_req *req);
  /* lib/lock (renew.c): the client's watchdog's due callback, with the
   * client as its argument: renews the due holds. */
  rl_watchdog_due_cb renew_due;
  /* lib/family and lib/lock: the client shuts down on the loop, every
   * request already failed: what the layers still hold is given back
   * (semaphore permits, then locks, written before the connections
   * close), their waits end, and closed(c) runs once the release rounds
   * are over (at once when nothing is held); it closes the connections. */
  void (*shutdown)(struct rlock_client *c,
                   void (*closed)(struct rlock_client *c));
} rl_client_hooks;

/*
 * A handle: one allocation, since a client may hold a million locks (at
 * most 300 bytes per held lock, handle and hold together).
 * No pointers into itself: after the struct come at[], 16-bit offsets and
 * lengths, then the text: the name with its NUL, the keys, each key whose
 * name begins another's not stored twice (a lock's hash "<prefix>{<name>}"
 * is the start of its fencing counter's name, which is passed with its
 * length), and the channel. lock.h reads them (rl_lock_key and the rest);
 * a reentrant lock named like "wdb-123456" takes 112 bytes of heap.
 */
typedef struct rl_lost { /* the lost-lock and at-risk callbacks as set
                            (lock.c): one allocation for both, so that
                            a handle is no larger for the second */
  rlock_lost_cb cb;
  void *arg;
  rlock_risk_cb risk_cb;
  void *risk_arg;
} rl_lost;

struct rlock {
  atomic_int refs;
  uint8_t nkeys;         /* its keys, in the order its scripts take them */
  uint8_t hold;          /* which of them is the hold key */
  uint16_t keylen;       /* the hold key's length */
  rl_lost *lost;          /* rlock_set_lost_cb's and rlock_set_risk_cb's,
                             or NULL; under the client's qmu (lock.c) */
  rl_client *client;
  const struct rl_kind *kind; /* what the handle is (lib/lock/kind.h); NULL for
                                 a family object (family.c) */
  uint8_t fence;              /* which key is the fencing counter */
  uint8_t chan_key;           /* the key whose name + ":ch" is the channel */
  uint16_t channellen;        /* where its waiters listen (a fair waiter: + ":"
                                 owner) */
  uint16_t at[]; /* at[k]: key k's offset in the text, at[nkeys + k]
                    its length, at[2 * nkeys] the channel's offset */
};

struct rlock_client {
  atomic_int refs; /* the opener, each handle, and the open handles */
  const rl_client_hooks *hooks; /* the layers above (rl_client_hooks) */
  unsigned forks;  /* rl_forks when it was opened (rl_client_forked) */
  int opener_pid;  /* the process that opened it, for messages */
  char id[33];     /* random 128-bit id, hex */
  char *prefix;
  rlock_options opts; /* masters and key_prefix not kept */
  int nmasters;
  rl_master **masters; /* master.h: each one server, or a cluster */
  rl_conn_config conn_cfg;
  rl_tls_ctx *tls;          /* for rediss:// masters, or NULL */
  char *tls_server_name;    /* a copy of the option, or NULL */
  char conn_name[48];       /* CLIENT SETNAME: "rlock-" and the id */

  /* Readiness, for rlock_client_wait_ready: how many masters completed
   * their handshake and how many refused it, kept by the loop thread. */
  uv_mutex_t readymu;
  uv_cond_t readycond;
  int nready, nrefused;
  int ready_closed;

  uv_loop_t *loop;
  uv_loop_t own_loop;
  int own_thread;
  uv_thread_t thread;
  uv_thread_t loop_thread; /* the thread that runs the loop */
  uv_async_t async;

  uv_mutex_t qmu;    /* guards queue, closed, close_requested */
  rl_list queue;
  int closed;
  int close_requested;

  atomic_int blocking; /* blocking calls in flight (any thread) */

  /* The loop lock (client.c's top comment says why it is safe): with the
   * client's own loop thread, that thread holds it while it runs the
   * loop's callbacks and lets go only while it sleeps in poll; a blocking
   * caller that takes it (trylock) may start its own request and write
   * it, as on_async would. Everything "loop thread only" below, and the
   * loop's libuv state, is touched only with it held. */
  uv_mutex_t loopmu;
  int fast;            /* the own loop thread runs the loop this way */
  uint64_t poll_until; /* loopmu: the loop time the loop thread sleeps
                          until (UINT64_MAX: no timer) */
#define RL_DEFER_WAKES 64
  /* loopmu: the callers whose requests finished in the loop turn the own
   * loop thread is in, to be woken when that turn ends (run_locked);
   * defer_wakes is 1 only inside that turn. */
  int defer_wakes;
  int nwakes;
  struct rl_waiter *wakes[RL_DEFER_WAKES];
  atomic_uint_fast64_t fast_starts; /* requests started that way (tests) */
  atomic_uint_fast64_t own_rounds;  /* of those, requests whose caller read
                                       its replies itself (tests) */
  atomic_uint_fast64_t own_finished; /* and finished them so (tests) */
  atomic_uint_fast64_t own_waits;    /* own rounds that waited for a
                                        pub/sub message themselves */
  atomic_uint_fast64_t own_wakes;    /* attempts such a caller started
                                        itself on an event it read */
  atomic_uint_fast64_t wakes_deferred; /* callers woken at a turn's end */
  atomic_uint_fast64_t wakes_overflow; /* woken at once: the list was full
                                          (tests) */

  uv_mutex_t errmu;  /* guards last_error */
  char last_error[256];
  /* last_error is a call's reason (an argument refused, a master's error
   * reply to a command), which the next call that succeeds clears; not a
   * master's refusal of its connection, which stays until replaced. Set
   * under errmu, read without it first. */
  atomic_int call_error;

  /* Loop thread only. */
  rl_list active;
  rl_list done; /* async requests finished on a caller under the loop
                   lock, whose callbacks the loop runs (client.c) */
  rl_list logs; /* log lines made there, which the loop hands to log_cb
                   (metrics.c) */
  rl_holds holds;
  rl_holds pending; /* (key, async owner) with an acquisition in flight */
  uint64_t hold_gen; /* the last rl_hold.gen handed out */
  uint64_t max_token_seen; /* acquire.c: floor of the next fencing token */
  struct rl_quarantine *quarantine; /* quarantine.c: which votes count */
  rl_metrics metrics;
  rl_watchdog watchdog;
  rl_log_rate renew_miss_log; /* renew.c: missed renewals logged */
  int releasing;     /* close: release rounds still out */
  void (*release_done)(rl_client *c);
  int shut_down;
  int handles_open;
  int detached; /* closed from its own loop thread */
  struct rl_pubsub *pubsub; /* pubsub/: made on the first wait */
  struct rl_renew_groups *renew_groups; /* renew.c: batches by node */
  struct rl_family *family; /* family.c: semaphore holds and their
                               watchdog, made on first use */
};

/*
 * fork(): a child inherits the client's memory but not its loop thread,
 * and its sockets and epoll set are shared with the parent. Nothing in the
 * child may touch them: a call would write to the parent's connections
 * (its replies then land in the parent, as errors) or wait for ever for a
 * loop thread that does not exist there, and a mutex another thread held
 * at the fork stays held. rl_forks (wait.h) counts the forks this process
 * has seen, from the first open on; a client remembers the count it was
 * opened at, so every call can tell, with one load and before any lock,
 * that it runs in a child.
 */

/* 1 if c was opened by another process (inherited across fork). */
static inline int rl_client_forked(const rl_client *c) {
  return atomic_load_explicit(&rl_forks, memory_order_relaxed) != c->forks;
}

/* 1 if the calling thread runs the client's loop. */
int rl_client_on_loop(rl_client *c);
/* 1 when this thread is a caller inside the fast path (between
 * rl_client_fast_enter and rl_client_fast_leave): loop-thread state is
 * its to touch, but user code must wait for the loop. That is exactly
 * while the stream layer's off-loop flag is set, which the fast path sets
 * on entry and clears before it lets go of the loop lock. */
static inline int rl_client_in_fast_start(void) { return rl_stream_off_loop; }

/* Queues a request for the loop thread. 0, or RLOCK_ECLOSED. */
int rl_client_post(rl_client *c, rl_req *req);

/* Records why a call failed: a master's error reply text, or why an
 * argument was refused (any thread). */
void rl_client_note_error(rl_client *c, const char *text, size_t len);
/* Records why a master refused a connection (its handshake, TLS). */
void rl_client_note_master_error(rl_client *c, const char *text, size_t len);

/* Drops a reference; the last one frees the client. */
void rl_client_unref(rl_client *c);

/*
 * The fast path's loop lock (client.c's top comment says why it is
 * safe), for lib/lock/fast.c, which decides what a caller may start and
 * finish itself. Any thread but the loop's, for a blocking request not
 * yet posted: rl_client_fast_enter takes the loop lock when it is free
 * (trylock: it never waits), the client is open and every master is one
 * connection that is ready, so that no send can fail at once; the loop's
 * clock is then brought up to date and the thread counts as inside the
 * fast path (rl_client_in_fast_start). 1 when it took it, else 0 (post
 * the request instead). rl_client_fast_leave lets go, with own set when
 * the caller waited for its replies itself (its own round) and req its
 * request, after waking the loop if what the caller left needs it at
 * once; it returns RL_FAST_STARTED, with RL_FAST_OWN when own, and
 * RL_FAST_TIMERS when the start armed a timer the sleeping loop does not
 * know of yet: the caller must rl_client_wake it before it waits for long.
 * rl_client_loop_timeout is the loop's poll timeout, in ms, for a caller
 * that polls under the loop lock: never past the loop's next timer.
 */
#define RL_FAST_STARTED 1
#define RL_FAST_TIMERS 2
#define RL_FAST_OWN 4
int rl_client_fast_enter(rl_client *c);
int rl_client_fast_leave(rl_client *c, rl_req *req, int own);
int rl_client_loop_timeout(rl_client *c);

/* Wakes the loop thread (unless the client is closed): it then sees
 * every timer and watcher started under the loop lock. Any thread. */
void rl_client_wake(rl_client *c);

/* Loop thread: completes a request with status, exactly once. */
void rl_req_finish(rl_req *req, int status);

/* Handle references (any thread): the last unref frees the handle and
 * drops its reference to the client. */
void rl_lock_ref(rlock *lock);
void rl_lock_unref(rlock *lock);

/* rlock_client_open with the layers' hooks (rl_client_hooks), which must
 * outlive the client: lib/api/open.c's. */
int rl_client_open(rlock_client **out, const rlock_options *opts,
                   const rl_client_hooks *hooks);

/* The drift allowance of a lease, in ms: lease * drift_factor + 2. A
 * grant is valid for lease - elapsed - this. */
static inline int64_t rl_drift_ms(const rl_client *c, int64_t lease_ms) {
  return (int64_t)((double)lease_ms * c->opts.drift_factor) + 2;
}

/* Loop thread: the client is shutting down. */
static inline int rl_client_closing(const rl_client *c) {
  return c->shut_down;
}

/* Logs at level if the client's log callback wants it; a line made on a
 * caller inside the fast path waits for the loop (log_cb is user code and
 * runs on the loop thread, rlock.h). */
void rl_log(rl_client *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Hands the lines a caller made inside the fast path to log_cb (emit 1,
 * on the loop thread) or drops them (emit 0, when the client is freed). */
void rl_log_flush(rl_client *c, int emit);

#endif
