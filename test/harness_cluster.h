/*
 * A real Redis Cluster for integration tests: three primaries and three
 * replicas of redis-server on free loopback ports, each an rt_redis of
 * harness.h (its own temporary directory and process group, cleaned up by
 * the runner), joined with redis-cli --cluster create, and helpers that
 * fault it the way production does: slot migrations in steps a test can
 * act between, manual failovers, a SIGKILLed primary, a restarted node,
 * a paused node. Every helper that changes the topology returns only once
 * all running nodes agree on the result (see rt_cluster_wait_settled), so
 * a test's next step starts from a known cluster.
 *
 * Like harness.h, these are for the test's main thread. Node indexes are
 * positions in node[]: 0..2 are the primaries at creation, 3..5 replicas,
 * but failovers change that, so ask (rt_cluster_is_primary and the rest).
 */
#ifndef RT_HARNESS_CLUSTER_H
#define RT_HARNESS_CLUSTER_H

#include "harness.h"
#include "keyslot.h"

#define RT_CLUSTER_NODES 6
/* cluster-node-timeout: how long a silent node takes to be failed, and so
 * most of a failover's length. Short for tests, long enough that a loaded
 * machine does not fail a healthy node. */
#define RT_CLUSTER_NODE_TIMEOUT_MS 2000

typedef struct rt_cluster {
  rt_redis node[RT_CLUSTER_NODES];
  char id[RT_CLUSTER_NODES][41]; /* CLUSTER MYID of each node */
  char password[64];             /* "" for none */
} rt_cluster;

/*
 * Starts six nodes (cluster-enabled, no persistence, the node timeout
 * above, no replica migration, any replica may fail over however stale),
 * creates the cluster with redis-cli --cluster create --cluster-replicas 1
 * and waits until it is settled. Ports are at most 55535, since a node's
 * cluster bus listens on its port + 10000. A NULL or empty password means
 * none; with one, every node requires it and replicas authenticate with
 * it. 0, or -1 with a diagnostic on stderr and nothing left running.
 */
int rt_cluster_start(rt_cluster *c, const char *password);
/* Stops every node and removes its directory. Safe after a failed start
 * and twice. */
void rt_cluster_stop(rt_cluster *c);

/*
 * Waits until the cluster is settled: every running node that is not
 * paused answers, says cluster_state:ok, and describes the same cluster
 * in CLUSTER NODES (which node owns each slot, which running node is a
 * primary and which one each replica follows); every slot is owned by a
 * running node; every running replica that is not paused has its
 * replication link up to that primary. 0, or -1 after timeout_ms with
 * the reason on stderr.
 */
int rt_cluster_wait_settled(rt_cluster *c, int timeout_ms);

/* The index of the node owning a slot (or a key's slot) as the first
 * running node that is not paused sees it, or -1. */
int rt_cluster_owner(rt_cluster *c, int slot);
int rt_cluster_key_owner(rt_cluster *c, const char *key);
/* 1 if the node's ROLE says master, 0 if replica, -1 if it does not
 * answer. */
int rt_cluster_is_primary(rt_cluster *c, int i);
/* The primaries now, in node order, into out (RT_CLUSTER_NODES entries);
 * returns how many. */
int rt_cluster_primaries(rt_cluster *c, int *out);
/* The index of the primary a replica follows, by its ROLE; -1 for a
 * primary or a node that does not answer. */
int rt_cluster_primary_of(rt_cluster *c, int i);
/* The index of a running node whose ROLE says it follows primary p, or
 * -1. */
int rt_cluster_replica_of(rt_cluster *c, int p);
/* The index of the node on a port, or -1. */
int rt_cluster_index_of_port(const rt_cluster *c, int port);

/*
 * A slot migration in the steps of the cluster specification, so that a
 * test can act between them (take locks, wait, fault a node):
 *   begin:  CLUSTER SETSLOT slot IMPORTING on the target, then MIGRATING
 *           on the source (the slot's owner); from now on the source
 *           answers ASK for keys it no longer has, TRYAGAIN for multi-key
 *           commands that straddle;
 *   keys:   moves up to batch keys (GETKEYSINSLOT, then one MIGRATE ...
 *           KEYS); returns how many it moved, 0 once none is left, or -1;
 *   finish: CLUSTER SETSLOT slot NODE target on the target, the source
 *           and the other primaries, then waits until settled with the
 *           target owning the slot.
 */
typedef struct rt_migration {
  int slot, from, to; /* node indexes */
} rt_migration;
int rt_cluster_migrate_begin(rt_cluster *c, int slot, int to,
                             rt_migration *m);
int rt_cluster_migrate_keys(rt_cluster *c, const rt_migration *m, int batch);
int rt_cluster_migrate_finish(rt_cluster *c, const rt_migration *m);
/* All three steps, keys in batches of 100. 0 or -1. */
int rt_cluster_migrate_slot(rt_cluster *c, int slot, int to);

/* CLUSTER FAILOVER on a replica (a coordinated, lossless switch), then
 * waits until it is the primary, its old primary follows it, and the
 * cluster is settled. 0 or -1. */
int rt_cluster_failover(rt_cluster *c, int replica);
/* SIGKILLs a primary, then waits until its replica has been promoted by
 * the cluster and the cluster is settled (without the dead node). Returns
 * the index of the promoted replica, or -1. */
int rt_cluster_kill_primary(rt_cluster *c, int p);
/* Starts a killed node again on its port and directory (nodes.conf is
 * kept, so it rejoins with its old id: a killed primary comes back as a
 * replica of the node that replaced it) and waits until settled. 0 or -1. */
int rt_cluster_restart(rt_cluster *c, int i);
/* SIGSTOP and SIGCONT, as rt_redis_pause and rt_redis_resume. A primary
 * paused for longer than the node timeout is failed over by the cluster. */
int rt_cluster_pause(rt_cluster *c, int i);
int rt_cluster_resume(rt_cluster *c, int i);

#endif /* RT_HARNESS_CLUSTER_H */
