/*
 * Master command connections.
 *
 * hiredis 0.14.1 has no async timeouts, so deadlines are kept here: replies
 * on one connection come back in send order, so the pending commands form a
 * FIFO whose deadlines only grow, and one timer per connection, armed for
 * the oldest command still in time, is enough. When the timer fires, the
 * socket is read first: on a loaded machine the loop may have been late,
 * and a reply already sitting in the kernel buffer is not a timeout.
 *
 * A dropped connection is retried with exponential backoff and jitter;
 * while it is down, commands fail at once, so a dead master costs a round
 * nothing.
 */
#include "conn.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "rlock.h"
#include "scripts.h"
#include "util.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

static void connect_now(rl_conn *conn);
static void on_timer(uv_timer_t *t);
static void on_retry(uv_timer_t *t);

static void conn_log(rl_conn *conn, int level, const char *msg) {
  if (conn->on_log) conn->on_log(conn, level, msg);
}

static void set_state(rl_conn *conn, int state) {
  int was_up = conn->state == RL_CONN_READY;
  conn->state = state;
  atomic_store(&conn->up, state == RL_CONN_READY);
  if (state == RL_CONN_READY)
    conn_log(conn, RLOCK_LOG_INFO, "connected");
  else if (was_up && state == RL_CONN_DOWN)
    conn_log(conn, RLOCK_LOG_WARN, conn->err[0] ? conn->err : "disconnected");
  else if (state == RL_CONN_DOWN && conn->err[0])
    conn_log(conn, RLOCK_LOG_DEBUG, conn->err);
  if (conn->on_state) conn->on_state(conn, state);
}

static void arm_timer(rl_conn *conn) {
  rl_list *n;
  uint64_t now = uv_now(conn->loop);
  for (n = conn->pending.next; n != &conn->pending; n = n->next) {
    rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
    if (cmd->timed_out) continue;
    uint64_t wait = cmd->deadline > now ? cmd->deadline - now : 0;
    uv_timer_start(&conn->timer, on_timer, wait, 0);
    return;
  }
}

static void schedule_reconnect(rl_conn *conn) {
  if (conn->state == RL_CONN_CLOSED) return;
  uint64_t b = conn->backoff_ms;
  uint64_t delay = b / 2 + rl_random_upto(b / 2);
  conn->backoff_ms = b * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : b * 2;
  uv_timer_start(&conn->retry, on_retry, delay, 0);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata);

static int is_noscript(const redisReply *reply) {
  return reply->type == REDIS_REPLY_ERROR && reply->len >= 8 &&
         memcmp(reply->str, "NOSCRIPT", 8) == 0;
}

/* Resends a script as EVAL with its body. 0, or -1 if it could not be
 * queued (then the caller completes the command as dropped). */
static int resend_as_eval(rl_conn *conn, rl_cmd *cmd) {
  const rl_argv *a = cmd->args;
  const char *argv[a->argc];
  size_t argvlen[a->argc];
  memcpy(argv, a->argv, sizeof(argv[0]) * (size_t)a->argc);
  memcpy(argvlen, a->argvlen, sizeof(argvlen[0]) * (size_t)a->argc);
  argv[0] = "EVAL";
  argvlen[0] = 4;
  argv[1] = rl_script_body((rl_script_id)a->script);
  argvlen[1] = strlen(argv[1]);
  if (conn->ac == NULL) return -1;
  if (redisAsyncCommandArgv(conn->ac, on_reply, cmd, a->argc, argv,
                            argvlen) != REDIS_OK)
    return -1;
  cmd->fallback = 1;
  rl_list_push_back(&conn->pending, &cmd->node);
  if (!cmd->timed_out) {
    cmd->deadline = uv_now(conn->loop) + conn->cfg->command_timeout_ms;
    if (!uv_is_active((uv_handle_t *)&conn->timer)) arm_timer(conn);
  }
  return 0;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  rl_cmd *cmd = privdata;
  rl_conn *conn = cmd->conn;
  redisReply *reply = r;
  rl_list_remove(&cmd->node);
  if (reply != NULL && cmd->args != NULL && cmd->args->script >= 0 &&
      !cmd->args->no_resend && !cmd->fallback && is_noscript(reply)) {
    if (resend_as_eval(conn, cmd) == 0) return;
    reply = NULL;
  }
  int status = reply == NULL ? RL_CMD_DROPPED
               : cmd->timed_out ? RL_CMD_LATE
                                : RL_CMD_REPLY;
  cmd->cb(cmd, reply, status);
  free(cmd);
}

int rl_conn_send(rl_conn *conn, const char *buf, size_t len,
                 const rl_argv *args, rl_cmd_cb cb, void *data, int idx) {
  if (conn->state != RL_CONN_READY || conn->ac == NULL) return -1;
  rl_cmd *cmd = malloc(sizeof *cmd);
  if (cmd == NULL) return -1;
  cmd->conn = conn;
  cmd->deadline = uv_now(conn->loop) + conn->cfg->command_timeout_ms;
  cmd->timed_out = 0;
  cmd->fallback = 0;
  cmd->args = args;
  cmd->cb = cb;
  cmd->data = data;
  cmd->idx = idx;
  if (redisAsyncFormattedCommand(conn->ac, on_reply, cmd, buf, len) !=
      REDIS_OK) {
    free(cmd);
    return -1;
  }
  rl_list_push_back(&conn->pending, &cmd->node);
  if (!uv_is_active((uv_handle_t *)&conn->timer))
    uv_timer_start(&conn->timer, on_timer, conn->cfg->command_timeout_ms, 0);
  return 0;
}

void rl_conn_flush(rl_conn *conn) {
  if (conn->state == RL_CONN_READY && conn->ac != NULL)
    rl_adapter_flush(conn->ac);
}

/* Reads replies already waiting in the socket, without blocking. */
static void drain_socket(rl_conn *conn) {
  if (conn->ac == NULL || conn->state != RL_CONN_READY) return;
  struct pollfd p = {.fd = conn->ac->c.fd, .events = POLLIN};
  if (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
    redisAsyncHandleRead(conn->ac);
}

static void on_timer(uv_timer_t *t) {
  rl_conn *conn = t->data;
  if (conn->state == RL_CONN_CONNECTING) {
    snprintf(conn->err, sizeof conn->err, "connect timed out");
    redisAsyncContext *ac = conn->ac;
    conn->ac = NULL;
    set_state(conn, RL_CONN_DOWN);
    redisAsyncFree(ac); /* never connected: no callbacks but cleanup */
    schedule_reconnect(conn);
    return;
  }
  drain_socket(conn);
  uint64_t now = uv_now(conn->loop);
  rl_list *n = conn->pending.next;
  while (n != &conn->pending) {
    rl_cmd *cmd = rl_container_of(n, rl_cmd, node);
    n = n->next;
    if (cmd->timed_out) continue;
    if (cmd->deadline > now) break;
    cmd->timed_out = 1;
    conn->timeouts++;
    cmd->cb(cmd, NULL, RL_CMD_TIMEOUT);
    if (conn->state == RL_CONN_CLOSED) return; /* freed what n points to */
  }
  arm_timer(conn);
}

static void on_setup_reply(redisAsyncContext *ac, void *r, void *privdata) {
  rl_conn *conn = privdata;
  redisReply *reply = r;
  if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
    snprintf(conn->err, sizeof conn->err, "%s", reply->str);
    conn_log(conn, RLOCK_LOG_ERROR, conn->err);
    redisAsyncDisconnect(ac);
  }
}

/* Reads run_id and uptime from INFO server and hands them to the owner's
 * on_info hook (the restart quarantine and the one-vote-per-server rule
 * live in the lock layer, lib/quarantine.c). Commands sent after INFO are
 * answered after it, so the hook runs before any reply to a lock command
 * on this connection. */
static void on_info(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  rl_conn *conn = privdata;
  redisReply *reply = r;
  if (reply == NULL || reply->type != REDIS_REPLY_STRING) return;
  const char *id = strstr(reply->str, "run_id:");
  const char *up = strstr(reply->str, "uptime_in_seconds:");
  if (id == NULL || up == NULL) return;
  size_t n = strcspn(id + 7, "\r\n");
  if (n >= sizeof conn->run_id) n = sizeof conn->run_id - 1;
  memcpy(conn->run_id, id + 7, n);
  conn->run_id[n] = '\0';
  if (conn->on_info != NULL)
    conn->on_info(conn, conn->run_id, strtoull(up + 18, NULL, 10) * 1000);
}

static void on_connect(const redisAsyncContext *cac, int status) {
  rl_conn *conn = cac->data;
  redisAsyncContext *ac = (redisAsyncContext *)cac;
  uv_timer_stop(&conn->timer);
  if (status != REDIS_OK) {
    snprintf(conn->err, sizeof conn->err, "connect: %s", ac->errstr);
    /* hiredis frees the context after this callback. */
    conn->ac = NULL;
    set_state(conn, RL_CONN_DOWN);
    schedule_reconnect(conn);
    return;
  }
  int flags = fcntl(ac->c.fd, F_GETFD);
  if (flags >= 0) fcntl(ac->c.fd, F_SETFD, flags | FD_CLOEXEC);
  conn->backoff_ms = BACKOFF_MIN_MS;
  conn->connects++;
  /* AUTH and SELECT go first; commands sent after them are queued behind
   * them on the same socket, so the connection is usable at once. A
   * refused AUTH disconnects, and those commands fail. */
  if (conn->url.has_password)
    redisAsyncCommand(ac, on_setup_reply, conn, "AUTH %s",
                      conn->url.password);
  if (conn->url.db != 0)
    redisAsyncCommand(ac, on_setup_reply, conn, "SELECT %d", conn->url.db);
  redisAsyncCommand(ac, on_info, conn, "INFO server");
  /* Every script is loaded before any command that uses it (replies and
   * commands keep their order), so EVALSHA finds it and NOSCRIPT only
   * follows a SCRIPT FLUSH, never a fresh or restarted master. */
  for (int s = 0; s < RL_SCRIPT_COUNT; s++)
    redisAsyncCommand(ac, on_setup_reply, conn, "SCRIPT LOAD %s",
                      rl_script_body((rl_script_id)s));
  set_state(conn, RL_CONN_READY);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  rl_conn *conn = ac->data;
  if (status != REDIS_OK && conn->err[0] == '\0')
    snprintf(conn->err, sizeof conn->err, "disconnected: %s", ac->errstr);
  conn->ac = NULL;
  uv_timer_stop(&conn->timer);
  if (conn->state == RL_CONN_CLOSED) return;
  set_state(conn, RL_CONN_DOWN);
  schedule_reconnect(conn);
}

static void connect_now(rl_conn *conn) {
  redisAsyncContext *ac;
  if (conn->url.kind == RL_URL_UNIX)
    ac = redisAsyncConnectUnix(conn->url.path);
  else
    ac = redisAsyncConnect(conn->url.host, conn->url.port);
  if (ac == NULL || ac->err) {
    snprintf(conn->err, sizeof conn->err, "connect: %s",
             ac ? ac->errstr : "out of memory");
    if (ac) redisAsyncFree(ac);
    schedule_reconnect(conn);
    return;
  }
  ac->data = conn;
  if (rl_adapter_attach(ac, conn->loop, conn->cfg->guard_sigpipe) != 0) {
    snprintf(conn->err, sizeof conn->err, "connect: cannot poll socket");
    redisAsyncFree(ac);
    schedule_reconnect(conn);
    return;
  }
  conn->ac = ac;
  conn->err[0] = '\0';
  set_state(conn, RL_CONN_CONNECTING);
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  uv_timer_start(&conn->timer, on_timer, conn->cfg->connect_timeout_ms, 0);
}

static void on_retry(uv_timer_t *t) { connect_now(t->data); }

int rl_conn_start(rl_conn *conn, uv_loop_t *loop, const rl_url *url,
                  const rl_conn_config *cfg) {
  conn->loop = loop;
  conn->url = *url;
  conn->cfg = cfg;
  conn->ac = NULL;
  conn->state = RL_CONN_DOWN;
  conn->backoff_ms = BACKOFF_MIN_MS;
  rl_list_init(&conn->pending);
  uv_timer_init(loop, &conn->timer);
  uv_timer_init(loop, &conn->retry);
  conn->timer.data = conn;
  conn->retry.data = conn;
  conn->handles_open = 2;
  connect_now(conn);
  return 0;
}

static void on_handle_closed(uv_handle_t *h) {
  rl_conn *conn = h->data;
  if (--conn->handles_open == 0 && conn->on_closed) conn->on_closed(conn);
}

void rl_conn_close(rl_conn *conn) {
  if (conn->state == RL_CONN_CLOSED) return;
  conn->state = RL_CONN_CLOSED;
  if (conn->ac != NULL) {
    redisAsyncContext *ac = conn->ac;
    conn->ac = NULL;
    redisAsyncFree(ac); /* pending commands are called back: DROPPED */
  }
  uv_close((uv_handle_t *)&conn->timer, on_handle_closed);
  uv_close((uv_handle_t *)&conn->retry, on_handle_closed);
}
