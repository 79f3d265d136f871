/*
 * The cluster harness behind harness_cluster.h. Its one subtle part is
 * deciding when a cluster is "settled": nodes learn of a failover or a
 * slot's new owner by gossip, at different moments, so a helper that
 * returned as soon as one node knew would hand the test a cluster whose
 * nodes still disagree, and the test's next step would race the gossip.
 * So every running node is asked, and all must say the same.
 */
#include "harness_cluster.h"

#include "harness_node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PORT 55535      /* the bus port, port + 10000, must exist */
#define START_TRIES 4       /* each is already up to 5 ports in harness.c */
#define CREATE_MS 60000     /* redis-cli --cluster create */
#define SETTLE_MS 30000     /* any wait for agreement */
#define MIGRATE_TIMEOUT_MS 5000

static int running(const rt_cluster *c, int i) {
  return i >= 0 && i < RT_CLUSTER_NODES && c->node[i].pid > 0;
}

static int answering(const rt_cluster *c, int i) {
  return running(c, i) && !c->node[i].paused;
}

/* Frees a reply and says whether it was the status OK. */
static int reply_ok(redisReply *rep) {
  int ok = rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0;
  if (rep) freeReplyObject(rep);
  return ok;
}

static void node_args(const rt_cluster *c, char *buf, size_t cap) {
  snprintf(buf, cap,
           "--cluster-enabled yes --cluster-config-file nodes.conf "
           "--cluster-node-timeout %d --cluster-allow-replica-migration no "
           "--cluster-replica-validity-factor 0 --repl-diskless-sync-delay 0"
           "%s%s",
           RT_CLUSTER_NODE_TIMEOUT_MS, c->password[0] ? " --masterauth " : "",
           c->password);
}

int rt_cluster_index_of_port(const rt_cluster *c, int port) {
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (c->node[i].port == port) return i;
  return -1;
}

static int index_of_id(const rt_cluster *c, const char *id) {
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (strcmp(c->id[i], id) == 0) return i;
  return -1;
}

/* One node's picture of the cluster, from its CLUSTER NODES. */
typedef struct view {
  short owner[RT_CLUSTER_SLOTS]; /* node index; -1 an unknown node; -2 none */
  int follows[RT_CLUSTER_NODES]; /* -1 primary, j replica of node j,
                                    -2 absent or following an unknown node */
  int failed[RT_CLUSTER_NODES];  /* flagged fail or fail? */
} view;

/* Parses one CLUSTER NODES line: "id addr flags master ping pong epoch
 * link slot...", where a slot is "N", "A-B", or "[N->-id]" / "[N-<-id]"
 * for one being migrated or imported, which does not change its owner. */
static void parse_line(const rt_cluster *c, char *line, view *v) {
  char *save = NULL, *tok[8];
  for (int k = 0; k < 8; k++)
    if (!(tok[k] = strtok_r(k ? NULL : line, " ", &save))) return;
  int idx = index_of_id(c, tok[0]);
  if (idx >= 0) v->failed[idx] = strstr(tok[2], "fail") != NULL;
  if (strstr(tok[2], "slave")) {
    int m = index_of_id(c, tok[3]);
    if (idx >= 0) v->follows[idx] = m >= 0 ? m : -2;
    return;
  }
  if (!strstr(tok[2], "master")) return;
  if (idx >= 0) v->follows[idx] = -1;
  for (char *s; (s = strtok_r(NULL, " ", &save));) {
    if (s[0] == '[') continue;
    char *dash = strchr(s, '-');
    int a = atoi(s), b = dash ? atoi(dash + 1) : a;
    for (int slot = a; slot <= b && slot < RT_CLUSTER_SLOTS; slot++)
      if (slot >= 0) v->owner[slot] = (short)idx;
  }
}

static int read_view(rt_cluster *c, int i, view *v) {
  for (int s = 0; s < RT_CLUSTER_SLOTS; s++) v->owner[s] = -2;
  for (int j = 0; j < RT_CLUSTER_NODES; j++) v->follows[j] = -2;
  memset(v->failed, 0, sizeof v->failed);
  redisReply *rep = rt_redis_cmd(&c->node[i], "CLUSTER NODES");
  if (!rep || rep->type != REDIS_REPLY_STRING) {
    if (rep) freeReplyObject(rep);
    return -1;
  }
  char *save = NULL;
  for (char *line = strtok_r(rep->str, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save))
    parse_line(c, line, v);
  freeReplyObject(rep);
  return 0;
}

/* Whether two views agree on the slots and on the running nodes' roles. */
static int same_view(const rt_cluster *c, const view *a, const view *b) {
  if (memcmp(a->owner, b->owner, sizeof a->owner) != 0) return 0;
  for (int j = 0; j < RT_CLUSTER_NODES; j++)
    if (running(c, j) && a->follows[j] != b->follows[j]) return 0;
  return 1;
}

/* Whether INFO of a section of node i contains every one of the lines. */
static int info_has(rt_cluster *c, int i, const char *section,
                    const char *const *lines, int n) {
  redisReply *rep = rt_redis_cmd(&c->node[i], "INFO %s", section);
  int ok = rep && rep->type == REDIS_REPLY_STRING;
  for (int k = 0; ok && k < n; k++) ok = strstr(rep->str, lines[k]) != NULL;
  if (rep) freeReplyObject(rep);
  return ok;
}

/* One look at the cluster: 1 if settled, else 0 with the reason. */
static int settled_once(rt_cluster *c, char *why, size_t cap) {
  static view v[RT_CLUSTER_NODES]; /* 200 KB: not on the stack */
  int first = -1;
  for (int i = 0; i < RT_CLUSTER_NODES; i++) {
    if (!answering(c, i)) continue;
    if (read_view(c, i, &v[i]) != 0)
      return snprintf(why, cap, "node %d does not answer", i), 0;
    redisReply *rep = rt_redis_cmd(&c->node[i], "CLUSTER INFO");
    int ok = rep && rep->type == REDIS_REPLY_STRING &&
             strstr(rep->str, "cluster_state:ok\r\n");
    if (rep) freeReplyObject(rep);
    if (!ok) return snprintf(why, cap, "node %d: cluster state not ok", i), 0;
    /* A node back from a kill keeps its FAIL flag in the others' views
     * until each has heard from it: until then they still count it out
     * (and list it as "slave,fail"). A paused node is rightly flagged. */
    for (int j = 0; j < RT_CLUSTER_NODES; j++)
      if (answering(c, j) && v[i].failed[j])
        return snprintf(why, cap, "node %d still flags node %d as failing",
                        i, j), 0;
    if (first < 0)
      first = i;
    else if (!same_view(c, &v[first], &v[i]))
      return snprintf(why, cap, "nodes %d and %d disagree", first, i), 0;
  }
  if (first < 0) return snprintf(why, cap, "no node answers"), 0;
  const view *w = &v[first];
  for (int s = 0; s < RT_CLUSTER_SLOTS; s++)
    if (!running(c, w->owner[s]))
      return snprintf(why, cap, "slot %d is owned by %d, not a running node",
                      s, w->owner[s]), 0;
  for (int j = 0; j < RT_CLUSTER_NODES; j++) {
    if (!running(c, j)) continue;
    int m = w->follows[j];
    if (m == -2 || (m >= 0 && (!running(c, m) || w->follows[m] != -1)))
      return snprintf(why, cap, "node %d follows %d, not a running primary",
                      j, m), 0;
    if (!answering(c, j)) continue;
    char port[48];
    snprintf(port, sizeof port, "master_port:%d\r\n",
             m >= 0 ? c->node[m].port : 0);
    const char *as_replica[] = {"role:slave", port, "master_link_status:up"};
    const char *as_primary[] = {"role:master"};
    if (m >= 0 ? !info_has(c, j, "replication", as_replica, 3)
               : !info_has(c, j, "replication", as_primary, 1))
      return snprintf(why, cap, "node %d is not yet a %s", j,
                      m >= 0 ? "replica with its link up" : "primary"), 0;
  }
  return 1;
}

typedef int (*cluster_cond)(rt_cluster *c, const void *arg);

/* Waits until the cluster is settled and cond (if any) holds. */
static int wait_for(rt_cluster *c, int timeout_ms, cluster_cond cond,
                    const void *arg, const char *what) {
  char why[160] = "";
  for (uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;; rt_sleep_ms(100)) {
    if (settled_once(c, why, sizeof why)) {
      if (!cond || cond(c, arg)) return 0;
      snprintf(why, sizeof why, "settled, but not yet %s", what);
    }
    if (rt_now_ms() > end) break;
  }
  fprintf(stderr, "rt_cluster: no %s after %d ms: %s\n", what, timeout_ms,
          why);
  return -1;
}

int rt_cluster_wait_settled(rt_cluster *c, int timeout_ms) {
  return wait_for(c, timeout_ms, NULL, NULL, "settled cluster");
}

int rt_cluster_owner(rt_cluster *c, int slot) {
  static view v;
  if (slot < 0 || slot >= RT_CLUSTER_SLOTS) return -1;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (answering(c, i) && read_view(c, i, &v) == 0)
      return v.owner[slot] >= 0 ? v.owner[slot] : -1;
  return -1;
}

int rt_cluster_key_owner(rt_cluster *c, const char *key) {
  return rt_cluster_owner(c, rt_key_slot_str(key));
}

/* ROLE: ["master", offset, replicas] or ["slave", host, port, state,
 * offset]. Returns the reply, or NULL on anything else. */
static redisReply *role(rt_cluster *c, int i) {
  if (!answering(c, i)) return NULL;
  redisReply *rep = rt_redis_cmd(&c->node[i], "ROLE");
  if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 3 &&
      rep->element[0]->type == REDIS_REPLY_STRING)
    return rep;
  if (rep) freeReplyObject(rep);
  return NULL;
}

int rt_cluster_is_primary(rt_cluster *c, int i) {
  redisReply *rep = role(c, i);
  if (!rep) return -1;
  int v = strcmp(rep->element[0]->str, "master") == 0;
  freeReplyObject(rep);
  return v;
}

int rt_cluster_primaries(rt_cluster *c, int *out) {
  int n = 0;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (rt_cluster_is_primary(c, i) == 1) out[n++] = i;
  return n;
}

int rt_cluster_primary_of(rt_cluster *c, int i) {
  redisReply *rep = role(c, i);
  int m = -1;
  if (rep && strcmp(rep->element[0]->str, "slave") == 0 &&
      rep->elements >= 5 && rep->element[2]->type == REDIS_REPLY_INTEGER)
    m = rt_cluster_index_of_port(c, (int)rep->element[2]->integer);
  if (rep) freeReplyObject(rep);
  return m;
}

int rt_cluster_replica_of(rt_cluster *c, int p) {
  for (int j = 0; j < RT_CLUSTER_NODES; j++)
    if (j != p && rt_cluster_primary_of(c, j) == p) return j;
  return -1;
}

/* Starts node i, retrying on new ports when harness.c's own tries fail
 * (a port above MAX_PORT makes redis-server exit at start-up). */
static int start_node(rt_cluster *c, int i) {
  char args[512];
  node_args(c, args, sizeof args);
  for (int t = 0; t < START_TRIES; t++) {
    if (rt_node_start(&c->node[i], c->password, 0, args) != 0) continue;
    if (c->node[i].port <= MAX_PORT) return 0;
    rt_redis_stop(&c->node[i]);
  }
  return -1;
}

static int read_ids(rt_cluster *c) {
  for (int i = 0; i < RT_CLUSTER_NODES; i++) {
    redisReply *rep = rt_redis_cmd(&c->node[i], "CLUSTER MYID");
    int ok = rep && rep->type == REDIS_REPLY_STRING && rep->len == 40;
    if (ok) memcpy(c->id[i], rep->str, 41);
    if (rep) freeReplyObject(rep);
    if (!ok) return -1;
  }
  return 0;
}

static int create(rt_cluster *c) {
  char cli[512], addr[RT_CLUSTER_NODES][32], log[300];
  const char *argv[RT_CLUSTER_NODES + 10];
  int n = 0;
  argv[n++] = rt_server_tool("cli", cli, sizeof cli);
  argv[n++] = "--cluster";
  argv[n++] = "create";
  for (int i = 0; i < RT_CLUSTER_NODES; i++) {
    snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", c->node[i].port);
    argv[n++] = addr[i];
  }
  argv[n++] = "--cluster-replicas";
  argv[n++] = "1";
  argv[n++] = "--cluster-yes";
  if (c->password[0]) {
    argv[n++] = "-a";
    argv[n++] = c->password;
    argv[n++] = "--no-auth-warning";
  }
  argv[n] = NULL;
  snprintf(log, sizeof log, "%s/cluster-create.log", c->node[0].dir);
  if (rt_run(argv, log, CREATE_MS) == 0) return 0;
  char what[600];
  snprintf(what, sizeof what, "rt_cluster: %s --cluster create failed", cli);
  rt_print_tail(what, log);
  return -1;
}

int rt_cluster_start(rt_cluster *c, const char *password) {
  memset(c, 0, sizeof *c);
  if (password && strlen(password) >= sizeof c->password) return -1;
  if (password) strcpy(c->password, password);
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (start_node(c, i) != 0) {
      fprintf(stderr, "rt_cluster: could not start node %d\n", i);
      goto fail;
    }
  if (read_ids(c) != 0 || create(c) != 0 ||
      rt_cluster_wait_settled(c, SETTLE_MS) != 0)
    goto fail;
  return 0;
fail:
  rt_cluster_stop(c);
  return -1;
}

void rt_cluster_stop(rt_cluster *c) {
  rt_redis_stop_many(c->node, RT_CLUSTER_NODES);
}

/* A command with arguments built at run time, on a connection of its own
 * (harness.h's rt_redis_cmd takes a format only). */
static redisReply *argv_cmd(rt_redis *r, int argc, const char **argv,
                            int timeout_ms) {
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext *ctx = redisConnectWithTimeout("127.0.0.1", r->port, tv);
  redisReply *rep = NULL;
  if (ctx && !ctx->err && redisSetTimeout(ctx, tv) == REDIS_OK) {
    int authed = 1;
    if (r->password[0]) {
      redisReply *a = redisCommand(ctx, "AUTH %s", r->password);
      authed = reply_ok(a);
    }
    if (authed) rep = redisCommandArgv(ctx, argc, argv, NULL);
  }
  if (ctx) redisFree(ctx);
  return rep;
}

int rt_cluster_migrate_begin(rt_cluster *c, int slot, int to,
                             rt_migration *m) {
  int from = rt_cluster_owner(c, slot);
  if (from < 0 || from == to || rt_cluster_is_primary(c, to) != 1) {
    fprintf(stderr, "rt_cluster: cannot migrate slot %d from %d to %d\n",
            slot, from, to);
    return -1;
  }
  m->slot = slot;
  m->from = from;
  m->to = to;
  if (!reply_ok(rt_redis_cmd(&c->node[to], "CLUSTER SETSLOT %d IMPORTING %s",
                             slot, c->id[from])) ||
      !reply_ok(rt_redis_cmd(&c->node[from], "CLUSTER SETSLOT %d MIGRATING %s",
                             slot, c->id[to]))) {
    fprintf(stderr, "rt_cluster: SETSLOT IMPORTING/MIGRATING refused\n");
    return -1;
  }
  return 0;
}

int rt_cluster_migrate_keys(rt_cluster *c, const rt_migration *m, int batch) {
  redisReply *keys = rt_redis_cmd(&c->node[m->from],
                                  "CLUSTER GETKEYSINSLOT %d %d", m->slot,
                                  batch > 0 ? batch : 100);
  if (!keys || keys->type != REDIS_REPLY_ARRAY) {
    if (keys) freeReplyObject(keys);
    return -1;
  }
  int n = (int)keys->elements, rc = n;
  if (n > 0) {
    const char **argv = calloc((size_t)n + 10, sizeof *argv);
    char port[16], timeout[16];
    snprintf(port, sizeof port, "%d", c->node[m->to].port);
    snprintf(timeout, sizeof timeout, "%d", MIGRATE_TIMEOUT_MS);
    int a = 0;
    argv[a++] = "MIGRATE";
    argv[a++] = "127.0.0.1";
    argv[a++] = port;
    argv[a++] = "";
    argv[a++] = "0";
    argv[a++] = timeout;
    if (c->password[0]) {
      argv[a++] = "AUTH";
      argv[a++] = c->password;
    }
    argv[a++] = "KEYS";
    for (int k = 0; k < n; k++) argv[a++] = keys->element[k]->str;
    redisReply *rep = argv_cmd(&c->node[m->from], a, argv,
                               MIGRATE_TIMEOUT_MS * 2);
    /* NOKEY: they expired or were deleted since GETKEYSINSLOT. */
    if (!rep || rep->type != REDIS_REPLY_STATUS) {
      fprintf(stderr, "rt_cluster: MIGRATE failed: %s\n",
              rep && rep->str ? rep->str : "no reply");
      rc = -1;
    }
    if (rep) freeReplyObject(rep);
    free(argv);
  }
  freeReplyObject(keys);
  return rc;
}

static int owner_is(rt_cluster *c, const void *arg) {
  const rt_migration *m = arg;
  return rt_cluster_owner(c, m->slot) == m->to;
}

int rt_cluster_migrate_finish(rt_cluster *c, const rt_migration *m) {
  /* The target first: it bumps its config epoch and claims the slot, so
   * no node can hand the slot back to the source; then the source, which
   * stops answering ASK; then the others, which would learn by gossip. */
  int order[RT_CLUSTER_NODES], n = 0;
  order[n++] = m->to;
  order[n++] = m->from;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (i != m->to && i != m->from && rt_cluster_is_primary(c, i) == 1)
      order[n++] = i;
  for (int k = 0; k < n; k++)
    if (!reply_ok(rt_redis_cmd(&c->node[order[k]],
                               "CLUSTER SETSLOT %d NODE %s", m->slot,
                               c->id[m->to]))) {
      fprintf(stderr, "rt_cluster: SETSLOT NODE refused by node %d\n",
              order[k]);
      return -1;
    }
  return wait_for(c, SETTLE_MS, owner_is, m, "new slot owner");
}

int rt_cluster_migrate_slot(rt_cluster *c, int slot, int to) {
  rt_migration m;
  if (rt_cluster_migrate_begin(c, slot, to, &m) != 0) return -1;
  int n;
  while ((n = rt_cluster_migrate_keys(c, &m, 100)) > 0) continue;
  return n < 0 ? -1 : rt_cluster_migrate_finish(c, &m);
}

typedef struct pair {
  int primary, replica;
} pair;

/* The replica is now the primary and the old primary (if running) its
 * replica. */
static int switched(rt_cluster *c, const void *arg) {
  const pair *p = arg;
  return rt_cluster_is_primary(c, p->replica) == 1 &&
         (!running(c, p->primary) ||
          rt_cluster_primary_of(c, p->primary) == p->replica);
}

int rt_cluster_failover(rt_cluster *c, int replica) {
  pair p = {rt_cluster_primary_of(c, replica), replica};
  if (p.primary < 0) {
    fprintf(stderr, "rt_cluster: node %d is not a replica\n", replica);
    return -1;
  }
  if (!reply_ok(rt_redis_cmd(&c->node[replica], "CLUSTER FAILOVER"))) {
    fprintf(stderr, "rt_cluster: CLUSTER FAILOVER refused by node %d\n",
            replica);
    return -1;
  }
  return wait_for(c, SETTLE_MS, switched, &p, "manual failover");
}

int rt_cluster_kill_primary(rt_cluster *c, int p) {
  pair pr = {p, rt_cluster_replica_of(c, p)};
  if (rt_cluster_is_primary(c, p) != 1 || pr.replica < 0) {
    fprintf(stderr, "rt_cluster: node %d is not a primary with a replica\n",
            p);
    return -1;
  }
  if (rt_redis_kill(&c->node[p]) != 0) return -1;
  if (wait_for(c, SETTLE_MS, switched, &pr, "promoted replica") != 0)
    return -1;
  return pr.replica;
}

int rt_cluster_restart(rt_cluster *c, int i) {
  char args[512];
  node_args(c, args, sizeof args);
  if (running(c, i) || rt_node_restart(&c->node[i], 0, args) != 0) {
    fprintf(stderr, "rt_cluster: could not restart node %d\n", i);
    return -1;
  }
  return rt_cluster_wait_settled(c, SETTLE_MS);
}

int rt_cluster_pause(rt_cluster *c, int i) {
  return rt_redis_pause(&c->node[i]);
}

int rt_cluster_resume(rt_cluster *c, int i) {
  return rt_redis_resume(&c->node[i]);
}
