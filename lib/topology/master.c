/*
 * What every kind of master shares (master.h): the common fields and the
 * small helpers the kinds use for logs and pub/sub replies. This file is
 * the base of the kinds and names none of them: a kind is reached through
 * its rl_master_ops, and the constructor that picks the kind from the
 * address is master_new.c, above every kind.
 */
#include "master.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"

/* The name logs show: the address without credentials. */
static void display_name(const rl_master_url *u, char *buf, size_t size) {
  const rl_url *s = &u->url;
  if (u->kind == RL_TOPO_CLUSTER) {
    const rl_topo_addr *a = &u->topo.addr[0];
    snprintf(buf, size,
             strchr(a->host, ':') ? "%s://[%.200s]:%d" : "%s://%.200s:%d",
             s->tls ? "rediss-cluster" : "redis-cluster", a->host, a->port);
  } else if (u->kind == RL_TOPO_SENTINEL) {
    const rl_topo_addr *a = &u->topo.addr[0];
    snprintf(buf, size, "%s://%.200s:%d/%.60s",
             s->tls ? "rediss-sentinel" : "redis-sentinel", a->host, a->port,
             u->topo.service);
  } else if (s->kind == RL_URL_UNIX) {
    snprintf(buf, size, "%.200s", s->path);
  } else {
    snprintf(buf, size, strchr(s->host, ':') ? "[%.255s]:%d" : "%.255s:%d",
             s->host, s->port);
  }
}

void rl_master_init(rl_master *m, const rl_master_ops *ops, int kind,
                    const rl_master_url *url, uv_loop_t *loop,
                    const rl_conn_config *cfg, int idx) {
  m->ops = ops;
  m->kind = kind;
  m->idx = idx;
  m->loop = loop;
  m->cfg = *cfg;
  m->sub_cfg = *cfg;
  m->sub_cfg.mode = RL_CONN_SUBSCRIBER;
  m->sub_cfg.command_timeout_ms = 0; /* subscriptions have no deadline */
  atomic_init(&m->restarts, 0);
  atomic_init(&m->errors, 0);
  atomic_init(&m->unacked, 0);
  atomic_init(&m->failovers, 0);
  m->acks_have = -1;
  display_name(url, m->name, sizeof m->name);
}

void rl_node_address(const rl_conn *node, char *buf, size_t size) {
  const rl_url *u = &node->url;
  if (u->kind == RL_URL_UNIX)
    snprintf(buf, size, "%s", u->path);
  else if (strchr(u->host, ':') != NULL)
    snprintf(buf, size, "[%s]:%d", u->host, u->port);
  else
    snprintf(buf, size, "%s:%d", u->host, u->port);
}

void rl_master_log(rl_master *m, rl_conn *node, int level, const char *fmt,
                   ...) {
  if (m->on_log == NULL) return;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  m->on_log(m, node, level, msg);
}

int rl_master_push_kind(const redisReply *r, const char **ch, size_t *len) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) return 0;
  const redisReply *k = r->element[0], *c = r->element[1];
  if (k->type != REDIS_REPLY_STRING || c->type != REDIS_REPLY_STRING)
    return 0;
  *ch = c->str;
  *len = (size_t)c->len;
  if (strcasecmp(k->str, "message") == 0 || strcasecmp(k->str, "smessage") == 0)
    return 1;
  if (strcasecmp(k->str, "unsubscribe") == 0 ||
      strcasecmp(k->str, "sunsubscribe") == 0)
    return 2;
  return 0;
}

void rl_master_sub_push(rl_conn *conn, const redisReply *msg) {
  rl_master *m = conn->master;
  const rl_master_sub_hooks *h = m->sub_hooks;
  const char *ch;
  size_t len;
  if (h == NULL) return;
  switch (rl_master_push_kind(msg, &ch, &len)) {
    case 1:
      if (h->message) h->message(m->sub_data, m, ch, len);
      break;
    case 2:
      if (h->dropped) h->dropped(m->sub_data, m, conn, ch, len);
      break;
  }
}

void rl_master_sub_log(rl_conn *conn, int level, const char *msg) {
  rl_master *m = conn->master;
  if (m->sub_hooks && m->sub_hooks->log)
    m->sub_hooks->log(m->sub_data, m, level, msg);
}

/* Formats SUBSCRIBE/UNSUBSCRIBE (or their shard forms) of a channel into
 * a new buffer (free()); NULL when out of memory. */
static char *sub_bytes(const rl_msub *s, int shard, size_t *len) {
  static const char *const words[2][2] = {{"SUBSCRIBE", "UNSUBSCRIBE"},
                                          {"SSUBSCRIBE", "SUNSUBSCRIBE"}};
  const char *argv[] = {words[shard != 0][s->unsubscribe != 0], s->channel};
  size_t argvlen[] = {strlen(argv[0]), s->len};
  size_t size = rl_resp_size(2, argv, argvlen);
  char *b = malloc(size);
  if (b == NULL) return NULL;
  *len = rl_resp_write(b, 2, argv, argvlen);
  return b;
}

/* A SUBSCRIBE or UNSUBSCRIBE in flight: its bytes, which the connection
 * writes from here, and its channel, for matching the reply. */
typedef struct sub_cmd {
  rl_msub *s;
  rl_master *m;
  rl_msub_stale_fn stale;
  uv_buf_t buf;
  char *bytes;
  char channel[];
} sub_cmd;

static void on_sub_reply(rl_cmd *cmd, redisReply *reply, int status) {
  sub_cmd *sc = cmd->data;
  rl_msub *s = sc->s;
  rl_master *m = sc->m;
  rl_msub_stale_fn stale = sc->stale;
  free(sc->bytes);
  free(sc);
  if (status != RL_CMD_REPLY && status != RL_CMD_LATE) reply = NULL;
  if (reply != NULL && stale != NULL && stale(m, cmd->conn, reply))
    reply = NULL;
  s->cb(s, cmd->conn, reply, reply != NULL ? status : RL_CMD_DROPPED);
}

int rl_master_sub_write(rl_master *m, rl_conn *conn, rl_msub *s, int shard,
                        rl_msub_stale_fn stale) {
  if (conn == NULL || conn->state != RL_CONN_READY) return -1;
  sub_cmd *sc = malloc(sizeof *sc + s->len + 1);
  if (sc == NULL) return -1;
  size_t len;
  sc->s = s;
  sc->m = m;
  sc->stale = stale;
  memcpy(sc->channel, s->channel, s->len);
  sc->channel[s->len] = '\0';
  sc->bytes = sub_bytes(s, shard, &len);
  if (sc->bytes == NULL) {
    free(sc);
    return -1;
  }
  sc->buf = uv_buf_init(sc->bytes, (unsigned)len);
  if (rl_conn_send_sub(conn, &sc->buf, 1, sc->channel, s->len,
                       s->unsubscribe, on_sub_reply, sc, m->idx) != 0) {
    free(sc->bytes);
    free(sc);
    return -1;
  }
  return 0;
}
