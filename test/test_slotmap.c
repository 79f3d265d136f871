/*
 * Unit tests of lib/slotmap on CLUSTER SHARDS and CLUSTER SLOTS replies
 * captured from a real 3+3 cluster of Redis 7.0.15
 * (test/topology_replies.c): fresh, written to, a slot in migration and
 * migrated, after a manual failover, with a dead primary, with hostname
 * and unknown endpoints. Each map is compared, slot by slot, with CLUSTER
 * NODES of the same node at the same moment. Then MOVED updates, TLS
 * ports, and every damaged form of every captured reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "slotmap.h"
#include "topology_checks.h"
#include "topology_fixture.h"

typedef struct state {
  redisReply *shards, *slots, *nodes;
} state;

static int load(const char *prefix, state *s) {
  char name[64];
  snprintf(name, sizeof name, "%s.shards", prefix);
  s->shards = rt_capture_reply(name);
  snprintf(name, sizeof name, "%s.slots", prefix);
  s->slots = rt_capture_reply(name);
  snprintf(name, sizeof name, "%s.nodes", prefix);
  s->nodes = rt_capture_reply(name);
  return s->shards && s->slots && s->nodes ? 0 : -1;
}

static void unload(state *s) {
  if (s->shards) freeReplyObject(s->shards);
  if (s->slots) freeReplyObject(s->slots);
  if (s->nodes) freeReplyObject(s->nodes);
}

static rt_state v(const state *s) {
  return (rt_state){s->shards, s->slots, s->nodes};
}

static void fresh(void) {
  state s = {0};
  RT_REQUIRE(load("fresh", &s) == 0);
  rt_state x = v(&s);
  rt_check_fresh(&x);
  unload(&s);
}

static void steady(void) {
  state s = {0};
  RT_REQUIRE(load("steady", &s) == 0);
  rt_state x = v(&s);
  rt_check_steady(&x);
  unload(&s);
}

static void migration(void) {
  state a = {0}, b = {0}, c = {0};
  int slot = (int)rt_capture_get_int("migration.slot");
  int from = (int)rt_capture_get_int("migration.from_port");
  int to = (int)rt_capture_get_int("migration.to_port");
  if (load("steady", &a) || load("migrating", &b) || load("migrated", &c)) {
    RT_CHECK(0);
  } else {
    rt_state x = v(&a), y = v(&b), z = v(&c);
    rt_check_migrating(&y, slot, from, to);
    rt_check_migrated(&x, &z, slot, from, to);
  }
  unload(&a);
  unload(&b);
  unload(&c);
}

static void failover(void) {
  state a = {0}, b = {0};
  if (load("migrated", &a) || load("failover", &b)) {
    RT_CHECK(0);
  } else {
    rt_state x = v(&a), y = v(&b);
    rt_check_failover(&x, &y, (int)rt_capture_get_int("failover.old_port"),
                      (int)rt_capture_get_int("failover.new_port"));
  }
  unload(&a);
  unload(&b);
}

static void killed(void) {
  state a = {0}, b = {0};
  if (load("failover", &a) || load("killed", &b)) {
    RT_CHECK(0);
  } else {
    rt_state x = v(&a), y = v(&b);
    rt_check_killed(&x, &y, (int)rt_capture_get_int("killed.dead_port"),
                    (int)rt_capture_get_int("killed.promoted_port"));
  }
  unload(&a);
  unload(&b);
}

static void hostnames(void) {
  state s = {0};
  RT_REQUIRE(load("hostname", &s) == 0);
  rt_state x = v(&s);
  rt_check_hostnames(&x, (int)rt_capture_get_int("endpoints.plain_port"));
  unload(&s);
}

static void unknown_endpoint(void) {
  state s = {0};
  RT_REQUIRE(load("unknown", &s) == 0);
  rt_state x = v(&s);
  rt_check_unknown_endpoint(&x);
  unload(&s);
}

/* A MOVED applied to the map of the moment gives the map of afterwards:
 * the migration's slot to a known primary (0), the failed-over shard's
 * slots to its replica, a primary the map did not know (1). */
static void apply_moved(void) {
  state a = {0}, b = {0}, c = {0};
  rl_slotmap m, want;
  rl_slotmap_init(&m);
  rl_slotmap_init(&want);
  if (load("migrating", &a) || load("migrated", &b) || load("failover", &c)) {
    RT_CHECK(0);
    goto out;
  }
  int slot = (int)rt_capture_get_int("migration.slot");
  int to = (int)rt_capture_get_int("migration.to_port");
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, a.shards, 0, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&want, b.shards, 0, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&m, &want, NULL), 1);
  RT_CHECK_EQ_INT(rl_slotmap_apply_moved(&m, slot, "127.0.0.1", to), 0);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&m, &want, NULL), 0);
  RT_CHECK_EQ_INT(m.covered, RL_SLOTS);

  /* After the failover every slot of the old primary answers MOVED to
   * the new one, which the map knew only as a replica. */
  int old = (int)rt_capture_get_int("failover.old_port");
  int neu = (int)rt_capture_get_int("failover.new_port");
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&want, c.shards, 0, NULL), 0);
  RT_REQUIRE(rl_slotmap_diff(&m, &want, NULL) > 0);
  int first = 1, bad = 0;
  for (int s = 0; s < RL_SLOTS; s++) {
    const rl_slotnode *p = rl_slotmap_primary(&m, s);
    if (p == NULL || p->port != old) continue;
    int rc = rl_slotmap_apply_moved(&m, s, "127.0.0.1", neu);
    bad += rc != (first ? 1 : 0);
    first = 0;
  }
  RT_CHECK_EQ_INT(bad, 0);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&m, &want, NULL), 0);
  RT_CHECK_EQ_INT(rt_slots_of_port(&m, old), 0);
  const rl_slotnode *prim[8];
  RT_CHECK_EQ_INT(rl_slotmap_primaries(&m, prim, 8), 3);
  /* Bad arguments change nothing. */
  RT_CHECK(rl_slotmap_apply_moved(&m, -1, "h", 1) < 0);
  RT_CHECK(rl_slotmap_apply_moved(&m, RL_SLOTS, "h", 1) < 0);
  RT_CHECK(rl_slotmap_apply_moved(&m, 0, "", 1) < 0);
  RT_CHECK(rl_slotmap_apply_moved(&m, 0, "h", 0) < 0);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&m, &want, NULL), 0);
out:
  rl_slotmap_free(&m);
  rl_slotmap_free(&want);
  unload(&a);
  unload(&b);
  unload(&c);
}

/* Lookups at the edges, and primaries() with a short array. */
static void lookups(void) {
  redisReply *r = rt_capture_reply("steady.shards");
  RT_REQUIRE(r != NULL);
  rl_slotmap m;
  rl_slotmap_init(&m);
  RT_CHECK(rl_slotmap_primary(&m, 0) == NULL); /* empty */
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, r, 0, NULL), 0);
  RT_CHECK(rl_slotmap_primary(&m, -1) == NULL);
  RT_CHECK(rl_slotmap_primary(&m, RL_SLOTS) == NULL);
  RT_CHECK_EQ_INT(rl_slotmap_shard(&m, RL_SLOTS), -1);
  const rl_slotnode *p0 = rl_slotmap_primary(&m, 0);
  const rl_slotnode *r0 = rl_slotmap_replica(&m, 0, 0);
  RT_REQUIRE(p0 != NULL && r0 != NULL);
  RT_CHECK(p0->primary && !r0->primary && p0->shard == r0->shard);
  RT_CHECK(strlen(p0->id) == 40 && strcmp(p0->id, r0->id) != 0);
  RT_CHECK(rl_slotmap_replica(&m, 0, 1) == NULL);
  RT_CHECK(rl_slotmap_replica(&m, 0, -1) == NULL);
  const rl_slotnode *one[1];
  RT_CHECK_EQ_INT(rl_slotmap_primaries(&m, one, 1), 3);
  RT_CHECK(one[0] == &m.nodes[m.shards[0].first]);
  RT_CHECK_EQ_INT(rl_slotmap_primaries(&m, NULL, 0), 3);
  /* The same reply as SLOTS is nonsense: an error, and an empty map. */
  RT_CHECK_EQ_INT(rl_slotmap_from_slots(&m, r, 0, NULL), RLOCK_EPROTO);
  RT_CHECK(m.err[0] != '\0');
  RT_CHECK_EQ_INT(m.covered, 0);
  RT_CHECK(rl_slotmap_primary(&m, 0) == NULL);
  rl_slotmap_free(&m);
  freeReplyObject(r);
  /* An error reply (a sentinel's, here) keeps its text. */
  r = rt_capture_reply("err.unknown_command");
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, r, 0, NULL), RLOCK_EREDIS);
  RT_CHECK(strstr(m.err, "unknown command") != NULL);
  RT_CHECK_EQ_INT(rl_slotmap_from_slots(&m, NULL, 0, NULL), RLOCK_EPROTO);
  rl_slotmap_free(&m);
  freeReplyObject(r);
}

/*
 * TLS ports. The harness cluster has no TLS, so these replies are written
 * by hand in the shape src/cluster.c 7.0.15 (addNodeDetailsToShardReply)
 * gives on a cluster with tls-cluster yes: "port" is the plain port (left
 * out when there is none), "tls-port" the TLS one.
 */
#define NODE(id, port, tls, role)                                             \
  "*" tls "\r\n$2\r\nid\r\n$40\r\n" id "\r\n" port "$2\r\nip\r\n$9\r\n"       \
  "127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n" role     \
  "$6\r\nhealth\r\n$6\r\nonline\r\n"
#define ID1 "1111111111111111111111111111111111111111"
#define ID2 "2222222222222222222222222222222222222222"
#define MASTER "$6\r\nmaster\r\n"
#define REPLICA "$7\r\nreplica\r\n"

static redisReply *parse(const char *resp) {
  return rt_resp_parse(resp, strlen(resp));
}

static void tls_ports(void) {
  const char *both =
      "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n"
      NODE(ID1, "$4\r\nport\r\n:7000\r\n$8\r\ntls-port\r\n:8000\r\n", "14",
           MASTER)
      NODE(ID2, "$4\r\nport\r\n:7001\r\n$8\r\ntls-port\r\n:8001\r\n", "14",
           REPLICA);
  const char *tls_only =
      "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n"
      NODE(ID1, "$8\r\ntls-port\r\n:8000\r\n", "12", MASTER);
  const char *plain_only =
      "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n"
      NODE(ID1, "$4\r\nport\r\n:7000\r\n", "12", MASTER);
  redisReply *a = parse(both), *b = parse(tls_only), *c = parse(plain_only);
  RT_REQUIRE(a && b && c);
  rl_slotmap m;
  rl_slotmap_init(&m);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, a, 1, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 8000);
  RT_CHECK_EQ_INT(rl_slotmap_replica(&m, 5, 0)->port, 8001);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, a, 0, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 7000);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, b, 1, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 8000);
  /* A plain client on a TLS-only cluster has no port to go to. */
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, b, 0, NULL), RLOCK_EPROTO);
  RT_CHECK(strstr(m.err, "port") != NULL);
  /* A TLS client where no tls-port is announced takes "port", as MOVED
   * would tell it. */
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, c, 1, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 7000);
  rl_slotmap_free(&m);
  freeReplyObject(a);
  freeReplyObject(b);
  freeReplyObject(c);
}

/* A node of the given health, "online" or "fail". */
#define NODE_H(id, port, role, health)                                        \
  "*12\r\n$2\r\nid\r\n$40\r\n" id "\r\n$4\r\nport\r\n:" port "\r\n"          \
  "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"       \
  "$4\r\nrole\r\n" role "$6\r\nhealth\r\n" health
#define ONLINE "$6\r\nonline\r\n"
#define FAILED "$4\r\nfail\r\n"
#define ID3 "3333333333333333333333333333333333333333"
#define SHARD_OF(n) \
  "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*" n "\r\n"

/* Valkey 8 keeps a primary that failed and was replaced in its shard,
 * still "master", "health" "fail", beside its successor (as its CLUSTER
 * SHARDS showed after a SIGKILL: test/TOPOLOGY-FACTS.md): the successor
 * is the primary, wherever either is listed, and the failed one is not a
 * replica. A failed primary alone (not replaced yet) is still the
 * shard's; two failed and no other are refused. */
static void failed_primary_kept(void) {
  const char *after =
      SHARD_OF("3") NODE_H(ID1, "7000", MASTER, FAILED)
      NODE_H(ID2, "7001", MASTER, ONLINE) NODE_H(ID3, "7002", REPLICA, ONLINE);
  const char *after_other_order =
      SHARD_OF("2") NODE_H(ID2, "7001", MASTER, ONLINE)
      NODE_H(ID1, "7000", MASTER, FAILED);
  const char *before =
      SHARD_OF("2") NODE_H(ID1, "7000", MASTER, FAILED)
      NODE_H(ID2, "7001", REPLICA, ONLINE);
  const char *two_failed =
      SHARD_OF("2") NODE_H(ID1, "7000", MASTER, FAILED)
      NODE_H(ID2, "7001", MASTER, FAILED);
  const char *two_online =
      SHARD_OF("2") NODE_H(ID1, "7000", MASTER, ONLINE)
      NODE_H(ID2, "7001", MASTER, ONLINE);
  redisReply *a = parse(after), *b = parse(after_other_order),
             *c = parse(before), *d = parse(two_failed), *e = parse(two_online);
  RT_REQUIRE(a && b && c && d && e);
  rl_slotmap m;
  rl_slotmap_init(&m);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, a, 0, NULL), 0);
  RT_CHECK_EQ_INT(m.covered, RL_SLOTS);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 7001);
  RT_CHECK_EQ_INT(m.nshards, 1);
  RT_CHECK_EQ_INT(m.shards[0].n, 2); /* the primary and its replica */
  RT_CHECK_EQ_INT(rl_slotmap_replica(&m, 5, 0)->port, 7002);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, b, 0, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 7001);
  RT_CHECK_EQ_INT(m.shards[0].n, 1);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, c, 0, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&m, 5)->port, 7000);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, d, 0, NULL), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, e, 0, NULL), RLOCK_EPROTO);
  rl_slotmap_free(&m);
  freeReplyObject(a);
  freeReplyObject(b);
  freeReplyObject(c);
  freeReplyObject(d);
  freeReplyObject(e);
}

/* Replies that are wrong as a whole, though each part looks right. */
static void inconsistent(void) {
  static const struct {
    const char *resp, *what;
  } bad[] = {
      /* SLOTS: two ranges that overlap. */
      {"*2\r\n*3\r\n:0\r\n:10\r\n*3\r\n$1\r\na\r\n:1\r\n$1\r\nx\r\n"
       "*3\r\n:10\r\n:20\r\n*3\r\n$1\r\nb\r\n:2\r\n$1\r\ny\r\n", "two shards"},
      /* SLOTS: one id at two addresses. */
      {"*2\r\n*3\r\n:0\r\n:10\r\n*3\r\n$1\r\na\r\n:1\r\n$1\r\nx\r\n"
       "*3\r\n:11\r\n:20\r\n*3\r\n$1\r\nb\r\n:2\r\n$1\r\nx\r\n", "two addr"},
      /* SLOTS: lo > hi, and a slot past 16383. */
      {"*1\r\n*3\r\n:10\r\n:0\r\n*3\r\n$1\r\na\r\n:1\r\n$1\r\nx\r\n", "range"},
      {"*1\r\n*3\r\n:0\r\n:16384\r\n*3\r\n$1\r\na\r\n:1\r\n$1\r\nx\r\n", "range"},
      /* SLOTS: port 0, port 65536. */
      {"*1\r\n*3\r\n:0\r\n:1\r\n*3\r\n$1\r\na\r\n:0\r\n$1\r\nx\r\n", "port"},
      {"*1\r\n*3\r\n:0\r\n:1\r\n*3\r\n$1\r\na\r\n:65536\r\n$1\r\nx\r\n", "port"},
  };
  rl_slotmap m;
  rl_slotmap_init(&m);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    redisReply *r = parse(bad[i].resp);
    RT_REQUIRE(r != NULL);
    RT_CHECK_EQ_INT(rl_slotmap_from_slots(&m, r, 0, NULL), RLOCK_EPROTO);
    RT_CHECK_EQ_INT(m.covered, 0);
    freeReplyObject(r);
  }
  /* SHARDS: a shard with slots and two primaries, or none. */
  const char *two =
      "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:1\r\n$5\r\nnodes\r\n*2\r\n"
      NODE(ID1, "$4\r\nport\r\n:7000\r\n", "12", MASTER)
      NODE(ID2, "$4\r\nport\r\n:7001\r\n", "12", MASTER);
  const char *none =
      "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:1\r\n$5\r\nnodes\r\n*1\r\n"
      NODE(ID2, "$4\r\nport\r\n:7001\r\n", "12", REPLICA);
  redisReply *a = parse(two), *b = parse(none);
  RT_REQUIRE(a && b);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, a, 0, NULL), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&m, b, 0, NULL), RLOCK_EPROTO);
  freeReplyObject(a);
  freeReplyObject(b);
  rl_slotmap_free(&m);
}

/* A map that claims success must be whole: every owner a shard, every
 * shard inside nodes[], the counts adding up. */
static int consistent(const rl_slotmap *m) {
  int covered = 0, per[64] = {0};
  if (m->nshards > 64) return 0;
  for (int s = 0; s < RL_SLOTS; s++) {
    if (m->owner[s] == RL_SLOTMAP_NONE) continue;
    if (m->owner[s] >= m->nshards) return 0;
    covered++;
    per[m->owner[s]]++;
  }
  if (covered != m->covered) return 0;
  for (int i = 0; i < m->nshards; i++) {
    const rl_slotshard *sh = &m->shards[i];
    if (sh->first < 0 || sh->n < 1 || sh->first + sh->n > m->nnodes ||
        sh->nslots != per[i] || !m->nodes[sh->first].primary)
      return 0;
    for (int j = sh->first; j < sh->first + sh->n; j++) {
      const rl_slotnode *n = &m->nodes[j];
      if (n->shard != i || n->port < 1 || n->port > 65535 || !n->host[0] ||
          memchr(n->host, '\0', sizeof n->host) == NULL)
        return 0;
    }
  }
  return 1;
}

typedef struct tally {
  long ok, failed, broken;
} tally;

static void build_both(const redisReply *tree, void *data) {
  tally *t = data;
  rl_slotmap m;
  rl_slotmap_init(&m);
  for (int tls = 0; tls < 2; tls++) {
    int a = rl_slotmap_from_shards(&m, tree, tls, tls ? "from.example" : NULL);
    if (a == 0) t->ok++, t->broken += !consistent(&m);
    else t->failed++, t->broken += a > 0 || m.covered != 0 || m.nnodes != 0;
    int b = rl_slotmap_from_slots(&m, tree, tls, tls ? "from.example" : NULL);
    if (b == 0) t->ok++, t->broken += !consistent(&m);
    else t->failed++, t->broken += b > 0 || m.covered != 0 || m.nnodes != 0;
  }
  rl_slotmap_free(&m);
}

/* Every captured SHARDS, SLOTS and NODES reply, damaged in every way one
 * node at a time: no crash (the sanitizer build runs this too), a whole
 * map or an error and an empty map. */
static void damaged_replies(void) {
  static const char *names[] = {
      "fresh.shards",    "fresh.slots",    "steady.shards",   "steady.slots",
      "migrated.shards", "migrated.slots", "killed.shards",   "killed.slots",
      "hostname.shards", "hostname.slots", "unknown.shards",  "unknown.slots",
      "fresh.nodes",
  };
  tally t = {0};
  long trees = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    redisReply *r = rt_capture_reply(names[i]);
    RT_REQUIRE(r != NULL);
    trees += rt_mutate_each(r, build_both, &t);
    freeReplyObject(r);
  }
  fprintf(stderr, "  %ld damaged trees: %ld maps built, %ld refused\n", trees,
          t.ok, t.failed);
  RT_CHECK(trees > 5000);
  RT_CHECK(t.ok > 0 && t.failed > 0);
  RT_CHECK_EQ_INT(t.broken, 0);
}

/* Random bytes flipped in captured replies, through hiredis's reader. */
static void damaged_bytes(void) {
  const rt_capture *c = rt_capture_find("killed.shards");
  const rt_capture *d = rt_capture_find("migrated.slots");
  RT_REQUIRE(c && d);
  char *buf = malloc(c->len > d->len ? c->len : d->len);
  RT_REQUIRE(buf != NULL);
  tally t = {0};
  uint32_t x = 7;
  long parsed = 0;
  for (int n = 0; n < 4000; n++) {
    const rt_capture *src = n % 2 ? c : d;
    memcpy(buf, src->bytes, src->len);
    for (int k = 0; k < 1 + n % 4; k++) {
      x = x * 1103515245u + 12345u;
      size_t at = (x >> 8) % src->len;
      x = x * 1103515245u + 12345u;
      buf[at] = (char)(x >> 16);
    }
    redisReply *r = rt_resp_parse(buf, src->len);
    if (r == NULL) continue;
    parsed++;
    build_both(r, &t);
    freeReplyObject(r);
  }
  free(buf);
  fprintf(stderr, "  %ld damaged replies still parsed: %ld maps, %ld refused\n",
          parsed, t.ok, t.failed);
  RT_CHECK(parsed > 100);
  RT_CHECK_EQ_INT(t.broken, 0);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"fresh", fresh},
      {"steady", steady},
      {"migration", migration},
      {"failover", failover},
      {"killed", killed},
      {"hostnames", hostnames},
      {"unknown_endpoint", unknown_endpoint},
      {"apply_moved", apply_moved},
      {"lookups", lookups},
      {"tls_ports", tls_ports},
      {"failed_primary_kept", failed_primary_kept},
      {"inconsistent", inconsistent},
      {"damaged_replies", damaged_replies},
      {"damaged_bytes", damaged_bytes},
  };
  fprintf(stderr, "replies captured from %s\n", rt_captured_from);
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
