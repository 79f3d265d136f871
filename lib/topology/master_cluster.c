/*
 * A master that is a Redis Cluster (docs/architecture.md). It keeps
 * the cluster's slot map, one command connection per node it has used
 * (and a subscriber connection per node, for the shard channels of that
 * node's slots), and routes each command by its slot through the redirect
 * state machine of route.h.
 *
 * Why it is built this way:
 *
 * One deadline per command. A command starts its route with the master
 * timeout as its deadline, and every attempt is written with that same
 * absolute deadline (rl_conn_send_until), so neither a redirect nor a
 * retry after CLUSTERDOWN extends it, and an acquire's master-clock
 * deadline, appended by whichever node connection writes it, is in that
 * node's clock. A reply after the deadline is LATE whatever it says
 * (route.h), and the sender is told TIMEOUT before it, as a plain
 * connection would: a stale grant never counts and is undone.
 *
 * At most one attempt in flight. An attempt that waits (a backoff, a node
 * still connecting, the first slot map) is parked here with its deadline;
 * one timer serves them all. A command's callback therefore runs with at
 * most one TIMEOUT and then exactly one final status, as master.h says.
 *
 * The map. It comes from CLUSTER SHARDS (CLUSTER SLOTS before 7.0) asked
 * of a ready primary, or of a seed; at most one request is in flight, and
 * not more than one every RL_REFRESH_MIN_MS, on errors (MOVED to a node
 * the map lacks, CLUSTERDOWN, READONLY, a command that timed out, a lost
 * connection, a dropped shard subscription) and every RL_REFRESH_MS. A
 * MOVED updates the map at once for its slot. A map that fails to build
 * leaves the old one.
 *
 * Hung nodes. A node that stops answering (a stopped process, a full
 * socket) keeps its connection, so nothing but a deadline says so. A
 * command that times out marks its node stalled until the node answers
 * anything again; a stalled node is asked for the map only when no other
 * node is ready, a map request that times out is given up and asked of
 * another node at once (its late answer is ignored), and while a primary
 * of the map is stalled the map is asked for every RL_REFRESH_FAIL_MS, so
 * that the replica the cluster promotes in its place is found within a
 * second of its promotion.
 *
 * Pinned commands (batches grouped by node). A batch answered READONLY
 * or MOVED as a whole was refused before it ran: its node is no longer
 * the primary of its slots (a failover, manual or not). It is not
 * reported; the map is asked for, of that node first (it knows whom it
 * follows now), and the batch is written again, within its first
 * deadline, to the node that serves its first key's slot by the new map.
 * Every key of a batch was on one node, and a failover moves a node's
 * slots together, so that is where they all are; a key that is not is
 * answered as such per key and renewed or released alone, routed.
 *
 * Nodes are never freed before the master: a node that leaves the map
 * keeps its struct (and its closed connections) so that any rl_conn
 * pointer given out stays valid; an idle one is disconnected.
 */
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "master_ack.h"
#include "redirect.h"
#include "route.h"
#include "slot.h"
#include "slotmap.h"

#define RL_REFRESH_MS 10000
#define RL_REFRESH_MIN_MS 100
#define RL_REFRESH_FAIL_MS 1000 /* after a map that could not be used */
#define IDLE_CLOSE_MS 30000 /* a node out of the map, unused this long */

typedef struct cluster cluster;
typedef struct cl_node cl_node;

/* One node of the cluster, as this master knows it. */
struct cl_node {
  cl_node *next; /* in cl->nodes */
  cluster *cl;
  char host[RL_SLOTMAP_HOST_MAX];
  char tls_name[RL_SLOTMAP_HOST_MAX];
  int port;
  int seed;      /* an address from the URL */
  int primary;   /* a primary of the current map */
  rl_conn *cmd;  /* NULL until used; replaced after an idle close */
  rl_conn *sub;  /* likewise, for shard channels */
  uint64_t used_ms;
  int stalled;   /* a command to it timed out, and it has not answered
                    anything since */
};

/* A pinned command (rl_mcmd.node set): one node, no route, but written
 * again to its slot's new primary after READONLY or MOVED. */
typedef struct pinned {
  rl_list link;     /* in cl->repin while it waits for a new map */
  cluster *cl;
  rl_mcmd *c;
  cl_node *node;    /* the node of the last attempt */
  int64_t until_us; /* the first attempt's deadline, kept by every other */
  int told_timeout;
  int script;
  unsigned nbufs;
  uv_buf_t bufs[RL_CONN_MAX_BUFS];
} pinned;

/* A closed connection kept until the master is freed. */
typedef struct grave {
  struct grave *next;
  rl_conn *conn;
} grave;

/* One routed command in flight. */
typedef struct flight {
  rl_list link;   /* in cl->parked or cl->unmapped while waiting */
  cluster *cl;
  rl_mcmd *c;
  rl_route route;
  int64_t until_us;
  uint64_t at_ms;   /* parked: resume then */
  cl_node *wait;    /* parked: resume when this node is ready */
  int inflight;     /* an attempt awaits its connection's callback */
  int timed_out;    /* TIMEOUT was reported */
  unsigned nbufs;
  int script;
  uv_buf_t bufs[RL_CONN_MAX_BUFS];
  cl_node *node;    /* the last attempt's node */
} flight;

struct cluster {
  rl_master m;
  rl_master_url url;
  rl_slotmap map;
  int have_map;
  cl_node *slot_node[RL_SLOTS];
  cl_node *nodes;
  grave *graves;
  rl_list parked;   /* flights waiting for a time or a node */
  rl_list unmapped; /* flights waiting for the first map */
  rl_list repin;    /* pinned commands waiting for a new map */
  uv_timer_t timer;    /* the parked flights */
  uv_timer_t refresher; /* periodic and deferred refreshes */
  int handles;          /* libuv handles and connections still open */
  int started, closing;
  /* Discovery. */
  int discovering;      /* the first map is still being sought */
  int refreshing;       /* a CLUSTER SHARDS/SLOTS is in flight */
  int refresh_wanted;   /* another one when the current ends */
  cl_node *map_hint;    /* ask this node for the next map, if ready */
  uint64_t last_refresh_ms;
  int seed_next;        /* the seed to ask next when nothing is ready */
  int seed_failures;    /* seeds that failed while discovering */
  char err[160];        /* why the master is not usable */
  uv_mutex_t errmu;
  /* Metrics, read from any thread. */
  atomic_int up;
  atomic_uint_fast64_t timeouts, connects;
  /* Pub/sub. */
  int sub_started, sub_close_asked, subs_open;
};

static cluster *of(rl_master *m) { return (cluster *)m; }

static uint64_t now_ms(void) { return (uint64_t)(rl_conn_now_us() / 1000); }

static void act(flight *f, const rl_route_step *st, rl_conn *node,
                redisReply *reply);
static void refresh_request(cluster *cl);
static void update_ready(cluster *cl);
static void finish(flight *f, int status, rl_conn *node, redisReply *r);

static void set_err(cluster *cl, const char *text) {
  uv_mutex_lock(&cl->errmu);
  snprintf(cl->err, sizeof cl->err, "%.159s", text);
  uv_mutex_unlock(&cl->errmu);
}

/* --- nodes ------------------------------------------------------------------ */

static cl_node *node_find(cluster *cl, const char *host, int port) {
  for (cl_node *n = cl->nodes; n != NULL; n = n->next)
    if (n->port == port && strcmp(n->host, host) == 0) return n;
  return NULL;
}

static cl_node *node_get(cluster *cl, const char *host, int port) {
  cl_node *n = node_find(cl, host, port);
  if (n != NULL) return n;
  if (strlen(host) >= sizeof n->host) return NULL;
  n = calloc(1, sizeof *n);
  if (n == NULL) return NULL;
  n->cl = cl;
  strcpy(n->host, host);
  strcpy(n->tls_name, host);
  n->port = port;
  n->next = cl->nodes;
  cl->nodes = n;
  return n;
}

static cl_node *node_of_conn(const rl_conn *conn) { return conn->data; }

static void bury(cluster *cl, rl_conn *conn) {
  grave *g = malloc(sizeof *g);
  if (g == NULL) return; /* leaked rather than freed under a pointer */
  g->conn = conn;
  g->next = cl->graves;
  cl->graves = g;
}

static void on_conn_closed(rl_conn *conn) {
  cluster *cl = of(conn->master);
  if (conn->cfg == &cl->m.sub_cfg && --cl->subs_open == 0 &&
      cl->sub_close_asked && cl->m.sub_hooks && cl->m.sub_hooks->closed)
    cl->m.sub_hooks->closed(cl->m.sub_data, &cl->m);
  if (--cl->handles == 0 && cl->closing && cl->m.on_closed)
    cl->m.on_closed(&cl->m);
}

static void resume_waiting(cluster *cl, cl_node *n);

/* A command to n timed out: n may be hung, and the map that names it a
 * primary stale. A new map is asked for, of another node. */
static void node_stalled(cl_node *n) {
  if (!n->stalled)
    rl_master_log(&n->cl->m, n->cmd, RLOCK_LOG_DEBUG,
                  "a command timed out: asking for the slot map");
  n->stalled = 1;
  refresh_request(n->cl);
}
static void fail_waiting(cluster *cl, cl_node *n);
static void discovery_failed(cluster *cl);

/* 1 when every seed's connection has failed (each tried once at least). */
static int seeds_all_down(cluster *cl) {
  for (int k = 0; k < cl->url.topo.naddrs; k++) {
    rl_url u;
    rl_master_url_seed(&cl->url, k, &u);
    cl_node *s = node_find(cl, u.host, u.port);
    if (s != NULL && s->cmd != NULL &&
        !(s->cmd->state == RL_CONN_DOWN && !s->cmd->first))
      return 0;
  }
  return 1;
}

static void on_cmd_state(rl_conn *conn, int state) {
  cl_node *n = node_of_conn(conn);
  cluster *cl = n->cl;
  rl_master *m = &cl->m;
  if (conn != n->cmd) return; /* an old connection, closing */
  if (m->on_node_state) m->on_node_state(m, conn, state);
  if (cl->closing) return;
  if (state == RL_CONN_READY) {
    cl->connects++;
    if (cl->discovering || cl->refresh_wanted) refresh_request(cl);
    resume_waiting(cl, n);
  } else if (state == RL_CONN_DOWN) {
    fail_waiting(cl, n);
    if (cl->discovering && n->seed) {
      if (seeds_all_down(cl)) discovery_failed(cl);
    } else if (n->primary || n->seed) {
      refresh_request(cl);
    }
  }
  update_ready(cl);
}

static void on_cmd_info(rl_conn *conn, const char *run_id, uint64_t up_ms) {
  rl_master *m = conn->master;
  if (m->on_node_info) m->on_node_info(m, conn, run_id, up_ms);
}

static void on_cmd_error(rl_conn *conn, const char *text, int refused,
                         int tls) {
  cl_node *n = node_of_conn(conn);
  rl_master *m = conn->master;
  char why[300];
  snprintf(why, sizeof why, "%.100s:%d: %.150s", n->host, n->port, text);
  set_err(n->cl, why);
  if (refused) m->errors++;
  if (m->on_error) m->on_error(m, conn, text, refused, tls);
}

static void on_cmd_log(rl_conn *conn, int level, const char *msg) {
  rl_master *m = conn->master;
  if (m->on_log) m->on_log(m, conn, level, msg);
}

/* The node's command connection, started if it was not. NULL when out of
 * memory or closing. */
static rl_conn *node_cmd(cl_node *n) {
  cluster *cl = n->cl;
  if (n->cmd != NULL) return n->cmd;
  if (cl->closing) return NULL;
  rl_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  rl_url u;
  rl_master_url_node(&cl->url, n->host, n->port, &u);
  snprintf(u.name, sizeof u.name, "%s", n->tls_name);
  c->master = &cl->m;
  c->data = n;
  c->on_state = on_cmd_state;
  c->on_info = on_cmd_info;
  c->on_error = on_cmd_error;
  c->on_log = on_cmd_log;
  c->on_closed = on_conn_closed;
  n->cmd = c;
  n->used_ms = now_ms();
  if (rl_conn_start(c, cl->m.loop, &u, &cl->m.cfg) != 0) {
    n->cmd = NULL;
    free(c);
    return NULL;
  }
  cl->handles++;
  return c;
}

static int conn_idle(const rl_conn *c) {
  return rl_list_empty(&c->pending) && rl_list_empty(&c->unsent) &&
         rl_list_empty(&c->waiting);
}

/* Disconnects nodes that left the map and have been idle a while. */
static void close_idle(cluster *cl) {
  uint64_t now = now_ms();
  for (cl_node *n = cl->nodes; n != NULL; n = n->next) {
    if (n->primary || n->seed || n->cmd == NULL) continue;
    if (now - n->used_ms < IDLE_CLOSE_MS || !conn_idle(n->cmd)) continue;
    for (rl_list *l = cl->parked.next; l != &cl->parked; l = l->next)
      if (rl_container_of(l, flight, link)->wait == n) goto busy;
    rl_conn_close(n->cmd);
    bury(cl, n->cmd);
    n->cmd = NULL;
  busy:;
  }
}

/* --- readiness ------------------------------------------------------------- */

static int all_primaries_ready(const cluster *cl) {
  if (!cl->have_map) return 0;
  int any = 0;
  for (cl_node *n = cl->nodes; n != NULL; n = n->next) {
    if (!n->primary) continue;
    if (n->cmd == NULL || !rl_conn_ready(n->cmd)) return 0;
    any = 1;
  }
  return any;
}

static void update_ready(cluster *cl) {
  int up = all_primaries_ready(cl);
  atomic_store(&cl->up, up);
  if (up) set_err(cl, "");
}

/* --- parking ------------------------------------------------------------------ */

static void on_timer(uv_timer_t *t);

static void schedule(cluster *cl) {
  uint64_t next = UINT64_MAX, now = now_ms();
  for (rl_list *l = cl->parked.next; l != &cl->parked; l = l->next) {
    flight *f = rl_container_of(l, flight, link);
    uint64_t t = f->wait ? f->route.deadline : f->at_ms;
    if (t < next) next = t;
  }
  for (rl_list *l = cl->repin.next; l != &cl->repin; l = l->next) {
    uint64_t t = (uint64_t)(rl_container_of(l, pinned, link)->until_us / 1000);
    if (t < next) next = t;
  }
  if (next == UINT64_MAX) {
    uv_timer_stop(&cl->timer);
    return;
  }
  uv_timer_start(&cl->timer, on_timer, next > now ? next - now : 0, 0);
}

static void park(flight *f, uint64_t at_ms, cl_node *wait) {
  cluster *cl = f->cl;
  f->at_ms = at_ms;
  f->wait = wait;
  rl_list_push_back(&cl->parked, &f->link);
  schedule(cl);
}

static void attempt(flight *f, const rl_route_step *st);
static void repin_expire(cluster *cl, uint64_t now);
static void repin_ready(cluster *cl);

/* A parked flight's time came: its backoff ended, or its deadline. */
static void on_timer(uv_timer_t *t) {
  cluster *cl = t->data;
  uint64_t now = now_ms();
  repin_expire(cl, now);
  rl_list due;
  rl_list_init(&due);
  for (rl_list *l = cl->parked.next; l != &cl->parked;) {
    flight *f = rl_container_of(l, flight, link);
    l = l->next;
    uint64_t at = f->wait ? f->route.deadline : f->at_ms;
    if (at > now && f->route.deadline > now) continue;
    rl_list_remove(&f->link);
    rl_list_push_back(&due, &f->link);
  }
  rl_list *l;
  while ((l = rl_list_pop_front(&due)) != NULL) {
    flight *f = rl_container_of(l, flight, link);
    rl_list_init(&f->link);
    rl_route_step st;
    if (f->route.deadline <= now) {
      rl_route_on_deadline(&f->route, &st);
      act(f, &st, NULL, NULL);
    } else {
      memset(&st, 0, sizeof st);
      st.action = RL_ROUTE_SEND;
      st.to_addr = f->route.to_addr;
      st.asking = f->route.asking;
      st.port = f->route.port;
      memcpy(st.host, f->route.host, sizeof st.host);
      st.at = now;
      attempt(f, &st);
    }
  }
  schedule(cl);
}

/* Node n's command connection became ready: its waiting flights go. */
static void resume_waiting(cluster *cl, cl_node *n) {
  int any = 0;
  for (rl_list *l = cl->parked.next; l != &cl->parked; l = l->next)
    if (rl_container_of(l, flight, link)->wait == n) {
      rl_container_of(l, flight, link)->wait = NULL;
      rl_container_of(l, flight, link)->at_ms = 0;
      any = 1;
    }
  if (any) uv_timer_start(&cl->timer, on_timer, 0, 0);
}

/* Node n's connection failed: flights waiting for it route again. */
static void fail_waiting(cluster *cl, cl_node *n) {
  rl_list again;
  rl_list_init(&again);
  for (rl_list *l = cl->parked.next; l != &cl->parked;) {
    flight *f = rl_container_of(l, flight, link);
    l = l->next;
    if (f->wait != n) continue;
    rl_list_remove(&f->link);
    rl_list_push_back(&again, &f->link);
  }
  rl_list *l;
  while ((l = rl_list_pop_front(&again)) != NULL) {
    flight *f = rl_container_of(l, flight, link);
    rl_list_init(&f->link);
    f->wait = NULL;
    rl_route_step st;
    rl_route_on_unsent(&f->route, now_ms(), &st);
    act(f, &st, NULL, NULL);
  }
}

/* --- routed commands ------------------------------------------------------------ */

static void finish(flight *f, int status, rl_conn *node, redisReply *r) {
  rl_mcmd *c = f->c;
  if (status == RL_CMD_LATE && !f->timed_out) {
    /* A reply past the deadline is never an answer (master.h). */
    f->timed_out = 1;
    f->cl->timeouts++;
    c->cb(c, node, NULL, RL_CMD_TIMEOUT);
  }
  if (rl_list_linked(&f->link)) rl_list_remove(&f->link);
  c->priv = NULL;
  free(f);
  c->cb(c, node, r, status);
}

static void attempt_done(flight *f, rl_conn *node, redisReply *reply,
                         int status) {
  cl_node *n = node_of_conn(node);
  rl_route_step st;
  if (status == RL_CMD_TIMEOUT) {
    node_stalled(n);
    rl_route_on_deadline(&f->route, &st);
    act(f, &st, node, NULL);
    return;
  }
  if (status == RL_CMD_REPLY || status == RL_CMD_LATE) n->stalled = 0;
  f->inflight = 0;
  switch (status) {
    case RL_CMD_REPLY:
      rl_route_on_reply(&f->route, reply, n->host, now_ms(), &st);
      act(f, &st, node, reply);
      return;
    case RL_CMD_LATE:
      finish(f, RL_CMD_LATE, node, reply);
      return;
    case RL_CMD_REFUSED:
      finish(f, RL_CMD_REFUSED, node, NULL);
      return;
    default: /* DROPPED: it may have run */
      if (f->timed_out) {
        finish(f, RL_CMD_DROPPED, node, NULL);
        return;
      }
      rl_route_on_lost(&f->route, &st);
      act(f, &st, node, NULL);
  }
}

static void on_attempt(rl_cmd *cmd, redisReply *reply, int status) {
  attempt_done(cmd->data, cmd->conn, reply, status);
}

/* An attempt followed by WAIT (replica_acks, master_ack.h). */
static void on_attempt_acked(void *data, rl_conn *node, redisReply *reply,
                             int status) {
  attempt_done(data, node, reply, status);
}

static void on_asking(rl_cmd *cmd, redisReply *reply, int status) {
  (void)cmd;
  (void)reply;
  (void)status;
}

static const char asking_bytes[] = "*1\r\n$6\r\nASKING\r\n";

/* Writes the attempt a SEND step asks for, now. */
static void attempt(flight *f, const rl_route_step *st) {
  cluster *cl = f->cl;
  cl_node *n = st->to_addr ? node_get(cl, st->host, st->port)
                           : cl->slot_node[f->route.slot];
  rl_route_step next;
  rl_conn *conn = n ? node_cmd(n) : NULL;
  if (conn != NULL && !rl_conn_ready(conn) &&
      (conn->state == RL_CONN_HANDSHAKE ||
       (conn->state == RL_CONN_CONNECTING && conn->first))) {
    park(f, f->route.deadline, n); /* resumed when it is ready */
    return;
  }
  if (conn == NULL || !rl_conn_ready(conn)) {
    rl_route_on_unsent(&f->route, now_ms(), &next);
    act(f, &next, NULL, NULL);
    return;
  }
  n->used_ms = now_ms();
  f->node = n;
  rl_mcmd *c = f->c;
  if (st->asking) {
    uv_buf_t b = uv_buf_init((char *)asking_bytes, sizeof asking_bytes - 1);
    rl_conn_send_until(conn, &b, 1, -1, 1, 0, f->until_us, on_asking, NULL,
                       0);
  }
  int rc = rl_ack_wanted(&cl->m, c)
               ? rl_ack_send_raw(&cl->m, conn, f->bufs, f->nbufs, f->script,
                                 c->clocked, f->until_us, c->idx,
                                 on_attempt_acked, f)
               : rl_conn_send_until(conn, f->bufs, f->nbufs, f->script,
                                    c->no_resend, c->clocked, f->until_us,
                                    on_attempt, f, c->idx);
  if (rc != 0) {
    rl_route_on_unsent(&f->route, now_ms(), &next);
    act(f, &next, NULL, NULL);
    return;
  }
  f->inflight = 1;
}

/* Gives the map a MOVED's news for its slot. */
static void apply_moved(cluster *cl, int slot, const char *host, int port) {
  int rc = rl_slotmap_apply_moved(&cl->map, slot, host, port);
  if (rc < 0) return;
  cl_node *n = node_get(cl, host, port);
  if (n != NULL) cl->slot_node[slot] = n;
  if (rc == 1) refresh_request(cl);
}

static void act(flight *f, const rl_route_step *st, rl_conn *node,
                redisReply *reply) {
  cluster *cl = f->cl;
  if (st->update_map) apply_moved(cl, f->route.slot, st->host, st->port);
  if (st->refresh_map) refresh_request(cl);
  switch (st->action) {
    case RL_ROUTE_SEND: {
      uint64_t now = now_ms();
      if (st->at > now) {
        park(f, st->at, NULL);
        return;
      }
      attempt(f, st);
      return;
    }
    case RL_ROUTE_DONE:
      finish(f, RL_CMD_REPLY, node, reply);
      return;
    case RL_ROUTE_LATE:
      finish(f, RL_CMD_LATE, node, reply);
      return;
    default:
      break;
  }
  switch (st->fail) {
    case RL_ROUTE_ETIMEDOUT:
      if (!f->timed_out) {
        f->timed_out = 1;
        cl->timeouts++;
        f->c->cb(f->c, node, NULL, RL_CMD_TIMEOUT);
      }
      /* The final status comes with the attempt's own callback, if one
       * is out; else nothing was written that could still answer. */
      if (!f->inflight) finish(f, RL_CMD_DROPPED, node, NULL);
      return;
    case RL_ROUTE_EREDIRECTS:
    case RL_ROUTE_ECROSSSLOT:
      finish(f, RL_CMD_REPLY, node, reply); /* the last error reply */
      return;
    default: /* ELOST */
      finish(f, RL_CMD_DROPPED, node, NULL);
  }
}

/* Starts a flight's route, now that there is a map. */
static void launch(flight *f) {
  cluster *cl = f->cl;
  uint64_t now = now_ms();
  uint64_t deadline = now + cl->m.cfg.command_timeout_ms;
  if (cl->m.cfg.command_timeout_ms == 0) deadline = now + 3600000;
  f->until_us = (int64_t)deadline * 1000;
  rl_route_step st;
  int slot = f->c->slot;
  if (slot < 0 || slot >= RL_SLOTS) {
    /* No key: the first primary of the map will do. */
    slot = 0;
    for (int s = 0; s < RL_SLOTS; s++)
      if (cl->slot_node[s] != NULL) {
        slot = s;
        break;
      }
  }
  rl_route_start(&f->route, slot, now, deadline, RL_ROUTE_MAX_REDIRECTS,
                 &st);
  act(f, &st, NULL, NULL);
}

/* --- pinned commands ----------------------------------------------------------- */

static void pinned_free(pinned *pn) {
  if (rl_list_linked(&pn->link)) rl_list_remove(&pn->link);
  pn->c->priv = NULL;
  free(pn);
}

static void on_pinned_reply(rl_mcmd *c, rl_conn *node, redisReply *reply,
                            int status);

static void on_pinned(rl_cmd *cmd, redisReply *reply, int status) {
  rl_mcmd *c = cmd->data;
  on_pinned_reply(c, cmd->conn, reply, status);
}

static void on_pinned_acked(void *data, rl_conn *node, redisReply *reply,
                            int status) {
  rl_mcmd *c = data;
  on_pinned_reply(c, node, reply, status);
}

/* Writes a pinned command to its node, with its first deadline. */
static int pinned_write(pinned *pn) {
  cluster *cl = pn->cl;
  rl_mcmd *c = pn->c;
  rl_conn *conn = node_cmd(pn->node);
  if (conn == NULL) return RL_CONN_EDOWN;
  pn->node->used_ms = now_ms();
  if (rl_ack_wanted(&cl->m, c))
    return rl_ack_send_raw(&cl->m, conn, pn->bufs, pn->nbufs, pn->script,
                           c->clocked, pn->until_us, c->idx,
                           on_pinned_acked, c);
  return rl_conn_send_until(conn, pn->bufs, pn->nbufs, pn->script,
                            c->no_resend, c->clocked, pn->until_us,
                            on_pinned, c, c->idx);
}

/* The final status of a pinned command. */
static void pinned_finish(pinned *pn, rl_conn *node, redisReply *reply,
                          int status) {
  rl_mcmd *c = pn->c;
  pinned_free(pn);
  c->cb(c, node, reply, status);
}

/* Whether a reply says the whole command was refused, before it ran,
 * because its node no longer serves its slots. */
static int refused_as_stale(const redisReply *reply, rl_redirect *rd) {
  if (reply == NULL || reply->type != REDIS_REPLY_ERROR) return 0;
  int k = rl_redirect_classify(reply, rd);
  return k == RL_REPLY_READONLY || k == RL_REPLY_MOVED;
}

static void on_pinned_reply(rl_mcmd *c, rl_conn *node, redisReply *reply,
                            int status) {
  pinned *pn = c->priv;
  cluster *cl = pn->cl;
  cl_node *n = node_of_conn(node);
  rl_redirect rd;
  if (status == RL_CMD_TIMEOUT) {
    cl->timeouts++;
    node_stalled(n);
    if (!pn->told_timeout) {
      pn->told_timeout = 1;
      c->cb(c, node, NULL, RL_CMD_TIMEOUT);
    }
    return;
  }
  if (status == RL_CMD_REPLY || status == RL_CMD_LATE) n->stalled = 0;
  if (status == RL_CMD_REPLY && !pn->told_timeout && !cl->closing &&
      c->slot >= 0 && c->slot < RL_SLOTS && refused_as_stale(reply, &rd)) {
    rl_master_log(&cl->m, node, RLOCK_LOG_DEBUG,
                  "a batch was refused (%.*s): asking for the slot map, "
                  "to send it again where its slots are now",
                  (int)(reply->len < 60 ? reply->len : 60), reply->str);
    if (rd.kind == RL_REPLY_MOVED)
      apply_moved(cl, rd.slot, rd.host[0] ? rd.host : n->host, rd.port);
    cl->map_hint = n;
    rl_list_push_back(&cl->repin, &pn->link);
    schedule(cl);
    refresh_request(cl);
    repin_ready(cl); /* a MOVED may have told where already */
    return;
  }
  pinned_finish(pn, node, reply, status);
}

/* Pinned commands waiting for a map: those whose slot is now served by
 * another node are written there; the others wait for the next map. */
static void repin_ready(cluster *cl) {
  rl_list again;
  rl_list_init(&again);
  for (rl_list *l = cl->repin.next; l != &cl->repin;) {
    pinned *pn = rl_container_of(l, pinned, link);
    l = l->next;
    cl_node *to = cl->slot_node[pn->c->slot];
    if (to == NULL || to == pn->node) continue;
    rl_list_remove(&pn->link);
    rl_list_push_back(&again, &pn->link);
  }
  rl_list *l;
  while ((l = rl_list_pop_front(&again)) != NULL) {
    pinned *pn = rl_container_of(l, pinned, link);
    rl_list_init(&pn->link);
    pn->node = cl->slot_node[pn->c->slot];
    if (pinned_write(pn) != 0) pinned_finish(pn, NULL, NULL, RL_CMD_DROPPED);
  }
  if (!rl_list_empty(&cl->repin)) refresh_request(cl); /* still stale */
  schedule(cl);
}

/* Pinned commands whose deadline passed while they waited for a map:
 * nothing of them ran anywhere. */
static void repin_expire(cluster *cl, uint64_t now) {
  rl_list due;
  rl_list_init(&due);
  for (rl_list *l = cl->repin.next; l != &cl->repin;) {
    pinned *pn = rl_container_of(l, pinned, link);
    l = l->next;
    if ((uint64_t)(pn->until_us / 1000) > now && !cl->closing) continue;
    rl_list_remove(&pn->link);
    rl_list_push_back(&due, &pn->link);
  }
  rl_list *l;
  while ((l = rl_list_pop_front(&due)) != NULL) {
    pinned *pn = rl_container_of(l, pinned, link);
    rl_list_init(&pn->link);
    if (!pn->told_timeout && !cl->closing) {
      pn->told_timeout = 1;
      cl->timeouts++;
      pn->c->cb(pn->c, NULL, NULL, RL_CMD_TIMEOUT);
    }
    pinned_finish(pn, NULL, NULL, RL_CMD_DROPPED);
  }
}

static int pinned_send(cluster *cl, rl_mcmd *c) {
  pinned *pn = calloc(1, sizeof *pn);
  if (pn == NULL) return RL_CONN_EDOWN;
  pn->cl = cl;
  pn->c = c;
  rl_list_init(&pn->link);
  pn->node = node_of_conn(c->node);
  pn->script = -1;
  pn->nbufs = c->encode(c, RL_FLAVOR_CLUSTER, pn->bufs, &pn->script);
  uint64_t t = cl->m.cfg.command_timeout_ms;
  pn->until_us = rl_conn_now_us() + (int64_t)(t > 0 ? t : 3600000) * 1000;
  int rc = pn->nbufs == 0 ? RL_CONN_EDOWN : 0;
  if (rc == 0) {
    c->priv = pn;
    rc = pinned_write(pn);
  }
  if (rc != 0) {
    c->priv = NULL;
    free(pn);
  }
  return rc;
}

static int cluster_send(rl_master *m, rl_mcmd *c) {
  cluster *cl = of(m);
  if (cl->closing) return RL_CONN_EDOWN;
  if (c->node != NULL) {
    if (c->node->master != m) return RL_CONN_EDOWN;
    return pinned_send(cl, c);
  }
  if (!cl->have_map && !cl->discovering)
    return m->ops->refused(m) ? RL_CONN_EREFUSED : RL_CONN_EDOWN;
  flight *f = calloc(1, sizeof *f);
  if (f == NULL) return RL_CONN_EDOWN;
  f->cl = cl;
  f->c = c;
  rl_list_init(&f->link);
  f->nbufs = c->encode(c, RL_FLAVOR_CLUSTER, f->bufs, &f->script);
  if (f->nbufs == 0) {
    free(f);
    return RL_CONN_EDOWN;
  }
  c->priv = f;
  if (!cl->have_map) {
    /* Like a connection's first attempt: it waits for the first map. */
    rl_list_push_back(&cl->unmapped, &f->link);
    return 0;
  }
  launch(f);
  return 0;
}

/* --- the slot map --------------------------------------------------------------- */

static void refresh_send(cluster *cl, int slots);
static void on_refresher(uv_timer_t *t);

/* Installs a new map: nodes, the slot table, readiness, pub/sub. */
static void install(cluster *cl, rl_slotmap *fresh) {
  int moved = cl->have_map ? rl_slotmap_diff(&cl->map, fresh, NULL) : RL_SLOTS;
  rl_slotmap old = cl->map;
  cl->map = *fresh;
  rl_slotmap_free(&old);
  cl->have_map = 1;
  for (cl_node *n = cl->nodes; n != NULL; n = n->next) n->primary = 0;
  memset(cl->slot_node, 0, sizeof cl->slot_node);
  cl_node **by_shard = calloc((size_t)cl->map.nshards + 1, sizeof *by_shard);
  for (int s = 0; s < cl->map.nshards && by_shard != NULL; s++) {
    if (cl->map.shards[s].nslots == 0) continue;
    const rl_slotnode *p = &cl->map.nodes[cl->map.shards[s].first];
    cl_node *n = node_get(cl, p->host, p->port);
    if (n == NULL) continue;
    if (p->hostname[0] != '\0')
      snprintf(n->tls_name, sizeof n->tls_name, "%s", p->hostname);
    n->primary = 1;
    by_shard[s] = n;
    node_cmd(n); /* connect to every primary now: ready means usable */
  }
  for (int s = 0; s < RL_SLOTS && by_shard != NULL; s++)
    if (cl->map.owner[s] != RL_SLOTMAP_NONE)
      cl->slot_node[s] = by_shard[cl->map.owner[s]];
  free(by_shard);
  int first = cl->discovering;
  cl->discovering = 0;
  if (first || moved > 0)
    rl_master_log(&cl->m, NULL, first ? RLOCK_LOG_INFO : RLOCK_LOG_INFO,
                  "slot map from %s: %d primaries, %d slots covered%s",
                  cl->map.from == RL_SLOTMAP_FROM_SHARDS ? "CLUSTER SHARDS"
                                                         : "CLUSTER SLOTS",
                  rl_slotmap_primaries(&cl->map, NULL, 0), cl->map.covered,
                  first ? "" : ", slots moved");
  /* Batches refused by a demoted node go where their slots are now. */
  repin_ready(cl);
  /* The commands that waited for the first map start their routes. */
  rl_list *l;
  while ((l = rl_list_pop_front(&cl->unmapped)) != NULL) {
    flight *f = rl_container_of(l, flight, link);
    rl_list_init(&f->link);
    launch(f);
  }
  update_ready(cl);
  if (cl->m.on_node_state) cl->m.on_node_state(&cl->m, NULL, -1);
  if (moved > 0 && cl->sub_started && !cl->sub_close_asked &&
      cl->m.sub_hooks && cl->m.sub_hooks->resync)
    cl->m.sub_hooks->resync(cl->m.sub_data, &cl->m);
  close_idle(cl);
}

/* Nobody answered the first discovery: waiting commands fail. A node
 * that becomes ready later still asks for the map. */
static void discovery_failed(cluster *cl) {
  cl->discovering = 0;
  cl->refresh_wanted = 1;
  rl_list *l;
  while ((l = rl_list_pop_front(&cl->unmapped)) != NULL) {
    flight *f = rl_container_of(l, flight, link);
    rl_list_init(&f->link);
    finish(f, RL_CMD_DROPPED, NULL, NULL);
  }
  update_ready(cl);
  if (cl->m.on_node_state) cl->m.on_node_state(&cl->m, NULL, -1);
}

typedef struct refresh_cmd {
  cluster *cl;
  cl_node *node;
  int slots; /* CLUSTER SLOTS (after SHARDS was refused) */
  int given_up; /* it timed out, and another was asked; ignore its reply */
  uv_buf_t buf;
} refresh_cmd;

/* 1 if a primary of the map is stalled (a command to it timed out). */
static int primary_stalled(const cluster *cl) {
  for (const cl_node *n = cl->nodes; n != NULL; n = n->next)
    if (n->primary && n->stalled) return 1;
  return 0;
}

static void refresh_done(cluster *cl, int ok) {
  cl->refreshing = 0;
  cl->last_refresh_ms = now_ms();
  if (!ok && cl->discovering) {
    /* The next seed, until each has failed once. */
    if (++cl->seed_failures >= cl->url.topo.naddrs) {
      discovery_failed(cl);
      return;
    }
    cl->refresh_wanted = 0;
    refresh_send(cl, 0);
    return;
  }
  if (!ok) {
    /* Again, but not in a tight loop against a node that cannot say. */
    uv_timer_start(&cl->refresher, on_refresher, RL_REFRESH_FAIL_MS,
                   RL_REFRESH_MS);
    cl->refresh_wanted = 0;
    return;
  }
  if (cl->refresh_wanted) {
    cl->refresh_wanted = 0;
    refresh_request(cl);
  } else if (primary_stalled(cl)) {
    /* Its replica will be promoted after the node timeout: look soon. */
    uv_timer_start(&cl->refresher, on_refresher, RL_REFRESH_FAIL_MS,
                   RL_REFRESH_MS);
  }
}

static void on_refresh_reply(rl_cmd *cmd, redisReply *r, int status) {
  refresh_cmd *rc = cmd->data;
  cluster *cl = rc->cl;
  if (status == RL_CMD_TIMEOUT) {
    /* The node may be hung: ask another now, and ignore this one's
     * answer whenever it comes (its final status still frees it). */
    if (rc->given_up || cl->closing) return;
    rc->given_up = 1;
    rc->node->stalled = 1;
    rl_master_log(&cl->m, cmd->conn, RLOCK_LOG_WARN,
                  "no slot map within the command timeout: asking "
                  "another node");
    cl->refreshing = 0;
    refresh_send(cl, rc->slots);
    return;
  }
  int slots = rc->slots, given_up = rc->given_up;
  cl_node *n = rc->node;
  free(rc);
  if (cl->closing) return;
  if (status == RL_CMD_REPLY || status == RL_CMD_LATE) n->stalled = 0;
  if (given_up) return;
  if (status != RL_CMD_REPLY || r == NULL) {
    refresh_done(cl, 0);
    return;
  }
  rl_slotmap fresh;
  rl_slotmap_init(&fresh);
  int rc2 = slots ? rl_slotmap_from_slots(&fresh, r, cl->url.url.tls, n->host)
                  : rl_slotmap_from_shards(&fresh, r, cl->url.url.tls, n->host);
  if (rc2 == RLOCK_EREDIS && !slots) {
    /* A server before 7.0: no SHARDS. */
    rl_slotmap_free(&fresh);
    cl->refreshing = 0;
    refresh_send(cl, 1);
    return;
  }
  if (rc2 != 0 || fresh.covered == 0) {
    rl_master_log(&cl->m, cmd->conn, RLOCK_LOG_WARN,
                  "cannot use its slot map: %s",
                  rc2 != 0 ? fresh.err : "no slot is served");
    char why[300];
    snprintf(why, sizeof why, "%.100s:%d: no usable slot map (%.150s)",
             n->host, n->port, rc2 != 0 ? fresh.err : "no slot is served");
    set_err(cl, why);
    rl_slotmap_free(&fresh);
    refresh_done(cl, 0);
    return;
  }
  install(cl, &fresh);
  refresh_done(cl, 1);
}

/* A node to ask for the map: a ready primary, else a ready node, else the
 * next seed (connected now; the ask waits for it to be ready). */
static cl_node *map_source(cluster *cl, int *ready) {
  *ready = 1;
  cl_node *hint = cl->map_hint;
  cl->map_hint = NULL;
  if (hint != NULL && !hint->stalled && hint->cmd && rl_conn_ready(hint->cmd))
    return hint;
  /* Nodes that answer first: a stalled one only when no other is ready. */
  for (int stalled = 0; stalled <= 1; stalled++) {
    for (cl_node *n = cl->nodes; n != NULL; n = n->next)
      if (n->primary && n->stalled == stalled && n->cmd &&
          rl_conn_ready(n->cmd))
        return n;
    for (cl_node *n = cl->nodes; n != NULL; n = n->next)
      if (n->stalled == stalled && n->cmd && rl_conn_ready(n->cmd)) return n;
  }
  *ready = 0;
  /* Seeds in order, each given its chance to connect. */
  for (int k = 0; k < cl->url.topo.naddrs; k++) {
    int i = (cl->seed_next + k) % cl->url.topo.naddrs;
    rl_url u;
    rl_master_url_seed(&cl->url, i, &u);
    cl_node *n = node_get(cl, u.host, u.port);
    if (n == NULL) continue;
    n->seed = 1;
    if (n->cmd != NULL && (n->cmd->state == RL_CONN_DOWN && !n->cmd->first))
      continue; /* failed; its backoff will bring it back */
    cl->seed_next = (i + 1) % cl->url.topo.naddrs;
    node_cmd(n);
    return n;
  }
  return NULL;
}

static void refresh_send(cluster *cl, int slots) {
  int ready;
  cl_node *n = map_source(cl, &ready);
  if (n == NULL || n->cmd == NULL) {
    /* Nothing to ask now: a node that becomes ready asks (on_cmd_state),
     * and discovery gives up once every seed failed. */
    cl->refresh_wanted = 1;
    if (cl->discovering && seeds_all_down(cl)) discovery_failed(cl);
    return;
  }
  refresh_cmd *rc = calloc(1, sizeof *rc);
  if (rc == NULL) return;
  static const char shards[] = "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
  static const char slotsb[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
  rc->cl = cl;
  rc->node = n;
  rc->slots = slots;
  rc->buf = slots ? uv_buf_init((char *)slotsb, sizeof slotsb - 1)
                  : uv_buf_init((char *)shards, sizeof shards - 1);
  /* A connection still in its first attempt keeps it until ready. */
  if (rl_conn_send(n->cmd, &rc->buf, 1, -1, 0, on_refresh_reply, rc, 0) !=
      0) {
    free(rc);
    cl->refresh_wanted = 1;
    return;
  }
  cl->refreshing = 1;
  cl->refresh_wanted = 0;
}

static void on_refresher(uv_timer_t *t) {
  cluster *cl = t->data;
  if (cl->closing) return;
  refresh_request(cl);
  close_idle(cl);
}

/* A refresh soon: at once, or after RL_REFRESH_MIN_MS since the last. */
static void refresh_request(cluster *cl) {
  if (cl->closing) return;
  if (cl->refreshing) {
    cl->refresh_wanted = 1;
    return;
  }
  uint64_t now = now_ms(), next = cl->last_refresh_ms + RL_REFRESH_MIN_MS;
  if (cl->last_refresh_ms != 0 && now < next && !cl->discovering) {
    uv_timer_start(&cl->refresher, on_refresher, next - now, RL_REFRESH_MS);
    return;
  }
  uv_timer_start(&cl->refresher, on_refresher, RL_REFRESH_MS, RL_REFRESH_MS);
  refresh_send(cl, 0);
}

/* --- the table of operations ------------------------------------------------------ */

static int cluster_start(rl_master *m) {
  cluster *cl = of(m);
  uv_timer_init(m->loop, &cl->timer);
  uv_timer_init(m->loop, &cl->refresher);
  cl->timer.data = cl;
  cl->refresher.data = cl;
  cl->handles = 2;
  cl->started = 1;
  cl->discovering = 1;
  /* Every seed connects at once; the first ready one is asked. */
  for (int k = 0; k < cl->url.topo.naddrs; k++) {
    rl_url u;
    rl_master_url_seed(&cl->url, k, &u);
    cl_node *n = node_get(cl, u.host, u.port);
    if (n == NULL) continue;
    n->seed = 1;
    snprintf(n->tls_name, sizeof n->tls_name, "%s", u.name);
    node_cmd(n);
  }
  refresh_request(cl);
  return 0;
}

static void cluster_flush(rl_master *m) {
  for (cl_node *n = of(m)->nodes; n != NULL; n = n->next)
    if (n->cmd != NULL) rl_conn_flush(n->cmd);
}

static int cluster_primaries(rl_master *m, rl_conn **out, int cap) {
  int k = 0;
  cluster *cl = of(m);
  const rl_slotnode *p[1024];
  int np = rl_slotmap_primaries(&cl->map, p, 1024);
  for (int i = 0; i < np && i < 1024; i++) {
    cl_node *n = node_find(cl, p[i]->host, p[i]->port);
    rl_conn *c = n ? node_cmd(n) : NULL;
    if (c == NULL) continue;
    if (k < cap) out[k] = c;
    k++;
  }
  return k;
}

static rl_conn *cluster_node_of(rl_master *m, int slot) {
  cluster *cl = of(m);
  if (slot < 0 || slot >= RL_SLOTS || cl->slot_node[slot] == NULL)
    return NULL;
  return node_cmd(cl->slot_node[slot]);
}

static int cluster_ready(const rl_master *m) {
  return all_primaries_ready((const cluster *)m);
}

static int cluster_refused(const rl_master *m) {
  const cluster *cl = (const cluster *)m;
  if (cl->have_map || cl->discovering) return 0;
  for (cl_node *n = cl->nodes; n != NULL; n = n->next)
    if (n->seed && n->cmd != NULL && !n->cmd->refused) return 0;
  return 1;
}

/* --- pub/sub on the shard -------------------------------------------------------- */

static void on_sub_state(rl_conn *conn, int state) {
  cl_node *n = node_of_conn(conn);
  rl_master *m = conn->master;
  const rl_master_sub_hooks *h = m->sub_hooks;
  if (conn != n->sub || h == NULL || n->cl->sub_close_asked) return;
  if (state == RL_CONN_READY && h->resync)
    h->resync(m->sub_data, m);
  else if (state == RL_CONN_DOWN && h->down)
    h->down(m->sub_data, m, conn);
}

static void on_sub_push(rl_conn *conn, const redisReply *msg) {
  const char *ch;
  size_t len;
  /* A channel dropped: its slot left that node; where is it now? */
  if (conn->master->sub_hooks != NULL &&
      rl_master_push_kind(msg, &ch, &len) == 2)
    refresh_request(of(conn->master));
  rl_master_sub_push(conn, msg);
}

static rl_conn *node_sub(cl_node *n) {
  cluster *cl = n->cl;
  if (n->sub != NULL) return n->sub;
  if (cl->closing || cl->sub_close_asked) return NULL;
  rl_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  rl_url u;
  rl_master_url_node(&cl->url, n->host, n->port, &u);
  snprintf(u.name, sizeof u.name, "%s", n->tls_name);
  c->master = &cl->m;
  c->data = n;
  c->on_state = on_sub_state;
  c->on_push = on_sub_push;
  c->on_log = rl_master_sub_log;
  c->on_closed = on_conn_closed;
  n->sub = c;
  if (rl_conn_start(c, cl->m.loop, &u, &cl->m.sub_cfg) != 0) {
    n->sub = NULL;
    free(c);
    return NULL;
  }
  cl->handles++;
  cl->subs_open++;
  return c;
}

static void cluster_sub_start(rl_master *m) { of(m)->sub_started = 1; }

/* A SUBSCRIBE answered MOVED was sent by a stale map: the master learns,
 * and pub/sub tries again. */
static int sub_moved(rl_master *m, rl_conn *conn, const redisReply *reply) {
  rl_redirect rd;
  if (rl_redirect_classify(reply, &rd) != RL_REPLY_MOVED) return 0;
  apply_moved(of(m), rd.slot, rd.host[0] ? rd.host : node_of_conn(conn)->host,
              rd.port);
  return 1;
}

static int cluster_sub_send(rl_master *m, rl_msub *s) {
  cluster *cl = of(m);
  rl_conn *conn;
  if (s->unsubscribe) {
    conn = s->where;
    if (conn == NULL || conn->master != m) return -1;
  } else {
    int slot = rl_slot_of(s->channel, s->len);
    cl_node *n = cl->slot_node[slot];
    conn = n ? node_sub(n) : NULL;
  }
  if (conn == NULL || !rl_conn_ready(conn)) return -1;
  return rl_master_sub_write(m, conn, s, 1, s->unsubscribe ? NULL : sub_moved);
}

static int cluster_sub_up(rl_master *m, const char *ch, size_t len) {
  cluster *cl = of(m);
  cl_node *n = cl->slot_node[rl_slot_of(ch, len)];
  rl_conn *c = n ? node_sub(n) : NULL;
  return c != NULL && rl_conn_ready(c);
}

static rl_conn *cluster_sub_where(rl_master *m, const char *ch, size_t len) {
  cl_node *n = of(m)->slot_node[rl_slot_of(ch, len)];
  return n ? n->sub : NULL;
}

static void cluster_sub_close(rl_master *m) {
  cluster *cl = of(m);
  if (cl->sub_close_asked) return;
  cl->sub_close_asked = 1;
  int any = 0;
  for (cl_node *n = cl->nodes; n != NULL; n = n->next) {
    if (n->sub == NULL) continue;
    any = 1;
    if (n->sub->state != RL_CONN_CLOSED) rl_conn_close(n->sub);
  }
  if (cl->subs_open == 0 || !any)
    if (m->sub_hooks && m->sub_hooks->closed)
      m->sub_hooks->closed(m->sub_data, m);
}

/* --- metrics and lifecycle ------------------------------------------------------- */

static void cluster_metrics(rl_master *m, rlock_master_metrics *mm) {
  cluster *cl = of(m);
  snprintf(mm->address, sizeof mm->address, "%.271s", m->name);
  mm->up = atomic_load(&cl->up);
  mm->timeouts = atomic_load(&cl->timeouts);
  mm->errors = atomic_load(&m->errors);
  uint64_t connects = atomic_load(&cl->connects);
  mm->reconnects = connects > 0 ? connects - 1 : 0;
  mm->restarts = atomic_load(&m->restarts);
  uv_mutex_lock(&cl->errmu);
  snprintf(mm->error, sizeof mm->error, "%s",
           mm->up ? "" : (cl->err[0] ? cl->err : "no slot map yet"));
  uv_mutex_unlock(&cl->errmu);
}

static void on_handle_closed(uv_handle_t *h) {
  cluster *cl = h->data;
  if (--cl->handles == 0 && cl->m.on_closed) cl->m.on_closed(&cl->m);
}

static void cluster_close(rl_master *m) {
  cluster *cl = of(m);
  if (cl->closing) return;
  cl->closing = 1;
  atomic_store(&cl->up, 0);
  if (!cl->started) {
    if (m->on_closed) m->on_closed(m);
    return;
  }
  /* Flights: those parked or unmapped were never written. */
  rl_list *l;
  while ((l = rl_list_pop_front(&cl->parked)) != NULL) {
    flight *f = rl_container_of(l, flight, link);
    rl_list_init(&f->link);
    finish(f, RL_CMD_DROPPED, NULL, NULL);
  }
  while ((l = rl_list_pop_front(&cl->unmapped)) != NULL) {
    flight *f = rl_container_of(l, flight, link);
    rl_list_init(&f->link);
    finish(f, RL_CMD_DROPPED, NULL, NULL);
  }
  repin_expire(cl, UINT64_MAX);
  for (cl_node *n = cl->nodes; n != NULL; n = n->next) {
    if (n->sub != NULL && n->sub->state != RL_CONN_CLOSED)
      rl_conn_close(n->sub);
    if (n->cmd != NULL && n->cmd->state != RL_CONN_CLOSED)
      rl_conn_close(n->cmd);
  }
  uv_close((uv_handle_t *)&cl->timer, on_handle_closed);
  uv_close((uv_handle_t *)&cl->refresher, on_handle_closed);
}

static void cluster_free(rl_master *m) {
  cluster *cl = of(m);
  while (cl->nodes != NULL) {
    cl_node *n = cl->nodes;
    cl->nodes = n->next;
    free(n->cmd);
    free(n->sub);
    free(n);
  }
  while (cl->graves != NULL) {
    grave *g = cl->graves;
    cl->graves = g->next;
    free(g->conn);
    free(g);
  }
  rl_slotmap_free(&cl->map);
  uv_mutex_destroy(&cl->errmu);
  free(cl);
}

static const rl_master_ops cluster_ops = {
    cluster_start,     cluster_send,      cluster_flush,
    cluster_primaries, cluster_node_of,   cluster_ready,
    cluster_refused,   cluster_sub_start, cluster_sub_send,
    cluster_sub_up,    cluster_sub_where, cluster_sub_close,
    cluster_metrics,   cluster_close,     cluster_free};

rl_master *rl_master_cluster_new(const rl_master_url *url, uv_loop_t *loop,
                                 const rl_conn_config *cfg, int idx) {
  cluster *cl = calloc(1, sizeof *cl);
  if (cl == NULL) return NULL;
  if (uv_mutex_init(&cl->errmu) != 0) {
    free(cl);
    return NULL;
  }
  rl_master_init(&cl->m, &cluster_ops, RL_MASTER_CLUSTER, url, loop, cfg,
                 idx);
  cl->m.cfg.cluster = 1;
  cl->m.sub_cfg.cluster = 1;
  cl->url = *url;
  rl_slotmap_init(&cl->map);
  rl_list_init(&cl->parked);
  rl_list_init(&cl->unmapped);
  rl_list_init(&cl->repin);
  atomic_init(&cl->up, 0);
  atomic_init(&cl->timeouts, 0);
  atomic_init(&cl->connects, 0);
  return &cl->m;
}
