/*
 * The constructor that picks a master's kind from its address (master.h's
 * rl_master_new). It is the one file that names every kind, above them
 * all, so that master.c, which the kinds share, names none of them.
 */
#include "master.h"

rl_master *rl_master_single_new(const rl_master_url *url, uv_loop_t *loop,
                                const rl_conn_config *cfg, int idx);
rl_master *rl_master_sentinel_new(const rl_master_url *url, uv_loop_t *loop,
                                  const rl_conn_config *cfg, int idx);
rl_master *rl_master_cluster_new(const rl_master_url *url, uv_loop_t *loop,
                                 const rl_conn_config *cfg, int idx);

rl_master *rl_master_new(const rl_master_url *url, uv_loop_t *loop,
                         const rl_conn_config *cfg, int idx) {
  switch (url->kind) {
    case 0: return rl_master_single_new(url, loop, cfg, idx);
    case RL_TOPO_SENTINEL: return rl_master_sentinel_new(url, loop, cfg, idx);
    case RL_TOPO_CLUSTER: return rl_master_cluster_new(url, loop, cfg, idx);
    default: return NULL; /* a kind options.c refuses */
  }
}
