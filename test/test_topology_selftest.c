/*
 * Self-test of the topology harnesses (harness_cluster.h,
 * harness_sentinel.h, keyslot.h). The Redis Cluster and Sentinel tests of
 * the library will trust these helpers to have done what they say (moved
 * a slot, failed a primary over, made a replica miss a write), so each
 * helper is checked here against the real processes: what the servers
 * themselves answer, not what the helper believes.
 *
 * One cluster and one Sentinel setup are started before the tests and
 * shared by them, to keep the run within a couple of minutes; each test
 * asks which nodes are primaries rather than assuming, so any test can
 * also run alone (test_topology_selftest NAME...).
 */
#include "harness.h"
#include "harness_cluster.h"
#include "harness_sentinel.h"
#include "keyslot.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rt_cluster C;
static int cluster_up;
static rt_sentinel S;
static int sentinel_up;

/* Frees rep and says whether it had this type and, for a non-NULL str,
 * this text. */
static int reply_is(redisReply *rep, int type, const char *str) {
  int ok = rep && rep->type == type &&
           (!str || (rep->str && strcmp(rep->str, str) == 0));
  if (rep) freeReplyObject(rep);
  return ok;
}

/* A connection of the test's own (not the harness's cached one), for
 * connection state such as READONLY; authenticated when needed. */
static redisContext *open_conn(const rt_redis *r) {
  struct timeval tv = {2, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
  if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
    if (c) redisFree(c);
    return NULL;
  }
  if (r->password[0] &&
      !reply_is(redisCommand(c, "AUTH %s", r->password), REDIS_REPLY_STATUS,
                "OK")) {
    redisFree(c);
    return NULL;
  }
  return c;
}

/* The first line of INFO replication's value for a field, as an integer,
 * or -1. */
static long long info_field(rt_redis *r, const char *field) {
  redisReply *rep = rt_redis_cmd(r, "INFO replication");
  long long v = -1;
  if (rep && rep->type == REDIS_REPLY_STRING) {
    char want[64];
    snprintf(want, sizeof want, "\r\n%s:", field);
    char *p = strstr(rep->str, want);
    if (p) v = strtoll(p + strlen(want), NULL, 10);
  }
  if (rep) freeReplyObject(rep);
  return v;
}

static int process_gone(pid_t pid) {
  return pid > 0 && kill(pid, 0) == -1 && errno == ESRCH;
}

/* The slot of the first "prefix:N" key owned by node i, with the key. */
static int key_owned_by(int i, const char *prefix, char *key, size_t cap) {
  for (int n = 0; n < 1000; n++) {
    snprintf(key, cap, "%s:%d", prefix, n);
    if (rt_cluster_key_owner(&C, key) == i) return rt_key_slot_str(key);
  }
  return -1;
}

/* The line of CLUSTER NODES that describes the node with this id (not a
 * replica's line, which names its primary's id too), or NULL. */
static char *node_line(char *nodes, const char *id) {
  size_t n = strlen(id);
  for (char *line = nodes; line && *line;) {
    if (strncmp(line, id, n) == 0 && line[n] == ' ') return line;
    line = strchr(line, '\n');
    if (line) line++;
  }
  return NULL;
}

/* Whether a CLUSTER NODES text gives the slot to the node with this id. */
static int gives_slot(const char *nodes, const char *id, int slot) {
  char *copy = strdup(nodes), *line = node_line(copy, id), *save = NULL;
  char *eol = line ? strchr(line, '\n') : NULL;
  if (eol) *eol = '\0';
  int owns = 0, k = 0;
  /* id addr flags master ping pong epoch link slot... */
  for (char *tok = line ? strtok_r(line, " ", &save) : NULL; tok;
       tok = strtok_r(NULL, " ", &save), k++) {
    if (k < 8 || tok[0] == '[') continue;
    char *dash = strchr(tok, '-');
    int a = atoi(tok), b = dash ? atoi(dash + 1) : a;
    owns |= a <= slot && slot <= b;
  }
  free(copy);
  return owns;
}

/* Whether a CLUSTER NODES text lists node r as a replica of node m. */
static int lists_replica(const char *nodes, int r, int m) {
  char *copy = strdup(nodes), *line = node_line(copy, C.id[r]), want[64];
  char *eol = line ? strchr(line, '\n') : NULL;
  if (eol) *eol = '\0';
  snprintf(want, sizeof want, "slave %s ", C.id[m]);
  int ok = line && strstr(line, want) != NULL;
  free(copy);
  return ok;
}

/* Whether node i says cluster_state:ok, and its own CLUSTER NODES gives
 * the slot to node owner and (unless r < 0) lists node r as a replica of
 * node m. */
static int node_agrees(int i, int slot, int owner, int r, int m) {
  redisReply *info = rt_redis_cmd(&C.node[i], "CLUSTER INFO");
  redisReply *nodes = rt_redis_cmd(&C.node[i], "CLUSTER NODES");
  int ok = info && info->type == REDIS_REPLY_STRING &&
           strstr(info->str, "cluster_state:ok\r\n") != NULL &&
           nodes && nodes->type == REDIS_REPLY_STRING &&
           gives_slot(nodes->str, C.id[owner], slot) &&
           (r < 0 || lists_replica(nodes->str, r, m));
  if (info) freeReplyObject(info);
  if (nodes) freeReplyObject(nodes);
  return ok;
}

/* node_agrees for every running node, at once: no waiting here, so a
 * helper that returned before the gossip reached every node fails it. */
static int every_node_agrees(int slot, int owner, int r, int m) {
  int all = 1;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (C.node[i].pid > 0 && !node_agrees(i, slot, owner, r, m)) {
      fprintf(stderr, "  node %d does not agree yet\n", i);
      all = 0;
    }
  return all;
}

/* keyslot.c: pure. */

static void test_keyslot_known_values(void) {
  RT_CHECK_EQ_INT(rt_crc16("123456789", 9), 0x31C3);
  /* Slots that CLUSTER KEYSLOT of Redis 7.0.15 gave (TOPOLOGY-FACTS.md). */
  struct { const char *key; int slot; } known[] = {
      {"foo", 12182}, {"bar", 5061}, {"{user1}.a", 8106}, {"a{}b", 13694},
      {"{}", 15257}, {"{a", 10276}, {"x{y}z{w}", 12222}, {"", 0}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    RT_CHECK_EQ_INT(rt_key_slot_str(known[i].key), known[i].slot);
  /* A tag decides: same tag, same slot; "{}" is no tag. */
  RT_CHECK_EQ_INT(rt_key_slot_str("{lock}:a"), rt_key_slot_str("lock"));
  RT_CHECK_EQ_INT(rt_key_slot_str("zz{lock}{x}"), rt_key_slot_str("lock"));
  RT_CHECK_EQ_INT(rt_key_slot_str("{}lock"), rt_crc16("{}lock", 6) & 0x3FFF);
  RT_CHECK_EQ_INT(rt_key_slot("{a\0b}", 5), rt_crc16("a\0b", 3) & 0x3FFF);
}

/* Many keys, hash tags and binary bytes included, against the server. */
static void test_keyslot_matches_server(void) {
  RT_REQUIRE(cluster_up);
  static const char alphabet[] = "ab{}{}}{xyz\0\xff:-";
  uint32_t x = 2463534242u;
  int checked = 0, tagged = 0;
  for (int n = 0; n < 3000; n++) {
    char key[32];
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    size_t len = x % 24;
    for (size_t j = 0; j < len; j++) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      key[j] = alphabet[x % (sizeof alphabet - 1)];
    }
    const char *open = memchr(key, '{', len);
    tagged += open && memchr(open, '}', len - (size_t)(open - key)) != NULL;
    long long slot = rt_redis_int(&C.node[0], "CLUSTER KEYSLOT %b", key, len);
    RT_CHECK_EQ_INT(rt_key_slot(key, len), slot);
    checked += slot >= 0;
  }
  RT_CHECK_EQ_INT(checked, 3000);
  RT_CHECK(tagged > 1000);
}

/* harness_cluster.c */

static void test_cluster_shape(void) {
  RT_REQUIRE(cluster_up);
  int p[RT_CLUSTER_NODES], np = rt_cluster_primaries(&C, p);
  RT_CHECK_EQ_INT(np, 3);
  int followed[RT_CLUSTER_NODES] = {0};
  for (int i = 0; i < RT_CLUSTER_NODES; i++) {
    rt_redis *r = &C.node[i];
    RT_CHECK(r->port > 0 && r->port <= 55535);
    RT_CHECK_EQ_INT(getpgid(r->pid), r->pid); /* a group of its own */
    char conf[300];
    struct stat st;
    snprintf(conf, sizeof conf, "%s/nodes.conf", r->dir);
    RT_CHECK(stat(conf, &st) == 0);
    RT_CHECK_EQ_INT(rt_redis_int(r, "CLUSTER COUNT-FAILURE-REPORTS %s",
                                 C.id[(i + 1) % RT_CLUSTER_NODES]), 0);
    int m = rt_cluster_primary_of(&C, i);
    if (rt_cluster_is_primary(&C, i) == 0) {
      RT_REQUIRE(m >= 0);
      RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, m), 1);
      followed[m]++;
    }
  }
  for (int k = 0; k < np; k++) RT_CHECK_EQ_INT(followed[p[k]], 1);
  /* The slot map covers everything, each range on a primary. */
  for (int slot = 0; slot < RT_CLUSTER_SLOTS; slot += 257) {
    int o = rt_cluster_owner(&C, slot);
    RT_CHECK(o >= 0 && rt_cluster_is_primary(&C, o) == 1);
  }
  RT_CHECK(rt_cluster_owner(&C, RT_CLUSTER_SLOTS - 1) >= 0);
  redisReply *rep = rt_redis_cmd(&C.node[0], "CLUSTER INFO");
  RT_CHECK(rep && rep->type == REDIS_REPLY_STRING &&
           strstr(rep->str, "cluster_state:ok\r\n") &&
           strstr(rep->str, "cluster_slots_ok:16384\r\n") &&
           strstr(rep->str, "cluster_known_nodes:6\r\n") &&
           strstr(rep->str, "cluster_size:3\r\n"));
  if (rep) freeReplyObject(rep);
}

/* A key written through the owner of its slot is readable there, and
 * every other primary redirects to that owner. */
static void test_cluster_key_on_owner(void) {
  RT_REQUIRE(cluster_up);
  int p[RT_CLUSTER_NODES], np = rt_cluster_primaries(&C, p);
  RT_REQUIRE(np == 3);
  for (int k = 0; k < np; k++) {
    char key[64], moved[96];
    int slot = key_owned_by(p[k], "owner", key, sizeof key);
    RT_REQUIRE(slot >= 0);
    RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[k]], "SET %s v%d", key, k),
                      REDIS_REPLY_STATUS, "OK"));
    char want[16];
    snprintf(want, sizeof want, "v%d", k);
    RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[k]], "GET %s", key),
                      REDIS_REPLY_STRING, want));
    snprintf(moved, sizeof moved, "MOVED %d 127.0.0.1:%d", slot,
             C.node[p[k]].port);
    for (int j = 0; j < np; j++)
      if (j != k)
        RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[j]], "GET %s", key),
                          REDIS_REPLY_ERROR, moved));
  }
}

/* Each step of a migration has the effect the cluster specification
 * gives it, and at the end the slot and all its keys are on the target. */
static void test_cluster_migration_steps(void) {
  RT_REQUIRE(cluster_up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  char tag[64], key[96], ask[96];
  int slot = key_owned_by(p[0], "mig", tag, sizeof tag);
  RT_REQUIRE(slot >= 0);
  enum { NKEYS = 250 };
  for (int n = 0; n < NKEYS; n++)
    RT_REQUIRE(reply_is(rt_redis_cmd(&C.node[p[0]], "SET {%s}:%d %d", tag, n,
                                     n),
                        REDIS_REPLY_STATUS, "OK"));
  rt_migration m;
  RT_REQUIRE(rt_cluster_migrate_begin(&C, slot, p[1], &m) == 0);
  RT_CHECK_EQ_INT(m.from, p[0]);
  RT_CHECK_EQ_INT(m.to, p[1]);
  snprintf(ask, sizeof ask, "ASK %d 127.0.0.1:%d", slot, C.node[p[1]].port);
  /* Open slot: the source serves keys it has, sends the rest to ASK. */
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[0]], "GET {%s}:0", tag),
                    REDIS_REPLY_STRING, "0"));
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[0]], "GET {%s}:none", tag),
                    REDIS_REPLY_ERROR, ask));
  /* The first batch moves exactly that many keys. */
  RT_CHECK_EQ_INT(rt_cluster_migrate_keys(&C, &m, 100), 100);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[0]], "CLUSTER COUNTKEYSINSLOT %d",
                               slot), NKEYS - 100);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[1]], "CLUSTER COUNTKEYSINSLOT %d",
                               slot), 100);
  /* A moved key: ASK at the source, served by the target after ASKING,
   * and MOVED back to the source without it (the slot is still not the
   * target's). */
  redisReply *keys = rt_redis_cmd(&C.node[p[1]], "CLUSTER GETKEYSINSLOT %d 1",
                                  slot);
  RT_REQUIRE(keys && keys->type == REDIS_REPLY_ARRAY && keys->elements == 1);
  snprintf(key, sizeof key, "%s", keys->element[0]->str);
  freeReplyObject(keys);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[0]], "GET %s", key),
                    REDIS_REPLY_ERROR, ask));
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[1]], "ASKING"), REDIS_REPLY_STATUS,
                    "OK"));
  redisReply *v = rt_redis_cmd(&C.node[p[1]], "GET %s", key);
  RT_CHECK(v && v->type == REDIS_REPLY_STRING);
  if (v) freeReplyObject(v);
  redisReply *moved = rt_redis_cmd(&C.node[p[1]], "GET %s", key);
  RT_CHECK(moved && moved->type == REDIS_REPLY_ERROR &&
           strncmp(moved->str, "MOVED ", 6) == 0);
  if (moved) freeReplyObject(moved);
  /* The rest, then the slot changes hands everywhere. */
  int n, total = 100;
  while ((n = rt_cluster_migrate_keys(&C, &m, 100)) > 0) total += n;
  RT_CHECK_EQ_INT(n, 0);
  RT_CHECK_EQ_INT(total, NKEYS);
  RT_REQUIRE(rt_cluster_migrate_finish(&C, &m) == 0);
  RT_CHECK(every_node_agrees(slot, p[1], -1, -1));
  for (int i = 0; i < RT_CLUSTER_NODES; i++) {
    /* Every node's own map, not just the first one's. */
    redisReply *rep = rt_redis_cmd(&C.node[i], "CLUSTER NODES");
    RT_REQUIRE(rep && rep->type == REDIS_REPLY_STRING);
    char *line = node_line(rep->str, C.id[p[1]]);
    char *eol = line ? strchr(line, '\n') : NULL;
    char want[16];
    snprintf(want, sizeof want, " %d", slot);
    RT_CHECK(line && eol);
    if (line && eol) {
      *eol = '\0';
      RT_CHECK(strstr(line, want) != NULL); /* " slot" or " slot-..." */
    }
    freeReplyObject(rep);
  }
  RT_CHECK_EQ_INT(rt_cluster_owner(&C, slot), p[1]);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[0]], "CLUSTER COUNTKEYSINSLOT %d",
                               slot), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[1]], "CLUSTER COUNTKEYSINSLOT %d",
                               slot), NKEYS);
  for (int k = 0; k < NKEYS; k += 49) {
    char want[16];
    snprintf(want, sizeof want, "%d", k);
    RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[1]], "GET {%s}:%d", tag, k),
                      REDIS_REPLY_STRING, want));
  }
  char movedmsg[96];
  snprintf(movedmsg, sizeof movedmsg, "MOVED %d 127.0.0.1:%d", slot,
           C.node[p[1]].port);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[p[0]], "GET {%s}:0", tag),
                    REDIS_REPLY_ERROR, movedmsg));
  /* And back, in one call, so the next tests see three even primaries. */
  RT_CHECK(rt_cluster_migrate_slot(&C, slot, p[0]) == 0);
  RT_CHECK(every_node_agrees(slot, p[0], -1, -1));
  RT_CHECK_EQ_INT(rt_cluster_owner(&C, slot), p[0]);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[0]], "CLUSTER COUNTKEYSINSLOT %d",
                               slot), NKEYS);
}

/* After CLUSTER FAILOVER the old replica is the primary, with the data,
 * and the old primary follows it. */
static void test_cluster_manual_failover(void) {
  RT_REQUIRE(cluster_up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int old = p[1], rep = rt_cluster_replica_of(&C, old);
  RT_REQUIRE(rep >= 0);
  char key[64];
  int slot = key_owned_by(old, "fo", key, sizeof key);
  RT_REQUIRE(slot >= 0);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[old], "SET %s before", key),
                    REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[old], "WAIT 1 2000"), 1);
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_cluster_failover(&C, rep) == 0);
  fprintf(stderr, "  manual failover settled in %llu ms\n",
          (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(every_node_agrees(slot, rep, old, rep));
  RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, rep), 1);
  RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, old), 0);
  RT_CHECK_EQ_INT(rt_cluster_primary_of(&C, old), rep);
  RT_CHECK_EQ_INT(rt_cluster_owner(&C, slot), rep);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[rep], "GET %s", key),
                    REDIS_REPLY_STRING, "before"));
  char moved[96];
  snprintf(moved, sizeof moved, "MOVED %d 127.0.0.1:%d", slot,
           C.node[rep].port);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[old], "SET %s after", key),
                    REDIS_REPLY_ERROR, moved));
}

/* A SIGKILLed primary: its replica is promoted, the cluster is ok again
 * without it; restarted, it rejoins as a replica of its replacement. */
static void test_cluster_kill_and_restart(void) {
  RT_REQUIRE(cluster_up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int victim = p[2], heir = rt_cluster_replica_of(&C, victim);
  RT_REQUIRE(heir >= 0);
  char key[64];
  int slot = key_owned_by(victim, "kill", key, sizeof key);
  RT_REQUIRE(slot >= 0);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[victim], "SET %s kept", key),
                    REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[victim], "WAIT 1 2000"), 1);
  pid_t pid = C.node[victim].pid;
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_cluster_kill_primary(&C, victim) == heir);
  fprintf(stderr, "  SIGKILL to settled failover: %llu ms\n",
          (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(every_node_agrees(slot, heir, -1, -1));
  RT_CHECK(process_gone(pid));
  RT_CHECK_EQ_INT(C.node[victim].pid, 0);
  RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, heir), 1);
  RT_CHECK_EQ_INT(rt_cluster_owner(&C, slot), heir);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[heir], "GET %s", key),
                    REDIS_REPLY_STRING, "kept"));
  /* The heir has no replica now; writes still work, WAIT says 0. */
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[heir], "SET %s alone", key),
                    REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[heir], "WAIT 1 100"), 0);

  RT_REQUIRE(rt_cluster_restart(&C, victim) == 0);
  RT_CHECK(every_node_agrees(slot, heir, victim, heir));
  RT_CHECK(C.node[victim].pid > 0 && C.node[victim].pid != pid);
  RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, victim), 0);
  RT_CHECK_EQ_INT(rt_cluster_primary_of(&C, victim), heir);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[heir], "WAIT 1 5000"), 1);
  redisContext *ro = open_conn(&C.node[victim]);
  RT_REQUIRE(ro);
  RT_CHECK(reply_is(redisCommand(ro, "READONLY"), REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(reply_is(redisCommand(ro, "GET %s", key), REDIS_REPLY_STRING,
                    "alone"));
  redisFree(ro);
}

/* A paused replica misses a write its primary acknowledges; WAIT says
 * so; resumed, it catches up. */
static void test_cluster_pause_replica(void) {
  RT_REQUIRE(cluster_up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int prim = p[0], rep = rt_cluster_replica_of(&C, prim);
  RT_REQUIRE(rep >= 0);
  char key[64];
  RT_REQUIRE(key_owned_by(prim, "pause", key, sizeof key) >= 0);
  RT_REQUIRE(rt_cluster_pause(&C, rep) == 0);
  RT_CHECK_EQ_INT(C.node[rep].paused, 1);
  RT_CHECK(reply_is(rt_redis_cmd(&C.node[prim], "SET %s missed", key),
                    REDIS_REPLY_STATUS, "OK"));
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[prim], "WAIT 1 300"), 0);
  RT_CHECK(rt_now_ms() - t0 >= 250); /* it did wait, in vain */
  RT_REQUIRE(rt_cluster_resume(&C, rep) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[prim], "WAIT 1 5000"), 1);
  redisContext *ro = open_conn(&C.node[rep]);
  RT_REQUIRE(ro);
  RT_CHECK(reply_is(redisCommand(ro, "READONLY"), REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(reply_is(redisCommand(ro, "GET %s", key), REDIS_REPLY_STRING,
                    "missed"));
  redisFree(ro);
  RT_CHECK(rt_cluster_wait_settled(&C, 20000) == 0);
}

/* A cluster with a password: nodes refuse the unauthenticated, and the
 * replicas could sync (settled means their links are up). */
static void test_cluster_password(void) {
  rt_cluster pc;
  RT_REQUIRE(rt_cluster_start(&pc, "clu-pw") == 0);
  redisContext *raw = redisConnect("127.0.0.1", pc.node[3].port);
  RT_CHECK(raw && !raw->err);
  if (raw && !raw->err) {
    redisReply *rep = redisCommand(raw, "CLUSTER INFO");
    RT_CHECK(rep && rep->type == REDIS_REPLY_ERROR &&
             strncmp(rep->str, "NOAUTH", 6) == 0);
    if (rep) freeReplyObject(rep);
  }
  if (raw) redisFree(raw);
  int replicas = 0;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    replicas += rt_cluster_is_primary(&pc, i) == 0;
  RT_CHECK_EQ_INT(replicas, 3);
  rt_cluster_stop(&pc);
  RT_CHECK_EQ_INT(pc.node[0].pid, 0);
}

/* harness_sentinel.c */

static void test_sentinel_shape(void) {
  RT_REQUIRE(sentinel_up);
  int m = rt_sentinel_master(&S);
  RT_REQUIRE(m >= 0);
  for (int k = 0; k < RT_SENTINELS; k++) {
    RT_CHECK_EQ_INT(rt_sentinel_reported_port(&S, k), S.data[m].port);
    redisReply *rep = rt_redis_cmd(&S.sentinel[k], "ROLE");
    RT_CHECK(rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
             strcmp(rep->element[0]->str, "sentinel") == 0 &&
             rep->element[1]->elements == 1 &&
             strcmp(rep->element[1]->element[0]->str, RT_SENTINEL_NAME) == 0);
    if (rep) freeReplyObject(rep);
    RT_CHECK_EQ_INT(getpgid(S.sentinel[k].pid), S.sentinel[k].pid);
  }
  RT_CHECK_EQ_INT(info_field(&S.data[m], "connected_slaves"), 2);
  for (int i = 0; i < RT_SENTINEL_DATA; i++)
    if (i != m) RT_CHECK_EQ_INT(info_field(&S.data[i], "master_port"),
                                S.data[m].port);
}

/* A paused replica misses a write the master acknowledges: WAIT for both
 * replicas times out with one, and the master's own account of the
 * paused one's offset lags. */
static void test_sentinel_pause_replica(void) {
  RT_REQUIRE(sentinel_up);
  int m = rt_sentinel_master(&S);
  RT_REQUIRE(m >= 0);
  int a = (m + 1) % RT_SENTINEL_DATA, b = (m + 2) % RT_SENTINEL_DATA;
  RT_REQUIRE(rt_sentinel_pause(&S, b) == 0);
  RT_CHECK(reply_is(rt_redis_cmd(&S.data[m], "SET paused-miss 1"),
                    REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[m], "WAIT 2 300"), 1);
  RT_CHECK(reply_is(rt_redis_cmd(&S.data[a], "GET paused-miss"),
                    REDIS_REPLY_STRING, "1"));
  long long master_off = info_field(&S.data[m], "master_repl_offset");
  /* slaveN:ip=...,port=P,state=online,offset=O,lag=L */
  redisReply *rep = rt_redis_cmd(&S.data[m], "INFO replication");
  RT_REQUIRE(rep && rep->type == REDIS_REPLY_STRING);
  char want[32];
  snprintf(want, sizeof want, "port=%d,", S.data[b].port);
  char *line = strstr(rep->str, want);
  char *off = line ? strstr(line, "offset=") : NULL;
  RT_CHECK(off && strtoll(off + 7, NULL, 10) < master_off);
  freeReplyObject(rep);
  RT_REQUIRE(rt_sentinel_resume(&S, b) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[m], "WAIT 2 5000"), 2);
  RT_CHECK(reply_is(rt_redis_cmd(&S.data[b], "GET paused-miss"),
                    REDIS_REPLY_STRING, "1"));
  RT_CHECK(rt_sentinel_wait_replicas(&S, 10000) == 0);
}

/* SIGKILL of the master: every sentinel names a new master, which says
 * master and has the data; the old master restarted is its replica. */
static void test_sentinel_kill_and_restart(void) {
  RT_REQUIRE(sentinel_up);
  int m = rt_sentinel_master(&S);
  RT_REQUIRE(m >= 0);
  RT_CHECK(reply_is(rt_redis_cmd(&S.data[m], "SET survivor yes"),
                    REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[m], "WAIT 2 2000"), 2);
  pid_t pid = S.data[m].pid;
  uint64_t t0 = rt_now_ms();
  int n = rt_sentinel_kill_master(&S);
  fprintf(stderr, "  SIGKILL to agreed new master: %llu ms\n",
          (unsigned long long)(rt_now_ms() - t0));
  RT_REQUIRE(n >= 0);
  RT_CHECK(n != m);
  RT_CHECK(process_gone(pid));
  for (int k = 0; k < RT_SENTINELS; k++)
    RT_CHECK_EQ_INT(rt_sentinel_reported_port(&S, k), S.data[n].port);
  RT_CHECK(reply_is(rt_redis_cmd(&S.data[n], "GET survivor"),
                    REDIS_REPLY_STRING, "yes"));
  int other = 3 - m - n;
  RT_CHECK_EQ_INT(info_field(&S.data[other], "master_port"), S.data[n].port);

  t0 = rt_now_ms();
  RT_REQUIRE(rt_sentinel_restart(&S, m) == 0);
  fprintf(stderr, "  restart to replica of the new master: %llu ms\n",
          (unsigned long long)(rt_now_ms() - t0));
  /* On a loaded machine the sentinels may fail over a second time (the
   * new master slow to answer for RT_SENTINEL_DOWN_AFTER_MS): what must
   * hold is that the restarted node follows whichever master they agree
   * on now. Say when that is not n, so the log explains it. */
  RT_REQUIRE(rt_sentinel_wait_replicas(&S, 30000) == 0);
  int cur = rt_sentinel_master(&S);
  if (cur != n)
    fprintf(stderr, "  the sentinels now agree on data[%d], not data[%d]\n",
            cur, n);
  RT_REQUIRE(cur >= 0);
  if (cur != m)
    RT_CHECK_EQ_INT(info_field(&S.data[m], "master_port"), S.data[cur].port);
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[cur], "WAIT 2 5000"), 2);
  RT_CHECK(reply_is(rt_redis_cmd(&S.data[m], "GET survivor"),
                    REDIS_REPLY_STRING, "yes"));
}

/* With a password, the setup still fails over: sentinels reach the data
 * nodes (auth-pass) and each other (sentinel-pass) to elect a leader. */
static void test_sentinel_password(void) {
  rt_sentinel ps;
  RT_REQUIRE(rt_sentinel_start(&ps, "sen-pw") == 0);
  for (int k = 0; k < 2; k++) {
    rt_redis *r = k ? &ps.sentinel[0] : &ps.data[0];
    redisContext *raw = redisConnect("127.0.0.1", r->port);
    RT_CHECK(raw && !raw->err);
    redisReply *rep = raw && !raw->err ? redisCommand(raw, "PING") : NULL;
    RT_CHECK(rep && rep->type == REDIS_REPLY_ERROR &&
             strncmp(rep->str, "NOAUTH", 6) == 0);
    if (rep) freeReplyObject(rep);
    if (raw) redisFree(raw);
  }
  int n = rt_sentinel_kill_master(&ps);
  RT_CHECK(n > 0);
  rt_sentinel_stop(&ps);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"keyslot_known_values", test_keyslot_known_values},
      {"keyslot_matches_server", test_keyslot_matches_server},
      {"cluster_shape", test_cluster_shape},
      {"cluster_key_on_owner", test_cluster_key_on_owner},
      {"cluster_migration_steps", test_cluster_migration_steps},
      {"cluster_manual_failover", test_cluster_manual_failover},
      {"cluster_kill_and_restart", test_cluster_kill_and_restart},
      {"cluster_pause_replica", test_cluster_pause_replica},
      {"cluster_password", test_cluster_password},
      {"sentinel_shape", test_sentinel_shape},
      {"sentinel_pause_replica", test_sentinel_pause_replica},
      {"sentinel_kill_and_restart", test_sentinel_kill_and_restart},
      {"sentinel_password", test_sentinel_password},
  };
  uint64_t t0 = rt_now_ms();
  cluster_up = rt_cluster_start(&C, NULL) == 0;
  uint64_t t1 = rt_now_ms();
  sentinel_up = rt_sentinel_start(&S, NULL) == 0;
  fprintf(stderr, "cluster started in %llu ms, sentinel setup in %llu ms\n",
          (unsigned long long)(t1 - t0),
          (unsigned long long)(rt_now_ms() - t1));
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_cluster_stop(&C);
  rt_sentinel_stop(&S);
  return rc;
}
