/*
 * Integration tests of the reentrant lock against one real redis-server:
 * mutual exclusion across threads, reentrancy, ownership, leases, queries,
 * argument checks, NOSCRIPT recovery, a password-protected master, and
 * the async API on a caller's libuv loop.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common.h"

static rt_redis srv[1];

/* --- mutual exclusion across threads --------------------------------- */

#define THREADS 8
#define ROUNDS 60

typedef struct {
  rlock *lock;
  volatile long *counter;
  int errors;
  uint64_t last_token;
  int token_regressions;
} worker_arg;

static void *worker(void *p) {
  worker_arg *a = p;
  for (int i = 0; i < ROUNDS; i++) {
    if (rlock_lock(a->lock, 10000) != 0) {
      a->errors++;
      continue;
    }
    long v = *a->counter; /* a deliberately non-atomic increment */
    if (i % 8 == 0) rt_sleep_ms(1);
    *a->counter = v + 1;
    if (rlock_unlock(a->lock) != 0) a->errors++;
  }
  return NULL;
}

static void threads_exclusive(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "threads", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0); /* wait for the connection */
  RT_REQUIRE(rlock_unlock(l) == 0);
  volatile long counter = 0;
  pthread_t th[THREADS];
  worker_arg args[THREADS];
  for (int i = 0; i < THREADS; i++) {
    args[i] = (worker_arg){.lock = l, .counter = &counter};
    pthread_create(&th[i], NULL, worker, &args[i]);
  }
  int errors = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    errors += args[i].errors;
  }
  RT_CHECK_EQ_INT(errors, 0);
  RT_CHECK_EQ_INT(counter, THREADS * ROUNDS);
  RT_CHECK_EQ_INT(rlock_is_locked(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- reentrancy and ownership ------------------------------------------ */

typedef struct {
  rlock *lock;
  int unlock_rc, held_rc, count_rc, relock_rc;
} other_arg;

static void *other_thread(void *p) {
  other_arg *a = p;
  a->unlock_rc = rlock_unlock(a->lock);
  a->held_rc = rlock_is_held_by_current_thread(a->lock);
  a->count_rc = rlock_hold_count(a->lock);
  a->relock_rc = rlock_trylock(a->lock, 0, 5000);
  return NULL;
}

static void reentrancy(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "reentrant", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  uint64_t t1 = 0, t2 = 0;
  RT_CHECK(rlock_fencing_token(l, &t1) == 0);
  RT_CHECK(rlock_lock(l, 10000) == 0);
  RT_CHECK(rlock_trylock(l, 0, 10000) == 0);
  RT_CHECK_EQ_INT(rlock_hold_count(l), 3);
  RT_CHECK(rlock_fencing_token(l, &t2) == 0);
  RT_CHECK(t1 == t2); /* reentrant holds keep the holder's token */
  RT_CHECK(t1 > 0);
  /* Redis agrees: the owner's field holds 3. */
  char key[64];
  snprintf(key, sizeof key, "rlock:{reentrant}");
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "HLEN %s", key), 1);
  redisReply *r = rt_redis_cmd(&srv[0], "HVALS %s", key);
  RT_REQUIRE(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
  RT_CHECK(strcmp(r->element[0]->str, "3") == 0);
  freeReplyObject(r);

  /* Another thread is not the owner: it cannot unlock, and the lock
   * stays held. */
  other_arg oa = {.lock = l};
  pthread_t th;
  pthread_create(&th, NULL, other_thread, &oa);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(oa.unlock_rc, RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(oa.held_rc, 0);
  RT_CHECK_EQ_INT(oa.count_rc, 0);
  RT_CHECK_EQ_INT(oa.relock_rc, RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_is_locked(l), 1);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(l), 1);

  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK_EQ_INT(rlock_hold_count(l), 1);
  RT_CHECK_EQ_INT(rlock_is_locked(l), 1);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK_EQ_INT(rlock_is_locked(l), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(l), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ENOTOWNER);
  uint64_t t3;
  RT_CHECK_EQ_INT(rlock_fencing_token(l, &t3), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS %s", key), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- leases -------------------------------------------------------------- */

static void lease_expires(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "lease", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 300) == 0);
  int64_t ms = 0;
  RT_CHECK(rlock_remaining_lease(l, &ms) == 0);
  RT_CHECK(ms > 0 && ms <= 300);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{lease}");
  RT_CHECK(pttl > 0 && pttl <= 300);
  /* Another client can take it once the lease has run out, and not
   * before. */
  rlock_client *c2 = rt_client(srv, 1, 1000);
  RT_REQUIRE(c2 != NULL);
  rlock *l2;
  RT_REQUIRE(rlock_get(c2, "lease", &l2) == 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK(rlock_trylock(l2, 5000, 10000) == 0);
  uint64_t waited = rt_now_ms() - t0;
  RT_CHECK(waited >= 150); /* it was held for most of the 300 ms lease */
  RT_CHECK(waited < 4000);
  /* The first owner lost it: its unlock says so and leaves l2's hold. */
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rlock_is_locked(l2), 1);
  RT_CHECK(rlock_unlock(l2) == 0);
  RT_CHECK(rlock_remaining_lease(l2, &ms) == 0);
  RT_CHECK_EQ_INT(ms, -2);
  rlock_free(l2);
  rlock_client_close(c2);
  rlock_free(l);
  rlock_client_close(c);
}

static void watchdog_lease(void) {
  /* Until the watchdog lands, RLOCK_WATCHDOG means "the watchdog timeout
   * as the lease". */
  const char *m[] = {srv[0].url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.watchdog_timeout_ms = 7000;
  rlock_client *c;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "wd", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{wd}");
  RT_CHECK(pttl > 6000 && pttl <= 7000);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- fencing tokens ------------------------------------------------------ */

static void tokens_increase(void) {
  rlock_client *a = rt_client(srv, 1, 1000), *b = rt_client(srv, 1, 1000);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "fenced", &la) == 0);
  RT_REQUIRE(rlock_get(b, "fenced", &lb) == 0);
  uint64_t prev = 0;
  for (int i = 0; i < 20; i++) {
    rlock *l = i % 2 ? lb : la;
    RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
    uint64_t t;
    RT_CHECK(rlock_fencing_token(l, &t) == 0);
    RT_CHECK(t > prev);
    prev = t;
    RT_CHECK(rlock_unlock(l) == 0);
  }
  /* The counter survives its lock and has a TTL (no immortal keys). */
  long long fttl = rt_redis_int(&srv[0], "PTTL rlock:{fenced}:fence");
  RT_CHECK(fttl > 0);
  /* Even if the counter is lost, the next token is larger. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "DEL rlock:{fenced}:fence"), 1);
  RT_REQUIRE(rlock_trylock(la, 0, 5000) == 0);
  uint64_t t;
  RT_CHECK(rlock_fencing_token(la, &t) == 0);
  RT_CHECK(t > prev);
  RT_CHECK(rlock_unlock(la) == 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* --- bad input ----------------------------------------------------------- */

static void bad_arguments(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l = NULL;
  RT_CHECK(rlock_get(c, "", &l) == RLOCK_EINVAL && l == NULL);
  RT_CHECK(rlock_get(c, "a{b}", &l) == RLOCK_EINVAL && l == NULL);
  RT_CHECK(rlock_get(c, NULL, &l) == RLOCK_EINVAL);
  RT_CHECK(rlock_get(NULL, "x", &l) == RLOCK_EINVAL);
  RT_CHECK(rlock_get(c, "x", NULL) == RLOCK_EINVAL);
  RT_REQUIRE(rlock_get(c, "args", &l) == 0);
  RT_CHECK(rlock_trylock(l, -5, 1000) == RLOCK_EINVAL);
  RT_CHECK(rlock_trylock(l, 0, 0) == RLOCK_EINVAL);
  RT_CHECK(rlock_trylock(l, 0, -7) == RLOCK_EINVAL);
  RT_CHECK(rlock_lock(l, 0) == RLOCK_EINVAL);
  RT_CHECK(rlock_trylock(NULL, 0, 1000) == RLOCK_EINVAL);
  RT_CHECK(rlock_remaining_lease(l, NULL) == RLOCK_EINVAL);
  RT_CHECK(rlock_fencing_token(l, NULL) == RLOCK_EINVAL);
  RT_CHECK(rlock_lock_async(l, 1, 0, 1000, NULL, NULL) == RLOCK_EINVAL);
  RT_CHECK(rlock_unlock_async(NULL, 1, NULL, NULL) == RLOCK_EINVAL);
  /* Longer than the deployment's longest lease (max_lease_ms, 60 s by
   * default), and said why. */
  RT_CHECK(rlock_trylock(l, 0, 60001) == RLOCK_EINVAL);
  char why[256];
  rlock_client_last_error(c, why, sizeof why);
  RT_CHECK(strstr(why, "max_lease_ms") != NULL);
  /* Nothing was written by any of that. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{args}"), 0);
  RT_CHECK_EQ_INT(rt_redis_dbsize(&srv[0]) >= 0, 1);

  rlock_options o;
  rlock_options_init(&o);
  rlock_client *bad = (rlock_client *)&o;
  RT_CHECK(rlock_client_open(&bad, &o) == RLOCK_EINVAL && bad == NULL);
  const char *m[] = {"not a url"};
  o.masters = m;
  o.nmasters = 1;
  RT_CHECK(rlock_client_open(&bad, &o) == RLOCK_EINVAL);
  /* A name that does not resolve is a master that is down: the client
   * opens, and a call says no quorum. */
  const char *m2[] = {"no-such-host.invalid:6379"};
  o.masters = m2;
  RT_CHECK(rlock_client_open(&bad, &o) == 0);
  if (bad != NULL) {
    rlock *nl;
    RT_CHECK(rlock_get(bad, "args", &nl) == 0);
    RT_CHECK_EQ_INT(rlock_trylock(nl, 0, 5000), RLOCK_ENOQUORUM);
    rlock_free(nl);
    rlock_client_close(bad);
  }
  RT_CHECK(rlock_client_open(NULL, &o) == RLOCK_EINVAL);
  RT_CHECK(rlock_client_open(&bad, NULL) == RLOCK_EINVAL);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- NOSCRIPT ------------------------------------------------------------ */

static void noscript_recovery(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "noscript", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  redisReply *r = rt_redis_cmd(&srv[0], "SCRIPT FLUSH");
  RT_REQUIRE(r != NULL && r->type == REDIS_REPLY_STATUS);
  freeReplyObject(r);
  RT_CHECK(rlock_trylock(l, 0, 5000) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{noscript}"), 1);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{noscript}"), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- password ------------------------------------------------------------ */

static void password_master(void) {
  rt_redis p;
  RT_REQUIRE(rt_redis_start(&p, "hunter2") == 0);
  rlock_client *c = rt_client(&p, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "secret", &l) == 0);
  RT_CHECK(rlock_trylock(l, 0, 5000) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&p, "EXISTS rlock:{secret}"), 1);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);

  /* A wrong password is an error reply, not a hang: EREDIS or, once the
   * connection is dropped, no quorum, with the server's text kept. */
  char url[128];
  snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", p.port);
  const char *m[] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_REQUIRE(rlock_get(c, "secret", &l) == 0);
  uint64_t t0 = rt_now_ms();
  int rc = rlock_trylock(l, 1000, 5000);
  RT_CHECK(rc == RLOCK_EREDIS || rc == RLOCK_ENOQUORUM);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  RT_CHECK_EQ_INT(rt_redis_int(&p, "EXISTS rlock:{secret}"), 0);
  if (rc == RLOCK_EREDIS) {
    char buf[128];
    RT_CHECK(rlock_client_last_error(c, buf, sizeof buf) > 0);
    RT_CHECK(strstr(buf, "NOAUTH") != NULL || strstr(buf, "WRONGPASS") != NULL);
  }
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&p);
}

/* --- async on a caller's loop -------------------------------------------- */

typedef struct {
  int step;
  int statuses[8];
  uint64_t token;
  int token_rc, count_on_loop, blocking_rc;
  rlock *lock;
  rlock *other;
  rlock_client *client;
} async_state;

static void async_cb(rlock *lock, int status, void *arg);

static void async_next(async_state *s) {
  switch (s->step) {
    case 0: rlock_lock_async(s->lock, 7, 5000, 5000, async_cb, s); break;
    case 1: rlock_lock_async(s->lock, 7, 0, 5000, async_cb, s); break;
    case 2:
      /* Owner 8 is someone else: one attempt fails. */
      rlock_lock_async(s->other, 8, 0, 5000, async_cb, s);
      break;
    case 3: rlock_unlock_async(s->lock, 7, async_cb, s); break;
    case 4: rlock_unlock_async(s->lock, 7, async_cb, s); break;
    case 5: rlock_unlock_async(s->lock, 7, async_cb, s); break;
    default: rlock_client_close(s->client); break;
  }
}

static void async_cb(rlock *lock, int status, void *arg) {
  async_state *s = arg;
  (void)lock;
  s->statuses[s->step] = status;
  if (s->step == 1) {
    s->token_rc = rlock_owner_fencing_token(s->lock, 7, &s->token);
    s->count_on_loop = rlock_owner_hold_count(s->lock, 7);
    /* A blocking call here would deadlock; it must refuse instead. */
    s->blocking_rc = rlock_trylock(s->lock, 0, 1000);
  }
  s->step++;
  async_next(s);
}

static void async_caller_loop(void) {
  uv_loop_t loop;
  RT_REQUIRE(uv_loop_init(&loop) == 0);
  const char *m[] = {srv[0].url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.loop = &loop;
  o.master_timeout_ms = 1000;
  async_state s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_client_open(&s.client, &o) == 0);
  RT_REQUIRE(rlock_get(s.client, "async", &s.lock) == 0);
  RT_REQUIRE(rlock_get(s.client, "async", &s.other) == 0);
  async_next(&s);
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once the client has closed */
  RT_CHECK_EQ_INT(s.step, 6);
  RT_CHECK_EQ_INT(s.statuses[0], 0);
  RT_CHECK_EQ_INT(s.statuses[1], 0);
  RT_CHECK_EQ_INT(s.statuses[2], RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(s.statuses[3], 0);
  RT_CHECK_EQ_INT(s.statuses[4], 0);
  RT_CHECK_EQ_INT(s.statuses[5], RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(s.token_rc, 0);
  RT_CHECK(s.token > 0);
  RT_CHECK_EQ_INT(s.count_on_loop, 2);
  RT_CHECK_EQ_INT(s.blocking_rc, RLOCK_EDEADLK);
  /* After close, handles answer ECLOSED and can still be freed. */
  RT_CHECK_EQ_INT(rlock_lock_async(s.lock, 7, 0, 1000, async_cb, &s),
                  RLOCK_ECLOSED);
  rlock_free(s.lock);
  rlock_free(s.other);
  RT_CHECK(uv_loop_close(&loop) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{async}"), 0);
}

/* --- close wakes waiters -------------------------------------------------- */

typedef struct {
  rlock *lock;
  int rc;
} waiter_arg;

static void *blocked_waiter(void *p) {
  waiter_arg *a = p;
  a->rc = rlock_lock(a->lock, 5000);
  return NULL;
}

static void close_wakes(void) {
  rlock_client *holder = rt_client(srv, 1, 1000), *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(holder != NULL && c != NULL);
  rlock *hl, *l;
  RT_REQUIRE(rlock_get(holder, "closing", &hl) == 0);
  RT_REQUIRE(rlock_get(c, "closing", &l) == 0);
  RT_REQUIRE(rlock_trylock(hl, 0, 30000) == 0);
  waiter_arg wa = {.lock = l, .rc = 99};
  pthread_t th;
  pthread_create(&th, NULL, blocked_waiter, &wa);
  rt_sleep_ms(200);
  rlock_client_close(c);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(wa.rc, RLOCK_ECLOSED);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 1000), RLOCK_ECLOSED);
  rlock_free(l);
  RT_CHECK(rlock_unlock(hl) == 0);
  rlock_free(hl);
  rlock_client_close(holder);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"threads_exclusive", threads_exclusive},
      {"reentrancy", reentrancy},
      {"lease_expires", lease_expires},
      {"watchdog_lease", watchdog_lease},
      {"tokens_increase", tokens_increase},
      {"bad_arguments", bad_arguments},
      {"noscript_recovery", noscript_recovery},
      {"password_master", password_master},
      {"async_caller_loop", async_caller_loop},
      {"close_wakes", close_wakes},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
