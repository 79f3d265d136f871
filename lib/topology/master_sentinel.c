/*
 * The master of a Sentinel group (master_sentinel.h). docs/architecture.md
 * holds the design; test/TOPOLOGY-FACTS.md sections 8 to 10 are the facts
 * it rests on.
 *
 * Why it is built this way. A Sentinel group's master is wherever the
 * sentinels say, and nowhere else. A master that was killed and restarted
 * without persistence says "master" for about 11 s and accepts writes that
 * are lost when it resyncs (facts section 10), and a master paused through
 * a failover keeps its clients until Sentinel demotes it. So a data
 * connection is never retried at the address it had: when it drops
 * (Sentinel kills every client of a server it reconfigures, facts section
 * 9, so each failover shows up as a lost connection), answers READONLY,
 * or its server's ROLE is not master, that connection is closed for good
 * and the sentinels are asked again. A connection is made only to the
 * address that a majority of the sentinels that answered gave, or that a
 * sentinel's +switch-master announced, and it carries commands only once
 * ROLE on it said master: nothing else is written on it before that
 * answer, so no lock command reaches a replica or a stale master by way of
 * a reconnect. (ROLE is the connection's first command rather than part
 * of its handshake: the handshake's one slot for extra commands belongs to
 * whoever owns the connection's records, and holding every command until
 * the answer gives the same guarantee.)
 *
 * An rl_conn reconnects by itself after a drop; here each one serves one
 * connection's life, closed when it goes down, and a new one is made for
 * the next. Closed ones are kept, so that node pointers stay valid
 * (master.h), until many have piled up or the master is freed.
 *
 * The sentinels are asked over connections of their own (bare: AUTH only
 * with sentinel_password=), which reconnect as usual: asking a sentinel is
 * harmless. One subscriber connection to one sentinel hears
 * +switch-master; when it drops the next sentinel is tried, and once it
 * is subscribed again the sentinels are asked, since messages were missed
 * meanwhile. They are also asked every RL_SENTINEL_RECHECK_MS, and when a
 * command on the data connection passes its deadline (a paused master is
 * failed over without its connection dropping).
 *
 * Commands sent while the first master is being found wait, bounded by
 * the connect timeout, as commands wait for a single master's first
 * connection; after that, while no data connection is confirmed, they fail
 * at once, as for a single master that is down. Loop thread only, except
 * the metrics, which read atomics and a text under a mutex.
 */
#include "master_sentinel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master_ack.h"
#include "redirect.h"
#include "resp.h"
#include "sentinel_proto.h"
#include "util.h"

#define MAX_NODES 64   /* data node addresses remembered */
#define MAX_RETIRED 64 /* closed data connections kept before freeing */
#define ASK_BACKOFF_MIN_MS 50
#define ASK_BACKOFF_MAX_MS 1000
#define ASK_SPACING_MS 100 /* between asks prompted by command timeouts */
#define SSUB_BACKOFF_MIN_MS 100
#define SSUB_BACKOFF_MAX_MS 2000
#define RECOUNT_MS 250 /* ROLE again while fewer replicas than acks */

/* A connection's life as this file sees it. */
enum { C_IDLE = 0, C_LIVE, C_CLOSING };

typedef struct sentinel sentinel;

/* A data node, by address, with the current connections to it. */
typedef struct dnode {
  sentinel *s;
  char host[RL_URL_HOST_MAX];
  int port;
  rl_url url;
  rl_conn *cmd, *sub; /* the connections' current lives, or NULL */
  int cmd_state, sub_state;
  int cmd_again, sub_again; /* start a new one once this one closed */
  /* INFO replication on the current life, before its ROLE: the node's
   * replication ID and the one it had before ("" when not known). */
  char replid[41], replid2[41];
} dnode;

/* A command waiting for the first master. */
typedef struct wcmd {
  rl_list node;
  rl_mcmd *c;
} wcmd;

struct sentinel {
  rl_master m;
  rl_master_url url;
  rl_conn_config sen_cfg;  /* sentinels: bare, connect timeout per command */
  rl_conn_config ssub_cfg; /* the +switch-master subscriber */
  int nsen;
  rl_url sen_url[RL_TOPO_MAX_ADDRS];
  rl_conn sen[RL_TOPO_MAX_ADDRS];
  int sen_started;
  rl_conn *ssub; /* the +switch-master subscriber's current life */
  int ssub_state, ssub_k;
  uint64_t ssub_backoff_ms;
  dnode *nodes[MAX_NODES];
  int nnodes;
  dnode *cur;    /* where the sentinels last said the master is */
  int confirmed; /* cur->cmd is ready and its ROLE said master */
  char last_host[RL_URL_HOST_MAX]; /* the last confirmed master */
  int last_port;
  char last_replid[41]; /* its replication ID when confirmed, or "" */
  int first;     /* the first master is still being found */
  rl_list waiting;
  int asking, ask_again;
  uint64_t gen;  /* counts +switch-master messages: an answer asked for
                    before one is stale */
  uint64_t backoff_ms, last_ask_ms;
  uv_timer_t ask_timer, check_timer, first_timer, ssub_timer, recount_timer;
  rl_conn *recounting; /* the connection a recount's ROLE is out on */
  int open;      /* connections and timers not yet closed */
  int closing;
  int sub_started, sub_close_asked, sub_closed_told, subs_open;
  int refused;   /* the sentinels, or the server they named, refused us */
  char logged[200]; /* the last failure logged, to log each once */
  /* Metrics. */
  uv_mutex_t errmu;
  char err[160];     /* why there is no confirmed master; "" when there is */
  char addr[272];    /* the last confirmed master's address */
  rl_conn *_Atomic live; /* cur->cmd while confirmed */
  atomic_uint_fast64_t timeouts, errors, confirms; /* of closed lives */
  rl_conn *retired[MAX_RETIRED];
  int nretired, retired_next;
};

static sentinel *of(rl_master *m) { return (sentinel *)m; }

static void send_ask(sentinel *s);
static void ask_soon(sentinel *s, uint64_t delay_ms);
static void start_cmd(dnode *n);
static void start_sub(dnode *n);
static void start_ssub(sentinel *s);

/* --- small things ------------------------------------------------------- */

static void set_err(sentinel *s, const char *text) {
  uv_mutex_lock(&s->errmu);
  snprintf(s->err, sizeof s->err, "%.159s", text);
  uv_mutex_unlock(&s->errmu);
}

static void slog(sentinel *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void slog(sentinel *s, int level, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  rl_master_log(&s->m, NULL, level, "%s", msg);
}

/* "host:port", with brackets for IPv6. */
static void fmt_addr(char *buf, size_t size, const char *host, int port) {
  snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* The sentinels, or the server they named, refused us (a password, an ACL
 * rule, an unknown service): waiting will not help until the
 * configuration changes, so the owner hears it at once (it counts
 * refused masters on state changes: master.h), and commands waiting for
 * the first master fail now. */
static void end_first(sentinel *s, int status);
static void note_refused(sentinel *s) {
  int was = s->refused;
  s->refused = 1;
  if (!was && s->m.on_node_state) s->m.on_node_state(&s->m, NULL, RL_CONN_DOWN);
  end_first(s, RL_CMD_REFUSED);
}

static void maybe_closed(sentinel *s) {
  if (s->closing && s->open == 0 && s->m.on_closed) s->m.on_closed(&s->m);
}

static void on_handle_closed(uv_handle_t *h) {
  sentinel *s = h->data;
  s->open--;
  maybe_closed(s);
}

static void conn_free(rl_conn *c) {
  if (c == NULL) return;
  uv_mutex_destroy(&c->errmu);
  free(c);
}

/* Keeps a closed connection (its pointer may still be held), adding its
 * counters to the master's; the oldest kept are freed past MAX_RETIRED. */
static void retire_conn(sentinel *s, rl_conn *c) {
  atomic_fetch_add(&s->timeouts, atomic_load(&c->timeouts));
  atomic_fetch_add(&s->errors, atomic_load(&c->errors));
  if (s->nretired == MAX_RETIRED) {
    conn_free(s->retired[s->retired_next]);
    s->retired_next = (s->retired_next + 1) % MAX_RETIRED;
    s->nretired--;
  }
  s->retired[(s->retired_next + s->nretired) % MAX_RETIRED] = c;
  s->nretired++;
}

/* --- the confirmed master --------------------------------------------- */

/* Stops counting on cur: commands fail from now on. */
static void unconfirm(sentinel *s) {
  if (!s->confirmed) return;
  s->confirmed = 0;
  atomic_store(&s->live, NULL);
  if (s->m.on_node_state && s->cur && s->cur->cmd)
    s->m.on_node_state(&s->m, s->cur->cmd, RL_CONN_DOWN);
}

static void close_cmd(dnode *n) {
  if (n->cmd_state != C_LIVE) return;
  n->cmd_state = C_CLOSING;
  rl_conn_close(n->cmd);
}

/* Closes a data node's subscriber connection; pub/sub hears that its
 * subscriptions there are gone (unless it is closing itself). */
static void close_sub(dnode *n) {
  sentinel *s = n->s;
  if (n->sub_state != C_LIVE) return;
  n->sub_state = C_CLOSING;
  rl_conn *c = n->sub;
  rl_conn_close(c);
  const rl_master_sub_hooks *h = s->m.sub_hooks;
  if (h && h->down && !s->sub_close_asked) h->down(s->m.sub_data, &s->m, c);
}

/* The subscriber connection of the confirmed master, if pub/sub is on. */
static void ensure_sub(sentinel *s) {
  dnode *n = s->cur;
  if (!s->sub_started || s->sub_close_asked || s->closing || n == NULL ||
      !s->confirmed)
    return;
  if (n->sub_state == C_IDLE)
    start_sub(n);
  else if (n->sub_state == C_CLOSING)
    n->sub_again = 1;
}

static int send_now(sentinel *s, rl_mcmd *c);

static void fail_waiting(sentinel *s, int status) {
  rl_list *l;
  while ((l = rl_list_pop_front(&s->waiting)) != NULL) {
    wcmd *w = rl_container_of(l, wcmd, node);
    rl_mcmd *c = w->c;
    free(w);
    c->cb(c, NULL, NULL, status);
  }
}

static void end_first(sentinel *s, int status) {
  if (!s->first) return;
  s->first = 0;
  uv_timer_stop(&s->first_timer);
  if (status < 0) { /* confirmed: what waited goes out now */
    rl_list *l;
    while ((l = rl_list_pop_front(&s->waiting)) != NULL) {
      wcmd *w = rl_container_of(l, wcmd, node);
      rl_mcmd *c = w->c;
      free(w);
      int rc = send_now(s, c);
      if (rc != 0)
        c->cb(c, NULL, NULL,
              rc == RL_CONN_EREFUSED ? RL_CMD_REFUSED : RL_CMD_DROPPED);
    }
    return;
  }
  fail_waiting(s, status);
}

/* ROLE said master on cur's connection: it carries commands from now. */
static void confirm(sentinel *s, dnode *n) {
  char was[300], now[300];
  s->confirmed = 1;
  s->refused = 0;
  s->backoff_ms = 0;
  s->logged[0] = '\0';
  atomic_store(&s->live, n->cmd);
  atomic_fetch_add(&s->confirms, 1);
  fmt_addr(now, sizeof now, n->host, n->port);
  uv_mutex_lock(&s->errmu);
  s->err[0] = '\0';
  snprintf(s->addr, sizeof s->addr, "%.271s", now);
  uv_mutex_unlock(&s->errmu);
  if (s->last_host[0] != '\0' &&
      (strcmp(s->last_host, n->host) != 0 || s->last_port != n->port)) {
    atomic_fetch_add(&s->m.failovers, 1);
    fmt_addr(was, sizeof was, s->last_host, s->last_port);
    slog(s, RLOCK_LOG_WARN,
         "failover followed: the sentinels' master is now %s (was %s)", now,
         was);
  } else {
    slog(s, RLOCK_LOG_INFO, "the master is %s (named by the sentinels, ROLE "
                            "master)", now);
  }
  snprintf(s->last_host, sizeof s->last_host, "%s", n->host);
  s->last_port = n->port;
  snprintf(s->last_replid, sizeof s->last_replid, "%s", n->replid);
  if (s->m.on_node_state) s->m.on_node_state(&s->m, n->cmd, RL_CONN_READY);
  if (!s->confirmed || s->cur != n) return; /* a hook changed it */
  end_first(s, -1);
  ensure_sub(s);
}

/* The data connection ended or failed: the sentinels are asked again, at
 * once if it had been confirmed, after a backoff if it never was. */
static void lost(sentinel *s, dnode *n, const char *why) {
  int was = s->confirmed;
  unconfirm(s);
  char a[300];
  fmt_addr(a, sizeof a, n->host, n->port);
  slog(s, was ? RLOCK_LOG_WARN : RLOCK_LOG_DEBUG,
       "connection to the master %s ended (%s): asking the sentinels where "
       "the master is", a, why && *why ? why : "closed");
  if (!was) set_err(s, why && *why ? why : "connection closed");
  close_sub(n);
  if (was) {
    ask_soon(s, 0);
  } else {
    uint64_t b = s->backoff_ms;
    s->backoff_ms = b == 0 ? ASK_BACKOFF_MIN_MS
                           : (b * 2 > ASK_BACKOFF_MAX_MS ? ASK_BACKOFF_MAX_MS
                                                         : b * 2);
    ask_soon(s, b / 2 + rl_random_upto(b / 2));
  }
}

/* --- data connections -------------------------------------------------- */

/* The replicas a master listed in its ROLE: what replica acknowledgement
 * can ask of it (master.h, rl_ack_need). confirming: the ROLE that
 * confirms it, which sets the count; afterwards (recount) a ROLE only
 * raises it. A master promoted by a failover has lost the replica it was,
 * and one promoted by a second failover soon after may have none at all
 * for a while (Sentinel turns the demoted master, still up, into its
 * replica only seconds later): asking it for more acknowledgements than
 * it has replicas would make every renewal of a lock held across the
 * failover fall short until the lock is lost. Replicas that join later
 * are counted by the recount; replicas that detach still count, so a
 * lost replica is noticed as before. */
static void note_replicas(sentinel *s, dnode *n, int nreplicas,
                          int confirming) {
  if (!confirming && nreplicas <= s->m.acks_have) return;
  int had = s->m.acks_have;
  /* No replica at all: a master that took over from the one this client
   * was using (it was that master's replica: its previous replication
   * ID is that master's) asks for none; any other asks for one, since a
   * stale master that a stale sentinel names (its replicas follow the
   * new one) must acknowledge nothing. */
  int successor = s->last_replid[0] != '\0' &&
                  strcmp(n->replid2, s->last_replid) == 0;
  s->m.acks_have = confirming && nreplicas == 0 && !successor ? 1 : nreplicas;
  if (s->m.acks <= 0 || (!confirming && had >= s->m.acks)) return;
  if (confirming && nreplicas >= s->m.acks) return;
  char a[300];
  fmt_addr(a, sizeof a, n->host, n->port);
  slog(s, RLOCK_LOG_WARN,
       "the master %s has %d replica%s: replica_acks %d asks for %d "
       "acknowledgement%s while it serves%s", a, nreplicas,
       nreplicas == 1 ? "" : "s", s->m.acks, rl_ack_need(&s->m),
       rl_ack_need(&s->m) == 1 ? "" : "s",
       nreplicas > 0 ? ""
       : successor   ? " (it took over from the master used until now)"
                     : " (not known to have taken over from the master "
                       "used until now)");
}

/* A recount's ROLE: replicas that joined since the master was confirmed
 * raise what a write needs. */
static void on_recount(rl_cmd *cmd, redisReply *reply, int status) {
  dnode *n = cmd->data;
  sentinel *s = n->s;
  if (status == RL_CMD_TIMEOUT) return; /* the final status follows */
  if (s->recounting == cmd->conn) s->recounting = NULL;
  if (reply == NULL || s->closing || !s->confirmed || n != s->cur ||
      cmd->conn != n->cmd)
    return;
  rl_role *role = malloc(sizeof *role); /* large: not on the stack */
  if (role != NULL && rl_role_parse(reply, role) == 0 &&
      role->role == RL_ROLE_MASTER)
    note_replicas(s, n, role->nreplicas, 0);
  free(role);
}

/* While the confirmed master has listed fewer replicas than replica_acks,
 * it is asked for ROLE every RECOUNT_MS, so that a replica that joins is
 * waited for within that time rather than from the next failover. */
static void on_recount_timer(uv_timer_t *t) {
  sentinel *s = t->data;
  if (s->closing || !s->confirmed || s->m.acks <= 0 ||
      s->m.acks_have >= s->m.acks || s->cur == NULL || s->cur->cmd == NULL)
    return;
  rl_conn *c = s->cur->cmd;
  if (s->recounting == c) return; /* one out already */
  static char role_bytes[] = "*1\r\n$4\r\nROLE\r\n";
  static uv_buf_t role_buf = {role_bytes, sizeof role_bytes - 1};
  if (rl_conn_send(c, &role_buf, 1, -1, 0, on_recount, s->cur, s->m.idx) == 0)
    s->recounting = c;
}

/* The value of field name (with its colon) in an INFO text, into out. */
static void info_field(const redisReply *r, const char *name, char *out,
                       size_t size) {
  out[0] = '\0';
  size_t nl = strlen(name);
  for (size_t i = 0; i + nl <= (size_t)r->len; i++) {
    if ((i > 0 && r->str[i - 1] != '\n') || memcmp(r->str + i, name, nl) != 0)
      continue;
    size_t k = 0;
    for (i += nl; i < (size_t)r->len && k + 1 < size && r->str[i] != '\r' &&
                  r->str[i] != '\n';
         i++)
      out[k++] = r->str[i];
    out[k] = '\0';
    return;
  }
}

/* INFO replication, asked just before the confirming ROLE (only with
 * replica_acks): the replication IDs note_replicas compares. A user
 * without INFO is answered an error: the IDs stay unknown. */
static void on_info(rl_cmd *cmd, redisReply *reply, int status) {
  dnode *n = cmd->data;
  if (status != RL_CMD_REPLY || reply == NULL || cmd->conn != n->cmd ||
      reply->type != REDIS_REPLY_STRING)
    return;
  info_field(reply, "master_replid:", n->replid, sizeof n->replid);
  info_field(reply, "master_replid2:", n->replid2, sizeof n->replid2);
}

static void on_role(rl_cmd *cmd, redisReply *reply, int status) {
  dnode *n = cmd->data;
  sentinel *s = n->s;
  if (status == RL_CMD_TIMEOUT || reply == NULL) return; /* DOWN follows */
  if (cmd->conn != n->cmd || n->cmd_state != C_LIVE || n != s->cur ||
      s->closing || s->confirmed)
    return;
  rl_role *role = malloc(sizeof *role);
  int rc = role ? rl_role_parse(reply, role) : RLOCK_EPROTO;
  char a[300];
  fmt_addr(a, sizeof a, n->host, n->port);
  if (rc == 0 && role->role == RL_ROLE_MASTER) {
    note_replicas(s, n, role->nreplicas, 1);
    free(role);
    confirm(s, n);
    return;
  }
  char why[260];
  if (rc == RLOCK_EREDIS) {
    /* A user without ROLE: it will not mend by itself. */
    snprintf(why, sizeof why,
             "%.60s: ROLE refused: %.100s (the user of a Sentinel master "
             "needs +role)", a, reply->str);
    rl_master_count_error(&s->m, n->cmd);
    if (s->m.on_error) s->m.on_error(&s->m, n->cmd, why, 1, 0);
    slog(s, RLOCK_LOG_ERROR, "%s", why);
    note_refused(s);
  } else {
    snprintf(why, sizeof why,
             "%.150s, named by the sentinels, is not a master (ROLE says %s)", a,
             rc != 0                          ? "something unexpected"
             : role->role == RL_ROLE_REPLICA  ? "replica"
                                              : "sentinel");
    slog(s, RLOCK_LOG_WARN, "%s: asking the sentinels again", why);
  }
  free(role);
  set_err(s, why);
  close_cmd(n);
  uint64_t b = s->backoff_ms ? s->backoff_ms : ASK_BACKOFF_MIN_MS;
  s->backoff_ms = b * 2 > ASK_BACKOFF_MAX_MS ? ASK_BACKOFF_MAX_MS : b * 2;
  ask_soon(s, b);
}

static void on_cmd_state(rl_conn *c, int state) {
  dnode *n = c->data;
  sentinel *s = n->s;
  if (c != n->cmd || n->cmd_state != C_LIVE) return;
  if (state == RL_CONN_READY) {
    if (n != s->cur || s->closing) {
      close_cmd(n);
      return;
    }
    static char info_bytes[] = "*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n";
    static uv_buf_t info_buf = {info_bytes, sizeof info_bytes - 1};
    static char role_bytes[] = "*1\r\n$4\r\nROLE\r\n";
    static uv_buf_t role_buf = {role_bytes, sizeof role_bytes - 1};
    n->replid[0] = n->replid2[0] = '\0';
    if (s->m.acks > 0)
      (void)rl_conn_send(c, &info_buf, 1, -1, 0, on_info, n, s->m.idx);
    if (rl_conn_send(c, &role_buf, 1, -1, 0, on_role, n, s->m.idx) != 0)
      close_cmd(n);
  } else if (state == RL_CONN_DOWN) {
    int cur = n == s->cur;
    char why[sizeof c->err];
    memcpy(why, c->err, sizeof why);
    close_cmd(n); /* never again at this address without asking */
    if (cur) lost(s, n, why);
    if (cur && c->refused && !s->closing) note_refused(s);
  }
}

static void on_cmd_info(rl_conn *c, const char *run_id, uint64_t up_ms) {
  rl_master *m = c->master;
  if (m->on_node_info) m->on_node_info(m, c, run_id, up_ms);
}

static void on_cmd_error(rl_conn *c, const char *text, int refused, int tls) {
  rl_master *m = c->master;
  set_err(of(m), text);
  if (m->on_error) m->on_error(m, c, text, refused, tls);
}

static void on_cmd_log(rl_conn *c, int level, const char *msg) {
  rl_master *m = c->master;
  if (m->on_log) m->on_log(m, c, level, msg);
}

static void on_cmd_closed(rl_conn *c) {
  dnode *n = c->data;
  sentinel *s = n->s;
  s->open--;
  if (n->cmd == c) {
    n->cmd = NULL;
    n->cmd_state = C_IDLE;
  }
  retire_conn(s, c);
  if (n->cmd_again && n == s->cur && !s->closing) {
    n->cmd_again = 0;
    start_cmd(n);
  }
  n->cmd_again = 0;
  maybe_closed(s);
}

static void start_cmd(dnode *n) {
  sentinel *s = n->s;
  rl_conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    set_err(s, "out of memory");
    ask_soon(s, ASK_BACKOFF_MAX_MS);
    return;
  }
  c->master = &s->m;
  c->data = n;
  c->on_state = on_cmd_state;
  c->on_info = on_cmd_info;
  c->on_error = on_cmd_error;
  c->on_log = on_cmd_log;
  c->on_closed = on_cmd_closed;
  n->cmd = c;
  n->cmd_state = C_LIVE;
  n->cmd_again = 0;
  s->open++;
  rl_conn_start(c, s->m.loop, &n->url, &s->m.cfg);
}

static dnode *node_get(sentinel *s, const char *host, int port) {
  for (int i = 0; i < s->nnodes; i++)
    if (s->nodes[i]->port == port && strcmp(s->nodes[i]->host, host) == 0)
      return s->nodes[i];
  if (s->nnodes == MAX_NODES || strlen(host) >= RL_URL_HOST_MAX) return NULL;
  dnode *n = calloc(1, sizeof *n);
  if (n == NULL) return NULL;
  n->s = s;
  snprintf(n->host, sizeof n->host, "%s", host);
  n->port = port;
  rl_master_url_node(&s->url, host, port, &n->url);
  s->nodes[s->nnodes++] = n;
  return n;
}

/* The sentinels name host:port as the master: connect there (a new
 * connection's life), leaving the old master's connections. */
static void use_address(sentinel *s, const char *host, int port) {
  dnode *n = node_get(s, host, port);
  if (n == NULL) {
    set_err(s, "too many master addresses, or out of memory");
    ask_soon(s, ASK_BACKOFF_MAX_MS);
    return;
  }
  if (n == s->cur) {
    if (n->cmd_state == C_LIVE) { /* connecting, or confirmed */
      ensure_sub(s);
      return;
    }
    if (n->cmd_state == C_CLOSING)
      n->cmd_again = 1;
    else
      start_cmd(n);
    return;
  }
  dnode *old = s->cur;
  unconfirm(s);
  s->cur = n;
  if (old != NULL) {
    close_cmd(old);
    close_sub(old);
  }
  if (n->cmd_state == C_LIVE) close_cmd(n); /* not ours to reuse */
  if (n->cmd_state == C_CLOSING)
    n->cmd_again = 1;
  else
    start_cmd(n);
}

/* --- commands ------------------------------------------------------------ */

/* Every reply of the data connection passes here: a READONLY means the
 * server was demoted (the command did nothing: the script is refused at
 * its first write), so the command counts as dropped and the sentinels are
 * asked; a missed deadline prompts a question too. */
static void node_reply(rl_mcmd *c, rl_conn *node, redisReply *reply,
                       int status) {
  rl_master *m = node->master;
  sentinel *s = of(m);
  rl_redirect rd;
  if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
      rl_redirect_classify(reply, &rd) == RL_REPLY_READONLY) {
    rl_master_count_error(m, node);
    /* Said and undone before the sender hears of it, so that whoever it
     * wakes finds the master no longer counted on. */
    dnode *n = node->data;
    int ours = n == s->cur && node == n->cmd && s->confirmed && !s->closing;
    if (ours) {
      char a[300];
      fmt_addr(a, sizeof a, n->host, n->port);
      slog(s, RLOCK_LOG_WARN, "%s answered READONLY (it is a replica now): "
                              "asking the sentinels again", a);
      set_err(s, "the master answered READONLY");
      unconfirm(s);
    }
    c->cb(c, node, NULL, RL_CMD_DROPPED);
    if (ours && n == s->cur && !s->closing) {
      close_cmd(n);
      close_sub(n);
      ask_soon(s, 0);
    }
    return;
  }
  if (status == RL_CMD_TIMEOUT && node == atomic_load(&s->live) &&
      rl_now_ms() - s->last_ask_ms >= ASK_SPACING_MS)
    ask_soon(s, 0);
  c->cb(c, node, reply, status);
}

static void on_node_cmd(rl_cmd *cmd, redisReply *reply, int status) {
  node_reply(cmd->data, cmd->conn, reply, status);
}

static int send_now(sentinel *s, rl_mcmd *c) {
  if (!s->confirmed || s->cur == NULL || s->cur->cmd == NULL)
    return s->refused ? RL_CONN_EREFUSED : RL_CONN_EDOWN;
  rl_conn *node = s->cur->cmd;
  if (c->node != NULL && c->node != node) return RL_CONN_EDOWN;
  uv_buf_t bufs[RL_CONN_MAX_BUFS];
  int script = -1;
  unsigned n = c->encode(c, RL_FLAVOR_PLAIN, bufs, &script);
  if (n == 0) return RL_CONN_EDOWN;
  if (rl_ack_wanted(&s->m, c))
    return rl_ack_send(&s->m, node, c, bufs, n, script, node_reply);
  return rl_conn_send_until(node, bufs, n, script, c->no_resend, c->clocked,
                            0, on_node_cmd, c, c->idx);
}

static int sen_send(rl_master *m, rl_mcmd *c) {
  sentinel *s = of(m);
  if (s->closing) return RL_CONN_EDOWN;
  if (!s->confirmed && s->first) {
    wcmd *w = malloc(sizeof *w);
    if (w == NULL) return RL_CONN_EDOWN;
    w->c = c;
    rl_list_push_back(&s->waiting, &w->node);
    return 0;
  }
  return send_now(s, c);
}

static void sen_flush(rl_master *m) {
  sentinel *s = of(m);
  if (s->cur != NULL && s->cur->cmd_state == C_LIVE)
    rl_conn_flush(s->cur->cmd);
}

static int sen_primaries(rl_master *m, rl_conn **out, int cap) {
  sentinel *s = of(m);
  if (!s->confirmed) return 0;
  if (cap > 0) out[0] = s->cur->cmd;
  return 1;
}

static rl_conn *sen_node_of(rl_master *m, int slot) {
  (void)slot;
  sentinel *s = of(m);
  return s->confirmed ? s->cur->cmd : NULL;
}

static int sen_ready(const rl_master *m) {
  const sentinel *s = (const sentinel *)m;
  return s->confirmed && s->cur->cmd != NULL && rl_conn_ready(s->cur->cmd);
}

static int sen_refused(const rl_master *m) {
  const sentinel *s = (const sentinel *)m;
  return s->refused ||
         (s->cur != NULL && s->cur->cmd != NULL && s->cur->cmd->refused);
}

/* --- asking the sentinels ------------------------------------------------ */

enum { A_WAIT = 0, A_ADDR, A_NONAME, A_NONE, A_REFUSED };

typedef struct ask ask;
typedef struct askq {
  ask *a;
  int k;
} askq;

struct ask {
  sentinel *s;
  int refs;
  int decided;
  uint64_t gen;
  int state[RL_TOPO_MAX_ADDRS];
  rl_hostport addr[RL_TOPO_MAX_ADDRS];
  askq q[RL_TOPO_MAX_ADDRS];
  int dropped; /* sentinels that closed the connection unanswered */
  char why[200]; /* the first failure's text */
  uv_buf_t buf;
  char bytes[];
};

/* Whether a connection's error says it was connected and then closed by
 * the peer (stream.c's texts), not refused or timed out at connect. */
static int closed_by_peer(const char *err) {
  return strncmp(err, "read: ", 6) == 0 || strncmp(err, "write: ", 7) == 0 ||
         strcmp(err, "the master closed the connection") == 0;
}

static void ask_note(ask *a, int k, const char *text) {
  if (a->why[0] != '\0') return;
  char addr[300];
  fmt_addr(addr, sizeof addr, a->s->sen_url[k].host, a->s->sen_url[k].port);
  snprintf(a->why, sizeof a->why, "sentinel %.40s: %.140s", addr, text);
}

/* No address came out of an answer: say why (once per reason), and try
 * again soon if there is no confirmed master to go on with. */
static void ask_failed(sentinel *s, ask *a, int answered, int noname,
                       int refused) {
  char why[260];
  int config = 0;
  if (answered > 0 && noname == answered) {
    snprintf(why, sizeof why,
             "no sentinel monitors a master named \"%.100s\" (%d of %d "
             "answered so)", s->url.topo.service, noname, s->nsen);
    config = 1;
  } else if (answered == 0 && refused == s->nsen) {
    snprintf(why, sizeof why, "every sentinel refused: %.160s%s", a->why,
             s->url.topo.has_sentinel_password
                 ? ""
                 : " (sentinel_password= in the URL authenticates to them)");
    config = 1;
  } else if (answered == 0) {
    /* A TLS port drops a plaintext client at its first bytes, which
     * looks like any lost connection: when every sentinel did that to a
     * plaintext URL, say what it may mean. */
    if (!s->url.topo.tls && a->dropped == s->nsen)
      snprintf(why, sizeof why, "no sentinel answered: each closed the "
               "connection unanswered (TLS ports? use rediss-sentinel://): "
               "%.150s", a->why);
    else
      snprintf(why, sizeof why, "no sentinel answered (%.200s)",
               a->why[0] ? a->why : "none reachable");
  } else {
    snprintf(why, sizeof why,
             "the sentinels that answered do not agree on a master (%d "
             "answers)", answered);
  }
  if (strcmp(s->logged, why) != 0) {
    snprintf(s->logged, sizeof s->logged, "%.199s", why);
    slog(s, config ? RLOCK_LOG_ERROR : RLOCK_LOG_WARN, "%s", why);
    if (config && s->m.on_error) s->m.on_error(&s->m, NULL, why, 1, 0);
  }
  if (s->confirmed) return; /* go on with the master they named before */
  set_err(s, why);
  if (config) note_refused(s);
  uint64_t b = s->backoff_ms;
  s->backoff_ms = b == 0 ? ASK_BACKOFF_MIN_MS
                         : (b * 2 > ASK_BACKOFF_MAX_MS ? ASK_BACKOFF_MAX_MS
                                                       : b * 2);
  ask_soon(s, b == 0 ? ASK_BACKOFF_MIN_MS / 2 : b / 2 + rl_random_upto(b / 2));
}

/* Decides once an address has a majority of the sentinels (then the rest
 * cannot change it), or once every sentinel answered or failed: a
 * majority of those that answered. */
static void ask_check(ask *a) {
  if (a->decided) return;
  sentinel *s = a->s;
  int n = s->nsen, done = 0, answered = 0, noname = 0, refused = 0;
  int best = -1, bestn = 0;
  for (int k = 0; k < n; k++) {
    int st = a->state[k];
    done += st != A_WAIT;
    answered += st == A_ADDR || st == A_NONAME;
    noname += st == A_NONAME;
    refused += st == A_REFUSED;
    if (st != A_ADDR) continue;
    int votes = 0;
    for (int j = 0; j < n; j++)
      votes += a->state[j] == A_ADDR && a->addr[j].port == a->addr[k].port &&
               strcmp(a->addr[j].host, a->addr[k].host) == 0;
    if (votes > bestn) {
      bestn = votes;
      best = k;
    }
  }
  int ok = best >= 0 &&
           (bestn * 2 > n || (done == n && bestn * 2 > answered));
  if (!ok && done < n) return;
  a->decided = 1;
  s->asking = 0;
  if (s->closing) return;
  if (a->gen != s->gen) {
    /* A +switch-master came meanwhile: this answer may predate it. */
    ask_soon(s, ASK_BACKOFF_MIN_MS);
    return;
  }
  if (ok)
    use_address(s, a->addr[best].host, a->addr[best].port);
  else
    ask_failed(s, a, answered, noname, refused);
  if (s->ask_again && !s->closing) {
    s->ask_again = 0;
    ask_soon(s, 0);
  }
}

static void on_ask_reply(rl_cmd *cmd, redisReply *reply, int status) {
  askq *q = cmd->data;
  ask *a = q->a;
  int k = q->k;
  if (status == RL_CMD_TIMEOUT) {
    if (a->state[k] == A_WAIT) {
      a->state[k] = A_NONE;
      ask_note(a, k, "no answer within the connect timeout");
    }
    ask_check(a);
    return;
  }
  if (a->state[k] == A_WAIT) {
    if (status == RL_CMD_REFUSED) {
      a->state[k] = A_REFUSED;
      ask_note(a, k, cmd->conn->err);
    } else if (reply != NULL && status == RL_CMD_REPLY) {
      int rc = rl_sentinel_parse_addr(reply, &a->addr[k]);
      if (rc == 0) {
        a->state[k] = A_ADDR;
      } else if (rc == RLOCK_ENOTFOUND) {
        a->state[k] = A_NONAME;
      } else if (reply->type == REDIS_REPLY_ERROR) {
        a->state[k] = A_REFUSED; /* NOAUTH, NOPERM: it will not mend */
        ask_note(a, k, reply->str);
      } else {
        a->state[k] = A_NONE;
        ask_note(a, k, "an unexpected reply to GET-MASTER-ADDR-BY-NAME");
      }
    } else {
      a->state[k] = A_NONE;
      a->dropped += closed_by_peer(cmd->conn->err);
      ask_note(a, k, cmd->conn->err[0] ? cmd->conn->err : "connection lost");
    }
  }
  a->refs--;
  ask_check(a);
  if (a->refs == 0) free(a);
}

static void send_ask(sentinel *s) {
  if (s->closing) return;
  if (s->asking) {
    s->ask_again = 1;
    return;
  }
  uv_timer_stop(&s->ask_timer);
  const char *service = s->url.topo.service;
  const char *argv[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", service};
  size_t len[] = {8, 23, strlen(service)};
  size_t size = rl_resp_size(3, argv, len);
  ask *a = calloc(1, sizeof *a + size);
  if (a == NULL) {
    ask_soon(s, ASK_BACKOFF_MAX_MS);
    return;
  }
  a->s = s;
  a->gen = s->gen;
  a->buf = uv_buf_init(a->bytes, (unsigned)rl_resp_write(a->bytes, 3, argv,
                                                         len));
  s->asking = 1;
  s->ask_again = 0;
  s->last_ask_ms = rl_now_ms();
  a->refs = 1; /* this function's, while it sends */
  for (int k = 0; k < s->nsen; k++) {
    a->q[k] = (askq){a, k};
    int rc = rl_conn_send(&s->sen[k], &a->buf, 1, -1, 0, on_ask_reply, &a->q[k],
                          s->m.idx);
    if (rc == 0) {
      a->refs++;
    } else {
      a->state[k] = rc == RL_CONN_EREFUSED ? A_REFUSED : A_NONE;
      a->dropped += rc != RL_CONN_EREFUSED && closed_by_peer(s->sen[k].err);
      ask_note(a, k, s->sen[k].err[0] ? s->sen[k].err : "not connected");
    }
  }
  a->refs--;
  ask_check(a);
  if (a->refs == 0) free(a);
}

static void on_ask_timer(uv_timer_t *t) { send_ask(t->data); }

static void ask_soon(sentinel *s, uint64_t delay_ms) {
  if (s->closing) return;
  if (s->asking) {
    s->ask_again = 1;
    return;
  }
  if (uv_is_active((uv_handle_t *)&s->ask_timer) &&
      uv_timer_get_due_in(&s->ask_timer) <= delay_ms)
    return;
  uv_timer_start(&s->ask_timer, on_ask_timer, delay_ms, 0);
}

static void on_check_timer(uv_timer_t *t) {
  sentinel *s = t->data;
  if (!s->asking) send_ask(s);
}

static void on_first_timer(uv_timer_t *t) {
  sentinel *s = t->data;
  end_first(s, s->refused ? RL_CMD_REFUSED : RL_CMD_DROPPED);
}

/* Sentinel connections: their events go to the log, prefixed. */
static int sen_index(const sentinel *s, const rl_conn *c) {
  return (int)(c - s->sen);
}

static void on_sen_log(rl_conn *c, int level, const char *msg) {
  sentinel *s = of(c->master);
  char a[300];
  int k = sen_index(s, c);
  fmt_addr(a, sizeof a, s->sen_url[k].host, s->sen_url[k].port);
  slog(s, level, "sentinel %s: %s", a, msg);
}

static void on_sen_closed(rl_conn *c) {
  sentinel *s = of(c->master);
  s->open--;
  maybe_closed(s);
}

/* --- +switch-master ------------------------------------------------------ */

static void on_ssub_reply(rl_cmd *cmd, redisReply *reply, int status) {
  sentinel *s = of(cmd->conn->master);
  if (reply == NULL || status != RL_CMD_REPLY || cmd->conn != s->ssub) return;
  if (reply->type == REDIS_REPLY_ERROR) {
    slog(s, RLOCK_LOG_WARN,
         "cannot subscribe to +switch-master (%.150s): failovers are found "
         "by asking every %d ms", reply->str, RL_SENTINEL_RECHECK_MS);
    return;
  }
  s->ssub_backoff_ms = 0;
  /* Messages were missed while nobody listened. */
  if (!s->first) ask_soon(s, 0);
}

static void on_ssub_state(rl_conn *c, int state) {
  sentinel *s = of(c->master);
  if (c != s->ssub || s->ssub_state != C_LIVE) return;
  if (state == RL_CONN_READY) {
    static char bytes[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$14\r\n+switch-master\r\n";
    static uv_buf_t buf = {bytes, sizeof bytes - 1};
    rl_conn_send_sub(c, &buf, 1, "+switch-master", 14, 0, on_ssub_reply, s,
                     s->m.idx);
  } else if (state == RL_CONN_DOWN) {
    s->ssub_state = C_CLOSING; /* the next sentinel's turn */
    rl_conn_close(c);
  }
}

static void on_ssub_push(rl_conn *c, const redisReply *msg) {
  sentinel *s = of(c->master);
  rl_switch_master sw;
  if (c != s->ssub || rl_sentinel_parse_push(msg, &sw) != 0) return;
  if (strcmp(sw.name, s->url.topo.service) != 0) return;
  char from[300], to[300], by[300];
  fmt_addr(from, sizeof from, sw.from.host, sw.from.port);
  fmt_addr(to, sizeof to, sw.to.host, sw.to.port);
  int k = s->ssub_k;
  fmt_addr(by, sizeof by, s->sen_url[k].host, s->sen_url[k].port);
  slog(s, RLOCK_LOG_INFO, "sentinel %s announced +switch-master: %s moved "
                          "from %s to %s", by, sw.name, from, to);
  s->gen++; /* answers asked for before this one are stale */
  if (s->closing) return;
  use_address(s, sw.to.host, sw.to.port);
}

static void on_ssub_log(rl_conn *c, int level, const char *msg) {
  sentinel *s = of(c->master);
  char a[300];
  fmt_addr(a, sizeof a, s->sen_url[s->ssub_k].host,
           s->sen_url[s->ssub_k].port);
  slog(s, level, "sentinel %s (+switch-master): %s", a, msg);
}

static void on_ssub_timer(uv_timer_t *t) { start_ssub(t->data); }

static void on_ssub_closed(rl_conn *c) {
  sentinel *s = of(c->master);
  s->open--;
  conn_free(c);
  s->ssub = NULL;
  s->ssub_state = C_IDLE;
  if (!s->closing) {
    s->ssub_k = (s->ssub_k + 1) % s->nsen;
    uint64_t b = s->ssub_backoff_ms ? s->ssub_backoff_ms : SSUB_BACKOFF_MIN_MS;
    s->ssub_backoff_ms = b * 2 > SSUB_BACKOFF_MAX_MS ? SSUB_BACKOFF_MAX_MS
                                                     : b * 2;
    uv_timer_start(&s->ssub_timer, on_ssub_timer, b, 0);
  }
  maybe_closed(s);
}

static void start_ssub(sentinel *s) {
  if (s->closing || s->ssub_state != C_IDLE) return;
  rl_conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    uv_timer_start(&s->ssub_timer, on_ssub_timer, SSUB_BACKOFF_MAX_MS, 0);
    return;
  }
  c->master = &s->m;
  c->data = s;
  c->on_state = on_ssub_state;
  c->on_push = on_ssub_push;
  c->on_log = on_ssub_log;
  c->on_closed = on_ssub_closed;
  s->ssub = c;
  s->ssub_state = C_LIVE;
  s->open++;
  rl_conn_start(c, s->m.loop, &s->sen_url[s->ssub_k], &s->ssub_cfg);
}

/* --- lock channels (pub/sub on the master) ------------------------------- */

static void on_dsub_state(rl_conn *c, int state) {
  dnode *n = c->data;
  sentinel *s = n->s;
  if (c != n->sub || n->sub_state != C_LIVE) return;
  const rl_master_sub_hooks *h = s->m.sub_hooks;
  if (state == RL_CONN_READY) {
    if (n != s->cur || !s->confirmed || s->sub_close_asked || s->closing) {
      close_sub(n);
      return;
    }
    if (h && h->resync) h->resync(s->m.sub_data, &s->m);
  } else if (state == RL_CONN_DOWN) {
    close_sub(n); /* again only where the sentinels say */
    if (n == s->cur) ask_soon(s, 0);
  }
}

static void on_dsub_closed(rl_conn *c) {
  dnode *n = c->data;
  sentinel *s = n->s;
  s->open--;
  s->subs_open--;
  if (n->sub == c) {
    n->sub = NULL;
    n->sub_state = C_IDLE;
  }
  retire_conn(s, c);
  if (n->sub_again) {
    n->sub_again = 0;
    ensure_sub(s);
  }
  if (s->sub_close_asked && s->subs_open == 0 && !s->sub_closed_told) {
    s->sub_closed_told = 1;
    if (s->m.sub_hooks && s->m.sub_hooks->closed)
      s->m.sub_hooks->closed(s->m.sub_data, &s->m);
  }
  maybe_closed(s);
}

static void start_sub(dnode *n) {
  sentinel *s = n->s;
  rl_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return; /* waiters sleep to the holder's PTTL */
  c->master = &s->m;
  c->data = n;
  c->on_state = on_dsub_state;
  c->on_push = rl_master_sub_push;
  c->on_log = rl_master_sub_log;
  c->on_closed = on_dsub_closed;
  n->sub = c;
  n->sub_state = C_LIVE;
  s->open++;
  s->subs_open++;
  rl_conn_start(c, s->m.loop, &n->url, &s->m.sub_cfg);
}

static void sen_sub_start(rl_master *m) {
  sentinel *s = of(m);
  if (s->sub_started || s->closing) return;
  s->sub_started = 1;
  ensure_sub(s);
}

static int sen_sub_send(rl_master *m, rl_msub *ms) {
  sentinel *s = of(m);
  if (s->closing || s->sub_close_asked) return -1;
  rl_conn *where = ms->where;
  if (!ms->unsubscribe) {
    if (!s->confirmed || s->cur->sub_state != C_LIVE) return -1;
    where = s->cur->sub;
  }
  return rl_master_sub_write(m, where, ms, 0, NULL);
}

static int sen_sub_up(rl_master *m, const char *ch, size_t len) {
  (void)ch;
  (void)len;
  sentinel *s = of(m);
  return s->confirmed && s->cur->sub_state == C_LIVE &&
         rl_conn_ready(s->cur->sub);
}

/* Subscriptions belong on the current master's subscriber connection. */
static rl_conn *sen_sub_where(rl_master *m, const char *ch, size_t len) {
  (void)ch;
  (void)len;
  sentinel *s = of(m);
  if (!s->confirmed || s->cur == NULL || s->cur->sub_state != C_LIVE)
    return NULL;
  return s->cur->sub;
}

static void sen_sub_close(rl_master *m) {
  sentinel *s = of(m);
  if (s->sub_close_asked) return;
  s->sub_close_asked = 1;
  for (int i = 0; i < s->nnodes; i++) close_sub(s->nodes[i]);
  if (s->subs_open == 0 && !s->sub_closed_told) {
    s->sub_closed_told = 1;
    if (m->sub_hooks && m->sub_hooks->closed)
      m->sub_hooks->closed(m->sub_data, m);
  }
}

/* --- metrics and lifecycle ------------------------------------------------ */

static void sen_metrics(rl_master *m, rlock_master_metrics *mm) {
  sentinel *s = of(m);
  rl_conn *live = atomic_load(&s->live);
  mm->up = live != NULL && atomic_load(&live->up);
  mm->timeouts = atomic_load(&s->timeouts);
  mm->errors = atomic_load(&s->errors);
  if (live != NULL) {
    mm->timeouts += atomic_load(&live->timeouts);
    mm->errors += atomic_load(&live->errors);
  }
  uint64_t confirms = atomic_load(&s->confirms);
  mm->reconnects = confirms > 0 ? confirms - 1 : 0;
  mm->restarts = atomic_load(&m->restarts);
  uv_mutex_lock(&s->errmu);
  snprintf(mm->address, sizeof mm->address, "%s", s->addr);
  snprintf(mm->error, sizeof mm->error, "%s", s->err);
  uv_mutex_unlock(&s->errmu);
  if (live != NULL && !mm->up && mm->error[0] == '\0')
    rl_conn_error_text(live, mm->error, sizeof mm->error);
}

static void init_timer(sentinel *s, uv_timer_t *t) {
  uv_timer_init(s->m.loop, t);
  t->data = s;
  s->open++;
}

static int sen_start(rl_master *m) {
  sentinel *s = of(m);
  init_timer(s, &s->ask_timer);
  init_timer(s, &s->check_timer);
  init_timer(s, &s->first_timer);
  init_timer(s, &s->ssub_timer);
  init_timer(s, &s->recount_timer);
  for (int k = 0; k < s->nsen; k++) {
    rl_conn *c = &s->sen[k];
    c->master = m;
    c->data = s;
    c->on_log = on_sen_log;
    c->on_closed = on_sen_closed;
    s->open++;
    rl_conn_start(c, m->loop, &s->sen_url[k], &s->sen_cfg);
  }
  s->sen_started = 1;
  s->first = 1;
  uv_timer_start(&s->first_timer, on_first_timer,
                 m->cfg.connect_timeout_ms > 0 ? m->cfg.connect_timeout_ms : 1,
                 0);
  uv_timer_start(&s->check_timer, on_check_timer, RL_SENTINEL_RECHECK_MS,
                 RL_SENTINEL_RECHECK_MS);
  if (m->acks > 0)
    uv_timer_start(&s->recount_timer, on_recount_timer, RECOUNT_MS,
                   RECOUNT_MS);
  send_ask(s);
  start_ssub(s);
  return 0;
}

static void sen_close(rl_master *m) {
  sentinel *s = of(m);
  if (s->closing) return;
  s->closing = 1;
  s->first = 0;
  fail_waiting(s, RL_CMD_DROPPED);
  s->confirmed = 0;
  atomic_store(&s->live, NULL);
  if (s->sen_started) {
    uv_timer_t *timers[] = {&s->ask_timer, &s->check_timer, &s->first_timer,
                            &s->ssub_timer, &s->recount_timer};
    for (size_t i = 0; i < 5; i++)
      uv_close((uv_handle_t *)timers[i], on_handle_closed);
    for (int k = 0; k < s->nsen; k++) rl_conn_close(&s->sen[k]);
  }
  if (s->ssub_state == C_LIVE) {
    s->ssub_state = C_CLOSING;
    rl_conn_close(s->ssub);
  }
  for (int i = 0; i < s->nnodes; i++) {
    close_cmd(s->nodes[i]);
    close_sub(s->nodes[i]);
  }
  maybe_closed(s);
}

static void sen_free(rl_master *m) {
  sentinel *s = of(m);
  for (int i = 0; i < s->nnodes; i++) {
    conn_free(s->nodes[i]->cmd);
    conn_free(s->nodes[i]->sub);
    free(s->nodes[i]);
  }
  for (int i = 0; i < s->nretired; i++)
    conn_free(s->retired[(s->retired_next + i) % MAX_RETIRED]);
  if (s->sen_started)
    for (int k = 0; k < s->nsen; k++) uv_mutex_destroy(&s->sen[k].errmu);
  conn_free(s->ssub);
  uv_mutex_destroy(&s->errmu);
  free(s);
}

static const rl_master_ops sentinel_ops = {
    sen_start,     sen_send,      sen_flush,    sen_primaries,
    sen_node_of,   sen_ready,     sen_refused,  sen_sub_start,
    sen_sub_send,  sen_sub_up,    sen_sub_where, sen_sub_close,
    sen_metrics,
    sen_close,     sen_free};

rl_master *rl_master_sentinel_new(const rl_master_url *url, uv_loop_t *loop,
                                  const rl_conn_config *cfg, int idx) {
  sentinel *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  if (uv_mutex_init(&s->errmu) != 0) {
    free(s);
    return NULL;
  }
  rl_master_init(&s->m, &sentinel_ops, RL_MASTER_SENTINEL, url, loop, cfg,
                 idx);
  s->url = *url;
  const rl_topo_url *t = &url->topo;
  s->nsen = t->naddrs;
  for (int k = 0; k < s->nsen; k++) {
    /* A sentinel: the TLS of the URL, its own credentials, no database. */
    rl_url *u = &s->sen_url[k];
    rl_master_url_seed(url, k, u);
    snprintf(u->user, sizeof u->user, "%s", t->sentinel_user);
    u->has_user = t->has_sentinel_user;
    snprintf(u->password, sizeof u->password, "%s", t->sentinel_password);
    u->has_password = t->has_sentinel_password;
    u->db = 0;
  }
  s->sen_cfg = *cfg;
  s->sen_cfg.mode = RL_CONN_BARE;
  s->sen_cfg.command_timeout_ms = cfg->connect_timeout_ms;
  s->sen_cfg.client_name = NULL;
  s->ssub_cfg = *cfg;
  s->ssub_cfg.mode = RL_CONN_SUBSCRIBER;
  s->ssub_cfg.command_timeout_ms = 0;
  s->ssub_cfg.client_name = NULL;
  rl_list_init(&s->waiting);
  atomic_init(&s->live, NULL);
  atomic_init(&s->timeouts, 0);
  atomic_init(&s->errors, 0);
  atomic_init(&s->confirms, 0);
  snprintf(s->err, sizeof s->err, "asking the sentinels");
  return &s->m;
}
