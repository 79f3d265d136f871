/*
 * The Redis Cluster facts of test/TOPOLOGY-FACTS.md, checked against a
 * real 7.0 cluster: reply shapes, error texts, scripts and slots, ASK and
 * ASKING, shard channels through migrations and failovers, WAIT. The
 * client's cluster code rests on these facts; if a Redis version behaves
 * otherwise, this test fails and says where. Every
 * command a check rests on is printed with its reply ("  | PORT> ...").
 *
 * The tests share one cluster and run in order: the first one needs a
 * cluster that has never been written to.
 */
#include "facts.h"
#include "harness.h"
#include "harness_cluster.h"
#include "keyslot.h"
#include "sha1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rt_cluster C;
static int up;
/* The cluster is of Valkey (INFO server's server_name), whose facts
 * differ from Redis 7.0's in three places (TOPOLOGY-FACTS.md, "Valkey"). */
static int valkey;

/* The first "prefix:N" key owned by node i whose slot is not avoid; its
 * slot, or -1. */
static int key_on(int i, const char *prefix, int avoid, char *key,
                  size_t cap) {
  for (int n = 0; n < 2000; n++) {
    snprintf(key, cap, "%s:%d", prefix, n);
    int slot = rt_key_slot_str(key);
    if (slot != avoid && rt_cluster_owner(&C, slot) == i) return slot;
  }
  return -1;
}

static const char *text_of(const redisReply *r) {
  return r && r->str ? r->str : "";
}

/* A pair in a flat key-value array: the value after key, or NULL. */
static const redisReply *kv(const redisReply *r, const char *key) {
  for (size_t i = 0; r && i + 1 < r->elements; i += 2)
    if (rt_is_text(r->element[i], REDIS_REPLY_STRING, key))
      return r->element[i + 1];
  return NULL;
}

/* CLUSTER SHARDS and CLUSTER SLOTS of a cluster never written to: a
 * replica whose replication offset is still 0 is "loading" in SHARDS and
 * left out of SLOTS; after one write per shard, both list it. */
static void test_fresh_slots_and_shards(void) {
  RT_REQUIRE(up);
  redisReply *sh = RT_OBS(&C.node[0], "CLUSTER SHARDS");
  RT_REQUIRE(sh && sh->type == REDIS_REPLY_ARRAY);
  RT_CHECK_EQ_INT(sh->elements, 3);
  int loading = 0;
  for (size_t i = 0; i < sh->elements; i++) {
    redisReply *s = sh->element[i];
    RT_REQUIRE(rt_is_array(s, 4));
    RT_CHECK(rt_is_text(s->element[0], REDIS_REPLY_STRING, "slots"));
    RT_CHECK(rt_is_text(s->element[2], REDIS_REPLY_STRING, "nodes"));
    RT_CHECK(s->element[1]->type == REDIS_REPLY_ARRAY &&
             s->element[1]->elements % 2 == 0 &&
             s->element[1]->element[0]->type == REDIS_REPLY_INTEGER);
    redisReply *nodes = s->element[3];
    RT_REQUIRE(rt_is_array(nodes, 2));
    for (size_t j = 0; j < nodes->elements; j++) {
      redisReply *n = nodes->element[j];
      /* 7 pairs, in this order, when no hostname is set. */
      static const char *keys[] = {"id", "port", "ip", "endpoint", "role",
                                   "replication-offset", "health"};
      RT_REQUIRE(rt_is_array(n, 14));
      for (int k = 0; k < 7; k++)
        RT_CHECK(rt_is_text(n->element[2 * k], REDIS_REPLY_STRING, keys[k]));
      RT_CHECK(n->element[3]->type == REDIS_REPLY_INTEGER);
      RT_CHECK(n->element[11]->type == REDIS_REPLY_INTEGER);
      const char *role = text_of(n->element[9]);
      RT_CHECK(strcmp(role, j == 0 ? "master" : "replica") == 0);
      loading += strcmp(role, "replica") == 0 &&
                 strcmp(text_of(n->element[13]), "loading") == 0;
    }
  }
  freeReplyObject(sh);
  redisReply *sl = RT_OBS(&C.node[0], "CLUSTER SLOTS");
  RT_REQUIRE(sl && sl->type == REDIS_REPLY_ARRAY);
  int listed = 0;
  for (size_t i = 0; i < sl->elements; i++) {
    redisReply *e = sl->element[i];
    RT_REQUIRE(e->type == REDIS_REPLY_ARRAY && e->elements >= 3);
    RT_CHECK(e->element[0]->type == REDIS_REPLY_INTEGER &&
             e->element[1]->type == REDIS_REPLY_INTEGER);
    redisReply *n = e->element[2];
    /* [ip, port, id, {more endpoints}] */
    RT_CHECK(rt_is_array(n, 4) && n->element[0]->type == REDIS_REPLY_STRING &&
             n->element[1]->type == REDIS_REPLY_INTEGER &&
             n->element[2]->type == REDIS_REPLY_STRING &&
             rt_is_array(n->element[3], 0));
    listed += (int)e->elements - 3;
  }
  freeReplyObject(sl);
  rt_note("fresh cluster: %d replica(s) 'loading' in SHARDS, %d listed in "
          "SLOTS", loading, listed);
  RT_CHECK_EQ_INT(listed, 3 - loading);
  /* One write per shard, acknowledged, then gossip: all three appear. */
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  for (int k = 0; k < 3; k++) {
    char key[64];
    RT_REQUIRE(key_on(p[k], "fresh", -1, key, sizeof key) >= 0);
    freeReplyObject(rt_redis_cmd(&C.node[p[k]], "SET %s 1", key));
    RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[k]], "WAIT 1 2000"), 1);
  }
  uint64_t t0 = rt_now_ms();
  for (listed = 0; listed != 3 && rt_now_ms() - t0 < 15000;
       rt_sleep_ms(50)) {
    sl = rt_redis_cmd(&C.node[0], "CLUSTER SLOTS");
    listed = 0;
    for (size_t i = 0; sl && i < sl->elements; i++)
      listed += (int)sl->element[i]->elements - 3;
    if (sl) freeReplyObject(sl);
  }
  rt_note("after one acknowledged write per shard: %d replicas in SLOTS "
          "after %llu ms", listed, (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK_EQ_INT(listed, 3);
  sl = RT_OBS(&C.node[0], "CLUSTER SLOTS");
  if (sl) freeReplyObject(sl);
}

/* MOVED, CROSSSLOT and "Hash slot not served", word for word. */
static void test_redirection_texts(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  char k1[64], k2[64], want[96];
  int s1 = key_on(p[0], "txt", -1, k1, sizeof k1);
  int s2 = key_on(p[0], "txt", s1, k2, sizeof k2);
  RT_REQUIRE(s1 >= 0 && s2 >= 0);
  snprintf(want, sizeof want, "MOVED %d 127.0.0.1:%d", s1, C.node[p[0]].port);
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[p[1]], "GET %s", k1),
                           REDIS_REPLY_ERROR, want));
  /* A replica redirects too, even for reads, without READONLY. */
  int r0 = rt_cluster_replica_of(&C, p[0]);
  RT_REQUIRE(r0 >= 0);
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[r0], "GET %s", k1),
                           REDIS_REPLY_ERROR, want));
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[p[0]], "MSET %s 1 %s 2", k1, k2),
                           REDIS_REPLY_ERROR,
                           "CROSSSLOT Keys in request don't hash to the "
                           "same slot"));
  /* A slot its owner gave up (DELSLOTS on it alone), then taken back. */
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[p[0]], "CLUSTER DELSLOTS %d", s1),
                           REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[p[0]], "GET %s", k1),
                           REDIS_REPLY_ERROR,
                           "CLUSTERDOWN Hash slot not served"));
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[p[0]], "CLUSTER ADDSLOTS %d", s1),
                           REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(rt_cluster_wait_settled(&C, 20000) == 0);
}

/* Scripts in cluster mode: declared keys must share a slot whatever the
 * flags; the flag decides about undeclared keys of other slots on the
 * same node; another node's keys are refused mid-script, after earlier
 * writes of the script took effect. The flag is part of the script's
 * text, so of its SHA. */
static void test_scripts_and_slots(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  char a[64], b[64], far[64];
  int sa = key_on(p[0], "scr", -1, a, sizeof a);
  RT_REQUIRE(sa >= 0 && key_on(p[0], "scr", sa, b, sizeof b) >= 0);
  RT_REQUIRE(key_on(p[1], "scr", -1, far, sizeof far) >= 0);
  rt_redis *n = &C.node[p[0]];
  const char *plain = "return {redis.call('set',KEYS[1],'1'),"
                      "redis.call('set',KEYS[2],'2')}";
  const char *flagged = "#!lua flags=allow-cross-slot-keys\n"
                        "return {redis.call('set',KEYS[1],'1'),"
                        "redis.call('set',KEYS[2],'2')}";
  const char *crossslot = "CROSSSLOT Keys in request don't hash to the "
                          "same slot";
  RT_CHECK(rt_is_text_free(RT_OBS(n, "EVAL %s 2 %s %s", plain, a, b),
                           REDIS_REPLY_ERROR, crossslot));
  RT_CHECK(rt_is_text_free(RT_OBS(n, "EVAL %s 2 %s %s", flagged, a, b),
                           REDIS_REPLY_ERROR, crossslot));
  /* Undeclared keys: KEYS[1] is a, the script also writes b. */
  const char *undeclared_plain = "redis.call('set',KEYS[1],'x') "
                                 "return redis.call('set',ARGV[1],'y')";
  RT_CHECK(rt_is_text_free(
      RT_OBS(n, "EVAL %s 1 %s %s", undeclared_plain, a, b),
      REDIS_REPLY_STATUS, "OK"));
  char shebang_only[256], with_flag[256];
  snprintf(shebang_only, sizeof shebang_only, "#!lua\n%s", undeclared_plain);
  snprintf(with_flag, sizeof with_flag,
           "#!lua flags=allow-cross-slot-keys\n%s", undeclared_plain);
  RT_CHECK(rt_err_starts_free(
      RT_OBS(n, "EVAL %s 1 %s %s", shebang_only, a, b),
      "ERR Script attempted to access keys that do not hash to the same "
      "slot"));
  RT_CHECK(rt_is_text_free(RT_OBS(n, "EVAL %s 1 %s %s", with_flag, a, b),
                           REDIS_REPLY_STATUS, "OK"));
  /* With no declared key at all, a flagged script may still write both. */
  RT_CHECK(rt_is_text_free(
      RT_OBS(n, "EVAL %s 0 %s %s",
             "#!lua flags=allow-cross-slot-keys\n"
             "redis.call('set',ARGV[1],'z') "
             "return redis.call('set',ARGV[2],'z')", a, b),
      REDIS_REPLY_STATUS, "OK"));
  /* Another node's key, after a first write: refused, first write kept. */
  RT_CHECK(rt_is_text_free(RT_OBS(n, "SET %s before", a), REDIS_REPLY_STATUS,
                           "OK"));
  RT_CHECK(rt_err_starts_free(
      RT_OBS(n, "EVAL %s 0 %s %s",
             "#!lua flags=allow-cross-slot-keys\n"
             "redis.call('set',ARGV[1],'after') "
             "return redis.call('set',ARGV[2],'x')", a, far),
      "ERR Script attempted to access a non local key in a cluster node"));
  RT_CHECK(rt_is_text_free(RT_OBS(n, "GET %s", a), REDIS_REPLY_STRING,
                           "after"));
  /* With no declared key there is no routing: a replica runs the script
   * itself, and refuses it only for writing. */
  int rep = rt_cluster_replica_of(&C, p[0]);
  RT_REQUIRE(rep >= 0);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[rep], "EVAL %s 0", "return 7"), 7);
  RT_CHECK(rt_err_starts_free(
      RT_OBS(&C.node[rep], "EVAL %s 0 %s",
             "#!lua flags=allow-cross-slot-keys\n"
             "return redis.call('set',ARGV[1],'r')", a),
      "READONLY You can't write against a read only replica."));
  /* The SHA is SHA-1 of the whole text, shebang line included; EVALSHA
   * runs a flagged script like EVAL; no FUNCTION needed. */
  char sha[41], sha_plain[41];
  rl_sha1_hex(with_flag, strlen(with_flag), sha);
  rl_sha1_hex(undeclared_plain, strlen(undeclared_plain), sha_plain);
  RT_CHECK(rt_is_text_free(RT_OBS(n, "SCRIPT LOAD %s", with_flag),
                           REDIS_REPLY_STRING, sha));
  RT_CHECK(strcmp(sha, sha_plain) != 0);
  RT_CHECK(rt_is_text_free(RT_OBS(n, "EVALSHA %s 1 %s %s", sha, a, b),
                           REDIS_REPLY_STATUS, "OK"));
}

/* A slot in migration: ASK and TRYAGAIN texts, ASKING for one command,
 * scripts and shard channels meanwhile, and what a shard subscriber sees
 * when the slot leaves its node. */
static void test_migration_and_shard_channels(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int src = p[0], dst = p[1], rep = rt_cluster_replica_of(&C, src);
  RT_REQUIRE(rep >= 0);
  char tag[64], ask[96];
  int slot = key_on(src, "m", -1, tag, sizeof tag);
  RT_REQUIRE(slot >= 0);
  rt_redis *s = &C.node[src], *d = &C.node[dst];
  for (int k = 0; k < 3; k++)
    freeReplyObject(rt_redis_cmd(s, "SET {%s}:%d v%d", tag, k, k));
  /* Shard subscribers on the source and on its replica. */
  redisContext *sub_src = rt_connect(s), *sub_rep = rt_connect(&C.node[rep]);
  RT_REQUIRE(sub_src && sub_rep);
  char ch[96];
  snprintf(ch, sizeof ch, "{%s}:ch", tag);
  redisReply *r = RT_OBSC(sub_src, "SSUBSCRIBE %s", ch);
  RT_CHECK(rt_is_array(r, 3) && rt_is_text(r->element[0], REDIS_REPLY_STRING,
                                           "ssubscribe"));
  if (r) freeReplyObject(r);
  freeReplyObject(RT_OBSC(sub_rep, "SSUBSCRIBE %s", ch));

  rt_migration m;
  RT_REQUIRE(rt_cluster_migrate_begin(&C, slot, dst, &m) == 0);
  rt_note("slot %d: IMPORTING on %d, MIGRATING on %d", slot, d->port,
          s->port);
  snprintf(ask, sizeof ask, "ASK %d 127.0.0.1:%d", slot, d->port);
  RT_CHECK(rt_is_text_free(RT_OBS(s, "GET {%s}:0", tag), REDIS_REPLY_STRING,
                           "v0"));
  RT_CHECK(rt_is_text_free(RT_OBS(s, "GET {%s}:none", tag),
                           REDIS_REPLY_ERROR, ask));
  RT_CHECK(rt_is_text_free(RT_OBS(s, "SET {%s}:new 1", tag),
                           REDIS_REPLY_ERROR, ask));
  const char *tryagain = "TRYAGAIN Multiple keys request during rehashing "
                         "of slot";
  RT_CHECK(rt_is_text_free(RT_OBS(s, "MGET {%s}:0 {%s}:none", tag, tag),
                           REDIS_REPLY_ERROR, tryagain));
  RT_CHECK(rt_is_text_free(RT_OBS(s, "EVAL %s 2 {%s}:0 {%s}:none",
                                  "return 1", tag, tag),
                           REDIS_REPLY_ERROR, tryagain));
  RT_CHECK(rt_is_text_free(RT_OBS(s, "EVAL %s 1 {%s}:none", "return 1", tag),
                           REDIS_REPLY_ERROR, ask));
  /* A script admitted for a key the source has may not touch one it
   * lacks: refused mid-script. */
  RT_CHECK(rt_err_starts_free(
      RT_OBS(s, "EVAL %s 1 {%s}:0 {%s}:none",
             "return redis.call('get',ARGV[1])", tag, tag),
      "ERR Script attempted to access a non local key in a cluster node"));
  /* Move key 0; ASKING is good for exactly the next command. */
  RT_REQUIRE(rt_is_text_free(
      rt_redis_cmd(s, "MIGRATE 127.0.0.1 %d {%s}:0 0 5000", d->port, tag),
      REDIS_REPLY_STATUS, "OK"));
  rt_note("MIGRATE moved {%s}:0 to %d", tag, d->port);
  RT_CHECK(rt_is_text_free(RT_OBS(s, "GET {%s}:0", tag), REDIS_REPLY_ERROR,
                           ask));
  char moved_src[96];
  snprintf(moved_src, sizeof moved_src, "MOVED %d 127.0.0.1:%d", slot,
           s->port);
  RT_CHECK(rt_is_text_free(RT_OBS(d, "GET {%s}:0", tag), REDIS_REPLY_ERROR,
                           moved_src));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "ASKING"), REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "GET {%s}:0", tag), REDIS_REPLY_STRING,
                           "v0"));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "GET {%s}:0", tag), REDIS_REPLY_ERROR,
                           moved_src));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "ASKING"), REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "PING"), REDIS_REPLY_STATUS, "PONG"));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "GET {%s}:0", tag), REDIS_REPLY_ERROR,
                           moved_src));
  /* After ASKING, a script runs on the target; multi-key with a missing
   * key is TRYAGAIN there too. */
  freeReplyObject(RT_OBS(d, "ASKING"));
  RT_CHECK(rt_is_text_free(
      RT_OBS(d, "EVAL %s 1 {%s}:0", "return redis.call('get',KEYS[1])", tag),
      REDIS_REPLY_STRING, "v0"));
  freeReplyObject(RT_OBS(d, "ASKING"));
  RT_CHECK(rt_is_text_free(RT_OBS(d, "MGET {%s}:0 {%s}:1", tag, tag),
                           REDIS_REPLY_ERROR, tryagain));
  /* Shard channels are not keys: the source still publishes them. */
  RT_CHECK_EQ_INT(rt_redis_int(s, "SPUBLISH %s during", ch), 1);
  for (int k = 0; k < 2; k++) {
    redisReply *msg = rt_next_reply(k ? sub_rep : sub_src, 2000);
    char buf[256];
    rt_note("%s subscriber got %s", k ? "replica" : "source",
            rt_show(msg, buf, sizeof buf));
    RT_CHECK(rt_is_array(msg, 3) &&
             rt_is_text(msg->element[0], REDIS_REPLY_STRING, "smessage") &&
             rt_is_text(msg->element[2], REDIS_REPLY_STRING, "during"));
    if (msg) freeReplyObject(msg);
  }
  while (rt_cluster_migrate_keys(&C, &m, 100) > 0) continue;
  /* The target claims the slot; nothing is sent to the source yet. */
  RT_CHECK(rt_is_text_free(
      RT_OBS(d, "CLUSTER SETSLOT %d NODE %s", slot, C.id[dst]),
      REDIS_REPLY_STATUS, "OK"));
  uint64_t t0 = rt_now_ms();
  for (int k = 0; k < 2; k++) {
    redisReply *msg = rt_next_reply(k ? sub_rep : sub_src, 5000);
    char buf[256];
    rt_note("%s subscriber, %llu ms after SETSLOT NODE on the target only: "
            "%s", k ? "replica" : "source",
            (unsigned long long)(rt_now_ms() - t0),
            rt_show(msg, buf, sizeof buf));
    RT_CHECK(rt_is_array(msg, 3) &&
             rt_is_text(msg->element[0], REDIS_REPLY_STRING, "sunsubscribe") &&
             rt_is_text(msg->element[1], REDIS_REPLY_STRING, ch) &&
             msg->element[2]->type == REDIS_REPLY_INTEGER &&
             msg->element[2]->integer == 0);
    if (msg) freeReplyObject(msg);
  }
  RT_REQUIRE(rt_cluster_migrate_finish(&C, &m) == 0);
  /* Not subscribed any more: a publish on the new owner does not reach
   * them, and the old owner redirects. */
  RT_CHECK_EQ_INT(rt_redis_int(d, "SPUBLISH %s after", ch), 0);
  redisReply *none = rt_next_reply(sub_src, 300);
  RT_CHECK(none == NULL);
  if (none) freeReplyObject(none);
  char moved_dst[96];
  snprintf(moved_dst, sizeof moved_dst, "MOVED %d 127.0.0.1:%d", slot,
           d->port);
  RT_CHECK(rt_is_text_free(RT_OBS(s, "SPUBLISH %s x", ch), REDIS_REPLY_ERROR,
                           moved_dst));
  redisFree(sub_src);
  redisFree(sub_rep);
}

/* Where a shard message goes: every subscriber of the shard, on the
 * primary and its replicas, whichever of them it was published on (in no
 * common order); SPUBLISH's count is the receiving node's own subscribers
 * only. */
static void test_shard_pubsub_delivery(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int prim = p[2], rep = rt_cluster_replica_of(&C, prim);
  RT_REQUIRE(rep >= 0);
  char ch[64];
  RT_REQUIRE(key_on(prim, "sch", -1, ch, sizeof ch) >= 0);
  redisContext *on_p = rt_connect(&C.node[prim]);
  redisContext *on_r = rt_connect(&C.node[rep]);
  redisContext *on_other = rt_connect(&C.node[p[0]]);
  RT_REQUIRE(on_p && on_r && on_other);
  freeReplyObject(RT_OBSC(on_p, "SSUBSCRIBE %s", ch));
  /* On the replica without READONLY: accepted. */
  redisReply *r = RT_OBSC(on_r, "SSUBSCRIBE %s", ch);
  RT_CHECK(rt_is_array(r, 3));
  if (r) freeReplyObject(r);
  RT_CHECK(rt_err_starts_free(RT_OBSC(on_other, "SSUBSCRIBE %s", ch),
                              "MOVED "));
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[prim], "SPUBLISH %s from-primary", ch),
                  1);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[rep], "SPUBLISH %s from-replica", ch),
                  1);
  rt_note("SPUBLISH on the primary and then on the replica each returned 1");
  /* Both reach both subscribers, but not in one order: a message
   * published on the other node of the shard comes over the cluster bus,
   * so it can arrive after a later one published locally. */
  for (int k = 0; k < 2; k++) {
    int seen_p = 0, seen_r = 0;
    for (int w = 0; w < 2; w++) {
      redisReply *msg = rt_next_reply(k ? on_r : on_p, 2000);
      char buf[256];
      rt_note("subscriber on the %s got %s", k ? "replica" : "primary",
              rt_show(msg, buf, sizeof buf));
      RT_CHECK(rt_is_array(msg, 3) &&
               rt_is_text(msg->element[0], REDIS_REPLY_STRING, "smessage"));
      seen_p += rt_is_array(msg, 3) &&
                rt_is_text(msg->element[2], REDIS_REPLY_STRING, "from-primary");
      seen_r += rt_is_array(msg, 3) &&
                rt_is_text(msg->element[2], REDIS_REPLY_STRING, "from-replica");
      if (msg) freeReplyObject(msg);
    }
    RT_CHECK(seen_p == 1 && seen_r == 1);
  }
  redisFree(on_p);
  redisFree(on_r);
  redisFree(on_other);
}

/* PUBLISH in a script is broadcast to the whole cluster like any
 * PUBLISH; SPUBLISH in a script is allowed for a channel of the node and
 * reaches the shard's subscribers on the replica too. */
static void test_publish_from_scripts(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int rep = rt_cluster_replica_of(&C, p[0]);
  RT_REQUIRE(rep >= 0);
  redisContext *plain = rt_connect(&C.node[p[1]]);
  redisContext *shard = rt_connect(&C.node[rep]);
  RT_REQUIRE(plain && shard);
  freeReplyObject(RT_OBSC(plain, "SUBSCRIBE plain-ch"));
  char key[64], ch[96], other[64], far[64];
  int slot = key_on(p[0], "pk", -1, key, sizeof key);
  RT_REQUIRE(slot >= 0);
  snprintf(ch, sizeof ch, "{%s}:ch", key);
  RT_REQUIRE(key_on(p[0], "pk", slot, other, sizeof other) >= 0);
  RT_REQUIRE(key_on(p[1], "pk", -1, far, sizeof far) >= 0);
  freeReplyObject(RT_OBSC(shard, "SSUBSCRIBE %s", ch));
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[0]], "EVAL %s 1 %s",
                               "return redis.call('publish','plain-ch','hi')",
                               key),
                  0);
  redisReply *msg = rt_next_reply(plain, 2000);
  char buf[256];
  rt_note("EVAL publish on %d returned 0; subscriber on %d got %s",
          C.node[p[0]].port, C.node[p[1]].port, rt_show(msg, buf, sizeof buf));
  RT_CHECK(rt_is_array(msg, 3) &&
           rt_is_text(msg->element[2], REDIS_REPLY_STRING, "hi"));
  if (msg) freeReplyObject(msg);
  redisReply *r = RT_OBS(&C.node[p[0]], "EVAL %s 1 %s",
                         "return redis.call('spublish',KEYS[1],'unlock')", ch);
  RT_CHECK(r && r->type == REDIS_REPLY_INTEGER);
  if (r) freeReplyObject(r);
  msg = rt_next_reply(shard, 2000);
  rt_note("replica's shard subscriber got %s", rt_show(msg, buf, sizeof buf));
  RT_CHECK(rt_is_array(msg, 3) &&
           rt_is_text(msg->element[0], REDIS_REPLY_STRING, "smessage") &&
           rt_is_text(msg->element[2], REDIS_REPLY_STRING, "unlock"));
  if (msg) freeReplyObject(msg);
  /* The channel counts as a key of the script: another node's is
   * refused, another slot's needs the flag like a key would. */
  RT_CHECK(rt_err_starts_free(
      RT_OBS(&C.node[p[0]], "EVAL %s 1 %s %s",
             "return redis.call('spublish',ARGV[1],'x')", key, far),
      "ERR Script attempted to access a non local key in a cluster node"));
  RT_CHECK(rt_err_starts_free(
      RT_OBS(&C.node[p[0]], "EVAL %s 1 %s %s",
             "#!lua\nreturn redis.call('spublish',ARGV[1],'x')", key, other),
      "ERR Script attempted to access keys that do not hash to the same "
      "slot"));
  redisFree(plain);
  redisFree(shard);
}

/* WAIT pipelined after EVALSHA on one connection counts the replicas
 * that have the script's writes; WAIT inside a script is refused. */
static void test_wait_after_evalsha(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  char key[64];
  RT_REQUIRE(key_on(p[1], "w", -1, key, sizeof key) >= 0);
  const char *body = "return redis.call('set',KEYS[1],ARGV[1])";
  char sha[41];
  rl_sha1_hex(body, strlen(body), sha);
  freeReplyObject(rt_redis_cmd(&C.node[p[1]], "SCRIPT LOAD %s", body));
  redisContext *c = rt_connect(&C.node[p[1]]);
  RT_REQUIRE(c);
  redisAppendCommand(c, "EVALSHA %s 1 %s granted", sha, key);
  redisAppendCommand(c, "WAIT 1 1000");
  redisReply *r1 = NULL, *r2 = NULL;
  redisGetReply(c, (void **)&r1);
  redisGetReply(c, (void **)&r2);
  char b1[64], b2[64];
  rt_note("pipelined EVALSHA %s 1 %s granted; WAIT 1 1000 => %s; %s", sha, key,
          rt_show(r1, b1, sizeof b1), rt_show(r2, b2, sizeof b2));
  RT_CHECK(rt_is_text(r1, REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(r2 && r2->type == REDIS_REPLY_INTEGER && r2->integer == 1);
  if (r1) freeReplyObject(r1);
  if (r2) freeReplyObject(r2);
  redisFree(c);
  redisReply *w = RT_OBS(&C.node[p[1]], "EVAL %s 1 %s",
                          "return redis.call('wait',1,100)", key);
  if (valkey) /* Valkey 8 runs WAIT in a script */
    RT_CHECK(w && w->type == REDIS_REPLY_INTEGER && w->integer == 1);
  if (valkey && w) freeReplyObject(w);
  if (!valkey)
    RT_CHECK(rt_err_starts_free(
        w, "ERR This Redis command is not allowed from script"));
  /* More replicas asked for than exist: WAIT returns what it got, after
   * the timeout. */
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[p[1]], "WAIT 2 200"), 1);
}

/* A manual failover: the old primary's shard subscribers are told
 * sunsubscribe, the promoted replica's keep their subscription (Redis
 * 7.0; Valkey 8 tells them sunsubscribe too); writes
 * to the old primary are MOVED, a READONLY connection's scripted writes
 * get READONLY. */
static void test_manual_failover_effects(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int old = p[1], heir = rt_cluster_replica_of(&C, old);
  RT_REQUIRE(heir >= 0);
  char key[64], ch[96];
  int slot = key_on(old, "mf", -1, key, sizeof key);
  RT_REQUIRE(slot >= 0);
  snprintf(ch, sizeof ch, "{%s}:ch", key);
  redisContext *sub_old = rt_connect(&C.node[old]);
  redisContext *sub_heir = rt_connect(&C.node[heir]);
  redisContext *ro = rt_connect(&C.node[old]);
  RT_REQUIRE(sub_old && sub_heir && ro);
  freeReplyObject(RT_OBSC(sub_old, "SSUBSCRIBE %s", ch));
  freeReplyObject(RT_OBSC(sub_heir, "SSUBSCRIBE %s", ch));
  freeReplyObject(RT_OBSC(ro, "READONLY"));
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_cluster_failover(&C, heir) == 0);
  rt_note("CLUSTER FAILOVER on %d: all nodes agree after %llu ms",
          C.node[heir].port, (unsigned long long)(rt_now_ms() - t0));
  redisReply *msg = rt_next_reply(sub_old, 2000);
  char buf[256];
  rt_note("old primary's subscriber got %s", rt_show(msg, buf, sizeof buf));
  RT_CHECK(rt_is_array(msg, 3) &&
           rt_is_text(msg->element[0], REDIS_REPLY_STRING, "sunsubscribe"));
  if (msg) freeReplyObject(msg);
  /* Valkey 8 tells the promoted replica's subscribers sunsubscribe too;
   * Redis 7.0 leaves them subscribed. */
  msg = rt_next_reply(sub_heir, valkey ? 2000 : 300);
  if (valkey) {
    rt_note("promoted replica's subscriber got %s",
            rt_show(msg, buf, sizeof buf));
    RT_CHECK(rt_is_array(msg, 3) &&
             rt_is_text(msg->element[0], REDIS_REPLY_STRING, "sunsubscribe"));
  } else {
    RT_CHECK(msg == NULL);
  }
  if (msg) freeReplyObject(msg);
  RT_CHECK_EQ_INT(rt_redis_int(&C.node[heir], "SPUBLISH %s after", ch),
                  valkey ? 0 : 1);
  if (!valkey) {
    msg = rt_next_reply(sub_heir, 2000);
    rt_note("promoted replica's subscriber got %s",
            rt_show(msg, buf, sizeof buf));
    RT_CHECK(rt_is_array(msg, 3) &&
             rt_is_text(msg->element[2], REDIS_REPLY_STRING, "after"));
    if (msg) freeReplyObject(msg);
  }
  char moved[96];
  snprintf(moved, sizeof moved, "MOVED %d 127.0.0.1:%d", slot,
           C.node[heir].port);
  RT_CHECK(rt_is_text_free(RT_OBS(&C.node[old], "SET %s x", key),
                           REDIS_REPLY_ERROR, moved));
  RT_CHECK(rt_is_text_free(RT_OBSC(ro, "SET %s x", key), REDIS_REPLY_ERROR,
                           moved));
  RT_CHECK(rt_err_starts_free(
      RT_OBSC(ro, "EVAL %s 1 %s", "return redis.call('set',KEYS[1],'x')", key),
      "READONLY You can't write against a read only replica."));
  redisFree(sub_old);
  redisFree(sub_heir);
  redisFree(ro);
}

/* A SIGKILLed primary: while it is failed and not yet replaced, every
 * node refuses every key with CLUSTERDOWN; its replica is promoted;
 * subscribers on that replica keep their subscription (Redis 7.0) or are
 * told sunsubscribe (Valkey 8); SHARDS lists the dead node as a shard
 * without slots (Redis 7.0) or in its old shard (Valkey 8). Restarted, it
 * rejoins as a replica.
 */
static void test_primary_killed_effects(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int victim = p[2], heir = rt_cluster_replica_of(&C, victim), bystander = p[0];
  RT_REQUIRE(heir >= 0);
  char key[64], own[64], ch[96];
  RT_REQUIRE(key_on(victim, "kd", -1, key, sizeof key) >= 0);
  RT_REQUIRE(key_on(bystander, "kd", -1, own, sizeof own) >= 0);
  snprintf(ch, sizeof ch, "{%s}:ch", key);
  redisContext *sub = rt_connect(&C.node[heir]);
  RT_REQUIRE(sub);
  freeReplyObject(RT_OBSC(sub, "SSUBSCRIBE %s", ch));
  freeReplyObject(rt_redis_cmd(&C.node[bystander], "SET %s 1", own));
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_redis_kill(&C.node[victim]) == 0);
  /* The bystander's answers for its own key, as they change. */
  char last[160] = "", cur[160];
  uint64_t down_at = 0, up_at = 0;
  while (rt_now_ms() - t0 < 20000 && !up_at) {
    redisReply *r = rt_redis_cmd(&C.node[bystander], "GET %s", own);
    rt_show(r, cur, sizeof cur);
    if (r) freeReplyObject(r);
    if (strcmp(cur, last) != 0) {
      rt_note("%llu ms after SIGKILL of %d, GET %s on %d => %s",
              (unsigned long long)(rt_now_ms() - t0), C.node[victim].port,
              own, C.node[bystander].port, cur);
      strcpy(last, cur);
      if (strstr(cur, "CLUSTERDOWN") && !down_at) down_at = rt_now_ms();
      if (down_at && strcmp(cur, "\"1\"") == 0) up_at = rt_now_ms();
    }
    rt_sleep_ms(20);
  }
  RT_CHECK(down_at > 0 && up_at > 0);
  RT_CHECK(strcmp(last, "\"1\"") == 0);
  RT_REQUIRE(rt_cluster_wait_settled(&C, 20000) == 0);
  rt_note("node timeout %d ms: CLUSTERDOWN from %llu to %llu ms, settled at "
          "%llu ms", RT_CLUSTER_NODE_TIMEOUT_MS,
          (unsigned long long)(down_at - t0), (unsigned long long)(up_at - t0),
          (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK_EQ_INT(rt_cluster_is_primary(&C, heir), 1);
  /* SHARDS: Redis 7.0 makes the dead primary a shard of its own, no
   * slots, "fail"; Valkey 8 keeps it in its old shard, still "master",
   * "fail", beside the promoted replica and its slots. */
  redisReply *sh = RT_OBS(&C.node[bystander], "CLUSTER SHARDS");
  int dead = 0;
  for (size_t i = 0; sh && i < sh->elements; i++) {
    const redisReply *slots = kv(sh->element[i], "slots");
    const redisReply *nodes = kv(sh->element[i], "nodes");
    for (size_t j = 0; slots && nodes && j < nodes->elements; j++) {
      const redisReply *n = nodes->element[j];
      const redisReply *id = kv(n, "id"), *health = kv(n, "health");
      const redisReply *role = kv(n, "role");
      if (!id || strcmp(text_of(id), C.id[victim]) != 0) continue;
      int where = valkey ? nodes->elements == 2 && slots->elements > 0 &&
                               strcmp(text_of(role), "master") == 0
                         : nodes->elements == 1 && slots->elements == 0;
      dead = where && strcmp(text_of(health), "fail") == 0;
    }
  }
  RT_CHECK(dead);
  if (sh) freeReplyObject(sh);
  /* Redis 7.0: the subscriber on the promoted replica is still
   * subscribed. Valkey 8: it was told sunsubscribe. */
  redisReply *msg = NULL;
  char buf[256];
  if (valkey) {
    msg = rt_next_reply(sub, 2000);
    rt_note("subscriber on the promoted replica got %s",
            rt_show(msg, buf, sizeof buf));
    RT_CHECK(rt_is_array(msg, 3) &&
             rt_is_text(msg->element[0], REDIS_REPLY_STRING, "sunsubscribe"));
  } else {
    RT_CHECK_EQ_INT(
        rt_redis_int(&C.node[heir], "SPUBLISH %s promoted", ch), 1);
    msg = rt_next_reply(sub, 2000);
    rt_note("subscriber on the promoted replica got %s",
            rt_show(msg, buf, sizeof buf));
    RT_CHECK(rt_is_array(msg, 3) &&
             rt_is_text(msg->element[2], REDIS_REPLY_STRING, "promoted"));
  }
  if (msg) freeReplyObject(msg);
  redisFree(sub);
  RT_REQUIRE(rt_cluster_restart(&C, victim) == 0);
  RT_CHECK_EQ_INT(rt_cluster_primary_of(&C, victim), heir);
  redisReply *role = RT_OBS(&C.node[victim], "ROLE");
  if (role) freeReplyObject(role);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"fresh_slots_and_shards", test_fresh_slots_and_shards},
      {"redirection_texts", test_redirection_texts},
      {"scripts_and_slots", test_scripts_and_slots},
      {"migration_and_shard_channels", test_migration_and_shard_channels},
      {"shard_pubsub_delivery", test_shard_pubsub_delivery},
      {"publish_from_scripts", test_publish_from_scripts},
      {"wait_after_evalsha", test_wait_after_evalsha},
      {"manual_failover_effects", test_manual_failover_effects},
      {"primary_killed_effects", test_primary_killed_effects},
  };
  up = rt_cluster_start(&C, NULL) == 0;
  redisReply *v = rt_redis_cmd(&C.node[0], "INFO server");
  if (v && v->type == REDIS_REPLY_STRING) {
    char *at = strstr(v->str, "redis_version:");
    if (at) rt_note("%.*s", (int)strcspn(at, "\r\n"), at);
    valkey = strstr(v->str, "server_name:valkey") != NULL;
    at = strstr(v->str, "valkey_version:");
    if (at) rt_note("%.*s", (int)strcspn(at, "\r\n"), at);
  }
  if (v) freeReplyObject(v);
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_cluster_stop(&C);
  return rc;
}
