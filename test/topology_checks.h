/*
 * What the cluster and Sentinel parsers must make of each captured state,
 * written once and run twice: by the unit tests on the replies captured
 * in test/topology_replies.c (no server), and by test_topology_replies on
 * the replies a real cluster and Sentinel setup give during the run (so a
 * Redis that answers otherwise fails there, and a new capture is checked
 * before it is committed). Each check builds slot maps with lib/slotmap
 * and compares them with CLUSTER NODES of the same node at the same
 * moment (rt_view), slot by slot, and with the facts of the state: which
 * slot migrated, which node failed over or died.
 *
 * Replies are the caller's; the checks do not free them.
 */
#ifndef RT_TOPOLOGY_CHECKS_H
#define RT_TOPOLOGY_CHECKS_H

#include <hiredis/hiredis.h>

#include "slotmap.h"

/* The three replies of one cluster state, from one node. */
typedef struct rt_state {
  const redisReply *shards, *slots, *nodes;
} rt_state;

/* Every slot of m has the primary rt_view says (id and port), and every
 * replica of m follows that primary in the view. all_replicas: the view's
 * replicas of each primary are all in m too. Returns 1 if so; otherwise
 * records failed checks and returns 0. */
int rt_check_map_vs_nodes(const rl_slotmap *m, const redisReply *nodes,
                          int all_replicas);

/* How many slots the primary on port serves in m. */
int rt_slots_of_port(const rl_slotmap *m, int port);

/* A fresh cluster: SLOTS lists no replica, SHARDS lists each as loading
 * with offset 0; both maps cover every slot and agree. */
void rt_check_fresh(const rt_state *s);
/* After writes: both list one online replica per primary. */
void rt_check_steady(const rt_state *s);
/* During a migration of slot from one port to another: the source still
 * owns the slot in both maps. */
void rt_check_migrating(const rt_state *s, int slot, int from_port,
                        int to_port);
/* After it: only that slot moved since before, to the target. */
void rt_check_migrated(const rt_state *before, const rt_state *s, int slot,
                       int from_port, int to_port);
/* After a manual failover: exactly the old primary's slots moved, to its
 * replica, and the old primary is now that one's replica. */
void rt_check_failover(const rt_state *before, const rt_state *s,
                       int old_port, int new_port);
/* After a primary died and its replica took over: SHARDS lists the dead
 * one with no slots and health fail, the map leaves it out, and exactly
 * its slots moved to the promoted replica, which has no replica. */
void rt_check_killed(const rt_state *before, const rt_state *s,
                     int dead_port, int promoted_port);
/* cluster-preferred-endpoint-type hostname, every node announcing
 * node-<port>.rlock.test but the one on plain_port: hosts are the
 * hostnames, and that node's "?" falls back to its IP. */
void rt_check_hostnames(const rt_state *s, int plain_port);
/* unknown-endpoint: hosts are the host the reply was asked of. */
void rt_check_unknown_endpoint(const rt_state *s);

/* Error replies, by capture name: the kind and what it carries. */
void rt_check_moved(const redisReply *r, int slot, const char *host,
                    int port);
void rt_check_ask(const redisReply *r, int slot, int port);
void rt_check_kind(const redisReply *r, int kind);
/* A batch script's per-key answers: pattern has '1' for the integer 1
 * and 'N' for a "non local key" error text, one per key. */
void rt_check_pcall_batch(const redisReply *r, const char *pattern);

/* Sentinel replies. */
void rt_check_addr(const redisReply *r, int port);
void rt_check_addr_unknown(const redisReply *r);
void rt_check_role_master(const redisReply *r, int replica_port_a,
                          int replica_port_b);
void rt_check_role_replica(const redisReply *r, int master_port);
void rt_check_role_sentinel(const redisReply *r, const char *name);
void rt_check_subscribed(const redisReply *r);
void rt_check_switch(const redisReply *r, const char *name, int old_port,
                     int new_port);
void rt_check_wait(const redisReply *r, long long acked);

#endif
