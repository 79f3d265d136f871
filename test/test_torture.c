/*
 * The torture test: many holders, one lock, real faults, and a checker
 * that reads what happened afterwards. It owns nothing of the library; it
 * only drives the public API and judges the outcome.
 *
 * Why this shape: the guarantees in the README are about time ("at most one
 * holder within its validity") and about fencing ("a holder paused past its
 * lease is stopped by the storage, not by the lock"). Neither can be seen
 * from one call; both can be checked from a log. So PROCS forked worker
 * processes, each with its own client and THREADS threads, take locks
 * again and again (watchdog and fixed leases, blocking and async calls,
 * waiting and not) of every kind: the lock "torture" through plain and
 * fair handles (one lock: they exclude each other), and the read-write
 * lock "torture-rw" through its read and write handles; and inside every
 * critical section stamp
 * [enter, leave] on CLOCK_MONOTONIC (one clock for every process of the
 * machine) and write three times to a fenced register. The register is a
 * thread of the parent (a worker stopped by SIGSTOP must never be able to
 * hold it up), reached over one SOCK_SEQPACKET pair per worker thread;
 * it keeps one fenced value per lock, and logs every attempt with a
 * sequence number. For an exclusive section (a lock, fair or write hold)
 * it accepts a write whose token is at least the highest it has accepted
 * for that lock; for a shared one (a read hold), a write whose token is at
 * least the highest exclusive token it has accepted (readers do not fence
 * each other out), and an accepted shared token still raises the highest,
 * so a stale writer is refused after any later reader. These are the two
 * rules README gives a storage layer for read-write tokens.
 *
 * Meanwhile the parent's main thread injects faults from a seeded random
 * generator: it stops and resumes masters, kills and restarts them empty
 * (never more than a minority faulty at once), half of the restarts with
 * the master's wall clock two hours behind (test/clockshift.c: a counter
 * lost with a clock behind is how fencing tokens could go backwards),
 * and stops a worker process for longer than any lease, preferably one
 * inside a critical section, so that its lock expires, another worker
 * takes it, and the stopped one resumes to write with a stale token. With
 * one master, worker stops, brief master stops (which every client must
 * survive with errors, not hangs) and now and then an empty restart with
 * the clock behind are injected. The clients are configured as a
 * deployment should be: max_lease_ms is the longest lease any worker
 * takes, so a restarted master is quarantined for that long.
 *
 * The checker's definitions (also printed in the report):
 *
 *   section   one successful acquisition: attempt = time before the
 *             acquiring call, enter = time after it returned (or after its
 *             callback ran), leave = time after its last register write;
 *             three writes with the hold's fencing token.
 *   stale     a section whose holder may legitimately have lost the lock
 *             inside it: its process was stopped by the injector at some
 *             moment within [attempt, leave]; or the holder was told of
 *             the loss inside the section (the lost-lock callback ran
 *             before leave, or its token could not be read); or, for a
 *             fixed lease, leave came after attempt + lease * (1 - drift)
 *             - 2 ms (it may have outlived its validity, measured from a
 *             point no later than the start of the acquiring round). An
 *             unlock that returns RLOCK_ELOST does not make a section
 *             stale: learning of a loss after the fact is not being told
 *             in time, so such a section's overlaps count.
 *   valid     not stale.
 *   overlap   two sections of one lock whose [enter, leave] intersect,
 *             not both shared (two read sections may overlap: that is
 *             the read side's point).
 *
 *   (1a) No two valid sections overlap (mutual exclusion within validity;
 *        a violation is "double holder").
 *   (1b) Every overlap is resolved by the register: for an overlapping
 *        pair, every write of the lower-token section that reached the
 *        register after the higher-token section's first write was
 *        rejected (else "unresolved overlap"). A pair where the lower-token
 *        section wrote only before that is counted as benign.
 *   (2)  Tokens strictly increase in acquisition order, per lock: a
 *        section that entered after another left has a larger token, and
 *        no two sections share a token; pairs of two shared sections are
 *        not compared (a reader may be granted before another and stamp
 *        its enter after the other's leave, nothing keeping it out).
 *   (3)  Every write of a stale section that reached the register after
 *        an accepted write of a section of its lock that entered later
 *        than it (an exclusive one, for a stale shared section) was
 *        rejected (else "stale write accepted"); and no write of a valid
 *        section was rejected (else "valid write rejected", a token
 *        inversion).
 *   (4)  Every worker exits by the end of the run plus a grace period,
 *        every async callback arrives within a bound, and every status
 *        returned is a documented one for its call: acquire OK,
 *        RLOCK_ETIMEDOUT, RLOCK_ENOQUORUM, RLOCK_EREDIS; unlock OK,
 *        RLOCK_ELOST, RLOCK_ENOTOWNER (only after a loss), RLOCK_ENOQUORUM,
 *        RLOCK_EREDIS; token OK, RLOCK_ENOTOWNER, RLOCK_ELOST.
 *
 * Environment: RLOCK_TORTURE_SECONDS (default 20) is the length of each
 * case; RLOCK_TORTURE_SEED fixes the seed (printed either way);
 * RLOCK_TORTURE_RESTART=0 leaves out the kill-and-restart faults;
 * RLOCK_TORTURE_KINDS=lock takes only the plain lock (the run before the
 * lock family), "all" (the default) every kind.
 * RLOCK_TORTURE_BREAK shows that the checker can fail: "fence" makes the
 * register accept every write (checks 1b and 3 must fire), "quarantine"
 * opens the clients with restart_quarantine_ms = 0 (Redlock's restart
 * hazard; check 1a may fire when a restart and a stop line up), "force"
 * has a thread of one worker call rlock_force_unlock every 20 ms, taking
 * the lock "torture" from holders that are never told (check 1a must
 * fire), and "rwforce" does the same to the write side of "torture-rw"
 * (check 1a must fire for a write section and a read or write section).
 * RLOCK_TORTURE_MAX_LEASE=default opens the clients with the library's
 * default max_lease_ms (60 s) rather than the longest lease the workers
 * take, as a user who keeps the defaults does: the quarantine of a
 * restarted master is then as long as the leases the other masters
 * recorded, not the configured maximum (docs/guarantees.md). Such a run
 * also counts a master restarted empty as faulty for RESTART_SETTLE_MS
 * after its restart, so that no second master is stopped or killed before
 * the clients can have read what bounds the first one's leases (two
 * restarts closer than that are a majority failure, which keeps the
 * configured length); RLOCK_TORTURE_SETTLE=0 leaves that out.
 * RLOCK_TORTURE_FAULTS=0 injects no fault: the sections such a run makes
 * are the reference for a run with faults. RLOCK_TORTURE_LOG=1 prints the
 * workers' log lines about restarted masters (how each quarantine ended)
 * and the faults as they are injected.
 * RLOCK_TORTURE_DEBUG=1 prints the sections whose unlock was retried most,
 * and (Sentinel mode) the pairs check 2 left unordered whose late grant
 * did get the smaller token.
 * RLOCK_TORTURE_STRICT_FAILOVER=1 (Sentinel mode) excuses no section for
 * a failover even without replica_acks, which README does not promise:
 * a run may then fail where Sentinel lost a lock.
 *
 * Two more builds of this file put a topology behind the one master:
 * cluster mode (test_torture_cluster) and Sentinel mode
 * (test_torture_sentinel, cases torture_sentinel and
 * torture_sentinel_acks, and checker_late_grant, which runs checks 2 and
 * 3 on made-up sections). Their faults, and the one rule they change (a
 * section that meets a failover's window is stale, because README allows
 * a failover to lose a lock; except with replica_acks on every replica,
 * where README promises the lock survives, so nothing is excused; and,
 * in Sentinel mode, check 2's order for a grant a resumed old master ran
 * late), are
 * in the comments above cluster_mode and sentinel_mode below.
 * A long
 * run also needs RT_TEST_TIMEOUT raised (or 0), the runner's per-case
 * bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#ifdef RT_TORTURE_CLUSTER
#include "harness_cluster.h"
#endif
#ifdef RT_TORTURE_SENTINEL
#include "harness_node.h"
#include "harness_sentinel.h"
#endif

#define PROCS 4
#define THREADS 3
#define NTHREADS (PROCS * THREADS)
#define MAX_MASTERS 5
#define WATCHDOG_MS 1500
#define LEASE_MIN_MS 800
#define LEASE_MAX_MS 2000
#define WAIT_MAX_MS 400
#define MASTER_TIMEOUT_MS 150
#define DRIFT 0.01
/* README's slack of a grant's token below its client's wall clock when the
 * grant ran (guarantee "Fencing tokens never go backwards", condition 2):
 * the round trip of the TIME that set the connection's bound of the
 * master's clock, plus 500 ppm of that bound's age, which a refresh every
 * 30 s keeps within 15 ms. The checker cannot see the round trip; it
 * takes the master timeout for it (a loopback TIME slower than that would
 * be a loop thread held up, as by a worker stop, whose samples the client
 * keeps only while tighter than the aged bound). Check 2 uses it for late
 * grants only (late_grant_from). */
#define LATE_SLACK_MS (15 + MASTER_TIMEOUT_MS)
/* Longer than any lease, so that a stopped holder's lock expires. */
#define WORKER_STOP_MS (LEASE_MAX_MS + 600)
#define WRITES_PER_SECTION 3
#define ASYNC_BOUND_MS 30000 /* an async callback later than this is a hang */
#define GRACE_MS 30000       /* workers must exit this long after the end */
#define SECTIONS_PER_SECOND 4000
#define NCODES 16 /* status codes 0 .. -15, indexed by -status */
#define MAX_EVENTS 4096
#define MAX_REPORTED 8

static rt_redis srv[MAX_MASTERS];

/*
 * Cluster mode (built as test_torture_cluster, -DRT_TORTURE_CLUSTER): the
 * one master is a Redis Cluster of three primaries and three replicas
 * (harness_cluster.h), and the faults are those of a cluster: the lock's
 * slot migrated to another primary (MIGRATING/IMPORTING, MIGRATE, SETSLOT
 * NODE), a manual failover of the shard that serves it, and (with
 * restarts on) its primary SIGKILLed, the replica promoted and the old
 * primary restarted as a replica; plus the worker stops. Every kind runs
 * there ("torture-rw" hashes to a slot of the same shard as "torture",
 * so failovers and kills hit it too; migrations move "torture"'s slot
 * only), but lock_all, which a cluster refuses. A section that
 * overlaps a SIGKILLed primary's window (from the kill until a second
 * after the promotion) is stale, since replication is asynchronous and a
 * failover may lose its lock (README, "Redis Cluster"): the register must
 * still reject its late writes (check 3), and no two valid sections may
 * overlap (1a).
 */
static int cluster_mode;
#ifdef RT_TORTURE_CLUSTER
static rt_cluster tcl;
static char cl_url[200];
#endif

/*
 * Sentinel mode (built as test_torture_sentinel, -DRT_TORTURE_SENTINEL):
 * the one master is a Sentinel group (harness_sentinel.h: a master, two
 * replicas, three sentinels) through redis-sentinel://, every kind of
 * lock, and the faults are: the master SIGKILLed, the sentinels promoting
 * a replica (2 to 4 s, longer than the workers' leases of 0.8 to 2 s),
 * then the old master restarted empty as a replica of the new one; the
 * master SIGSTOPped until the sentinels promote a replica, then resumed
 * (it runs what its clients sent meanwhile before a sentinel demotes
 * it); a replica stopped for 100 to 600 ms; and the worker stops.
 *
 * What the checker may expect of a failover is what README promises, and
 * the two cases differ there:
 *
 *   torture_sentinel (replica_acks = 0): replication is asynchronous, so
 *     a failover can lose a lock granted a moment before it and another
 *     worker can take it while the first still holds it (README,
 *     "Sentinel"). A section whose [attempt, leave] meets a failover's
 *     window (from the kill or stop until a second after the sentinels
 *     agree on the new master and the others follow it) is stale, as in cluster
 *     mode: it may overlap a later section, but only as fencing allows:
 *     the later holder's token must be the larger (check 2) and every
 *     write of the stale holder after the later holder's first accepted
 *     write must have been rejected (checks 1b and 3). Sections outside
 *     every window are held to 1a as always: a restarted empty old master
 *     must never be used (README: shunned).
 *
 *     Check 2 is as strict as README's condition 2 and no stricter. A
 *     stopped master resumed after the failover runs what it was sent
 *     meanwhile, with no counter of the new master's tokens, and its
 *     reply reaches a client whose sentinel has not announced
 *     +switch-master yet (the failover's leader names the new master from
 *     the replicas' reconfiguration on, but publishes only once that is
 *     done, so the sentinels agree before every subscriber has heard).
 *     Such a late grant's token is at least its client's wall clock when
 *     it sent, and at least its wall clock when the grant ran less the
 *     slack (LATE_SLACK_MS). So a section y whose attempt came before such
 *     a resume and whose grant after it (late_grant_from) must be above
 *     every earlier holder x that was granted before y sent (x entered
 *     before y's attempt) or that entered more than the slack before the
 *     resume; an x that entered after y's attempt and closer to the resume
 *     may hold the larger token, though y entered after x left (seed
 *     939451685: y 2.6 ms below x, whose 3 ms section on the new master
 *     came within y's 120 ms attempt; y's writes were all rejected). The
 *     report counts those pairs (late_grant_pairs, and those below:
 *     late_grant_pairs_below). Seed 445844266 failed check 2 by 45 ms
 *     while the floor was only the clock at sending. Check 3 orders such a
 *     grant the same way (newer_from): a section x granted on the new
 *     master while the late grant y ran on the old one holds the larger
 *     token, so the register accepts x's writes after y's even when y's
 *     client entered after x's.
 *
 *   torture_sentinel_acks (replica_acks = 2, every replica): README says
 *     a grant that counted is on every replica, so a failover to any of
 *     them keeps it. Failover windows make nothing stale here: a section
 *     that meets one is held to 1a like any other, and the run counts
 *     them (failover_sections in its report) so that it shows whether any
 *     lock was in fact held across a failover. Grants, renewals and
 *     write-backs refused for want of acknowledgement (while a replica is
 *     stopped or the old master is down) are errors the workers expect
 *     (RLOCK_ENOQUORUM), or a lost watchdog lock (stale as "told lost").
 */
static int sentinel_mode, sentinel_acks;
/* RLOCK_TORTURE_STRICT_FAILOVER=1: excuse no section for a failover, even
 * without acknowledgement, to see what Sentinel loses then. */
static int strict_failover;
#ifdef RT_TORTURE_SENTINEL
static rt_sentinel tsn;
static char sn_url[300];
static int64_t last_kill; /* when the last kill began */
#endif
#define MAX_KILLS 64
static int64_t kill_from[MAX_KILLS], kill_to[MAX_KILLS];
/* For a master stopped until failed over: the moment just before it was
 * resumed, the earliest at which it can run what it was sent while
 * stopped (check 2's late grants); 0 for the other failovers. */
static int64_t resumed_from[MAX_KILLS];
static int nkills;

/* RLOCK_TORTURE_BREAK: a deliberate defect, to see the checker fail. */
static int break_fence, break_quarantine, break_force, break_rwforce;

/* The kinds a section takes a lock as, and which lock each is: plain and
 * fair handles of "torture" are one lock (0), the read and write handles
 * of "torture-rw" the two sides of another (1). */
enum { K_LOCK, K_FAIR, K_READ, K_WRITE, NKINDS };
static const char *const kind_names[NKINDS] = {"lock", "fair", "read",
                                               "write"};
static const int kind_lock[NKINDS] = {0, 0, 1, 1};
#define NLOCKS 2
static int only_plain; /* RLOCK_TORTURE_KINDS=lock */
static int default_max_lease; /* RLOCK_TORTURE_MAX_LEASE=default */
static int no_faults; /* RLOCK_TORTURE_FAULTS=0 */
static int settle_restarts; /* RESTART_SETTLE_MS applies */
static int log_quarantine; /* RLOCK_TORTURE_LOG=1 */

/* Operations whose statuses are counted. */
enum { OP_LOCK, OP_LOCK_ASYNC, OP_UNLOCK, OP_UNLOCK_ASYNC, OP_TOKEN,
       OP_REENTER, OP_LOCK_ALL, NOPS };
static const char *const op_names[NOPS] = {"lock", "lock_async", "unlock",
                                           "unlock_async", "token",
                                           "reenter", "lock_all_held"};

/* What a worker thread is doing, for the report of a hang. */
enum { ST_IDLE, ST_LOCK, ST_LOCK_ASYNC, ST_TOKEN, ST_WRITE, ST_UNLOCK,
       ST_UNLOCK_ASYNC, ST_DONE, ST_HUNG };

/* A critical section, written by its worker, read by the checker. */
typedef struct section {
  int32_t proc, thread;
  int32_t kind, lockid, shared; /* K_*, kind_lock[kind], K_READ */
  int32_t async, lease_ms; /* lease_ms -1: watchdog */
  int64_t attempt_ns, enter_ns, leave_ns;
  uint64_t token;
  int32_t token_rc, unlock_rc;
  int32_t lost_cb; /* the lost-lock callback ran before leave */
  int32_t unlock_tries; /* unlock calls made (always 1: never retried) */
  int64_t unlocked_ns;  /* when the last unlock call returned */
  int32_t done;    /* leave and unlock recorded */
} section;

/* The memory the worker processes share with the parent. */
typedef struct shared {
  int64_t start_ns, end_ns;
  int32_t cap;           /* capacity of sections[] */
  int32_t nsections;     /* allocated so far (may pass cap: truncated) */
  int32_t in_section[PROCS];
  int32_t state[NTHREADS];
  int64_t status[NOPS][NCODES];
  int64_t odd_status;    /* a status outside 0 .. -15 */
  int64_t async_hangs;
  int64_t setup_errors;
  section sections[];
} shared;

/* One register write, logged by the register thread. */
typedef struct wlog {
  int64_t t_ns;
  uint64_t token;
  int32_t section, writer, accepted;
} wlog;

typedef struct wmsg {
  uint64_t token;
  int32_t section;
  int32_t lockid, shared;
} wmsg;

/* An injected fault, for the report. */
typedef struct event {
  int64_t t_ns;
  char what[48];
} event;

/* Time a worker process was stopped, as the injector saw it: from just
 * before SIGSTOP to just after SIGCONT. */
typedef struct stop_span {
  int proc;
  int64_t from_ns, to_ns;
} stop_span;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(int64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) continue;
}

/* splitmix64: small, seedable, good enough for choosing faults. */
static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A uniform integer in [lo, hi]. */
static int64_t rnd_in(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static int64_t env_int(const char *name, int64_t dflt) {
  const char *e = getenv(name);
  if (e == NULL || *e == '\0') return dflt;
  char *end = NULL;
  long long v = strtoll(e, &end, 0);
  return end && *end == '\0' ? (int64_t)v : dflt;
}

/* Part 1: the workers. */

typedef struct worker {
  shared *sh;
  int proc, thread, fd;
  rlock *lock;           /* the handle of the current section */
  rlock *locks[NKINDS];
  rlock *xlock;   /* "torture-x", taken with "torture" by lock_all */
  uint64_t owner; /* async owner id */
  uint64_t rng;
  int poll_wait;
  volatile int lost; /* lost-lock callbacks so far, counted on the loop */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int cb_seq, cb_status; /* async completions so far, and the last status */
} worker;

static void count_status(shared *sh, int op, int rc) {
  if (rc <= 0 && rc > -NCODES)
    __atomic_add_fetch(&sh->status[op][-rc], 1, __ATOMIC_RELAXED);
  else
    __atomic_add_fetch(&sh->odd_status, 1, __ATOMIC_RELAXED);
}

static void set_state(worker *w, int st) {
  __atomic_store_n(&w->sh->state[w->proc * THREADS + w->thread], st,
                   __ATOMIC_RELAXED);
}

static void on_lost(rlock *lock, uint64_t owner, int is_thread, void *arg) {
  (void)lock, (void)owner, (void)is_thread;
  worker *w = arg;
  __atomic_add_fetch(&w->lost, 1, __ATOMIC_SEQ_CST);
}

static void on_async(rlock *lock, int status, void *arg) {
  (void)lock;
  worker *w = arg;
  pthread_mutex_lock(&w->mu);
  w->cb_status = status;
  w->cb_seq++;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Waits for async completion number seq; returns its status, or 1 on a
 * hang (no callback within the bound). */
static int wait_async(worker *w, int seq) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += ASYNC_BOUND_MS / 1000;
  pthread_mutex_lock(&w->mu);
  int rc = 0;
  while (w->cb_seq < seq && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&w->cv, &w->mu, &dl);
  int status = w->cb_seq >= seq ? w->cb_status : 1;
  pthread_mutex_unlock(&w->mu);
  return status;
}

/* One write to the register: 1 accepted, 0 rejected, -1 broken channel. */
static int reg_write(worker *w, uint64_t token, int32_t section,
                     int lockid, int shared_) {
  wmsg m;
  memset(&m, 0, sizeof m); /* its padding goes over the socket too */
  m.token = token;
  m.section = section;
  m.lockid = lockid;
  m.shared = shared_;
  if (send(w->fd, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m) return -1;
  int32_t verdict = -1;
  ssize_t n;
  while ((n = recv(w->fd, &verdict, sizeof verdict, 0)) < 0 && errno == EINTR)
    continue;
  return n == (ssize_t)sizeof verdict ? verdict : -1;
}

/* Acquires with the async API; returns the status, or 1 on a hang. */
static int acquire_async(worker *w, int64_t wait_ms, int64_t lease) {
  set_state(w, ST_LOCK_ASYNC);
  pthread_mutex_lock(&w->mu);
  int seq = w->cb_seq + 1;
  pthread_mutex_unlock(&w->mu);
  int rc = rlock_lock_async(w->lock, w->owner, wait_ms, lease, on_async, w);
  if (rc != 0) return rc;
  return wait_async(w, seq);
}

static int release(worker *w, int async) {
  if (!async) {
    set_state(w, ST_UNLOCK);
    return rlock_unlock(w->lock);
  }
  set_state(w, ST_UNLOCK_ASYNC);
  pthread_mutex_lock(&w->mu);
  int seq = w->cb_seq + 1;
  pthread_mutex_unlock(&w->mu);
  int rc = rlock_unlock_async(w->lock, w->owner, on_async, w);
  if (rc != 0) return rc;
  return wait_async(w, seq);
}

/* Work inside a section: mostly sub-millisecond to 3 ms, sometimes 10 to
 * 40 ms (the injector's favourite moment to stop a process). */
static void work(worker *w) {
  if (rnd(&w->rng) % 100 < 5)
    sleep_us(rnd_in(&w->rng, 10000, 40000));
  else
    sleep_us(rnd_in(&w->rng, 100, 1500));
}

/* The end of the run, which the parent may move later (inject). */
static int64_t run_end(const shared *sh) {
  return __atomic_load_n(&sh->end_ns, __ATOMIC_SEQ_CST);
}

/* Inside a blocking section, now and then: a re-entry of the held lock,
 * or, for the plain lock (but on a cluster, which refuses lock_all),
 * rlock_lock_all over a set that contains it,
 * each released at once when had. Under faults these often fail, and
 * their grants are undone; neither success nor failure may take the outer
 * hold away while its holder is not told (the checker would see another
 * holder inside this section). */
static void nested(worker *w, int kind, int64_t lease) {
  int64_t wait = rnd_in(&w->rng, 0, 30);
  if (kind == K_LOCK && w->xlock != NULL && rnd(&w->rng) % 2) {
    rlock *set[2] = {w->lock, w->xlock};
    int rc = rlock_lock_all(set, 2, wait, lease);
    count_status(w->sh, OP_LOCK_ALL, rc);
    if (rc == 0) (void)rlock_unlock_all(set, 2);
  } else {
    int rc = rlock_trylock(w->lock, wait, lease);
    count_status(w->sh, OP_REENTER, rc);
    if (rc == 0) (void)rlock_unlock(w->lock);
  }
}

static void *worker_thread(void *p) {
  worker *w = p;
  shared *sh = w->sh;
  while (now_ns() < run_end(sh)) {
    /* Now and then "torture-x" alone, held briefly outside any section,
     * so that a holder's lock_all over {torture, torture-x} finds it
     * held on some masters and is refused there (nested). */
    if (w->xlock != NULL && rnd(&w->rng) % 100 < 8) {
      if (rlock_trylock(w->xlock, 0, LEASE_MAX_MS) == 0) {
        work(w);
        (void)rlock_unlock(w->xlock);
      }
      continue;
    }
    /* Which kind: a quarter each plain and fair, more reads than writes
     * (a read-write lock's use), or only plain. */
    int kp = (int)(rnd(&w->rng) % 100);
    int kind = only_plain ? K_LOCK
               : kp < 25  ? K_LOCK
               : kp < 50  ? K_FAIR
               : kp < 85  ? K_READ
                          : K_WRITE;
    w->lock = w->locks[kind];
    int async = rnd(&w->rng) % 2;
    int64_t lease = rnd(&w->rng) % 2
                        ? RLOCK_WATCHDOG
                        : rnd_in(&w->rng, LEASE_MIN_MS, LEASE_MAX_MS);
    int64_t wait_ms = rnd(&w->rng) % 3 == 0 ? 0 : rnd_in(&w->rng, 1, WAIT_MAX_MS);
    int lost0 = __atomic_load_n(&w->lost, __ATOMIC_SEQ_CST);
    int64_t attempt = now_ns();
    int rc;
    if (async) {
      rc = acquire_async(w, wait_ms, lease);
    } else {
      set_state(w, ST_LOCK);
      rc = rlock_trylock(w->lock, wait_ms, lease);
    }
    if (rc == 1) { /* no callback: a hang, reported by the parent */
      __atomic_add_fetch(&sh->async_hangs, 1, __ATOMIC_SEQ_CST);
      set_state(w, ST_HUNG);
      return NULL;
    }
    count_status(sh, async ? OP_LOCK_ASYNC : OP_LOCK, rc);
    set_state(w, ST_IDLE);
    if (rc != 0) {
      sleep_us(rnd_in(&w->rng, 0, 2000));
      continue;
    }
    int64_t enter = now_ns();
    __atomic_add_fetch(&sh->in_section[w->proc], 1, __ATOMIC_SEQ_CST);
    set_state(w, ST_TOKEN);
    uint64_t token = 0;
    int trc = async ? rlock_owner_fencing_token(w->lock, w->owner, &token)
                    : rlock_fencing_token(w->lock, &token);
    count_status(sh, OP_TOKEN, trc);
    int32_t idx = __atomic_fetch_add(&sh->nsections, 1, __ATOMIC_SEQ_CST);
    section *s = idx < sh->cap ? &sh->sections[idx] : NULL;
    if (s) {
      s->proc = w->proc;
      s->thread = w->thread;
      s->kind = kind;
      s->lockid = kind_lock[kind];
      s->shared = kind == K_READ;
      s->async = async;
      s->lease_ms = (int32_t)lease;
      s->attempt_ns = attempt;
      s->enter_ns = enter;
      s->token = token;
      s->token_rc = trc;
    }
    set_state(w, ST_WRITE);
    int broken = 0;
    for (int k = 0; k < WRITES_PER_SECTION && s; k++) {
      if (k > 0) work(w);
      if (k == 1 && !async && rnd(&w->rng) % 100 < 25) nested(w, kind, lease);
      if (reg_write(w, token, idx, kind_lock[kind], kind == K_READ) < 0)
        broken = 1;
    }
    int64_t leave = now_ns();
    int told = __atomic_load_n(&w->lost, __ATOMIC_SEQ_CST) != lost0;
    __atomic_sub_fetch(&sh->in_section[w->proc], 1, __ATOMIC_SEQ_CST);
    /* One unlock, never retried: one that cannot reach a majority ends
     * the hold (rlock releases it everywhere, best effort), as rlock.h
     * documents. */
    int urc, tries = 1;
    urc = release(w, async);
    if (urc == 1) {
      __atomic_add_fetch(&sh->async_hangs, 1, __ATOMIC_SEQ_CST);
      set_state(w, ST_HUNG);
      return NULL;
    }
    count_status(sh, async ? OP_UNLOCK_ASYNC : OP_UNLOCK, urc);
    set_state(w, ST_IDLE);
    if (s) {
      s->leave_ns = leave;
      s->unlock_rc = urc;
      s->unlock_tries = tries;
      s->unlocked_ns = now_ns();
      s->lost_cb = told;
      __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    } else {
      break; /* the section log is full: the run is truncated */
    }
    if (broken) break;
    sleep_us(rnd_in(&w->rng, 0, 1500));
  }
  set_state(w, ST_DONE);
  return NULL;
}

/* RLOCK_TORTURE_BREAK=force (rwforce): takes the lock (the write side)
 * away from whoever holds it. */
static void *breaker_thread(void *p) {
  worker *w = p;
  rlock *victim = break_rwforce ? w->locks[K_WRITE] : w->locks[K_LOCK];
  while (now_ns() < run_end(w->sh)) {
    rlock_force_unlock(victim);
    sleep_us(20000);
  }
  return NULL;
}

/* RLOCK_TORTURE_LOG=1: a worker's library log lines about restarted
 * masters, with the process and CLOCK_MONOTONIC ms. */
static void print_quarantine_log(int level, const char *msg, void *arg) {
  (void)level;
  if (strstr(msg, "restarted") == NULL) return;
  fprintf(stderr, "  [%lld ms] proc %d: %s\n",
          (long long)(now_ns() / 1000000), (int)(intptr_t)arg, msg);
}

static int worker_main(shared *sh, int proc, int n, const int *fds,
                       uint64_t seed) {
  const char *m[MAX_MASTERS];
  for (int i = 0; i < n; i++) m[i] = srv[i].url;
#ifdef RT_TORTURE_CLUSTER
  if (cluster_mode) m[0] = cl_url;
#endif
#ifdef RT_TORTURE_SENTINEL
  if (sentinel_mode) m[0] = sn_url;
#endif
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = MASTER_TIMEOUT_MS;
  o.watchdog_timeout_ms = WATCHDOG_MS;
  /* The deployment's longest lease, unless the run keeps the default. */
  if (!default_max_lease) o.max_lease_ms = LEASE_MAX_MS;
  o.drift_factor = DRIFT;
  o.retry_delay_ms = 10;
  o.retry_jitter_ms = 20;
  /* Half the processes wait by pub/sub (the default), half by polling. */
  o.wait_strategy = proc % 2 ? RLOCK_WAIT_POLL : RLOCK_WAIT_PUBSUB;
  if (break_quarantine) o.restart_quarantine_ms = 0;
  if (log_quarantine) {
    o.log_cb = print_quarantine_log;
    o.log_arg = (void *)(intptr_t)proc;
  }
  if (sentinel_acks) {
    o.replica_acks = 2;
    o.replica_ack_timeout_ms = 200;
  }
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) {
    __atomic_add_fetch(&sh->setup_errors, 1, __ATOMIC_SEQ_CST);
    return 2;
  }
  worker ws[THREADS];
  pthread_t th[THREADS];
  int started = 0;
  for (int t = 0; t < THREADS; t++) {
    worker *w = &ws[t];
    memset(w, 0, sizeof *w);
    w->sh = sh;
    w->proc = proc;
    w->thread = t;
    w->fd = fds[t];
    w->owner = 1000 + (uint64_t)t;
    w->rng = seed ^ ((uint64_t)(proc * THREADS + t + 1) * 0x100000001b3ull);
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* With the plain lock only (RLOCK_TORTURE_KINDS=lock), the other
     * kinds' handles stay NULL and are never used; a cluster refuses
     * lock_all, so the set's second lock is not made there. */
    if (rlock_get(c, "torture", &w->locks[K_LOCK]) != 0 ||
        (!cluster_mode && rlock_get(c, "torture-x", &w->xlock) != 0) ||
        (!only_plain &&
         (rlock_get_fair(c, "torture", &w->locks[K_FAIR]) != 0 ||
          rlock_get_read(c, "torture-rw", &w->locks[K_READ]) != 0 ||
          rlock_get_write(c, "torture-rw", &w->locks[K_WRITE]) != 0))) {
      __atomic_add_fetch(&sh->setup_errors, 1, __ATOMIC_SEQ_CST);
      for (int k = 0; k < NKINDS; k++) rlock_free(w->locks[k]);
      rlock_free(w->xlock);
      break;
    }
    for (int k = 0; k < NKINDS; k++)
      rlock_set_lost_cb(w->locks[k], on_lost, w);
    if (pthread_create(&th[t], NULL, worker_thread, w) != 0) {
      for (int k = 0; k < NKINDS; k++) rlock_free(w->locks[k]);
      rlock_free(w->xlock);
      __atomic_add_fetch(&sh->setup_errors, 1, __ATOMIC_SEQ_CST);
      break;
    }
    started++;
  }
  pthread_t bt;
  int breaking = (break_force || break_rwforce) && proc == 0 && started > 0 &&
                 pthread_create(&bt, NULL, breaker_thread, &ws[0]) == 0;
  if (breaking) pthread_join(bt, NULL);
  int hung = 0;
  for (int t = 0; t < started; t++) {
    pthread_join(th[t], NULL);
    hung |= __atomic_load_n(&sh->state[proc * THREADS + t], __ATOMIC_SEQ_CST) ==
            ST_HUNG;
  }
  /* A thread that gave up on a callback may still get it: do not free
   * what the callback uses, just leave. */
  if (hung) _exit(4);
  for (int t = 0; t < started; t++) {
    for (int k = 0; k < NKINDS; k++) rlock_free(ws[t].locks[k]);
    rlock_free(ws[t].xlock);
  }
  rlock_client_close(c);
  for (int t = 0; t < started; t++) {
    pthread_mutex_destroy(&ws[t].mu);
    pthread_cond_destroy(&ws[t].cv);
  }
  return started == THREADS ? 0 : 3;
}

/* Part 2: the register, a thread of the parent. */

typedef struct reg {
  int fds[NTHREADS];
  volatile int stop;
  uint64_t highest[NLOCKS];      /* of every accepted token, per lock */
  uint64_t highest_excl[NLOCKS]; /* of accepted exclusive tokens */
  wlog *log;
  size_t nlog, caplog;
  int oom;
} reg;

static void *reg_thread(void *p) {
  reg *r = p;
  struct pollfd pf[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pf[i] = (struct pollfd){r->fds[i], POLLIN, 0};
  while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST)) {
    int n = poll(pf, NTHREADS, 20);
    if (n <= 0) continue;
    for (int i = 0; i < NTHREADS; i++) {
      if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      wmsg m;
      ssize_t got = recv(pf[i].fd, &m, sizeof m, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        pf[i].fd = -1; /* the worker closed its end */
        continue;
      }
      if (got != (ssize_t)sizeof m) continue;
      int l = m.lockid >= 0 && m.lockid < NLOCKS ? m.lockid : 0;
      uint64_t bar = m.shared ? r->highest_excl[l] : r->highest[l];
      int32_t accepted = m.token >= bar || break_fence;
      if (accepted && m.token > r->highest[l]) r->highest[l] = m.token;
      if (accepted && !m.shared && m.token > r->highest_excl[l])
        r->highest_excl[l] = m.token;
      if (r->nlog == r->caplog) {
        size_t cap = r->caplog ? r->caplog * 2 : 65536;
        wlog *nl = realloc(r->log, cap * sizeof *nl);
        if (nl == NULL) {
          r->oom = 1;
        } else {
          r->log = nl;
          r->caplog = cap;
        }
      }
      if (r->nlog < r->caplog)
        r->log[r->nlog++] = (wlog){now_ns(), m.token, m.section, i, accepted};
      send(pf[i].fd, &accepted, sizeof accepted, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  return NULL;
}

/* Part 3: the injector, on the test's main thread (the harness wants
 * servers started and signalled there). */

typedef struct run {
  int n;
  uint64_t seed;
  int restarts;
  shared *sh;
  pid_t pids[PROCS];
  int exit_status[PROCS];
  int exited[PROCS];
  /* Faults. */
  int m_state[MAX_MASTERS]; /* 0 up, 1 stopped, 2 killed */
  int m_shift[MAX_MASTERS]; /* killed: restart with the clock behind */
  int64_t m_until[MAX_MASTERS];
  int64_t m_restarted_ns[MAX_MASTERS]; /* the last empty restart, or 0 */
  int w_stopped[PROCS];
  int64_t w_until[PROCS];
  int64_t f_master_stop, f_master_kill, f_worker_stop, f_restart_failed;
  int64_t f_master_kill_shifted; /* of f_master_kill */
  int64_t f_cluster_migrate, f_cluster_failover, f_cluster_kill;
  int64_t f_sentinel_kill, f_sentinel_stop, f_sentinel_kill_failed,
      f_replica_stop;
  int64_t f_worker_stop_in_section;
  event events[MAX_EVENTS];
  int nevents;
  stop_span spans[MAX_EVENTS];
  int nspans;
  int open_span[PROCS];
  /* A run that must show every kind and readers sharing goes on past its
   * end, a second at a time up to this, until it has (0: never). */
  int64_t extend_to_ns;
  int64_t extended_ms;
  int held_kind; /* a master fault waiting to go in (inject_held), or -1 */
} run;

__attribute__((format(printf, 2, 3))) static void log_event(run *r,
                                                           const char *fmt,
                                                           ...) {
  if (r->nevents >= MAX_EVENTS) return;
  event *e = &r->events[r->nevents++];
  e->t_ns = now_ns();
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->what, sizeof e->what, fmt, ap);
  va_end(ap);
  if (log_quarantine)
    fprintf(stderr, "  [%lld ms] injector: %s\n",
            (long long)(e->t_ns / 1000000), e->what);
}

/* With the library's default max_lease_ms, a master restarted empty less
 * than RESTART_SETTLE_MS ago still counts as faulty. Two masters of a
 * majority restarted within a master timeout of each other leave nothing
 * that bounds the leases both forgot, and both rightly keep the full
 * configured quarantine (docs/guarantees.md): that is a majority failure,
 * and a run that drew one would measure the 60 s fallback, not the
 * horizon. RESTART_SETTLE_MS covers the clients' reconnection (their
 * backoff is at most 250 ms against a port nobody listens on), the
 * master timeout and a few of their horizon reads (every 100 ms), with
 * room for a loaded machine. Runs with max_lease_ms set (and
 * RLOCK_TORTURE_SETTLE=0) have no such spacing, and still meet such
 * pairs. */
#define RESTART_SETTLE_MS (MASTER_TIMEOUT_MS + 850)

/* Masters stopped or killed and not yet resumed or restarted. */
static int masters_down(const run *r) {
  int k = 0;
  for (int i = 0; i < r->n; i++) k += r->m_state[i] != 0;
  return k;
}

static int masters_faulty(const run *r) {
  int k = 0;
  int64_t now = now_ns();
  for (int i = 0; i < r->n; i++)
    k += r->m_state[i] != 0 ||
         (settle_restarts && r->m_restarted_ns[i] != 0 &&
          now - r->m_restarted_ns[i] < RESTART_SETTLE_MS * 1000000ll);
  return k;
}

static int workers_stopped(const run *r) {
  int k = 0;
  for (int p = 0; p < PROCS; p++) k += r->w_stopped[p];
  return k;
}

/* Notes a worker that exited (or died) while we looked at it. */
static void note_exit(run *r, int p, int st) {
  r->exited[p] = 1;
  r->exit_status[p] = st;
}

static void stop_worker(run *r, int p, int64_t ms) {
  int in = __atomic_load_n(&r->sh->in_section[p], __ATOMIC_SEQ_CST) > 0;
  int64_t t = now_ns();
  if (kill(r->pids[p], SIGSTOP) != 0) return;
  int st = 0;
  pid_t got;
  while ((got = waitpid(r->pids[p], &st, WUNTRACED)) < 0 && errno == EINTR)
    continue;
  if (got == r->pids[p] && !WIFSTOPPED(st)) {
    note_exit(r, p, st);
    return;
  }
  r->w_stopped[p] = 1;
  r->w_until[p] = t + ms * 1000000;
  r->f_worker_stop++;
  r->f_worker_stop_in_section += in;
  if (r->nspans < MAX_EVENTS) {
    r->open_span[p] = r->nspans;
    r->spans[r->nspans++] = (stop_span){p, t, INT64_MAX};
  }
  log_event(r, in ? "stop worker %d for %d ms (in section)"
                  : "stop worker %d for %d ms", p, (int)ms);
}

static void resume_worker(run *r, int p) {
  kill(r->pids[p], SIGCONT);
  r->w_stopped[p] = 0;
  if (r->open_span[p] >= 0) r->spans[r->open_span[p]].to_ns = now_ns();
  r->open_span[p] = -1;
  log_event(r, "resume worker %d", p);
}

static void master_back(run *r, int i) {
  if (r->m_state[i] == 1) {
    rt_redis_resume(&srv[i]);
    log_event(r, "resume master %d", i);
    r->m_state[i] = 0;
  } else if (r->m_state[i] == 2) {
    char buf[2][512];
    const char *env[3];
    int rc = r->m_shift[i] && rt_redis_clockshift_env(-7200, buf, env) == 0
                 ? rt_redis_restart_ex(&srv[i], env)
                 : rt_redis_restart_ex(&srv[i], NULL);
    if (rc == 0) {
      log_event(r, "restart master %d (empty%s)", i,
                r->m_shift[i] ? ", clock 2 h behind" : "");
      r->m_state[i] = 0;
      r->m_restarted_ns[i] = now_ns();
    } else {
      /* The port may be taken for a moment; try again soon. */
      r->f_restart_failed++;
      log_event(r, "restart of master %d failed", i);
      r->m_until[i] = now_ns() + 200 * 1000000;
    }
  }
}

/* SIGKILLs master i, to be restarted empty in ms, with its wall clock two
 * hours behind when shifted is set. */
static void kill_master(run *r, int i, int64_t ms, int shifted) {
  if (rt_redis_kill(&srv[i]) != 0) return;
  r->m_state[i] = 2;
  r->m_shift[i] = shifted;
  r->m_until[i] = now_ns() + ms * 1000000;
  r->f_master_kill++;
  r->f_master_kill_shifted += shifted;
  log_event(r, "kill master %d, restart in %d ms%s", i, (int)ms,
            shifted ? " with the clock 2 h behind" : "");
}

#ifdef RT_TORTURE_CLUSTER
/* The cluster's faults, each on the shard that serves the lock; 1 if one
 * was injected (the helpers return once the cluster is settled). */
static int inject_cluster(run *r, int kind) {
  int slot = rt_key_slot_str("rlock:{torture}");
  int owner = rt_cluster_owner(&tcl, slot);
  if (owner < 0) return 0;
  if (kind < 12) {
    int to = -1;
    for (int i = 0; i < RT_CLUSTER_NODES && to < 0; i++)
      if (i != owner && rt_cluster_is_primary(&tcl, i) == 1) to = i;
    if (to < 0) return 0;
    log_event(r, "cluster: migrate slot %d from node %d to node %d", slot,
              owner, to);
    if (rt_cluster_migrate_slot(&tcl, slot, to) != 0)
      log_event(r, "cluster: the migration failed");
    r->f_cluster_migrate++;
    return 1;
  }
  if (kind < 20) {
    int rep = rt_cluster_replica_of(&tcl, owner);
    if (rep < 0) return 0;
    log_event(r, "cluster: manual failover of master node %d to node %d",
              owner, rep);
    if (rt_cluster_failover(&tcl, rep) != 0)
      log_event(r, "cluster: the failover failed");
    r->f_cluster_failover++;
    return 1;
  }
  if (kind < 25 && r->restarts && nkills < MAX_KILLS &&
      now_ns() + 15 * 1000000000ll < r->sh->end_ns) {
    int64_t t = now_ns();
    log_event(r, "cluster: kill master node %d", owner);
    int promoted = rt_cluster_kill_primary(&tcl, owner);
    kill_from[nkills] = t;
    resumed_from[nkills] = 0;
    kill_to[nkills++] = now_ns() + 1000000000ll;
    log_event(r, "cluster: master node %d replaced by node %d", owner,
              promoted);
    if (rt_cluster_restart(&tcl, owner) != 0)
      log_event(r, "cluster: restart of node %d failed", owner);
    r->f_cluster_kill++;
    return 1;
  }
  return 0;
}
#endif

#ifdef RT_TORTURE_SENTINEL
/* The Sentinel group's faults; 1 if one was injected (the helpers return
 * once the group is settled). A kill is at least 7 s after the last one:
 * a sentinel does not fail the same master over again within twice its
 * failover-timeout (harness_sentinel.h), and the failover starts about
 * RT_SENTINEL_DOWN_AFTER_MS after the kill. */
static int inject_sentinel(run *r, int kind, uint64_t *rng) {
  int64_t now = now_ns();
  if (kind < 10 && nkills < MAX_KILLS && now > last_kill + 7000000000ll &&
      now + 10 * 1000000000ll < r->sh->end_ns) {
    int old = rt_sentinel_master(&tsn);
    if (old < 0) return 0;
    if (kind >= 5 || !r->restarts) {
      /* The master stopped until the sentinels fail it over, then
       * resumed: what its clients sent meanwhile runs on it before a
       * sentinel makes it a replica of the new master. */
      log_event(r, "sentinel: stop master data[%d] until failed over", old);
      kill_from[nkills] = now;
      resumed_from[nkills] = 0;
      last_kill = now;
      int n = -1;
      if (rt_sentinel_pause(&tsn, old) == 0) {
        n = rt_sentinel_wait_master_not(&tsn, old, 30000);
        log_event(r, "sentinel: resume data[%d] (data[%d] named)", old, n);
        resumed_from[nkills] = now_ns();
        rt_sentinel_resume(&tsn, old);
      }
      if (n >= 0 && rt_sentinel_wait_replicas(&tsn, 30000) == 0)
        log_event(r, "sentinel: data[%d] promoted, data[%d] its replica", n,
                  old);
      else {
        r->f_sentinel_kill_failed++;
        log_event(r, "sentinel: the failover did not settle");
      }
      kill_to[nkills++] = now_ns() + 1000000000ll;
      r->f_sentinel_stop++;
      return 1;
    }
    log_event(r, "sentinel: kill master data[%d]", old);
    kill_from[nkills] = now;
    resumed_from[nkills] = 0;
    last_kill = now;
    int n = rt_sentinel_kill_master(&tsn);
    kill_to[nkills++] = now_ns() + 1000000000ll;
    r->f_sentinel_kill++;
    if (n < 0) {
      r->f_sentinel_kill_failed++;
      log_event(r, "sentinel: the failover did not settle");
    } else {
      log_event(r, "sentinel: data[%d] promoted", n);
    }
    /* The old master back, empty, made a replica at once (rather than in
     * the 10 s a sentinel takes to convert it). */
    if (rt_node_restart(&tsn.data[old], 0,
                        "--repl-diskless-sync-delay 0") != 0) {
      r->f_restart_failed++;
      log_event(r, "sentinel: restart of data[%d] failed", old);
    } else if (n >= 0) {
      redisReply *rep = rt_redis_cmd(&tsn.data[old], "REPLICAOF 127.0.0.1 %d",
                                     tsn.data[n].port);
      if (rep) freeReplyObject(rep);
      if (rt_sentinel_wait_replicas(&tsn, 30000) != 0)
        log_event(r, "sentinel: data[%d] does not follow data[%d]", old, n);
      else
        log_event(r, "sentinel: data[%d] is a replica again", old);
    }
    return 1;
  }
  if (kind < 25) {
    int m = rt_sentinel_master(&tsn);
    if (m < 0) return 0;
    int i = (m + 1 + (int)(rnd(rng) % 2)) % RT_SENTINEL_DATA;
    int64_t ms = rnd_in(rng, 100, 600);
    if (tsn.data[i].pid == 0 || rt_sentinel_pause(&tsn, i) != 0) return 0;
    log_event(r, "sentinel: stop replica data[%d] for %d ms", i, (int)ms);
    sleep_us(ms * 1000);
    rt_sentinel_resume(&tsn, i);
    r->f_replica_stop++;
    return 1;
  }
  return 0;
}
#endif

/* Whether a master fault must wait only because a restart is settling
 * (RESTART_SETTLE_MS): with the restarts counted as up, it would go in. */
static int settling_only(const run *r, int i) {
  return settle_restarts && r->m_state[i] == 0 &&
         masters_down(r) < (r->n - 1) / 2;
}

static void inject_kind(run *r, uint64_t *rng, int kind);

static void inject_one(run *r, uint64_t *rng) {
  inject_kind(r, rng, (int)(rnd(rng) % 100));
}

/* A master fault held back only by a settling restart goes in as soon as
 * the restart has settled (the injector's loop calls this every few ms),
 * so that the spacing delays master faults rather than thinning them,
 * and the draws meanwhile go on as usual. */
static void inject_held(run *r, uint64_t *rng) {
  int kind = r->held_kind;
  if (kind < 0) return;
  r->held_kind = -1;
  inject_kind(r, rng, kind);
}

static void inject_kind(run *r, uint64_t *rng, int kind) {
  int64_t now = now_ns();
  int minority = (r->n - 1) / 2;
  /* A topology fault blocks this thread until the cluster or the group
   * settles (up to 30 s under load), and a stopped worker is resumed only
   * here: resume them first, so that no stop outlasts its length and the
   * worker's own bound on an async callback (ASYNC_BOUND_MS) stays a
   * bound on rlock, not on this thread (a manual failover can take 30 s,
   * which would otherwise read as "an async callback never came"). */
  if (cluster_mode || sentinel_mode)
    for (int p = 0; p < PROCS; p++)
      if (r->w_stopped[p]) resume_worker(r, p);
#ifdef RT_TORTURE_CLUSTER
  if (cluster_mode) {
    if (inject_cluster(r, kind)) return;
    kind = 99; /* a worker stop */
  }
#endif
#ifdef RT_TORTURE_SENTINEL
  if (sentinel_mode) {
    /* Until the master has been stopped or killed once, every fault is a
     * try at that (inject_sentinel keeps its spacing and its window): the
     * run checks that it saw one, and under load a run of 12 replica
     * stops can draw none. */
    if (r->f_sentinel_kill + r->f_sentinel_stop == 0) kind %= 10;
    if (inject_sentinel(r, kind, rng)) return;
    kind = 99;
  }
#endif
  if (r->n == 1 && !cluster_mode && !sentinel_mode) {
    /* Worker stops, now and then a brief stop of the master, and rarely
     * an empty restart with its clock behind (nothing can be locked for
     * the quarantine after it). */
    if (kind < 4 && r->restarts && r->m_state[0] == 0) {
      kill_master(r, 0, rnd_in(rng, 100, 600), 1);
      return;
    }
    if (kind < 15 && r->m_state[0] == 0) {
      int64_t ms = rnd_in(rng, 50, 300);
      if (rt_redis_pause(&srv[0]) == 0) {
        r->m_state[0] = 1;
        r->m_until[0] = now + ms * 1000000;
        r->f_master_stop++;
        log_event(r, "stop master %d for %d ms", 0, (int)ms);
      }
      return;
    }
    kind = 99;
  }
  if (kind < 35 || (kind < 60 && !r->restarts)) {
    int i = (int)(rnd(rng) % (uint64_t)r->n);
    if (r->m_state[i] != 0 || masters_faulty(r) >= minority) {
      if (settling_only(r, i)) r->held_kind = kind;
      return;
    }
    int64_t ms = rnd_in(rng, 100, 1500);
    if (rt_redis_pause(&srv[i]) == 0) {
      r->m_state[i] = 1;
      r->m_until[i] = now + ms * 1000000;
      r->f_master_stop++;
      log_event(r, "stop master %d for %d ms", i, (int)ms);
    }
  } else if (kind < 60) {
    int i = (int)(rnd(rng) % (uint64_t)r->n);
    if (r->m_state[i] != 0 || masters_faulty(r) >= minority) {
      if (settling_only(r, i)) r->held_kind = kind;
      return;
    }
    kill_master(r, i, rnd_in(rng, 100, 1200), rnd(rng) % 2);
  } else {
    int64_t ms = WORKER_STOP_MS + rnd_in(rng, 0, 500);
    if (workers_stopped(r) >= PROCS / 2) return;
    if (now + (ms + 500) * 1000000 > r->sh->end_ns) return;
    /* Prefer a process inside a critical section: look for up to 100 ms. */
    int p = -1;
    for (int k = 0; k < 100 && p < 0; k++) {
      int first = (int)(rnd(rng) % PROCS);
      for (int j = 0; j < PROCS && p < 0; j++) {
        int q = (first + j) % PROCS;
        if (!r->w_stopped[q] && !r->exited[q] &&
            __atomic_load_n(&r->sh->in_section[q], __ATOMIC_SEQ_CST) > 0)
          p = q;
      }
      if (p < 0) sleep_us(1000);
    }
    if (p < 0) p = (int)(rnd(rng) % PROCS);
    if (r->w_stopped[p] || r->exited[p]) return;
    stop_worker(r, p, ms);
  }
}

/* Whether the sections finished so far show what a long run must: every
 * kind taken, and two read sections of the read-write lock overlapping. */
static int run_covered(const shared *sh) {
  int32_t n = __atomic_load_n(&sh->nsections, __ATOMIC_SEQ_CST);
  if (n > sh->cap) n = sh->cap;
  int64_t by_kind[NKINDS] = {0};
  for (int i = 0; i < n; i++)
    if (__atomic_load_n(&sh->sections[i].done, __ATOMIC_ACQUIRE))
      by_kind[sh->sections[i].kind]++;
  for (int k = 0; k < NKINDS; k++)
    if (by_kind[k] == 0) return 0;
  for (int i = 0; i < n; i++) {
    const section *a = &sh->sections[i];
    if (!a->shared || !__atomic_load_n(&a->done, __ATOMIC_ACQUIRE)) continue;
    for (int j = i + 1; j < n; j++) {
      const section *b = &sh->sections[j];
      if (b->shared && __atomic_load_n(&b->done, __ATOMIC_ACQUIRE) &&
          a->enter_ns < b->leave_ns && b->enter_ns < a->leave_ns)
        return 1;
    }
  }
  return 0;
}

static void inject(run *r) {
  uint64_t rng = r->seed * 0x2545F4914F6CDD1Dull + 7;
  int64_t next = now_ns() + 300 * 1000000;
  for (;;) {
    int64_t now = now_ns();
    for (int i = 0; i < r->n; i++)
      if (r->m_state[i] != 0 && now >= r->m_until[i]) master_back(r, i);
    for (int p = 0; p < PROCS; p++)
      if (r->w_stopped[p] && now >= r->w_until[p]) resume_worker(r, p);
    if (now >= r->sh->end_ns) {
      /* A slow run (valgrind beside other tests made 10 to 60 sections in
       * 8 s) goes on until it shows what the checks ask of it. */
      if (now >= r->extend_to_ns || run_covered(r->sh)) break;
      __atomic_store_n(&r->sh->end_ns, now + 1000000000ll, __ATOMIC_SEQ_CST);
      r->extended_ms += 1000;
      log_event(r, "run extended by 1 s: not every kind or no shared read yet");
    }
    if (!no_faults) inject_held(r, &rng);
    if (now >= next && !no_faults) {
      inject_one(r, &rng);
      next = now_ns() + rnd_in(&rng, 150, 600) * 1000000;
    }
    sleep_us(5000);
  }
  /* Undo every fault still in place. */
  for (int p = 0; p < PROCS; p++)
    if (r->w_stopped[p]) resume_worker(r, p);
  for (int tries = 0; tries < 50 && masters_down(r) > 0; tries++) {
    for (int i = 0; i < r->n; i++)
      if (r->m_state[i] != 0) master_back(r, i);
    if (masters_down(r) > 0) sleep_us(100000);
  }
}

/* Part 4: the checker. */

typedef struct secx {
  int idx;
  int stale, paused, lost, exceeded;
  int failover; /* meets a SIGKILLed primary's (master's) window */
  int64_t first_write_seq; /* -1: none */
  int nwrites, nrejected;
  int64_t seq[WRITES_PER_SECTION]; /* register order of its writes */
} secx;

typedef struct check {
  run *r;
  section *s;
  secx *x;
  int ns;
  wlog *log;
  size_t nlog;
  int64_t violations;
  int reported;
  int64_t overlaps, resolved, benign, stale_rejected, stale_accepted,
      stale_accepted_before_newer, valid_rejected, stale_sections, paused,
      lost, exceeded, token_regressions, token_duplicates, bad_status,
      writes, unexplained_losses, unlock_retried, max_unlock_tries,
      lost_after, shared_overlaps, failover_sections, failover_valid,
      late_pairs, late_below;
  int by_kind[NKINDS];
} check;

static void print_events_near(const run *r, int64_t t) {
  for (int i = 0; i < r->nevents; i++) {
    const event *e = &r->events[i];
    if (e->t_ns >= t - 5000000000ll && e->t_ns <= t + 1000000000ll)
      fprintf(stderr, "      %+.3f s  %s\n",
              (double)(e->t_ns - r->sh->start_ns) / 1e9, e->what);
  }
}

static void print_section(const check *c, const char *label, int i) {
  const section *s = &c->s[i];
  const secx *x = &c->x[i];
  int64_t t0 = c->r->sh->start_ns;
  fprintf(stderr,
          "    %s: #%d worker %d.%d %s %s lease %d token %" PRIu64
          " attempt %+.3f enter %+.3f leave %+.3f unlock %d lost_cb %d "
          "writes %d rejected %d stale %d (paused %d lost %d exceeded %d) "
          "unlock tries %d until %+.3f\n",
          label, x->idx, s->proc, s->thread,
          s->kind >= 0 && s->kind < NKINDS ? kind_names[s->kind] : "?",
          s->async ? "async" : "blocking",
          s->lease_ms, s->token, (double)(s->attempt_ns - t0) / 1e9,
          (double)(s->enter_ns - t0) / 1e9, (double)(s->leave_ns - t0) / 1e9,
          s->unlock_rc, s->lost_cb, x->nwrites, x->nrejected, x->stale,
          x->paused, x->lost, x->exceeded, s->unlock_tries,
          (double)(s->unlocked_ns - t0) / 1e9);
}

/* Records a violation, with details for the first few. */
static void violation(check *c, const char *what, int a, int b) {
  c->violations++;
  if (c->reported++ >= MAX_REPORTED) return;
  fprintf(stderr, "  VIOLATION: %s (seed %" PRIu64 ")\n", what, c->r->seed);
  if (a >= 0) print_section(c, "A", a);
  if (b >= 0) print_section(c, "B", b);
  int64_t t = a >= 0 ? c->s[a].enter_ns : now_ns();
  if (b >= 0 && c->s[b].enter_ns > t) t = c->s[b].enter_ns;
  fprintf(stderr, "    faults from 5 s before to 1 s after:\n");
  print_events_near(c->r, t);
}

static int by_enter(const void *a, const void *b, void *arg) {
  const section *s = arg;
  int64_t x = s[*(const int *)a].enter_ns, y = s[*(const int *)b].enter_ns;
  return x < y ? -1 : x > y;
}

static int by_token(const void *a, const void *b, void *arg) {
  const section *s = arg;
  uint64_t x = s[*(const int *)a].token, y = s[*(const int *)b].token;
  return x < y ? -1 : x > y;
}

static int was_stopped(const run *r, const section *s) {
  for (int i = 0; i < r->nspans; i++) {
    const stop_span *sp = &r->spans[i];
    if (sp->proc == s->proc && sp->from_ns <= s->leave_ns &&
        sp->to_ns >= s->attempt_ns)
      return 1;
  }
  return 0;
}

static int master_fault_near(const run *r, const section *s) {
  for (int i = 0; i < r->nevents; i++)
    if (strstr(r->events[i].what, "master") &&
        r->events[i].t_ns >= s->attempt_ns - 5000000000ll &&
        r->events[i].t_ns <= s->leave_ns)
      return 1;
  return 0;
}

static int status_ok(int op, int code) {
  switch (op) {
  case OP_LOCK:
  case OP_LOCK_ASYNC:
    return code == 0 || code == RLOCK_ETIMEDOUT || code == RLOCK_ENOQUORUM ||
           code == RLOCK_EREDIS;
  case OP_UNLOCK:
  case OP_UNLOCK_ASYNC:
    return code == 0 || code == RLOCK_ELOST || code == RLOCK_ENOTOWNER ||
           code == RLOCK_ENOQUORUM || code == RLOCK_EREDIS;
  case OP_REENTER:
  case OP_LOCK_ALL: /* the outer hold may have been lost meanwhile */
    return code == 0 || code == RLOCK_ETIMEDOUT || code == RLOCK_ENOQUORUM ||
           code == RLOCK_EREDIS || code == RLOCK_ELOST;
  default:
    return code == 0 || code == RLOCK_ENOTOWNER || code == RLOCK_ELOST;
  }
}

/* Classifies the sections and fills the per-section write figures. */
static void classify(check *c) {
  for (int i = 0; i < c->ns; i++) {
    c->x[i] = (secx){.idx = i, .first_write_seq = -1};
  }
  for (size_t k = 0; k < c->nlog; k++) {
    const wlog *w = &c->log[k];
    if (w->section < 0 || w->section >= c->ns) continue;
    secx *x = &c->x[w->section];
    if (x->first_write_seq < 0) x->first_write_seq = (int64_t)k;
    if (x->nwrites < WRITES_PER_SECTION) x->seq[x->nwrites] = (int64_t)k;
    x->nwrites++;
    x->nrejected += !w->accepted;
  }
  for (int i = 0; i < c->ns; i++) {
    const section *s = &c->s[i];
    secx *x = &c->x[i];
    if (s->kind >= 0 && s->kind < NKINDS) c->by_kind[s->kind]++;
    x->paused = was_stopped(c->r, s);
    x->lost = s->lost_cb || s->token_rc != 0;
    c->lost_after += !x->lost && (s->unlock_rc == RLOCK_ELOST ||
                                  s->unlock_rc == RLOCK_ENOTOWNER);
    x->exceeded =
        s->lease_ms > 0 &&
        s->leave_ns > s->attempt_ns +
                          (int64_t)((double)s->lease_ms * (1 - DRIFT) * 1e6) -
                          2000000;
    x->failover = 0;
    for (int k = 0; k < nkills; k++)
      x->failover |= kill_from[k] <= s->leave_ns && kill_to[k] >= s->attempt_ns;
    /* With replica_acks on every replica, a failover keeps what counted
     * (Sentinel mode's comment): its sections are judged as any other. */
    x->stale = x->paused || x->lost || x->exceeded ||
               (x->failover && !sentinel_acks && !strict_failover);
    c->failover_sections += x->failover;
    c->failover_valid += x->failover && !x->stale;
    c->stale_sections += x->stale;
    c->unlock_retried += s->unlock_tries > 1;
    if (s->unlock_tries > c->max_unlock_tries) {
      c->max_unlock_tries = s->unlock_tries;
      if (getenv("RLOCK_TORTURE_DEBUG")) print_section(c, "retried", i);
    }
    c->paused += x->paused;
    c->lost += x->lost;
    c->exceeded += x->exceeded;
    int lost_any = x->lost || s->unlock_rc == RLOCK_ELOST ||
                   s->unlock_rc == RLOCK_ENOTOWNER;
    if (lost_any && !x->paused && !x->exceeded && !master_fault_near(c->r, s))
      c->unexplained_losses++;
    if (s->unlock_rc == RLOCK_ENOTOWNER && !x->paused && !s->lost_cb &&
        !x->exceeded && !master_fault_near(c->r, s))
      violation(c, "RLOCK_ENOTOWNER from unlock with no loss to explain it", i,
                -1);
  }
}

/* (1a) and (1b). */
static void check_overlaps(check *c, const int *order) {
  for (int a = 0; a < c->ns; a++) {
    int i = order[a];
    for (int b = a + 1; b < c->ns; b++) {
      int j = order[b];
      if (c->s[j].enter_ns > c->s[i].leave_ns) break;
      /* Another lock's, or two readers sharing theirs. */
      if (c->s[i].lockid != c->s[j].lockid) continue;
      if (c->s[i].shared && c->s[j].shared) {
        c->shared_overlaps++;
        continue;
      }
      c->overlaps++;
      if (!c->x[i].stale && !c->x[j].stale)
        violation(c, "double holder: two valid sections overlap", i, j);
      int lo = c->s[i].token < c->s[j].token ? i : j, hi = lo == i ? j : i;
      int64_t from = c->x[hi].first_write_seq;
      int late = 0, bad = 0;
      for (int k = 0; k < c->x[lo].nwrites && k < WRITES_PER_SECTION; k++)
        if (from >= 0 && c->x[lo].seq[k] > from) {
          late++;
          bad += c->log[c->x[lo].seq[k]].accepted;
        }
      if (bad)
        violation(c, "unresolved overlap: a stale write landed after the "
                     "newer holder's", lo, hi);
      else if (late)
        c->resolved++;
      else
        c->benign++;
    }
  }
}

/* (2): tokens increase in acquisition order, and are unique, per lock;
 * two shared sections are not compared. */
/* The latest moment a section can have been granted: when it entered,
 * or, if its process was stopped between the attempt and the entering,
 * when that stop began (the grant may have come just before it, and the
 * section entered only once the process ran again). */
static int64_t granted_by(const run *r, const section *s) {
  int64_t t = s->enter_ns;
  for (int i = 0; i < r->nspans; i++) {
    const stop_span *sp = &r->spans[i];
    if (sp->proc == s->proc && sp->from_ns >= s->attempt_ns &&
        sp->from_ns < t)
      t = sp->from_ns;
  }
  return t;
}

/* The earliest moment a section's grant can have run late, on a master
 * stopped until the sentinels failed it over and then resumed (it runs
 * what it was sent meanwhile before a sentinel demotes it, and a client
 * whose sentinel has not yet announced +switch-master takes the reply):
 * that resume, when the section attempted before it and was granted by
 * (granted_by) after it; else INT64_MIN. Only where a failover excuses
 * sections: with replica_acks on every replica such a grant is not
 * acknowledged (the replicas follow the new master) and is undone. */
static int64_t late_grant_from(const section *s, int64_t granted) {
  if (!sentinel_mode || sentinel_acks || strict_failover) return INT64_MIN;
  int64_t from = INT64_MIN;
  for (int k = 0; k < nkills; k++)
    if (resumed_from[k] != 0 && s->attempt_ns <= resumed_from[k] &&
        granted > resumed_from[k] && (from == INT64_MIN || resumed_from[k] < from))
      from = resumed_from[k];
  return from;
}

static void check_tokens_of(check *c, const int *order, int lockid) {
  (void)order;
  int *tk = malloc((size_t)c->ns * sizeof *tk);
  if (tk == NULL) {
    violation(c, "checker out of memory", -1, -1);
    return;
  }
  int m = 0;
  for (int i = 0; i < c->ns; i++)
    if (c->s[i].lockid == lockid) tk[m++] = i;
  qsort_r(tk, (size_t)m, sizeof *tk, by_token, c->s);
  /* For each section, the largest tokens of those of its lock that left
   * before it was granted: of any section (what an exclusive one must
   * exceed) and of exclusive ones (what a shared one must exceed). */
  for (int a = 0; a < m; a++) {
    const section *y = &c->s[tk[a]];
    if (y->token_rc != 0) continue;
    int64_t t = granted_by(c->r, y), late = late_grant_from(y, t);
    uint64_t bar = 0;
    int of = -1;
    for (int b = 0; b < m; b++) {
      const section *x = &c->s[tk[b]];
      if (x->token_rc != 0 || x->leave_ns >= t || (y->shared && x->shared))
        continue;
      /* A grant that may have run late on the resumed old master, as
       * Sentinel's comment says: README promises its token above x's
       * when x was granted before y sent (y's floor then) or more than
       * the slack before y's grant ran; neither is known of an x that
       * entered after y's attempt and within LATE_SLACK_MS of the
       * resume. */
      if (late != INT64_MIN && x->enter_ns >= y->attempt_ns &&
          x->enter_ns + (int64_t)LATE_SLACK_MS * 1000000 >= late) {
        c->late_pairs++;
        if (y->token <= x->token) {
          c->late_below++;
          if (getenv("RLOCK_TORTURE_DEBUG")) {
            fprintf(stderr, "  late grant below an earlier holder's "
                    "(resume at %+.3f s):\n",
                    (double)(late - c->r->sh->start_ns) / 1e9);
            print_section(c, "x", tk[b]);
            print_section(c, "y", tk[a]);
          }
        }
        continue;
      }
      if (of < 0 || x->token > bar) bar = x->token, of = tk[b];
    }
    if (of >= 0 && y->token <= bar) {
      c->token_regressions++;
      violation(c, "token not above an earlier holder's", of, tk[a]);
    }
  }
  for (int a = 1; a < m; a++) {
    const section *x = &c->s[tk[a - 1]], *y = &c->s[tk[a]];
    if (x->token_rc == 0 && y->token_rc == 0 && x->token == y->token &&
        !(x->shared && y->shared)) {
      c->token_duplicates++;
      violation(c, "two sections share a token", tk[a - 1], tk[a]);
    }
  }
  free(tk);
}

static void check_tokens(check *c, const int *order) {
  for (int l = 0; l < NLOCKS; l++) check_tokens_of(c, order, l);
}

/* For check 3, the moment from which a section whose write was accepted
 * counts as newer than another: its enter; but a grant that a resumed old
 * master may have run late (late_grant_from) is ordered as check 2 orders
 * it, from no earlier than its attempt and the resume less the slack. A
 * section that entered after that may hold the larger token (it was
 * granted on the new master while the late grant ran on the old one), and
 * then the register rightly accepts its writes after the late grant's. */
static int64_t newer_from(const check *c, const section *s) {
  int64_t late = late_grant_from(s, granted_by(c->r, s));
  if (late == INT64_MIN) return s->enter_ns;
  int64_t t = late - (int64_t)LATE_SLACK_MS * 1000000;
  if (t < s->attempt_ns) t = s->attempt_ns;
  return t < s->enter_ns ? t : s->enter_ns;
}

/* (3): writes in register order. */
static void check_writes(check *c) {
  /* Per lock, the largest enter of a section whose write was accepted:
   * of any section, and of exclusive ones. */
  int64_t newest_all[NLOCKS], newest_excl[NLOCKS];
  for (int l = 0; l < NLOCKS; l++) newest_all[l] = newest_excl[l] = INT64_MIN;
  for (size_t k = 0; k < c->nlog; k++) {
    const wlog *w = &c->log[k];
    c->writes++;
    if (w->section < 0 || w->section >= c->ns) {
      violation(c, "a write from an unrecorded section", -1, -1);
      continue;
    }
    const section *s = &c->s[w->section];
    const secx *x = &c->x[w->section];
    int l = s->lockid >= 0 && s->lockid < NLOCKS ? s->lockid : 0;
    /* A later reader does not fence an earlier reader out. */
    int64_t newest = s->shared ? newest_excl[l] : newest_all[l];
    if (x->stale) {
      if (!w->accepted)
        c->stale_rejected++;
      else if (newest > s->enter_ns) {
        c->stale_accepted++;
        violation(c, "stale write accepted after a newer holder's write",
                  w->section, -1);
      } else {
        c->stale_accepted_before_newer++;
      }
    } else if (!w->accepted) {
      c->valid_rejected++;
      violation(c, "valid write rejected (token inversion)", w->section, -1);
    }
    int64_t from = w->accepted ? newer_from(c, s) : INT64_MIN;
    if (w->accepted && from > newest_all[l]) newest_all[l] = from;
    if (w->accepted && !s->shared && from > newest_excl[l])
      newest_excl[l] = from;
  }
}

/* (4): statuses and exits. */
static void check_statuses(check *c) {
  shared *sh = c->r->sh;
  for (int op = 0; op < NOPS; op++)
    for (int k = 0; k < NCODES; k++)
      if (sh->status[op][k] > 0 && !status_ok(op, -k)) {
        c->bad_status += sh->status[op][k];
        char what[96];
        snprintf(what, sizeof what, "%s returned %d (%s) %" PRId64 " times",
                 op_names[op], -k, rlock_strerror(-k), sh->status[op][k]);
        violation(c, what, -1, -1);
      }
  if (sh->odd_status > 0) violation(c, "a status outside the codes", -1, -1);
  if (sh->async_hangs > 0) violation(c, "an async callback never came", -1, -1);
  if (sh->setup_errors > 0) violation(c, "a worker could not start", -1, -1);
}

static void print_figures(const check *c, double secs, int truncated) {
  const run *r = c->r;
  const shared *sh = r->sh;
  int64_t acq = 0;
  for (int op = OP_LOCK; op <= OP_LOCK_ASYNC; op++) acq += sh->status[op][0];
  fprintf(stderr,
          "{\"case\":\"torture_n%d\",\"seed\":%" PRIu64 ",\"duration_s\":%.1f,"
          "\"extended_ms\":%" PRId64 ","
          "\"masters\":%d,\"procs\":%d,\"threads\":%d,\"acquisitions\":%" PRId64
          ",\"sections\":%d,\"truncated\":%d,\"writes\":%" PRId64
          ",\"sections_by_kind\":{\"lock\":%d,\"fair\":%d,\"read\":%d,"
          "\"write\":%d},\"read_overlaps\":%" PRId64
          ",\"overlaps\":%" PRId64 ",\"overlaps_resolved\":%" PRId64
          ",\"overlaps_benign\":%" PRId64 ",\"stale_sections\":%" PRId64
          ",\"stale_paused\":%" PRId64 ",\"stale_told_lost\":%" PRId64
          ",\"stale_exceeded\":%" PRId64 ",\"lost_learned_at_unlock\":%" PRId64
          ",\"unexplained_losses\":%" PRId64
          ",\"stale_writes_rejected\":%" PRId64
          ",\"stale_writes_accepted\":%" PRId64
          ",\"stale_writes_accepted_before_newer\":%" PRId64
          ",\"valid_writes_rejected\":%" PRId64 ",\"token_regressions\":%" PRId64
          ",\"unlock_retried_sections\":%" PRId64 ",\"max_unlock_tries\":%" PRId64
          ",\"faults\":{\"master_stop\":%" PRId64 ",\"master_kill\":%" PRId64
          ",\"master_kill_shifted\":%" PRId64 ",\"worker_stop\":%" PRId64 ",\"worker_stop_in_section\":%" PRId64
          ",\"restart_failed\":%" PRId64 "},\"errors\":{",
          r->n, r->seed, secs, r->extended_ms, r->n, PROCS, THREADS, acq, c->ns, truncated,
          c->writes, c->by_kind[K_LOCK], c->by_kind[K_FAIR], c->by_kind[K_READ],
          c->by_kind[K_WRITE], c->shared_overlaps, c->overlaps, c->resolved,
          c->benign, c->stale_sections,
          c->paused, c->lost, c->exceeded, c->lost_after, c->unexplained_losses,
          c->stale_rejected, c->stale_accepted, c->stale_accepted_before_newer,
          c->valid_rejected, c->token_regressions, c->unlock_retried,
          c->max_unlock_tries, r->f_master_stop,
          r->f_master_kill, r->f_master_kill_shifted, r->f_worker_stop,
          r->f_worker_stop_in_section, r->f_restart_failed);
  for (int op = 0; op < NOPS; op++) {
    fprintf(stderr, "%s\"%s\":{", op ? "," : "", op_names[op]);
    int first = 1;
    for (int k = 0; k < NCODES; k++)
      if (sh->status[op][k] > 0) {
        fprintf(stderr, "%s\"%s\":%" PRId64, first ? "" : ",",
                k == 0 ? "OK" : rlock_strerror(-k), sh->status[op][k]);
        first = 0;
      }
    fprintf(stderr, "}");
  }
  fprintf(stderr, "},\"violations\":%" PRId64 "}\n", c->violations);
  if (cluster_mode)
    fprintf(stderr,
            "{\"case\":\"torture_cluster\",\"faults\":{\"migrate\":%" PRId64
            ",\"manual_failover\":%" PRId64 ",\"primary_killed\":%" PRId64
            "}}\n",
            r->f_cluster_migrate, r->f_cluster_failover, r->f_cluster_kill);
  if (sentinel_mode)
    fprintf(stderr,
            "{\"case\":\"%s\",\"replica_acks\":%d,\"faults\":{"
            "\"master_killed\":%" PRId64 ",\"master_stopped\":%" PRId64
            ",\"failover_unsettled\":%" PRId64
            ",\"replica_stop\":%" PRId64 "},\"failover_sections\":%" PRId64
            ",\"failover_sections_valid\":%" PRId64
            ",\"late_grant_pairs\":%" PRId64 ",\"late_grant_pairs_below\":%"
            PRId64 "}\n",
            sentinel_acks ? "torture_sentinel_acks" : "torture_sentinel",
            sentinel_acks ? 2 : 0, r->f_sentinel_kill, r->f_sentinel_stop,
            r->f_sentinel_kill_failed, r->f_replica_stop,
            c->failover_sections, c->failover_valid, c->late_pairs,
            c->late_below);
}

/* Part 5: one case. */

static void torture(int n) {
  static run rr;
  run *r = &rr;
  memset(r, 0, sizeof *r);
  r->n = n;
  r->held_kind = -1;
  int64_t secs = env_int("RLOCK_TORTURE_SECONDS", 20);
  if (secs < 1) secs = 1;
  r->restarts = env_int("RLOCK_TORTURE_RESTART", 1) != 0;
  const char *brk = getenv("RLOCK_TORTURE_BREAK");
  break_fence = brk && strcmp(brk, "fence") == 0;
  break_quarantine = brk && strcmp(brk, "quarantine") == 0;
  break_force = brk && strcmp(brk, "force") == 0;
  break_rwforce = brk && strcmp(brk, "rwforce") == 0;
  strict_failover = env_int("RLOCK_TORTURE_STRICT_FAILOVER", 0) != 0;
  const char *kinds = getenv("RLOCK_TORTURE_KINDS");
  only_plain = kinds != NULL && strcmp(kinds, "lock") == 0;
  const char *ml = getenv("RLOCK_TORTURE_MAX_LEASE");
  default_max_lease = ml != NULL && strcmp(ml, "default") == 0;
  no_faults = env_int("RLOCK_TORTURE_FAULTS", 1) == 0;
  settle_restarts =
      default_max_lease && env_int("RLOCK_TORTURE_SETTLE", 1) != 0;
  log_quarantine = env_int("RLOCK_TORTURE_LOG", 0) != 0;
  if (no_faults)
    fprintf(stderr, "torture_n%d: RLOCK_TORTURE_FAULTS=0: no faults (a "
            "reference for the sections a run makes)\n", n);
  if (brk && *brk)
    fprintf(stderr, "torture_n%d: RLOCK_TORTURE_BREAK=%s: this run must fail\n",
            n, brk);
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  uint64_t dflt = ((uint64_t)rt.tv_nsec ^ ((uint64_t)rt.tv_sec << 20) ^
                   (uint64_t)getpid()) % 1000000000u;
  r->seed = (uint64_t)env_int("RLOCK_TORTURE_SEED", (int64_t)dflt);
  fprintf(stderr, "torture_n%d: seed %" PRIu64 " (RLOCK_TORTURE_SEED), %" PRId64
          " s (RLOCK_TORTURE_SECONDS), restarts %s (RLOCK_TORTURE_RESTART), "
          "kinds %s (RLOCK_TORTURE_KINDS), max_lease_ms %s "
          "(RLOCK_TORTURE_MAX_LEASE)\n",
          n, r->seed, secs, r->restarts ? "on" : "off",
          only_plain ? "lock" : "all",
          default_max_lease ? "default" : "the longest lease");
  for (int p = 0; p < PROCS; p++) r->open_span[p] = -1;

  nkills = 0;
#ifdef RT_TORTURE_SENTINEL
  if (sentinel_mode) {
    last_kill = 0;
    RT_REQUIRE(rt_sentinel_start(&tsn, NULL) == 0);
    snprintf(sn_url, sizeof sn_url,
             "redis-sentinel://127.0.0.1:%d/%s?sentinel=127.0.0.1:%d"
             "&sentinel=127.0.0.1:%d",
             tsn.sentinel[0].port, RT_SENTINEL_NAME, tsn.sentinel[1].port,
             tsn.sentinel[2].port);
  } else
#endif
#ifdef RT_TORTURE_CLUSTER
  if (cluster_mode) {
    RT_REQUIRE(rt_cluster_start(&tcl, NULL) == 0);
    snprintf(cl_url, sizeof cl_url,
             "redis-cluster://127.0.0.1:%d?seed=127.0.0.1:%d",
             tcl.node[0].port, tcl.node[1].port);
  } else
#endif
    RT_REQUIRE(rt_redis_start_many(srv, n) == 0);
  int cap = (int)(secs * SECTIONS_PER_SECOND + 1000);
  size_t shsize = sizeof(shared) + (size_t)cap * sizeof(section);
  shared *sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  RT_REQUIRE(sh != MAP_FAILED);
  r->sh = sh;
  sh->cap = cap;

  static reg g;
  memset(&g, 0, sizeof g);
  int child_fds[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    int sv[2];
    RT_REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    g.fds[i] = sv[0];
    child_fds[i] = sv[1];
  }
  /* Workers start a moment after forking, all at once. */
  sh->start_ns = now_ns() + 300 * 1000000;
  sh->end_ns = sh->start_ns + secs * 1000000000;
  if (secs >= 8 && !only_plain) r->extend_to_ns = sh->end_ns + 2 * secs * 1000000000;
  fflush(NULL);
  for (int p = 0; p < PROCS; p++) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < NTHREADS; i++) {
        close(g.fds[i]);
        if (i / THREADS != p) close(child_fds[i]);
      }
      while (now_ns() < sh->start_ns) sleep_us(1000);
      int rc = worker_main(sh, p, n, &child_fds[p * THREADS], r->seed);
      for (int t = 0; t < THREADS; t++) close(child_fds[p * THREADS + t]);
      exit(rc);
    }
    r->pids[p] = pid;
    if (pid < 0) {
      RT_CHECK(pid > 0);
      r->exited[p] = 1;
      r->exit_status[p] = -1;
    }
  }
  for (int i = 0; i < NTHREADS; i++) close(child_fds[i]);
  pthread_t rth;
  RT_REQUIRE(pthread_create(&rth, NULL, reg_thread, &g) == 0);
  while (now_ns() < sh->start_ns) sleep_us(1000);

  inject(r);

  /* (4) Every worker exits, within a bound. */
  int64_t bound = sh->end_ns + (int64_t)GRACE_MS * 1000000;
  int hung = 0;
  for (int p = 0; p < PROCS; p++) {
    while (!r->exited[p]) {
      int st = 0;
      pid_t got = waitpid(r->pids[p], &st, WNOHANG);
      if (got == r->pids[p]) {
        note_exit(r, p, st);
      } else if (got < 0 && errno != EINTR) {
        note_exit(r, p, -1);
      } else if (now_ns() > bound) {
        fprintf(stderr, "  worker %d hangs; thread states:", p);
        for (int t = 0; t < THREADS; t++)
          fprintf(stderr, " %d", sh->state[p * THREADS + t]);
        fprintf(stderr, "\n");
        kill(r->pids[p], SIGKILL);
        waitpid(r->pids[p], &st, 0);
        note_exit(r, p, st);
        hung++;
      } else {
        sleep_us(20000);
      }
    }
  }
  __atomic_store_n(&g.stop, 1, __ATOMIC_SEQ_CST);
  pthread_join(rth, NULL);
  for (int i = 0; i < NTHREADS; i++) close(g.fds[i]);
  double took = (double)(now_ns() - sh->start_ns) / 1e9;

  check c = {.r = r, .s = sh->sections};
  int truncated = sh->nsections > sh->cap;
  c.ns = truncated ? sh->cap : sh->nsections;
  c.log = g.log;
  c.nlog = g.nlog;
  for (int p = 0; p < PROCS; p++) {
    int st = r->exit_status[p];
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      char what[64];
      snprintf(what, sizeof what, "worker %d ended with status 0x%x", p, st);
      violation(&c, what, -1, -1);
    }
  }
  if (hung) violation(&c, "a worker hung past the end of the run", -1, -1);
  int incomplete = 0;
  for (int i = 0; i < c.ns; i++) incomplete += !sh->sections[i].done;
  if (incomplete > 0) violation(&c, "sections never finished", -1, -1);
  if (g.oom) violation(&c, "the register ran out of memory", -1, -1);

  c.x = calloc((size_t)c.ns + 1, sizeof *c.x);
  int *order = malloc(((size_t)c.ns + 1) * sizeof *order);
  if (c.x && order && incomplete == 0) {
    classify(&c);
    for (int i = 0; i < c.ns; i++) order[i] = i;
    qsort_r(order, (size_t)c.ns, sizeof *order, by_enter, c.s);
    check_overlaps(&c, order);
    check_tokens(&c, order);
    check_writes(&c);
  }
  check_statuses(&c);
  print_figures(&c, took, truncated);
  /* A run that did nothing proves nothing. */
  int64_t acq = sh->status[OP_LOCK][0] + sh->status[OP_LOCK_ASYNC][0];
  RT_CHECK(acq > 0);
  RT_CHECK(c.ns > 0);
  /* Long enough runs must have stopped a worker (the fencing scenario),
   * taken every kind, and seen readers share. */
  if (secs >= 8 && !no_faults) RT_CHECK(r->f_worker_stop > 0);
  if (secs >= 8 && !only_plain) {
    for (int k = 0; k < NKINDS; k++) RT_CHECK(c.by_kind[k] > 0);
    RT_CHECK(c.shared_overlaps > 0);
  }
  RT_CHECK_EQ_INT(c.stale_accepted, 0);
  RT_CHECK_EQ_INT(c.violations, 0);
  /* A Sentinel run long enough for a failover must have had one. */
  if (sentinel_mode && secs >= 20 && r->restarts)
    RT_CHECK(r->f_sentinel_kill + r->f_sentinel_stop > 0);
  free(c.x);
  free(order);
  free(g.log);
  munmap(sh, shsize);
#ifdef RT_TORTURE_CLUSTER
  if (cluster_mode) {
    rt_cluster_stop(&tcl);
    return;
  }
#endif
#ifdef RT_TORTURE_SENTINEL
  if (sentinel_mode) {
    rt_sentinel_stop(&tsn);
    return;
  }
#endif
  rt_redis_stop_many(srv, n);
}

#ifdef RT_TORTURE_SENTINEL
/* Check 2 on two made-up sections, a late grant across a Sentinel
 * failover (Sentinel mode's comment): y attempted at +11.957 s, x was
 * granted on the new master at +12.071 and left at +12.074, the old
 * master resumed at +12.060, y entered at +12.077 with a token 2.6 ms
 * below x's. Variant 0 is that case, which README does not order (the
 * checker must not report it); 1 moves x's enter before y's
 * attempt (y's floor at sending is then above x's token), 2 moves y's
 * attempt and x's section earlier, x entering after y attempted but more
 * than LATE_SLACK_MS before the resume (a late grant then runs later than
 * the slack), 3 is the run with replica_acks (no late grant counts there);
 * each of those is a violation. Returns the violations and the late pairs
 * found. */
static void late_grant_case(int variant, int64_t *violations,
                            int64_t *pairs) {
  const int64_t ms = 1000000, t0 = 1000 * ms;
  static run rr;
  memset(&rr, 0, sizeof rr);
  shared *sh = calloc(1, sizeof *sh + 2 * sizeof(section));
  RT_REQUIRE(sh != NULL);
  sh->start_ns = t0;
  rr.sh = sh;
  section *x = &sh->sections[0], *y = &sh->sections[1];
  *x = (section){.proc = 2, .kind = K_WRITE, .lockid = 1, .async = 1,
                 .lease_ms = -1, .attempt_ns = t0 + 12071 * ms,
                 .enter_ns = t0 + 12071 * ms, .leave_ns = t0 + 12074 * ms,
                 .token = 1795464702833358ull, .done = 1};
  *y = (section){.proc = 0, .kind = K_WRITE, .lockid = 1, .async = 1,
                 .lease_ms = 1200, .attempt_ns = t0 + 11957 * ms,
                 .enter_ns = t0 + 12077 * ms, .leave_ns = t0 + 12079 * ms,
                 .token = 1795464702830736ull, .done = 1};
  nkills = 1;
  kill_from[0] = t0 + 8839 * ms;
  kill_to[0] = t0 + 14000 * ms;
  resumed_from[0] = t0 + 12060 * ms;
  sentinel_mode = 1;
  sentinel_acks = variant == 3;
  strict_failover = 0;
  if (variant == 1) x->attempt_ns = x->enter_ns = t0 + 11950 * ms;
  if (variant == 2) {
    y->attempt_ns = t0 + 11700 * ms;
    x->attempt_ns = x->enter_ns = resumed_from[0] - (LATE_SLACK_MS + 1) * ms;
    x->leave_ns = x->enter_ns + 3 * ms;
  }
  check c = {.r = &rr, .s = sh->sections, .ns = 2};
  secx xs[2] = {{.idx = 0, .first_write_seq = -1},
                {.idx = 1, .first_write_seq = -1}};
  c.x = xs;
  check_tokens_of(&c, NULL, 1);
  *violations = c.violations;
  *pairs = c.late_pairs;
  nkills = 0;
  sentinel_mode = sentinel_acks = 0;
  free(sh);
}

/* Check 3 on two made-up overlapping sections of a run like seed
 * 464940397's: the master stopped at +7.886 s until failed over and
 * resumed at +10.858; y attempted before the stop, so the resumed master
 * ran its grant late, and its client entered at +10.8745 with a token of
 * its attempt's time; x was granted on the new master and entered at
 * +10.874 with a larger token, stale as every section in the window. The
 * register accepted y's write and then x's (x's token is the larger).
 * Variant 0 is that case, which fencing orders rightly (the checker must
 * not report it); 1 is a master killed rather than stopped (no late
 * grant: y entered after x and its token is below x's, a violation); 2
 * is the run with replica_acks (no late grant counts there, a
 * violation). Returns the violations. */
static void late_grant_write_case(int variant, int64_t *violations) {
  const int64_t ms = 1000000, t0 = 1000 * ms;
  static run rr;
  memset(&rr, 0, sizeof rr);
  shared *sh = calloc(1, sizeof *sh + 2 * sizeof(section));
  RT_REQUIRE(sh != NULL);
  sh->start_ns = t0;
  rr.sh = sh;
  section *x = &sh->sections[0], *y = &sh->sections[1];
  *x = (section){.proc = 0, .kind = K_WRITE, .lockid = 1, .async = 1,
                 .lease_ms = -1, .attempt_ns = t0 + 10873 * ms,
                 .enter_ns = t0 + 10874 * ms, .leave_ns = t0 + 10875 * ms,
                 .token = 1795841660372181ull, .done = 1};
  *y = (section){.proc = 1, .kind = K_WRITE, .lockid = 1, .async = 1,
                 .lease_ms = 1200, .attempt_ns = t0 + 7800 * ms,
                 .enter_ns = t0 + 10874 * ms + ms / 2,
                 .leave_ns = t0 + 10877 * ms,
                 .token = 1795841657300000ull, .done = 1};
  nkills = 1;
  kill_from[0] = t0 + 7886 * ms;
  kill_to[0] = t0 + 11858 * ms;
  resumed_from[0] = variant == 1 ? 0 : t0 + 10858 * ms;
  sentinel_mode = 1;
  sentinel_acks = variant == 2;
  strict_failover = 0;
  wlog log[2] = {
      {.t_ns = t0 + 10874 * ms + 600000, .token = y->token, .section = 1,
       .writer = 1, .accepted = 1},
      {.t_ns = t0 + 10874 * ms + 700000, .token = x->token, .section = 0,
       .writer = 0, .accepted = 1}};
  check c = {.r = &rr, .s = sh->sections, .ns = 2, .log = log, .nlog = 2};
  secx xs[2] = {{.idx = 0, .stale = 1, .first_write_seq = -1},
                {.idx = 1, .stale = 1, .first_write_seq = -1}};
  c.x = xs;
  check_writes(&c);
  nkills = 0;
  resumed_from[0] = 0;
  sentinel_mode = sentinel_acks = 0;
  free(sh);
  *violations = c.violations;
}

static void checker_late_grant(void) {
  int64_t v = -1, p = -1;
  late_grant_case(0, &v, &p);
  RT_CHECK_EQ_INT(v, 0);
  RT_CHECK_EQ_INT(p, 1);
  for (int variant = 1; variant <= 3; variant++) {
    fprintf(stderr, "  variant %d must be a violation:\n", variant);
    late_grant_case(variant, &v, &p);
    RT_CHECK_EQ_INT(v, 1);
    RT_CHECK_EQ_INT(p, 0);
  }
  late_grant_write_case(0, &v);
  RT_CHECK_EQ_INT(v, 0);
  for (int variant = 1; variant <= 2; variant++) {
    fprintf(stderr, "  write variant %d must be a violation:\n", variant);
    late_grant_write_case(variant, &v);
    RT_CHECK_EQ_INT(v, 1);
  }
}
#endif

#if defined(RT_TORTURE_CLUSTER)
static void torture_cluster(void) {
  cluster_mode = 1;
  torture(1);
}
#elif defined(RT_TORTURE_SENTINEL)
static void torture_sentinel(void) {
  sentinel_mode = 1;
  sentinel_acks = 0;
  torture(1);
}
static void torture_sentinel_acks(void) {
  sentinel_mode = 1;
  sentinel_acks = 1;
  torture(1);
}
#else
static void torture_n1(void) { torture(1); }
static void torture_n3(void) { torture(3); }
static void torture_n5(void) { torture(5); }
#endif

int main(int argc, char **argv) {
  /* A worker that dies mid-write must not kill the register's process. */
  signal(SIGPIPE, SIG_IGN);
  static const rt_test tests[] = {
#if defined(RT_TORTURE_CLUSTER)
      {"torture_cluster", torture_cluster},
#elif defined(RT_TORTURE_SENTINEL)
      {"checker_late_grant", checker_late_grant},
      {"torture_sentinel", torture_sentinel},
      {"torture_sentinel_acks", torture_sentinel_acks},
#else
      {"torture_n1", torture_n1},
      {"torture_n3", torture_n3},
      {"torture_n5", torture_n5},
#endif
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
