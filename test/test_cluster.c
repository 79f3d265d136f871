/*
 * A Redis Cluster as a master (lib/topology/master_cluster.c), against a
 * real cluster of three primaries and three replicas (harness_cluster.h),
 * started once and shared by every test here: the lock, its keys on the
 * node that serves its slot, locks spread over every primary, the
 * watchdog batched per node, waiters woken by shard pub/sub, the tool,
 * the lock family (fair locks, elections, read-write locks, semaphores,
 * latches; rlock_lock_all refused), and faults: a slot migrated while a
 * lock or a fair lock is held and waiters wait, a manual failover (with
 * waiters on the shard, fair ones too, with nothing but a watchdog lock
 * there, and just before close), and in suite 'variants' a primary
 * SIGKILLed and its replica promoted ("cluster-kill") and the client's own
 * map source hung until its replica is promoted ("cluster-hung"). The
 * fault tests leave the cluster settled, with every slot served, for the
 * tests after them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "harness.h"
#include "harness_cluster.h"
#include "keyslot.h"
#include "rlock.h"

static rt_cluster C;
static char url[200];

/* The client's log on stderr, from WARN (every level with RT_LOG=1). */
static void log_stderr(int level, const char *msg, void *arg) {
  (void)arg;
  fprintf(stderr, "  [rlock %d] %s\n", level, msg);
}

/* A client on the cluster; watchdog_ms and alive_ms (waiter_alive_ms) 0
 * for the defaults. */
static rlock_client *open_cluster_alive(int64_t watchdog_ms,
                                        int64_t alive_ms) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000; /* sanitizers, valgrind, a loaded machine */
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  if (alive_ms > 0) o.waiter_alive_ms = alive_ms;
  o.log_cb = log_stderr;
  o.log_level = getenv("RT_LOG") ? RLOCK_LOG_DEBUG : RLOCK_LOG_WARN;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  return c;
}

static rlock_client *open_cluster(int64_t watchdog_ms) {
  return open_cluster_alive(watchdog_ms, 0);
}

/* The index of the node that owns key's slot, or -1. */
static int owner_of(const char *key) { return rt_cluster_key_owner(&C, key); }

static long long exists_on(int node, const char *key) {
  return rt_redis_int(&C.node[node], "EXISTS %s", key);
}

/* EXISTS on an importing node, which answers for the slot only after
 * ASKING (for the next command, on the harness's cached connection). */
static long long exists_asking(int node, const char *key) {
  redisReply *r = rt_redis_cmd(&C.node[node], "ASKING");
  if (r != NULL) freeReplyObject(r);
  return rt_redis_int(&C.node[node], "EXISTS %s", key);
}

/* A lock is held through a cluster master: its hash is on the node that
 * serves its slot and nowhere else, and unlock removes it. */
static void lock_on_its_node(void) {
  rlock_client *c = open_cluster(0);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "basic", &l) == 0);
  uint64_t token = 0;
  RT_CHECK_EQ_INT(rlock_lock(l, 10000), 0);
  RT_CHECK_EQ_INT(rlock_fencing_token(l, &token), 0);
  RT_CHECK(token > 0);
  const char *key = "rlock:{basic}";
  int owner = owner_of(key);
  RT_REQUIRE(owner >= 0);
  RT_CHECK_EQ_INT(exists_on(owner, key), 1);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(l), 1);
  RT_CHECK_EQ_INT(rlock_lock(l, 10000), 0); /* reentrant */
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK_EQ_INT(exists_on(owner, key), 1);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK_EQ_INT(exists_on(owner, key), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- helpers ---------------------------------------------------------------- */

static void on_lost(rlock *l, uint64_t owner, int is_thread, void *arg) {
  (void)l;
  (void)owner;
  (void)is_thread;
  atomic_fetch_add((atomic_int *)arg, 1);
}

/* The key of a lock (the default prefix). */
static void key_of(const char *name, char *buf, size_t size) {
  snprintf(buf, size, "rlock:{%s}", name);
}

/* A lock name other than avoid whose key is in slot, written to buf. */
static void name_in_slot(int slot, const char *stem, const char *avoid,
                         char *buf, size_t size) {
  char key[128];
  for (int i = 0;; i++) {
    snprintf(buf, size, "%s%d", stem, i);
    key_of(buf, key, sizeof key);
    if (rt_key_slot_str(key) == slot && strcmp(buf, avoid) != 0) return;
  }
}

/* The slot of a lock's key. */
static int slot_of_lock(const char *name) {
  char key[128];
  key_of(name, key, sizeof key);
  return rt_key_slot_str(key);
}

/* A primary other than p, or -1. */
static int other_primary(int p) {
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (i != p && rt_cluster_is_primary(&C, i) == 1) return i;
  return -1;
}

/* Makes sure the node's replica has what the node has now: a write in the
 * same slot on the harness's connection, then WAIT for one replica. */
static long long replicated(int node, const char *name) {
  char key[128];
  snprintf(key, sizeof key, "rlock:{%s}:probe", name);
  redisReply *r = rt_redis_cmd(&C.node[node], "SET %s 1 PX 60000", key);
  if (r != NULL) freeReplyObject(r);
  return rt_redis_int(&C.node[node], "WAIT 1 5000");
}

/* Waiters: each takes the lock (waiting up to wait_ms), checks that nobody
 * else is inside, holds it a moment, releases it. */
typedef struct waiters {
  rlock_client *c;
  char name[64];
  int64_t wait_ms, lease_ms;
  atomic_int inside, overlaps, acquired, failed;
  atomic_uint_fast64_t first_at; /* rt_now_ms of the first acquisition */
} waiters;

static void *waiter_run(void *arg) {
  waiters *w = arg;
  rlock *l;
  if (rlock_get(w->c, w->name, &l) != 0) {
    w->failed++;
    return NULL;
  }
  int rc = rlock_trylock(l, w->wait_ms, w->lease_ms);
  if (rc == 0) {
    uint_fast64_t zero = 0;
    atomic_compare_exchange_strong(&w->first_at, &zero, rt_now_ms());
    if (atomic_fetch_add(&w->inside, 1) != 0) w->overlaps++;
    rt_sleep_ms(20);
    atomic_fetch_sub(&w->inside, 1);
    w->acquired++;
    if (rlock_unlock(l) != 0) w->failed++;
  } else {
    fprintf(stderr, "  waiter on %s: %s\n", w->name, rlock_strerror(rc));
    w->failed++;
  }
  rlock_free(l);
  return NULL;
}

static void waiters_start(waiters *w, pthread_t *t, int n) {
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, waiter_run, w);
}

static void waiters_join(pthread_t *t, int n) {
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

/* --- without faults ---------------------------------------------------------- */

/* Locks whose names spread over every primary: each key is on the node
 * that serves its slot, the watchdog keeps all of them across several
 * leases, and unlock removes each from its node. */
#define SPREAD 60
static void spread_over_primaries(void) {
  rlock_client *c = open_cluster(1500);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l[SPREAD];
  atomic_int lost = 0;
  int on[RT_CLUSTER_NODES] = {0};
  char name[64], key[128];
  for (int i = 0; i < SPREAD; i++) {
    snprintf(name, sizeof name, "spread-%d", i);
    RT_REQUIRE(rlock_get(c, name, &l[i]) == 0);
    rlock_set_lost_cb(l[i], on_lost, &lost);
    RT_CHECK_EQ_INT(rlock_trylock(l[i], 10000, RLOCK_WATCHDOG), 0);
  }
  for (int i = 0; i < SPREAD; i++) {
    snprintf(name, sizeof name, "spread-%d", i);
    key_of(name, key, sizeof key);
    int owner = owner_of(key);
    RT_REQUIRE(owner >= 0);
    on[owner]++;
    RT_CHECK_EQ_INT(exists_on(owner, key), 1);
  }
  int primaries = 0;
  for (int i = 0; i < RT_CLUSTER_NODES; i++) primaries += on[i] > 0;
  RT_CHECK_EQ_INT(primaries, 3);
  /* Three leases: without renewals every key would be gone. */
  rt_sleep_ms(4500);
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  for (int i = 0; i < SPREAD; i++) {
    snprintf(name, sizeof name, "spread-%d", i);
    key_of(name, key, sizeof key);
    long long pttl = rt_redis_int(&C.node[owner_of(key)], "PTTL %s", key);
    if (!(pttl > 0 && pttl <= 1500))
      fprintf(stderr, "  %s: PTTL %lld\n", key, pttl);
    RT_CHECK(pttl > 0 && pttl <= 1500);
    RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(l[i]), 1);
  }
  for (int i = 0; i < SPREAD; i++) {
    RT_CHECK_EQ_INT(rlock_unlock(l[i]), 0);
    snprintf(name, sizeof name, "spread-%d", i);
    key_of(name, key, sizeof key);
    RT_CHECK_EQ_INT(exists_on(owner_of(key), key), 0);
    rlock_free(l[i]);
  }
  rlock_client_close(c);
}

/* The watchdog batches per node: 300 locks over three primaries, renewed
 * every 500 ms in batches of up to 100, cost each node a handful of
 * script calls per period, not one per lock (a batch per slot would be
 * about 100 calls per node per period: 300 locks in ~300 slots). */
#define BATCHED 300
static void watchdog_batches_per_node(void) {
  rlock_client *c = open_cluster(1500);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock **l = calloc(BATCHED, sizeof *l);
  atomic_int lost = 0;
  char name[64];
  for (int i = 0; i < BATCHED; i++) {
    snprintf(name, sizeof name, "batch-%d", i);
    RT_REQUIRE(rlock_get(c, name, &l[i]) == 0);
    rlock_set_lost_cb(l[i], on_lost, &lost);
    RT_CHECK_EQ_INT(rlock_trylock(l[i], 10000, RLOCK_WATCHDOG), 0);
  }
  rlock_metrics m0, m1;
  rlock_metrics_snapshot(c, &m0);
  int prim[3], np = 0;
  for (int i = 0; i < RT_CLUSTER_NODES && np < 3; i++)
    if (rt_cluster_is_primary(&C, i) == 1) prim[np++] = i;
  RT_REQUIRE(np == 3);
  for (int k = 0; k < 3; k++) {
    redisReply *r = rt_redis_cmd(&C.node[prim[k]], "CONFIG RESETSTAT");
    if (r) freeReplyObject(r);
  }
  rt_sleep_ms(3000); /* six periods */
  long long calls[3];
  for (int k = 0; k < 3; k++)
    calls[k] = rt_evalsha_calls(&C.node[prim[k]]);
  rlock_metrics_snapshot(c, &m1);
  uint64_t renewed = m1.renewals - m0.renewals;
  fprintf(stderr, "  renewals %llu; EVALSHA calls per primary %lld %lld %lld\n",
          (unsigned long long)renewed, calls[0], calls[1], calls[2]);
  RT_CHECK(renewed >= 4 * BATCHED); /* every lock, period after period */
  /* Locks per call: about 100 here (one or two calls per node and
   * period), still above 15 under valgrind, where due times spread over
   * more ticks; about 1 if batches were cut per slot. */
  long long all = 0;
  for (int k = 0; k < 3; k++) {
    RT_CHECK(calls[k] > 0);
    all += calls[k];
  }
  RT_CHECK(all > 0 && (long long)renewed / all >= 10);
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  for (int i = 0; i < BATCHED; i++) {
    RT_CHECK_EQ_INT(rlock_unlock(l[i]), 0);
    rlock_free(l[i]);
  }
  free(l);
  rlock_client_close(c);
}

/* A waiter is woken by the unlock message on the lock's shard channel:
 * the holder's lease is a minute, so a waiter that heard nothing would
 * still be waiting when its 20 s wait ends. */
static void pubsub_wakeup(void) {
  rlock_client *c = open_cluster(0);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "wake", &l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 10000, 60000), 0);
  waiters w = {.c = c, .wait_ms = 20000, .lease_ms = 60000};
  snprintf(w.name, sizeof w.name, "wake");
  pthread_t t[3];
  waiters_start(&w, t, 3);
  rt_sleep_ms(500); /* they subscribe and wait */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  waiters_join(t, 3);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 3);
  RT_CHECK_EQ_INT(atomic_load(&w.failed), 0);
  RT_CHECK_EQ_INT(atomic_load(&w.overlaps), 0);
  uint64_t took = atomic_load(&w.first_at) - t0;
  fprintf(stderr, "  first waiter in %llu ms after the unlock\n",
          (unsigned long long)took);
  RT_CHECK(took < 10000);
  rlock_free(l);
  rlock_client_close(c);
}

/* Runs the rlock tool ($RLOCK_TOOL) with the cluster as its master; its
 * output in out (NUL-terminated), its exit status returned, -1 if it
 * could not run. */
static int run_tool(char *out, size_t size, const char *args) {
  const char *tool = getenv("RLOCK_TOOL");
  if (tool == NULL) return -1;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --masters '%s' %s 2>&1", tool, url, args);
  FILE *p = popen(cmd, "r");
  if (p == NULL) return -1;
  size_t n = fread(out, 1, size - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* The tool against a cluster: scan finds locks held on every primary
 * (a cluster's SCAN is per node), status reads a lock on its node, and
 * unlock --force deletes it there. */
#define TOOLN 30
static void tool_against_cluster(void) {
  rlock_client *c = open_cluster(0);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l[TOOLN];
  char name[64], key[128], want[80];
  int on[RT_CLUSTER_NODES] = {0};
  for (int i = 0; i < TOOLN; i++) {
    snprintf(name, sizeof name, "tool-%d", i);
    RT_REQUIRE(rlock_get(c, name, &l[i]) == 0);
    RT_CHECK_EQ_INT(rlock_trylock(l[i], 10000, 50000), 0);
    key_of(name, key, sizeof key);
    on[owner_of(key)]++;
  }
  int primaries = 0;
  for (int i = 0; i < RT_CLUSTER_NODES; i++) primaries += on[i] > 0;
  RT_CHECK_EQ_INT(primaries, 3);
  static char out[1 << 16];
  /* Leases over 30 s are what scan reports here as long. */
  int rc = run_tool(out, sizeof out, "scan --lease-over 30");
  RT_CHECK_EQ_INT(rc, 1); /* found */
  for (int i = 0; i < TOOLN; i++) {
    snprintf(want, sizeof want, "{tool-%d}", i);
    if (count_of(out, want) < 1) fprintf(stderr, "  scan missed %s\n", want);
    RT_CHECK(count_of(out, want) >= 1);
  }
  rc = run_tool(out, sizeof out, "status tool-7");
  RT_CHECK_EQ_INT(rc, 0);
  key_of("tool-7", key, sizeof key);
  snprintf(want, sizeof want, "(node 127.0.0.1:%d): held by",
           C.node[owner_of(key)].port);
  if (strstr(out, want) == NULL) fprintf(stderr, "%s", out);
  RT_CHECK(strstr(out, want) != NULL);
  RT_CHECK(strstr(out, "held on 1 of 1 masters") != NULL);
  rc = run_tool(out, sizeof out, "unlock --force tool-7");
  RT_CHECK_EQ_INT(rc, 0);
  key_of("tool-7", key, sizeof key);
  RT_CHECK_EQ_INT(exists_on(owner_of(key), key), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l[7]), RLOCK_ELOST);
  for (int i = 0; i < TOOLN; i++) {
    if (i != 7) RT_CHECK_EQ_INT(rlock_unlock(l[i]), 0);
    rlock_free(l[i]);
  }
  rlock_client_close(c);
}

/* Redlock with a cluster among plain masters (N = 3): the lock is on the
 * cluster node of its slot and on both servers, renewed on all three by
 * the watchdog (batched per node on the cluster, whole on the servers),
 * and a waiter listening on all three (a shard channel on the cluster, a
 * plain one on the servers) is woken by the unlock. */
static void mixed_with_plain_masters(void) {
  rt_redis r[2];
  RT_REQUIRE(rt_redis_start(&r[0], NULL) == 0);
  RT_REQUIRE(rt_redis_start(&r[1], NULL) == 0);
  const char *m[3] = {url, r[0].url, r[1].url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 3;
  o.master_timeout_ms = 1000;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.watchdog_timeout_ms = 1500;
  o.log_cb = log_stderr;
  o.log_level = RLOCK_LOG_WARN;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *lw, *lh;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get(c, "mixed-wd", &lw) == 0);
  RT_REQUIRE(rlock_get(c, "mixed-held", &lh) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lh, 10000, 50000), 0);
  waiters w = {.c = c, .wait_ms = 20000, .lease_ms = 5000};
  snprintf(w.name, sizeof w.name, "mixed-held");
  pthread_t t[2];
  waiters_start(&w, t, 2);
  rt_sleep_ms(3000); /* two leases of the watchdog lock */
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  const char *key = "rlock:{mixed-wd}";
  RT_CHECK_EQ_INT(exists_on(owner_of(key), key), 1);
  for (int i = 0; i < 2; i++) {
    long long pttl = rt_redis_int(&r[i], "PTTL %s", key);
    RT_CHECK(pttl > 0 && pttl <= 1500);
  }
  long long pttl = rt_redis_int(&C.node[owner_of(key)], "PTTL %s", key);
  RT_CHECK(pttl > 0 && pttl <= 1500);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(lh), 0);
  waiters_join(t, 2);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 2);
  RT_CHECK_EQ_INT(atomic_load(&w.overlaps), 0);
  RT_CHECK(atomic_load(&w.first_at) - t0 < 10000);
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  RT_CHECK_EQ_INT(exists_on(owner_of(key), key), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&r[0], "EXISTS %s", key), 0);
  rlock_free(lw);
  rlock_free(lh);
  rlock_client_close(c);
  rt_redis_stop_many(r, 2);
}

/* A cluster node given again as a plain master of the same client is one
 * server with two entries: its votes count once. masters = {the cluster,
 * redis://node p, a stopped server}; a lock served by p would get two
 * votes of three from p alone and be granted; counted once, it has one of
 * three: RLOCK_ENOQUORUM, and nothing left on p. (p is the node that
 * serves the restart records' key, which a plain master's handshake
 * reads.) */
static void cluster_node_twice_counts_once(void) {
  int p = owner_of("rlock:run_ids");
  RT_REQUIRE(p >= 0);
  int seed = other_primary(p);
  RT_REQUIRE(seed >= 0);
  char name[64], key[128], curl[200], purl[100], gone[300];
  for (int i = 0;; i++) {
    snprintf(name, sizeof name, "twice-%d", i);
    key_of(name, key, sizeof key);
    if (owner_of(key) == p) break;
  }
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  snprintf(gone, sizeof gone, "%s", r.url);
  rt_redis_stop(&r);
  snprintf(curl, sizeof curl, "redis-cluster://127.0.0.1:%d",
           C.node[seed].port);
  snprintf(purl, sizeof purl, "redis://127.0.0.1:%d", C.node[p].port);
  const char *m[3] = {curl, purl, gone};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 3;
  o.master_timeout_ms = 1000;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.log_cb = log_stderr;
  o.log_level = RLOCK_LOG_ERROR;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  rlock_client_wait_ready(c, 5000); /* two of three at most */
  rlock *l;
  RT_REQUIRE(rlock_get(c, name, &l) == 0);
  int rc = rlock_trylock(l, 0, 10000);
  RT_CHECK_EQ_INT(rc, RLOCK_ENOQUORUM);
  if (rc == 0) rlock_unlock(l);
  /* The grants of the failed attempt are undone (after it returned). */
  uint64_t t0 = rt_now_ms();
  while (exists_on(p, key) != 0 && rt_now_ms() - t0 < 5000) rt_sleep_ms(20);
  RT_CHECK_EQ_INT(exists_on(p, key), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* Closing a client that holds locks over every primary releases them, in
 * batches per node (the release script with the names as arguments):
 * every key is gone from its node when close returns, long before the
 * 50 s lease, and a waiter in another client, listening on the shard
 * channel, is woken by the release's message. */
#define CLOSEN 40
static void close_releases_per_node(void) {
  rlock_client *c = open_cluster(0), *c2 = open_cluster(0);
  RT_REQUIRE(c != NULL && c2 != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c2, 10000), 0);
  rlock *l[CLOSEN];
  char name[64], key[128];
  int on[RT_CLUSTER_NODES] = {0};
  for (int i = 0; i < CLOSEN; i++) {
    snprintf(name, sizeof name, "close-%d", i);
    RT_REQUIRE(rlock_get(c, name, &l[i]) == 0);
    RT_CHECK_EQ_INT(rlock_trylock(l[i], 10000, 50000), 0);
    key_of(name, key, sizeof key);
    on[owner_of(key)]++;
  }
  int primaries = 0;
  for (int i = 0; i < RT_CLUSTER_NODES; i++) primaries += on[i] > 0;
  RT_CHECK_EQ_INT(primaries, 3);
  waiters w = {.c = c2, .wait_ms = 30000, .lease_ms = 5000};
  snprintf(w.name, sizeof w.name, "close-3");
  pthread_t t;
  waiters_start(&w, &t, 1);
  rt_sleep_ms(500);
  uint64_t t0 = rt_now_ms();
  rlock_client_close(c); /* holds released, handles stay for rlock_free */
  for (int i = 0; i < CLOSEN; i++) {
    if (i == 3) continue; /* the waiter may hold it by now */
    snprintf(name, sizeof name, "close-%d", i);
    key_of(name, key, sizeof key);
    if (exists_on(owner_of(key), key) != 0) fprintf(stderr, "  %s left\n", key);
    RT_CHECK_EQ_INT(exists_on(owner_of(key), key), 0);
  }
  for (int i = 0; i < CLOSEN; i++) rlock_free(l[i]);
  waiters_join(&t, 1);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 1);
  RT_CHECK(atomic_load(&w.first_at) - t0 < 10000);
  rlock_client_close(c2);
}

/* --- faults -------------------------------------------------------------------- */

/*
 * A slot migrated (MIGRATING/IMPORTING, keys moved with MIGRATE, SETSLOT
 * NODE) while the client holds two locks in it (one renewed by the
 * watchdog, one with a minute's lease) and threads wait for the second:
 * the watchdog lock is renewed through the move (ASK while its key is on
 * the target, MOVED after) and never lost; a free lock asked for
 * mid-migration is granted once the slot has moved (TRYAGAIN until then,
 * retried within the wait); and when the long lock is
 * released after the move, the waiters, subscribed on the source before
 * it, are woken on the target (the source dropped their subscription:
 * they resubscribed) well before the minute, one at a time.
 */
static void migration_while_held(void) {
  rlock_client *c = open_cluster(2000);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char wd[64] = "mig", held[64], mid[64], key[128];
  int slot = slot_of_lock(wd);
  name_in_slot(slot, "mig-held-", wd, held, sizeof held);
  name_in_slot(slot, "mig-mid-", held, mid, sizeof mid);
  key_of(wd, key, sizeof key);
  int from = owner_of(key), to = other_primary(from);
  RT_REQUIRE(from >= 0 && to >= 0);
  rlock *lw, *lh;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get(c, wd, &lw) == 0);
  RT_REQUIRE(rlock_get(c, held, &lh) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lh, 10000, 60000), 0);
  waiters w = {.c = c, .wait_ms = 45000, .lease_ms = 5000};
  snprintf(w.name, sizeof w.name, "%s", held);
  pthread_t t[3];
  waiters_start(&w, t, 3);
  rt_sleep_ms(500);

  rt_migration mg;
  RT_REQUIRE(rt_cluster_migrate_begin(&C, slot, to, &mg) == 0);
  rt_sleep_ms(800); /* a renewal while MIGRATING, keys on the source */
  int moved = 0, n;
  while ((n = rt_cluster_migrate_keys(&C, &mg, 1)) > 0) {
    moved += n;
    rt_sleep_ms(100); /* the lock's keys on both sides for a moment */
  }
  RT_CHECK(n == 0);
  RT_CHECK(moved >= 2);
  /* Keys on the target, the slot still the source's: ASK. */
  RT_CHECK_EQ_INT(exists_asking(to, key), 1);
  /* A free lock in the slot cannot be taken until the migration ends:
   * its declared keys (hash, fencing counter) are missing on the target,
   * which answers TRYAGAIN even after ASKING (TOPOLOGY-FACTS §4), and the
   * acquisition retries within its wait. */
  waiters wm = {.c = c, .wait_ms = 30000, .lease_ms = 5000};
  snprintf(wm.name, sizeof wm.name, "%s", mid);
  pthread_t tm;
  waiters_start(&wm, &tm, 1);
  rt_sleep_ms(1500); /* two renewals through ASK */
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  RT_REQUIRE(rt_cluster_migrate_finish(&C, &mg) == 0);
  RT_CHECK_EQ_INT(owner_of(key), to);
  waiters_join(&tm, 1);
  RT_CHECK_EQ_INT(atomic_load(&wm.acquired), 1);
  RT_CHECK_EQ_INT(atomic_load(&wm.failed), 0);
  rt_sleep_ms(1500); /* renewals through MOVED, then the new map */
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[to], "PTTL %s", key);
  RT_CHECK(pttl > 0 && pttl <= 2000);
  /* Nobody took the long lock meanwhile. */
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(lh), 0);
  waiters_join(t, 3);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 3);
  RT_CHECK_EQ_INT(atomic_load(&w.failed), 0);
  RT_CHECK_EQ_INT(atomic_load(&w.overlaps), 0);
  uint64_t took = atomic_load(&w.first_at) - t0;
  fprintf(stderr, "  first waiter in %llu ms after the unlock\n",
          (unsigned long long)took);
  RT_CHECK(took < 10000);
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  RT_CHECK_EQ_INT(exists_on(to, key), 0);
  rlock_free(lw);
  rlock_free(lh);
  rlock_client_close(c);
}

/*
 * A manual failover (CLUSTER FAILOVER on a replica) while the client
 * holds a watchdog lock on that shard and threads wait for a long-lease
 * lock there: the lock is renewed on the promoted replica and never
 * lost, a new lock in the shard is taken on the new primary, and the
 * waiters (subscribed on the old primary, which drops shard subscribers
 * when it is demoted) are woken by the unlock on the new one.
 */
static void manual_failover(void) {
  rlock_client *c = open_cluster(2000);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char wd[64] = "mf", held[64], fresh[64], key[128], fkey[128];
  int slot = slot_of_lock(wd);
  name_in_slot(slot, "mf-held-", wd, held, sizeof held);
  name_in_slot(slot, "mf-new-", held, fresh, sizeof fresh);
  key_of(wd, key, sizeof key);
  key_of(fresh, fkey, sizeof fkey);
  int p = owner_of(key), r = rt_cluster_replica_of(&C, p);
  RT_REQUIRE(p >= 0 && r >= 0);
  rlock *lw, *lh, *lf;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get(c, wd, &lw) == 0);
  RT_REQUIRE(rlock_get(c, held, &lh) == 0);
  RT_REQUIRE(rlock_get(c, fresh, &lf) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lh, 10000, 60000), 0);
  waiters w = {.c = c, .wait_ms = 45000, .lease_ms = 5000};
  snprintf(w.name, sizeof w.name, "%s", held);
  pthread_t t[2];
  waiters_start(&w, t, 2);
  rt_sleep_ms(500);
  RT_REQUIRE(rt_cluster_failover(&C, r) == 0);
  RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, r), 1);
  RT_CHECK_EQ_INT(owner_of(key), r);
  rt_sleep_ms(1500); /* renewals on the new primary */
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[r], "PTTL %s", key);
  RT_CHECK(pttl > 0 && pttl <= 2000);
  RT_CHECK_EQ_INT(rlock_trylock(lf, 10000, 5000), 0);
  RT_CHECK_EQ_INT(exists_on(r, fkey), 1);
  RT_CHECK_EQ_INT(rlock_unlock(lf), 0);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(lh), 0);
  waiters_join(t, 2);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 2);
  RT_CHECK_EQ_INT(atomic_load(&w.failed), 0);
  RT_CHECK_EQ_INT(atomic_load(&w.overlaps), 0);
  uint64_t took = atomic_load(&w.first_at) - t0;
  fprintf(stderr, "  first waiter in %llu ms after the unlock\n",
          (unsigned long long)took);
  RT_CHECK(took < 10000);
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  rlock_free(lw);
  rlock_free(lh);
  rlock_free(lf);
  rlock_client_close(c);
}

/*
 * A primary SIGKILLed while the client holds a watchdog lock on it (its
 * grant known to be on the replica: WAIT 1 answered 1) and threads wait
 * for a lock there: the cluster promotes the replica (CLUSTERDOWN
 * everywhere for about a second before), the client follows, the lock is
 * renewed on the promoted node and not lost, and the waiters get their
 * lock once it is released. The killed node is restarted (it rejoins as a
 * replica) so that later tests see three primaries and three replicas.
 * Long (about 10 s): suite 'variants', test "cluster-kill".
 */
static void primary_killed(void) {
  rlock_client *c = open_cluster(15000);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char wd[64] = "kd", held[64], fresh[64], key[128], fkey[128];
  int slot = slot_of_lock(wd);
  name_in_slot(slot, "kd-held-", wd, held, sizeof held);
  name_in_slot(slot, "kd-new-", held, fresh, sizeof fresh);
  key_of(wd, key, sizeof key);
  key_of(fresh, fkey, sizeof fkey);
  int p = owner_of(key);
  RT_REQUIRE(p >= 0);
  rlock *lw, *lh, *lf;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get(c, wd, &lw) == 0);
  RT_REQUIRE(rlock_get(c, held, &lh) == 0);
  RT_REQUIRE(rlock_get(c, fresh, &lf) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lh, 10000, 60000), 0);
  RT_REQUIRE(replicated(p, wd) == 1);
  waiters w = {.c = c, .wait_ms = 60000, .lease_ms = 5000};
  snprintf(w.name, sizeof w.name, "%s", held);
  pthread_t t[2];
  waiters_start(&w, t, 2);
  rt_sleep_ms(500);
  int r = rt_cluster_kill_primary(&C, p);
  RT_REQUIRE(r >= 0);
  RT_CHECK_EQ_INT(owner_of(key), r);
  /* The client follows: a new lock in the shard, on the promoted node. */
  RT_CHECK_EQ_INT(rlock_trylock(lf, 20000, 5000), 0);
  RT_CHECK_EQ_INT(exists_on(r, fkey), 1);
  RT_CHECK_EQ_INT(rlock_unlock(lf), 0);
  rt_sleep_ms(6000); /* at least one renewal on the promoted node */
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[r], "PTTL %s", key);
  RT_CHECK(pttl > 10000 && pttl <= 15000);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 0);
  RT_CHECK_EQ_INT(rlock_unlock(lh), 0);
  waiters_join(t, 2);
  RT_CHECK_EQ_INT(atomic_load(&w.acquired), 2);
  RT_CHECK_EQ_INT(atomic_load(&w.overlaps), 0);
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  rlock_free(lw);
  rlock_free(lh);
  rlock_free(lf);
  rlock_client_close(c);
  RT_CHECK(rt_cluster_restart(&C, p) == 0);
}

/* --- hung primaries and manual failovers ---------------------------------- */

/* How many CLUSTER SHARDS a node has run (INFO commandstats), or -1. */
static long long shards_calls(int node) {
  redisReply *r = rt_redis_cmd(&C.node[node], "INFO commandstats");
  long long n = -1;
  if (r != NULL && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "cmdstat_cluster|shards:calls=");
    n = p ? atoll(p + strlen("cmdstat_cluster|shards:calls=")) : 0;
  }
  if (r != NULL) freeReplyObject(r);
  return n;
}

/* A lock name whose key is on primary p, written to buf. */
static void name_on_node(int p, const char *stem, char *buf, size_t size) {
  char key[600]; /* room for any name gcc thinks buf may hold */
  for (int i = 0;; i++) {
    snprintf(buf, size, "%s%d", stem, i);
    key_of(buf, key, sizeof key);
    if (owner_of(key) == p) return;
  }
}

/* Waits until node r says it is a primary; 1, or 0 after timeout_ms. */
static int promoted_within(int r, int timeout_ms) {
  for (uint64_t end = rt_now_ms() + (uint64_t)timeout_ms; rt_now_ms() < end;
       rt_sleep_ms(100))
    if (rt_cluster_is_primary(&C, r) == 1) return 1;
  return 0;
}

/*
 * A primary hung (SIGSTOP) while it is the node the client asks for its
 * slot map, and while the client holds a watchdog lock on its shard: the
 * cluster promotes its replica after the node timeout, and the client
 * follows while the old primary is still stopped. Its commands to the
 * hung node time out, which asks for a new map; the map request that
 * goes to the hung node times out too and is asked of another node. So
 * a new lock in the shard is taken on the promoted replica, and the
 * watchdog lock is renewed there and never reported lost, though the
 * hung node never answers. The node is resumed at the end (it rejoins
 * as a replica). About 20 s: suite 'variants', test "cluster-hung".
 */
static void hung_primary(void) {
  long long before[RT_CLUSTER_NODES];
  for (int i = 0; i < RT_CLUSTER_NODES; i++) before[i] = shards_calls(i);
  rlock_client *c = open_cluster(12000);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  /* The node the client asked for its map: the one to hang. */
  int p = -1;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (rt_cluster_is_primary(&C, i) == 1 && shards_calls(i) > before[i])
      p = i;
  RT_REQUIRE(p >= 0);
  int r = rt_cluster_replica_of(&C, p);
  RT_REQUIRE(r >= 0);
  fprintf(stderr, "  map source node %d (port %d), its replica %d\n", p,
          C.node[p].port, r);
  char wd[64], fresh[64], key[128], fkey[128];
  name_on_node(p, "hung-wd-", wd, sizeof wd);
  name_on_node(p, "hung-new-", fresh, sizeof fresh);
  key_of(wd, key, sizeof key);
  key_of(fresh, fkey, sizeof fkey);
  rlock *lw, *lf;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get(c, wd, &lw) == 0);
  RT_REQUIRE(rlock_get(c, fresh, &lf) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_REQUIRE(replicated(p, wd) == 1);
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_cluster_pause(&C, p) == 0);
  RT_CHECK(promoted_within(r, 20000));
  fprintf(stderr, "  replica promoted %llu ms after the stop\n",
          (unsigned long long)(rt_now_ms() - t0));
  /* A new lock in the shard, while the old primary is still stopped. */
  int rc = rlock_trylock(lf, 8000, 5000);
  fprintf(stderr, "  new lock in the shard: %s after %llu ms\n",
          rlock_strerror(rc), (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK_EQ_INT(rc, 0);
  if (rc == 0) {
    RT_CHECK_EQ_INT(exists_on(r, fkey), 1);
    RT_CHECK_EQ_INT(rlock_unlock(lf), 0);
  }
  /* The watchdog lock outlives its lease as it stood at the stop: it is
   * renewed on the promoted replica. */
  while (rt_now_ms() < t0 + 13000) rt_sleep_ms(100);
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[r], "PTTL %s", key);
  fprintf(stderr, "  PTTL on the promoted replica %lld ms, %llu ms after "
          "the stop\n", pttl, (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(pttl > 0 && pttl <= 12000);
  RT_CHECK(rt_cluster_resume(&C, p) == 0);
  RT_CHECK(rt_cluster_wait_settled(&C, 30000) == 0);
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  RT_CHECK_EQ_INT(exists_on(r, key), 0);
  rlock_free(lw);
  rlock_free(lf);
  rlock_client_close(c);
}

/*
 * A manual failover of the shard of a watchdog lock (a 3 s watchdog),
 * with nothing else of the client's on that shard: no waiter, no
 * subscription, so no dropped shard subscription tells it of the change.
 * Its renewal batch to the demoted node is answered READONLY, which asks
 * for a new map; the batch is sent again to the promoted replica within
 * the lock's validity. So the lock is renewed there past the lease it
 * had at the failover, never reported lost, and another client cannot
 * take it.
 */
static void failover_renews_held(void) {
  rlock_client *c = open_cluster(3000), *c2 = open_cluster(0);
  RT_REQUIRE(c != NULL && c2 != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c2, 10000), 0);
  char wd[64] = "mfr", key[128];
  key_of(wd, key, sizeof key);
  int p = owner_of(key), r = rt_cluster_replica_of(&C, p);
  RT_REQUIRE(p >= 0 && r >= 0);
  rlock *lw, *l2;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get(c, wd, &lw) == 0);
  RT_REQUIRE(rlock_get(c2, wd, &l2) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_REQUIRE(replicated(p, wd) == 1);
  rt_sleep_ms(2000); /* the map it has now is the one it keeps */
  RT_REQUIRE(rt_cluster_failover(&C, r) == 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(owner_of(key), r);
  /* Longer than the whole watchdog timeout: only renewals on the new
   * primary keep it. */
  int taken = 0;
  while (rt_now_ms() < t0 + 4500) {
    if (rlock_trylock(l2, 0, 5000) == 0) {
      taken = 1;
      fprintf(stderr, "  another client took it %llu ms after the "
              "failover\n", (unsigned long long)(rt_now_ms() - t0));
      rlock_unlock(l2);
      break;
    }
    rt_sleep_ms(100);
  }
  RT_CHECK_EQ_INT(taken, 0);
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[r], "PTTL %s", key);
  RT_CHECK(pttl > 0 && pttl <= 3000);
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  RT_CHECK_EQ_INT(exists_on(r, key), 0);
  rlock_free(lw);
  rlock_free(l2);
  rlock_client_close(c2);
  rlock_client_close(c);
}

/*
 * Release on close after a manual failover: a client holds locks with a
 * minute's lease on the shard (nothing of it renews or listens there),
 * the shard fails over, and the client is closed at once, before its
 * periodic map refresh. The release batch to the demoted node is
 * answered READONLY; it is sent again by the new map, so every key is
 * gone from the new primary when close returns, not a minute later.
 */
#define FCLOSEN 8
static void failover_then_close(void) {
  rlock_client *c = open_cluster(0);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char name[FCLOSEN][64], key[600]; /* as long as all the names (gcc) */
  int p = owner_of("rlock:{fc}"), r = rt_cluster_replica_of(&C, p);
  RT_REQUIRE(p >= 0 && r >= 0);
  rlock *l[FCLOSEN];
  for (int i = 0; i < FCLOSEN; i++) {
    char stem[32];
    snprintf(stem, sizeof stem, "fc%d-", i);
    name_on_node(p, stem, name[i], sizeof name[i]);
    RT_REQUIRE(rlock_get(c, name[i], &l[i]) == 0);
    RT_CHECK_EQ_INT(rlock_trylock(l[i], 10000, 60000), 0);
  }
  RT_REQUIRE(replicated(p, name[0]) == 1);
  /* The map the client has now is the one it keeps until something
   * asks for another (its periodic refresh is seconds away). */
  rt_sleep_ms(2000);
  RT_REQUIRE(rt_cluster_failover(&C, r) == 0);
  rlock_client_close(c);
  int left = 0;
  for (int i = 0; i < FCLOSEN; i++) {
    key_of(name[i], key, sizeof key);
    if (exists_on(r, key) != 0) {
      left++;
      fprintf(stderr, "  %s left on the new primary, PTTL %lld\n", key,
              rt_redis_int(&C.node[r], "PTTL %s", key));
    }
  }
  RT_CHECK_EQ_INT(left, 0);
  for (int i = 0; i < FCLOSEN; i++) rlock_free(l[i]);
}

/* Replica acknowledgement on a cluster: with replica_acks = 1 a grant is
 * followed by WAIT on the node it was made on; with the replica of the
 * lock's primary paused, the grant is refused for want of
 * acknowledgement, undone, and counted. */
static void replica_acks_on_cluster(void) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000;
  o.replica_acks = 1;
  o.replica_ack_timeout_ms = 200;
  o.log_cb = log_stderr;
  o.log_level = RLOCK_LOG_WARN;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "acked", &l) == 0);
  const char *key = "rlock:{acked}";
  int p = owner_of(key);
  RT_REQUIRE(p >= 0);
  int r = rt_cluster_replica_of(&C, p);
  RT_REQUIRE(r >= 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_REQUIRE(rt_cluster_pause(&C, r) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), RLOCK_ENOQUORUM);
  int gone = 0;
  for (uint64_t end = rt_now_ms() + 3000; !gone && rt_now_ms() < end;
       rt_sleep_ms(10))
    gone = exists_on(p, key) == 0;
  RT_CHECK(gone);
  rlock_metrics mt;
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c, &mt), 0);
  RT_CHECK(mt.grants_unacked >= 1);
  RT_CHECK(rt_cluster_resume(&C, r) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  /* A refusal wrote nothing, so it waits for no acknowledgement: with
   * the replica paused, another client's attempt on the held lock is
   * refused as held, not lost waiting for WAIT (the script runs in its
   * cluster form there, which must count as the same script). */
  RT_REQUIRE(rt_cluster_pause(&C, r) == 0);
  rlock_client *c2 = NULL;
  RT_REQUIRE(rlock_client_open(&c2, &o) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c2, 10000), 0);
  rlock *l2;
  RT_REQUIRE(rlock_get(c2, "acked", &l2) == 0);
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c2, &mt), 0);
  uint64_t unacked = mt.grants_unacked;
  RT_CHECK_EQ_INT(rlock_trylock(l2, 0, 10000), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c2, &mt), 0);
  RT_CHECK(mt.grants_unacked == unacked);
  RT_CHECK(rt_cluster_resume(&C, r) == 0);
  rlock_free(l2);
  rlock_client_close(c2);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- the fair lock, elections and the other kinds ------------------------------ */

/* A fair lock's line: where each waiter came in the order of grants. */
#define FAIR_LINE_MAX 8
typedef struct fair_line {
  char name[64];
  atomic_int next, inside, overlaps, errors;
  int who[FAIR_LINE_MAX];
  uint64_t token[FAIR_LINE_MAX];
} fair_line;

typedef struct fair_waiter {
  rlock_client *c;
  fair_line *line;
  int who;
} fair_waiter;

/* Takes the line's fair lock through a handle of its own client (a wait of
 * a minute, a lease of a minute), records its place, holds it a moment. */
static void *fair_waiter_run(void *arg) {
  fair_waiter *w = arg;
  fair_line *ln = w->line;
  rlock *l;
  if (rlock_get_fair(w->c, ln->name, &l) != 0) {
    ln->errors++;
    return NULL;
  }
  int rc = rlock_trylock(l, 60000, 60000);
  if (rc != 0) {
    fprintf(stderr, "  fair waiter %d on %s: %s\n", w->who, ln->name,
            rlock_strerror(rc));
    ln->errors++;
    rlock_free(l);
    return NULL;
  }
  if (atomic_fetch_add(&ln->inside, 1) != 0) ln->overlaps++;
  int pos = atomic_fetch_add(&ln->next, 1);
  uint64_t token = 0;
  if (rlock_fencing_token(l, &token) != 0) ln->errors++;
  if (pos < FAIR_LINE_MAX) {
    ln->who[pos] = w->who;
    ln->token[pos] = token;
  }
  rt_sleep_ms(20);
  atomic_fetch_sub(&ln->inside, 1);
  if (rlock_unlock(l) != 0) ln->errors++;
  rlock_free(l);
  return NULL;
}

/* The line's waiters came in the order they asked (0, 1, ...), n of
 * them, alone each time, with tokens that grow. */
static int line_in_order(const fair_line *ln, int n) {
  int ok = atomic_load(&ln->next) == n && atomic_load(&ln->errors) == 0 &&
           atomic_load(&ln->overlaps) == 0;
  for (int i = 0; ok && i < n; i++) {
    ok = ln->who[i] == i && ln->token[i] > 0 &&
         (i == 0 || ln->token[i] > ln->token[i - 1]);
    if (!ok)
      fprintf(stderr, "  %s: place %d went to waiter %d (token %llu)\n",
              ln->name, i, ln->who[i], (unsigned long long)ln->token[i]);
  }
  return ok;
}

/* Waiters in a fair lock's queue on a node. */
static long long fair_queued(int node, const char *name) {
  return rt_redis_int(&C.node[node], "ZCARD rlock:{%s}:q", name);
}

/* Waits (at most 20 s) until want waiters are queued on the node. */
static int fair_wait_queued(int node, const char *name, long long want) {
  for (uint64_t end = rt_now_ms() + 20000; rt_now_ms() < end;
       rt_sleep_ms(20))
    if (fair_queued(node, name) == want) return 1;
  fprintf(stderr, "  %s: %lld queued on node %d, want %lld\n", name,
          fair_queued(node, name), node, want);
  return 0;
}

/* Shard channels with subscribers on a node whose names match pattern. */
static long long shard_channels(int node, const char *pattern) {
  redisReply *r =
      rt_redis_cmd(&C.node[node], "PUBSUB SHARDCHANNELS %s", pattern);
  long long n = r != NULL && r->type == REDIS_REPLY_ARRAY
                    ? (long long)r->elements
                    : -1;
  if (r != NULL) freeReplyObject(r);
  return n;
}

/* Waits (at most 30 s) until a fair lock's waiters listen on want channels
 * of their own on node, and on none of any other node. */
static int fair_wait_channels(int node, const char *name, long long want) {
  char pat[128];
  snprintf(pat, sizeof pat, "rlock:{%s}:ch:*", name);
  for (uint64_t end = rt_now_ms() + 30000;; rt_sleep_ms(20)) {
    int ok = 1;
    for (int n = 0; n < RT_CLUSTER_NODES; n++)
      if (shard_channels(n, pat) != (n == node ? want : 0)) ok = 0;
    if (ok) return 1;
    if (rt_now_ms() > end) break;
  }
  for (int n = 0; n < RT_CLUSTER_NODES; n++)
    fprintf(stderr, "  %s: node %d has %lld waiter channels\n", name, n,
            shard_channels(n, pat));
  return 0;
}

/* Nothing of a fair lock is left on the node but its fencing counter. */
static int fair_nothing_left(int node, const char *name) {
  return rt_redis_int(&C.node[node], "EXISTS rlock:{%s} rlock:{%s}:q "
                      "rlock:{%s}:qt", name, name, name) == 0;
}

/*
 * The fair lock on a cluster, one lock on each primary, each held with a
 * lease of a minute: waiters of two clients, queued one after the
 * other, get each lock in the order they asked. Each waiter listens on a
 * channel of its own on the node that serves its lock, and on no other,
 * and is woken there by the unlock: its own attempts come every 40 s
 * (waiter_alive_ms two minutes), so the whole line is through well before
 * any of them would have tried again. Fair locks held with the watchdog
 * on the same nodes are renewed across several leases. Unlock leaves
 * nothing but the fencing counters. About 7 s.
 */
#define FAIRW 4
static void fair_fifo(void) {
  rlock_client *c[2] = {open_cluster_alive(1500, 120000),
                        open_cluster_alive(1500, 120000)};
  RT_REQUIRE(c[0] != NULL && c[1] != NULL);
  for (int k = 0; k < 2; k++)
    RT_CHECK_EQ_INT(rlock_client_wait_ready(c[k], 10000), 0);
  int prim[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, prim) == 3);
  static fair_line line[3];
  memset(line, 0, sizeof line);
  rlock *held[3], *wd[3];
  char wdname[3][64], key[600];
  atomic_int lost = 0;
  for (int p = 0; p < 3; p++) {
    name_on_node(prim[p], "fair-q-", line[p].name, sizeof line[p].name);
    name_on_node(prim[p], "fair-wd-", wdname[p], sizeof wdname[p]);
    RT_REQUIRE(rlock_get_fair(c[0], line[p].name, &held[p]) == 0);
    RT_REQUIRE(rlock_get_fair(c[0], wdname[p], &wd[p]) == 0);
    rlock_set_lost_cb(wd[p], on_lost, &lost);
    RT_CHECK_EQ_INT(rlock_trylock(wd[p], 10000, RLOCK_WATCHDOG), 0);
    RT_CHECK_EQ_INT(rlock_trylock(held[p], 10000, 60000), 0);
  }
  uint64_t t_wd = rt_now_ms();
  fair_waiter fw[3][FAIRW];
  pthread_t t[3][FAIRW];
  for (int i = 0; i < FAIRW; i++)
    for (int p = 0; p < 3; p++) {
      fw[p][i] = (fair_waiter){c[(i + 1) % 2], &line[p], i};
      pthread_create(&t[p][i], NULL, fair_waiter_run, &fw[p][i]);
      RT_CHECK(fair_wait_queued(prim[p], line[p].name, i + 1));
    }
  for (int p = 0; p < 3; p++)
    RT_CHECK(fair_wait_channels(prim[p], line[p].name, FAIRW));
  /* Three leases of the watchdog holds. */
  uint64_t now = rt_now_ms();
  if (now < t_wd + 4500) rt_sleep_ms((int)(t_wd + 4500 - now));
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  for (int p = 0; p < 3; p++) {
    RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(wd[p]), 1);
    key_of(wdname[p], key, sizeof key);
    long long pttl = rt_redis_int(&C.node[prim[p]], "PTTL %s", key);
    RT_CHECK(pttl > 0 && pttl <= 1500);
    RT_CHECK_EQ_INT(atomic_load(&line[p].next), 0); /* nobody went first */
  }
  uint64_t t0 = rt_now_ms();
  for (int p = 0; p < 3; p++) RT_CHECK_EQ_INT(rlock_unlock(held[p]), 0);
  for (int p = 0; p < 3; p++) waiters_join(t[p], FAIRW);
  uint64_t took = rt_now_ms() - t0;
  fprintf(stderr, "  %d waiters on each of 3 primaries through in %llu ms\n",
          FAIRW, (unsigned long long)took);
  RT_CHECK(took < 20000); /* their own next attempts: 40 s apart */
  for (int p = 0; p < 3; p++) {
    RT_CHECK(line_in_order(&line[p], FAIRW));
    RT_CHECK(fair_nothing_left(prim[p], line[p].name));
    RT_CHECK(fair_wait_channels(prim[p], line[p].name, 0));
    RT_CHECK_EQ_INT(rlock_unlock(wd[p]), 0);
    key_of(wdname[p], key, sizeof key);
    RT_CHECK_EQ_INT(exists_on(prim[p], key), 0);
    rlock_free(held[p]);
    rlock_free(wd[p]);
  }
  rlock_client_close(c[0]);
  rlock_client_close(c[1]);
}

/*
 * A manual failover under fair locks: a fair lock held with the watchdog
 * and one held for a minute with waiters of two clients in its queue,
 * on one shard, which fails over. The watchdog hold is renewed on the
 * promoted replica and never lost; the queue is there, replicated; the
 * waiters, whose subscriptions the demoted primary dropped, listen on the
 * new primary and are woken there by the unlock, in the order they asked,
 * long before their own next attempts (40 s apart). About 5 s.
 */
#define FFOW 3
static void fair_manual_failover(void) {
  rlock_client *c[2] = {open_cluster_alive(2000, 120000),
                        open_cluster_alive(2000, 120000)};
  RT_REQUIRE(c[0] != NULL && c[1] != NULL);
  for (int k = 0; k < 2; k++)
    RT_CHECK_EQ_INT(rlock_client_wait_ready(c[k], 10000), 0);
  char wd[64] = "ffo", key[128];
  static fair_line line;
  memset(&line, 0, sizeof line);
  name_in_slot(slot_of_lock(wd), "ffo-held-", wd, line.name,
               sizeof line.name);
  key_of(wd, key, sizeof key);
  int p = owner_of(key), r = rt_cluster_replica_of(&C, p);
  RT_REQUIRE(p >= 0 && r >= 0);
  rlock *lw, *lh;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get_fair(c[0], wd, &lw) == 0);
  RT_REQUIRE(rlock_get_fair(c[0], line.name, &lh) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lh, 10000, 60000), 0);
  fair_waiter fw[FFOW];
  pthread_t t[FFOW];
  for (int i = 0; i < FFOW; i++) {
    fw[i] = (fair_waiter){c[(i + 1) % 2], &line, i};
    pthread_create(&t[i], NULL, fair_waiter_run, &fw[i]);
    RT_CHECK(fair_wait_queued(p, line.name, i + 1));
  }
  RT_CHECK(fair_wait_channels(p, line.name, FFOW));
  RT_REQUIRE(rt_cluster_failover(&C, r) == 0);
  RT_CHECK_EQ_INT(owner_of(key), r);
  RT_CHECK_EQ_INT(fair_queued(r, line.name), FFOW);
  RT_CHECK(fair_wait_channels(r, line.name, FFOW));
  rt_sleep_ms(2500); /* more than a lease: renewals on the new primary */
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[r], "PTTL %s", key);
  RT_CHECK(pttl > 0 && pttl <= 2000);
  RT_CHECK_EQ_INT(atomic_load(&line.next), 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(lh), 0);
  waiters_join(t, FFOW);
  uint64_t took = rt_now_ms() - t0;
  fprintf(stderr, "  %d waiters through in %llu ms after the unlock\n", FFOW,
          (unsigned long long)took);
  RT_CHECK(took < 20000);
  RT_CHECK(line_in_order(&line, FFOW));
  RT_CHECK(fair_nothing_left(r, line.name));
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  RT_CHECK_EQ_INT(exists_on(r, key), 0);
  rlock_free(lw);
  rlock_free(lh);
  rlock_client_close(c[0]);
  rlock_client_close(c[1]);
}

/*
 * A slot migration under fair locks: a fair lock held with the watchdog
 * and one held for a minute with waiters of two clients in its queue, in
 * one slot, which moves to another primary key by key. The watchdog hold
 * is renewed throughout (its hash alone: through ASK, then MOVED) and
 * never lost; the queue moves with the keys; the waiters' subscriptions,
 * which the source drops when the slot leaves it, are made again on the
 * target, and on no other node; the unlock after the move wakes them
 * there, in the order they asked. (While the slot migrates, the fair
 * lock's own scripts are answered TRYAGAIN: some of their keys are on one
 * side, or absent; deployment.md.) About 5 s.
 */
static void fair_migration(void) {
  rlock_client *c[2] = {open_cluster_alive(2000, 120000),
                        open_cluster_alive(2000, 120000)};
  RT_REQUIRE(c[0] != NULL && c[1] != NULL);
  for (int k = 0; k < 2; k++)
    RT_CHECK_EQ_INT(rlock_client_wait_ready(c[k], 10000), 0);
  char wd[64] = "fmig", key[128];
  static fair_line line;
  memset(&line, 0, sizeof line);
  int slot = slot_of_lock(wd);
  name_in_slot(slot, "fmig-held-", wd, line.name, sizeof line.name);
  key_of(wd, key, sizeof key);
  int from = owner_of(key), to = other_primary(from);
  RT_REQUIRE(from >= 0 && to >= 0);
  rlock *lw, *lh;
  atomic_int lost = 0;
  RT_REQUIRE(rlock_get_fair(c[0], wd, &lw) == 0);
  RT_REQUIRE(rlock_get_fair(c[0], line.name, &lh) == 0);
  rlock_set_lost_cb(lw, on_lost, &lost);
  RT_CHECK_EQ_INT(rlock_trylock(lw, 10000, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lh, 10000, 60000), 0);
  fair_waiter fw[FFOW];
  pthread_t t[FFOW];
  for (int i = 0; i < FFOW; i++) {
    fw[i] = (fair_waiter){c[(i + 1) % 2], &line, i};
    pthread_create(&t[i], NULL, fair_waiter_run, &fw[i]);
    RT_CHECK(fair_wait_queued(from, line.name, i + 1));
  }
  RT_CHECK(fair_wait_channels(from, line.name, FFOW));
  rt_migration mg;
  RT_REQUIRE(rt_cluster_migrate_begin(&C, slot, to, &mg) == 0);
  rt_sleep_ms(800); /* a renewal while MIGRATING, keys on the source */
  int moved = 0, n;
  while ((n = rt_cluster_migrate_keys(&C, &mg, 1)) > 0) {
    moved += n;
    rt_sleep_ms(100); /* the keys on both sides for a moment */
  }
  RT_CHECK(n == 0);
  RT_CHECK(moved >= 6); /* two hashes, two counters, the queue's two */
  RT_REQUIRE(rt_cluster_migrate_finish(&C, &mg) == 0);
  RT_CHECK_EQ_INT(owner_of(key), to);
  RT_CHECK_EQ_INT(fair_queued(to, line.name), FFOW);
  RT_CHECK(fair_wait_channels(to, line.name, FFOW));
  rt_sleep_ms(1500); /* renewals through MOVED, then the new map */
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(lw), 1);
  long long pttl = rt_redis_int(&C.node[to], "PTTL %s", key);
  RT_CHECK(pttl > 0 && pttl <= 2000);
  RT_CHECK_EQ_INT(atomic_load(&line.next), 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(lh), 0);
  waiters_join(t, FFOW);
  uint64_t took = rt_now_ms() - t0;
  fprintf(stderr, "  %d waiters through in %llu ms after the unlock\n", FFOW,
          (unsigned long long)took);
  RT_CHECK(took < 20000);
  RT_CHECK(line_in_order(&line, FFOW));
  RT_CHECK(fair_nothing_left(to, line.name));
  RT_CHECK_EQ_INT(rlock_unlock(lw), 0);
  RT_CHECK_EQ_INT(exists_on(to, key), 0);
  rlock_free(lw);
  rlock_free(lh);
  rlock_client_close(c[0]);
  rlock_client_close(c[1]);
}

/* What an observer saw, in order. */
#define SEEN_MAX 16
typedef struct seen {
  pthread_mutex_t mu;
  int n;
  int leader[SEEN_MAX]; /* 0: no leader */
  char value[SEEN_MAX][32];
  uint64_t token[SEEN_MAX];
} seen;

static void on_seen(rlock_election *e, const char *value, uint64_t token,
                    void *arg) {
  (void)e;
  seen *s = arg;
  pthread_mutex_lock(&s->mu);
  if (s->n < SEEN_MAX) {
    s->leader[s->n] = value != NULL;
    snprintf(s->value[s->n], sizeof s->value[0], "%s", value ? value : "");
    s->token[s->n] = token;
    s->n++;
  }
  pthread_mutex_unlock(&s->mu);
}

/* Waits (at most 10 s) until the observer's last report is value (NULL:
 * no leader) with token; 1 if so. */
static int seen_last(seen *s, const char *value, uint64_t token) {
  for (uint64_t end = rt_now_ms() + 10000; rt_now_ms() < end;
       rt_sleep_ms(10)) {
    pthread_mutex_lock(&s->mu);
    int k = s->n - 1;
    int ok = k >= 0 && s->token[k] == token &&
             s->leader[k] == (value != NULL) &&
             (value == NULL || strcmp(s->value[k], value) == 0);
    pthread_mutex_unlock(&s->mu);
    if (ok) return 1;
  }
  fprintf(stderr, "  the observer did not see %s (token %llu)\n",
          value ? value : "no leader", (unsigned long long)token);
  return 0;
}

typedef struct campaigner {
  rlock_election *e;
  const char *value;
  int rc;
} campaigner;

static void *campaign_run(void *arg) {
  campaigner *a = arg;
  a->rc = rlock_campaign(a->e, a->value, 30000);
  return NULL;
}

/*
 * An election on a cluster: a campaigner of one client leads (its record
 * in the fair lock's hash on the node of the name's slot) and is renewed
 * across leases; a campaigner of a second client waits in the queue; an
 * observer on the second client sees the leader, its new value, then the
 * next leader once the first resigns, then no leader, in that order and
 * with tokens that never go back; both clients read the same leader.
 * Nothing is left. About 3 s.
 */
static void election_on_cluster(void) {
  rlock_client *c1 = open_cluster(1500), *c2 = open_cluster(1500);
  RT_REQUIRE(c1 != NULL && c2 != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c1, 10000), 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c2, 10000), 0);
  const char *name = "elect-cl", *key = "rlock:{elect-cl}";
  int p = owner_of(key);
  RT_REQUIRE(p >= 0);
  rlock_election *e1, *e2, *obs;
  RT_REQUIRE(rlock_election_get(c1, name, &e1) == 0);
  RT_REQUIRE(rlock_election_get(c2, name, &e2) == 0);
  RT_REQUIRE(rlock_election_get(c2, name, &obs) == 0);
  static seen s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.mu, NULL);
  RT_CHECK_EQ_INT(rlock_observe(obs, on_seen, &s), 0);
  RT_CHECK(seen_last(&s, NULL, 0));
  RT_CHECK_EQ_INT(rlock_campaign(e1, "one", 10000), 0);
  uint64_t t1 = 0, t2 = 0, tok = 0;
  RT_CHECK_EQ_INT(rlock_election_token(e1, &t1), 0);
  RT_CHECK(t1 > 0);
  RT_CHECK(seen_last(&s, "one", t1));
  redisReply *rep = rt_redis_cmd(&C.node[p], "HGET %s #v", key);
  RT_CHECK(rep != NULL && rep->type == REDIS_REPLY_STRING &&
           strcmp(rep->str, "one") == 0);
  if (rep != NULL) freeReplyObject(rep);
  campaigner a = {e2, "two", -1};
  pthread_t th;
  pthread_create(&th, NULL, campaign_run, &a);
  RT_CHECK(fair_wait_queued(p, name, 1));
  RT_CHECK_EQ_INT(rlock_proclaim(e1, "one-b"), 0);
  RT_CHECK(seen_last(&s, "one-b", t1));
  rt_sleep_ms(2000); /* more than a lease: the leadership is renewed */
  char v[32];
  RT_CHECK_EQ_INT(rlock_leader(obs, v, sizeof v, &tok), 0);
  RT_CHECK(strcmp(v, "one-b") == 0 && tok == t1);
  RT_CHECK_EQ_INT(rlock_resign(e1), 0);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(a.rc, 0);
  RT_CHECK_EQ_INT(rlock_election_token(e2, &t2), 0);
  RT_CHECK(t2 > t1);
  RT_CHECK(seen_last(&s, "two", t2));
  RT_CHECK_EQ_INT(rlock_leader(e1, v, sizeof v, &tok), 0); /* client 1 */
  RT_CHECK(strcmp(v, "two") == 0 && tok == t2);
  RT_CHECK_EQ_INT(rlock_resign(e2), 0);
  RT_CHECK(seen_last(&s, NULL, t2));
  RT_CHECK_EQ_INT(rlock_leader(e1, v, sizeof v, &tok), RLOCK_ENOENT);
  /* In order: one, one-b (token t1), perhaps no leader for a moment,
   * two (t2), no leader; tokens never go back. */
  pthread_mutex_lock(&s.mu);
  int k = 0, n = s.n;
  RT_CHECK(n >= 5 && !s.leader[k++]);
  RT_CHECK(k < n && s.leader[k] && strcmp(s.value[k], "one") == 0 &&
           s.token[k] == t1);
  k++;
  RT_CHECK(k < n && s.leader[k] && strcmp(s.value[k], "one-b") == 0 &&
           s.token[k] == t1);
  k++;
  while (k < n && !s.leader[k]) RT_CHECK(s.token[k++] == t1);
  RT_CHECK(k < n && s.leader[k] && strcmp(s.value[k], "two") == 0 &&
           s.token[k] == t2);
  k++;
  RT_CHECK(k == n - 1 && !s.leader[k]);
  for (int i = 1; i < n; i++) RT_CHECK(s.token[i] >= s.token[i - 1]);
  pthread_mutex_unlock(&s.mu);
  RT_CHECK_EQ_INT(rlock_observe(obs, NULL, NULL), 0);
  RT_CHECK(fair_nothing_left(p, name));
  rlock_election_free(obs);
  rlock_election_free(e2);
  rlock_election_free(e1);
  pthread_mutex_destroy(&s.mu);
  rlock_client_close(c2);
  rlock_client_close(c1);
}

static void on_sem_lost(rlock_sem *sem, uint64_t owner, int is_thread,
                        void *arg) {
  (void)sem;
  (void)owner;
  (void)is_thread;
  atomic_fetch_add((atomic_int *)arg, 1);
}

typedef struct writer_arg {
  rlock *w;
  int rc;
} writer_arg;

static void *writer_run(void *arg) {
  writer_arg *a = arg;
  a->rc = rlock_trylock(a->w, 60000, 10000);
  if (a->rc == 0 && rlock_unlock(a->w) != 0) a->rc = -1;
  return NULL;
}

typedef struct await_arg {
  rlock_latch *l;
  int rc;
} await_arg;

static void *await_run(void *arg) {
  await_arg *a = arg;
  a->rc = rlock_latch_await(a->l, 60000);
  return NULL;
}

/*
 * The other kinds on a cluster, each with its keys in its name's slot:
 * semaphores on two primaries keep permits taken with the watchdog across
 * several leases (renewed one semaphore per call: a call runs in one
 * slot); a writer of a second client waiting for a read-write lock's
 * reader is woken by the read unlock (its own attempts 40 s apart, the
 * read lease a minute); an await on a latch of the second client
 * returns once the first counts it down to zero. About 5 s.
 */
static void family_kinds(void) {
  rlock_client *c1 = open_cluster_alive(1500, 120000),
               *c2 = open_cluster_alive(1500, 120000);
  RT_REQUIRE(c1 != NULL && c2 != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c1, 10000), 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c2, 10000), 0);
  int prim[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, prim) == 3);
  /* Semaphores on two primaries, with the watchdog. */
  char sname[2][64], key[600];
  rlock_sem *s[2], *s2;
  atomic_int lost = 0;
  for (int i = 0; i < 2; i++) {
    name_on_node(prim[i], "sem-cl-", sname[i], sizeof sname[i]);
    RT_REQUIRE(rlock_sem_get(c1, sname[i], 2, &s[i]) == 0);
    rlock_sem_set_lost_cb(s[i], on_sem_lost, &lost);
    RT_CHECK_EQ_INT(rlock_sem_acquire(s[i], 1, 10000, RLOCK_WATCHDOG), 0);
  }
  uint64_t t_wd = rt_now_ms();
  /* A writer waits for a reader. */
  rlock *rd, *wr;
  int p = owner_of("rlock:{rw-cl}:w");
  RT_REQUIRE(p >= 0);
  RT_REQUIRE(rlock_get_read(c1, "rw-cl", &rd) == 0);
  RT_REQUIRE(rlock_get_write(c2, "rw-cl", &wr) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(rd, 10000, 60000), 0);
  writer_arg wa = {wr, -1};
  pthread_t tw;
  pthread_create(&tw, NULL, writer_run, &wa);
  int queued = 0;
  for (uint64_t end = rt_now_ms() + 20000; !queued && rt_now_ms() < end;
       rt_sleep_ms(20))
    queued = rt_redis_int(&C.node[p], "ZCARD rlock:{rw-cl}:wq") == 1;
  RT_CHECK(queued);
  rt_sleep_ms(300); /* subscribed */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(rd), 0);
  pthread_join(tw, NULL);
  uint64_t took = rt_now_ms() - t0;
  fprintf(stderr, "  the writer in %llu ms after the read unlock\n",
          (unsigned long long)took);
  RT_CHECK_EQ_INT(wa.rc, 0);
  RT_CHECK(took < 20000);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p], "EXISTS rlock:{rw-cl}:w "
                  "rlock:{rw-cl}:r rlock:{rw-cl}:wq"), 0);
  rlock_free(rd);
  rlock_free(wr);
  /* A latch counted down by one client, awaited by the other. */
  rlock_latch *la, *lb;
  RT_REQUIRE(rlock_latch_get(c1, "latch-cl", &la) == 0);
  RT_REQUIRE(rlock_latch_get(c2, "latch-cl", &lb) == 0);
  RT_CHECK_EQ_INT(rlock_latch_set(la, 2), 1);
  await_arg aa = {lb, -1};
  pthread_t ta;
  pthread_create(&ta, NULL, await_run, &aa);
  RT_CHECK_EQ_INT(rlock_latch_count_down(la), 0);
  rt_sleep_ms(300);
  RT_CHECK_EQ_INT(aa.rc, -1); /* still waiting */
  RT_CHECK_EQ_INT(rlock_latch_count_down(la), 0);
  pthread_join(ta, NULL);
  RT_CHECK_EQ_INT(aa.rc, 0);
  RT_CHECK_EQ_INT(rlock_latch_delete(la), 0);
  rlock_latch_free(la);
  rlock_latch_free(lb);
  /* Three leases of the permits. */
  uint64_t now = rt_now_ms();
  if (now < t_wd + 4500) rt_sleep_ms((int)(t_wd + 4500 - now));
  RT_CHECK_EQ_INT(atomic_load(&lost), 0);
  for (int i = 0; i < 2; i++) {
    int64_t n = 0;
    RT_CHECK_EQ_INT(rlock_sem_held(s[i], &n), 0);
    RT_CHECK_EQ_INT(n, 1);
    RT_REQUIRE(rlock_sem_get(c2, sname[i], 2, &s2) == 0);
    RT_CHECK_EQ_INT(rlock_sem_available(s2, &n), 0);
    RT_CHECK_EQ_INT(n, 1); /* the other client sees it taken */
    rlock_sem_free(s2);
    RT_CHECK_EQ_INT(rlock_sem_release(s[i], 1), 0);
    snprintf(key, sizeof key, "rlock:{%s}:s", sname[i]);
    RT_CHECK_EQ_INT(owner_of(key), prim[i]);
    rlock_sem_free(s[i]);
  }
  rlock_client_close(c2);
  rlock_client_close(c1);
}

/* The text of rlock_client_last_error. */
static void last_error(rlock_client *c, char *buf, size_t size) {
  buf[0] = '\0';
  rlock_client_last_error(c, buf, size);
}

/*
 * Several locks at once are refused on a cluster master, not half-run
 * (their names hash to slots of several nodes): rlock_lock_all fails with
 * RLOCK_EINVAL and rlock_client_last_error says it is not supported on a
 * redis-cluster:// master; nothing is written on any node; each lock of
 * the set still works alone on that client.
 */
static void lock_all_refused(void) {
  rlock_client *c = open_cluster(0);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char err[300];
  rlock *two[2] = {NULL, NULL};
  RT_REQUIRE(rlock_get(c, "fam", &two[0]) == 0);
  RT_REQUIRE(rlock_get(c, "fam2", &two[1]) == 0);
  RT_CHECK_EQ_INT(rlock_lock_all(two, 2, 0, 10000), RLOCK_EINVAL);
  last_error(c, err, sizeof err);
  fprintf(stderr, "  last error: %s\n", err);
  RT_CHECK(strstr(err, "several locks at once are not yet supported on a "
                       "redis-cluster:// master") != NULL);
  /* Nothing written: each key's node (the only one that may have it). */
  static const char *const keys[] = {"rlock:{fam}", "rlock:{fam2}"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    int owner = owner_of(keys[i]);
    RT_REQUIRE(owner >= 0);
    RT_CHECK_EQ_INT(exists_on(owner, keys[i]), 0);
  }
  /* The locks of the set work one by one. */
  for (int i = 0; i < 2; i++) {
    RT_CHECK_EQ_INT(rlock_lock(two[i], 10000), 0);
    RT_CHECK_EQ_INT(exists_on(owner_of(keys[i]), keys[i]), 1);
    RT_CHECK_EQ_INT(rlock_unlock(two[i]), 0);
  }
  rlock_free(two[0]);
  rlock_free(two[1]);
  rlock_client_close(c);
}

static rt_test tests[] = {
    {"lock_on_its_node", lock_on_its_node},
    {"lock_all_refused", lock_all_refused},
    {"fair_fifo", fair_fifo},
    {"election_on_cluster", election_on_cluster},
    {"family_kinds", family_kinds},
    {"fair_manual_failover", fair_manual_failover},
    {"fair_migration", fair_migration},
    {"spread_over_primaries", spread_over_primaries},
    {"watchdog_batches_per_node", watchdog_batches_per_node},
    {"pubsub_wakeup", pubsub_wakeup},
    {"tool_against_cluster", tool_against_cluster},
    {"mixed_with_plain_masters", mixed_with_plain_masters},
    {"cluster_node_twice_counts_once", cluster_node_twice_counts_once},
    {"close_releases_per_node", close_releases_per_node},
    {"migration_while_held", migration_while_held},
    {"manual_failover", manual_failover},
    {"replica_acks_on_cluster", replica_acks_on_cluster},
    {"primary_killed", primary_killed},
    {"failover_renews_held", failover_renews_held},
    {"failover_then_close", failover_then_close},
    {"hung_primary", hung_primary},
};

/* What a cluster adds to README's smallest ACL rule: the slot map, ASK
 * redirects, shard pub/sub (the scripts' SPUBLISH included). */
#define RT_CLUSTER_ACL_EXTRA                                                  \
  "+cluster|shards +cluster|slots +asking +spublish +ssubscribe "           \
  "+sunsubscribe"

/* With RT_CLUSTER_ACL set, the client authenticates as an ACL user with
 * README's rule for a cluster (the harness keeps the default user).
 * With RT_CLUSTER_PASSWORD set, every node requires that password and the
 * URL carries it (redis-cluster://:PASSWORD@...): the handshake of every
 * node connection, subscriber ones included, authenticates. */
int main(int argc, char **argv) {
  const char *pw = getenv("RT_CLUSTER_PASSWORD");
  if (rt_cluster_start(&C, pw) != 0) {
    fprintf(stderr, "cannot start the cluster\n");
    return 1;
  }
  snprintf(url, sizeof url,
           "redis-cluster://%s%s%s127.0.0.1:%d?seed=127.0.0.1:%d",
           pw ? ":" : "", pw ? pw : "", pw ? "@" : "", C.node[0].port,
           C.node[1].port);
  if (getenv("RT_CLUSTER_ACL") != NULL) {
    /* README's smallest rule for a cluster, on every node (ACL users are
     * per node), and the URL authenticates as that user. */
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
      redisReply *r = rt_redis_cmd(&C.node[i], "ACL SETUSER locker on >lockpw "
                                   RT_ACL_RULE " " RT_CLUSTER_ACL_EXTRA);
      if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "ACL SETUSER on node %d: %s\n", i,
                r ? r->str : "no reply");
        rt_cluster_stop(&C);
        return 1;
      }
      freeReplyObject(r);
    }
    snprintf(url, sizeof url,
             "redis-cluster://locker:lockpw@127.0.0.1:%d?seed=127.0.0.1:%d",
             C.node[0].port, C.node[1].port);
  }
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_cluster_stop(&C);
  return rc;
}
