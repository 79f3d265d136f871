/*
 * The checks of topology_checks.h. Each one states a fact about a cluster
 * state in terms a reader can check against CLUSTER NODES or against
 * test/TOPOLOGY-FACTS.md, and fails with the slot, port or field that
 * disagrees.
 */
#include "topology_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "redirect.h"
#include "sentinel_proto.h"
#include "topology_fixture.h"

int rt_slots_of_port(const rl_slotmap *m, int port) {
  int n = 0;
  for (int s = 0; s < RL_SLOTS; s++) {
    const rl_slotnode *p = rl_slotmap_primary(m, s);
    n += p != NULL && p->port == port;
  }
  return n;
}

int rt_check_map_vs_nodes(const rl_slotmap *m, const redisReply *nodes,
                          int all_replicas) {
  static rt_view v;
  int bad = 0;
  RT_CHECK(nodes != NULL && nodes->type == REDIS_REPLY_STRING);
  if (nodes == NULL || nodes->type != REDIS_REPLY_STRING) return 0;
  RT_CHECK(rt_view_parse(nodes->str, nodes->len, &v) == 0);
  for (int s = 0; s < RL_SLOTS; s++) {
    int o = v.owner[s];
    const rl_slotnode *p = rl_slotmap_primary(m, s);
    int ok = o < 0 ? p == NULL
                   : p != NULL && strcmp(p->id, v.node[o].id) == 0 &&
                         p->port == v.node[o].port;
    if (!ok && bad++ == 0)
      fprintf(stderr, "  slot %d: map says %s:%d, CLUSTER NODES %s:%d\n", s,
              p ? p->id : "-", p ? p->port : 0, o < 0 ? "-" : v.node[o].id,
              o < 0 ? 0 : v.node[o].port);
  }
  RT_CHECK_EQ_INT(bad, 0);
  for (int i = 0; i < m->nshards; i++) {
    const rl_slotshard *sh = &m->shards[i];
    const rl_slotnode *p = &m->nodes[sh->first];
    int vp = rt_view_find(&v, p->id);
    RT_CHECK(vp >= 0 && v.node[vp].primary);
    if (vp < 0) return 0;
    for (int r = sh->first + 1; r < sh->first + sh->n; r++) {
      int vr = rt_view_find(&v, m->nodes[r].id);
      RT_CHECK(vr >= 0 && strcmp(v.node[vr].master, p->id) == 0 &&
               v.node[vr].port == m->nodes[r].port);
      if (vr < 0) bad++;
    }
    if (all_replicas) {
      int want = 0;
      for (int j = 0; j < v.n; j++) want += strcmp(v.node[j].master, p->id) == 0;
      RT_CHECK_EQ_INT(sh->n - 1, want);
      if (sh->n - 1 != want) bad++;
    }
  }
  return bad == 0;
}

/* Builds both maps of a state; 0 or -1 (with a failed check). */
static int build(const rt_state *s, rl_slotmap *sh, rl_slotmap *sl) {
  rl_slotmap_init(sh);
  rl_slotmap_init(sl);
  RT_CHECK(s->shards != NULL && s->slots != NULL && s->nodes != NULL);
  if (!s->shards || !s->slots || !s->nodes) return -1;
  int a = rl_slotmap_from_shards(sh, s->shards, 0, NULL);
  int b = rl_slotmap_from_slots(sl, s->slots, 0, NULL);
  if (a != 0) fprintf(stderr, "  SHARDS: %s\n", sh->err);
  if (b != 0) fprintf(stderr, "  SLOTS: %s\n", sl->err);
  RT_CHECK_EQ_INT(a, 0);
  RT_CHECK_EQ_INT(b, 0);
  return a == 0 && b == 0 ? 0 : -1;
}

static void done(rl_slotmap *a, rl_slotmap *b) {
  rl_slotmap_free(a);
  rl_slotmap_free(b);
}

/* The common part: full coverage, three primaries, both maps agree with
 * each other and with CLUSTER NODES. */
static void check_common(const rt_state *s, rl_slotmap *sh, rl_slotmap *sl) {
  const rl_slotnode *prim[8];
  RT_CHECK_EQ_INT(sh->covered, RL_SLOTS);
  RT_CHECK_EQ_INT(sl->covered, RL_SLOTS);
  RT_CHECK_EQ_INT(rl_slotmap_primaries(sh, prim, 8), 3);
  RT_CHECK_EQ_INT(rl_slotmap_primaries(sl, prim, 8), 3);
  RT_CHECK_EQ_INT(rl_slotmap_diff(sh, sl, NULL), 0);
  RT_CHECK(rt_check_map_vs_nodes(sh, s->nodes, 1));
  RT_CHECK(rt_check_map_vs_nodes(sl, s->nodes, 0));
  for (int i = 0; i < sh->nnodes; i++)
    RT_CHECK(strcmp(sh->nodes[i].host, "127.0.0.1") == 0);
}

void rt_check_fresh(const rt_state *s) {
  rl_slotmap sh, sl;
  if (build(s, &sh, &sl) != 0) return done(&sh, &sl);
  check_common(s, &sh, &sl);
  RT_CHECK_EQ_INT(sh.nshards, 3);
  for (int i = 0; i < sh.nshards; i++) {
    RT_CHECK_EQ_INT(sh.shards[i].n, 2);
    const rl_slotnode *r = &sh.nodes[sh.shards[i].first + 1];
    RT_CHECK_EQ_INT(r->health, RL_NODE_LOADING);
    RT_CHECK_EQ_INT(r->offset, 0);
    RT_CHECK(!r->primary);
  }
  /* SLOTS: three ranges of [lo, hi, primary] and no replica at all. */
  RT_CHECK_EQ_INT(s->slots->elements, 3);
  for (size_t i = 0; i < s->slots->elements; i++)
    RT_CHECK_EQ_INT(s->slots->element[i]->elements, 3);
  for (int i = 0; i < sl.nshards; i++) RT_CHECK_EQ_INT(sl.shards[i].n, 1);
  done(&sh, &sl);
}

void rt_check_steady(const rt_state *s) {
  rl_slotmap sh, sl;
  if (build(s, &sh, &sl) != 0) return done(&sh, &sl);
  check_common(s, &sh, &sl);
  RT_CHECK(rt_check_map_vs_nodes(&sl, s->nodes, 1));
  for (int i = 0; i < 3 && i < sh.nshards && i < sl.nshards; i++) {
    RT_CHECK_EQ_INT(sh.shards[i].n, 2);
    RT_CHECK_EQ_INT(sl.shards[i].n, 2);
    RT_CHECK_EQ_INT(sh.nodes[sh.shards[i].first + 1].health, RL_NODE_ONLINE);
    /* SLOTS lists available replicas only, so its replicas are online;
     * it says nothing of primaries. */
    RT_CHECK_EQ_INT(sl.nodes[sl.shards[i].first + 1].health, RL_NODE_ONLINE);
    RT_CHECK_EQ_INT(sl.nodes[sl.shards[i].first].health, RL_NODE_UNKNOWN);
    RT_CHECK(sh.nodes[sh.shards[i].first + 1].offset > 0);
  }
  done(&sh, &sl);
}

void rt_check_migrating(const rt_state *s, int slot, int from_port,
                        int to_port) {
  rl_slotmap sh, sl;
  char marker[32];
  if (build(s, &sh, &sl) != 0) return done(&sh, &sl);
  check_common(s, &sh, &sl);
  /* CLUSTER NODES of the source marks the slot as migrating... */
  snprintf(marker, sizeof marker, "[%d->-", slot);
  RT_CHECK(strstr(s->nodes->str, marker) != NULL);
  /* ...and both maps still give it to the source. */
  const rl_slotnode *a = rl_slotmap_primary(&sh, slot);
  const rl_slotnode *b = rl_slotmap_primary(&sl, slot);
  RT_CHECK(a != NULL && a->port == from_port && a->port != to_port);
  RT_CHECK(b != NULL && b->port == from_port);
  done(&sh, &sl);
}

void rt_check_migrated(const rt_state *before, const rt_state *s, int slot,
                       int from_port, int to_port) {
  rl_slotmap b0, b1, sh, sl;
  unsigned char moved[RL_SLOTS / 8];
  if (build(before, &b0, &b1) != 0) return done(&b0, &b1);
  if (build(s, &sh, &sl) != 0) {
    done(&b0, &b1);
    return done(&sh, &sl);
  }
  check_common(s, &sh, &sl);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&b0, &sh, moved), 1);
  RT_CHECK(moved[slot / 8] & (1u << (slot % 8)));
  RT_CHECK_EQ_INT(rl_slotmap_primary(&b0, slot)->port, from_port);
  RT_CHECK_EQ_INT(rl_slotmap_primary(&sh, slot)->port, to_port);
  RT_CHECK_EQ_INT(rt_slots_of_port(&sh, to_port),
                  rt_slots_of_port(&b0, to_port) + 1);
  /* SLOTS now splits the source's range: more ranges than primaries,
   * still three shards in the map. */
  RT_CHECK(s->slots->elements > 3);
  RT_CHECK_EQ_INT(sl.nshards, 3);
  done(&b0, &b1);
  done(&sh, &sl);
}

void rt_check_failover(const rt_state *before, const rt_state *s,
                       int old_port, int new_port) {
  rl_slotmap b0, b1, sh, sl;
  unsigned char moved[RL_SLOTS / 8];
  if (build(before, &b0, &b1) != 0) return done(&b0, &b1);
  if (build(s, &sh, &sl) != 0) {
    done(&b0, &b1);
    return done(&sh, &sl);
  }
  check_common(s, &sh, &sl);
  int had = rt_slots_of_port(&b0, old_port);
  RT_CHECK(had > 0);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&b0, &sh, moved), had);
  int wrong = 0;
  for (int i = 0; i < RL_SLOTS; i++) {
    if (!(moved[i / 8] & (1u << (i % 8)))) continue;
    wrong += rl_slotmap_primary(&b0, i)->port != old_port ||
             rl_slotmap_primary(&sh, i)->port != new_port;
  }
  RT_CHECK_EQ_INT(wrong, 0);
  RT_CHECK_EQ_INT(rt_slots_of_port(&sh, old_port), 0);
  /* The old primary is the new one's replica. */
  int slot = -1;
  for (int i = 0; i < RL_SLOTS && slot < 0; i++)
    if (moved[i / 8] & (1u << (i % 8))) slot = i;
  const rl_slotnode *r = rl_slotmap_replica(&sh, slot, 0);
  RT_CHECK(r != NULL && r->port == old_port && !r->primary);
  RT_CHECK(rl_slotmap_replica(&sh, slot, 1) == NULL);
  done(&b0, &b1);
  done(&sh, &sl);
}

/* A SHARDS node's field, from the raw reply. */
static const redisReply *field(const redisReply *pairs, const char *name) {
  for (size_t i = 0; pairs && i + 1 < pairs->elements; i += 2)
    if (pairs->element[i]->type == REDIS_REPLY_STRING &&
        strcmp(pairs->element[i]->str, name) == 0)
      return pairs->element[i + 1];
  return NULL;
}

void rt_check_killed(const rt_state *before, const rt_state *s,
                     int dead_port, int promoted_port) {
  rl_slotmap b0, b1, sh, sl;
  if (build(before, &b0, &b1) != 0) return done(&b0, &b1);
  if (build(s, &sh, &sl) != 0) {
    done(&b0, &b1);
    return done(&sh, &sl);
  }
  check_common(s, &sh, &sl);
  /* The raw SHARDS reply lists the dead one, "health" "fail": Redis 7.0
   * as a fourth shard, alone and with no slots; Valkey 8 in its old
   * shard, still "master", beside the promoted replica and its slots. */
  size_t nsh = s->shards->elements;
  RT_CHECK(nsh == 4 || nsh == 3);
  int dead_listed = 0;
  for (size_t i = 0; i < nsh; i++) {
    const redisReply *slots = field(s->shards->element[i], "slots");
    const redisReply *nodes = field(s->shards->element[i], "nodes");
    if (!slots || !nodes) continue;
    for (size_t j = 0; j < nodes->elements; j++) {
      const redisReply *port = field(nodes->element[j], "port");
      const redisReply *health = field(nodes->element[j], "health");
      if (!port || port->integer != dead_port) continue;
      int where = nsh == 4 ? nodes->elements == 1 && slots->elements == 0
                           : nodes->elements == 2 && slots->elements > 0;
      dead_listed = where && health && strcmp(health->str, "fail") == 0;
    }
  }
  RT_CHECK(dead_listed);
  /* The map leaves it out. */
  RT_CHECK_EQ_INT(sh.nshards, 3);
  for (int i = 0; i < sh.nnodes; i++) RT_CHECK(sh.nodes[i].port != dead_port);
  for (int i = 0; i < sl.nnodes; i++) RT_CHECK(sl.nodes[i].port != dead_port);
  /* Exactly its slots moved, to the promoted replica, alone now. */
  int had = rt_slots_of_port(&b0, dead_port);
  RT_CHECK(had > 0);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&b0, &sh, NULL), had);
  RT_CHECK_EQ_INT(rt_slots_of_port(&sh, promoted_port), had);
  for (int i = 0; i < sh.nshards; i++)
    if (sh.nodes[sh.shards[i].first].port == promoted_port)
      RT_CHECK_EQ_INT(sh.shards[i].n, 1);
  done(&b0, &b1);
  done(&sh, &sl);
}

void rt_check_hostnames(const rt_state *s, int plain_port) {
  rl_slotmap sh, sl;
  char want[64];
  if (build(s, &sh, &sl) != 0) return done(&sh, &sl);
  RT_CHECK_EQ_INT(sh.covered, RL_SLOTS);
  RT_CHECK_EQ_INT(rl_slotmap_diff(&sh, &sl, NULL), 0);
  RT_CHECK(rt_check_map_vs_nodes(&sh, s->nodes, 1));
  rl_slotmap *maps[2] = {&sh, &sl};
  int seen_plain = 0;
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < maps[k]->nnodes; i++) {
      const rl_slotnode *n = &maps[k]->nodes[i];
      if (n->port == plain_port) {
        /* Its endpoint is "?": the IP is used, and no name is known. */
        seen_plain++;
        RT_CHECK(strcmp(n->host, "127.0.0.1") == 0);
        RT_CHECK(strcmp(n->hostname, "") == 0);
      } else {
        snprintf(want, sizeof want, "node-%d.rlock.test", n->port);
        RT_CHECK(strcmp(n->host, want) == 0);
        RT_CHECK(strcmp(n->hostname, want) == 0);
      }
    }
  }
  RT_CHECK_EQ_INT(seen_plain, 2);
  /* In the raw SLOTS reply that node's endpoint is indeed "?". */
  int question = 0;
  for (size_t i = 0; i < s->slots->elements; i++) {
    const redisReply *e = s->slots->element[i];
    for (size_t j = 2; j < e->elements; j++) {
      const redisReply *n = e->element[j];
      if (n->type == REDIS_REPLY_ARRAY && n->elements >= 2 &&
          n->element[1]->integer == plain_port)
        question += n->element[0]->type == REDIS_REPLY_STRING &&
                    strcmp(n->element[0]->str, "?") == 0;
    }
  }
  RT_CHECK(question > 0);
  done(&sh, &sl);
}

void rt_check_unknown_endpoint(const rt_state *s) {
  rl_slotmap sh, sl;
  rl_slotmap_init(&sh);
  rl_slotmap_init(&sl);
  /* Told where the reply came from, every node is at that host. */
  RT_REQUIRE(s->shards && s->slots && s->nodes);
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&sh, s->shards, 0, "seed.example"), 0);
  RT_CHECK_EQ_INT(rl_slotmap_from_slots(&sl, s->slots, 0, "seed.example"), 0);
  RT_CHECK(rt_check_map_vs_nodes(&sh, s->nodes, 1));
  RT_CHECK_EQ_INT(rl_slotmap_diff(&sh, &sl, NULL), 0);
  for (int i = 0; i < sh.nnodes; i++)
    RT_CHECK(strcmp(sh.nodes[i].host, "seed.example") == 0);
  for (int i = 0; i < sl.nnodes; i++)
    RT_CHECK(strcmp(sl.nodes[i].host, "seed.example") == 0);
  /* Not told, the IP is the best there is (SHARDS "ip", SLOTS metadata). */
  RT_CHECK_EQ_INT(rl_slotmap_from_shards(&sh, s->shards, 0, NULL), 0);
  RT_CHECK_EQ_INT(rl_slotmap_from_slots(&sl, s->slots, 0, NULL), 0);
  for (int i = 0; i < sh.nnodes; i++)
    RT_CHECK(strcmp(sh.nodes[i].host, "127.0.0.1") == 0);
  for (int i = 0; i < sl.nnodes; i++)
    RT_CHECK(strcmp(sl.nodes[i].host, "127.0.0.1") == 0);
  /* The raw replies: nil endpoints in SLOTS, empty ones in SHARDS. */
  int nils = 0, listed = 0, empties = 0, nodes_listed = 0;
  for (size_t i = 0; i < s->slots->elements; i++) {
    const redisReply *e = s->slots->element[i];
    for (size_t j = 2; e->type == REDIS_REPLY_ARRAY && j < e->elements; j++) {
      listed++;
      nils += e->element[j]->type == REDIS_REPLY_ARRAY &&
              e->element[j]->elements > 0 &&
              e->element[j]->element[0]->type == REDIS_REPLY_NIL;
    }
  }
  for (size_t i = 0; i < s->shards->elements; i++) {
    const redisReply *nodes = field(s->shards->element[i], "nodes");
    for (size_t j = 0; nodes && j < nodes->elements; j++) {
      const redisReply *ep = field(nodes->element[j], "endpoint");
      nodes_listed++;
      empties += ep != NULL && ep->type == REDIS_REPLY_STRING && ep->len == 0;
    }
  }
  RT_CHECK(listed > 0 && nils == listed);
  RT_CHECK(nodes_listed > 0 && empties == nodes_listed);
  done(&sh, &sl);
}

void rt_check_moved(const redisReply *r, int slot, const char *host,
                    int port) {
  rl_redirect rd;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_redirect_classify(r, &rd), RL_REPLY_MOVED);
  RT_CHECK_EQ_INT(rd.slot, slot);
  RT_CHECK(strcmp(rd.host, host) == 0);
  RT_CHECK_EQ_INT(rd.port, port);
  RT_CHECK_EQ_INT(rd.host_unknown, strcmp(host, "?") == 0);
}

void rt_check_ask(const redisReply *r, int slot, int port) {
  rl_redirect rd;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_redirect_classify(r, &rd), RL_REPLY_ASK);
  RT_CHECK_EQ_INT(rd.slot, slot);
  RT_CHECK(strcmp(rd.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(rd.port, port);
}

void rt_check_kind(const redisReply *r, int kind) {
  rl_redirect rd;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_redirect_classify(r, &rd), kind);
}

void rt_check_pcall_batch(const redisReply *r, const char *pattern) {
  RT_REQUIRE(r != NULL);
  RT_REQUIRE(r->type == REDIS_REPLY_ARRAY);
  RT_REQUIRE(r->elements == strlen(pattern));
  for (size_t i = 0; i < r->elements; i++) {
    const redisReply *e = r->element[i];
    rl_redirect rd;
    if (pattern[i] == '1') {
      RT_CHECK(e->type == REDIS_REPLY_INTEGER && e->integer == 1);
    } else {
      /* The text pcall gives is the error reply's text. */
      RT_CHECK(e->type == REDIS_REPLY_STRING);
      RT_CHECK_EQ_INT(rl_redirect_parse(e->str, e->len, &rd),
                      RL_REPLY_NONLOCAL);
    }
  }
}

void rt_check_addr(const redisReply *r, int port) {
  rl_hostport hp;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_sentinel_parse_addr(r, &hp), 0);
  RT_CHECK(strcmp(hp.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(hp.port, port);
}

void rt_check_addr_unknown(const redisReply *r) {
  rl_hostport hp;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_sentinel_parse_addr(r, &hp), RLOCK_ENOTFOUND);
}

void rt_check_role_master(const redisReply *r, int port_a, int port_b) {
  static rl_role role;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_role_parse(r, &role), 0);
  RT_CHECK_EQ_INT(role.role, RL_ROLE_MASTER);
  RT_CHECK(role.offset > 0);
  RT_CHECK_EQ_INT(role.nreplicas, 2);
  int a = 0, b = 0;
  for (int i = 0; i < role.nreplicas && i < RL_ROLE_MAX_LISTED; i++) {
    a += role.replica[i].addr.port == port_a;
    b += role.replica[i].addr.port == port_b;
    RT_CHECK(strcmp(role.replica[i].addr.host, "127.0.0.1") == 0);
    RT_CHECK(role.replica[i].offset > 0);
  }
  RT_CHECK(a == 1 && b == 1);
  /* The ports really were strings there (TOPOLOGY-FACTS.md §8). */
  RT_CHECK(r->element[2]->element[0]->element[1]->type == REDIS_REPLY_STRING);
}

void rt_check_role_replica(const redisReply *r, int master_port) {
  static rl_role role;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_role_parse(r, &role), 0);
  RT_CHECK_EQ_INT(role.role, RL_ROLE_REPLICA);
  RT_CHECK(strcmp(role.master.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(role.master.port, master_port);
  RT_CHECK_EQ_INT(role.link, RL_LINK_CONNECTED);
  RT_CHECK(role.offset > 0);
  /* And the port really was an integer there. */
  RT_CHECK(r->element[2]->type == REDIS_REPLY_INTEGER);
}

void rt_check_role_sentinel(const redisReply *r, const char *name) {
  static rl_role role;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_role_parse(r, &role), 0);
  RT_CHECK_EQ_INT(role.role, RL_ROLE_SENTINEL);
  RT_CHECK_EQ_INT(role.nnames, 1);
  RT_CHECK_EQ_INT(rl_role_monitors(&role, name), 1);
  RT_CHECK_EQ_INT(rl_role_monitors(&role, "other"), 0);
}

void rt_check_subscribed(const redisReply *r) {
  rl_switch_master sw;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(r, &sw), 1);
}

void rt_check_switch(const redisReply *r, const char *name, int old_port,
                     int new_port) {
  rl_switch_master sw;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(r, &sw), 0);
  RT_CHECK(strcmp(sw.name, name) == 0);
  RT_CHECK(strcmp(sw.from.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(sw.from.port, old_port);
  RT_CHECK(strcmp(sw.to.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(sw.to.port, new_port);
}

void rt_check_wait(const redisReply *r, long long acked) {
  long long n = -1;
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_wait_parse(r, &n), 0);
  RT_CHECK_EQ_INT(n, acked);
}
