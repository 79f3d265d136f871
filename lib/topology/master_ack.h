/*
 * Replica acknowledgement of durable writes, for every kind of master.
 *
 * Replication is asynchronous: a master that grants a lock and dies before
 * a replica has the grant hands the lock, at the failover, to a replica
 * that never saw it. With rlock_options.replica_acks = n, a durable
 * command (a grant, a renewal that extends validity, a fencing
 * write-back: rl_mcmd.durable) is followed on the same connection, in the
 * same write, by WAIT n timeout, and its master's answer counts only if
 * the script's reply and WAIT's both came in time and WAIT says that at
 * least n replicas have everything this connection wrote, the script
 * included (WAIT cannot run inside a script: TOPOLOGY-FACTS.md section 7).
 *
 * Otherwise the master delivers the command as a command that missed its
 * deadline: RL_CMD_TIMEOUT, then RL_CMD_LATE with the script's reply. A
 * round counts that as a failed vote, and a grant as a late grant, which
 * the acquisition's ledger gives back (acquire.c) unless the attempt won
 * on the other masters, acknowledged; a renewal or write-back simply does
 * not count. A reply that wrote nothing (the lock is held by another, a
 * renewal that found the owner gone) needs no acknowledgement and is
 * delivered as it is, so that such answers keep their meaning.
 *
 * Fire-and-forget commands (undos, the write-back's catch-up of other
 * masters) are not followed by WAIT: nobody reads their answer, and a
 * WAIT would only hold the connection up.
 */
#ifndef RL_MASTER_ACK_H
#define RL_MASTER_ACK_H

#include "master.h"

/* 1 if c, sent to a node of m, is to be acknowledged by replicas. */
static inline int rl_ack_wanted(const rl_master *m, const rl_mcmd *c) {
  return m->acks > 0 && c->durable && !c->no_resend;
}

/*
 * Sends c's bytes (bufs, as c->encode gave them, and script, the
 * rl_script_id they run) to node, a connection of m, followed by WAIT.
 * The command's deadline is now plus the connection's command timeout
 * (from the end of its handshake if it has not completed), and WAIT's is
 * ack_timeout_ms later. Calls deliver (NULL: c->cb) with the contract of
 * master.h. 0, or the connection's RL_CONN_E* refusal and no callback.
 */
int rl_ack_send(rl_master *m, rl_conn *node, rl_mcmd *c, const uv_buf_t *bufs,
                unsigned nbufs, int script, rl_mcmd_cb deliver);

/*
 * The same for a master that routes a command itself (a cluster's, which
 * resends after a redirect): bufs and script as above, clocked as
 * rl_mcmd.clocked, until_us the attempt's absolute deadline in
 * rl_conn_now_us's clock (0: from now), idx for the connection's logs.
 * cb(data, node, reply, status) is called with the contract of master.h
 * (at most one RL_CMD_TIMEOUT, then one final status). 0, or the
 * connection's refusal and no callback.
 */
typedef void (*rl_ack_cb)(void *data, rl_conn *node, redisReply *reply,
                          int status);
int rl_ack_send_raw(rl_master *m, rl_conn *node, const uv_buf_t *bufs,
                    unsigned nbufs, int script, int clocked, int64_t until_us,
                    int idx, rl_ack_cb cb, void *data);

/* A copy of a reply, for freeReplyObject; NULL when out of memory. */
redisReply *rl_reply_copy(const redisReply *r);

#endif
