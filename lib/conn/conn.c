/*
 * Master connections: Redis over a stream. See conn.h for the contract;
 * this comment says why it is built the way it is.
 *
 * Replies on one connection come back in the order commands were written,
 * so every written command waits in one FIFO (pending) and each parsed
 * reply belongs to its head. The handshake's commands are in that FIFO
 * too, ahead of everything else, so that their replies, INFO's included,
 * are handled before any other. A subscriber connection differs in one
 * way: messages come at any time, so they are told apart by their shape
 * and go to on_push; the replies to SUBSCRIBE and UNSUBSCRIBE still come
 * in order.
 *
 * Deadlines: the FIFO's deadlines only grow, so one timer per connection,
 * armed for the oldest command still in time, is enough. When it fires,
 * the socket is read first: on a loaded machine the loop may have been
 * late, and a reply already sitting in the kernel's buffer is not a
 * timeout. A command that passes its deadline stays in the FIFO (its
 * reply will come, or the connection drops), and the connection counts as
 * stalled, not up, until some reply arrives.
 *
 * Writes are batched: a command is queued (unsent) and the queue is
 * written by a prepare handle, which runs once per loop iteration just
 * before the loop blocks, or at once by rl_conn_flush. Many commands
 * queued in one iteration cost one write.
 *
 * The master's clock: a clocked command tells the master a deadline in
 * the master's own clock, from a lower bound of its offset that one TIME
 * gives (clock_sample). That bound is low by however long the reply took
 * to be read after the master ran TIME, and a bound low by more than the
 * command timeout makes the master refuse every grant as late. One slow
 * reply in a handshake (the master stopped before it wrote it, or this
 * loop held up: a slow log hook, a loaded machine, valgrind) then cost
 * the master's every vote until the next periodic TIME, 30 s later, and
 * the connection looked up all along. So a sample whose bounds lie
 * further apart than a quarter of the command timeout is followed by
 * another TIME at once, and then, while they stay that far apart, by
 * more with a backoff (clock_resample).
 *
 * A master gone from the network without a reset (a partition, a server
 * killed behind one) leaves a connection that TCP would keep for many
 * minutes and resume only at its next retransmission after the heal,
 * up to two minutes later. The stream is told to end it once the master
 * has left data unacknowledged at the TCP level for peer_timeout_ms
 * (TCP_USER_TIMEOUT, and keepalive for an idle one): then it fails like
 * any dropped connection, its commands complete DROPPED, and attempts
 * resume with the backoff below. A stopped or slow master still
 * acknowledges, so its connection is kept and its late replies are read.
 *
 * Attempts: the first connection attempt is waited for (the client is
 * usable the moment it is opened); later ones are not (a dead master
 * costs a round nothing). The backoff between attempts doubles from 50 ms
 * to 2 s with jitter, and is reset only by a complete handshake, so a
 * master that accepts TCP but refuses AUTH is not hammered. A connect the
 * host's kernel turned down at once (nothing listens: a master being
 * restarted) costs the master nothing, and there the backoff stops
 * doubling at 250 ms: a restarted master is met, and its restart learned
 * (quarantine.c), within a quarter of a second of its start, not up to
 * 2 s later.
 *
 * Host names: the client resolves them at open, on the opener's thread.
 * One that does not resolve then (DNS down for one record) leaves the
 * master down rather than failing the open, so a majority can serve: its
 * attempts resolve the name first, with uv_getaddrinfo (hiredis and
 * getaddrinfo would block the loop), each failure an attempt failed with
 * the usual backoff, until an address is had; the connection keeps it.
 * A close waits for a resolution in flight (libuv cannot abandon one that
 * runs; the resolver's own timeout bounds it).
 */
#include "conn.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "reply.h"
#include "resp.h"
#include "rlock.h"
#include "scripts.h"
#include "util.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define BACKOFF_REFUSED_MAX_MS 250
#define CLOCK_REFRESH_MS 30000
#define CLOCK_RESAMPLE_MS 50 /* the first wait between quick TIMEs */
#define CLOCK_DRIFT_PPM 500 /* the fastest a kernel slews a clock */

/* How long a master may leave data unacknowledged at the TCP level before
 * its connection counts as dead (stream.c, set_peer_timeout): well above
 * the connect and command timeouts, so that only a peer that is gone from
 * the network, not a slow one, is cut; at least 2 s. */
static unsigned peer_timeout_ms(const rl_conn_config *cfg) {
  uint64_t t = 2000;
  if (cfg->connect_timeout_ms * 2 > t) t = cfg->connect_timeout_ms * 2;
  if (cfg->command_timeout_ms * 10 > t) t = cfg->command_timeout_ms * 10;
  return t > 600000 ? 600000 : (unsigned)t;
}

/* Internal commands, by what their reply is for. */
enum {
  K_USER = 0,
  K_AUTH,
  K_SELECT,
  K_SETNAME,
  K_INFO,
  K_TIME,
  K_EXTRA,
  K_SCRIPT,
  K_REFRESH, /* the periodic TIME */
  K_LOAD     /* SCRIPT LOAD before a NOSCRIPT resend */
};

static void connect_now(rl_conn *conn);
static void maybe_closed(rl_conn *conn);
static const char *tls_hint(const rl_conn *conn, const char *why, char *buf,
                            size_t size);
static void on_timer(uv_timer_t *t);
static void on_retry(uv_timer_t *t);
static void on_refresh(uv_timer_t *t);
static void on_prepare(uv_prepare_t *p);
static int64_t aged_offset(const rl_conn *conn, int64_t now_us);
static int64_t aged_upper(const rl_conn *conn, int64_t now_us);
static void attempt_failed(rl_conn *conn, const char *why, int refused,
                           int tls);

/* --- small things ------------------------------------------------------------ */

int64_t rl_conn_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void conn_log(rl_conn *conn, int level, const char *msg) {
  if (conn->on_log) conn->on_log(conn, level, msg);
}

static void set_err(rl_conn *conn, const char *text) {
  snprintf(conn->err, sizeof conn->err, "%s", text);
  uv_mutex_lock(&conn->errmu);
  memcpy(conn->err_copy, conn->err, sizeof conn->err);
  uv_mutex_unlock(&conn->errmu);
}

void rl_conn_error_text(rl_conn *conn, char *buf, size_t size) {
  if (size == 0) return;
  uv_mutex_lock(&conn->errmu);
  snprintf(buf, size, "%s", conn->err_copy);
  uv_mutex_unlock(&conn->errmu);
}

static void update_up(rl_conn *conn) {
  atomic_store(&conn->up, conn->state == RL_CONN_READY && !conn->stalled);
}

static void set_state(rl_conn *conn, int state) {
  conn->state = state;
  update_up(conn);
  if (conn->on_state) conn->on_state(conn, state);
}

/* --- commands ------------------------------------------------------------------ */

static rl_cmd *cmd_new(rl_conn *conn, int kind, rl_cmd_cb cb, void *data,
                       int idx) {
  rl_cmd *cmd = rl_zalloc(sizeof *cmd);
  if (cmd == NULL) return NULL;
  cmd->conn = conn;
  cmd->kind = kind;
  cmd->script = -1;
  cmd->cb = cb;
  cmd->data = data;
  cmd->idx = idx;
  return cmd;
}

/* An internal command that carries its own bytes. */
static rl_cmd *internal_new(rl_conn *conn, int kind, rl_cmd_cb cb, int argc,
                            const char **argv, const size_t *argvlen) {
  size_t len = rl_resp_size(argc, argv, argvlen);
  rl_cmd *cmd = rl_zalloc(sizeof *cmd + len);
  if (cmd == NULL) return NULL;
  char *bytes = (char *)(cmd + 1);
  rl_resp_write(bytes, argc, argv, argvlen);
  cmd->conn = conn;
  cmd->kind = kind;
  cmd->script = -1;
  cmd->cb = cb;
  cmd->data = conn;
  cmd->nbufs = 1;
  cmd->bufs[0] = uv_buf_init(bytes, (unsigned)len);
  return cmd;
}

/* Starts a command's deadline now: on the loop's clock for the timer, and
 * on rl_conn_now_us's for the master-clock deadline of a clocked command.
 * The loop caches its time at the start of each iteration, and one
 * iteration may be long (thousands of requests drained, a slow machine):
 * a deadline counted from that stale time would pass early, failing a
 * master that was in time. So the loop's time is brought up to date
 * first; the two readings are then one moment, give or take the loop
 * clock's coarseness (a few ms, by which the master's deadline may fall
 * after the timer's: a grant in between is a late grant, undone). */
static void start_deadline(const rl_conn *conn, rl_cmd *cmd) {
  if (cmd->fixed_until_us != 0) {
    /* The loop's clock is at or before now: the timer fires at or before
     * the deadline the master is told. */
    int64_t left_us = cmd->fixed_until_us - rl_conn_now_us();
    uint64_t left_ms = left_us > 0 ? (uint64_t)(left_us / 1000) : 0;
    cmd->deadline = uv_now(conn->loop) + left_ms;
    cmd->until_us = cmd->fixed_until_us;
    return;
  }
  uint64_t t = conn->cfg->command_timeout_ms;
  if (t == 0) {
    cmd->deadline = 0;
    cmd->until_us = 0;
    return;
  }
  uv_update_time(conn->loop);
  cmd->deadline = uv_now(conn->loop) + t;
  cmd->until_us = rl_conn_now_us() + (int64_t)t * 1000;
}

/* Arms the timer for the oldest command still in time, if any. */
static void arm_timer(rl_conn *conn) {
  rl_list *lists[2] = {&conn->pending, &conn->unsent};
  uint64_t now = uv_now(conn->loop);
  for (int l = 0; l < 2; l++)
    for (rl_list *n = lists[l]->next; n != lists[l]; n = n->next) {
      rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
      if (cmd->timed_out || cmd->deadline == 0) continue;
      uint64_t wait = cmd->deadline > now ? cmd->deadline - now : 0;
      uv_timer_start(&conn->timer, on_timer, wait, 0);
      return;
    }
  uv_timer_stop(&conn->timer);
}

/* Queues a command for the next write. */
static void queue_unsent(rl_conn *conn, rl_cmd *cmd) {
  rl_list_push_back(&conn->unsent, &cmd->node);
  if (!uv_is_active((uv_handle_t *)&conn->flush))
    uv_prepare_start(&conn->flush, on_prepare);
  if (cmd->deadline != 0 && !uv_is_active((uv_handle_t *)&conn->timer))
    arm_timer(conn);
}

/* Completes a command that will get no reply, and frees it. */
static void complete(rl_cmd *cmd, int status) {
  if (cmd->kind == K_USER) cmd->cb(cmd, NULL, status);
  free(cmd);
}

/* Completes everything the connection holds: written and unsent commands
 * DROPPED, waiting ones with waiting_status. Callbacks may send (which
 * fails: the state is not READY) or close the connection. */
static void complete_all(rl_conn *conn, int waiting_status) {
  rl_list *n;
  while ((n = rl_list_pop_front(&conn->pending)) != NULL)
    complete(rl_container_of(n, rl_cmd, node), RL_CMD_DROPPED);
  while ((n = rl_list_pop_front(&conn->unsent)) != NULL)
    complete(rl_container_of(n, rl_cmd, node), RL_CMD_DROPPED);
  while ((n = rl_list_pop_front(&conn->waiting)) != NULL)
    complete(rl_container_of(n, rl_cmd, node), waiting_status);
}

static int send_cmd(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                    int script, int no_resend, int clocked, int64_t until_us,
                    rl_cmd_cb cb, void *data, int idx) {
  int waits = conn->state == RL_CONN_HANDSHAKE ||
              (conn->state == RL_CONN_CONNECTING && conn->first);
  if (conn->state != RL_CONN_READY && !waits)
    return conn->refused && conn->state != RL_CONN_CLOSED ? RL_CONN_EREFUSED
                                                          : RL_CONN_EDOWN;
  if (nbufs == 0 || nbufs > RL_CONN_MAX_BUFS) return RL_CONN_EDOWN;
  rl_cmd *cmd = cmd_new(conn, K_USER, cb, data, idx);
  if (cmd == NULL) return RL_CONN_EDOWN;
  cmd->script = script;
  cmd->no_resend = no_resend;
  cmd->clocked = clocked;
  cmd->fixed_until_us = until_us;
  cmd->nbufs = nbufs;
  memcpy(cmd->bufs, bufs, sizeof bufs[0] * nbufs);
  if (waits) {
    /* Written once the handshake succeeded; the connect timeout bounds
     * the wait, so it needs no deadline of its own. */
    rl_list_push_back(&conn->waiting, &cmd->node);
    return 0;
  }
  start_deadline(conn, cmd);
  queue_unsent(conn, cmd);
  return 0;
}

int rl_conn_send(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                 int script, int no_resend, rl_cmd_cb cb, void *data,
                 int idx) {
  return send_cmd(conn, bufs, nbufs, script, no_resend, 0, 0, cb, data, idx);
}

int rl_conn_send_clocked(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                         int script, int no_resend, rl_cmd_cb cb, void *data,
                         int idx) {
  return send_cmd(conn, bufs, nbufs, script, no_resend, 1, 0, cb, data, idx);
}

int rl_conn_send_until(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                       int script, int no_resend, int clocked,
                       int64_t until_us, rl_cmd_cb cb, void *data, int idx) {
  return send_cmd(conn, bufs, nbufs, script, no_resend, clocked != 0,
                  until_us, cb, data, idx);
}

int rl_conn_send_sub(rl_conn *conn, const uv_buf_t *bufs, unsigned nbufs,
                     const char *channel, size_t len, int unsubscribe,
                     rl_cmd_cb cb, void *data, int idx) {
  int rc = send_cmd(conn, bufs, nbufs, -1, 1, 0, 0, cb, data, idx);
  if (rc != 0) return rc;
  /* The command just queued is the last of its list. */
  rl_list *l = conn->state == RL_CONN_READY ? &conn->unsent : &conn->waiting;
  rl_cmd *cmd = rl_container_of(l->prev, rl_cmd, node);
  cmd->sub_channel = channel;
  cmd->sub_channel_len = len;
  cmd->sub_unsubscribe = unsubscribe;
  return 0;
}

/* A clocked command's last argument, as it is written now: its deadline
 * in microseconds of the master's wall clock, then a colon and how far
 * this client's wall clock is ahead of the master's (negative: behind);
 * or "0" (none). The difference lets a script name the moment it runs in
 * this client's wall clock, which is what a fencing floor must be
 * (scripts.c). It comes from the upper bound of the master's clock, so
 * it can only be too small: a token is never above the client's clock
 * when the master granted it (so a later acquirer's floor, its clock
 * when it sends, stays above it), and is at least that clock less the
 * bound's slack (the round trip of its TIME, and 500 ppm of its age). */
static void append_master_deadline(rl_conn *conn, const rl_cmd *cmd) {
  char digits[48], arg[64];
  size_t n = 0;
  if (cmd->until_us != 0 && conn->clock_valid) {
    int64_t now_us = rl_conn_now_us();
    int64_t at = cmd->until_us + aged_offset(conn, now_us);
    if (at < 1) at = 1; /* a clock before 1970: past, not "none" */
    int64_t ahead =
        (int64_t)rl_wall_us() - (now_us + aged_upper(conn, now_us));
    n = rl_resp_put_i64(digits, at);
    digits[n++] = ':';
    n += rl_resp_put_i64(digits + n, ahead);
  } else {
    digits[n++] = '0';
  }
  rl_stream_append(conn->stream, arg, rl_resp_put_bulk(arg, digits, n));
}

/* Writes one command's bytes to the stream. */
static void append_cmd(rl_conn *conn, rl_cmd *cmd) {
  for (unsigned i = 0; i < cmd->nbufs; i++)
    rl_stream_append(conn->stream, cmd->bufs[i].base, cmd->bufs[i].len);
  if (cmd->clocked) append_master_deadline(conn, cmd);
  rl_list_push_back(&conn->pending, &cmd->node);
}

void rl_conn_flush(rl_conn *conn) {
  if (conn->state != RL_CONN_READY || conn->stream == NULL) return;
  uv_prepare_stop(&conn->flush);
  if (rl_list_empty(&conn->unsent)) return;
  rl_list *n;
  while ((n = rl_list_pop_front(&conn->unsent)) != NULL)
    append_cmd(conn, rl_container_of(n, rl_cmd, node));
  rl_stream_flush(conn->stream); /* a failure drops the connection */
}

static void on_prepare(uv_prepare_t *p) { rl_conn_flush(p->data); }

int rl_conn_set_handshake_extra(rl_conn *conn, const char *resp, size_t len,
                                int n, rl_conn_extra_cb cb, void *data) {
  char *copy = NULL;
  if (n > 0) {
    copy = malloc(len);
    if (copy == NULL) return RLOCK_ENOMEM;
    memcpy(copy, resp, len);
  }
  free(conn->extra);
  conn->extra = copy;
  conn->extra_len = n > 0 ? len : 0;
  conn->extra_n = n > 0 ? n : 0;
  conn->extra_cb = cb;
  conn->extra_data = data;
  return 0;
}

/* --- the master's clock ---------------------------------------------------------- */

/* The estimate at now_us: the one kept, less the drift since. */
static int64_t aged_offset(const rl_conn *conn, int64_t now_us) {
  int64_t age = now_us - conn->clock_at_us;
  return conn->clock_offset_us - (age > 0 ? age * CLOCK_DRIFT_PPM / 1000000 : 0);
}

int rl_conn_clock_offset(const rl_conn *conn, int64_t *offset_us) {
  if (!conn->clock_valid) return 0;
  *offset_us = aged_offset(conn, rl_conn_now_us());
  return 1;
}

/* The upper bound at now_us: the one kept, plus the drift since. */
static int64_t aged_upper(const rl_conn *conn, int64_t now_us) {
  int64_t age = now_us - conn->clock_upper_at_us;
  return conn->clock_upper_us +
         (age > 0 ? age * CLOCK_DRIFT_PPM / 1000000 : 0);
}

/* A TIME reply, read after the master sampled its clock: the master's
 * time then is a lower bound of its time when the reply is handled, so
 * master_us - now_us can only underestimate the offset; and, sampled
 * after the command was queued (queued_us), master_us - queued_us can
 * only overestimate it. The tightest estimates win. */
static void clock_sample(rl_conn *conn, const redisReply *r,
                         int64_t queued_us) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING)
    return;
  int64_t master_us = strtoll(r->element[0]->str, NULL, 10) * 1000000 +
                      strtoll(r->element[1]->str, NULL, 10);
  int64_t now_us = rl_conn_now_us();
  int64_t offset = master_us - now_us, upper = master_us - queued_us;
  if (conn->clock_valid) {
    int64_t kept = aged_offset(conn, now_us);
    if (kept > offset) offset = kept;
    kept = aged_upper(conn, now_us);
    if (kept < upper) upper = kept;
  }
  conn->clock_offset_us = offset;
  conn->clock_at_us = now_us;
  conn->clock_upper_us = upper;
  conn->clock_upper_at_us = now_us;
  conn->clock_valid = 1;
}

/* 1 when the estimate of the master's clock may be low by more than a
 * quarter of the command timeout: the clocked deadlines it gives could
 * leave the master too little of the command's time, or none. */
static int clock_loose(const rl_conn *conn) {
  uint64_t t = conn->cfg->command_timeout_ms;
  if (!conn->clock_valid || t == 0) return 0;
  int64_t now_us = rl_conn_now_us();
  int64_t slack = aged_upper(conn, now_us) - aged_offset(conn, now_us);
  return slack > (int64_t)(t * 1000 / 4);
}

/* Ready, after a sample: while the estimate is loose, the next TIME goes
 * out soon (at once after the handshake's, then after 50 ms, doubling),
 * instead of with the periodic refresh; the tightest sample wins
 * (clock_sample), so one reply read in time is enough. */
static void clock_resample(rl_conn *conn) {
  if (conn->state != RL_CONN_READY || conn->cfg->mode != RL_CONN_COMMAND)
    return;
  if (!clock_loose(conn)) {
    conn->clock_resample_ms = 0;
    return;
  }
  uint64_t wait = conn->clock_resample_ms;
  uint64_t next = wait == 0 ? CLOCK_RESAMPLE_MS : wait * 2;
  conn->clock_resample_ms = next < CLOCK_REFRESH_MS ? next : CLOCK_REFRESH_MS;
  uv_timer_start(&conn->retry, on_refresh, wait, CLOCK_REFRESH_MS);
}

static void on_refresh_reply(rl_cmd *cmd, redisReply *r, int status) {
  if (r != NULL && (status == RL_CMD_REPLY || status == RL_CMD_LATE)) {
    clock_sample(cmd->conn, r, cmd->queued_us);
    clock_resample(cmd->conn);
  }
}

static void on_refresh(uv_timer_t *t) {
  rl_conn *conn = t->data;
  if (conn->state != RL_CONN_READY) return;
  const char *argv[] = {"TIME"};
  size_t len[] = {4};
  rl_cmd *cmd = internal_new(conn, K_REFRESH, on_refresh_reply, 1, argv, len);
  if (cmd == NULL) return;
  cmd->queued_us = rl_conn_now_us();
  start_deadline(conn, cmd);
  queue_unsent(conn, cmd);
}

/* --- the handshake ---------------------------------------------------------------- */

/* Parses INFO server's run_id and uptime for on_info. Redis reports
 * uptime_in_seconds as floor(now) - floor(start) of its wall clock, which
 * is up to 1 s more than the real uptime (a start at .95 of a second
 * reads 1 s at .02 of the next): the uptime given is 1 s less than that,
 * and never more than the real one, so that a restart quarantine counted
 * from it never ends early. */
static void take_info(rl_conn *conn, const redisReply *r) {
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) return;
  const char *id = strstr(r->str, "run_id:");
  const char *up = strstr(r->str, "uptime_in_seconds:");
  char run_id[sizeof conn->run_id] = "";
  if (id != NULL) {
    size_t n = strcspn(id + 7, "\r\n");
    if (n >= sizeof run_id) n = sizeof run_id - 1;
    memcpy(run_id, id + 7, n);
    run_id[n] = '\0';
  }
  uint64_t up_s = up ? strtoull(up + 18, NULL, 10) : 0;
  uint64_t uptime_ms = up_s > 0 ? (up_s - 1) * 1000 : 0;
  if (run_id[0] == '\0') return; /* not a Redis INFO: nothing to say */
  memcpy(conn->run_id, run_id, sizeof run_id);
  /* Redis says redis_mode, Valkey 8 server_mode. */
  conn->standalone = strstr(r->str, "redis_mode:standalone") != NULL ||
                     strstr(r->str, "server_mode:standalone") != NULL;
  if (conn->on_info) conn->on_info(conn, conn->run_id, uptime_ms);
}

static void become_ready(rl_conn *conn);

/* Whether text (len bytes, not terminated) holds needle, ignoring case. */
static int has_word(const char *text, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (strncasecmp(text + i, needle, n) == 0) return 1;
  return 0;
}

int rl_conn_no_scripting(const char *text, size_t len) {
  if (text == NULL) return 0;
  if (has_word(text, len, "scripting engine")) return 1;
  return (has_word(text, len, "unknown command") ||
          has_word(text, len, "unknown subcommand")) &&
         has_word(text, len, "script");
}

/* Fails the attempt with the master's refusal. */
static void refuse(rl_conn *conn, const char *text, size_t len) {
  char why[sizeof conn->err];
  if (len >= sizeof why) len = sizeof why - 1;
  memcpy(why, text, len);
  why[len] = '\0';
  attempt_failed(conn, why, 1, 0);
}

static void on_handshake_reply(rl_cmd *cmd, redisReply *r, int status) {
  rl_conn *conn = cmd->conn;
  if (r == NULL || status != RL_CMD_REPLY) return; /* the attempt ended */
  int error = r->type == REDIS_REPLY_ERROR;
  switch (cmd->kind) {
    case K_SETNAME: /* an ACL user may lack "client": no matter */
      if (error && r->len >= 6 && strncmp(r->str, "NOPERM", 6) == 0)
        error = 0;
      break;
    case K_INFO:
      if (!error) take_info(conn, r);
      break;
    case K_TIME:
      if (!error) clock_sample(conn, r, cmd->queued_us);
      break;
    case K_EXTRA: {
      int stop = conn->extra_cb ? conn->extra_cb(conn, cmd->idx, r,
                                                 conn->extra_data)
                                : error;
      if (stop) {
        const char *t = error ? r->str : "an extra handshake command failed";
        refuse(conn, t, strlen(t));
        return;
      }
      error = 0;
      break;
    }
    default:
      break;
  }
  if (conn->state != RL_CONN_HANDSHAKE) return; /* a hook closed it */
  if (error && cmd->kind == K_SCRIPT &&
      rl_conn_no_scripting(r->str, (size_t)r->len)) {
    /* The server's text without the script it quotes back. */
    int len = (int)r->len;
    const char *args = strstr(r->str, ", with args");
    if (args != NULL) len = (int)(args - r->str);
    char why[sizeof conn->err];
    int n = snprintf(why, sizeof why,
                     "the master has no Lua scripting, which rlock needs "
                     "(SCRIPT LOAD: %.*s)", len, r->str);
    refuse(conn, why, n < 0 ? 0 : (size_t)n);
    return;
  }
  if (error) {
    refuse(conn, r->str, (size_t)r->len);
    return;
  }
  if (--conn->hs_left == 0) become_ready(conn);
}

/* Builds the handshake in out, queueing one internal command per reply to
 * come; returns how many, or -1 when out of memory. */
typedef struct hs_buf {
  char *p;
  size_t len, cap;
} hs_buf;

static int hs_add(rl_conn *conn, hs_buf *b, int kind, int idx, int argc,
                  const char **argv, const size_t *argvlen) {
  size_t need = argv ? rl_resp_size(argc, argv, argvlen) : 0;
  if (b->len + need > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) return -1;
    b->p = p;
    b->cap = cap;
  }
  if (argv) b->len += rl_resp_write(b->p + b->len, argc, argv, argvlen);
  rl_cmd *cmd = cmd_new(conn, kind, on_handshake_reply, conn, idx);
  if (cmd == NULL) return -1;
  cmd->queued_us = rl_conn_now_us(); /* written with the rest, after */
  rl_list_push_back(&conn->pending, &cmd->node);
  conn->hs_left++;
  return 0;
}

static int build_handshake(rl_conn *conn, hs_buf *b) {
  const rl_url *u = &conn->url;
  int mode = conn->cfg->mode, rc = 0;
  char db[16];
  if (u->has_password) {
    const char *argv[] = {"AUTH", u->user, u->password};
    size_t len[] = {4, strlen(u->user), strlen(u->password)};
    if (u->has_user)
      rc |= hs_add(conn, b, K_AUTH, 0, 3, argv, len);
    else
      rc |= hs_add(conn, b, K_AUTH, 0, 2, (const char *[]){"AUTH", u->password},
                   (size_t[]){4, len[2]});
  }
  if (u->db != 0) {
    int n = snprintf(db, sizeof db, "%d", u->db);
    rc |= hs_add(conn, b, K_SELECT, 0, 2, (const char *[]){"SELECT", db},
                 (size_t[]){6, (size_t)n});
  }
  const char *name = conn->cfg->client_name;
  if (mode != RL_CONN_BARE && name != NULL)
    rc |= hs_add(conn, b, K_SETNAME, 0, 3,
                 (const char *[]){"CLIENT", "SETNAME", name},
                 (size_t[]){6, 7, strlen(name)});
  if (mode != RL_CONN_COMMAND) return rc;
  rc |= hs_add(conn, b, K_INFO, 0, 2, (const char *[]){"INFO", "server"},
               (size_t[]){4, 6});
  rc |= hs_add(conn, b, K_TIME, 0, 1, (const char *[]){"TIME"}, (size_t[]){4});
  /* Every script is loaded before any command that uses it, so EVALSHA
   * finds it (the owner's extra commands too), and NOSCRIPT only follows
   * a SCRIPT FLUSH. */
  for (int s = 0; s < RL_SCRIPT_ALL; s++) {
    if (!rl_script_loaded_on(s, conn->cfg->cluster)) continue;
    const char *body = rl_script_body((rl_script_id)s);
    rc |= hs_add(conn, b, K_SCRIPT, s, 3,
                 (const char *[]){"SCRIPT", "LOAD", body},
                 (size_t[]){6, 4, strlen(body)});
  }
  if (conn->extra_n > 0) {
    rc |= hs_add(conn, b, K_EXTRA, 0, 0, NULL, NULL);
    for (int i = 1; i < conn->extra_n; i++)
      rc |= hs_add(conn, b, K_EXTRA, i, 0, NULL, NULL);
    if (rc == 0) { /* the owner's bytes, as given */
      if (b->len + conn->extra_len > b->cap) {
        char *p = realloc(b->p, b->len + conn->extra_len);
        if (p == NULL) return -1;
        b->p = p;
        b->cap = b->len + conn->extra_len;
      }
      memcpy(b->p + b->len, conn->extra, conn->extra_len);
      b->len += conn->extra_len;
    }
  }
  return rc;
}

static void send_handshake(rl_conn *conn) {
  hs_buf b = {0};
  conn->hs_left = 0;
  set_state(conn, RL_CONN_HANDSHAKE);
  if (conn->state != RL_CONN_HANDSHAKE) return;
  if (build_handshake(conn, &b) != 0) {
    free(b.p);
    attempt_failed(conn, "out of memory", 0, 0);
    return;
  }
  if (conn->hs_left == 0) {
    free(b.p);
    become_ready(conn);
    return;
  }
  rl_stream_append(conn->stream, b.p, b.len);
  free(b.p);
  rl_stream_flush(conn->stream); /* a failure drops the attempt */
}

static void become_ready(rl_conn *conn) {
  uv_timer_stop(&conn->timer); /* the connect timeout */
  conn->first = 0;
  conn->refused = 0;
  conn->backoff_ms = BACKOFF_MIN_MS;
  conn->stalled = 0;
  conn->logged[0] = '\0';
  set_err(conn, "");
  conn->connects++;
  /* The commands that waited go first, in the order they were sent. */
  rl_list *n;
  while ((n = rl_list_pop_front(&conn->waiting)) != NULL) {
    rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
    start_deadline(conn, cmd);
    rl_list_push_back(&conn->unsent, &cmd->node);
  }
  conn->clock_resample_ms = 0;
  if (conn->cfg->mode == RL_CONN_COMMAND)
    uv_timer_start(&conn->retry, on_refresh, CLOCK_REFRESH_MS,
                   CLOCK_REFRESH_MS);
  conn_log(conn, RLOCK_LOG_INFO, "connected");
  set_state(conn, RL_CONN_READY);
  if (conn->state != RL_CONN_READY) return;
  clock_resample(conn); /* the handshake's TIME may have been read late */
  arm_timer(conn);
  rl_conn_flush(conn);
}

/* --- replies ------------------------------------------------------------------------- */

static int is_noscript(const redisReply *r) {
  return r->type == REDIS_REPLY_ERROR && r->len >= 8 &&
         memcmp(r->str, "NOSCRIPT", 8) == 0;
}

/* Something a subscriber connection did not ask for: a message, or an
 * unsubscribe the server sent by itself, which is told from the reply to
 * an UNSUBSCRIBE by the oldest command waiting (conn.h). */
static int is_push(const rl_conn *conn, const redisReply *r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) return 0;
  const redisReply *k = r->element[0], *ch = r->element[1];
  if (k->type != REDIS_REPLY_STRING) return 0;
  if (strcasecmp(k->str, "message") == 0 ||
      strcasecmp(k->str, "pmessage") == 0 ||
      strcasecmp(k->str, "smessage") == 0)
    return 1;
  if (strcasecmp(k->str, "unsubscribe") != 0 &&
      strcasecmp(k->str, "sunsubscribe") != 0)
    return 0;
  if (rl_list_empty(&conn->pending)) return 1;
  const rl_cmd *head = rl_container_of(conn->pending.next, rl_cmd, node);
  if (head->kind != K_USER || !head->sub_unsubscribe) return 1;
  if (ch->type != REDIS_REPLY_STRING) return 0;
  return !(head->sub_channel_len == (size_t)ch->len &&
           memcmp(head->sub_channel, ch->str, (size_t)ch->len) == 0);
}

/* Writes SCRIPT LOAD, then cmd again. 0, or -1 when out of memory. */
static int resend_after_load(rl_conn *conn, rl_cmd *cmd) {
  const char *body = rl_script_body((rl_script_id)cmd->script);
  const char *argv[] = {"SCRIPT", "LOAD", body};
  size_t len[] = {6, 4, strlen(body)};
  rl_cmd *load = internal_new(conn, K_LOAD, NULL, 3, argv, len);
  if (load == NULL) return -1;
  queue_unsent(conn, load);
  cmd->fallback = 1;
  if (!cmd->timed_out) start_deadline(conn, cmd);
  queue_unsent(conn, cmd);
  return 0;
}

/* Hands one reply to its command (or to on_push) and frees it. */
static void deliver(rl_conn *conn, redisReply *r) {
  if (conn->cfg->mode == RL_CONN_SUBSCRIBER && is_push(conn, r)) {
    if (conn->on_push) conn->on_push(conn, r);
    freeReplyObject(r);
    return;
  }
  rl_list *n = rl_list_pop_front(&conn->pending);
  if (n == NULL) {
    freeReplyObject(r);
    attempt_failed(conn, "protocol error: a reply to no command", 0, 0);
    return;
  }
  rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
  if (conn->stalled) {
    conn->stalled = 0;
    update_up(conn);
  }
  int status = cmd->timed_out ? RL_CMD_LATE : RL_CMD_REPLY;
  if (cmd->kind != K_USER) {
    if (cmd->cb) cmd->cb(cmd, r, status);
    free(cmd);
  } else if (cmd->script >= 0 && !cmd->no_resend && !cmd->fallback &&
             is_noscript(r) && resend_after_load(conn, cmd) == 0) {
    /* Written again after the script; the reply will come later. */
  } else {
    cmd->cb(cmd, r, status);
    free(cmd);
  }
  freeReplyObject(r);
}

static void on_received(rl_stream *s, const char *data, size_t len) {
  rl_conn *conn = rl_stream_data(s);
  redisReader *rd = conn->reader;
  if (redisReaderFeed(rd, data, len) != REDIS_OK) {
    attempt_failed(conn, "out of memory", 0, 0);
    return;
  }
  conn->dispatching = 1;
  while (conn->stream == s && !conn->fail_deferred) {
    void *reply = NULL;
    if (redisReaderGetReply(rd, &reply) != REDIS_OK) {
      char why[sizeof conn->err], buf[sizeof conn->err];
      snprintf(why, sizeof why, "protocol error: %s", rd->errstr);
      const char *text = tls_hint(conn, why, buf, sizeof buf);
      attempt_failed(conn, text, 0, text != why);
      break;
    }
    if (reply == NULL) break;
    conn->replied = 1;
    deliver(conn, reply);
  }
  conn->dispatching = 0;
  if (conn->reader != rd) redisReaderFree(rd); /* dropped meanwhile */
}

/* --- the attempt's life ------------------------------------------------------------ */

static void on_connected(rl_stream *s) {
  rl_conn *conn = rl_stream_data(s);
  if (conn->stream == s) send_handshake(conn);
}

/* why, with a hint when a plain connection failed after its handshake
 * was sent and before the master answered anything: a TLS-only port
 * closes such a connection at its first bytes. */
static const char *tls_hint(const rl_conn *conn, const char *why, char *buf,
                            size_t size) {
  if (conn->url.tls || conn->state != RL_CONN_HANDSHAKE || conn->replied)
    return why;
  snprintf(buf, size, "%.100s (a TLS port? then use rediss://)", why);
  return buf;
}

static void on_stream_failed(rl_stream *s, const char *why, int tls) {
  rl_conn *conn = rl_stream_data(s);
  char buf[sizeof conn->err];
  if (conn->stream != s) return;
  const char *text = tls_hint(conn, why, buf, sizeof buf);
  /* A plain connection to a TLS port is a TLS setting to fix: reported
   * as TLS failures are (logged as errors, in rlock_client_last_error). */
  attempt_failed(conn, text, 0, tls || text != why);
}

static void maybe_closed(rl_conn *conn) {
  if (conn->handles_open == 0 && conn->on_closed) conn->on_closed(conn);
}

static void on_stream_closed(rl_stream *s) {
  rl_conn *conn = rl_stream_data(s);
  conn->handles_open--;
  maybe_closed(conn);
}

static const rl_stream_handler stream_handler = {
    on_connected, on_received, on_stream_failed, on_stream_closed};

/* Lets go of the attempt's stream and reader. */
static void drop_stream(rl_conn *conn, uint64_t linger_ms) {
  if (conn->stream != NULL) {
    rl_stream *s = conn->stream;
    conn->stream = NULL;
    rl_stream_close(s, linger_ms);
  }
  if (conn->reader != NULL) {
    redisReader *rd = conn->reader;
    conn->reader = NULL;
    if (!conn->dispatching) redisReaderFree(rd); /* else on_received does */
  }
}

/* Schedules the next attempt; connect_refused: this one's connect was
 * turned down at once (BACKOFF_REFUSED_MAX_MS). */
static void schedule_reconnect(rl_conn *conn, int connect_refused) {
  uint64_t b = conn->backoff_ms;
  uint64_t cap = BACKOFF_MAX_MS;
  if (connect_refused) {
    cap = BACKOFF_REFUSED_MAX_MS;
    if (b > cap) b = cap;
  }
  uint64_t delay = b / 2 + rl_random_upto(b / 2);
  conn->backoff_ms = b * 2 > cap ? cap : b * 2;
  uv_timer_start(&conn->retry, on_retry, delay, 0);
}

/* Ends an attempt or a live connection: why goes to err, the log (once
 * per text) and the owner; commands complete; a retry is scheduled. */
static void attempt_failed(rl_conn *conn, const char *why, int refused,
                           int tls) {
  if (conn->state == RL_CONN_CLOSED) return;
  if (rl_stream_off_loop) {
    /* A caller's own round or start (lib/lock/fast.c): the loop reports it. */
    if (!conn->fail_deferred) {
      conn->fail_deferred = 1;
      conn->deferred_refused = refused;
      conn->deferred_tls = tls;
      snprintf(conn->deferred_why, sizeof conn->deferred_why, "%s", why);
      uv_timer_start(&conn->timer, on_timer, 0, 0);
    }
    return;
  }
  conn->fail_deferred = 0;
  conn->resolve_wanted = 0; /* a late answer serves the next attempt */
  int was_ready = conn->state == RL_CONN_READY;
  /* The stream says whether its connect was refused (schedule_reconnect);
   * it is dropped below. */
  int connect_refused =
      conn->stream != NULL && rl_stream_refused(conn->stream);
  set_err(conn, why);
  conn->refused = refused;
  if (refused) conn->errors++;
  if (strcmp(conn->logged, why) != 0) {
    snprintf(conn->logged, sizeof conn->logged, "%s", why);
    int level = refused || tls               ? RLOCK_LOG_ERROR
                : was_ready || conn->unresolved ? RLOCK_LOG_WARN
                                                : RLOCK_LOG_DEBUG;
    conn_log(conn, level, why);
    if (conn->on_error) conn->on_error(conn, why, refused, tls);
  } else if (was_ready) {
    conn_log(conn, RLOCK_LOG_WARN, why);
  }
  uv_timer_stop(&conn->timer);
  uv_timer_stop(&conn->retry);
  uv_prepare_stop(&conn->flush);
  drop_stream(conn, 0);
  conn->clock_valid = 0;
  conn->first = 0;
  conn->stalled = 0;
  set_state(conn, RL_CONN_DOWN);
  complete_all(conn, refused ? RL_CMD_REFUSED : RL_CMD_DROPPED);
  if (conn->state == RL_CONN_DOWN) schedule_reconnect(conn, connect_refused);
}

/* 1 if the connection's host is a name still to be resolved. */
static int needs_resolving(const rl_conn *conn) {
  unsigned char buf[sizeof(struct in6_addr)];
  const rl_url *u = &conn->url;
  return u->kind == RL_URL_TCP && inet_pton(AF_INET, u->host, buf) != 1 &&
         inet_pton(AF_INET6, u->host, buf) != 1;
}

static void on_resolved(uv_getaddrinfo_t *req, int status,
                        struct addrinfo *res) {
  rl_conn *conn = req->data;
  conn->resolving = 0;
  conn->handles_open--;
  char why[160];
  snprintf(why, sizeof why, "host name \"%.80s\" did not resolve (%s)",
           conn->url.host,
           status == 0 ? "no IPv4 or IPv6 address" : uv_strerror(status));
  for (struct addrinfo *ai = status == 0 ? res : NULL; ai; ai = ai->ai_next) {
    const void *addr = NULL;
    if (ai->ai_family == AF_INET)
      addr = &((struct sockaddr_in *)ai->ai_addr)->sin_addr;
    else if (ai->ai_family == AF_INET6)
      addr = &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
    char numeric[INET6_ADDRSTRLEN];
    if (addr && inet_ntop(ai->ai_family, addr, numeric, sizeof numeric)) {
      /* The name stays in url.name, for TLS and the logs. */
      snprintf(conn->url.host, sizeof conn->url.host, "%s", numeric);
      conn->unresolved = 0;
      break;
    }
  }
  uv_freeaddrinfo(res);
  if (conn->state == RL_CONN_CLOSED) {
    maybe_closed(conn);
    return;
  }
  if (!conn->resolve_wanted) return; /* timed out: the next attempt */
  conn->resolve_wanted = 0;
  if (conn->unresolved) {
    attempt_failed(conn, why, 0, 0);
    return;
  }
  uv_timer_stop(&conn->timer);
  connect_now(conn);
}

/* Starts an attempt whose first step is resolving the host name; the
 * connect timeout covers it. */
static void resolve_now(rl_conn *conn) {
  conn->unresolved = 1;
  set_state(conn, RL_CONN_CONNECTING);
  uv_update_time(conn->loop);
  uv_timer_start(&conn->timer, on_timer, conn->cfg->connect_timeout_ms, 0);
  conn->resolve_wanted = 1;
  if (conn->resolving) return; /* the answer still to come serves it */
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  conn->gai.data = conn;
  int rc = uv_getaddrinfo(conn->loop, &conn->gai, on_resolved, conn->url.host,
                          NULL, &hints);
  if (rc != 0) {
    char why[160];
    snprintf(why, sizeof why, "host name \"%.80s\" could not be resolved "
             "(%s)", conn->url.host, uv_strerror(rc));
    attempt_failed(conn, why, 0, 0);
    return;
  }
  conn->resolving = 1;
  conn->handles_open++; /* the request, until its callback */
}

static void connect_now(rl_conn *conn) {
  const rl_url *u = &conn->url;
  if (needs_resolving(conn)) {
    resolve_now(conn);
    return;
  }
  rl_tls_ctx *tls = u->tls ? conn->cfg->tls : NULL;
  if (u->tls && tls == NULL) {
    attempt_failed(conn, "TLS is not configured", 0, 1);
    return;
  }
  conn->replied = 0;
  conn->reader = rl_reply_reader_new();
  const char *name =
      conn->cfg->tls_server_name ? conn->cfg->tls_server_name : u->name;
  conn->stream = conn->reader ? rl_stream_open(conn->loop, u, tls, name,
                                               &stream_handler, conn)
                              : NULL;
  if (conn->stream != NULL)
    rl_stream_set_peer_timeout(conn->stream, peer_timeout_ms(conn->cfg));
  if (conn->stream == NULL) {
    attempt_failed(conn, "out of memory", 0, 0);
    return;
  }
  conn->handles_open++; /* the stream, until it has closed */
  set_state(conn, RL_CONN_CONNECTING);
  uv_update_time(conn->loop); /* the whole connect timeout, from now */
  uv_timer_start(&conn->timer, on_timer, conn->cfg->connect_timeout_ms, 0);
}

static void on_retry(uv_timer_t *t) { connect_now(t->data); }

static void on_timer(uv_timer_t *t) {
  rl_conn *conn = t->data;
  if (conn->fail_deferred) {
    char why[sizeof conn->deferred_why];
    memcpy(why, conn->deferred_why, sizeof why);
    attempt_failed(conn, why, conn->deferred_refused, conn->deferred_tls);
    return;
  }
  if (conn->state == RL_CONN_CONNECTING || conn->state == RL_CONN_HANDSHAKE) {
    const char *why = conn->resolve_wanted
                          ? "resolving the host name timed out"
                          : "connect timed out";
    int tls = conn->state == RL_CONN_CONNECTING && conn->stream != NULL &&
              rl_stream_tls_handshaking(conn->stream);
    if (conn->state == RL_CONN_HANDSHAKE)
      why = "handshake timed out (the master did not answer AUTH, SELECT or "
            "SCRIPT LOAD)";
    else if (tls)
      why = "TLS handshake timed out (does the master speak TLS on this "
            "port?)";
    attempt_failed(conn, why, 0, tls);
    return;
  }
  if (conn->state != RL_CONN_READY) return;
  rl_stream_read_now(conn->stream); /* replies the loop has not read yet */
  if (conn->state != RL_CONN_READY) return;
  uint64_t now = uv_now(conn->loop);
  /* Unsent commands too, as arm_timer looks at both: after a loop
   * iteration longer than the timeout, this timer runs before the queued
   * commands are written, and re-armed for 0 ms it would run again at
   * once, forever (libuv 1.44 runs a due timer again within one pass). */
  rl_list *lists[2] = {&conn->pending, &conn->unsent};
  for (int l = 0; l < 2; l++) {
    rl_list *n = lists[l]->next;
    while (n != lists[l]) {
      rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
      n = n->next;
      if (cmd->timed_out || cmd->deadline == 0) continue;
      if (cmd->deadline > now) break;
      cmd->timed_out = 1;
      conn->timeouts++;
      if (!conn->stalled) {
        conn->stalled = 1;
        update_up(conn);
      }
      if (cmd->kind == K_USER) cmd->cb(cmd, NULL, RL_CMD_TIMEOUT);
      if (conn->state != RL_CONN_READY) return; /* closed: n is freed */
    }
  }
  arm_timer(conn);
}

/* Whether conn is ready with a stream that has not failed: what a caller
 * off the loop may poll, read or judge idle. */
static int stream_usable(const rl_conn *conn) {
  return conn->state == RL_CONN_READY && conn->stream != NULL &&
         !conn->fail_deferred;
}

int rl_conn_idle(const rl_conn *conn, int (*settled)(const rl_cmd *cmd)) {
  if (!stream_usable(conn) || !rl_list_empty(&conn->unsent) ||
      !rl_list_empty(&conn->waiting))
    return 0;
  for (rl_list *n = conn->pending.next; n != &conn->pending; n = n->next) {
    const rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
    if (cmd->kind == K_REFRESH || cmd->kind == K_LOAD) continue;
    if (cmd->kind != K_USER || settled == NULL || !settled(cmd)) return 0;
  }
  return 1;
}

/* A subscriber connection's command of that channel, or its own. */
static int sub_cmd_of(const rl_cmd *cmd, const char *channel, size_t len) {
  if (cmd->kind == K_REFRESH || cmd->kind == K_LOAD) return 1;
  return cmd->kind == K_USER && cmd->sub_channel != NULL &&
         cmd->sub_channel_len == len &&
         memcmp(cmd->sub_channel, channel, len) == 0;
}

int rl_conn_sub_idle(const rl_conn *conn, const char *channel, size_t len) {
  if (conn->cfg->mode != RL_CONN_SUBSCRIBER || !stream_usable(conn) ||
      conn->url.tls || !rl_list_empty(&conn->waiting))
    return 0;
  const rl_list *lists[2] = {&conn->pending, &conn->unsent};
  for (int l = 0; l < 2; l++)
    for (rl_list *n = lists[l]->next; n != lists[l]; n = n->next)
      if (!sub_cmd_of(rl_container_of(n, rl_cmd, node), channel, len))
        return 0;
  return 1;
}

void rl_conn_mute(rl_conn *conn, int mute) {
  if (conn->stream != NULL) rl_stream_mute(conn->stream, mute);
}

int rl_conn_awaiting_fd(const rl_conn *conn) {
  return rl_list_empty(&conn->pending) ? -1 : rl_conn_fd(conn);
}

void rl_conn_timer_settle(rl_conn *conn) {
  if (conn->state == RL_CONN_READY && !conn->fail_deferred) arm_timer(conn);
}

int rl_conn_fd(const rl_conn *conn) {
  return stream_usable(conn) ? rl_stream_fd(conn->stream) : -1;
}

int rl_conn_read_off_loop(rl_conn *conn) {
  if (!stream_usable(conn)) return -1;
  int rc = rl_stream_read_off_loop(conn->stream);
  if (conn->fail_deferred || conn->state != RL_CONN_READY) return -1;
  return rc;
}

int rl_conn_start(rl_conn *conn, uv_loop_t *loop, const rl_url *url,
                  const rl_conn_config *cfg) {
  conn->loop = loop;
  conn->url = *url;
  conn->cfg = cfg;
  conn->stream = NULL;
  conn->reader = NULL;
  conn->state = RL_CONN_DOWN;
  conn->first = 1;
  conn->backoff_ms = BACKOFF_MIN_MS;
  rl_list_init(&conn->pending);
  rl_list_init(&conn->unsent);
  rl_list_init(&conn->waiting);
  int rc = uv_mutex_init(&conn->errmu);
  if (rc != 0) return rc;
  uv_timer_init(loop, &conn->timer);
  uv_timer_init(loop, &conn->retry);
  uv_prepare_init(loop, &conn->flush);
  conn->timer.data = conn;
  conn->retry.data = conn;
  conn->flush.data = conn;
  conn->handles_open = 3;
  connect_now(conn);
  return 0;
}

static void on_handle_closed(uv_handle_t *h) {
  rl_conn *conn = h->data;
  conn->handles_open--;
  maybe_closed(conn);
}

void rl_conn_close(rl_conn *conn) {
  if (conn->state == RL_CONN_CLOSED) return;
  int live = conn->state == RL_CONN_READY && conn->stream != NULL;
  conn->state = RL_CONN_CLOSED;
  update_up(conn);
  uv_timer_stop(&conn->timer);
  uv_timer_stop(&conn->retry);
  uv_prepare_stop(&conn->flush);
  /* A resolution not yet running is dropped; one running ends first (its
   * callback lets go of the connection). */
  if (conn->resolving) uv_cancel((uv_req_t *)&conn->gai);
  if (live) {
    /* Fire-and-forget commands go out; those whose reply someone waits
     * for would only leave effects nobody sees, so they do not. */
    rl_list keep, *n;
    rl_list_init(&keep);
    while ((n = rl_list_pop_front(&conn->unsent)) != NULL) {
      rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
      if (cmd->no_resend)
        append_cmd(conn, cmd);
      else
        rl_list_push_back(&keep, &cmd->node);
    }
    rl_list_splice(&conn->unsent, &keep);
    rl_stream_flush(conn->stream);
  }
  complete_all(conn, RL_CMD_DROPPED);
  drop_stream(conn, live ? conn->cfg->command_timeout_ms : 0);
  free(conn->extra);
  conn->extra = NULL;
  conn->extra_n = 0;
  uv_close((uv_handle_t *)&conn->timer, on_handle_closed);
  uv_close((uv_handle_t *)&conn->retry, on_handle_closed);
  uv_close((uv_handle_t *)&conn->flush, on_handle_closed);
}
