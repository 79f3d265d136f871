/*
 * A Redis Cluster as a master (lib/topology/master_cluster.c), against a
 * real cluster of three primaries and three replicas (harness_cluster.h),
 * started once and
 * shared by every test here: the lock, its keys on the node that serves its
 * slot, locks spread over every primary, the watchdog batched per node,
 * waiters woken by shard pub/sub, the tool, and faults: a slot migrated while
 * a lock is held and waiters wait, a manual failover (with waiters on the
 * shard, with nothing but a watchdog lock there, and just before close), and
 * in suite 'variants' a primary SIGKILLed and its replica promoted
 * ("cluster-kill") and the client's own map source hung until its replica is
 * promoted ("cluster-hung"). The fault tests leave the cluster settled, with
 * every slot served, for the tests after them.
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

static rlock_client *open_cluster(int64_t watchdog_ms) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000; /* sanitizers, valgrind, a loaded machine */
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  o.log_cb = log_stderr;
  o.log_level = getenv("RT_LOG") ? RLOCK_LOG_DEBUG : RLOCK_LOG_WARN;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  return c;
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
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* The text of rlock_client_last_error. */
static void last_error(rlock_client *c, char *buf, size_t size) {
  buf[0] = '\0';
  rlock_client_last_error(c, buf, size);
}

/*
 * The lock family is refused on a cluster master, not half-run: each
 * kind's handle (fair, read, write, semaphore, latch) and rlock_lock_all
 * fail with RLOCK_EINVAL and rlock_client_last_error says which kind is
 * not supported on a redis-cluster:// master; nothing is written on any
 * node; the reentrant lock of the same name still works on that client.
 */
static void family_refused(void) {
  rlock_client *c = open_cluster(0);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char err[300];
  rlock *l = (rlock *)&err; /* must be reset to NULL by a refusal */
  RT_CHECK_EQ_INT(rlock_get_fair(c, "fam", &l), RLOCK_EINVAL);
  RT_CHECK(l == NULL);
  last_error(c, err, sizeof err);
  fprintf(stderr, "  last error: %s\n", err);
  RT_CHECK(strstr(err, "fair locks are not yet supported on a "
                       "redis-cluster:// master") != NULL);
  RT_CHECK_EQ_INT(rlock_get_read(c, "fam", &l), RLOCK_EINVAL);
  last_error(c, err, sizeof err);
  RT_CHECK(strstr(err, "read-write locks are not yet supported") != NULL);
  RT_CHECK_EQ_INT(rlock_get_write(c, "fam", &l), RLOCK_EINVAL);
  rlock_sem *sem = NULL;
  RT_CHECK_EQ_INT(rlock_sem_get(c, "fam", 2, &sem), RLOCK_EINVAL);
  RT_CHECK(sem == NULL);
  last_error(c, err, sizeof err);
  RT_CHECK(strstr(err, "semaphores are not yet supported") != NULL);
  rlock_election *el = (rlock_election *)&err;
  RT_CHECK_EQ_INT(rlock_election_get(c, "fam", &el), RLOCK_EINVAL);
  RT_CHECK(el == NULL);
  last_error(c, err, sizeof err);
  RT_CHECK(strstr(err, "elections are not yet supported") != NULL);
  rlock_latch *latch = NULL;
  RT_CHECK_EQ_INT(rlock_latch_get(c, "fam", &latch), RLOCK_EINVAL);
  RT_CHECK(latch == NULL);
  last_error(c, err, sizeof err);
  RT_CHECK(strstr(err, "latches are not yet supported") != NULL);
  rlock *two[2] = {NULL, NULL};
  RT_REQUIRE(rlock_get(c, "fam", &two[0]) == 0);
  RT_REQUIRE(rlock_get(c, "fam2", &two[1]) == 0);
  RT_CHECK_EQ_INT(rlock_lock_all(two, 2, 0, 10000), RLOCK_EINVAL);
  last_error(c, err, sizeof err);
  RT_CHECK(strstr(err, "several locks at once are not yet supported") !=
           NULL);
  /* Nothing written: each key's node (the only one that may have it). */
  static const char *const keys[] = {"rlock:{fam}", "rlock:{fam2}",
                                     "rlock:{fam}:s", "rlock:{fam}:l",
                                     "rlock:{fam}:q", "rlock:{fam}:w"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    int owner = owner_of(keys[i]);
    RT_REQUIRE(owner >= 0);
    RT_CHECK_EQ_INT(exists_on(owner, keys[i]), 0);
  }
  /* The plain lock of the name works. */
  RT_CHECK_EQ_INT(rlock_lock(two[0], 10000), 0);
  RT_CHECK_EQ_INT(exists_on(owner_of("rlock:{fam}"), "rlock:{fam}"), 1);
  RT_CHECK_EQ_INT(rlock_unlock(two[0]), 0);
  rlock_free(two[0]);
  rlock_free(two[1]);
  rlock_client_close(c);
}

static rt_test tests[] = {
    {"lock_on_its_node", lock_on_its_node},
    {"family_refused", family_refused},
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
