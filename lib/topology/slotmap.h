/*
 * The slot map of a Redis Cluster: for each of the 16384 hash slots, the
 * primary that serves it and that primary's replicas, as one node of the
 * cluster described them in its reply to CLUSTER SHARDS (Redis 7.0) or,
 * on a server that has no SHARDS, CLUSTER SLOTS. A cluster master (see
 * docs/architecture.md) keeps one map, routes each lock's commands by the
 * slot of its hash tag with one array lookup, builds a fresh map after
 * errors and from time to time, and compares the two to learn which slots
 * moved (shard subscriptions to redo, renewal batches to regroup).
 *
 * Building is pure: a hiredis reply tree in, a map or an error out. A
 * reply that is not the documented shape fails the build with
 * RLOCK_EPROTO and a reason in m->err; nothing in a reply can crash
 * it or make it read out of bounds. A failed build leaves an empty map, so
 * build into a new map and keep the old one until the new one is good.
 *
 * What a reply means (test/TOPOLOGY-FACTS.md, and src/cluster.c of Redis
 * 7.0.15 for the address rules):
 *   - SHARDS lists every primary, a failed one too, as a shard of its own
 *     with no slots ("health", "fail"); shards without slots are skipped.
 *   - SLOTS leaves out a replica that is failed or whose replication
 *     offset is still 0 (a fresh cluster); SHARDS lists it as "loading".
 *   - The address to connect to is the node's "endpoint" (the server's
 *     cluster-preferred-endpoint-type: its IP by default, or its
 *     hostname); "?" means a hostname was preferred but the node has none,
 *     so its IP is used; an empty or nil endpoint (unknown-endpoint) means
 *     "the host you asked", the from_host argument.
 *   - SHARDS gives "port" (plain) and, on a TLS cluster, "tls-port"; a
 *     client that uses TLS takes tls-port when there is one. SLOTS gives
 *     one port, already the one for the asking connection's transport.
 */
#ifndef RL_SLOTMAP_H
#define RL_SLOTMAP_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "rlock.h"
#include "slot.h"

#define RL_SLOTMAP_NONE 0xFFFF /* owner[] of a slot nobody serves */
#define RL_SLOTMAP_ID_MAX 41   /* a node id is 40 hex digits */
#define RL_SLOTMAP_HOST_MAX 256

/* Build failures are public codes: RLOCK_EPROTO (not the shape of a
 * SHARDS/SLOTS reply), RLOCK_ENOMEM, and RLOCK_EREDIS (an error reply: for
 * SHARDS on a server before 7.0, try SLOTS); the text is in m->err. */

/* Where a map came from. */
enum { RL_SLOTMAP_FROM_SHARDS = 1, RL_SLOTMAP_FROM_SLOTS, RL_SLOTMAP_FROM_MOVED };

/* A node's health: SHARDS says it; SLOTS lists available replicas only
 * (so they are ONLINE) and says nothing of primaries (UNKNOWN). */
enum { RL_NODE_UNKNOWN = 0, RL_NODE_ONLINE, RL_NODE_LOADING, RL_NODE_FAIL };

typedef struct rl_slotnode {
  char id[RL_SLOTMAP_ID_MAX];           /* "" when unknown (from MOVED) */
  char host[RL_SLOTMAP_HOST_MAX];       /* the address to connect to */
  char hostname[RL_SLOTMAP_HOST_MAX];   /* its hostname when known, else
                                           "": the name a TLS certificate
                                           is checked against */
  int port;                             /* the port for this client */
  int primary;                          /* 1 for a primary, 0 replica */
  int health;                           /* RL_NODE_* */
  long long offset;                     /* replication offset; -1 if not
                                           given */
  int shard;                            /* its index in shards[] */
} rl_slotnode;

/* A primary and its replicas: nodes[first] is the primary, the next n - 1
 * are its replicas. */
typedef struct rl_slotshard {
  int first;
  int n;
  int nslots; /* how many slots it serves */
} rl_slotshard;

typedef struct rl_slotmap {
  uint16_t owner[RL_SLOTS]; /* shard index, or RL_SLOTMAP_NONE */
  rl_slotnode *nodes;
  int nnodes, cap_nodes;
  rl_slotshard *shards;
  int nshards, cap_shards;
  int from;      /* RL_SLOTMAP_FROM_*, 0 for an empty map */
  int covered;   /* slots with an owner */
  char err[160]; /* why the last build failed */
} rl_slotmap;

/* An empty map (every slot unserved). */
void rl_slotmap_init(rl_slotmap *m);
/* Frees the map's memory; it is then empty, as after init. */
void rl_slotmap_free(rl_slotmap *m);

/*
 * Builds *m (whatever it held is freed first) from a CLUSTER SHARDS or a
 * CLUSTER SLOTS reply. tls: the client connects with TLS. from_host: the
 * host the reply was asked of, for nodes whose endpoint is unknown; NULL
 * to fall back to their IP. 0, or RLOCK_E* with m empty and m->err
 * saying why.
 */
int rl_slotmap_from_shards(rl_slotmap *m, const redisReply *reply, int tls,
                           const char *from_host);
int rl_slotmap_from_slots(rl_slotmap *m, const redisReply *reply, int tls,
                          const char *from_host);

/* The primary serving a slot, or NULL when the slot is out of range or
 * nobody serves it. O(1). */
const rl_slotnode *rl_slotmap_primary(const rl_slotmap *m, int slot);
/* The shard of a slot, or -1. */
int rl_slotmap_shard(const rl_slotmap *m, int slot);
/* The i-th replica of the slot's primary, or NULL past the last one. */
const rl_slotnode *rl_slotmap_replica(const rl_slotmap *m, int slot, int i);

/*
 * The distinct primaries that serve at least one slot, in shard order:
 * fills out[0 .. min(n, cap)) and returns n. For the tool's scan and
 * status, and for per-node watchdog batches.
 */
int rl_slotmap_primaries(const rl_slotmap *m, const rl_slotnode **out,
                         int cap);

/* 1 if two nodes are the same server for routing: same address and port,
 * and the same id when both ids are known. */
int rl_slotnode_same(const rl_slotnode *a, const rl_slotnode *b);

/*
 * Which slots a primary serves in b but not in a: a slot moved when its
 * primary differs (rl_slotnode_same), or it is served in one map only.
 * Sets bit s (moved[s / 8] & (1 << s % 8)) of moved, which has
 * RL_SLOTS / 8 bytes, or NULL when only the count is wanted. Returns how
 * many slots moved.
 */
int rl_slotmap_diff(const rl_slotmap *a, const rl_slotmap *b,
                    unsigned char *moved);

/*
 * A MOVED slot host:port: the slot is now served by that address. If a
 * primary of the map has that address, the slot is given to it and this
 * returns 0. Otherwise (a promoted replica, a node the map does not know)
 * a primary with that address and no id is added, the slot is given to
 * it, and this returns 1: the map is stale, refresh it soon. A negative
 * RLOCK_E* on bad arguments or no memory, with the map unchanged.
 */
int rl_slotmap_apply_moved(rl_slotmap *m, int slot, const char *host,
                           int port);

#endif
