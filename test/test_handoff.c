/*
 * Integration tests of the hand-off in one round trip (lib/lock/transfer.c):
 * the last unlock of a reentrant lock that a thread or async owner of the
 * same client waits for gives the lock to that waiter in the unlock's own
 * script. What is checked, against real redis-servers:
 *  - the transfer happens: the waiter holds the lock, the old owner does
 *    not, the fencing token grew, the TTL is the waiter's lease, the
 *    watchdog renews the new hold, and no unlock message was published (a
 *    raw subscriber on the lock's channel hears none: the lock was never
 *    free; a plain unlock publishes one);
 *  - an async owner as the waiter;
 *  - a reentrant holder releasing one of two holds hands nothing over;
 *  - N = 3 with one master stopped during the transfer: granted on the
 *    majority; with two stopped: not granted, undone, the waiter waits on
 *    and gets the lock later, nothing left behind;
 *  - a waiter cancelled, or timed out, while its transfer is in flight
 *    leaves no lock behind;
 *  - a waiter of another client, woken by messages only, gets the lock
 *    while two threads of one client hand it back and forth, also while
 *    another lock of that client, whose channel would share a hashed
 *    entry with this one's, is busy with messages.
 * No timing is asserted but bounds that catch hangs.
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "common.h"

#define MT 1000 /* master timeout */
#define LEASE 30000

static rt_redis srv[3];

static int under_valgrind(void) {
  const char *pre = getenv("LD_PRELOAD");
  return pre != NULL && strstr(pre, "vgpreload") != NULL;
}

/* How long a waiter that just joined its wait queue needs to finish the
 * attempt its subscription's confirmation starts, and sleep. */
static int settle_ms(void) { return under_valgrind() ? 2000 : 400; }

static rlock_client *open_client(int n, int64_t watchdog_ms) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = MT;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.wait_strategy = RLOCK_WAIT_PUBSUB;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  rlock_client *c = rt_client_opts(srv, n, &o);
  if (c != NULL && rlock_client_wait_ready(c, 10000) != 0) {
    rlock_client_close(c);
    c = NULL;
  }
  return c;
}

/* --- a raw subscriber: how many unlock messages a channel carried ------- */

static redisContext *listen_on(rt_redis *r, const char *channel) {
  redisContext *s = redisConnect("127.0.0.1", r->port);
  if (s == NULL || s->err) {
    if (s) redisFree(s);
    return NULL;
  }
  redisReply *rep = redisCommand(s, "SUBSCRIBE %s", channel);
  if (rep == NULL) {
    redisFree(s);
    return NULL;
  }
  freeReplyObject(rep);
  return s;
}

/* The messages that came, reading until none came for wait_ms; frees s. */
static int messages(redisContext *s, int wait_ms) {
  struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
  redisSetTimeout(s, tv);
  int n = 0;
  redisReply *rep;
  while (redisGetReply(s, (void **)&rep) == REDIS_OK && rep != NULL) {
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
        strcmp(rep->element[0]->str, "message") == 0)
      n++;
    freeReplyObject(rep);
  }
  redisFree(s);
  return n;
}

/* The number of fields of a lock's hash on a master, and the count in its
 * only field (0 if not exactly one). */
static int fields(rt_redis *r, const char *key, long long *count) {
  redisReply *rep = rt_redis_cmd(r, "HGETALL %s", key);
  int n = -1;
  *count = 0;
  if (rep != NULL && rep->type == REDIS_REPLY_ARRAY) {
    n = (int)rep->elements / 2;
    if (n == 1) *count = atoll(rep->element[1]->str);
  }
  if (rep) freeReplyObject(rep);
  return n;
}

static int key_gone_everywhere(int n, const char *key, int timeout_ms) {
  uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;
  for (;;) {
    int gone = 1;
    for (int i = 0; i < n; i++)
      if (rt_redis_int(&srv[i], "EXISTS %s", key) != 0) gone = 0;
    if (gone) return 1;
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(10);
  }
}

static long long numsub(rt_redis *r, const char *channel) {
  redisReply *rep = rt_redis_cmd(r, "PUBSUB NUMSUB %s", channel);
  long long v = -1;
  if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
    v = rep->element[1]->integer;
  if (rep != NULL) freeReplyObject(rep);
  return v;
}

/* Waits until the client's waiter subscribed the channel on master 0
 * (beside the test's own subscriber: want in all), then until it sleeps
 * between attempts. */
static int waiter_queued(const char *channel, long long want) {
  uint64_t end = rt_now_ms() + 10000;
  while (numsub(&srv[0], channel) < want) {
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(5);
  }
  rt_sleep_ms(settle_ms());
  return 1;
}

/* --- a thread that waits ------------------------------------------------ */

typedef struct {
  rlock *lock;
  int64_t wait_ms, lease_ms;
  int rc;
  uint64_t token;
  int is_held_after;
  int hold_after;
  atomic_int got;     /* the fields above are written */
  atomic_int release; /* set by the test: unlock and return */
  int unlock_rc;
} waiter_arg;

static void *waiter(void *p) {
  waiter_arg *a = p;
  a->rc = rlock_trylock(a->lock, a->wait_ms, a->lease_ms);
  if (a->rc != 0) atomic_store(&a->got, 1);
  if (a->rc == 0) {
    rlock_fencing_token(a->lock, &a->token);
    a->is_held_after = rlock_is_held_by_current_thread(a->lock);
    a->hold_after = rlock_hold_count(a->lock);
    atomic_store(&a->got, 1);
    while (!atomic_load(&a->release)) rt_sleep_ms(5);
    a->unlock_rc = rlock_unlock(a->lock);
  }
  return NULL;
}

/* Thread to thread, N = 1: the transfer happens. */
static void threads_n1(void) {
  rlock_client *c = open_client(1, 1500);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ho-threads", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, LEASE) == 0);
  uint64_t t0 = 0;
  RT_CHECK(rlock_fencing_token(l, &t0) == 0);
  redisContext *sub = listen_on(&srv[0], "rlock:{ho-threads}:ch");
  RT_REQUIRE(sub != NULL);
  /* The waiter asks for the watchdog: 1.5 s, renewed every 0.5 s. */
  waiter_arg w = {.lock = l, .wait_ms = 20000, .lease_ms = RLOCK_WATCHDOG};
  pthread_t th;
  pthread_create(&th, NULL, waiter, &w);
  RT_CHECK(waiter_queued("rlock:{ho-threads}:ch", 2));
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(l), 0);
  uint64_t end = rt_now_ms() + 10000;
  while (!atomic_load(&w.got) && rt_now_ms() < end) rt_sleep_ms(5);
  RT_REQUIRE(atomic_load(&w.got));
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK(w.token > t0);
  RT_CHECK_EQ_INT(w.is_held_after, 1);
  RT_CHECK_EQ_INT(w.hold_after, 1);
  long long count;
  RT_CHECK_EQ_INT(fields(&srv[0], "rlock:{ho-threads}", &count), 1);
  RT_CHECK_EQ_INT(count, 1);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{ho-threads}");
  RT_CHECK(pttl > 0 && pttl <= 1500);
  /* Nobody published: the lock was never free. */
  RT_CHECK_EQ_INT(messages(sub, 200), 0);
  /* Three periods later the watchdog has kept it. */
  rt_sleep_ms(4500);
  pttl = rt_redis_int(&srv[0], "PTTL rlock:{ho-threads}");
  RT_CHECK(pttl > 0);
  RT_CHECK_EQ_INT(fields(&srv[0], "rlock:{ho-threads}", &count), 1);
  atomic_store(&w.release, 1);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{ho-threads}"), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* The contrast, which makes the message count above mean something: a
 * plain unlock (nobody of this client waits) publishes one. */
static void plain_unlock_publishes(void) {
  rlock_client *c = open_client(1, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ho-plain", &l) == 0);
  redisContext *sub = listen_on(&srv[0], "rlock:{ho-plain}:ch");
  RT_REQUIRE(sub != NULL);
  RT_REQUIRE(rlock_trylock(l, 0, LEASE) == 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK_EQ_INT(messages(sub, 300), 1);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- async owners ------------------------------------------------------- */

typedef struct {
  atomic_int done;
  atomic_int status;
} async_result;

static void on_done(rlock *lock, int status, void *arg) {
  (void)lock;
  async_result *r = arg;
  atomic_store(&r->status, status);
  atomic_store(&r->done, 1);
}

static int wait_done(async_result *r, int timeout_ms) {
  uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;
  while (!atomic_load(&r->done)) {
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(2);
  }
  return 1;
}

/* A thread holds, an async owner waits: the transfer grants it. */
static void async_waiter_n1(void) {
  rlock_client *c = open_client(1, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ho-async", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, LEASE) == 0);
  uint64_t t0 = 0, t1 = 0;
  rlock_fencing_token(l, &t0);
  redisContext *sub = listen_on(&srv[0], "rlock:{ho-async}:ch");
  RT_REQUIRE(sub != NULL);
  async_result r = {0};
  RT_REQUIRE(rlock_lock_async(l, 7, 20000, 12000, on_done, &r) == 0);
  RT_CHECK(waiter_queued("rlock:{ho-async}:ch", 2));
  RT_CHECK_EQ_INT(atomic_load(&r.done), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_REQUIRE(wait_done(&r, 10000));
  RT_CHECK_EQ_INT(atomic_load(&r.status), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 7), 1);
  RT_CHECK_EQ_INT(rlock_hold_count(l), 0);
  RT_CHECK(rlock_owner_fencing_token(l, 7, &t1) == 0 && t1 > t0);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{ho-async}");
  RT_CHECK(pttl > 10000 && pttl <= 12000);
  RT_CHECK_EQ_INT(messages(sub, 200), 0);
  async_result u = {0};
  RT_REQUIRE(rlock_unlock_async(l, 7, on_done, &u) == 0);
  RT_REQUIRE(wait_done(&u, 10000));
  RT_CHECK_EQ_INT(atomic_load(&u.status), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{ho-async}"), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* A reentrant holder releasing one of two holds hands nothing over. */
static void reentrant_keeps(void) {
  rlock_client *c = open_client(1, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ho-reent", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, LEASE) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, LEASE) == 0);
  async_result r = {0};
  RT_REQUIRE(rlock_lock_async(l, 9, 20000, LEASE, on_done, &r) == 0);
  RT_CHECK(waiter_queued("rlock:{ho-reent}:ch", 1));
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rt_sleep_ms(settle_ms());
  RT_CHECK_EQ_INT(atomic_load(&r.done), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(l), 1);
  long long count;
  RT_CHECK_EQ_INT(fields(&srv[0], "rlock:{ho-reent}", &count), 1);
  RT_CHECK_EQ_INT(count, 1);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 9), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_REQUIRE(wait_done(&r, 10000));
  RT_CHECK_EQ_INT(atomic_load(&r.status), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 9), 1);
  async_result u = {0};
  RT_REQUIRE(rlock_unlock_async(l, 9, on_done, &u) == 0);
  RT_REQUIRE(wait_done(&u, 10000));
  rlock_free(l);
  rlock_client_close(c);
}

/* --- N = 3 with masters stopped during the transfer --------------------- */

/* Async owner 1 takes l (no wait) and holds it within 10 s; first must
 * live as long as the test (its callback writes it). */
static int owner1_takes(rlock *l, async_result *first) {
  if (rlock_lock_async(l, 1, 0, LEASE, on_done, first) != 0) return 0;
  uint64_t end = rt_now_ms() + 10000;
  while (rlock_owner_hold_count(l, 1) != 1 && rt_now_ms() < end)
    rt_sleep_ms(2);
  return rlock_owner_hold_count(l, 1) == 1;
}

/* One master stopped: the transfer is granted on the other two. */
static void one_stopped_n3(void) {
  rlock_client *c = open_client(3, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ho-q1", &l) == 0);
  async_result first = {0};
  RT_REQUIRE(owner1_takes(l, &first));
  uint64_t t0 = 0, t1 = 0;
  rlock_owner_fencing_token(l, 1, &t0);
  async_result r = {0};
  RT_REQUIRE(rlock_lock_async(l, 2, 30000, LEASE, on_done, &r) == 0);
  redisContext *sub = listen_on(&srv[0], "rlock:{ho-q1}:ch");
  RT_REQUIRE(sub != NULL);
  RT_CHECK(waiter_queued("rlock:{ho-q1}:ch", 2));
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  async_result u = {0};
  RT_REQUIRE(rlock_unlock_async(l, 1, on_done, &u) == 0);
  RT_REQUIRE(wait_done(&r, 10000));
  RT_CHECK_EQ_INT(atomic_load(&r.status), 0);
  RT_REQUIRE(wait_done(&u, 10000));
  RT_CHECK_EQ_INT(atomic_load(&u.status), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 2), 1);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 1), 0);
  RT_CHECK(rlock_owner_fencing_token(l, 2, &t1) == 0 && t1 > t0);
  RT_CHECK_EQ_INT(messages(sub, 200), 0); /* handed over, never free */
  for (int i = 0; i < 2; i++) {
    long long count;
    RT_CHECK_EQ_INT(fields(&srv[i], "rlock:{ho-q1}", &count), 1);
    RT_CHECK_EQ_INT(count, 1);
  }
  RT_CHECK(rt_redis_resume(&srv[2]) == 0);
  async_result v = {0};
  RT_REQUIRE(rlock_unlock_async(l, 2, on_done, &v) == 0);
  RT_REQUIRE(wait_done(&v, 10000));
  RT_CHECK_EQ_INT(atomic_load(&v.status), 0);
  /* The stopped master got the transfer late, past its deadline: it only
   * released; nothing is left anywhere. */
  RT_CHECK(key_gone_everywhere(3, "rlock:{ho-q1}", 10000));
  rlock_free(l);
  rlock_client_close(c);
}

/* Two masters stopped: granted on one only, so undone; the waiter waits
 * on and gets the lock once the masters are back. */
static void two_stopped_n3(void) {
  rlock_client *c = open_client(3, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ho-q2", &l) == 0);
  async_result first = {0};
  RT_REQUIRE(owner1_takes(l, &first));
  async_result r = {0};
  RT_REQUIRE(rlock_lock_async(l, 2, 60000, LEASE, on_done, &r) == 0);
  RT_CHECK(waiter_queued("rlock:{ho-q2}:ch", 1));
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  async_result u = {0};
  RT_REQUIRE(rlock_unlock_async(l, 1, on_done, &u) == 0);
  /* The unlock cannot reach a majority: it ends the hold, as a plain
   * unlock does, with no quorum. */
  RT_REQUIRE(wait_done(&u, 10000));
  RT_CHECK_EQ_INT(atomic_load(&u.status), RLOCK_ENOQUORUM);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 1), 0);
  /* The waiter's one grant was undone: master 0 has no lock of it once
   * its attempts (which cannot win either) are undone too. */
  rt_sleep_ms(2 * MT);
  RT_CHECK_EQ_INT(atomic_load(&r.done), 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_CHECK(rt_redis_resume(&srv[2]) == 0);
  RT_REQUIRE(wait_done(&r, 20000));
  RT_CHECK_EQ_INT(atomic_load(&r.status), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 2), 1);
  async_result v = {0};
  RT_REQUIRE(rlock_unlock_async(l, 2, on_done, &v) == 0);
  RT_REQUIRE(wait_done(&v, 10000));
  RT_CHECK_EQ_INT(atomic_load(&v.status), 0);
  RT_CHECK(key_gone_everywhere(3, "rlock:{ho-q2}", 10000));
  rlock_free(l);
  rlock_client_close(c);
}

/* The waiter gives up while its transfer is in flight (two masters
 * stopped): cancelled, or its deadline passes; either way the grants it
 * got, now and late, are undone. */
static void gives_up_n3(int cancel) {
  rlock_client *c = open_client(3, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  const char *key = cancel ? "rlock:{ho-cancel}" : "rlock:{ho-timeout}";
  RT_REQUIRE(rlock_get(c, cancel ? "ho-cancel" : "ho-timeout", &l) == 0);
  async_result first = {0};
  RT_REQUIRE(owner1_takes(l, &first));
  async_result r = {0};
  char chan[64];
  snprintf(chan, sizeof chan, "%s:ch", key);
  /* The timed-out waiter's wait ends while the transfer is out. */
  int64_t wait = cancel ? 60000 : settle_ms() + 300;
  RT_REQUIRE(rlock_lock_async(l, 2, wait, LEASE, on_done, &r) == 0);
  RT_CHECK(waiter_queued(chan, 1));
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  async_result u = {0};
  RT_REQUIRE(rlock_unlock_async(l, 1, on_done, &u) == 0);
  rt_sleep_ms(100);
  if (cancel) {
    RT_CHECK_EQ_INT(rlock_cancel_async(l, 2), 0);
    RT_REQUIRE(wait_done(&r, 10000));
    RT_CHECK_EQ_INT(atomic_load(&r.status), RLOCK_ECANCELED);
    /* Back within the transfer's deadline: the stopped masters grant it,
     * late; the undos queued behind take it back. */
    RT_CHECK(rt_redis_resume(&srv[1]) == 0);
    RT_CHECK(rt_redis_resume(&srv[2]) == 0);
  } else {
    RT_REQUIRE(wait_done(&r, 10000));
    RT_CHECK_EQ_INT(atomic_load(&r.status), RLOCK_ETIMEDOUT);
    RT_CHECK(rt_redis_resume(&srv[1]) == 0);
    RT_CHECK(rt_redis_resume(&srv[2]) == 0);
  }
  RT_REQUIRE(wait_done(&u, 10000));
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 2), 0);
  RT_CHECK(key_gone_everywhere(3, key, 10000));
  /* And stays gone: no late grant lands after the undos. */
  rt_sleep_ms(MT);
  RT_CHECK(key_gone_everywhere(3, key, 0));
  rlock_free(l);
  rlock_client_close(c);
}

static void cancelled_n3(void) { gives_up_n3(1); }
static void timed_out_n3(void) { gives_up_n3(0); }

/* --- another client's waiter -------------------------------------------- */

typedef struct {
  rlock *lock;
  atomic_int *stop;
  atomic_long rounds;
  int hold_ms; /* how long each hold lasts; 0 for 1 ms */
} pingpong_arg;

static void *pingpong(void *p) {
  pingpong_arg *a = p;
  while (!atomic_load(a->stop)) {
    if (rlock_trylock(a->lock, 5000, LEASE) != 0) continue;
    atomic_fetch_add(&a->rounds, 1);
    rt_sleep_ms(a->hold_ms > 0 ? a->hold_ms : 1);
    rlock_unlock(a->lock);
  }
  return NULL;
}

/* Two threads of client A hand the lock back and forth; a thread of
 * client B, which hears of unlocks only by message, still gets it. */
static void other_client_not_starved(void) {
  rlock_client *a = open_client(1, 0);
  rlock_client *b = open_client(1, 0);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "ho-fair", &la) == 0);
  RT_REQUIRE(rlock_get(b, "ho-fair", &lb) == 0);
  atomic_int stop = 0;
  pingpong_arg pa = {.lock = la, .stop = &stop};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, pingpong, &pa);
  rt_sleep_ms(300);
  waiter_arg w = {.lock = lb, .wait_ms = 30000, .lease_ms = LEASE};
  atomic_store(&w.release, 1);
  long before = atomic_load(&pa.rounds);
  waiter(&w);
  long during = atomic_load(&pa.rounds) - before;
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  fprintf(stderr, "  client B waited through %ld hand-offs of client A\n",
          during);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* --- the bound is per lock ----------------------------------------------- */

/* FNV-1a of a channel name, modulo 64: a table of 64 counts indexed by it
 * would put two names with the same value in one entry. */
static unsigned entry64(const char *name) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = name; *p != '\0'; p++) {
    h ^= (unsigned char)*p;
    h *= 1099511628211ull;
  }
  return (unsigned)(h % 64);
}

typedef struct {
  rlock *lock;
  atomic_int *stop;
} busy_arg;

/* Takes the lock and lets it go at once, again and again. */
static void *busy(void *p) {
  busy_arg *a = p;
  while (!atomic_load(a->stop))
    if (rlock_trylock(a->lock, 5000, LEASE) == 0) rlock_unlock(a->lock);
  return NULL;
}

/*
 * Two threads of client A hand lock P back and forth. Lock Q's channel
 * would share an entry of a 64-entry table of counts with P's, and Q is
 * busy: a thread of client A waits for it and takes it in turn with
 * client B, so messages on Q's channel come all the time, and a plain
 * unlock of Q by client A ends Q's run too. None of that is about P: a
 * waiter of client C on P still gets it, because after a bounded number
 * of hand-offs P is unlocked plainly and its message wakes C's waiter.
 */
static void bound_per_lock(void) {
  const char *pname = "ho-bound";
  char pch[64], qname[32], qch[64];
  snprintf(pch, sizeof pch, "rlock:{%s}:ch", pname);
  int found = 0;
  for (int i = 0; i < 100000 && !found; i++) {
    snprintf(qname, sizeof qname, "ho-busy-%d", i);
    snprintf(qch, sizeof qch, "rlock:{%s}:ch", qname);
    found = entry64(qch) == entry64(pch);
  }
  RT_REQUIRE(found);
  fprintf(stderr, "  %s and %s share entry %u of 64\n", pch, qch,
          entry64(pch));
  rlock_client *a = open_client(1, 0);
  rlock_client *b = open_client(1, 0);
  rlock_client *c = open_client(1, 0);
  RT_REQUIRE(a != NULL && b != NULL && c != NULL);
  rlock *pa, *qa, *qb, *pc;
  RT_REQUIRE(rlock_get(a, pname, &pa) == 0);
  RT_REQUIRE(rlock_get(a, qname, &qa) == 0);
  RT_REQUIRE(rlock_get(b, qname, &qb) == 0);
  RT_REQUIRE(rlock_get(c, pname, &pc) == 0);
  atomic_int stop = 0;
  /* Holds of 5 ms: a run of hand-offs lasts long enough for messages on
   * Q's channel to come within it, however the threads are scheduled. */
  pingpong_arg pp = {.lock = pa, .stop = &stop, .hold_ms = 5};
  busy_arg ba = {.lock = qa, .stop = &stop}, bb = {.lock = qb, .stop = &stop};
  pthread_t th[4];
  pthread_create(&th[0], NULL, busy, &ba);
  pthread_create(&th[1], NULL, busy, &bb);
  for (int i = 2; i < 4; i++) pthread_create(&th[i], NULL, pingpong, &pp);
  rt_sleep_ms(300);
  waiter_arg w = {.lock = pc, .wait_ms = 20000, .lease_ms = LEASE};
  atomic_store(&w.release, 1);
  long before = atomic_load(&pp.rounds);
  uint64_t t0 = rt_now_ms();
  waiter(&w);
  uint64_t waited = rt_now_ms() - t0;
  long during = atomic_load(&pp.rounds) - before;
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  fprintf(stderr,
          "  client C: %d after %llu ms, through %ld hand-offs of client A\n",
          w.rc, (unsigned long long)waited, during);
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  rlock_free(pa);
  rlock_free(qa);
  rlock_free(qb);
  rlock_free(pc);
  rlock_client_close(a);
  rlock_client_close(b);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"threads_n1", threads_n1},
      {"plain_unlock_publishes", plain_unlock_publishes},
      {"async_waiter_n1", async_waiter_n1},
      {"reentrant_keeps", reentrant_keeps},
      {"one_stopped_n3", one_stopped_n3},
      {"two_stopped_n3", two_stopped_n3},
      {"cancelled_n3", cancelled_n3},
      {"timed_out_n3", timed_out_n3},
      {"other_client_not_starved", other_client_not_starved},
      {"bound_per_lock", bound_per_lock},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
