/*
 * What an error reply means for routing a command in a Redis Cluster (and,
 * for READONLY, under Sentinel). The texts are those of Redis 7.0's
 * clusterRedirectClient (src/cluster.c) and of scripts, as captured from a
 * real cluster (test/TOPOLOGY-FACTS.md §2 to §4, §8):
 *
 *   MOVED <slot> <host>:<port>   the slot lives there now: update the map
 *                                and send the command there
 *   ASK <slot> <host>:<port>     this one key is being migrated there:
 *                                send ASKING then the command, once, to
 *                                that node; the map stays as it is
 *   TRYAGAIN ...                 a multi-key command during a migration:
 *                                try again shortly, same node
 *   CLUSTERDOWN ...              the cluster, or this slot, has no serving
 *                                node now: try again shortly (and, for
 *                                "Hash slot not served", refresh the map)
 *   CROSSSLOT ...                the command's keys span slots: a bug in
 *                                the caller, never retried
 *   READONLY ...                 written to a replica: the node we thought
 *                                primary was demoted (Sentinel) or the map
 *                                is stale (a cluster EVAL on a demoted
 *                                primary, §8)
 *   ERR Script attempted to access a non local key in a cluster node
 *                                a script touched an undeclared key this
 *                                node does not have (another node's, or
 *                                one already migrated away): the map is
 *                                stale for some key of the batch
 *   ERR Script attempted to execute a command while the cluster is down
 *                                a script without declared keys ran while
 *                                the cluster was down: CLUSTERDOWN
 *
 * Anything else is an ordinary error reply, and a reply that is not an
 * error is a result. MOVED and ASK give "host:port" where host is the
 * node's preferred endpoint: an IPv4 or IPv6 address (not bracketed:
 * "::1:7000"), a hostname, "?" (a hostname was preferred but the node has
 * none), or empty (unknown-endpoint: "the host you asked"). Parsing is
 * pure and total: any bytes give a classification, never a crash.
 */
#ifndef RL_REDIRECT_H
#define RL_REDIRECT_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "rlock.h"

enum {
  RL_REPLY_RESULT = 0,  /* not an error reply */
  RL_REPLY_ERROR,       /* an ordinary error reply */
  RL_REPLY_MOVED,
  RL_REPLY_ASK,
  RL_REPLY_TRYAGAIN,
  RL_REPLY_CLUSTERDOWN,
  RL_REPLY_CROSSSLOT,
  RL_REPLY_READONLY,
  RL_REPLY_NONLOCAL
};

#define RL_REDIRECT_HOST_MAX 256

typedef struct rl_redirect {
  int kind;  /* RL_REPLY_* */
  int slot;  /* MOVED, ASK: 0..16383; else -1 */
  char host[RL_REDIRECT_HOST_MAX]; /* MOVED, ASK: where; "" when the
                                      server said "the host you asked" */
  int port;
  int host_unknown; /* MOVED, ASK: the server said "?" (no address) */
  int unserved;     /* CLUSTERDOWN Hash slot not served */
} rl_redirect;

/*
 * Splits "host:port" (len bytes, not NUL-terminated) at its last colon:
 * "10.0.0.1:7000", "::1:7000", "[::1]:7000", "node-3.example:7000",
 * ":7000" (empty host). The host is copied without brackets. 0, or
 * RLOCK_EPROTO when there is no port in 1..65535, the host does not fit
 * in cap, or it contains a NUL, a blank or a control byte.
 */
int rl_hostport_split(const char *s, size_t len, char *host, size_t cap,
                      int *port);

/* Classifies an error text (without the leading '-'), as in an error
 * reply's str. Returns out->kind. A MOVED or ASK whose slot or address
 * does not parse is an ordinary RL_REPLY_ERROR, so it fails the command
 * instead of sending it somewhere made up. */
int rl_redirect_parse(const char *text, size_t len, rl_redirect *out);

/* Classifies a reply: RL_REPLY_RESULT for anything but an error reply
 * (NULL included: there is no error to route on). Returns out->kind. */
int rl_redirect_classify(const redisReply *reply, rl_redirect *out);

#endif
