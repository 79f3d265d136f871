/*
 * Which masters' votes count: a master that restarted (and may have
 * forgotten locks) does not count toward an acquisition until the
 * deployment's longest lease has passed since its start, and one server
 * reached through two addresses counts once. Loop thread only.
 */
#ifndef RL_QUARANTINE_H
#define RL_QUARANTINE_H

#include <stdint.h>

#include "conn.h"
#include "master.h"
#include "round.h"
#include "url.h"

struct rlock_client;

/* Sets up the client's records of its masters (c->quarantine), whose
 * resolved addresses are urls[c->nmasters], and the records command of
 * their handshakes (before the connections start). 0 or RLOCK_ENOMEM. */
int rl_quarantine_init(struct rlock_client *c, const rl_master_url *urls);
void rl_quarantine_free(struct rlock_client *c);

/* The quarantine length in ms: restart_quarantine_ms, or with
 * RLOCK_QUARANTINE_AUTO the larger of watchdog_timeout_ms and
 * max_lease_ms. */
uint64_t rl_quarantine_length(const struct rlock_client *c);

/* Master hooks, through the client's hooks node_state and node_info
 * (client.h): a node's command connection changed state (a single
 * master's that went down no longer vouches for its run_id); a node's
 * handshake reported the server's run_id and uptime. A single master's
 * restart records are read in every handshake of its connection
 * (rl_conn_set_handshake_extra, set up by rl_quarantine_init), before any
 * lock reply on it; a cluster's nodes are judged each by what this client
 * saw of it (a known address answering with a new run_id and a short
 * uptime). */
void rl_quarantine_on_state(rl_master *m, rl_conn *node, int state);
void rl_quarantine_on_info(rl_master *m, rl_conn *node, const char *run_id,
                           uint64_t uptime_ms);

/* 1 if node, which just answered for master idx, is in restart quarantine
 * (for masters whose server changes; a single master's quarantine is
 * rl_master_quarantined's, judged when the round is decided). round.c,
 * below this file, calls it through the client's node_quarantined hook
 * (client.h). */
int rl_node_quarantined(struct rlock_client *c, int idx,
                        const rl_conn *node);

/* 1 while master idx restarted less than the quarantine ago. */
int rl_master_quarantined(struct rlock_client *c, int idx);

/* 1 if master idx is the same server (same run_id) as a connected master
 * with a lower index: its votes do not count. */
int rl_master_duplicate(struct rlock_client *c, int idx);

/*
 * Settles a round's votes when it is decided, with what is known now
 * (records from other masters may arrive after a master's own reply): the
 * votes of duplicate masters, and with grants set the yes votes of
 * quarantined masters, become FAIL (a grant stays a grant: it is kept or
 * undone like any other). Returns 1 if the round is still decided
 * (r->outcome updated), 0 if it is not after all: it then waits for more
 * answers and its done hook runs again.
 */
int rl_votes_settle(rl_round *r, int grants);

#endif
