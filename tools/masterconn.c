/*
 * Blocking connections to one master, for the read-only subcommands
 * (status, scan). They run on the library's own connection layer
 * (lib/conn.c, in its bare mode: AUTH and SELECT only) on a private libuv
 * loop, so that they reach every master the library reaches: TLS
 * (rediss://, with the tool's --cacert, --cert, --key, --sni, --insecure),
 * ACL users, unix sockets with a password and a db. Commands are
 * formatted by hiredis, as redisCommand formats them, and pipelined; each
 * call runs the loop until its reply, the timeout, or a failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "conn.h"
#include "tool.h"
#include "tls.h"

typedef struct pending {
  struct pending *next;
  char *bytes;
  uv_buf_t buf;
  int done;
  int status;
  redisReply *reply; /* a copy: the connection frees its own */
} pending;

struct rt_conn {
  uv_loop_t loop;
  uv_timer_t guard; /* bounds each wait */
  rl_conn conn;
  rl_conn_config cfg;
  long long timeout_ms;
  int expired, closed, failed;
  pending *head, *tail;
  char err[512];
};

/* One TLS context for the process, made on the first rediss:// master. */
static rl_tls_ctx *tls_ctx;

static redisReply *reply_copy(const redisReply *r) {
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
  if (r->elements > 0) {
    c->element = calloc(r->elements, sizeof *c->element);
    if (c->element == NULL) goto fail;
    c->elements = r->elements;
    for (size_t i = 0; i < r->elements; i++)
      if ((c->element[i] = reply_copy(r->element[i])) == NULL) goto fail;
  }
  return c;
fail:
  freeReplyObject(c);
  return NULL;
}

static void on_guard(uv_timer_t *t) {
  rt_conn *c = t->data;
  c->expired = 1;
}

static void on_closed(rl_conn *conn) {
  rt_conn *c = conn->data;
  c->closed = 1;
}

static void on_state(rl_conn *conn, int state) {
  rt_conn *c = conn->data;
  if (state == RL_CONN_DOWN) {
    c->failed = 1;
    snprintf(c->err, sizeof c->err, "%s", conn->err);
  }
}

/* Runs the loop until *flag, a failure, or the timeout. */
static void run_until(rt_conn *c, const int *flag) {
  c->expired = 0;
  uv_timer_start(&c->guard, on_guard, (uint64_t)c->timeout_ms, 0);
  while (!*flag && !c->failed && !c->expired)
    uv_run(&c->loop, UV_RUN_ONCE);
  uv_timer_stop(&c->guard);
  if (!*flag && !c->failed) {
    c->failed = 1;
    snprintf(c->err, sizeof c->err, "timed out after %lld ms", c->timeout_ms);
  }
}

rt_conn *rt_conn_open(const rl_url *url, const rt_global *g,
                      long long timeout_ms, char *err, size_t errsize) {
  if (url->tls && tls_ctx == NULL) {
    rl_tls_config t = {g->cacert, g->cacertdir, g->cert, g->key,
                       g->insecure};
    char why[300];
    tls_ctx = rl_tls_ctx_new(&t, why, sizeof why);
    if (tls_ctx == NULL) {
      snprintf(err, errsize, "%s", why);
      return NULL;
    }
  }
  rt_conn *c = calloc(1, sizeof *c);
  if (c == NULL || uv_loop_init(&c->loop) != 0) {
    free(c);
    snprintf(err, errsize, "out of memory");
    return NULL;
  }
  c->timeout_ms = timeout_ms;
  c->cfg.command_timeout_ms = (uint64_t)timeout_ms;
  c->cfg.connect_timeout_ms = (uint64_t)timeout_ms;
  c->cfg.mode = RL_CONN_BARE;
  c->cfg.tls = tls_ctx;
  c->cfg.tls_server_name = g->sni;
  uv_timer_init(&c->loop, &c->guard);
  c->guard.data = c;
  c->conn.data = c;
  c->conn.on_state = on_state;
  c->conn.on_closed = on_closed;
  rl_conn_start(&c->conn, &c->loop, url, &c->cfg);
  int ready = 0;
  c->expired = 0;
  uv_timer_start(&c->guard, on_guard, (uint64_t)timeout_ms, 0);
  while (!(ready = c->conn.state == RL_CONN_READY) && !c->failed &&
         !c->expired)
    uv_run(&c->loop, UV_RUN_ONCE);
  uv_timer_stop(&c->guard);
  if (!ready) {
    snprintf(err, errsize, "%s",
             c->failed ? c->err : "connect timed out");
    rt_conn_free(c);
    return NULL;
  }
  return c;
}

static void on_reply(rl_cmd *cmd, redisReply *r, int status) {
  pending *p = cmd->data;
  if (status == RL_CMD_TIMEOUT) return; /* the wait's guard says so */
  p->done = 1;
  p->status = status;
  if (r != NULL) p->reply = reply_copy(r);
}

int rt_conn_append(rt_conn *c, const char *fmt, ...) {
  if (c->failed) return REDIS_ERR;
  pending *p = calloc(1, sizeof *p);
  if (p == NULL) return REDIS_ERR;
  va_list ap;
  va_start(ap, fmt);
  int len = redisvFormatCommand(&p->bytes, fmt, ap);
  va_end(ap);
  if (len < 0) {
    free(p);
    return REDIS_ERR;
  }
  p->buf = uv_buf_init(p->bytes, (unsigned)len);
  if (rl_conn_send(&c->conn, &p->buf, 1, -1, 0, on_reply, p, 0) != 0) {
    redisFreeCommand(p->bytes);
    free(p);
    c->failed = 1;
    snprintf(c->err, sizeof c->err, "%s",
             c->conn.err[0] ? c->conn.err : "not connected");
    return REDIS_ERR;
  }
  if (c->tail) c->tail->next = p;
  else c->head = p;
  c->tail = p;
  return REDIS_OK;
}

static void pending_free(pending *p) {
  if (p->reply) freeReplyObject(p->reply);
  redisFreeCommand(p->bytes);
  free(p);
}

int rt_conn_get_reply(rt_conn *c, redisReply **out) {
  *out = NULL;
  pending *p = c->head;
  if (p == NULL) return REDIS_ERR;
  run_until(c, &p->done);
  if (!p->done || p->reply == NULL) {
    if (p->done && !c->failed)
      snprintf(c->err, sizeof c->err, "%s",
               c->conn.err[0] ? c->conn.err : "connection lost");
    c->failed = 1;
    return REDIS_ERR;
  }
  c->head = p->next;
  if (c->head == NULL) c->tail = NULL;
  *out = p->reply;
  p->reply = NULL;
  pending_free(p);
  return REDIS_OK;
}

redisReply *rt_conn_command(rt_conn *c, const char *fmt, ...) {
  if (c->failed) return NULL;
  pending *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  va_list ap;
  va_start(ap, fmt);
  int len = redisvFormatCommand(&p->bytes, fmt, ap);
  va_end(ap);
  if (len < 0 || c->head != NULL) { /* not mixed with appended ones */
    redisFreeCommand(p->bytes);
    free(p);
    return NULL;
  }
  p->buf = uv_buf_init(p->bytes, (unsigned)len);
  if (rl_conn_send(&c->conn, &p->buf, 1, -1, 0, on_reply, p, 0) != 0) {
    redisFreeCommand(p->bytes);
    free(p);
    c->failed = 1;
    snprintf(c->err, sizeof c->err, "%s",
             c->conn.err[0] ? c->conn.err : "not connected");
    return NULL;
  }
  c->head = c->tail = p;
  redisReply *r = NULL;
  return rt_conn_get_reply(c, &r) == REDIS_OK ? r : NULL;
}

const char *rt_conn_errstr(const rt_conn *c) {
  return c->err[0] ? c->err : "unknown error";
}

void rt_conn_free(rt_conn *c) {
  if (c == NULL) return;
  rl_conn_close(&c->conn); /* completes what is pending, DROPPED */
  while (!c->closed) uv_run(&c->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&c->guard, NULL);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  uv_loop_close(&c->loop);
  while (c->head) {
    pending *p = c->head;
    c->head = p->next;
    pending_free(p);
  }
  free(c);
}
