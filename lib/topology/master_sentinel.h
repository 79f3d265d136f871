/*
 * A master that is the master of a Sentinel group (redis-sentinel:// and
 * rediss-sentinel://, topology_url.h): master_sentinel.c says how it finds
 * the group's master, checks it, follows failovers and never writes to a
 * server the sentinels did not name. To the rest of rlock it is one
 * master of master.h, with one vote, whose server may change between two
 * commands.
 */
#ifndef RL_MASTER_SENTINEL_H
#define RL_MASTER_SENTINEL_H

#include "master.h"

/* How often the sentinels are asked again while all seems well, in case a
 * +switch-master message was missed (a subscriber connection down). */
#define RL_SENTINEL_RECHECK_MS 5000

/* Makes the master of url (kind RL_TOPO_SENTINEL, resolved); cfg is
 * copied. NULL when out of memory. */
rl_master *rl_master_sentinel_new(const rl_master_url *url, uv_loop_t *loop,
                                  const rl_conn_config *cfg, int idx);

#endif
