/*
 * A master: what one entry of the masters list is to the rest of rlock.
 *
 * A quorum round counts one vote per master, but the server behind a
 * master need not be one fixed server: a Redis Cluster routes each lock to
 * the node that serves its slot, and a Sentinel group's master changes at
 * a failover. So rounds, pub/sub, the watchdog and the tool talk to an
 * rl_master, and each kind is one file behind the table of operations
 * below: master_single.c (one rl_conn, as every master was before),
 * master_cluster.c (a slot map and one rl_conn per node), and, later,
 * master_sentinel.c. rl_conn stays what it is: one connection to one
 * server. docs/architecture.md is the design.
 *
 * Commands. A command is an rl_mcmd: the sender fills it, the master
 * decides where it goes and writes it there, and calls back with the
 * contract rl_conn has (conn.h): at most one RL_CMD_TIMEOUT (not final)
 * when the command's deadline passes, then exactly one final status
 * (REPLY, LATE, DROPPED, REFUSED). The callback names the node whose reply
 * it is, so that every per-server rule (the clock an acquire's deadline is
 * in, restart quarantine, error counts) applies to the server that
 * answered. The deadline is fixed when the command is sent (now plus the
 * master timeout) and covers every redirect and retry a master makes, so
 * a redirect never lets a stale grant count.
 *
 * The bytes of a command may differ by the kind of node they go to (a
 * cluster node runs scripts that publish with SPUBLISH, and batches that
 * pass their keys as arguments): the master asks the command's encode
 * hook for them, with its flavor, before each write.
 *
 * Pub/sub. Each master has subscriber connections of its own (single: one;
 * cluster: one per node, for the shard channels of that node's slots),
 * which pubsub/ drives through rl_master_sub_* and hears from through the
 * hooks it registers. A subscription is made where the master says (it
 * routes by the channel's slot) and ends where it was made.
 *
 * Node connections (the rl_conn pointers the hooks, node_of and
 * primaries give) stay valid until the master is freed, whether or not
 * the node still serves anything: a pinned command to a node that no
 * longer does simply fails or is redirected.
 *
 * Loop thread only, except rl_master_metrics, which reads atomics.
 */
#ifndef RL_MASTER_H
#define RL_MASTER_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "conn.h"
#include "rlock.h"
#include "url.h"
#include "util.h"

typedef struct rl_master rl_master;
typedef struct rl_mcmd rl_mcmd;
typedef struct rl_msub rl_msub;

/* Kinds of master, and the flavor of node a command is encoded for. */
enum { RL_MASTER_SINGLE = 1, RL_MASTER_CLUSTER, RL_MASTER_SENTINEL };
enum {
  RL_FLAVOR_PLAIN = 0,  /* a standalone server: PUBLISH, declared keys */
  RL_FLAVOR_CLUSTER = 1 /* a cluster node: SPUBLISH, batches in ARGV */
};

/* A command's slot when it has no key (any primary will do). */
#define RL_MCMD_ANY_SLOT (-1)

/* The command's outcome; see the top of this file. node is the connection
 * whose reply (or silence) it is: NULL when it was never written. */
typedef void (*rl_mcmd_cb)(rl_mcmd *c, rl_conn *node, redisReply *reply,
                           int status);

/*
 * The command's bytes for a node of the given flavor: fills bufs (at most
 * RL_CONN_MAX_BUFS, valid until the final callback) and *script (the
 * rl_script_id they run by EVALSHA, for a NOSCRIPT fallback, or -1), and
 * returns how many buffers. 0: the command has no form for that flavor
 * (the send fails).
 */
typedef unsigned (*rl_mcmd_encode)(rl_mcmd *c, int flavor, uv_buf_t *bufs,
                                   int *script);

struct rl_mcmd {
  /* Filled by the sender. */
  int slot;        /* the slot of the command's keys, or RL_MCMD_ANY_SLOT */
  rl_conn *node;   /* non-NULL: this node of the master (as node_of or
                      primaries gave it); no routing */
  int no_resend;   /* fire-and-forget (conn.h) */
  int clocked;     /* the connection appends a master-clock deadline */
  int durable;     /* it grants, renews or raises a fencing counter: a
                      master that confirms replication (WAIT) does it for
                      this command */
  rl_mcmd_encode encode;
  rl_mcmd_cb cb;
  void *data;
  int idx;
  /* The master's, while the command is in flight. */
  void *priv;
};

/* One SUBSCRIBE or UNSUBSCRIBE of one channel (SSUBSCRIBE, SUNSUBSCRIBE
 * on a cluster). */
struct rl_msub {
  const char *channel; /* valid until the callback */
  size_t len;
  int unsubscribe;
  rl_conn *where;      /* unsubscribe: the connection it was made on */
  /* Exactly once: REPLY or LATE with the reply of where (a confirmation,
   * or an error reply), or DROPPED with reply NULL (never confirmed). */
  void (*cb)(rl_msub *s, rl_conn *where, const redisReply *reply,
             int status);
  void *data;
};

/* What pub/sub hears from a master; see rl_master_sub_start. */
typedef struct rl_master_sub_hooks {
  /* A message on a channel (["message" or "smessage", channel, ...]). */
  void (*message)(void *data, rl_master *m, const char *ch, size_t len);
  /* The server ended a subscription on where without being asked (the
   * channel's slot left that node): it is gone there. */
  void (*dropped)(void *data, rl_master *m, rl_conn *where, const char *ch,
                  size_t len);
  /* A subscriber connection went down: every subscription on it is gone. */
  void (*down)(void *data, rl_master *m, rl_conn *where);
  /* Subscriptions may now succeed where they could not, or belong
   * elsewhere (a subscriber connection became ready, the slot map
   * changed): bring every channel in line. */
  void (*resync)(void *data, rl_master *m);
  /* Subscriber connection events, for the owner's log. */
  void (*log)(void *data, rl_master *m, int level, const char *msg);
  /* After rl_master_sub_close, once every subscriber connection closed. */
  void (*closed)(void *data, rl_master *m);
} rl_master_sub_hooks;

typedef struct rl_master_ops {
  /* Starts connecting. 0 or a negative libuv error. */
  int (*start)(rl_master *m);
  /* 0, and later callbacks; or RL_CONN_EDOWN / RL_CONN_EREFUSED, and no
   * callback. */
  int (*send)(rl_master *m, rl_mcmd *c);
  /* Writes what was sent since the last write now. */
  void (*flush)(rl_master *m);
  /* The connections of the nodes that serve lock keys (single: the one;
   * cluster: every primary of the map), into out[0 .. min(n, cap)), and
   * n. */
  int (*primaries)(rl_master *m, rl_conn **out, int cap);
  /* The node that serves a slot now, for grouping batches by node; NULL
   * when none does (yet). */
  rl_conn *(*node_of)(rl_master *m, int slot);
  /* 1 when commands can be served: the connection is ready (single), the
   * slot map is known and every primary's connection is ready (cluster). */
  int (*ready)(const rl_master *m);
  /* 1 when the server refused the handshake (a password, a database), so
   * that waiting longer will not help. */
  int (*refused)(const rl_master *m);
  /* Pub/sub; see the functions below. */
  void (*sub_start)(rl_master *m);
  int (*sub_send)(rl_master *m, rl_msub *s);
  int (*sub_up)(rl_master *m, const char *ch, size_t len);
  rl_conn *(*sub_where)(rl_master *m, const char *ch, size_t len);
  void (*sub_close)(rl_master *m);
  /* Metrics, from any thread. */
  void (*metrics)(rl_master *m, rlock_master_metrics *out);
  /* Closes every connection; on_closed follows once all have closed.
   * Commands complete DROPPED, except fire-and-forget ones not yet
   * written, which are written first (conn.h). */
  void (*close)(rl_master *m);
  void (*free)(rl_master *m);
} rl_master_ops;

struct rl_master {
  const rl_master_ops *ops;
  int kind;  /* RL_MASTER_* */
  int idx;   /* its position in the masters list */
  uv_loop_t *loop;
  rl_conn_config cfg;     /* for its command connections (a copy) */
  rl_conn_config sub_cfg; /* for its subscriber connections */
  char name[300];         /* as shown in logs: without a password */
  /* Restarts the owner noticed (quarantine.c), and error replies the
   * rounds counted (rl_master_count_error), for metrics. */
  atomic_uint_fast64_t restarts;
  atomic_uint_fast64_t errors;
  /* Replica acknowledgement (master_ack.h), set by the owner before
   * rl_master_start: a durable command is followed by WAIT acks
   * ack_timeout_ms on its connection; acks 0 is off. Counted for metrics:
   * durable writes that were not acknowledged in time (unacked), and
   * failovers followed (a Sentinel group's master moved). */
  int acks;
  uint64_t ack_timeout_ms;
  /* Loop thread: the most replicas the serving node has listed since the
   * master kind confirmed it (a Sentinel master's ROLE, asked again while
   * fewer than acks), or -1 when not known. A write then needs
   * min(acks, acks_have) acknowledgements (rl_ack_need): a master
   * promoted by a failover has fewer replicas than before, and every
   * replica it has is what can be had. 0 (no replica) only for a master
   * known to have taken over from the one in use (master_sentinel.c):
   * no replica a failover could promote lacks the write, and a replica
   * that joins copies its data; any other with none is counted 1. */
  int acks_have;
  atomic_uint_fast64_t unacked;
  atomic_uint_fast64_t failovers;
  rl_log_rate ack_log; /* loop thread: unacked writes logged */

  /* Hooks for the owner, each optional, set before rl_master_start. */
  void *data;
  /* Every state change of a node's command connection; node NULL when
   * what changed is the master's own (a Sentinel master refused by its
   * sentinels: rl_master_refused changed). */
  void (*on_node_state)(rl_master *m, rl_conn *node, int state);
  /* A node's handshake reported its run_id and uptime (conn.h on_info). */
  void (*on_node_info)(rl_master *m, rl_conn *node, const char *run_id,
                       uint64_t uptime_ms);
  /* A failed connection attempt (conn.h on_error). */
  void (*on_error)(rl_master *m, rl_conn *node, const char *text,
                   int refused, int tls);
  /* Events for the owner's log. node is NULL for the master's own. */
  void (*on_log)(rl_master *m, rl_conn *node, int level, const char *msg);
  /* After rl_master_close, once every connection has closed. */
  void (*on_closed)(rl_master *m);

  /* Pub/sub's hooks (rl_master_sub_start). */
  const rl_master_sub_hooks *sub_hooks;
  void *sub_data;
};

/*
 * Makes the master an address stands for (url.h): a single server, or a
 * cluster; cfg is copied. The hooks are set on the result, then
 * rl_master_start. NULL when out of memory.
 */
rl_master *rl_master_new(const rl_master_url *url, uv_loop_t *loop,
                         const rl_conn_config *cfg, int idx);

/* The command a single master's connection carries as cmd (its data), or
 * NULL when cmd is not one of those (the connection's own, another
 * sender's): for a caller's own round (lib/lock/fast.c). */
rl_mcmd *rl_master_single_mcmd(const rl_cmd *cmd);

/* The acknowledgements a durable write on m needs now (see acks_have). */
static inline int rl_ack_need(const rl_master *m) {
  if (m->acks_have < 0 || m->acks_have >= m->acks) return m->acks;
  return m->acks_have;
}

/* The connection a master's node connections all point back from:
 * conn->master. */
static inline rl_master *rl_conn_master(const rl_conn *node) {
  return node->master;
}

static inline int rl_master_start(rl_master *m) { return m->ops->start(m); }
static inline int rl_master_send(rl_master *m, rl_mcmd *c) {
  return m->ops->send(m, c);
}
static inline void rl_master_flush(rl_master *m) { m->ops->flush(m); }
static inline int rl_master_primaries(rl_master *m, rl_conn **out, int cap) {
  return m->ops->primaries(m, out, cap);
}
static inline rl_conn *rl_master_node_of(rl_master *m, int slot) {
  return m->ops->node_of(m, slot);
}
static inline int rl_master_ready(const rl_master *m) {
  return m->ops->ready(m);
}
static inline int rl_master_refused(const rl_master *m) {
  return m->ops->refused(m);
}
static inline void rl_master_metrics(rl_master *m, rlock_master_metrics *o) {
  m->ops->metrics(m, o);
}
static inline void rl_master_close(rl_master *m) { m->ops->close(m); }
/* Frees a master that has closed (or never started). */
static inline void rl_master_free(rl_master *m) { m->ops->free(m); }

/* Counts an error reply from a node of m (NULL: none in particular). */
static inline void rl_master_count_error(rl_master *m, rl_conn *node) {
  if (node != NULL) node->errors++;
  m->errors++;
}

/* The flavor of a master's nodes. */
static inline int rl_master_flavor(const rl_master *m) {
  return m->kind == RL_MASTER_CLUSTER ? RL_FLAVOR_CLUSTER : RL_FLAVOR_PLAIN;
}

/*
 * Pub/sub. sub_start registers the hooks and starts the subscriber side
 * (connections are made as they are needed). sub_send sends a SUBSCRIBE
 * (routed by the channel's slot: hash tags decide it, as for keys) or an
 * UNSUBSCRIBE (to s->where): 0 and exactly one callback later, or -1 when
 * it cannot be sent now (no ready connection there; resync says when to
 * try again), and no callback. sub_up: 1 if a subscription of the channel
 * could be made now. sub_close closes the subscriber connections; hooks->
 * closed follows (at once when none was made).
 */
static inline void rl_master_sub_start(rl_master *m,
                                       const rl_master_sub_hooks *h,
                                       void *data) {
  m->sub_hooks = h;
  m->sub_data = data;
  m->ops->sub_start(m);
}
static inline int rl_master_sub_send(rl_master *m, rl_msub *s) {
  return m->ops->sub_send(m, s);
}
static inline int rl_master_sub_up(rl_master *m, const char *ch, size_t len) {
  return m->ops->sub_up(m, ch, len);
}
/* The subscriber connection a subscription of ch belongs on now (the
 * node that serves its slot), or NULL: one made elsewhere is stale. */
static inline rl_conn *rl_master_sub_where(rl_master *m, const char *ch,
                                           size_t len) {
  return m->ops->sub_where(m, ch, len);
}
static inline void rl_master_sub_close(rl_master *m) { m->ops->sub_close(m); }

/* Shared by the kinds (master.c). */

/* Initializes the common part; the kind's constructor calls it. */
void rl_master_init(rl_master *m, const rl_master_ops *ops, int kind,
                    const rl_master_url *url, uv_loop_t *loop,
                    const rl_conn_config *cfg, int idx);
/* A node's address as logs show it: "host:port", "[v6]:port" or the
 * socket path. */
void rl_node_address(const rl_conn *node, char *buf, size_t size);
/* The hooks, called by the kinds (each checks for NULL). */
void rl_master_log(rl_master *m, rl_conn *node, int level, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));
/* Parses a subscriber message or push: 1 if it is a message ("message",
 * "smessage") and sets *ch, *len; 2 if it is an unasked unsubscribe
 * ("unsubscribe", "sunsubscribe"); else 0. */
int rl_master_push_kind(const redisReply *r, const char **ch, size_t *len);
/* A subscriber connection's on_push and on_log, for every kind of master:
 * a message or a dropped channel goes to the owner's sub_hooks, and so
 * does a log line. */
void rl_master_sub_push(rl_conn *conn, const redisReply *msg);
void rl_master_sub_log(rl_conn *conn, int level, const char *msg);
/* Whether a subscriber reply on conn was sent by a stale view (a cluster's
 * MOVED): then the master learns from it and the subscription counts as
 * dropped, for pub/sub to try again. Optional, per kind of master. */
typedef int (*rl_msub_stale_fn)(rl_master *m, rl_conn *conn,
                                const redisReply *reply);
/* Writes s's SUBSCRIBE or UNSUBSCRIBE (shard: SSUBSCRIBE/SUNSUBSCRIBE) on
 * conn, for every kind of master; s->cb gets the reply, or DROPPED for
 * none (or a stale one). 0, or -1 when conn is not ready or memory ran
 * out, and then s->cb is not called. */
int rl_master_sub_write(rl_master *m, rl_conn *conn, rl_msub *s, int shard,
                        rl_msub_stale_fn stale);

#endif
