/*
 * What the lock family's C layer shares. Semaphores (sem*.c), latches
 * (latch.c) and several locks at once (multi*.c) are not locks, but they
 * run on the lock's machinery: the client's request queue (as
 * RL_REQ_FAMILY requests, whose start and end hooks say what they are),
 * quorum rounds, the watchdog mechanism, pub/sub wait queues and metrics.
 * This header names the pieces they have in common: the per-client state
 * (semaphore holds and the watchdog that renews them), handles on an
 * object's keys, posting a request and waiting for it, and sleeping until
 * a channel's message or a timer. Loop thread only, save the posting
 * calls.
 */
#ifndef RL_FAMILY_H
#define RL_FAMILY_H

#include <stdint.h>

#include "client.h"
#include "list.h"
#include "lock.h"
#include "round.h"

struct rl_psw;

/* Per client, made on first use (rl_family_get). */
typedef struct rl_family {
  rl_client *c;
  rl_holds permits;     /* semaphore holds by (":s" key, owner): sem_hold.h */
  rl_watchdog watchdog; /* renews the permits of RLOCK_WATCHDOG holds */
  int watchdog_open;    /* its timer is a handle of the loop */
  /* Set by the semaphores with their first hold (sem_hold.c): gives back
   * every permit still held and forgets the holds, at shutdown. */
  void (*close_all)(rl_client *c, struct rl_family *f);
  /* The elections observed (election.c), and what ends them at shutdown,
   * set with the first. */
  rl_list watches;
  void (*close_watches)(struct rl_family *f);
} rl_family;

/* The client's family state, made on first use; NULL when out of memory
 * or once the client shuts down. */
rl_family *rl_family_get(rl_client *c);

/* The family's watchdog, started on first use with due as its renewal
 * routine (the semaphores', sem_renew.c); NULL when out of memory. */
rl_watchdog *rl_family_watchdog(rl_client *c, rl_watchdog_due_cb due);

/* Client shutdown (the client's shutdown hook, client.h, set in
 * lib/api/open.c), after every request finished: gives back
 * every semaphore permit still held (written before the connections
 * close), forgets the holds and closes the watchdog. */
void rl_family_shutdown(rl_client *c);

/*
 * An internal handle on the keys of an object called name: key
 * "<prefix>{<name>}<suffix>", fence key + ":fence", channel key + ":ch".
 * It is an ordinary lock handle, so that requests, rounds and refcounts
 * take it unchanged; it is never locked, and has no kind (kind.h: NULL),
 * since only RL_REQ_FAMILY requests, whose start and end hooks are the
 * object's own, ever run on it. 0, RLOCK_EINVAL for a bad name,
 * or RLOCK_ENOMEM.
 */
int rl_object_new(rl_client *c, const char *name, const char *suffix,
                  rlock **out);

/* Posts req (kind, start and end set) as the calling thread's and waits;
 * with owner_is_thread 0, as the async owner's (a query). */
int rl_fam_call(rlock *obj, rl_req *req, int owner_is_thread, uint64_t owner);

/* Posts req (allocated: an async request, freed after cb) as the async
 * owner's; cb runs on the loop thread with arg. 0, or an error and req is
 * freed. */
int rl_fam_post(rlock *obj, rl_req *req, uint64_t owner, rlock_cb cb,
                void *arg);

/* The monotonic deadline of a wait of wait_ms (RLOCK_WAIT_FOREVER:
 * RL_FOREVER). */
uint64_t rl_fam_deadline(int64_t wait_ms);


/* A random id of 32 hex digits (and a NUL) in out[33]. */
void rl_fam_random_id(char out[33]);

/* The quorum-th largest (desc 1) or smallest (desc 0) of v[0..n); n is at
 * least the quorum. */
int64_t rl_fam_quorum_value(int64_t *v, int n, int quorum, int desc);

/*
 * A request's sleep between attempts: in a channel's wait queue
 * (RLOCK_WAIT_PUBSUB; pubsub/waitq.h), woken by a message or at the end
 * of the sleep, or on a plain timer (RLOCK_WAIT_POLL, or no channel).
 * retry(req) runs when the sleep ends; never inside these calls.
 */
typedef struct rl_fwait {
  struct rl_psw *psw;
  const char *channel; /* the queue's channel (the request keeps it) */
  uv_timer_t *timer;
  rl_req *req;
  void (*retry)(rl_req *req);
  atomic_int_fast64_t *gauge; /* a waiters metric, counted while queued */
} rl_fwait;

/* Sleeps for at most ms on channel (NULL: a timer), joining its queue the
 * first time or moving to it from another; 0, or RLOCK_ENOMEM. */
int rl_fwait_sleep(rl_fwait *w, rl_req *req, const char *channel,
                   size_t len, uint64_t ms, void (*retry)(rl_req *),
                   atomic_int_fast64_t *gauge);

/* Leaves the queue and stops the timer. may_pass: hand on a wake this
 * waiter got and did not use (see rl_psw_leave). */
void rl_fwait_leave(rl_fwait *w, int may_pass);

/* The command argument vector being built for a round: pointers into the
 * caller's strings and numbers formatted into a pool. */
typedef struct rl_args {
  int argc, cap;
  const char **argv;
  size_t *len;
  long *off;  /* >= 0: the argument is in the pool at this offset */
  char *pool;
  size_t used, pool_cap;
  int oom;
} rl_args;

void rl_args_init(rl_args *a);
void rl_args_free(rl_args *a);
/* Appends a string (kept by the caller until the round is made). */
void rl_args_str(rl_args *a, const char *s, size_t len);
/* Appends a number, formatted into the pool. */
void rl_args_i64(rl_args *a, int64_t v);
/* Appends the master-clock deadline placeholder (round.h). */
void rl_args_deadline(rl_args *a);
/* The round for the arguments (NULL when out of memory). */
rl_round *rl_args_round(rl_args *a, rl_client *c, const rl_round_ops *ops,
                        void *data, int script);

#endif
