/*
 * Replica acknowledgement (master_ack.h): a durable command and its WAIT,
 * two commands on one connection, delivered to the sender as one.
 *
 * The two replies come in order on the connection, but the sender must
 * hear of the command once, with the contract of master.h, and only when
 * both are in is it known whether the command counts; so the script's
 * reply is copied (the connection frees its own) and held until WAIT's.
 * A deadline is told as soon as it is known to be missed: by the script
 * (its own deadline), by WAIT (ack_timeout_ms later), or by a WAIT that
 * answered too few; the reply follows as LATE, so that a grant is undone
 * like any late grant. WAIT counts what the connection wrote before it
 * ran; a WAIT that answers before the script (the script was written
 * again after a NOSCRIPT, behind it) acknowledges nothing of the script.
 */
#include "master_ack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "rlock.h"
#include "scripts.h"
#include "sentinel_proto.h"
#include "util.h"

typedef struct ack {
  rl_master *m;
  rl_mcmd *c;
  rl_mcmd_cb deliver;
  rl_ack_cb raw_cb; /* rl_ack_send_raw's, instead of the two above */
  void *raw_data;
  int script;
  int need;         /* the acknowledgements asked for (rl_ack_need) */
  int told_timeout; /* RL_CMD_TIMEOUT was delivered */
  int delivered;    /* the final status was delivered */
  int script_done, wait_done; /* their final callbacks came */
  int script_status;
  int wait_status;
  int wait_first; /* WAIT's reply came before the script's */
  int depth;      /* callbacks of this ack running */
  long long acked; /* WAIT's answer, -1 when none */
  redisReply *reply; /* a copy of the script's reply */
  char wait_error[120]; /* WAIT's error reply, if it sent one */
  uv_buf_t wait_buf;
  char wait_bytes[96];
} ack;

redisReply *rl_reply_copy(const redisReply *r) {
  redisReply *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->type = r->type;
  c->integer = r->integer;
  if (r->str != NULL) {
    c->str = malloc((size_t)r->len + 1);
    if (c->str == NULL) goto fail;
    memcpy(c->str, r->str, (size_t)r->len);
    c->str[r->len] = '\0';
    c->len = r->len;
  }
  if (r->elements > 0 && r->element != NULL) {
    c->element = calloc(r->elements, sizeof *c->element);
    if (c->element == NULL) goto fail;
    c->elements = r->elements;
    for (size_t i = 0; i < r->elements; i++)
      if ((c->element[i] = rl_reply_copy(r->element[i])) == NULL) goto fail;
  }
  return c;
fail:
  freeReplyObject(c);
  return NULL;
}

/* Whether a script's reply says it wrote something that replicas must
 * have (scripts.c documents the shapes): an acquire's grant, a renewal of
 * at least one key; any other durable script always writes. */
static int reply_wrote(int script, const redisReply *r) {
  if (r->type == REDIS_REPLY_ERROR) return 0;
  int d = rl_script_durable(script);
  if (d == RL_DURABLE_GRANT)
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
           r->element[0]->type == REDIS_REPLY_INTEGER &&
           r->element[0]->integer == 1;
  if (d == RL_DURABLE_RENEW) {
    if (r->type != REDIS_REPLY_ARRAY) return 1;
    for (size_t i = 0; i < r->elements; i++)
      if (r->element[i]->type == REDIS_REPLY_INTEGER &&
          r->element[i]->integer == 1)
        return 1;
    return 0;
  }
  return 1;
}

static void deliver(ack *a, rl_conn *node, redisReply *reply, int status) {
  if (a->raw_cb != NULL) {
    a->raw_cb(a->raw_data, node, reply, status);
    return;
  }
  rl_mcmd_cb cb = a->deliver != NULL ? a->deliver : a->c->cb;
  cb(a->c, node, reply, status);
}

static void tell_timeout(ack *a, rl_conn *node) {
  if (a->told_timeout || a->delivered) return;
  a->told_timeout = 1;
  deliver(a, node, NULL, RL_CMD_TIMEOUT);
}

/* The log line and the count of a write that does not count for want of
 * acknowledgement; at most one line a second per master. */
static void note_unacked(ack *a, rl_conn *node) {
  rl_master *m = a->m;
  atomic_fetch_add(&m->unacked, 1);
  uint64_t skipped;
  if (!rl_log_rate_pass(&m->ack_log, rl_now_ms(), &skipped)) return;
  char why[200], more[64] = "";
  if (a->wait_error[0] != '\0')
    snprintf(why, sizeof why, "WAIT failed: %s", a->wait_error);
  else if (a->acked >= 0 && a->wait_status == RL_CMD_REPLY && !a->wait_first)
    snprintf(why, sizeof why, "%lld of the %d replicas asked for had it "
             "within %llu ms", a->acked, a->need,
             (unsigned long long)m->ack_timeout_ms);
  else
    snprintf(why, sizeof why, "WAIT %d %llu got no answer in time", a->need,
             (unsigned long long)m->ack_timeout_ms);
  if (skipped > 0)
    snprintf(more, sizeof more, " (and %llu more since the last such line)",
             (unsigned long long)skipped);
  rl_master_log(m, node, RLOCK_LOG_WARN,
                "a %s was not acknowledged by replicas (%s): its vote does "
                "not count%s%s",
                rl_script_durable(a->script) == RL_DURABLE_GRANT ? "grant"
                : rl_script_durable(a->script) == RL_DURABLE_RENEW
                    ? "renewal"
                : rl_script_plain(a->script) == RL_SCRIPT_FENCE_MAX
                    ? "fencing write-back"
                    : "leader record write",
                why,
                rl_script_durable(a->script) == RL_DURABLE_GRANT
                    ? ", the grant is undone"
                    : "",
                more);
}

/* Delivers the final status once both replies are in, and frees the ack
 * once both commands are done with it and no callback of it is running
 * (a sender's callback may close the connection, which completes the
 * other command from inside it). */
static void settle(ack *a, rl_conn *node) {
  if (!(a->script_done && a->wait_done)) return;
  if (!a->delivered) {
    int st = a->script_status;
    int ok = a->reply != NULL && st == RL_CMD_REPLY && !a->told_timeout &&
             a->wait_status == RL_CMD_REPLY && !a->wait_first &&
             a->acked >= a->need;
    a->depth++;
    if (a->reply == NULL) {
      a->delivered = 1;
      deliver(a, node, NULL, st == RL_CMD_REFUSED ? RL_CMD_REFUSED
                                                  : RL_CMD_DROPPED);
    } else if (ok) {
      a->delivered = 1;
      deliver(a, node, a->reply, RL_CMD_REPLY);
    } else {
      if (st == RL_CMD_REPLY) note_unacked(a, node);
      tell_timeout(a, node);
      a->delivered = 1;
      deliver(a, node, a->reply, RL_CMD_LATE);
    }
    a->depth--;
  }
  if (a->depth == 0) {
    if (a->reply != NULL) freeReplyObject(a->reply);
    free(a);
  }
}

static void on_script(rl_cmd *cmd, redisReply *reply, int status) {
  ack *a = cmd->data;
  a->depth++;
  if (status == RL_CMD_TIMEOUT) {
    tell_timeout(a, cmd->conn);
    a->depth--;
    return;
  }
  a->script_done = 1;
  a->script_status = status;
  if (reply != NULL && (status == RL_CMD_REPLY || status == RL_CMD_LATE)) {
    a->reply = rl_reply_copy(reply);
    /* Nothing written, nothing to acknowledge: the reply stands. */
    if (a->reply != NULL && !a->delivered && !a->told_timeout &&
        status == RL_CMD_REPLY && !reply_wrote(a->script, a->reply)) {
      a->delivered = 1;
      deliver(a, cmd->conn, a->reply, RL_CMD_REPLY);
    }
  }
  a->depth--;
  settle(a, cmd->conn);
}

static void on_wait(rl_cmd *cmd, redisReply *reply, int status) {
  ack *a = cmd->data;
  a->depth++;
  if (status == RL_CMD_TIMEOUT) {
    tell_timeout(a, cmd->conn);
    a->depth--;
    return;
  }
  a->wait_done = 1;
  a->wait_status = status;
  a->wait_first = !a->script_done;
  if (reply != NULL && (status == RL_CMD_REPLY || status == RL_CMD_LATE)) {
    long long n;
    if (rl_wait_parse(reply, &n) == 0) {
      a->acked = n;
    } else if (reply->type == REDIS_REPLY_ERROR) {
      /* A user without WAIT (ACL), or WAIT refused: this will not mend
       * itself, so the owner hears it as a refusal. */
      snprintf(a->wait_error, sizeof a->wait_error, "%.*s",
               (int)(reply->len < 110 ? reply->len : 110), reply->str);
      rl_master_count_error(a->m, cmd->conn);
      if (a->m->on_error)
        a->m->on_error(a->m, cmd->conn, a->wait_error, 1, 0);
    }
  }
  a->depth--;
  settle(a, cmd->conn);
}

/* Writes the command and its WAIT; the ack is filled but for its
 * deadlines. until_us: the command's absolute deadline (0: now plus the
 * connection's command timeout). */
static int send_both(ack *a, rl_conn *node, const uv_buf_t *bufs,
                     unsigned nbufs, int no_resend, int clocked,
                     int64_t until_us, int idx) {
  rl_master *m = a->m;
  /* At most 59 bytes: 21 and 20 digits. */
  char n[24], t[24];
  const char *argv[3] = {"WAIT", n, t};
  a->need = rl_ack_need(m);
  size_t argvlen[3] = {4, rl_resp_put_i64(n, a->need),
                       rl_resp_put_u64(t, m->ack_timeout_ms)};
  size_t len = rl_resp_write(a->wait_bytes, 3, argv, argvlen);
  a->wait_buf = uv_buf_init(a->wait_bytes, (unsigned)len);
  /* Deadlines: the command's as usual, WAIT's ack_timeout_ms after it.
   * Before the handshake completes the connection starts both when it
   * does, and then WAIT shares the command's. */
  int64_t until = until_us, wait_until = 0;
  uint64_t t_ms = node->cfg->command_timeout_ms;
  if (until == 0 && rl_conn_ready(node) && t_ms > 0)
    until = rl_conn_now_us() + (int64_t)t_ms * 1000;
  if (until != 0) wait_until = until + (int64_t)m->ack_timeout_ms * 1000;
  int rc = rl_conn_send_until(node, bufs, nbufs, a->script, no_resend,
                              clocked, until, on_script, a, idx);
  if (rc != 0) return rc;
  if (rl_conn_send_until(node, &a->wait_buf, 1, -1, 0, 0, wait_until,
                         on_wait, a, idx) != 0) {
    /* Out of memory: the command went out unacknowledged. */
    a->wait_done = 1;
    a->wait_status = RL_CMD_DROPPED;
  }
  return 0;
}

int rl_ack_send(rl_master *m, rl_conn *node, rl_mcmd *c, const uv_buf_t *bufs,
                unsigned nbufs, int script, rl_mcmd_cb deliver_cb) {
  ack *a = calloc(1, sizeof *a);
  if (a == NULL) return RL_CONN_EDOWN;
  a->m = m;
  a->c = c;
  a->deliver = deliver_cb;
  a->script = script;
  a->acked = -1;
  int rc = send_both(a, node, bufs, nbufs, c->no_resend, c->clocked, 0,
                     c->idx);
  if (rc != 0) free(a);
  return rc;
}

int rl_ack_send_raw(rl_master *m, rl_conn *node, const uv_buf_t *bufs,
                    unsigned nbufs, int script, int clocked, int64_t until_us,
                    int idx, rl_ack_cb cb, void *data) {
  ack *a = calloc(1, sizeof *a);
  if (a == NULL) return RL_CONN_EDOWN;
  a->m = m;
  a->raw_cb = cb;
  a->raw_data = data;
  a->script = script;
  a->acked = -1;
  int rc = send_both(a, node, bufs, nbufs, 0, clocked, until_us, idx);
  if (rc != 0) free(a);
  return rc;
}
