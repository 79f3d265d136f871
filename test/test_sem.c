/*
 * Semaphores with leased permits against real masters, N = 1 and N = 3:
 * never more than K holders (a checker over the timestamps of every hold,
 * from threads and from processes), a SIGKILLed holder's permits back
 * after its lease, waiters woken by the release and not by polling or
 * lease expiry (also one client's waiters that want different numbers of
 * permits or take them all in turn, and with no loop of wakes between
 * waiters that want more than is free), over-release and a disagreeing K refused with nothing
 * changed, cancel, loss, and every key with a TTL.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "sem_hold.h" /* the handle's attempt and split counters */

static rt_redis srv[3];

/* A client on the first n masters; watchdog_ms 0 keeps the default. */
static rlock_client *open_client(int n, int64_t watchdog_ms,
                                 int64_t retry_delay_ms) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = 1000;
  o.retry_delay_ms = retry_delay_ms;
  o.retry_jitter_ms = retry_delay_ms / 4;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  return rt_client_opts(srv, n, &o);
}

/* --- the checker ------------------------------------------------------------ */

/* Holds as [enter, leave] on the monotonic clock, which every process of
 * the machine shares. */
#define MAX_HOLDS 4096
typedef struct hold_log {
  volatile int n;
  volatile int errors;
  volatile int last_error;
  /* Releases that failed, and how (also counted in errors). */
  volatile int release_errors, release_enoquorum;
  volatile uint64_t attempts, splits; /* the handles' counters, summed */
  volatile uint64_t enter[MAX_HOLDS], leave[MAX_HOLDS];
} hold_log;

static int cmp_ev(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  /* By time; at one instant a leave (-1) before an enter (+1). */
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return (int)(a[1] - b[1]);
}

/* The largest number of holds that overlap at any instant. */
static int max_overlap(const hold_log *l) {
  int n = l->n < MAX_HOLDS ? l->n : MAX_HOLDS;
  int64_t(*ev)[2] = malloc(sizeof *ev * 2 * (size_t)n);
  if (ev == NULL) return -1;
  for (int i = 0; i < n; i++) {
    ev[2 * i][0] = (int64_t)l->enter[i];
    ev[2 * i][1] = 1;
    ev[2 * i + 1][0] = (int64_t)l->leave[i];
    ev[2 * i + 1][1] = -1;
  }
  qsort(ev, 2 * (size_t)n, sizeof *ev, cmp_ev);
  int cur = 0, max = 0;
  for (int i = 0; i < 2 * n; i++) {
    cur += (int)ev[i][1];
    if (cur > max) max = cur;
  }
  free(ev);
  return max;
}

static void log_error(hold_log *l, int rc) {
  __atomic_add_fetch(&l->errors, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->last_error, rc, __ATOMIC_SEQ_CST);
}

typedef struct worker {
  rlock_sem *sem;
  hold_log *log;
  int iters;
  uint64_t stop_us;
} worker;

/* Takes one permit, holds it 1 to 4 ms, gives it back; logs the hold. */
static void *work(void *p) {
  worker *w = p;
  unsigned seed = (unsigned)(uintptr_t)pthread_self() ^ (unsigned)rt_now_us();
  for (int i = 0; i < w->iters && rt_now_us() < w->stop_us; i++) {
    int rc = rlock_sem_acquire(w->sem, 1, 20000, RLOCK_WATCHDOG);
    if (rc != 0) {
      log_error(w->log, rc);
      continue;
    }
    uint64_t t0 = rt_now_us();
    usleep(1000 + (unsigned)(rand_r(&seed) % 3000));
    uint64_t t1 = rt_now_us();
    int k = __atomic_fetch_add(&w->log->n, 1, __ATOMIC_SEQ_CST);
    if (k < MAX_HOLDS) {
      w->log->enter[k] = t0;
      w->log->leave[k] = t1;
    }
    rc = rlock_sem_release(w->sem, 1);
    if (rc != 0) {
      log_error(w->log, rc);
      __atomic_add_fetch(&w->log->release_errors, 1, __ATOMIC_SEQ_CST);
      if (rc == RLOCK_ENOQUORUM)
        __atomic_add_fetch(&w->log->release_enoquorum, 1, __ATOMIC_SEQ_CST);
    }
  }
  return NULL;
}

#define K 3

/* Every worker makes iters holds; the time bound only catches a hang
 * (the checks then find holds missing). */
#define HANG_S 120

static void run_threads(rlock_sem *sem, hold_log *log, int nthreads,
                        int iters, int seconds) {
  pthread_t th[16];
  worker w = {sem, log, iters, rt_now_us() + (uint64_t)seconds * 1000000u};
  for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, work, &w);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
}

static void report(const char *what, const hold_log *log, int max) {
  fprintf(stderr, "  %s: %d holds, at most %d at once (K = %d), %d errors "
                  "(last %d)\n", what, log->n, max, K, log->errors,
          log->last_error);
}

/* Adds a handle's attempts and splits to the log's. */
static void count_attempts(hold_log *log, rlock_sem *s) {
  __atomic_add_fetch(&log->attempts, atomic_load(&s->attempts),
                     __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&log->splits, atomic_load(&s->splits), __ATOMIC_SEQ_CST);
}

/* Attempts per hold under contention, with a generous bound: a few clients
 * that split the masters must converge (sem_kind.c), not retry in
 * lockstep, each taking back on every master the slot it just gave back
 * (clients in lockstep, at N = 3 with four clients, make 44 to 258
 * attempts per hold). */
#define MAX_ATTEMPTS_PER_HOLD 20

/* 8 threads of two clients share a semaphore of 3 for a few seconds. */
static void k_holders_threads(int n) {
  rt_flush_all(srv, 3);
  rlock_client *a = open_client(n, 0, 20), *b = open_client(n, 0, 20);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock_sem *sa, *sb;
  RT_REQUIRE(rlock_sem_get(a, "pool", K, &sa) == 0);
  RT_REQUIRE(rlock_sem_get(b, "pool", K, &sb) == 0);
  hold_log *log = calloc(1, sizeof *log);
  pthread_t t;
  worker wb = {sb, log, 60, rt_now_us() + HANG_S * 1000000u};
  pthread_create(&t, NULL, work, &wb);
  run_threads(sa, log, 7, 60, HANG_S);
  pthread_join(t, NULL);
  count_attempts(log, sa);
  count_attempts(log, sb);
  int max = max_overlap(log);
  report("threads", log, max);
  fprintf(stderr, "  %" PRIu64 " attempts (%.1f per hold), %" PRIu64
                  " split\n", (uint64_t)log->attempts,
          log->n ? (double)log->attempts / log->n : 0.0,
          (uint64_t)log->splits);
  RT_CHECK(max >= 1 && max <= K);
  RT_CHECK(max == K); /* 8 threads: K at once does happen */
  RT_CHECK_EQ_INT(log->errors, 0);
  RT_CHECK_EQ_INT(log->n, 8 * 60); /* every worker made every hold */
  RT_CHECK(log->attempts <= (uint64_t)MAX_ATTEMPTS_PER_HOLD * 8 * 60);
  int64_t avail = -1;
  RT_CHECK_EQ_INT(rlock_sem_available(sa, &avail), 0);
  RT_CHECK_EQ_INT(avail, K);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  free(log);
  rlock_sem_free(sa);
  rlock_sem_free(sb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void k_holders_threads_1(void) { k_holders_threads(1); }
static void k_holders_threads_3(void) { k_holders_threads(3); }

/* 4 processes of 3 threads each, each with its own client. With N = 3
 * four clients often split the masters' slots (every attempt gives back
 * and starts again: sem_kind.c), so fewer holds there. */
static void k_holders_processes(int n) {
  int iters = n == 1 ? 25 : 10;
  rt_flush_all(srv, 3);
  hold_log *log = mmap(NULL, sizeof *log, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RT_REQUIRE(log != MAP_FAILED);
  memset((void *)log, 0, sizeof *log);
  pid_t pids[4];
  for (int p = 0; p < 4; p++) {
    pids[p] = fork();
    if (pids[p] == 0) {
      rlock_client *c = open_client(n, 0, 20);
      rlock_sem *s;
      if (c == NULL || rlock_sem_get(c, "procpool", K, &s) != 0) _exit(2);
      run_threads(s, log, 3, iters, HANG_S);
      count_attempts(log, s);
      rlock_sem_free(s);
      rlock_client_close(c);
      _exit(0);
    }
  }
  for (int p = 0; p < 4; p++) {
    int st = 0;
    RT_CHECK(waitpid(pids[p], &st, 0) == pids[p]);
    RT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  int max = max_overlap(log);
  report("processes", log, max);
  fprintf(stderr, "  %" PRIu64 " attempts (%.1f per hold), %" PRIu64
                  " split\n", (uint64_t)log->attempts,
          log->n ? (double)log->attempts / log->n : 0.0,
          (uint64_t)log->splits);
  RT_CHECK(max >= 1 && max <= K);
  RT_CHECK_EQ_INT(log->errors, 0);
  RT_CHECK_EQ_INT(log->n, 4 * 3 * iters);
  RT_CHECK(log->attempts <= (uint64_t)MAX_ATTEMPTS_PER_HOLD * 4 * 3 * iters);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  munmap(log, sizeof *log);
}

static void k_holders_processes_1(void) { k_holders_processes(1); }
static void k_holders_processes_3(void) { k_holders_processes(3); }

/*
 * A child takes all K permits with the watchdog (a 1.5 s lease, renewed)
 * and is SIGKILLed. The permits stay taken (no one gave them back) and
 * come back when the lease runs out: the parent's waiting acquisition gets
 * them after the kill, within the lease and a margin.
 */
static void sigkill_holder(int n) {
  rt_flush_all(srv, 3);
  int ready[2];
  RT_REQUIRE(pipe(ready) == 0);
  pid_t pid = fork();
  RT_REQUIRE(pid >= 0);
  if (pid == 0) {
    close(ready[0]);
    rlock_client *c = open_client(n, 1500, 20);
    rlock_sem *s;
    if (c == NULL || rlock_sem_get(c, "crash", K, &s) != 0) _exit(2);
    if (rlock_sem_acquire(s, K, 5000, RLOCK_WATCHDOG) != 0) _exit(3);
    if (write(ready[1], "r", 1) != 1) _exit(4);
    for (;;) pause(); /* renewed by the watchdog until killed */
  }
  close(ready[1]);
  char x;
  RT_REQUIRE(read(ready[0], &x, 1) == 1);
  close(ready[0]);
  rt_sleep_ms(1200); /* at least one renewal (every 500 ms) */
  rlock_client *c = open_client(n, 0, 20);
  RT_REQUIRE(c != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "crash", K, &s) == 0);
  int64_t avail = -1;
  RT_CHECK_EQ_INT(rlock_sem_available(s, &avail), 0);
  RT_CHECK_EQ_INT(avail, 0); /* renewed past its first lease */
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 1, 0, 10000), RLOCK_ETIMEDOUT);
  uint64_t t_kill = rt_now_us();
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, K, 10000, 10000), 0);
  uint64_t waited_ms = (rt_now_us() - t_kill) / 1000;
  fprintf(stderr, "  permits back %" PRIu64 " ms after the kill (lease "
                  "1500 ms)\n", waited_ms);
  RT_CHECK(waited_ms <= 1500 + 3000);
  int64_t held = 0;
  RT_CHECK_EQ_INT(rlock_sem_held(s, &held), 0);
  RT_CHECK_EQ_INT(held, K);
  RT_CHECK_EQ_INT(rlock_sem_release(s, K), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  rlock_sem_free(s);
  rlock_client_close(c);
}

static void sigkill_holder_1(void) { sigkill_holder(1); }
static void sigkill_holder_3(void) { sigkill_holder(3); }

/* --- woken by the release ------------------------------------------------- */

typedef struct waiter_arg {
  rlock_sem *sem;
  int64_t n;
  int rc;
  uint64_t done_us;
} waiter_arg;

static void *waiter(void *p) {
  waiter_arg *a = p;
  a->rc = rlock_sem_acquire(a->sem, a->n, 60000, RLOCK_WATCHDOG);
  a->done_us = rt_now_us();
  return NULL;
}

static int subscribed_everywhere(int n, const char *channel, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  for (;;) {
    int ok = 1;
    for (int i = 0; i < n; i++)
      if (rt_redis_numsub(&srv[i], channel) < 1) ok = 0;
    if (ok) return 1;
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(5);
  }
}

/*
 * The holder's lease is the watchdog's 30 s and the waiter's client
 * retries after 20 s: neither lets the waiter through within 5 s. Two
 * waiters of one client wait for one permit each; the holder gives back
 * two at once: one message wakes the first, which passes the wake on.
 */
static void woken_by_release(int n) {
  rt_flush_all(srv, 3);
  rlock_client *h = open_client(n, 0, 20);
  rlock_client *w = open_client(n, 0, 20000);
  RT_REQUIRE(h != NULL && w != NULL);
  rlock_sem *sh, *sw;
  RT_REQUIRE(rlock_sem_get(h, "wake", 2, &sh) == 0);
  RT_REQUIRE(rlock_sem_get(w, "wake", 2, &sw) == 0);
  RT_REQUIRE(rlock_sem_acquire(sh, 2, 0, RLOCK_WATCHDOG) == 0);
  waiter_arg a1 = {sw, 1, -99, 0}, a2 = {sw, 1, -99, 0};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, waiter, &a1);
  pthread_create(&t2, NULL, waiter, &a2);
  RT_CHECK(subscribed_everywhere(n, "rlock:{wake}:s:ch", 5000));
  uint64_t before = atomic_load(&sw->attempts);
  rt_sleep_ms(300);
  uint64_t held = atomic_load(&sw->attempts) - before;
  rlock_metrics *m = calloc(1, sizeof *m);
  rlock_metrics_snapshot(w, m);
  RT_CHECK_EQ_INT(m->sem_waiters, 2);
  RT_CHECK(a1.done_us == 0 && a2.done_us == 0);
  /* A waiter tries again when a message says permits came back; while
   * the holder holds, none do. At N = 3 the hold lives on the two masters
   * that answered first and the third grants each waiter, which gives the
   * grant back: that give-back's message must not wake the waiters at
   * once, over and over (which makes about a thousand attempts in these
   * 300 ms). */
  fprintf(stderr, "  %" PRIu64 " attempts by the two waiters in 300 ms of "
                  "holding\n", held);
  RT_CHECK(held <= 20);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 2), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  uint64_t d1 = (a1.done_us - t0) / 1000, d2 = (a2.done_us - t0) / 1000;
  fprintf(stderr, "  waiters through %" PRIu64 " and %" PRIu64
                  " ms after the release (lease 30000, retry 20000)\n", d1, d2);
  RT_CHECK_EQ_INT(a1.rc, 0);
  RT_CHECK_EQ_INT(a2.rc, 0);
  RT_CHECK(d1 < 5000 && d2 < 5000);
  rlock_metrics_snapshot(w, m);
  RT_CHECK_EQ_INT(m->sem_waiters, 0);
  RT_CHECK_EQ_INT(m->sem_permits_held, 2);
  RT_CHECK(m->sem_acquisitions >= 2);
  free(m);
  rlock_sem_free(sh);
  rlock_sem_free(sw);
  rlock_client_close(h);
  rlock_client_close(w); /* gives its two back */
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
}

/* A waiter that holds what it got for 20 ms and gives it back. */
static void *waiter_passing(void *p) {
  waiter_arg *a = p;
  a->rc = rlock_sem_acquire(a->sem, a->n, 60000, RLOCK_WATCHDOG);
  a->done_us = rt_now_us();
  if (a->rc == 0) {
    rt_sleep_ms(20);
    RT_CHECK_EQ_INT(rlock_sem_release(a->sem, a->n), 0);
  }
  return NULL;
}

/*
 * Waiters of three clients behind one holder of both K = 2 permits, at
 * N = 3. The hold usually lives on two masters; on the third, two
 * waiters' tentative grants refuse the third waiter, so those give-backs
 * are announced (it was refused behind them) and wake all three: that
 * must not become a loop either (a bounded count of attempts while the
 * holder holds). The release must still let every one through, in turn
 * (each holds 20 ms).
 */
static void woken_by_release_clients_3(void) {
  rt_flush_all(srv, 3);
  rlock_client *h = open_client(3, 0, 20);
  RT_REQUIRE(h != NULL);
  rlock_sem *sh;
  RT_REQUIRE(rlock_sem_get(h, "wakec", 2, &sh) == 0);
  RT_REQUIRE(rlock_sem_acquire(sh, 2, 0, RLOCK_WATCHDOG) == 0);
  rlock_client *w[3];
  rlock_sem *sw[3];
  waiter_arg a[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    w[i] = open_client(3, 0, 20000);
    RT_REQUIRE(w[i] != NULL);
    RT_REQUIRE(rlock_sem_get(w[i], "wakec", 2, &sw[i]) == 0);
    a[i] = (waiter_arg){sw[i], 1, -99, 0};
    pthread_create(&t[i], NULL, waiter_passing, &a[i]);
  }
  uint64_t end = rt_now_ms() + 5000;
  const char *ch = "rlock:{wakec}:s:ch";
  while (rt_now_ms() < end && (rt_redis_numsub(&srv[0], ch) < 3 ||
                               rt_redis_numsub(&srv[1], ch) < 3 ||
                               rt_redis_numsub(&srv[2], ch) < 3))
    rt_sleep_ms(5);
  rt_sleep_ms(50); /* the first attempts are made */
  uint64_t before = 0, held = 0;
  for (int i = 0; i < 3; i++) before += atomic_load(&sw[i]->attempts);
  rt_sleep_ms(300);
  for (int i = 0; i < 3; i++) held += atomic_load(&sw[i]->attempts);
  held -= before;
  fprintf(stderr, "  %" PRIu64 " attempts by three clients' waiters in 300 "
                  "ms of holding\n", held);
  RT_CHECK(held <= 20);
  for (int i = 0; i < 3; i++) RT_CHECK(a[i].done_us == 0);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 2), 0);
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    RT_CHECK_EQ_INT(a[i].rc, 0);
    uint64_t d = (a[i].done_us - t0) / 1000;
    fprintf(stderr, "  waiter %d through %" PRIu64 " ms after the release\n",
            i, d);
    RT_CHECK(d < 5000);
  }
  for (int i = 0; i < 3; i++) {
    rlock_sem_free(sw[i]);
    rlock_client_close(w[i]);
  }
  rlock_sem_free(sh);
  rlock_client_close(h);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
}

/* A waiter with a wait of its own and when it started; what it got it
 * holds (the thread is the owner) until told to give it back. */
typedef struct timed_waiter {
  rlock_sem *sem;
  int64_t n, wait_ms;
  int rc, release_rc;
  _Atomic uint64_t start_us, done_us;
  atomic_int give_back;
} timed_waiter;

static void *timed_wait(void *p) {
  timed_waiter *a = p;
  atomic_store(&a->start_us, rt_now_us());
  a->rc = rlock_sem_acquire(a->sem, a->n, a->wait_ms, RLOCK_WATCHDOG);
  atomic_store(&a->done_us, rt_now_us());
  if (a->rc != 0) return NULL;
  uint64_t end = rt_now_ms() + 30000;
  while (!atomic_load(&a->give_back) && rt_now_ms() < end) rt_sleep_ms(2);
  a->release_rc = rlock_sem_release(a->sem, a->n);
  return NULL;
}

/* Waits until client c has want sem waiters queued (the gauge). */
static int waiters_queued(rlock_client *c, int64_t want, int ms) {
  rlock_metrics *m = calloc(1, sizeof *m);
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  int ok = 0;
  while (m != NULL && !ok) {
    rlock_metrics_snapshot(c, m);
    ok = (int64_t)m->sem_waiters == want;
    if (!ok && rt_now_ms() > end) break;
    if (!ok) rt_sleep_ms(5);
  }
  free(m);
  return ok;
}

/* The stage of the wake tests: after a flush, client h (polling every
 * 20 ms) holds both K = 2 permits of the semaphore called name, under the
 * watchdog; client x (polling only every 20 s, so that only a wake lets
 * its waiters through within the tests' bounds) has the same semaphore
 * open for its waiters. */
typedef struct wake_stage {
  rlock_client *h, *x;
  rlock_sem *sh, *sx;
} wake_stage;

static void stage_open(wake_stage *st, int n, const char *name) {
  rt_flush_all(srv, 3);
  st->h = open_client(n, 0, 20);
  st->x = open_client(n, 0, 20000);
  RT_REQUIRE(st->h != NULL && st->x != NULL);
  RT_REQUIRE(rlock_sem_get(st->h, name, 2, &st->sh) == 0);
  RT_REQUIRE(rlock_sem_get(st->x, name, 2, &st->sx) == 0);
  RT_REQUIRE(rlock_sem_acquire(st->sh, 2, 0, RLOCK_WATCHDOG) == 0);
}

/* Frees the stage; every key left behind must have a TTL. */
static void stage_close(wake_stage *st, int n) {
  rlock_sem_free(st->sh);
  rlock_sem_free(st->sx);
  rlock_client_close(st->h);
  rlock_client_close(st->x);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
}

/*
 * Waiters that want different numbers of permits. The holder holds both
 * K = 2 permits; W2 (wants 2) starts waiting first, then W1 (wants 1);
 * the holder gives one permit back. W2 cannot use it; W1 must get it at
 * once. Same client: one message wakes one waiter of the client, the
 * first in its queue, W2, which is refused: W1 must still be told. Two
 * clients: each client's W is woken by its own subscriber.
 *
 * Nothing but a wake can let W1 through within the bound: its client
 * polls only every 20 s (retry_delay_ms, not used while subscribed), the
 * holder's lease is the watchdog's 30 s (renewed: a refused waiter
 * sleeps until that lease would run out, at least 20 s), and W1's own
 * wait is 10 s, whose end is the sleep's cut-off (at its deadline W1
 * tries once more): the bound is 3 s after the release, and the release
 * comes less than 6 s after W1 started waiting, so W1's timer cannot
 * have fired. Then the holder gives back its other permit and W1 its
 * one: W2 gets both.
 */
static void mixed_wants(int n, int same_client) {
  wake_stage st;
  stage_open(&st, n, "mixed");
  rlock_client *x = st.x;
  rlock_sem *sh = st.sh, *sx = st.sx, *sy;
  rlock_client *y = same_client ? x : open_client(n, 0, 20000);
  RT_REQUIRE(y != NULL);
  RT_REQUIRE(rlock_sem_get(y, "mixed", 2, &sy) == 0);
  timed_waiter w2 = {.sem = sx, .n = 2, .wait_ms = 10000, .rc = -99};
  timed_waiter w1 = {.sem = sy, .n = 1, .wait_ms = 10000, .rc = -99};
  pthread_t t2, t1;
  pthread_create(&t2, NULL, timed_wait, &w2);
  /* W2 is refused and queued before W1 starts: it is first. */
  RT_CHECK(waiters_queued(x, 1, 5000));
  pthread_create(&t1, NULL, timed_wait, &w1);
  RT_CHECK(waiters_queued(y, same_client ? 2 : 1, 5000));
  RT_CHECK(subscribed_everywhere(n, "rlock:{mixed}:s:ch", 5000));
  rt_sleep_ms(100);
  RT_CHECK(atomic_load(&w1.done_us) == 0 && atomic_load(&w2.done_us) == 0);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 1), 0);
  uint64_t end = rt_now_ms() + 15000;
  while (atomic_load(&w1.done_us) == 0 && rt_now_ms() < end) rt_sleep_ms(1);
  uint64_t s1 = atomic_load(&w1.start_us), e1 = atomic_load(&w1.done_us);
  uint64_t d1 = e1 > t0 ? (e1 - t0) / 1000 : 0;
  fprintf(stderr, "  %s, N = %d: W1 (wants 1) through %" PRIu64
                  " ms after the release (rc %d), %" PRIu64 " ms after it "
                  "started waiting (its wait 10000, lease 30000, poll "
                  "20000)\n",
          same_client ? "one client" : "two clients", n, d1, w1.rc,
          e1 > s1 ? (e1 - s1) / 1000 : 0);
  RT_CHECK((t0 - s1) / 1000 < 6000);
  RT_CHECK(e1 != 0);
  RT_CHECK_EQ_INT(w1.rc, 0);
  RT_CHECK(d1 < 3000);
  RT_CHECK(atomic_load(&w2.done_us) == 0); /* one is still the holder's */
  /* The holder's other permit and W1's come back: W2 gets both. */
  uint64_t t3 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 1), 0);
  atomic_store(&w1.give_back, 1);
  pthread_join(t1, NULL);
  if (w1.rc == 0) RT_CHECK_EQ_INT(w1.release_rc, 0);
  end = rt_now_ms() + 15000;
  while (atomic_load(&w2.done_us) == 0 && rt_now_ms() < end) rt_sleep_ms(1);
  uint64_t e2 = atomic_load(&w2.done_us);
  uint64_t d2 = e2 > t3 ? (e2 - t3) / 1000 : 0;
  fprintf(stderr, "  W2 (wants 2) through %" PRIu64 " ms after both were "
                  "given back (rc %d)\n", d2, w2.rc);
  RT_CHECK(e2 > t3);
  RT_CHECK_EQ_INT(w2.rc, 0);
  RT_CHECK(d2 < 3000);
  atomic_store(&w2.give_back, 1);
  pthread_join(t2, NULL);
  if (w2.rc == 0) RT_CHECK_EQ_INT(w2.release_rc, 0);
  rlock_sem_free(sy);
  if (!same_client) rlock_client_close(y);
  stage_close(&st, n);
}

/*
 * The wake handed on by a refused waiter does not go round in a loop.
 * One client's waiters: W2a and W2b want both K = 2 permits, W1 wants
 * one, queued in that order. The holder gives one back: the wake goes
 * from W2a to W2b to W1, which takes it. The holder gives its other back:
 * one is free, W2a and W2b are refused and hand the wake to each other,
 * but only once each for those frees (before the count of frees told
 * them apart, two such waiters woke each other without end). Then W1
 * gives its permit back and the W2s get both in turn, woken (in either
 * order: the wakes may have left either first).
 */
static void mixed_wants_no_loop(int n) {
  wake_stage st;
  stage_open(&st, n, "mixedl");
  rlock_client *x = st.x;
  rlock_sem *sh = st.sh, *sx = st.sx;
  timed_waiter w[3] = {{.sem = sx, .n = 2, .wait_ms = 15000, .rc = -99},
                       {.sem = sx, .n = 2, .wait_ms = 15000, .rc = -99},
                       {.sem = sx, .n = 1, .wait_ms = 15000, .rc = -99}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    pthread_create(&t[i], NULL, timed_wait, &w[i]);
    RT_CHECK(waiters_queued(x, i + 1, 5000)); /* queued in this order */
  }
  RT_CHECK(subscribed_everywhere(n, "rlock:{mixedl}:s:ch", 5000));
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 1), 0);
  uint64_t end = rt_now_ms() + 5000;
  while (atomic_load(&w[2].done_us) == 0 && rt_now_ms() < end)
    rt_sleep_ms(1);
  uint64_t e = atomic_load(&w[2].done_us);
  fprintf(stderr, "  N = %d: W1 through %" PRIu64 " ms after the release, "
                  "behind two waiters for 2\n",
          n, e > t0 ? (e - t0) / 1000 : 0);
  RT_CHECK_EQ_INT(w[2].rc, 0);
  RT_CHECK(e > t0 && (e - t0) / 1000 < 3000);
  uint64_t before = atomic_load(&sx->attempts);
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 1), 0);
  rt_sleep_ms(300);
  uint64_t tries = atomic_load(&sx->attempts) - before;
  fprintf(stderr, "  %" PRIu64 " attempts by the two waiters for 2 in the "
                  "300 ms after one more permit came back\n", tries);
  RT_CHECK(tries >= 1); /* they were told */
  RT_CHECK(tries <= 12);
  RT_CHECK(atomic_load(&w[0].done_us) == 0 &&
           atomic_load(&w[1].done_us) == 0);
  /* W1 gives back: one of the W2s gets both (which one depends on the
   * order the wakes left them in), holds them until told and gives them
   * back: the other gets both. */
  uint64_t t1 = rt_now_us();
  atomic_store(&w[2].give_back, 1);
  pthread_join(t[2], NULL);
  if (w[2].rc == 0) RT_CHECK_EQ_INT(w[2].release_rc, 0);
  int done[2] = {0, 0};
  for (int round = 0; round < 2; round++) {
    int i = -1;
    end = rt_now_ms() + 5000;
    while (i < 0 && rt_now_ms() < end) {
      for (int j = 0; j < 2 && i < 0; j++)
        if (!done[j] && atomic_load(&w[j].done_us) != 0) i = j;
      if (i < 0) rt_sleep_ms(1);
    }
    RT_CHECK(i >= 0);
    if (i < 0) break;
    done[i] = 1;
    e = atomic_load(&w[i].done_us);
    fprintf(stderr, "  W2%c through %" PRIu64 " ms after the permits "
                    "before it came back (rc %d)\n", 'a' + i,
            e > t1 ? (e - t1) / 1000 : 0, w[i].rc);
    RT_CHECK_EQ_INT(w[i].rc, 0);
    RT_CHECK(e > t1 && (e - t1) / 1000 < 3000);
    if (round == 0) RT_CHECK(atomic_load(&w[!i].done_us) == 0);
    t1 = rt_now_us();
    atomic_store(&w[i].give_back, 1);
    pthread_join(t[i], NULL);
    if (w[i].rc == 0) RT_CHECK_EQ_INT(w[i].release_rc, 0);
  }
  for (int j = 0; j < 2; j++) {
    if (done[j]) continue;
    atomic_store(&w[j].give_back, 1);
    pthread_join(t[j], NULL);
  }
  stage_close(&st, n);
}

/*
 * Waiters of one client take all the permits in turn. The holder holds
 * both K = 2; W2a then W2b, of one client, want both. The holder gives
 * both back: the message wakes W2a, which takes them. W2b was refused
 * before W2a's grant, and a release is announced only when someone was
 * refused behind the owner (sem_scripts.c): W2a's release must still let
 * W2b through at once, not when its wait (10 s) runs out.
 */
static void in_turn(int n) {
  wake_stage st;
  stage_open(&st, n, "turn");
  rlock_client *x = st.x;
  rlock_sem *sh = st.sh, *sx = st.sx;
  timed_waiter w[2] = {{.sem = sx, .n = 2, .wait_ms = 10000, .rc = -99},
                       {.sem = sx, .n = 2, .wait_ms = 10000, .rc = -99}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    pthread_create(&t[i], NULL, timed_wait, &w[i]);
    RT_CHECK(waiters_queued(x, i + 1, 5000)); /* queued in this order */
  }
  RT_CHECK(subscribed_everywhere(n, "rlock:{turn}:s:ch", 5000));
  rt_sleep_ms(100);
  uint64_t t1 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_sem_release(sh, 2), 0);
  for (int i = 0; i < 2; i++) {
    uint64_t end = rt_now_ms() + 12000;
    while (atomic_load(&w[i].done_us) == 0 && rt_now_ms() < end)
      rt_sleep_ms(1);
    uint64_t e = atomic_load(&w[i].done_us), s = atomic_load(&w[i].start_us);
    fprintf(stderr, "  N = %d: W2%c through %" PRIu64 " ms after the "
                    "permits before it came back (rc %d), %" PRIu64
                    " ms after it started waiting (its wait 10000)\n", n,
            'a' + i, e > t1 ? (e - t1) / 1000 : 0, w[i].rc,
            e > s ? (e - s) / 1000 : 0);
    RT_CHECK((t1 - s) / 1000 < 6000); /* its wait's end is > 4 s away */
    RT_CHECK_EQ_INT(w[i].rc, 0);
    RT_CHECK(e > t1 && (e - t1) / 1000 < 3000);
    t1 = rt_now_us();
    atomic_store(&w[i].give_back, 1);
    pthread_join(t[i], NULL);
    if (w[i].rc == 0) RT_CHECK_EQ_INT(w[i].release_rc, 0);
  }
  stage_close(&st, n);
}

static void in_turn_1(void) { in_turn(1); }
static void in_turn_3(void) { in_turn(3); }
static void mixed_wants_no_loop_1(void) { mixed_wants_no_loop(1); }
static void mixed_wants_no_loop_3(void) { mixed_wants_no_loop(3); }
static void mixed_wants_1(void) { mixed_wants(1, 1); }
static void mixed_wants_3(void) { mixed_wants(3, 1); }
static void mixed_wants_clients_1(void) { mixed_wants(1, 0); }
static void mixed_wants_clients_3(void) { mixed_wants(3, 0); }

static void woken_by_release_1(void) { woken_by_release(1); }
static void woken_by_release_3(void) { woken_by_release(3); }

/* --- refusals ------------------------------------------------------------- */

static void over_release(int n) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(n, 0, 20);
  RT_REQUIRE(c != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "over", 4, &s) == 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), RLOCK_ENOTOWNER); /* none held */
  RT_REQUIRE(rlock_sem_acquire(s, 2, 0, 10000) == 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 3), RLOCK_ENOTOWNER);
  int64_t held = -1, avail = -1;
  RT_CHECK_EQ_INT(rlock_sem_held(s, &held), 0);
  RT_CHECK_EQ_INT(held, 2);
  RT_CHECK_EQ_INT(rlock_sem_available(s, &avail), 0);
  RT_CHECK_EQ_INT(avail, 2);
  /* Another owner's release cannot take this thread's permits. */
  RT_CHECK_EQ_INT(rlock_sem_owner_held(s, 7, &held), 0);
  RT_CHECK_EQ_INT(held, 0);
  RT_CHECK_EQ_INT(rlock_sem_release_async(s, 7, 1, NULL, NULL), 0);
  RT_CHECK_EQ_INT(rlock_sem_available(s, &avail), 0);
  RT_CHECK_EQ_INT(avail, 2);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 1, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_sem_held(s, &held), 0);
  RT_CHECK_EQ_INT(held, 3);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 2), 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_sem_available(s, &avail), 0);
  RT_CHECK_EQ_INT(avail, 4);
  /* Bad arguments, refused before anything is sent. */
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 0, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 5, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 1, -5, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 1, 0, 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 0), RLOCK_EINVAL);
  rlock_sem *bad = NULL;
  RT_CHECK_EQ_INT(rlock_sem_get(c, "over", 0, &bad), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_sem_get(c, "ov{er", 2, &bad), RLOCK_EINVAL);
  RT_CHECK(bad == NULL);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  rlock_sem_free(s);
  rlock_client_close(c);
}

static void over_release_1(void) { over_release(1); }
static void over_release_3(void) { over_release(3); }

/* Two clients that disagree about K: the second is told the stored limit
 * and changes nothing, until an operator resets the semaphore. */
static void k_disagreement(int n) {
  rt_flush_all(srv, 3);
  rlock_client *a = open_client(n, 0, 20), *b = open_client(n, 0, 20);
  RT_REQUIRE(a != NULL && b != NULL);
  /* Both clients' handshakes done first: had A's connection to one master
   * still been in its handshake, A's acquire could reach that master
   * after B's, and B's limit would be the first stored there (on a loaded
   * machine: A's rlock_sem_available then says RLOCK_ECONFLICT). */
  for (int i = 0; i < n; i++)
    RT_REQUIRE(rt_up_within(a, i, 10000) && rt_up_within(b, i, 10000));
  rlock_sem *s3, *s4;
  RT_REQUIRE(rlock_sem_get(a, "limit", 3, &s3) == 0);
  RT_REQUIRE(rlock_sem_get(b, "limit", 4, &s4) == 0);
  RT_REQUIRE(rlock_sem_acquire(s3, 2, 0, 10000) == 0);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s4, 1, 1000, 10000), RLOCK_ECONFLICT);
  char why[256] = "";
  rlock_client_last_error(b, why, sizeof why);
  fprintf(stderr, "  %s\n", why);
  RT_CHECK(strstr(why, "limit of 3") != NULL);
  RT_CHECK(strstr(why, "this handle's is 4") != NULL);
  int64_t v = -1;
  RT_CHECK_EQ_INT(rlock_sem_available(s4, &v), RLOCK_ECONFLICT);
  RT_CHECK_EQ_INT(rlock_sem_held(s4, &v), 0);
  RT_CHECK_EQ_INT(v, 0);
  RT_CHECK_EQ_INT(rlock_sem_available(s3, &v), 0);
  RT_CHECK_EQ_INT(v, 1); /* unchanged */
  RT_CHECK(strcmp(rlock_strerror(RLOCK_ECONFLICT), "unknown error") != 0);
  /* The operator's reset forgets the limit (and A's permits: lost). */
  RT_CHECK_EQ_INT(rlock_sem_reset(s4), 0);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s4, 4, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s3, 2), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rlock_sem_release(s4, 4), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  rlock_sem_free(s3);
  rlock_sem_free(s4);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void k_disagreement_1(void) { k_disagreement(1); }
static void k_disagreement_3(void) { k_disagreement(3); }

/* --- async, cancel, loss ----------------------------------------------- */

static atomic_int async_rc = -99, async_calls;
static void on_async(rlock_sem *sem, int status, void *arg) {
  (void)sem;
  (void)arg;
  async_rc = status;
  atomic_fetch_add(&async_calls, 1);
}

static int wait_calls(int want, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (atomic_load(&async_calls) < want) {
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(2);
  }
  return 1;
}

static void async_cancel(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 0, 20);
  RT_REQUIRE(c != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "async", 2, &s) == 0);
  async_calls = 0;
  RT_REQUIRE(rlock_sem_acquire_async(s, 1, 2, 0, RLOCK_WATCHDOG, on_async,
                                     NULL) == 0);
  RT_REQUIRE(wait_calls(1, 5000));
  RT_CHECK_EQ_INT(async_rc, 0);
  uint64_t tok = 0;
  RT_CHECK_EQ_INT(rlock_sem_owner_fencing_token(s, 1, &tok), 0);
  RT_CHECK(tok > 0);
  /* Owner 2 waits; a second acquisition of owner 2 in flight is refused;
   * a cancel ends the first. */
  RT_REQUIRE(rlock_sem_acquire_async(s, 2, 1, RLOCK_WAIT_FOREVER, 10000,
                                     on_async, NULL) == 0);
  RT_REQUIRE(rlock_sem_acquire_async(s, 2, 1, 0, 10000, on_async, NULL) ==
             0);
  RT_REQUIRE(wait_calls(2, 5000));
  RT_CHECK_EQ_INT(async_rc, RLOCK_EINVAL);
  RT_CHECK(subscribed_everywhere(3, "rlock:{async}:s:ch", 5000));
  RT_CHECK_EQ_INT(rlock_sem_cancel_async(s, 2), 0);
  RT_REQUIRE(wait_calls(3, 5000));
  RT_CHECK_EQ_INT(async_rc, RLOCK_ECANCELED);
  RT_CHECK_EQ_INT(rlock_sem_cancel_async(s, 2), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_sem_release_async(s, 1, 2, on_async, NULL), 0);
  RT_REQUIRE(wait_calls(4, 5000));
  RT_CHECK_EQ_INT(async_rc, 0);
  int64_t v = -1;
  RT_CHECK_EQ_INT(rlock_sem_available(s, &v), 0);
  RT_CHECK_EQ_INT(v, 2);
  RT_CHECK_EQ_INT(rlock_sem_owner_held(s, 2, &v), 0);
  RT_CHECK_EQ_INT(v, 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
  rlock_sem_free(s);
  rlock_client_close(c);
}

static atomic_int lost_calls;
static _Atomic uint64_t lost_owner;
static void on_lost(rlock_sem *sem, uint64_t owner, int is_thread,
                    void *arg) {
  (void)sem;
  (void)is_thread;
  (void)arg;
  lost_owner = owner;
  atomic_fetch_add(&lost_calls, 1);
}

/* A reset takes a watchdog holder's permits away: its next renewal finds
 * them gone, the owner is told once, and its release says RLOCK_ELOST. */
static void lost_on_reset(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 900, 20);
  RT_REQUIRE(c != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "lose", 2, &s) == 0);
  rlock_sem_set_lost_cb(s, on_lost, NULL);
  lost_calls = 0;
  RT_REQUIRE(rlock_sem_acquire(s, 2, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(700); /* renewed past its first 900 ms lease */
  int64_t v = -1;
  RT_CHECK_EQ_INT(rlock_sem_held(s, &v), 0);
  RT_CHECK_EQ_INT(v, 2);
  RT_CHECK_EQ_INT(rlock_sem_reset(s), 0);
  uint64_t end = rt_now_ms() + 5000;
  while (lost_calls == 0 && rt_now_ms() < end) rt_sleep_ms(10);
  RT_CHECK_EQ_INT(lost_calls, 1);
  RT_CHECK_EQ_INT(lost_owner, rlock_thread_id());
  RT_CHECK_EQ_INT(rlock_sem_held(s, &v), 0);
  RT_CHECK_EQ_INT(v, 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), RLOCK_ENOTOWNER);
  rlock_metrics *m = calloc(1, sizeof *m);
  rlock_metrics_snapshot(c, m);
  RT_CHECK_EQ_INT(m->sem_permits_lost, 2);
  RT_CHECK_EQ_INT(m->sem_permits_held, 0);
  free(m);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 2, 0, 10000), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
  rlock_sem_free(s);
  rlock_client_close(c);
}

/* --- split votes converge ---------------------------------------------- */

/* Writes, on master i, each (slot, owner) pair of pairs[0..2n) as held,
 * each owner's lease a minute long in the master's clock, the limit K. */
static void seed_slots(int i, const char *name, const char *const *pairs,
                       int n) {
  static const char lua[] =
      "local t = redis.call('time')\n"
      "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
      "redis.call('hset', KEYS[1], '#limit', ARGV[1])\n"
      "for i = 2, #ARGV, 2 do\n"
      "  redis.call('hset', KEYS[1], ARGV[i], ARGV[i + 1])\n"
      "  redis.call('zadd', KEYS[2], now + 60000, ARGV[i + 1])\n"
      "end\n"
      "redis.call('pexpire', KEYS[1], 60000)\n"
      "if redis.call('exists', KEYS[2]) == 1 then\n"
      "  redis.call('pexpire', KEYS[2], 60000)\n"
      "end\n"
      "return 1\n";
  char key[128], tkey[128];
  snprintf(key, sizeof key, "rlock:{%s}:s", name);
  snprintf(tkey, sizeof tkey, "rlock:{%s}:s:t", name);
  redisReply *r =
      n == 1 ? rt_redis_cmd(&srv[i], "EVAL %s 2 %s %s 3 %s %s", lua, key,
                            tkey, pairs[0], pairs[1])
             : rt_redis_cmd(&srv[i], "EVAL %s 2 %s %s 3 %s %s %s %s", lua,
                            key, tkey, pairs[0], pairs[1], pairs[2],
                            pairs[3]);
  RT_CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
  if (r) freeReplyObject(r);
}

/* The slots taken in a slot hash on master i: its fields but the records
 * (the limit, the counts of refusals and frees, the owners' marks), which
 * start with '#'. */
static long long slots_on(int i, const char *key) {
  redisReply *r = rt_redis_cmd(&srv[i], "HKEYS %s", key);
  long long n = r && r->type == REDIS_REPLY_ARRAY ? 0 : -1;
  for (size_t k = 0; n >= 0 && k < r->elements; k++)
    if (r->element[k]->str[0] != '#') n++;
  if (r) freeReplyObject(r);
  return n;
}

/*
 * The state concurrent acquisitions leave behind at N = 3, K = 3: owner
 * "a" holds slot 1 (granted by masters 0 and 1), owner "b" slot 2
 * (masters 0 and 2); what the third master of each granted was given
 * back. Slot 3 is free on masters 0 and 1, a majority, so a permit is
 * free. A lone acquirer that asks each master for its lowest free slot
 * gets 3, 2 and 1: a split. Its next attempt must not ask again in a way
 * that splits the same way each time (hinting slot 1, the lowest of three
 * tied slots, taken on masters 0 and 1, it would get 3, 2, 1 again until
 * its wait ran out, woken at once each time by its own give-back's
 * message: hundreds of attempts, RLOCK_ETIMEDOUT).
 */
static void split_converges(void) {
  rt_flush_all(srv, 3);
  static const char *const m0[] = {"1", "a", "2", "b"};
  static const char *const m1[] = {"1", "a"};
  static const char *const m2[] = {"2", "b"};
  seed_slots(0, "seeded", m0, 2);
  seed_slots(1, "seeded", m1, 1);
  seed_slots(2, "seeded", m2, 1);
  rlock_client *c = open_client(3, 0, 20);
  RT_REQUIRE(c != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "seeded", K, &s) == 0);
  int64_t avail = -1;
  RT_CHECK_EQ_INT(rlock_sem_available(s, &avail), 0);
  RT_CHECK(avail >= 1);
  int rc = rlock_sem_acquire(s, 1, 3000, 10000);
  uint64_t attempts = atomic_load(&s->attempts);
  uint64_t splits = atomic_load(&s->splits);
  fprintf(stderr, "  acquire: %d after %" PRIu64 " attempts, %" PRIu64
                  " split\n", rc, attempts, splits);
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(attempts <= 20); /* 1 in 3 of the retries splits again */
  int64_t held = 0;
  RT_CHECK_EQ_INT(rlock_sem_held(s, &held), 0);
  RT_CHECK_EQ_INT(held, rc == 0 ? 1 : 0);
  if (rc == 0) RT_CHECK_EQ_INT(rlock_sem_release(s, 1), 0);
  /* Nothing of this owner is left: a's and b's slots only. */
  for (int i = 0; i < 3; i++)
    RT_CHECK_EQ_INT(slots_on(i, "rlock:{seeded}:s"), i == 0 ? 2 : 1);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
  rlock_sem_free(s);
  rlock_client_close(c);
}

/*
 * N = 3 with one master paused (SIGSTOP) for part of the run: the two
 * others are a majority, so the threads go on, and the checker still sees
 * at most K holders; when it resumes, nothing it granted late is kept.
 * The pause comes once 20 holds were made, so that it lands mid-run (a
 * fixed 500 ms would come after the last hold in most runs). A permit held
 * when the master stopped may have been granted by it and one other: its
 * release then cannot be confirmed by a majority (RLOCK_ENOQUORUM; it is
 * sent again and lands when the master resumes). Only those K may fail.
 */
static void k_holders_master_paused(void) {
  rt_flush_all(srv, 3);
  rlock_client *a = open_client(3, 0, 20);
  RT_REQUIRE(a != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(a, "paused", K, &s) == 0);
  hold_log *log = calloc(1, sizeof *log);
  pthread_t th[6];
  worker w = {s, log, 40, rt_now_us() + (uint64_t)HANG_S * 1000000u};
  for (int i = 0; i < 6; i++) pthread_create(&th[i], NULL, work, &w);
  uint64_t hang = rt_now_ms() + HANG_S * 1000u;
  while (__atomic_load_n(&log->n, __ATOMIC_SEQ_CST) < 20 &&
         rt_now_ms() < hang)
    rt_sleep_ms(1);
  int before = __atomic_load_n(&log->n, __ATOMIC_SEQ_CST);
  RT_CHECK(rt_redis_pause(&srv[2]) == 0);
  rt_sleep_ms(2000);
  int during = __atomic_load_n(&log->n, __ATOMIC_SEQ_CST) - before;
  RT_CHECK(rt_redis_resume(&srv[2]) == 0);
  for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
  fprintf(stderr, "  paused after %d holds; %d holds while it was paused; "
                  "%d releases not confirmed\n", before, during,
          log->release_enoquorum);
  int max = max_overlap(log);
  report("master paused", log, max);
  RT_CHECK(max >= 1 && max <= K);
  RT_CHECK(before >= 20 && before < 6 * 40); /* mid-run */
  RT_CHECK(during > 0);                      /* the threads went on */
  RT_CHECK_EQ_INT(log->errors, log->release_enoquorum);
  RT_CHECK(log->release_enoquorum <= K);
  RT_CHECK_EQ_INT(log->n, 6 * 40);
  int64_t avail = -1;
  RT_CHECK_EQ_INT(rlock_sem_available(s, &avail), 0);
  RT_CHECK_EQ_INT(avail, K);
  free(log);
  rlock_sem_free(s);
  rlock_client_close(a);
  /* What the paused master granted late was given back. */
  rt_sleep_ms(300);
  RT_CHECK_EQ_INT(slots_on(2, "rlock:{paused}:s"), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"k_holders_threads_1", k_holders_threads_1},
      {"k_holders_threads_3", k_holders_threads_3},
      {"k_holders_processes_1", k_holders_processes_1},
      {"k_holders_processes_3", k_holders_processes_3},
      {"sigkill_holder_1", sigkill_holder_1},
      {"sigkill_holder_3", sigkill_holder_3},
      {"woken_by_release_1", woken_by_release_1},
      {"woken_by_release_3", woken_by_release_3},
      {"woken_by_release_clients_3", woken_by_release_clients_3},
      {"mixed_wants_1", mixed_wants_1},
      {"mixed_wants_3", mixed_wants_3},
      {"mixed_wants_clients_1", mixed_wants_clients_1},
      {"mixed_wants_clients_3", mixed_wants_clients_3},
      {"mixed_wants_no_loop_1", mixed_wants_no_loop_1},
      {"mixed_wants_no_loop_3", mixed_wants_no_loop_3},
      {"in_turn_1", in_turn_1},
      {"in_turn_3", in_turn_3},
      {"over_release_1", over_release_1},
      {"over_release_3", over_release_3},
      {"k_disagreement_1", k_disagreement_1},
      {"k_disagreement_3", k_disagreement_3},
      {"async_cancel", async_cancel},
      {"lost_on_reset", lost_on_reset},
      {"k_holders_master_paused", k_holders_master_paused},
      {"split_converges", split_converges},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
