/*
 * A real Sentinel setup for integration tests: one master and two
 * replicas of redis-server, and three sentinels (quorum 2) watching them
 * under the name RT_SENTINEL_NAME, all on free loopback ports, each an
 * rt_redis of harness.h (its own temporary directory and process group,
 * cleaned up by the runner). The helpers fault it the way production
 * does (a SIGKILLed master, a paused replica, a restarted old master) and
 * return once the sentinels and the servers agree on the outcome, so a
 * test's next step starts from a known setup.
 *
 * With RT_TLS=1 in the environment every server of it is TLS-only (as
 * harness.h's rt_redis_start makes them, its CA and certificates), and
 * replicas and sentinels reach the others over TLS (tls-replication):
 * a client needs rediss-sentinel:// then. The harness's own commands
 * still go over each server's unix socket.
 *
 * Like harness.h, these are for the test's main thread. Data nodes are
 * indexes into data[]: data[0] is the master at start, but failovers
 * change that, so ask (rt_sentinel_master).
 */
#ifndef RT_HARNESS_SENTINEL_H
#define RT_HARNESS_SENTINEL_H

#include "harness.h"

#define RT_SENTINEL_DATA 3
#define RT_SENTINELS 3
#define RT_SENTINEL_NAME "mymaster"
#define RT_SENTINEL_QUORUM 2
/* How long a silent master takes to be subjectively down; with the
 * election and promotion, a failover takes about two seconds more. */
#define RT_SENTINEL_DOWN_AFTER_MS 1000
/* Also the least time between two failovers of the same master by the
 * same sentinel (twice this), so short for tests. */
#define RT_SENTINEL_FAILOVER_TIMEOUT_MS 3000

typedef struct rt_sentinel {
  rt_redis data[RT_SENTINEL_DATA];  /* the master and its replicas */
  rt_redis sentinel[RT_SENTINELS];  /* the sentinels */
  char password[64];                /* "" for none */
} rt_sentinel;

/*
 * Starts the data nodes (no persistence; data[1] and data[2] replicas of
 * data[0]) and the sentinels, and waits until every sentinel reports the
 * master, two replicas and two other sentinels. With a password (NULL or
 * empty for none), the data nodes and the sentinels require it, replicas
 * and sentinels use it (masterauth, auth-pass, sentinel-pass). 0, or -1
 * with a diagnostic on stderr and nothing left running.
 */
int rt_sentinel_start(rt_sentinel *s, const char *password);
/* Stops everything. Safe after a failed start and twice. */
void rt_sentinel_stop(rt_sentinel *s);

/* The master's port as sentinel k reports it (SENTINEL
 * GET-MASTER-ADDR-BY-NAME), or -1. */
int rt_sentinel_reported_port(rt_sentinel *s, int k);
/* The index of the data node that every answering sentinel reports as
 * the master and whose ROLE says master, or -1. */
int rt_sentinel_master(rt_sentinel *s);
/* The index of the data node on a port, or -1. */
int rt_sentinel_index_of_port(const rt_sentinel *s, int port);
/* Waits until every answering sentinel reports the same master, not
 * data[old], and that node's ROLE says master. Its index, or -1 after
 * timeout_ms. */
int rt_sentinel_wait_master_not(rt_sentinel *s, int old, int timeout_ms);
/* Waits until every running data node that is not paused, other than
 * the master, is its replica with the link up. 0 or -1. */
int rt_sentinel_wait_replicas(rt_sentinel *s, int timeout_ms);

/* SIGKILLs the master and waits for the failover: the sentinels agree on
 * a new master and the remaining replica follows it. The new master's
 * index, or -1. */
int rt_sentinel_kill_master(rt_sentinel *s);
/* Starts a killed data node again on its port and directory. Without
 * persistence it comes back empty and, for a while, as a master of its
 * own (a sentinel converts it after about 8 to 10 seconds); this waits
 * until it is a replica of the current master with its link up. 0 or -1. */
int rt_sentinel_restart(rt_sentinel *s, int i);
/* SIGSTOP and SIGCONT of a data node, as rt_redis_pause and _resume: a
 * paused replica misses the writes of its master; a paused master is
 * failed over after RT_SENTINEL_DOWN_AFTER_MS. */
int rt_sentinel_pause(rt_sentinel *s, int i);
int rt_sentinel_resume(rt_sentinel *s, int i);

#endif /* RT_HARNESS_SENTINEL_H */
