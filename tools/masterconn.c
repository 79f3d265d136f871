/*
 * Blocking access to one master, for the read-only subcommands (status,
 * scan). They run on the library's own master layer (lib/topology/master.h, its
 * connections in bare mode: AUTH and SELECT only) on a private libuv
 * loop, so that they reach every master the library reaches: TLS
 * (rediss://, with the tool's --cacert, --cert, --key, --sni, --insecure),
 * ACL users, unix sockets with a password and a db, and a Redis Cluster,
 * whose commands the master routes by slot and whose primaries scan
 * visits one by one. Commands are formatted by hiredis, as redisCommand
 * formats them, and pipelined; each call runs the loop until its reply,
 * the timeout, or a failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "master.h"
#include "options.h"
#include "tool.h"
#include "tls.h"

typedef struct pending {
  struct pending *next;
  rl_mcmd cmd;
  char *bytes;
  uv_buf_t buf;
  int done;
  int status;
  redisReply *reply; /* a copy: the connection frees its own */
  char node[300];    /* the node that answered */
} pending;

struct rt_master {
  uv_loop_t loop;
  uv_timer_t guard; /* bounds each wait */
  rl_master *m;
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
  rt_master *c = t->data;
  c->expired = 1;
}

static void on_closed(rl_master *m) {
  rt_master *c = m->data;
  c->closed = 1;
}

static void on_error(rl_master *m, rl_conn *node, const char *text,
                     int refused, int tls) {
  (void)refused;
  (void)tls;
  rt_master *c = m->data;
  char addr[300] = "";
  if (node != NULL && m->kind != RL_MASTER_SINGLE)
    rl_node_address(node, addr, sizeof addr);
  snprintf(c->err, sizeof c->err, "%s%s%s", addr, addr[0] ? ": " : "",
           text);
}

/* A single server that cannot be reached fails the wait at once. */
static void on_node_state(rl_master *m, rl_conn *node, int state) {
  rt_master *c = m->data;
  if (state != RL_CONN_DOWN || m->kind != RL_MASTER_SINGLE) return;
  c->failed = 1;
  snprintf(c->err, sizeof c->err, "%s", node->err);
}

/* Runs the loop until *flag, a failure, or the timeout. */
static void run_until(rt_master *c, const int *flag) {
  c->expired = 0;
  uv_timer_start(&c->guard, on_guard, (uint64_t)c->timeout_ms, 0);
  while (!*flag && !c->failed && !c->expired) uv_run(&c->loop, UV_RUN_ONCE);
  uv_timer_stop(&c->guard);
  if (!*flag && !c->failed) {
    c->failed = 1;
    snprintf(c->err, sizeof c->err, "timed out after %lld ms", c->timeout_ms);
  }
}

rt_master *rt_master_open(const char *spec, const rt_global *g,
                          long long timeout_ms, char *err, size_t errsize) {
  static rl_master_url url; /* large; the tool is single-threaded */
  const char *why = "invalid";
  if (rl_master_url_parse(spec, &url, &why) != 0) {
    snprintf(err, errsize, "bad master address: %s", why);
    return NULL;
  }
  if (rl_master_url_resolve(&url) != 0) {
    snprintf(err, errsize, "cannot resolve the master's host");
    return NULL;
  }
  if (url.url.tls && tls_ctx == NULL) {
    rl_tls_config t = {g->cacert, g->cacertdir, g->cert, g->key,
                       g->insecure};
    char reason[300];
    tls_ctx = rl_tls_ctx_new(&t, reason, sizeof reason);
    if (tls_ctx == NULL) {
      snprintf(err, errsize, "%s", reason);
      return NULL;
    }
  }
  rt_master *c = calloc(1, sizeof *c);
  if (c == NULL || uv_loop_init(&c->loop) != 0) {
    free(c);
    snprintf(err, errsize, "out of memory");
    return NULL;
  }
  c->timeout_ms = timeout_ms;
  rl_conn_config cfg = {0};
  cfg.command_timeout_ms = (uint64_t)timeout_ms;
  cfg.connect_timeout_ms = (uint64_t)timeout_ms;
  cfg.mode = RL_CONN_BARE;
  cfg.tls = tls_ctx;
  cfg.tls_server_name = g->sni;
  uv_timer_init(&c->loop, &c->guard);
  c->guard.data = c;
  c->m = rl_master_new(&url, &c->loop, &cfg, 0);
  if (c->m == NULL) {
    snprintf(err, errsize, "out of memory");
    c->closed = 1;
    rt_master_free(c);
    return NULL;
  }
  c->m->data = c;
  c->m->on_error = on_error;
  c->m->on_node_state = on_node_state;
  c->m->on_closed = on_closed;
  rl_master_start(c->m);
  int ready = 0;
  c->expired = 0;
  uv_timer_start(&c->guard, on_guard, (uint64_t)timeout_ms, 0);
  while (!(ready = rl_master_ready(c->m)) && !rl_master_refused(c->m) &&
         !c->failed && !c->expired)
    uv_run(&c->loop, UV_RUN_ONCE);
  uv_timer_stop(&c->guard);
  if (!ready) {
    snprintf(err, errsize, "%s", c->err[0] ? c->err : "connect timed out");
    rt_master_free(c);
    return NULL;
  }
  return c;
}

static void on_reply(rl_mcmd *cmd, rl_conn *node, redisReply *r,
                     int status) {
  pending *p = cmd->data;
  if (status == RL_CMD_TIMEOUT) return; /* the wait's guard says so */
  p->done = 1;
  p->status = status;
  if (node != NULL) rl_node_address(node, p->node, sizeof p->node);
  if (r != NULL) p->reply = reply_copy(r);
}

static unsigned encode(rl_mcmd *cmd, int flavor, uv_buf_t *bufs,
                       int *script) {
  (void)flavor;
  pending *p = cmd->data;
  bufs[0] = p->buf;
  *script = -1;
  return 1;
}

static pending *pending_new(rl_conn *node, int slot, const char *fmt,
                            va_list ap) {
  pending *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  int len = redisvFormatCommand(&p->bytes, fmt, ap);
  if (len < 0) {
    free(p);
    return NULL;
  }
  p->buf = uv_buf_init(p->bytes, (unsigned)len);
  p->cmd.slot = slot;
  p->cmd.node = node;
  p->cmd.encode = encode;
  p->cmd.cb = on_reply;
  p->cmd.data = p;
  return p;
}

static void pending_free(pending *p) {
  if (p->reply) freeReplyObject(p->reply);
  redisFreeCommand(p->bytes);
  free(p);
}

static int send_pending(rt_master *c, pending *p) {
  if (rl_master_send(c->m, &p->cmd) != 0) {
    pending_free(p);
    c->failed = 1;
    if (c->err[0] == '\0') snprintf(c->err, sizeof c->err, "not connected");
    return REDIS_ERR;
  }
  if (c->tail)
    c->tail->next = p;
  else
    c->head = p;
  c->tail = p;
  return REDIS_OK;
}

int rt_master_append(rt_master *c, rl_conn *node, int slot, const char *fmt,
                     ...) {
  if (c->failed) return REDIS_ERR;
  va_list ap;
  va_start(ap, fmt);
  pending *p = pending_new(node, slot, fmt, ap);
  va_end(ap);
  if (p == NULL) return REDIS_ERR;
  return send_pending(c, p);
}

int rt_master_get_reply(rt_master *c, redisReply **out, char *node,
                        size_t nodesize) {
  *out = NULL;
  pending *p = c->head;
  if (p == NULL) return REDIS_ERR;
  run_until(c, &p->done);
  if (!p->done || p->reply == NULL) {
    if (p->done && !c->failed && c->err[0] == '\0')
      snprintf(c->err, sizeof c->err, "connection lost");
    c->failed = 1;
    return REDIS_ERR;
  }
  c->head = p->next;
  if (c->head == NULL) c->tail = NULL;
  *out = p->reply;
  if (node != NULL && nodesize > 0) snprintf(node, nodesize, "%s", p->node);
  p->reply = NULL;
  pending_free(p);
  return REDIS_OK;
}

redisReply *rt_master_command(rt_master *c, rl_conn *node, int slot,
                              const char *fmt, ...) {
  if (c->failed || c->head != NULL) return NULL; /* not mixed */
  va_list ap;
  va_start(ap, fmt);
  pending *p = pending_new(node, slot, fmt, ap);
  va_end(ap);
  if (p == NULL || send_pending(c, p) != REDIS_OK) return NULL;
  redisReply *r = NULL;
  return rt_master_get_reply(c, &r, NULL, 0) == REDIS_OK ? r : NULL;
}

int rt_master_nodes(rt_master *c, rl_conn **out, int cap) {
  return rl_master_primaries(c->m, out, cap);
}

int rt_master_is_cluster(const rt_master *c) {
  return c->m->kind == RL_MASTER_CLUSTER;
}

const char *rt_master_errstr(const rt_master *c) {
  return c->err[0] ? c->err : "unknown error";
}

void rt_master_free(rt_master *c) {
  if (c == NULL) return;
  if (c->m != NULL) {
    rl_master_close(c->m); /* completes what is pending, DROPPED */
    while (!c->closed) uv_run(&c->loop, UV_RUN_ONCE);
    rl_master_free(c->m);
  }
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
