/*
 * The read-write lock (rlock_get_read, rlock_get_write) against real
 * masters, N = 1 and N = 3, across threads and processes: readers
 * overlap and writers never overlap with anyone (the shared checker over
 * timestamps in sections.h), a writer is not starved by a continuous
 * stream of readers, a read holder asking for the write side is refused
 * at once with RLOCK_EDEADLK, a SIGKILLed reader's share runs out while
 * the other readers keep theirs, the async calls, fencing tokens, and the
 * watchdog keeping both sides alive.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "sections.h"

static rt_redis srv[3];

/* --- helpers -------------------------------------------------------------- */

static rlock_client *rw_client(int n, int64_t watchdog_ms) {
  return rt_client_wd(srv, n, 1000, watchdog_ms);
}

/* The two sides of one lock. */
typedef struct rw {
  rlock *r, *w;
} rw;

static int rw_get(rlock_client *c, const char *name, rw *out) {
  if (rlock_get_read(c, name, &out->r) != 0) return -1;
  if (rlock_get_write(c, name, &out->w) != 0) return -1;
  return 0;
}

static void rw_free(rw *x) {
  rlock_free(x->r);
  rlock_free(x->w);
}

/* Live read holds of the lock on master i, by the master's clock. */
static long long live_readers(int i, const char *name) {
  redisReply *t = rt_redis_cmd(&srv[i], "TIME");
  if (t == NULL || t->type != REDIS_REPLY_ARRAY || t->elements != 2) {
    if (t) freeReplyObject(t);
    return -1;
  }
  long long now = atoll(t->element[0]->str) * 1000 +
                  atoll(t->element[1]->str) / 1000;
  freeReplyObject(t);
  char from[32];
  snprintf(from, sizeof from, "(%lld", now);
  return rt_redis_int(&srv[i], "ZCOUNT rlock:{%s}:r %s +inf", name, from);
}

/* live_readers once it says want, or its last answer after 5 s: with
 * N = 3 a grant returns once a majority answered, and the last master's
 * may land just after. */
static long long readers_settled(int i, const char *what, long long want) {
  return rt_settle(live_readers, i, what, want, 5000);
}

/* Nothing of the lock on master i but its fencing counter (waiting for
 * commands already written, at most 5 s). */
static int nothing_left(int i, const char *name) {
  uint64_t end = rt_now_ms() + 5000;
  for (;;) {
    redisReply *r = rt_redis_cmd(&srv[i], "KEYS rlock:{%s}*", name);
    int left = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
      left = 0;
      for (size_t k = 0; k < r->elements; k++)
        left += strstr(r->element[k]->str, ":fence") == NULL;
    }
    if (r) freeReplyObject(r);
    if (left == 0) return 1;
    if (rt_now_ms() > end) {
      fprintf(stderr, "  master %d keeps %d keys of %s\n", i, left, name);
      return 0;
    }
    rt_sleep_ms(50);
  }
}

typedef struct try_arg {
  rlock *l;
  int64_t wait_ms, lease_ms;
  int rc;
  uint64_t token;
  int unlock; /* release right after */
} try_arg;

static void *try_thread(void *p) {
  try_arg *a = p;
  a->rc = rlock_trylock(a->l, a->wait_ms, a->lease_ms);
  if (a->rc == 0) {
    rlock_fencing_token(a->l, &a->token);
    if (a->unlock) rlock_unlock(a->l);
  }
  return NULL;
}

/* trylock on another thread (a thread is an owner). */
static int try_other(rlock *l, int64_t wait_ms, int unlock, uint64_t *token) {
  try_arg a = {.l = l, .wait_ms = wait_ms, .lease_ms = 10000, .unlock = unlock};
  pthread_t th;
  pthread_create(&th, NULL, try_thread, &a);
  pthread_join(th, NULL);
  if (token != NULL) *token = a.token;
  return a.rc;
}

/* --- basics ----------------------------------------------------------------- */

static void basic(void) {
  rlock_client *c = rw_client(1, 0);
  RT_REQUIRE(c != NULL);
  rw x;
  RT_REQUIRE(rw_get(c, "b", &x) == 0);
  RT_CHECK(strcmp(rlock_kind(x.r), "read") == 0);
  RT_CHECK(strcmp(rlock_kind(x.w), "write") == 0);
  RT_CHECK_EQ_INT(rlock_is_locked(x.r), 0);
  int64_t ms = 0;
  RT_CHECK_EQ_INT(rlock_remaining_lease(x.r, &ms), 0);
  RT_CHECK_EQ_INT(ms, -2);
  /* Readers share: this thread and another one at once. */
  RT_REQUIRE(rlock_lock(x.r, 10000) == 0);
  RT_CHECK_EQ_INT(rlock_lock(x.r, 10000), 0); /* reentrant */
  RT_CHECK_EQ_INT(rlock_hold_count(x.r), 2);
  uint64_t tr = 0;
  RT_CHECK_EQ_INT(rlock_fencing_token(x.r, &tr), 0);
  RT_CHECK_EQ_INT(try_other(x.r, 0, 1, NULL), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(x.r), 1);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(x.r), 1);
  RT_CHECK_EQ_INT(rlock_remaining_lease(x.r, &ms), 0);
  RT_CHECK(ms > 5000 && ms <= 10000);
  /* The write side: not while anyone reads. */
  RT_CHECK_EQ_INT(rlock_is_locked(x.w), 0);
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, NULL), RLOCK_ETIMEDOUT);
  /* The reader asking for the write side: refused at once, even with no
   * deadline, and nothing changed. */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_lock(x.w, 10000), RLOCK_EDEADLK);
  RT_CHECK_EQ_INT(rlock_trylock(x.w, 0, 10000), RLOCK_EDEADLK);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{b}:wq"), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(x.r), 2);
  RT_CHECK_EQ_INT(rlock_unlock(x.r), 0);
  RT_CHECK_EQ_INT(rlock_unlock(x.r), 0);
  RT_CHECK_EQ_INT(rlock_unlock(x.r), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_is_locked(x.r), 0);
  /* A writer excludes readers and writers; its token is above the
   * reads'; it may take the read side and keeps it after writing. */
  RT_REQUIRE(rlock_lock(x.w, 10000) == 0);
  RT_CHECK_EQ_INT(rlock_lock(x.w, 10000), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(x.w), 2);
  uint64_t tw = 0;
  RT_CHECK_EQ_INT(rlock_fencing_token(x.w, &tw), 0);
  RT_CHECK(tw > tr);
  RT_CHECK_EQ_INT(try_other(x.r, 0, 1, NULL), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, NULL), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_is_locked(x.w), 1);
  RT_CHECK_EQ_INT(rlock_lock(x.r, 10000), 0); /* downgrade path */
  uint64_t tr2 = 0;
  RT_CHECK_EQ_INT(rlock_fencing_token(x.r, &tr2), 0);
  RT_CHECK(tr2 > tw);
  RT_CHECK_EQ_INT(rlock_unlock(x.w), 0);
  RT_CHECK_EQ_INT(rlock_unlock(x.w), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(x.w), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(x.r), 1);
  RT_CHECK_EQ_INT(try_other(x.r, 0, 1, NULL), 0); /* others read too */
  RT_CHECK_EQ_INT(rlock_lock(x.w, 10000), RLOCK_EDEADLK); /* reads now */
  RT_CHECK_EQ_INT(rlock_unlock(x.r), 0);
  /* Force: each side. */
  RT_CHECK_EQ_INT(try_other(x.r, 0, 0, NULL), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(x.r), 1);
  RT_CHECK_EQ_INT(rlock_force_unlock(x.r), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(x.r), 0);
  RT_CHECK_EQ_INT(try_other(x.w, 0, 0, NULL), 0);
  RT_CHECK_EQ_INT(rlock_force_unlock(x.w), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(x.w), 0);
  uint64_t tw2 = 0;
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, &tw2), 0);
  RT_CHECK(tw2 > tr2);
  RT_CHECK(nothing_left(0, "b"));
  static rlock_metrics m;
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c, &m), 0);
  RT_CHECK_EQ_INT(m.acquisitions_by_kind[2], 6); /* the reads above */
  RT_CHECK_EQ_INT(m.acquisitions_by_kind[3], 4); /* the writes */
  RT_CHECK_EQ_INT(m.acquisitions_by_kind[2] + m.acquisitions_by_kind[3],
                  m.acquisitions);
  rw_free(&x);
  rlock_client_close(c);
}

/* --- the checker: readers overlap, writers overlap with no one ------------- */

#define PROCS 3
#define THREADS 3
#define CHECK_MS 4000

typedef struct shared {
  volatile long counter; /* writers' non-atomic increments */
  long writes, reads;
  int errors, torn_reads;
} shared;

typedef struct worker {
  rw *x;
  shared *sh;
  rt_sections *secs;
  int who;
  int64_t end_ns;
  unsigned seed;
} worker;

static void *checker_thread(void *p) {
  worker *w = p;
  while (rt_mono_ns() < w->end_ns) {
    int write = rand_r(&w->seed) % 4 == 0;
    rlock *l = write ? w->x->w : w->x->r;
    if (rlock_lock(l, 10000) != 0) {
      __atomic_add_fetch(&w->sh->errors, 1, __ATOMIC_SEQ_CST);
      continue;
    }
    uint64_t token = 0;
    if (rlock_fencing_token(l, &token) != 0)
      __atomic_add_fetch(&w->sh->errors, 1, __ATOMIC_SEQ_CST);
    int64_t s = rt_section_enter(w->secs, !write, w->who, token);
    long v = w->sh->counter;
    usleep(200 + (unsigned)(rand_r(&w->seed) % 2000));
    if (write) {
      w->sh->counter = v + 1;
      __atomic_add_fetch(&w->sh->writes, 1, __ATOMIC_SEQ_CST);
    } else {
      if (w->sh->counter != v) /* a writer ran inside this read */
        __atomic_add_fetch(&w->sh->torn_reads, 1, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&w->sh->reads, 1, __ATOMIC_SEQ_CST);
    }
    rt_section_leave(w->secs, s);
    if (rlock_unlock(l) != 0) __atomic_add_fetch(&w->sh->errors, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static int checker_child(int n, int p, shared *sh, rt_sections *secs,
                         int64_t start_ns) {
  rlock_client *c = rw_client(n, 0);
  if (c == NULL) return 2;
  rw x;
  if (rw_get(c, "chk", &x) != 0) return 3;
  worker ws[THREADS];
  pthread_t th[THREADS];
  while (rt_mono_ns() < start_ns) usleep(1000);
  for (int t = 0; t < THREADS; t++) {
    ws[t] = (worker){&x, sh, secs, p * THREADS + t,
                     start_ns + (int64_t)CHECK_MS * 1000000,
                     (unsigned)(p * 7919 + t * 104729 + 1)};
    pthread_create(&th[t], NULL, checker_thread, &ws[t]);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  rw_free(&x);
  rlock_client_close(c);
  return 0;
}

static void checker(int n) {
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  rt_sections *secs = rt_sections_new(100000);
  RT_REQUIRE(sh != MAP_FAILED && secs != NULL);
  memset((void *)sh, 0, sizeof *sh);
  int64_t start = rt_mono_ns() + 1500 * 1000000LL;
  pid_t pids[PROCS];
  fflush(NULL);
  for (int p = 0; p < PROCS; p++) {
    pids[p] = fork();
    if (pids[p] == 0) _exit(checker_child(n, p, sh, secs, start));
  }
  for (int p = 0; p < PROCS; p++) RT_CHECK_EQ_INT(rt_reap(pids[p]), 0);
  int64_t shared_overlaps = 0;
  int64_t bad = rt_sections_check(secs, &shared_overlaps);
  fprintf(stderr, "  %ld reads, %ld writes, %lld overlapping read pairs\n",
          sh->reads, sh->writes, (long long)shared_overlaps);
  RT_CHECK_EQ_INT(bad, 0);
  RT_CHECK_EQ_INT(rt_sections_check_tokens(secs), 0);
  RT_CHECK_EQ_INT(sh->errors, 0);
  RT_CHECK_EQ_INT(sh->torn_reads, 0);
  RT_CHECK_EQ_INT(sh->counter, sh->writes);
  RT_CHECK(sh->writes > 0 && sh->reads > 0);
  RT_CHECK(shared_overlaps > 0); /* readers did share */
  for (int i = 0; i < n; i++) RT_CHECK(nothing_left(i, "chk"));
  rt_sections_free(secs);
  munmap(sh, sizeof *sh);
}

static void checker_n1(void) { checker(1); }
static void checker_n3(void) { checker(3); }

/* --- a writer is not starved --------------------------------------------- */

#define READERS 3
#define READ_HOLD_MS 250

typedef struct reader_arg {
  rlock *r;
  atomic_int *stop;
  rt_sections *secs;
  int who, errors;
} reader_arg;

/* Reads again and again, as soon as it released: with its siblings
 * staggered, some reader always holds the read side. */
static void *reader_loop(void *p) {
  reader_arg *a = p;
  while (!atomic_load(a->stop)) {
    if (rlock_lock(a->r, 10000) != 0) {
      a->errors++;
      continue;
    }
    int64_t s = rt_section_enter(a->secs, 1, a->who, 0);
    rt_sleep_ms(READ_HOLD_MS);
    rt_section_leave(a->secs, s);
    if (rlock_unlock(a->r) != 0) a->errors++;
  }
  return NULL;
}

static void writer_not_starved(int n) {
  rlock_client *c = rw_client(n, 0);
  RT_REQUIRE(c != NULL);
  rw x;
  RT_REQUIRE(rw_get(c, "starve", &x) == 0);
  rt_sections *secs = rt_sections_new(10000);
  RT_REQUIRE(secs != NULL);
  atomic_int stop = 0;
  pthread_t th[READERS];
  reader_arg ra[READERS];
  for (int i = 0; i < READERS; i++) {
    ra[i] = (reader_arg){x.r, &stop, secs, i, 0};
    pthread_create(&th[i], NULL, reader_loop, &ra[i]);
    rt_sleep_ms(READ_HOLD_MS / READERS);
  }
  rt_sleep_ms(1000);
  /* The stream is continuous: the write side is never free. */
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, NULL), RLOCK_ETIMEDOUT);
  /* A writer asks, on this thread, while the readers go on. */
  int64_t asked = rt_mono_ns();
  RT_CHECK_EQ_INT(rlock_trylock(x.w, 30000, 10000), 0);
  int64_t got = rt_mono_ns();
  int64_t ws = rt_section_enter(secs, 0, 99, 0);
  /* Readers that asked after the writer waited behind it: no read
   * section began between its registration (its first attempt, well
   * within 1 s) and its grant. */
  int64_t behind = 0, nsecs = __atomic_load_n(&secs->n, __ATOMIC_SEQ_CST);
  for (int64_t i = 0; i < nsecs && i < secs->cap; i++)
    if (secs->s[i].shared && secs->s[i].enter_ns > asked + 1000000000LL &&
        secs->s[i].enter_ns < got)
      behind++;
  fprintf(stderr, "  the writer waited %lld ms\n",
          (long long)((got - asked) / 1000000));
  RT_CHECK_EQ_INT(behind, 0);
  rt_sleep_ms(100);
  rt_section_leave(secs, ws);
  RT_CHECK_EQ_INT(rlock_unlock(x.w), 0);
  /* The readers go on after it. */
  int64_t before = __atomic_load_n(&secs->n, __ATOMIC_SEQ_CST);
  rt_sleep_ms(3 * READ_HOLD_MS);
  RT_CHECK(__atomic_load_n(&secs->n, __ATOMIC_SEQ_CST) > before);
  atomic_store(&stop, 1);
  for (int i = 0; i < READERS; i++) {
    pthread_join(th[i], NULL);
    RT_CHECK_EQ_INT(ra[i].errors, 0);
  }
  RT_CHECK_EQ_INT(rt_sections_check(secs, NULL), 0);
  for (int i = 0; i < n; i++) RT_CHECK(nothing_left(i, "starve"));
  rt_sections_free(secs);
  rw_free(&x);
  rlock_client_close(c);
}

static void writer_not_starved_n1(void) { writer_not_starved(1); }
static void writer_not_starved_n3(void) { writer_not_starved(3); }

/* --- a SIGKILLed reader's share runs out alone ----------------------------- */

#define WD_MS 1500

static void killed_reader(int n) {
  int ready[2];
  RT_REQUIRE(pipe(ready) == 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    rlock_client *c = rw_client(n, WD_MS);
    rw x;
    char ok = c != NULL && rw_get(c, "kr", &x) == 0 &&
                      rlock_lock(x.r, RLOCK_WATCHDOG) == 0
                  ? 'y'
                  : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(2);
    for (;;) pause(); /* until killed */
  }
  close(ready[1]);
  char ok = 0;
  RT_REQUIRE(read(ready[0], &ok, 1) == 1 && ok == 'y');
  close(ready[0]);
  rlock_client *c = rw_client(n, WD_MS);
  RT_REQUIRE(c != NULL);
  rw x;
  RT_REQUIRE(rw_get(c, "kr", &x) == 0);
  RT_REQUIRE(rlock_lock(x.r, RLOCK_WATCHDOG) == 0);
  for (int i = 0; i < n; i++) RT_CHECK_EQ_INT(readers_settled(i, "kr", 2), 2);
  kill(pid, SIGKILL);
  RT_CHECK_EQ_INT(rt_reap(pid), 128 + SIGKILL);
  /* Three of its leases later: its share is gone, ours is kept alive by
   * the watchdog, and a writer still waits for us. */
  rt_sleep_ms(3 * WD_MS);
  for (int i = 0; i < n; i++) RT_CHECK_EQ_INT(live_readers(i, "kr"), 1);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(x.r), 1);
  RT_CHECK_EQ_INT(rlock_is_locked(x.r), 1);
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, NULL), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock(x.r), 0);
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, NULL), 0);
  for (int i = 0; i < n; i++) RT_CHECK(nothing_left(i, "kr"));
  rw_free(&x);
  rlock_client_close(c);
}

static void killed_reader_n1(void) { killed_reader(1); }
static void killed_reader_n3(void) { killed_reader(3); }

/* --- async ----------------------------------------------------------------- */

typedef struct alog {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int status[8], done[8];
} alog;

typedef struct aarg {
  alog *g;
  int i;
} aarg;

static void on_done(rlock *l, int status, void *arg) {
  (void)l;
  aarg *a = arg;
  pthread_mutex_lock(&a->g->mu);
  a->g->status[a->i] = status;
  a->g->done[a->i] = 1;
  pthread_cond_broadcast(&a->g->cv);
  pthread_mutex_unlock(&a->g->mu);
}

/* The status of completion i, waiting for it (at most 30 s); 1 if none. */
static int wait_done(alog *g, int i) {
  uint64_t end = rt_now_ms() + 30000;
  pthread_mutex_lock(&g->mu);
  while (!g->done[i] && rt_now_ms() < end) {
    pthread_mutex_unlock(&g->mu);
    rt_sleep_ms(5);
    pthread_mutex_lock(&g->mu);
  }
  int st = g->done[i] ? g->status[i] : 1;
  pthread_mutex_unlock(&g->mu);
  return st;
}

static int is_done(alog *g, int i) {
  pthread_mutex_lock(&g->mu);
  int d = g->done[i];
  pthread_mutex_unlock(&g->mu);
  return d;
}

static void async_calls(int n) {
  rlock_client *c = rw_client(n, 0);
  RT_REQUIRE(c != NULL);
  rw x;
  RT_REQUIRE(rw_get(c, "as", &x) == 0);
  alog g;
  memset(&g, 0, sizeof g);
  pthread_mutex_init(&g.mu, NULL);
  pthread_cond_init(&g.cv, NULL);
  aarg a[8];
  for (int i = 0; i < 8; i++) a[i] = (aarg){&g, i};
  /* Two async readers at once. */
  RT_REQUIRE(rlock_lock_async(x.r, 1, 5000, 10000, on_done, &a[0]) == 0);
  RT_REQUIRE(rlock_lock_async(x.r, 2, 5000, 10000, on_done, &a[1]) == 0);
  RT_CHECK_EQ_INT(wait_done(&g, 0), 0);
  RT_CHECK_EQ_INT(wait_done(&g, 1), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(x.r, 1), 1);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(x.r, 2), 1);
  /* A reader asking for the write side: refused at once. */
  RT_REQUIRE(rlock_lock_async(x.w, 1, RLOCK_WAIT_FOREVER, 10000, on_done,
                              &a[2]) == 0);
  RT_CHECK_EQ_INT(wait_done(&g, 2), RLOCK_EDEADLK);
  /* A writer waits for both readers. */
  RT_REQUIRE(rlock_lock_async(x.w, 3, RLOCK_WAIT_FOREVER, 10000, on_done,
                              &a[3]) == 0);
  uint64_t until = rt_now_ms() + 300;
  while (rt_now_ms() < until) {
    RT_CHECK(!is_done(&g, 3));
    rt_sleep_ms(20);
  }
  RT_REQUIRE(rlock_unlock_async(x.r, 1, on_done, &a[4]) == 0);
  RT_CHECK_EQ_INT(wait_done(&g, 4), 0);
  rt_sleep_ms(100);
  RT_CHECK(!is_done(&g, 3));
  RT_REQUIRE(rlock_unlock_async(x.r, 2, on_done, &a[5]) == 0);
  RT_CHECK_EQ_INT(wait_done(&g, 5), 0);
  RT_CHECK_EQ_INT(wait_done(&g, 3), 0);
  uint64_t tw = 0;
  RT_CHECK_EQ_INT(rlock_owner_fencing_token(x.w, 3, &tw), 0);
  RT_CHECK(tw > 0);
  /* A waiting writer cancelled: it leaves the waiting set. */
  RT_REQUIRE(rlock_lock_async(x.w, 4, RLOCK_WAIT_FOREVER, 10000, on_done,
                              &a[6]) == 0);
  rt_sleep_ms(200);
  RT_CHECK_EQ_INT(rlock_cancel_async(x.w, 4), 0);
  RT_CHECK_EQ_INT(wait_done(&g, 6), RLOCK_ECANCELED);
  RT_REQUIRE(rlock_unlock_async(x.w, 3, on_done, &a[7]) == 0);
  RT_CHECK_EQ_INT(wait_done(&g, 7), 0);
  for (int i = 0; i < n; i++) RT_CHECK(nothing_left(i, "as"));
  pthread_mutex_destroy(&g.mu);
  pthread_cond_destroy(&g.cv);
  rw_free(&x);
  rlock_client_close(c);
}

static void async_n1(void) { async_calls(1); }
static void async_n3(void) { async_calls(3); }

/* --- rlock_extend and the lost-lock callback ------------------------------ */

static void extend_and_lost(int n) {
  rlock_client *c = rw_client(n, 1500), *d = rw_client(n, 0);
  RT_REQUIRE(c != NULL && d != NULL);
  rw x, y;
  RT_REQUIRE(rw_get(c, "extlost", &x) == 0);
  RT_REQUIRE(rw_get(d, "extlost", &y) == 0);
  rt_extend_then_lost(x.r, y.r);
  rt_extend_then_lost(x.w, y.w);
  for (int i = 0; i < n; i++) RT_CHECK(nothing_left(i, "extlost"));
  rw_free(&x);
  rw_free(&y);
  rlock_client_close(c);
  rlock_client_close(d);
}

static void extend_and_lost_n1(void) { extend_and_lost(1); }
static void extend_and_lost_n3(void) { extend_and_lost(3); }

/* --- the watchdog keeps both sides ---------------------------------------- */

static void watchdog_both(int n) {
  rlock_client *c = rw_client(n, 900);
  RT_REQUIRE(c != NULL);
  rw x;
  RT_REQUIRE(rw_get(c, "wd", &x) == 0);
  RT_REQUIRE(rlock_lock(x.w, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(2700); /* three leases */
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(x.w), 1);
  RT_CHECK_EQ_INT(try_other(x.r, 0, 1, NULL), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock(x.w), 0);
  RT_REQUIRE(rlock_lock(x.r, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(2700);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(x.r), 1);
  for (int i = 0; i < n; i++) RT_CHECK_EQ_INT(readers_settled(i, "wd", 1), 1);
  RT_CHECK_EQ_INT(try_other(x.w, 0, 1, NULL), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock(x.r), 0);
  for (int i = 0; i < n; i++) RT_CHECK(nothing_left(i, "wd"));
  rw_free(&x);
  rlock_client_close(c);
}

static void watchdog_n1(void) { watchdog_both(1); }
static void watchdog_n3(void) { watchdog_both(3); }

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"basic", basic},
      {"checker_n1", checker_n1},
      {"checker_n3", checker_n3},
      {"writer_not_starved_n1", writer_not_starved_n1},
      {"writer_not_starved_n3", writer_not_starved_n3},
      {"killed_reader_n1", killed_reader_n1},
      {"killed_reader_n3", killed_reader_n3},
      {"async_n1", async_n1},
      {"async_n3", async_n3},
      {"watchdog_n1", watchdog_n1},
      {"watchdog_n3", watchdog_n3},
      {"extend_and_lost_n1", extend_and_lost_n1},
      {"extend_and_lost_n3", extend_and_lost_n3},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
