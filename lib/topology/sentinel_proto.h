/*
 * The replies a Sentinel-following master reads, parsed into plain
 * structs: where the sentinels say the master is, the +switch-master
 * message that announces a failover, what a server says it is (ROLE), and
 * how many replicas acknowledged a write (WAIT). The shapes are those of
 * Redis 7.0.15 as captured from a real setup (test/TOPOLOGY-FACTS.md §7 to
 * §9):
 *
 *   SENTINEL GET-MASTER-ADDR-BY-NAME name  ["127.0.0.1", "42199"], or nil
 *                                           for a name it does not monitor
 *   +switch-master (a pub/sub message)     "name oldip oldport newip
 *                                           newport", single spaces
 *   ROLE on a master   ["master", offset, [[ip, "port", "offset"], ...]]
 *                      (ports and offsets of replicas are strings)
 *   ROLE on a replica  ["slave", ip, port, state, offset] (port an integer;
 *                      state connected, connect, connecting, sync,
 *                      handshake or none; offset -1 before a sync)
 *   ROLE on a sentinel ["sentinel", [name, ...]]
 *   WAIT n timeout     an integer: the replicas that acknowledged every
 *                      write of this connection so far
 *
 * Numbers are accepted as integers or as decimal strings wherever Redis
 * has used either, since the types differ by role. Every parser is total:
 * a reply of another shape gives RLOCK_EPROTO, never a crash.
 */
#ifndef RL_SENTINEL_PROTO_H
#define RL_SENTINEL_PROTO_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "rlock.h"

/* Failures, as public codes: RLOCK_EPROTO for a reply not in the
 * documented shape, RLOCK_EREDIS for an error reply, and RLOCK_ENOTFOUND
 * for GET-MASTER-ADDR-BY-NAME's nil (the sentinel does not monitor the
 * name: the master's name does not resolve, as ENOTFOUND says of a host
 * name). */

#define RL_SENTINEL_HOST_MAX 256
#define RL_SENTINEL_NAME_MAX 256
#define RL_ROLE_MAX_LISTED 16 /* replicas or names kept from ROLE */

typedef struct rl_hostport {
  char host[RL_SENTINEL_HOST_MAX];
  int port;
} rl_hostport;

/* SENTINEL GET-MASTER-ADDR-BY-NAME: 0 and *out, or RLOCK_E*. */
int rl_sentinel_parse_addr(const redisReply *reply, rl_hostport *out);

typedef struct rl_switch_master {
  char name[RL_SENTINEL_NAME_MAX];
  rl_hostport from, to;
} rl_switch_master;

/* The payload of a +switch-master message (len bytes). 0, or
 * RLOCK_EPROTO. */
int rl_sentinel_parse_switch(const char *payload, size_t len,
                             rl_switch_master *out);

/*
 * A push on a sentinel subscription: ["message", "+switch-master",
 * payload] (SUBSCRIBE) or ["pmessage", pattern, "+switch-master",
 * payload] (PSUBSCRIBE). 0 and *out for a +switch-master message, 1 for
 * any other message or push (a subscribe confirmation, another channel),
 * RLOCK_EPROTO for a +switch-master whose payload does not parse.
 */
int rl_sentinel_parse_push(const redisReply *push, rl_switch_master *out);

enum { RL_ROLE_MASTER = 1, RL_ROLE_REPLICA, RL_ROLE_SENTINEL };

/* A replica's link state as ROLE reports it on the replica. */
enum {
  RL_LINK_OTHER = 0, /* a word this parser does not know */
  RL_LINK_NONE,
  RL_LINK_CONNECT,
  RL_LINK_CONNECTING,
  RL_LINK_HANDSHAKE,
  RL_LINK_SYNC,
  RL_LINK_CONNECTED
};

typedef struct rl_role_replica {
  rl_hostport addr;
  long long offset;
} rl_role_replica;

typedef struct rl_role {
  int role;           /* RL_ROLE_* */
  long long offset;   /* master: its replication offset; replica: the
                         offset it has processed (-1 before a sync) */
  /* master: its replicas (the first RL_ROLE_MAX_LISTED; nreplicas counts
   * all). */
  int nreplicas;
  rl_role_replica replica[RL_ROLE_MAX_LISTED];
  /* replica: the master it follows and the link state. */
  rl_hostport master;
  int link;
  /* sentinel: the names it monitors (the first RL_ROLE_MAX_LISTED; nnames
   * counts all). */
  int nnames;
  char name[RL_ROLE_MAX_LISTED][RL_SENTINEL_NAME_MAX];
} rl_role;

/* ROLE: 0 and *out, or RLOCK_EREDIS or RLOCK_EPROTO. */
int rl_role_parse(const redisReply *reply, rl_role *out);

/* Whether a sentinel's ROLE lists a name: 1 or 0, or -1 when it was not
 * among the names kept but more were listed (ask GET-MASTER-ADDR-BY-NAME,
 * whose nil says no). */
int rl_role_monitors(const rl_role *role, const char *name);

/* WAIT: 0 and *acked (>= 0), or RLOCK_EREDIS or RLOCK_EPROTO. */
int rl_wait_parse(const redisReply *reply, long long *acked);

#endif
