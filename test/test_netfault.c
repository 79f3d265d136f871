/*
 * Network faults (test/netns.h): packets dropped silently by nftables in
 * a network namespace of the test's own, judged by the linearizability
 * checker (test/history_check.py) and by a lost-update workload on a
 * storage server of its own.
 *
 * A scenario: N masters and one storage server, all listening on every
 * loopback address of the namespace; WORKERS forked processes, worker k
 * with a client of its own that dials the masters on 127.0.0.<10 + k>, so
 * that a rule can cut one client off; one fault, then a heal. Each worker
 * takes the lock of its kind again and again with a fixed lease (a lock,
 * a fair lock, either side of a read-write lock, one or both permits of
 * a semaphore of two), and records every call in one history file
 * (test/history.h): the acquisitions and releases with their results,
 * and, when a hold did not end by its release (the unlock said
 * RLOCK_ELOST, or it could not say), a "lose" whose window runs from the
 * earliest end of the lease (invoke + lease - drift allowance) to when it
 * was surely over. At the end history_check.py must find the history
 * linearizable: no two exclusive holds overlap, with every lose placed
 * no earlier than a lease allows.
 *
 * The lost-update workload: inside every exclusive hold (a lock, the
 * write side, both permits) the worker reads two counters from the
 * storage server, sleeps, and writes each back plus one. One is fenced:
 * the reads and the writes go through a Lua script on the storage that
 * refuses a token below the highest it has seen (and raises the highest
 * to the token of every access it lets through). The other is a plain
 * GET and SET. At the end the fenced counter must equal the fenced
 * writes accepted (no update lost), and every refused access must belong
 * to a hold that was lost (its unlock said RLOCK_ELOST, or its validity
 * had ended before the refusal); the plain counter's shortfall is
 * reported, not judged.
 *
 * The faults (for N masters, a minority is max(1, N/2) of them; with one
 * master it is the whole deployment):
 *   cut_both        a minority cut off both ways
 *   cut_replies     its replies lost, requests arriving
 *   cut_requests    requests to it lost
 *   half_open       master 0 cut off, killed (its FIN and RST lost) and
 *                   restarted behind the cut, so that the clients'
 *                   connections are half open until the heal
 *   client_minority worker 0, while it holds, cut off from a majority
 *   cut_pause       a minority cut off and one more master stopped
 *                   (SIGSTOP): no majority; with one master, its replies
 *                   cut and it stopped
 *   holder_stop     a worker stopped (SIGSTOP) inside its hold, between
 *                   its reads and its writes, for longer than its lease
 * After the heal (for holder_stop, the SIGCONT) every worker's client
 * must see every master up again, without a restart, and some
 * acquisition must succeed: the time that took is the recovery time.
 *
 * The tests named *_lost_cb_* are the client cut off from a majority
 * while it holds a watchdog lock: its lost-lock callback must run, and
 * the other client gets the lock only after it did (checked by the same
 * checker, the lose recorded at the callback); its unlock then says
 * RLOCK_ELOST, and once healed the same client takes the lock again.
 *
 * Modes besides the tests (scripts/faults, scripts/soak):
 *   test_netfault --table SECONDS   every fault x kind x N = 1, 3, 5,
 *                                   the faults sharing SECONDS; a table
 *   test_netfault --soak SECONDS    faults in turn for SECONDS against
 *                                   one client in this process, its RSS
 *                                   and descriptors printed each minute
 * Without a network namespace (not root, no nft) every mode prints
 * "SKIP: ..." and exits 77.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "harness.h"
#include "history.h"
#include "netns.h"

#define WORKERS 3
#define MAXN 5
#define LEASE_MS 1000
#define WD_MS 1500
#define SEM_K 2

enum { K_LOCK, K_FAIR, K_RW, K_SEM, NKINDS };
static const char *kind_names[NKINDS] = {"lock", "fair", "rw", "sem"};

enum {
  F_CUT_BOTH,
  F_CUT_REPLIES,
  F_CUT_REQUESTS,
  F_HALF_OPEN,
  F_CLIENT_MINORITY,
  F_CUT_PAUSE,
  F_HOLDER_STOP,
  NFAULTS
};
static const char *fault_names[NFAULTS] = {
    "cut_both", "cut_replies", "cut_requests", "half_open",
    "client_minority", "cut_pause", "holder_stop"};

/* What one worker tells the parent, in memory shared across fork. */
typedef struct wstat {
  atomic_long ops, ok, fail, unknown;
  atomic_long fenced_ok, refused, refused_lost, refused_held, plain_writes;
  atomic_long errors;     /* the storage failed, or a call gave nonsense */
  atomic_int holding;     /* 1 in an exclusive hold, 2 past its reads */
  atomic_int all_up;      /* its client sees every master up */
  atomic_llong up_since;  /* when all_up last became 1 (ns) */
  atomic_llong last_ok;   /* its last successful acquisition (ns) */
  atomic_int started;
} wstat;

typedef struct shared {
  atomic_int stop;
  wstat w[WORKERS];
} shared;

typedef struct scen {
  int fault, kind, n;
  int fault_ms;
  /* results */
  long ops, ok, fail, unknown, fenced_ok, refused, refused_held;
  long plain_writes, lost_fenced, lost_plain, errors;
  int verdict;        /* the checker's exit status */
  long recover_ms;    /* -1: not within the bound */
  int workers_ok;     /* every worker exited 0 */
  int fault_applied;  /* the fault's condition came (a holder to stop) */
} scen;

static rt_redis masters[MAXN];
static int nmasters_up; /* how many of masters[] run */
static rt_redis storage;
static shared *sh;
static char hist_path[256];

static int64_t now_ns(void) { return rt_hist_now(); }

/* --- servers ------------------------------------------------------------- */

static int start_server(rt_redis *r) {
  static const char *const args[] = {RT_NETNS_BIND, NULL};
  rt_redis_opts o = {.unix_socket = 1, .args = args};
  return rt_redis_start_opts(r, &o);
}

/* n masters and the storage, started once and kept (flushed between
 * scenarios); more masters are started when a scenario needs them. */
static int servers_for(int n) {
  if (storage.pid == 0 && start_server(&storage) != 0) return -1;
  for (; nmasters_up < n; nmasters_up++)
    if (start_server(&masters[nmasters_up]) != 0) return -1;
  for (int i = 0; i < n; i++) {
    if (masters[i].paused) rt_redis_resume(&masters[i]);
    if (masters[i].pid == 0 && rt_redis_restart(&masters[i]) != 0) return -1;
    rt_redis_run(&masters[i], "FLUSHALL");
  }
  rt_redis_run(&storage, "FLUSHALL");
  return 0;
}

static void stop_servers(void) {
  rt_redis_stop_many(masters, nmasters_up);
  nmasters_up = 0;
  rt_redis_stop(&storage);
}

/* --- the storage: fenced and plain counters ------------------------------ */

/* KEYS[1] the counter, KEYS[2] the highest token seen; ARGV[1] the token,
 * ARGV[2] the value to write (absent: a read). -1: refused. */
static const char fenced_lua[] =
    "local hi = tonumber(redis.call('GET', KEYS[2]) or '0') "
    "local t = tonumber(ARGV[1]) "
    "if t < hi then return -1 end "
    "redis.call('SET', KEYS[2], ARGV[1]) "
    "if ARGV[2] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end "
    "return tonumber(redis.call('GET', KEYS[1]) or '0')";

static redisContext *storage_conn(void) {
  struct timeval tv = {2, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", storage.port, tv);
  if (c == NULL || c->err) {
    if (c) redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  return c;
}

/* The fenced access: the value read (or 1 for a write), -1 refused, -2 an
 * error. */
static long long fenced(redisContext *c, uint64_t token, long long write) {
  char t[32], v[32];
  snprintf(t, sizeof t, "%llu", (unsigned long long)token);
  snprintf(v, sizeof v, "%lld", write);
  redisReply *r =
      write >= 0
          ? redisCommand(c, "EVAL %s 2 cnt:f cnt:hi %s %s", fenced_lua, t, v)
          : redisCommand(c, "EVAL %s 2 cnt:f cnt:hi %s", fenced_lua, t);
  long long x = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
  if (r) freeReplyObject(r);
  return x;
}

static long long plain_get(redisContext *c) {
  redisReply *r = redisCommand(c, "GET cnt:p");
  long long x = r && r->type == REDIS_REPLY_STRING ? atoll(r->str)
                : r && r->type == REDIS_REPLY_NIL  ? 0
                                                   : -2;
  if (r) freeReplyObject(r);
  return x;
}

static int plain_set(redisContext *c, long long v) {
  redisReply *r = redisCommand(c, "SET cnt:p %lld", v);
  int ok = r && r->type == REDIS_REPLY_STATUS;
  if (r) freeReplyObject(r);
  return ok ? 0 : -1;
}

/* --- a worker --------------------------------------------------------------- */

typedef struct worker_ctx {
  int w;
  rlock_client *c;
  int n;
} worker_ctx;

/* Watches the client's metrics: all_up and when it last became so. */
static void *up_watch(void *arg) {
  worker_ctx *x = arg;
  wstat *st = &sh->w[x->w];
  rlock_metrics m;
  int was = 0;
  while (!atomic_load(&sh->stop)) {
    if (rlock_metrics_snapshot(x->c, &m) == 0) {
      int up = 1;
      for (int i = 0; i < x->n; i++) up &= m.masters[i].up != 0;
      if (up && !was) atomic_store(&st->up_since, now_ns());
      atomic_store(&st->all_up, up);
      was = up;
    }
    rt_sleep_ms(10);
  }
  return NULL;
}

/* The client options every client here has: short timeouts, leases of a
 * second or so, the restart quarantine covering them. */
static void client_options(rlock_options *o) {
  rlock_options_init(o);
  o->master_timeout_ms = 100;
  o->connect_timeout_ms = 500;
  o->retry_delay_ms = 20;
  o->retry_jitter_ms = 20;
  o->watchdog_timeout_ms = WD_MS;
  o->max_lease_ms = 2000;
}

/* A client of the first n masters dialed on client k's address. */
static rlock_client *client_for(int k, int n) {
  char addr[32], urls[MAXN][64];
  const char *m[MAXN];
  rt_net_addr(k, addr, sizeof addr);
  for (int i = 0; i < n; i++) {
    snprintf(urls[i], sizeof urls[i], "%s:%d", addr, masters[i].port);
    m[i] = urls[i];
  }
  rlock_options o;
  client_options(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

typedef struct hold_rec {
  int fd;
  const char *proc;
  const char *owner;
  const char *kind;
  const char *args;
} hold_rec;

static void rec(const hold_rec *h, const char *op, int64_t t0, int64_t t1,
                const char *result) {
  rt_hist_rec r = {.proc = h->proc, .owner = h->owner, .name = "nf",
                   .kind = h->kind, .op = op, .args = h->args,
                   .invoke_ns = t0, .complete_ns = t1, .result = result};
  if (rt_hist_append(h->fd, &r) != 0) perror("rt_hist_append");
}

/* What an unlock's status says of the hold (invoked at t0 with the
 * lease): released, or lost in a window from the earliest end of the
 * lease to when it was surely gone. */
static void rec_end(const hold_rec *h, const char *release_op, int rc,
                    int64_t acq0, int64_t acq1, int64_t t2, int64_t t3) {
  int64_t lease = (int64_t)LEASE_MS * 1000000;
  int64_t drift = lease / 100 + 2000000;
  int64_t vend = acq0 + lease - drift;   /* earliest end of the lease */
  int64_t upper = acq1 + lease + drift;  /* gone on every master by then */
  if (rc == 0) {
    rec(h, release_op, t2, t3, "ok");
  } else if (rc == RLOCK_ELOST) {
    int64_t c = t3 < upper ? t3 : upper;
    rec(h, "lose", vend, c > vend ? c : vend, "ok");
  } else {
    /* ENOQUORUM, EREDIS: the release may have happened, or the lease
     * ends it. */
    rec(h, release_op, t2, -1, "unknown");
    rec(h, "lose", vend, upper > t3 ? upper : t3, "ok");
  }
}

/* The exclusive hold's work: fenced and plain read, a pause, writes. */
static void work(wstat *st, redisContext *sc, uint64_t token, unsigned *seed,
                 int *refused) {
  *refused = 0;
  long long f = fenced(sc, token, -1);
  long long p = plain_get(sc);
  if (f == -2 || p == -2) {
    st->errors++;
    return;
  }
  atomic_store(&st->holding, 2);
  rt_sleep_ms(30 + (int)(rand_r(seed) % 90));
  if (f == -1) {
    *refused = 1;
  } else {
    long long r = fenced(sc, token, f + 1);
    if (r == 1) st->fenced_ok++;
    else if (r == -1) *refused = 1;
    else st->errors++;
  }
  if (plain_set(sc, p + 1) == 0) st->plain_writes++;
  else st->errors++;
}

static int acquire_status_fail(int rc) {
  return rc == RLOCK_ETIMEDOUT || rc == RLOCK_ENOQUORUM;
}

static void worker_main(int w, int kind, int n) {
  wstat *st = &sh->w[w];
  unsigned seed = (unsigned)getpid() ^ (unsigned)now_ns();
  rlock_client *c = client_for(w, n);
  redisContext *sc = storage_conn();
  int fd = rt_hist_open(hist_path);
  if (!c || !sc || fd < 0) {
    fprintf(stderr, "worker %d: cannot open its client or storage\n", w);
    _exit(3);
  }
  worker_ctx x = {w, c, n};
  pthread_t watch;
  pthread_create(&watch, NULL, up_watch, &x);
  rlock *l = NULL, *rd = NULL, *wr = NULL;
  rlock_sem *sem = NULL;
  int rc = 0;
  if (kind == K_LOCK) rc = rlock_get(c, "nf", &l);
  else if (kind == K_FAIR) rc = rlock_get_fair(c, "nf", &l);
  else if (kind == K_RW)
    rc = rlock_get_read(c, "nf", &rd) || rlock_get_write(c, "nf", &wr);
  else rc = rlock_sem_get(c, "nf", SEM_K, &sem);
  if (rc != 0) _exit(3);
  atomic_store(&st->started, 1);
  char proc[16], owner[48];
  snprintf(proc, sizeof proc, "w%d", w);
  const char *hkind = kind == K_RW ? "rw" : kind == K_SEM ? "sem" : "mutex";
  for (long i = 0; !atomic_load(&sh->stop); i++) {
    snprintf(owner, sizeof owner, "w%d.%ld", w, i);
    char args[64] = "{}";
    int excl = 1, nperm = 0;
    rlock *h = l;
    const char *acq_op = "acquire", *rel_op = "release";
    if (kind == K_RW) {
      excl = rand_r(&seed) % 2;
      h = excl ? wr : rd;
      acq_op = excl ? "write_acquire" : "read_acquire";
      rel_op = excl ? "write_release" : "read_release";
    } else if (kind == K_SEM) {
      nperm = 1 + (int)(rand_r(&seed) % SEM_K);
      excl = nperm == SEM_K;
      snprintf(args, sizeof args, "{\"n\":%d,\"permits\":%d}", nperm, SEM_K);
    }
    hold_rec hr = {fd, proc, owner, hkind, args};
    st->ops++;
    int64_t t0 = now_ns();
    rc = sem ? rlock_sem_acquire(sem, nperm, 300, LEASE_MS)
             : rlock_trylock(h, 300, LEASE_MS);
    int64_t t1 = now_ns();
    if (rc != 0) {
      if (acquire_status_fail(rc)) {
        st->fail++;
        rec(&hr, acq_op, t0, t1, "fail");
      } else {
        st->unknown++;
        rec(&hr, acq_op, t0, -1, "unknown");
        rec_end(&hr, rel_op, -1, t0, t1, t1, t1);
      }
      rt_sleep_ms(10 + (int)(rand_r(&seed) % 30));
      continue;
    }
    st->ok++;
    atomic_store(&st->last_ok, t1);
    rec(&hr, acq_op, t0, t1, "ok");
    int refused = 0;
    if (excl) {
      uint64_t token = 0;
      int trc = sem ? rlock_sem_fencing_token(sem, &token)
                    : rlock_fencing_token(h, &token);
      if (trc != 0) {
        st->errors++;
        fprintf(stderr, "worker %d: no fencing token: %s\n", w,
                rlock_strerror(trc));
      } else {
        atomic_store(&st->holding, 1);
        work(st, sc, token, &seed, &refused);
      }
    } else {
      rt_sleep_ms(20 + (int)(rand_r(&seed) % 40));
    }
    int64_t t_ref = now_ns();
    atomic_store(&st->holding, 0);
    int64_t t2 = now_ns();
    rc = sem ? rlock_sem_release(sem, nperm) : rlock_unlock(h);
    int64_t t3 = now_ns();
    if (rc == RLOCK_ENOTOWNER) {
      st->errors++;
      fprintf(stderr, "worker %d: its unlock said not the owner\n", w);
    }
    rec_end(&hr, rel_op, rc, t0, t1, t2, t3);
    if (refused) {
      st->refused++;
      int64_t vend = t0 + (int64_t)LEASE_MS * 1000000 -
                     ((int64_t)LEASE_MS * 10000 + 2000000);
      if (rc == RLOCK_ELOST || t_ref > vend) st->refused_lost++;
      else {
        st->refused_held++;
        fprintf(stderr, "worker %d: a write refused while its hold was "
                "valid (unlock: %s)\n", w, rlock_strerror(rc));
      }
    }
  }
  pthread_join(watch, NULL);
  if (l) rlock_free(l);
  if (rd) rlock_free(rd);
  if (wr) rlock_free(wr);
  if (sem) rlock_sem_free(sem);
  rlock_client_close(c);
  redisFree(sc);
  close(fd);
  _exit(0);
}

/* --- the parent: a scenario --------------------------------------------- */

static int run_checker(void) {
  const char *chk = getenv("RT_HISTORY_CHECK");
  if (chk == NULL || *chk == '\0') {
    fprintf(stderr, "RT_HISTORY_CHECK (history_check.py) is not set\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(2, 1); /* its report goes with the test's diagnostics */
    execlp("python3", "python3", chk, hist_path, (char *)NULL);
    _exit(127);
  }
  return rt_reap(pid);
}

/* Waits until cond() or ms pass; 1 if it came. */
static int wait_for(int (*cond)(void *), void *arg, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (!cond(arg)) {
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(5);
  }
  return 1;
}

static int worker_holding(void *arg) {
  int *w = arg;
  if (*w >= 0) return atomic_load(&sh->w[*w].holding) >= 1;
  return 0;
}

static int some_worker_past_reads(void *arg) {
  int *found = arg;
  for (int w = 0; w < WORKERS; w++)
    if (atomic_load(&sh->w[w].holding) == 2) {
      *found = w;
      return 1;
    }
  return 0;
}

static int64_t heal_ns;

/* Every worker sees every master up since the heal (or throughout), and
 * an acquisition succeeded after it. */
static int recovered(void *arg) {
  (void)arg;
  int any_ok = 0;
  for (int w = 0; w < WORKERS; w++) {
    if (!atomic_load(&sh->w[w].all_up)) return 0;
    any_ok |= atomic_load(&sh->w[w].last_ok) > heal_ns;
  }
  return any_ok;
}

static int minority(int n) { return n / 2 > 0 ? n / 2 : 1; }

/* Applies the fault for s->fault_ms, then heals it; heal_ns is when. */
static void apply_fault(scen *s, pid_t *pids) {
  int n = s->n, m = minority(n), ids[MAXN + 2], nid = 0;
  s->fault_applied = 1;
  switch (s->fault) {
  case F_CUT_BOTH:
  case F_CUT_REPLIES:
  case F_CUT_REQUESTS: {
    int dir = s->fault == F_CUT_BOTH      ? RT_NET_BOTH
              : s->fault == F_CUT_REPLIES ? RT_NET_REPLIES
                                          : RT_NET_REQUESTS;
    for (int i = 0; i < m; i++) ids[nid++] = rt_net_cut(NULL, masters[i].port, dir);
    rt_sleep_ms(s->fault_ms);
    break;
  }
  case F_HALF_OPEN:
    ids[nid++] = rt_net_cut(NULL, masters[0].port, RT_NET_BOTH);
    rt_sleep_ms(300);
    rt_redis_kill(&masters[0]);
    rt_sleep_ms(s->fault_ms / 2);
    if (rt_redis_restart(&masters[0]) != 0) s->errors++;
    rt_sleep_ms(s->fault_ms / 2);
    break;
  case F_CLIENT_MINORITY: {
    int w0 = 0;
    if (!wait_for(worker_holding, &w0, 10000)) s->fault_applied = 0;
    char addr[32];
    rt_net_addr(0, addr, sizeof addr);
    for (int i = 0; i < n / 2 + 1; i++)
      ids[nid++] = rt_net_cut(addr, masters[i].port, RT_NET_BOTH);
    rt_sleep_ms(s->fault_ms);
    break;
  }
  case F_CUT_PAUSE:
    if (n == 1) {
      ids[nid++] = rt_net_cut(NULL, masters[0].port, RT_NET_REPLIES);
      rt_redis_pause(&masters[0]);
    } else {
      for (int i = 0; i < m; i++)
        ids[nid++] = rt_net_cut(NULL, masters[i].port, RT_NET_BOTH);
      rt_redis_pause(&masters[m]);
    }
    rt_sleep_ms(s->fault_ms);
    rt_redis_resume(&masters[n == 1 ? 0 : m]);
    break;
  case F_HOLDER_STOP: {
    int w = -1;
    if (!wait_for(some_worker_past_reads, &w, 10000)) {
      s->fault_applied = 0;
      break;
    }
    kill(pids[w], SIGSTOP);
    int ms = s->fault_ms > LEASE_MS * 5 / 2 ? s->fault_ms : LEASE_MS * 5 / 2;
    rt_sleep_ms(ms);
    kill(pids[w], SIGCONT);
    break;
  }
  }
  for (int i = 0; i < nid; i++)
    if (ids[i] < 0) s->errors++;
  if (rt_net_heal_all() != 0) s->errors++;
  heal_ns = now_ns();
}

/* Runs one scenario; 0 when it could run (its results say how it went). */
static int run_scenario(scen *s) {
  memset(&s->ops, 0, sizeof *s - offsetof(scen, ops));
  s->recover_ms = -1;
  if (servers_for(s->n) != 0) return -1;
  snprintf(hist_path, sizeof hist_path, "/tmp/rt_netfault_%d_XXXXXX",
           (int)getpid());
  int hfd = mkstemp(hist_path);
  if (hfd < 0) return -1;
  close(hfd);
  memset(sh, 0, sizeof *sh);
  pid_t pids[WORKERS];
  fflush(NULL);
  for (int w = 0; w < WORKERS; w++) {
    pids[w] = fork();
    if (pids[w] == 0) worker_main(w, s->kind, s->n);
  }
  /* warm up: every worker started and acquiring */
  uint64_t end = rt_now_ms() + 10000;
  for (int w = 0; w < WORKERS; w++)
    while (!atomic_load(&sh->w[w].started) && rt_now_ms() < end)
      rt_sleep_ms(5);
  rt_sleep_ms(500);
  apply_fault(s, pids);
  if (wait_for(recovered, NULL, 30000))
    s->recover_ms = 0;
  int64_t rec_at = now_ns();
  if (s->recover_ms == 0) {
    /* the moment it came: the later of the last worker up and the first
     * acquisition after the heal */
    int64_t up = heal_ns, ok = INT64_MAX;
    for (int w = 0; w < WORKERS; w++) {
      int64_t u = atomic_load(&sh->w[w].up_since);
      if (u > up) up = u;
    }
    for (int w = 0; w < WORKERS; w++) {
      int64_t o = atomic_load(&sh->w[w].last_ok);
      if (o > heal_ns && o < ok) ok = o;
    }
    if (ok == INT64_MAX) ok = rec_at;
    int64_t at = up > ok ? up : ok;
    s->recover_ms = (long)((at - heal_ns) / 1000000);
  }
  rt_sleep_ms(500);
  atomic_store(&sh->stop, 1);
  s->workers_ok = 1;
  for (int w = 0; w < WORKERS; w++) {
    int st = -1;
    uint64_t until = rt_now_ms() + 20000;
    pid_t got;
    while ((got = waitpid(pids[w], &st, WNOHANG)) == 0 && rt_now_ms() < until)
      rt_sleep_ms(10);
    if (got != pids[w]) {
      fprintf(stderr, "worker %d did not stop; killed\n", w);
      kill(pids[w], SIGKILL);
      waitpid(pids[w], &st, 0);
      s->workers_ok = 0;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "worker %d ended with status %d\n", w, st);
      s->workers_ok = 0;
    }
  }
  for (int w = 0; w < WORKERS; w++) {
    wstat *st = &sh->w[w];
    s->ops += st->ops;
    s->ok += st->ok;
    s->fail += st->fail;
    s->unknown += st->unknown;
    s->fenced_ok += st->fenced_ok;
    s->refused += st->refused;
    s->refused_held += st->refused_held;
    s->plain_writes += st->plain_writes;
    s->errors += st->errors;
  }
  redisReply *r = rt_redis_cmd(&storage, "MGET cnt:f cnt:p");
  long long cf = -1, cp = -1;
  if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
    cf = r->element[0]->str ? atoll(r->element[0]->str) : 0;
    cp = r->element[1]->str ? atoll(r->element[1]->str) : 0;
  }
  if (r) freeReplyObject(r);
  if (cf < 0) s->errors++;
  s->lost_fenced = s->fenced_ok - cf;
  s->lost_plain = s->plain_writes - cp;
  s->verdict = run_checker();
  if (s->verdict == 0) unlink(hist_path);
  else fprintf(stderr, "  the history is kept in %s\n", hist_path);
  return 0;
}

static void print_scen(FILE *f, const scen *s) {
  static const char *verdicts[] = {"linearizable", "NOT linearizable",
                                   "bad input", "undecided"};
  fprintf(f,
          "  %s %s N=%d: %ld ops, %ld ok, %ld failed, %ld unknown; checker: "
          "%s; fenced writes %ld, lost %ld, refused %ld (%ld while held); "
          "plain writes %ld, lost %ld; recovered %ld ms after the heal%s\n",
          fault_names[s->fault], kind_names[s->kind], s->n, s->ops, s->ok,
          s->fail, s->unknown,
          s->verdict >= 0 && s->verdict <= 3 ? verdicts[s->verdict] : "failed",
          s->fenced_ok, s->lost_fenced, s->refused, s->refused_held,
          s->plain_writes, s->lost_plain, s->recover_ms,
          s->fault_applied ? "" : " (the fault's moment never came)");
}

/* A scenario as a test: everything it claims, checked. */
static void check_scenario(int fault, int kind, int n, int fault_ms) {
  scen s = {.fault = fault, .kind = kind, .n = n, .fault_ms = fault_ms};
  RT_REQUIRE(run_scenario(&s) == 0);
  print_scen(stderr, &s);
  RT_CHECK(s.workers_ok);
  RT_CHECK_EQ_INT(s.errors, 0);
  RT_CHECK(s.fault_applied);
  RT_CHECK_EQ_INT(s.verdict, 0);
  RT_CHECK_EQ_INT(s.lost_fenced, 0);
  RT_CHECK_EQ_INT(s.refused_held, 0);
  RT_CHECK(s.recover_ms >= 0);
  RT_CHECK(s.ok > 0);
}

/* --- the client cut off from a majority while it holds ------------------ */

static atomic_llong lost_at;

static void on_lost(rlock *l, uint64_t owner, int is_thread, void *arg) {
  (void)l, (void)owner, (void)is_thread, (void)arg;
  atomic_store(&lost_at, now_ns());
}

static void minority_lost_cb(int n) {
  RT_REQUIRE(servers_for(n) == 0);
  snprintf(hist_path, sizeof hist_path, "/tmp/rt_netfault_%d_XXXXXX",
           (int)getpid());
  int fd = mkstemp(hist_path);
  RT_REQUIRE(fd >= 0);
  rlock_client *a = client_for(0, n), *b = client_for(1, n);
  RT_REQUIRE(a && b);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(a, 5000), 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(b, 5000), 0);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "nf", &la) == 0 && rlock_get(b, "nf", &lb) == 0);
  atomic_store(&lost_at, 0);
  rlock_set_lost_cb(la, on_lost, NULL);
  int64_t t0 = now_ns();
  RT_REQUIRE(rlock_lock(la, RLOCK_WATCHDOG) == 0);
  rt_hist_rec r = {.proc = "a", .owner = "a.0", .name = "nf",
                   .kind = "mutex", .op = "acquire", .invoke_ns = t0,
                   .complete_ns = now_ns(), .result = "ok"};
  rt_hist_append(fd, &r);
  /* cut a off from a majority, both ways, while it holds */
  char addr[32];
  rt_net_addr(0, addr, sizeof addr);
  for (int i = 0; i < n / 2 + 1; i++)
    RT_CHECK(rt_net_cut(addr, masters[i].port, RT_NET_BOTH) > 0);
  int64_t cut_at = now_ns();
  /* b waits for it: it must get it, and only after a was told */
  int64_t b0 = now_ns();
  int rc = rlock_trylock(lb, 20000, LEASE_MS);
  int64_t b1 = now_ns();
  RT_CHECK_EQ_INT(rc, 0);
  rt_hist_rec rb = {.proc = "b", .owner = "b.0", .name = "nf",
                    .kind = "mutex", .op = "acquire", .invoke_ns = b0,
                    .complete_ns = b1, .result = rc == 0 ? "ok" : "fail"};
  rt_hist_append(fd, &rb);
  int64_t told = atomic_load(&lost_at);
  RT_CHECK(told > 0);
  if (told > 0) {
    rt_hist_rec lo = {.proc = "a", .owner = "a.0", .name = "nf",
                      .kind = "mutex", .op = "lose", .invoke_ns = told,
                      .complete_ns = told, .result = "ok"};
    rt_hist_append(fd, &lo);
    fprintf(stderr, "  N=%d: a told of the loss %lld ms after the cut; b "
            "acquired %lld ms after that\n", n,
            (long long)((told - cut_at) / 1000000),
            (long long)((b1 - told) / 1000000));
  }
  if (rc == 0) {
    int64_t u0 = now_ns();
    rc = rlock_unlock(lb);
    rt_hist_rec ub = {.proc = "b", .owner = "b.0", .name = "nf",
                      .kind = "mutex", .op = "release", .invoke_ns = u0,
                      .complete_ns = now_ns(),
                      .result = rc == 0 ? "ok" : "unknown"};
    rt_hist_append(fd, &ub);
    RT_CHECK_EQ_INT(rc, 0);
  }
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ELOST);
  /* heal: the same client takes the lock again, without a restart */
  RT_CHECK_EQ_INT(rt_net_heal_all(), 0);
  int64_t h = now_ns();
  rc = rlock_trylock(la, 20000, LEASE_MS);
  int64_t h1 = now_ns();
  RT_CHECK_EQ_INT(rc, 0);
  rt_hist_rec ra = {.proc = "a", .owner = "a.1", .name = "nf",
                    .kind = "mutex", .op = "acquire", .invoke_ns = h,
                    .complete_ns = h1, .result = rc == 0 ? "ok" : "fail"};
  rt_hist_append(fd, &ra);
  fprintf(stderr, "  N=%d: a took it again %lld ms after the heal\n", n,
          (long long)((h1 - h) / 1000000));
  if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  close(fd);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
  int v = run_checker();
  RT_CHECK_EQ_INT(v, 0);
  if (v == 0) unlink(hist_path);
}

/* A master cut off without a reset while commands are out: its connection
 * is ended once the master has left them unacknowledged for the peer
 * timeout (TCP_USER_TIMEOUT, lib/conn/stream.c) and made again after the
 * heal, rather than kept until TCP's next retransmission. The cut lasts
 * twice the 2 s peer timeout; a connection kept through it would show no
 * reconnect. */
static void dead_peer_reconnects(void) {
  RT_REQUIRE(servers_for(1) == 0);
  rlock_client *c = client_for(0, 1);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 5000), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "nf", &l) == 0);
  int id = rt_net_cut(NULL, masters[0].port, RT_NET_BOTH);
  RT_CHECK(id > 0);
  uint64_t end = rt_now_ms() + 4000;
  while (rt_now_ms() < end)
    RT_CHECK(rlock_trylock(l, 0, LEASE_MS) != 0);
  RT_CHECK_EQ_INT(rt_net_heal(id), 0);
  uint64_t h = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(l, 20000, LEASE_MS), 0);
  fprintf(stderr, "  acquired %llu ms after the heal\n",
          (unsigned long long)(rt_now_ms() - h));
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_metrics m;
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c, &m), 0);
  RT_CHECK(m.masters[0].reconnects >= 1);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- the tests -------------------------------------------------------------- */

#define FAULT_MS 2500

/* RT_NETFAULT_MS overrides how long a test's fault lasts. */
static int fault_ms(void) {
  const char *e = getenv("RT_NETFAULT_MS");
  return e && atoi(e) > 0 ? atoi(e) : FAULT_MS;
}

#define SCEN_TEST(fault, kind, n)                                            \
  static void t_##fault##_##kind##_n##n(void) {                              \
    check_scenario(F_##fault, K_##kind, n, fault_ms());                      \
  }
/* The quick part (suite 'integration'): every fault at N = 3, the lock
 * kinds spread over them. */
SCEN_TEST(CUT_BOTH, LOCK, 3)
SCEN_TEST(CUT_REPLIES, FAIR, 3)
SCEN_TEST(CUT_REQUESTS, LOCK, 3)
SCEN_TEST(HALF_OPEN, RW, 3)
SCEN_TEST(CLIENT_MINORITY, SEM, 3)
SCEN_TEST(CUT_PAUSE, LOCK, 3)
SCEN_TEST(HOLDER_STOP, LOCK, 3)
/* The rest (suite 'variants'): N = 1 and 5, every kind. */
SCEN_TEST(CUT_BOTH, SEM, 1)
SCEN_TEST(CUT_REPLIES, LOCK, 1)
SCEN_TEST(CUT_REQUESTS, RW, 1)
SCEN_TEST(HALF_OPEN, LOCK, 1)
SCEN_TEST(CLIENT_MINORITY, FAIR, 1)
SCEN_TEST(CUT_PAUSE, SEM, 1)
SCEN_TEST(HOLDER_STOP, RW, 1)
SCEN_TEST(CUT_BOTH, RW, 5)
SCEN_TEST(CUT_REPLIES, SEM, 5)
SCEN_TEST(CUT_REQUESTS, FAIR, 5)
SCEN_TEST(HALF_OPEN, SEM, 5)
SCEN_TEST(CLIENT_MINORITY, LOCK, 5)
SCEN_TEST(CUT_PAUSE, FAIR, 5)
SCEN_TEST(HOLDER_STOP, FAIR, 5)

static void t_minority_lost_cb_n3(void) { minority_lost_cb(3); }
static void t_minority_lost_cb_n1(void) { minority_lost_cb(1); }
static void t_minority_lost_cb_n5(void) { minority_lost_cb(5); }

#define T(f, k, n) {#f "_" #k "_n" #n, t_##f##_##k##_n##n}
static const rt_test tests[] = {
    T(CUT_BOTH, LOCK, 3), T(CUT_REPLIES, FAIR, 3), T(CUT_REQUESTS, LOCK, 3),
    T(HALF_OPEN, RW, 3), T(CLIENT_MINORITY, SEM, 3), T(CUT_PAUSE, LOCK, 3),
    T(HOLDER_STOP, LOCK, 3),
    {"minority_lost_cb_n3", t_minority_lost_cb_n3},
    {"dead_peer_reconnects", dead_peer_reconnects},
    T(CUT_BOTH, SEM, 1), T(CUT_REPLIES, LOCK, 1), T(CUT_REQUESTS, RW, 1),
    T(HALF_OPEN, LOCK, 1), T(CLIENT_MINORITY, FAIR, 1), T(CUT_PAUSE, SEM, 1),
    T(HOLDER_STOP, RW, 1),
    T(CUT_BOTH, RW, 5), T(CUT_REPLIES, SEM, 5), T(CUT_REQUESTS, FAIR, 5),
    T(HALF_OPEN, SEM, 5), T(CLIENT_MINORITY, LOCK, 5), T(CUT_PAUSE, FAIR, 5),
    T(HOLDER_STOP, FAIR, 5),
    {"minority_lost_cb_n1", t_minority_lost_cb_n1},
    {"minority_lost_cb_n5", t_minority_lost_cb_n5},
};

/* --- scripts/faults: the table ------------------------------------------ */

static int table(long seconds) {
  static const int ns[] = {1, 3, 5};
  int combos = NFAULTS * NKINDS * 3;
  /* about 2.5 s of each scenario is its own (start, recovery, stop) */
  long per = seconds * 1000 / combos - 2500;
  int fault_ms = per < 1000 ? 1000 : (int)per;
  printf("every fault x kind x N = 1, 3, 5: %d scenarios, each fault held "
         "%d ms, %d workers, leases of %d ms\n", combos, fault_ms, WORKERS,
         LEASE_MS);
  printf("%-16s %-5s %2s %6s %6s %6s %6s %-9s %7s %7s %8s %8s %9s\n",
         "fault", "kind", "N", "ops", "ok", "failed", "unkn", "checker",
         "fenced", "f.lost", "plain", "p.lost", "recover");
  int bad = 0;
  uint64_t t0 = rt_now_ms();
  for (int f = 0; f < NFAULTS; f++)
    for (int k = 0; k < NKINDS; k++)
      for (int j = 0; j < 3; j++) {
        scen s = {.fault = f, .kind = k, .n = ns[j], .fault_ms = fault_ms};
        if (run_scenario(&s) != 0) {
          printf("%-16s %-5s %2d could not start its servers\n",
                 fault_names[f], kind_names[k], ns[j]);
          bad++;
          continue;
        }
        char recov[32];
        if (s.recover_ms >= 0) snprintf(recov, sizeof recov, "%ld ms", s.recover_ms);
        else snprintf(recov, sizeof recov, "none");
        printf("%-16s %-5s %2d %6ld %6ld %6ld %6ld %-9s %7ld %7ld %8ld %8ld "
               "%9s%s\n",
               fault_names[f], kind_names[k], s.n, s.ops, s.ok, s.fail,
               s.unknown, s.verdict == 0 ? "ok" : s.verdict == 1 ? "VIOLATED"
                                                               : "error",
               s.fenced_ok, s.lost_fenced, s.plain_writes, s.lost_plain,
               recov, s.fault_applied ? "" : " (fault not applied)");
        fflush(stdout);
        bad += s.verdict != 0 || s.lost_fenced != 0 || s.refused_held != 0 ||
               s.recover_ms < 0 || !s.workers_ok || s.errors != 0;
      }
  printf("%d scenarios in %llu s; %d with a violation, an error or no "
         "recovery\n", combos, (unsigned long long)((rt_now_ms() - t0) / 1000),
         bad);
  stop_servers();
  return bad ? 1 : 0;
}

/* --- scripts/soak -------------------------------------------------------- */

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
  if (f) fclose(f);
  return kb;
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* the directory's own */
}

typedef struct soak_ctx {
  rlock_client *c;
  atomic_int stop;
  atomic_long ops, ok;
} soak_ctx;

static void *soak_worker(void *arg) {
  soak_ctx *x = arg;
  rlock *l, *f, *rd, *wr;
  rlock_sem *sem;
  if (rlock_get(x->c, "soak", &l) || rlock_get_fair(x->c, "soakf", &f) ||
      rlock_get_read(x->c, "soakrw", &rd) ||
      rlock_get_write(x->c, "soakrw", &wr) ||
      rlock_sem_get(x->c, "soaks", SEM_K, &sem))
    return NULL;
  for (long i = 0; !atomic_load(&x->stop); i++) {
    int k = (int)(i % 5), rc;
    rlock *h = k == 0 ? l : k == 1 ? f : k == 2 ? rd : wr;
    if (k == 4) rc = rlock_sem_acquire(sem, 1, 200, LEASE_MS);
    else rc = rlock_trylock(h, 200, k == 0 ? RLOCK_WATCHDOG : LEASE_MS);
    x->ops++;
    if (rc == 0) {
      x->ok++;
      rt_sleep_ms(5);
      if (k == 4) rlock_sem_release(sem, 1);
      else rlock_unlock(h);
    } else {
      rt_sleep_ms(20);
    }
  }
  rlock_free(l);
  rlock_free(f);
  rlock_free(rd);
  rlock_free(wr);
  rlock_sem_free(sem);
  return NULL;
}

static int soak(long seconds) {
  int n = 3;
  if (servers_for(n) != 0) return 1;
  soak_ctx x = {.c = client_for(0, n)};
  if (!x.c) return 1;
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, soak_worker, &x);
  printf("soak: %ld s, N = %d, faults in turn (cut both ways, replies, "
         "requests, half open, cut from a majority, cut + stop)\n", seconds, n);
  printf("%6s %10s %6s %10s %10s %s\n", "min", "rss_kb", "fds", "ops", "ok",
         "fault");
  uint64_t t0 = rt_now_ms(), next = t0 + 60000;
  long rss0 = -1, rss_min = -1, rss_last = -1;
  int fds0 = -1, fds_last = -1, fds_max = -1;
  char addr[32];
  rt_net_addr(0, addr, sizeof addr);
  for (int round = 0; rt_now_ms() - t0 < (uint64_t)seconds * 1000; round++) {
    int f = round % 6, ids[4], nid = 0;
    switch (f) {
    case 0: ids[nid++] = rt_net_cut(NULL, masters[0].port, RT_NET_BOTH); break;
    case 1: ids[nid++] = rt_net_cut(NULL, masters[1].port, RT_NET_REPLIES); break;
    case 2: ids[nid++] = rt_net_cut(NULL, masters[2].port, RT_NET_REQUESTS); break;
    case 3:
      ids[nid++] = rt_net_cut(NULL, masters[0].port, RT_NET_BOTH);
      rt_redis_kill(&masters[0]);
      rt_redis_restart(&masters[0]);
      break;
    case 4:
      ids[nid++] = rt_net_cut(addr, masters[0].port, RT_NET_BOTH);
      ids[nid++] = rt_net_cut(addr, masters[1].port, RT_NET_BOTH);
      break;
    case 5:
      ids[nid++] = rt_net_cut(NULL, masters[0].port, RT_NET_BOTH);
      rt_redis_pause(&masters[1]);
      break;
    }
    (void)ids;
    rt_sleep_ms(4000);
    if (f == 5) rt_redis_resume(&masters[1]);
    rt_net_heal_all();
    rt_sleep_ms(4000);
    if (rt_now_ms() >= next || rt_now_ms() - t0 >= (uint64_t)seconds * 1000) {
      next += 60000;
      long rss = rss_kb();
      int fds = open_fds();
      if (rss0 < 0) rss0 = rss, fds0 = fds, rss_min = rss;
      if (rss < rss_min) rss_min = rss;
      rss_last = rss;
      fds_last = fds;
      if (fds > fds_max) fds_max = fds;
      printf("%6.1f %10ld %6d %10ld %10ld %s\n",
             (double)(rt_now_ms() - t0) / 60000.0, rss, fds,
             atomic_load(&x.ops), atomic_load(&x.ok), fault_names[f]);
      fflush(stdout);
    }
  }
  atomic_store(&x.stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  rlock_client_close(x.c);
  stop_servers();
  /* Flat: the descriptors back where they began (a connection being
   * remade at the sample may add one per master), and the resident set
   * within 10% (and 2 MB) of the first sample. */
  int fds_flat = fds_last <= fds0 + n && fds_max <= fds0 + 2 * n;
  int rss_flat = rss_last <= rss0 + rss0 / 10 + 2048;
  printf("rss %ld -> %ld kB (%s), fds %d -> %d, at most %d (%s)\n", rss0,
         rss_last, rss_flat ? "flat" : "GREW", fds0, fds_last, fds_max,
         fds_flat ? "flat" : "GREW");
  printf("%s\n", rss_flat && fds_flat ? "both stayed flat" : "NOT flat");
  return rss_flat && fds_flat && x.ok > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  char why[256];
  signal(SIGPIPE, SIG_IGN);
  if (rt_netns_enter(why, sizeof why) != 0)
    return rt_netns_skip("netfault", why);
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  /* Every server up front, shared by the tests (each flushes them). */
  if (servers_for(MAXN) != 0) {
    fprintf(stderr, "cannot start %s\n", rt_server_program());
    return 1;
  }
  if (argc == 3 && strcmp(argv[1], "--table") == 0)
    return table(atol(argv[2]));
  if (argc == 3 && strcmp(argv[1], "--soak") == 0)
    return soak(atol(argv[2]));
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  stop_servers();
  return rc;
}
