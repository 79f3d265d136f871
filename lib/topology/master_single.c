/*
 * A master that is one server: one command connection, and one subscriber
 * connection made when pub/sub is first used. Everything is the
 * connection's; this file only adapts its callbacks to the master's
 * (master.h), so that the rest of rlock has one way to talk to a master
 * whatever stands behind it.
 */
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "master_ack.h"

typedef struct single {
  rl_master m;
  rl_url url;
  rl_conn cmd;
  rl_conn sub;
  int cmd_started; /* cmd was started (and must be closed) */
  int sub_started; /* sub was started (and must be closed) */
  int sub_closing;
  int sub_close_asked; /* by rl_master_sub_close: its hook is owed */
  int open;        /* connections started and not yet closed */
  int closing;
} single;

static single *of(rl_master *m) { return (single *)m; }

/* --- command connection ----------------------------------------------------- */

static void on_cmd_state(rl_conn *conn, int state) {
  rl_master *m = conn->master;
  if (m->on_node_state) m->on_node_state(m, conn, state);
}

static void on_cmd_info(rl_conn *conn, const char *run_id, uint64_t up_ms) {
  rl_master *m = conn->master;
  if (m->on_node_info) m->on_node_info(m, conn, run_id, up_ms);
}

static void on_cmd_error(rl_conn *conn, const char *text, int refused,
                         int tls) {
  rl_master *m = conn->master;
  if (m->on_error) m->on_error(m, conn, text, refused, tls);
}

static void on_cmd_log(rl_conn *conn, int level, const char *msg) {
  rl_master *m = conn->master;
  if (m->on_log) m->on_log(m, conn, level, msg);
}

static void maybe_closed(single *s) {
  if (s->open == 0 && s->closing && s->m.on_closed) s->m.on_closed(&s->m);
}

static void on_conn_closed(rl_conn *conn) {
  single *s = of(conn->master);
  s->open--;
  if (conn == &s->sub) {
    s->sub_closing = 0;
    if (s->sub_close_asked && s->m.sub_hooks && s->m.sub_hooks->closed)
      s->m.sub_hooks->closed(s->m.sub_data, &s->m);
  }
  maybe_closed(s);
}

static int single_start(rl_master *m) {
  single *s = of(m);
  s->cmd.master = m;
  s->cmd.data = s;
  s->cmd.on_state = on_cmd_state;
  s->cmd.on_info = on_cmd_info;
  s->cmd.on_error = on_cmd_error;
  s->cmd.on_log = on_cmd_log;
  s->cmd.on_closed = on_conn_closed;
  int rc = rl_conn_start(&s->cmd, m->loop, &s->url, &m->cfg);
  if (rc == 0) {
    s->open++;
    s->cmd_started = 1;
  }
  return rc;
}

static void on_cmd_reply(rl_cmd *cmd, redisReply *reply, int status) {
  rl_mcmd *c = cmd->data;
  c->cb(c, cmd->conn, reply, status);
}

rl_mcmd *rl_master_single_mcmd(const rl_cmd *cmd) {
  return cmd->cb == on_cmd_reply ? cmd->data : NULL;
}

static int single_send(rl_master *m, rl_mcmd *c) {
  single *s = of(m);
  uv_buf_t bufs[RL_CONN_MAX_BUFS];
  int script = -1;
  unsigned n = c->encode(c, RL_FLAVOR_PLAIN, bufs, &script);
  if (n == 0) return RL_CONN_EDOWN;
  if (rl_ack_wanted(m, c))
    return rl_ack_send(m, &s->cmd, c, bufs, n, script, NULL);
  return rl_conn_send_until(&s->cmd, bufs, n, script, c->no_resend,
                            c->clocked, 0, on_cmd_reply, c, c->idx);
}

static void single_flush(rl_master *m) { rl_conn_flush(&of(m)->cmd); }

static int single_primaries(rl_master *m, rl_conn **out, int cap) {
  if (cap > 0) out[0] = &of(m)->cmd;
  return 1;
}

static rl_conn *single_node_of(rl_master *m, int slot) {
  (void)slot;
  return &of(m)->cmd;
}

static int single_ready(const rl_master *m) {
  const single *s = (const single *)m;
  return s->cmd_started && rl_conn_ready(&s->cmd);
}

static int single_refused(const rl_master *m) {
  return ((const single *)m)->cmd.refused;
}

/* --- subscriber connection ---------------------------------------------------- */

static void on_sub_state(rl_conn *conn, int state) {
  rl_master *m = conn->master;
  const rl_master_sub_hooks *h = m->sub_hooks;
  if (h == NULL || of(m)->sub_closing) return;
  if (state == RL_CONN_READY && h->resync)
    h->resync(m->sub_data, m);
  else if (state == RL_CONN_DOWN && h->down)
    h->down(m->sub_data, m, conn);
}

static void single_sub_start(rl_master *m) {
  single *s = of(m);
  if (s->sub_started || s->closing) return;
  s->sub_started = 1;
  s->sub.master = m;
  s->sub.data = s;
  s->sub.on_state = on_sub_state;
  s->sub.on_push = rl_master_sub_push;
  s->sub.on_log = rl_master_sub_log;
  s->sub.on_closed = on_conn_closed;
  if (rl_conn_start(&s->sub, m->loop, &s->url, &m->sub_cfg) == 0) s->open++;
}

static int single_sub_send(rl_master *m, rl_msub *s) {
  single *sg = of(m);
  if (!sg->sub_started) return -1;
  if (s->unsubscribe && s->where != &sg->sub) return -1;
  return rl_master_sub_write(m, &sg->sub, s, 0, NULL);
}

static int single_sub_up(rl_master *m, const char *ch, size_t len) {
  (void)ch;
  (void)len;
  single *s = of(m);
  return s->sub_started && s->sub.state == RL_CONN_READY;
}

static rl_conn *single_sub_where(rl_master *m, const char *ch, size_t len) {
  (void)ch;
  (void)len;
  return &of(m)->sub;
}

static void single_sub_close(rl_master *m) {
  single *s = of(m);
  if (s->sub_close_asked) return;
  s->sub_close_asked = 1;
  if (!s->sub_started || (s->sub.state == RL_CONN_CLOSED && !s->sub_closing)) {
    if (m->sub_hooks && m->sub_hooks->closed)
      m->sub_hooks->closed(m->sub_data, m);
    return;
  }
  if (s->sub.state != RL_CONN_CLOSED) {
    s->sub_closing = 1;
    rl_conn_close(&s->sub);
  }
}

/* --- metrics and lifecycle ------------------------------------------------------- */

static void single_metrics(rl_master *m, rlock_master_metrics *mm) {
  rl_conn *cn = &of(m)->cmd;
  rl_node_address(cn, mm->address, sizeof mm->address);
  mm->up = atomic_load(&cn->up);
  mm->timeouts = atomic_load(&cn->timeouts);
  mm->errors = atomic_load(&cn->errors);
  uint64_t connects = atomic_load(&cn->connects);
  mm->reconnects = connects > 0 ? connects - 1 : 0;
  mm->restarts = atomic_load(&m->restarts);
  rl_conn_error_text(cn, mm->error, sizeof mm->error);
}

static void single_close(rl_master *m) {
  single *s = of(m);
  if (s->closing) return;
  s->closing = 1;
  if (s->sub_started && s->sub.state != RL_CONN_CLOSED) {
    s->sub_closing = 1;
    rl_conn_close(&s->sub);
  }
  if (s->cmd_started) rl_conn_close(&s->cmd);
  maybe_closed(s);
}

static void single_free(rl_master *m) { free(of(m)); }

static const rl_master_ops single_ops = {
    single_start,     single_send,     single_flush,   single_primaries,
    single_node_of,   single_ready,    single_refused, single_sub_start,
    single_sub_send,  single_sub_up,   single_sub_where, single_sub_close,
    single_metrics,
    single_close,     single_free};

rl_master *rl_master_single_new(const rl_master_url *url, uv_loop_t *loop,
                                const rl_conn_config *cfg, int idx) {
  single *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  rl_master_init(&s->m, &single_ops, RL_MASTER_SINGLE, url, loop, cfg, idx);
  s->url = url->url;
  return &s->m;
}
