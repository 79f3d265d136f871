/*
 * An abandoned acquisition's undo takes back exactly the grant it names,
 * and nothing else: never a hold its owner still has.
 *
 * An attempt that fails (no majority, a timeout, a refusal) is undone on
 * every master that granted it and on every master that had not answered
 * yet, because a grant may still land there. A master that had not
 * answered may instead refuse the attempt when it finally runs it (its
 * deadline passed, or another owner holds a lock of the set), or never
 * run it at all. Its undo must then change nothing, above all when the
 * owner already held the lock before the attempt: a failed re-entry, or a
 * lock_all over a set that contains a lock the caller holds.
 *
 * The integration tests stall real masters with SIGSTOP so that the
 * attempt is refused after the client gave up, then check what every
 * master holds and that another client cannot take the lock. The
 * script-level tests run the acquire and undo scripts of every kind in
 * the orders one master can see them: grant then undo, refusal then
 * undo, undo of a grant that never ran, re-entry after the undo, an undo
 * landing after a later grant of the same owner, and an unlock between.
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "scripts.h"

static rt_redis srv[3];

static long long exists_on(int i, const char *key) {
  return rt_redis_int(&srv[i], "EXISTS %s", key);
}

/* The number of fields of hash key on master i (0 when it is gone). */
static long long hlen_on(int i, const char *key) {
  return rt_redis_int(&srv[i], "HLEN %s", key);
}

/* Waits until master i has run everything queued to it before this call:
 * the client's commands sit on another connection, so a reply on ours
 * says nothing of them; a stalled master runs what it read in order once
 * resumed, within a few milliseconds, and 300 ms is far more. */
static void let_master_catch_up(int i) {
  (void)i;
  rt_sleep_ms(300);
}

/* --- a failed re-entry leaves the outer hold --------------------------- */

typedef int (*get_fn)(rlock_client *, const char *, rlock **);

/* A holds the lock (count 1); its re-entry fails because the master
 * stalls past the master timeout; once the master resumes, it runs the
 * re-entry after its deadline (refused) and then the undo. The outer hold
 * must stay on the master, another client must not get the lock (for the
 * read side: the write side), and A's unlock must release it. */
static void reentry_stalled_n1(get_fn get, get_fn other, const char *name,
                               const char *key) {
  rt_flush_all(srv, 3);
  rlock_client *a = rt_client(srv, 1, 200), *b = rt_client(srv, 1, 200);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(get(a, name, &la) == 0);
  RT_REQUIRE(other(b, name, &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 10000) == 0);
  RT_CHECK_EQ_INT(exists_on(0, key), 1);

  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  int rc = rlock_trylock(la, 0, 10000);
  RT_CHECK(rc == RLOCK_ENOQUORUM || rc == RLOCK_ETIMEDOUT);
  rt_sleep_ms(100); /* the attempt's deadline on the master has passed */
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  let_master_catch_up(0);

  /* What the failed re-entry leaves: the outer hold, on the master and
   * in the client. */
  RT_CHECK_EQ_INT(rlock_hold_count(la), 1);
  long long left = exists_on(0, key);
  if (left != 1) fprintf(stderr, "  %s: the outer hold is gone\n", key);
  RT_CHECK_EQ_INT(left, 1);
  int brc = rlock_trylock(lb, 0, 5000);
  if (brc == 0) {
    fprintf(stderr, "  %s: a second holder got it while A holds it\n", name);
    rlock_unlock(lb);
  }
  RT_CHECK_EQ_INT(brc, RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lb, 0, 5000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(lb), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void reentry_stalled_lock_n1(void) {
  reentry_stalled_n1(rlock_get, rlock_get, "ra", "rlock:{ra}");
}
static void reentry_stalled_fair_n1(void) {
  reentry_stalled_n1(rlock_get_fair, rlock_get, "rf", "rlock:{rf}");
}
static void reentry_stalled_read_n1(void) {
  reentry_stalled_n1(rlock_get_read, rlock_get_write, "rr", "rlock:{rr}:r");
}
static void reentry_stalled_write_n1(void) {
  reentry_stalled_n1(rlock_get_write, rlock_get_write, "rw", "rlock:{rw}:w");
}

/* N = 3: A holds the lock; two masters stall through its re-entry, which
 * cannot reach a majority; they run it late (refused) and then its undo.
 * The hold must stay on every master, and B must not get the lock. */
static void reentry_stalled_n3(void) {
  rt_flush_all(srv, 3);
  rlock_client *a = rt_client(srv, 3, 200), *b = rt_client(srv, 3, 200);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "r3", &la) == 0);
  RT_REQUIRE(rlock_get(b, "r3", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 10000) == 0);
  for (int i = 0; i < 3; i++)
    RT_CHECK_EQ_INT(rt_settle(exists_on, i, "rlock:{r3}", 1, 5000), 1);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  int rc = rlock_trylock(la, 0, 10000);
  RT_CHECK(rc == RLOCK_ENOQUORUM || rc == RLOCK_ETIMEDOUT);
  rt_sleep_ms(100);
  RT_REQUIRE(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  let_master_catch_up(1);
  RT_CHECK_EQ_INT(rlock_hold_count(la), 1);
  for (int i = 0; i < 3; i++) {
    long long e = exists_on(i, "rlock:{r3}");
    if (e != 1) fprintf(stderr, "  master %d lost the outer hold\n", i);
    RT_CHECK_EQ_INT(e, 1);
  }
  int brc = rlock_trylock(lb, 0, 5000);
  if (brc == 0) rlock_unlock(lb);
  RT_CHECK_EQ_INT(brc, RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* --- lock_all over a set that holds a lock already ----------------------- */

/* N = 1: A holds x1; another owner holds x2; the master stalls through
 * A's lock_all {x1, x2}, then refuses it (x2 is held, and the deadline
 * passed) and runs the undo. A's hold of x1 must stay. */
static void lock_all_held_stalled_n1(void) {
  rt_flush_all(srv, 3);
  rlock_client *a = rt_client(srv, 1, 200), *b = rt_client(srv, 1, 200);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *x[2], *bx1;
  RT_REQUIRE(rlock_get(a, "x1", &x[0]) == 0);
  RT_REQUIRE(rlock_get(a, "x2", &x[1]) == 0);
  RT_REQUIRE(rlock_get(b, "x1", &bx1) == 0);
  RT_REQUIRE(rlock_trylock(x[0], 0, 10000) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "HSET rlock:{x2} other:1 1"), 1);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "PEXPIRE rlock:{x2} 60000"), 1);

  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  int rc = rlock_lock_all(x, 2, 0, 10000);
  RT_CHECK(rc == RLOCK_ENOQUORUM || rc == RLOCK_ETIMEDOUT);
  rt_sleep_ms(100);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  let_master_catch_up(0);

  RT_CHECK_EQ_INT(rlock_hold_count(x[0]), 1);
  RT_CHECK_EQ_INT(rlock_hold_count(x[1]), 0);
  RT_CHECK_EQ_INT(exists_on(0, "rlock:{x1}"), 1);
  RT_CHECK_EQ_INT(hlen_on(0, "rlock:{x2}"), 1); /* the other owner's only */
  int brc = rlock_trylock(bx1, 0, 5000);
  if (brc == 0) {
    fprintf(stderr, "  x1: a second holder got it while A holds it\n");
    rlock_unlock(bx1);
  }
  RT_CHECK_EQ_INT(brc, RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock(x[0]), 0);
  RT_CHECK_EQ_INT(exists_on(0, "rlock:{x1}"), 0);
  rlock_free(x[0]);
  rlock_free(x[1]);
  rlock_free(bx1);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* N = 3, no timeout at all: A holds y1; another owner holds y2 on every
 * master; master 2 is stalled, so masters 0 and 1 refuse A's lock_all
 * {y1, y2} and decide it while master 2 has not answered. Master 2 gets
 * the undo behind the attempt, refuses the attempt when it resumes, and
 * must keep A's y1. */
static void lock_all_held_refused_n3(void) {
  rt_flush_all(srv, 3);
  rlock_client *a = rt_client(srv, 3, 5000);
  RT_REQUIRE(a != NULL);
  rlock *y[2];
  RT_REQUIRE(rlock_get(a, "y1", &y[0]) == 0);
  RT_REQUIRE(rlock_get(a, "y2", &y[1]) == 0);
  RT_REQUIRE(rlock_trylock(y[0], 0, 10000) == 0);
  for (int i = 0; i < 3; i++) {
    RT_CHECK_EQ_INT(rt_settle(exists_on, i, "rlock:{y1}", 1, 5000), 1);
    RT_CHECK_EQ_INT(rt_redis_int(&srv[i], "HSET rlock:{y2} other:1 1"), 1);
    RT_CHECK_EQ_INT(rt_redis_int(&srv[i], "PEXPIRE rlock:{y2} 60000"), 1);
  }
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  RT_CHECK_EQ_INT(rlock_lock_all(y, 2, 0, 10000), RLOCK_ETIMEDOUT);
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  let_master_catch_up(2);
  RT_CHECK_EQ_INT(rlock_hold_count(y[0]), 1);
  for (int i = 0; i < 3; i++) {
    long long e = exists_on(i, "rlock:{y1}");
    if (e != 1) fprintf(stderr, "  master %d lost A's hold of y1\n", i);
    RT_CHECK_EQ_INT(e, 1);
    RT_CHECK_EQ_INT(hlen_on(i, "rlock:{y2}"), 1);
  }
  RT_CHECK_EQ_INT(rlock_unlock(y[0]), 0);
  rlock_free(y[0]);
  rlock_free(y[1]);
  rlock_client_close(a);
}

/* N = 3, no fault: threads of three clients each take one of three
 * locks, then lock_all over that lock and another, which is often held
 * by someone else, so masters refuse the set and the round is decided
 * before the last master answers; its undo goes there. Per lock, the
 * holders inside their section are counted: never two. */
#define TL_LOCKS 3
#define TL_CLIENTS 3
#define TL_THREADS 2
static atomic_int tl_inside[TL_LOCKS];
static atomic_int tl_overlaps, tl_sections, tl_nested_failed;
static rlock_client *tl_client[TL_CLIENTS];
static uint64_t tl_end;

static void *tl_worker(void *arg) {
  intptr_t id = (intptr_t)arg;
  rlock_client *c = tl_client[id % TL_CLIENTS];
  static const char *const names[TL_LOCKS] = {"t0", "t1", "t2"};
  rlock *l[TL_LOCKS];
  for (int k = 0; k < TL_LOCKS; k++)
    if (rlock_get(c, names[k], &l[k]) != 0) return NULL;
  uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
  while (rt_now_ms() < tl_end) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    int i = (int)(seed % TL_LOCKS), j = (int)((seed >> 8) % (TL_LOCKS - 1));
    if (j >= i) j++;
    if (rlock_trylock(l[i], 50, 5000) != 0) continue;
    if (atomic_fetch_add(&tl_inside[i], 1) != 0)
      atomic_fetch_add(&tl_overlaps, 1);
    atomic_fetch_add(&tl_sections, 1);
    rlock *set[2] = {l[i], l[j]};
    if (rlock_lock_all(set, 2, 0, 5000) == 0) {
      rlock_unlock_all(set, 2);
    } else {
      atomic_fetch_add(&tl_nested_failed, 1);
    }
    rt_sleep_ms(1);
    atomic_fetch_sub(&tl_inside[i], 1);
    rlock_unlock(l[i]);
  }
  for (int k = 0; k < TL_LOCKS; k++) rlock_free(l[k]);
  return NULL;
}

static void lock_all_held_threads_n3(void) {
  rt_flush_all(srv, 3);
  for (int k = 0; k < TL_CLIENTS; k++) {
    tl_client[k] = rt_client(srv, 3, 1000);
    RT_REQUIRE(tl_client[k] != NULL);
  }
  atomic_store(&tl_overlaps, 0);
  atomic_store(&tl_sections, 0);
  atomic_store(&tl_nested_failed, 0);
  tl_end = rt_now_ms() + 5000;
  pthread_t th[TL_CLIENTS * TL_THREADS];
  for (intptr_t t = 0; t < TL_CLIENTS * TL_THREADS; t++)
    RT_REQUIRE(pthread_create(&th[t], NULL, tl_worker, (void *)t) == 0);
  for (int t = 0; t < TL_CLIENTS * TL_THREADS; t++) pthread_join(th[t], NULL);
  for (int k = 0; k < TL_CLIENTS; k++) rlock_client_close(tl_client[k]);
  fprintf(stderr, "  %d sections, %d failed lock_all over a held lock, "
          "%d overlapping sections\n", atomic_load(&tl_sections),
          atomic_load(&tl_nested_failed), atomic_load(&tl_overlaps));
  RT_CHECK(atomic_load(&tl_sections) > 0);
  RT_CHECK(atomic_load(&tl_nested_failed) > 0); /* the case was exercised */
  RT_CHECK_EQ_INT(atomic_load(&tl_overlaps), 0);
}

/* --- the orders one master can see, script by script --------------------- */

static redisContext *sconn;
static redisReply *last;

/* EVALSHA of script id on master 0 (loaded on first use): nkeys keys,
 * then the arguments, NULL-terminated. The reply is kept in last. */
static redisReply *evalsha(int id, int nkeys, const char *const *keys,
                           const char *const *args) {
  if (sconn == NULL) {
    struct timeval tv = {5, 0};
    sconn = redisConnectWithTimeout("127.0.0.1", srv[0].port, tv);
    if (sconn == NULL || sconn->err) return NULL;
    redisSetTimeout(sconn, tv);
  }
  if (last) freeReplyObject(last);
  const char *argv[40];
  char nk[8];
  int n = 0;
  argv[n++] = "EVALSHA";
  argv[n++] = rl_script_sha((rl_script_id)id);
  snprintf(nk, sizeof nk, "%d", nkeys);
  argv[n++] = nk;
  for (int k = 0; k < nkeys; k++) argv[n++] = keys[k];
  for (int k = 0; args[k] != NULL; k++) argv[n++] = args[k];
  last = redisCommandArgv(sconn, n, argv, NULL);
  if (last && last->type == REDIS_REPLY_ERROR &&
      strncmp(last->str, "NOSCRIPT", 8) == 0) {
    freeReplyObject(last);
    last = redisCommand(sconn, "SCRIPT LOAD %s",
                        rl_script_body((rl_script_id)id));
    if (last) freeReplyObject(last);
    last = redisCommandArgv(sconn, n, argv, NULL);
  }
  return last;
}

static long long hget_int(const char *key, const char *field) {
  redisReply *r = rt_redis_cmd(&srv[0], "HGET %s %s", key, field);
  long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  if (r) freeReplyObject(r);
  return v;
}

/* The reentrant lock's acquire: count is what a client sends (1 for a
 * first acquisition, its hold's count + 1 for a re-entry); late 1 makes
 * the deadline one that has passed. Returns the granted count, or 0 if
 * not granted. */
static long long lock_acquire(const char *owner, const char *count, int late) {
  const char *keys[] = {"rlock:{o}", "rlock:{o}:fence"};
  const char *args[] = {"10000", owner, count, "1", late ? "1:0" : "0", NULL};
  redisReply *r = evalsha(RL_SCRIPT_ACQUIRE, 2, keys, args);
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2) return -1;
  return r->element[0]->integer == 1 ? r->element[2]->integer : 0;
}

/* The undo of an attempt that sent count. Returns the script's reply. */
static long long lock_undo(const char *owner, const char *count) {
  const char *keys[] = {"rlock:{o}"};
  const char *args[] = {owner, "rlock:{o}:ch", count, NULL};
  redisReply *r = evalsha(RL_SCRIPT_UNDO, 1, keys, args);
  return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
}

static long long lock_unlock(const char *owner, int lastone) {
  const char *keys[] = {"rlock:{o}"};
  const char *args[] = {"10000", owner, "rlock:{o}:ch", lastone ? "1" : "0",
                        NULL};
  redisReply *r = evalsha(RL_SCRIPT_UNLOCK, 1, keys, args);
  return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
}

static void undo_orders(void) {
  rt_flush_all(srv, 3);
  const char *k = "rlock:{o}";
  /* Grant, then its undo: gone. */
  RT_CHECK_EQ_INT(lock_acquire("A", "1", 0), 1);
  RT_CHECK_EQ_INT(lock_undo("A", "1"), 1);
  RT_CHECK_EQ_INT(exists_on(0, k), 0);
  /* The undo of an attempt that never ran, or was refused: nothing. */
  RT_CHECK_EQ_INT(lock_undo("A", "1"), 0);
  RT_CHECK_EQ_INT(lock_acquire("A", "1", 0), 1); /* A holds, count 1 */
  RT_CHECK_EQ_INT(lock_acquire("A", "2", 1), 0); /* re-entry too late */
  RT_CHECK_EQ_INT(lock_undo("A", "2"), 0);       /* its undo: nothing */
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  RT_CHECK_EQ_INT(lock_undo("A", "3"), 0); /* never ran: nothing */
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  /* Another owner's attempt, refused because A holds it, then undone. */
  RT_CHECK_EQ_INT(lock_acquire("B", "1", 0), 0);
  RT_CHECK_EQ_INT(lock_undo("B", "1"), 0);
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  /* A re-entry granted, then undone: back to the outer hold. */
  RT_CHECK_EQ_INT(lock_acquire("A", "2", 0), 2);
  RT_CHECK_EQ_INT(lock_undo("A", "2"), 2);
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  /* Re-entry after the undo, then the same owner unlocks: the count
   * follows the client's, and the last unlock deletes the key. */
  RT_CHECK_EQ_INT(lock_acquire("A", "2", 0), 2);
  RT_CHECK_EQ_INT(lock_unlock("A", 0), 2);
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  /* An undo that lands after the same owner's unlock of that level names
   * a count the hold no longer has: nothing. */
  RT_CHECK_EQ_INT(lock_undo("A", "2"), 0);
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  RT_CHECK_EQ_INT(lock_unlock("A", 1), 1);
  RT_CHECK_EQ_INT(exists_on(0, k), 0);
  /* One server reached through two masters runs an attempt twice: both
   * grants, then both undos, leave nothing; one grant and one refusal,
   * then both undos, leave the earlier hold. */
  RT_CHECK_EQ_INT(lock_acquire("A", "1", 0), 1);
  RT_CHECK_EQ_INT(lock_acquire("A", "1", 0), 2);
  RT_CHECK_EQ_INT(lock_undo("A", "1"), 2);
  RT_CHECK_EQ_INT(lock_undo("A", "1"), 1);
  RT_CHECK_EQ_INT(exists_on(0, k), 0);
  RT_CHECK_EQ_INT(lock_acquire("A", "1", 0), 1); /* A holds, count 1 */
  RT_CHECK_EQ_INT(lock_acquire("A", "2", 0), 2); /* one copy granted */
  RT_CHECK_EQ_INT(lock_acquire("A", "2", 1), 0); /* the other too late */
  RT_CHECK_EQ_INT(lock_undo("A", "2"), 2);
  RT_CHECK_EQ_INT(lock_undo("A", "2"), 0);
  RT_CHECK_EQ_INT(hget_int(k, "A"), 1);
  RT_CHECK_EQ_INT(lock_unlock("A", 1), 1);
  RT_CHECK_EQ_INT(exists_on(0, k), 0);
  if (last) freeReplyObject(last);
  last = NULL;
  if (sconn) redisFree(sconn);
  sconn = NULL;
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"undo_orders", undo_orders},
      {"reentry_stalled_lock_n1", reentry_stalled_lock_n1},
      {"reentry_stalled_fair_n1", reentry_stalled_fair_n1},
      {"reentry_stalled_read_n1", reentry_stalled_read_n1},
      {"reentry_stalled_write_n1", reentry_stalled_write_n1},
      {"reentry_stalled_n3", reentry_stalled_n3},
      {"lock_all_held_stalled_n1", lock_all_held_stalled_n1},
      {"lock_all_held_refused_n3", lock_all_held_refused_n3},
      {"lock_all_held_threads_n3", lock_all_held_threads_n3},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
