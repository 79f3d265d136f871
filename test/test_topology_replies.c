/*
 * The cluster and Sentinel parsers (lib/slot, slotmap, redirect,
 * sentinel_proto) against real servers: a 3+3 cluster taken through the
 * states a client meets (fresh, written to, a slot in migration and
 * migrated, a manual failover, a killed primary, hostname and unknown
 * endpoints), then a Sentinel setup and a failover. Each reply is read
 * from a plain socket, byte for byte as the server sent it, parsed with
 * hiredis's reader and checked with topology_checks.h against CLUSTER
 * NODES of the same moment and the facts of the state.
 *
 * With RT_CAPTURE_OUT=path, and if every test passed, the bytes are
 * written to path as C source: that is how test/topology_replies.c, which
 * the unit tests read, was made. The tests share one cluster, started in
 * main, and run in order; the last one stops it and starts Sentinel.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "facts.h"
#include "harness.h"
#include "harness_cluster.h"
#include "harness_sentinel.h"
#include "redirect.h"
#include "slot.h"
#include "topology_checks.h"
#include "topology_fixture.h"

static rt_cluster C;
static int up;
static char version[64] = "redis_version:?";

/* Part 1: replies as bytes, on plain sockets. */

typedef struct raw {
  int fd, port;
  redisReader *rd;
  char buf[16384];
  size_t have, off;
} raw;

static int raw_open(raw *c, int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  memset(c, 0, sizeof *c);
  c->port = port;
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0) return -1;
  if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      (c->rd = redisReaderCreate()) == NULL) {
    close(c->fd);
    c->fd = -1;
    return -1;
  }
  return 0;
}

static void raw_close(raw *c) {
  if (c->fd >= 0) close(c->fd);
  if (c->rd) redisReaderFree(c->rd);
  c->fd = -1;
  c->rd = NULL;
}

static int raw_send(raw *c, int argc, const char **argv, const size_t *lens) {
  char *cmd = NULL;
  int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
  if (n < 0) return -1;
  int rc = write(c->fd, cmd, (size_t)n) == n ? 0 : -1;
  free(cmd);
  return rc;
}

/* The next reply within ms, and its exact bytes (malloc'ed) in *bytes:
 * the reader is fed one byte at a time, so a reply's bytes end where the
 * reader says it ends. NULL on timeout, EOF or a protocol error. */
static redisReply *raw_next(raw *c, int ms, char **bytes, size_t *len) {
  size_t cap = 1024, n = 0;
  char *acc = malloc(cap);
  void *reply = NULL;
  uint64_t until = rt_now_ms() + (uint64_t)ms;
  while (acc != NULL && reply == NULL) {
    if (c->off == c->have) {
      int left = (int)(until - rt_now_ms());
      struct pollfd p = {.fd = c->fd, .events = POLLIN};
      if (left <= 0 || poll(&p, 1, left) != 1) break;
      ssize_t got = read(c->fd, c->buf, sizeof c->buf);
      if (got <= 0) break;
      c->have = (size_t)got;
      c->off = 0;
    }
    if (n == cap) {
      char *more = realloc(acc, cap *= 2);
      if (more == NULL) break;
      acc = more;
    }
    acc[n++] = c->buf[c->off];
    if (redisReaderFeed(c->rd, c->buf + c->off++, 1) != REDIS_OK ||
        redisReaderGetReply(c->rd, &reply) != REDIS_OK)
      break;
  }
  if (reply == NULL) {
    free(acc);
    return NULL;
  }
  *bytes = acc;
  *len = n;
  return reply;
}

/* What RT_CAPTURE_OUT gets. */
typedef struct kept {
  char *name, *command, *bytes;
  int port;
  size_t len;
} kept;
static kept *keep;
static size_t nkeep;
static struct {
  char name[64];
  long long value;
} ints[64];
static size_t nints;
static struct {
  char *key;
  size_t len;
  int slot;
} *slots_seen;
static size_t nslots_seen;

static void keep_int(const char *name, long long v) {
  if (nints == sizeof ints / sizeof ints[0]) return;
  snprintf(ints[nints].name, sizeof ints[nints].name, "%s", name);
  ints[nints++].value = v;
  rt_note("%s = %lld", name, v);
}

static void keep_reply(const char *name, int port, const char *command,
                       char *bytes, size_t len) {
  kept *k = realloc(keep, (nkeep + 1) * sizeof *k);
  if (k == NULL) {
    free(bytes);
    return;
  }
  keep = k;
  keep[nkeep++] = (kept){strdup(name), strdup(command), bytes, port, len};
}

/* Forgets a kept reply (one that turned out not to show what it was
 * taken for). */
static void unkeep(const char *name) {
  for (size_t i = nkeep; i > 0; i--)
    if (strcmp(keep[i - 1].name, name) == 0) {
      rt_note("not keeping %s", name);
      free(keep[i - 1].name);
      free(keep[i - 1].command);
      free(keep[i - 1].bytes);
      memmove(&keep[i - 1], &keep[i], (nkeep - i) * sizeof *keep);
      nkeep--;
      return;
    }
}

/* Sends one command (argc strings of given lengths) on a new connection
 * to port, shows it and its reply, and keeps the reply's bytes under name
 * (unless name is NULL). The reply, or NULL. */
static redisReply *ask_argv(const char *name, int port, int argc,
                            const char **argv, const size_t *lens) {
  raw c;
  char shown[4096] = "", buf[400];
  for (int i = 0; i < argc; i++)
    snprintf(shown + strlen(shown), sizeof shown - strlen(shown), "%s%.*s",
             i ? " " : "", (int)lens[i], argv[i]);
  for (char *p = shown; *p; p++)
    if (*p == '\n') *p = '|';
  if (raw_open(&c, port) != 0) {
    rt_note("%d> %s => (cannot connect)", port, shown);
    return NULL;
  }
  char *bytes = NULL;
  size_t len = 0;
  redisReply *r = NULL;
  if (raw_send(&c, argc, argv, lens) == 0) r = raw_next(&c, 5000, &bytes, &len);
  raw_close(&c);
  rt_show(r, buf, sizeof buf);
  for (char *p = buf; *p; p++)
    if (*p == '\n') *p = '|';
  fprintf(stderr, "  | %d> %s => %s%s\n", port, shown, buf,
          name ? "   [kept]" : "");
  if (r && name) keep_reply(name, port, shown, bytes, len);
  else free(bytes);
  return r;
}

/* The same for a NULL-terminated list of NUL-terminated arguments. */
static redisReply *ask(const char *name, int port, ...) {
  const char *argv[16];
  size_t lens[16];
  int argc = 0;
  va_list ap;
  va_start(ap, port);
  for (const char *a; argc < 16 && (a = va_arg(ap, const char *));) {
    argv[argc] = a;
    lens[argc++] = strlen(a);
  }
  va_end(ap);
  return ask_argv(name, port, argc, argv, lens);
}

static void drop(redisReply *r) {
  if (r) freeReplyObject(r);
}

/* The shape of a per-node watchdog batch (docs/architecture.md): names in
 * ARGV, no declared key, the flag that allows several slots, and pcall
 * so that a key this node does not have is answered, not fatal. */
static const char batch_script[] =
    "#!lua flags=allow-cross-slot-keys\n"
    "local out = {}\n"
    "for i = 1, #ARGV do\n"
    "  local r = redis.pcall('pexpire', ARGV[i], 60000)\n"
    "  if type(r) == 'table' and r.err then out[i] = r.err else out[i] = r end\n"
    "end\n"
    "return out";

/* A cluster state's three replies from one node, kept as prefix.*. */
typedef struct state {
  redisReply *shards, *slots, *nodes;
} state;

static void ask_state(const char *prefix, int port, state *s) {
  char n1[64], n2[64], n3[64];
  snprintf(n1, sizeof n1, "%s.shards", prefix);
  snprintf(n2, sizeof n2, "%s.slots", prefix);
  snprintf(n3, sizeof n3, "%s.nodes", prefix);
  s->shards = ask(n1, port, "CLUSTER", "SHARDS", NULL);
  s->slots = ask(n2, port, "CLUSTER", "SLOTS", NULL);
  s->nodes = ask(n3, port, "CLUSTER", "NODES", NULL);
}

static rt_state view_of(const state *s) {
  return (rt_state){s->shards, s->slots, s->nodes};
}

static void state_free(state *s) {
  drop(s->shards);
  drop(s->slots);
  drop(s->nodes);
  memset(s, 0, sizeof *s);
}

/* Part 2: the cluster. */

static state st_steady, st_migrated;

/* The first "prefix:N" key whose slot node i serves. */
static int key_on(int i, const char *prefix, char *key, size_t cap) {
  for (int n = 0; n < 5000; n++) {
    snprintf(key, cap, "%s:%d", prefix, n);
    if (rt_cluster_owner(&C, rl_slot_of_str(key)) == i)
      return rl_slot_of_str(key);
  }
  return -1;
}

/* Keys for CLUSTER KEYSLOT: the hash tag rules' corner cases, bytes of
 * every value, and many pseudo-random keys with braces sprinkled in. */
static size_t make_keys(char keys[][48], size_t *lens, size_t cap) {
  static const char *fixed[] = {
      "",          "a",        "123456789",  "foo",       "{user1000}.following",
      "{user1000}.followers",   "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}",
      "{}",        "{",        "}",          "}{",        "{a",
      "a}",        "{}a",      "a{}",        "{a}",       "a{b}c",
      "a{b}{c}",   "{{}}",     "}{a}",       "{ }",       "rlock:{lock-1}",
      "rlock:{lock-1}:fence",  "rlock:{lock-1}:ch", "\xc3\xa9t\xc3\xa9",
  };
  size_t n = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < cap; i++) {
    lens[n] = strlen(fixed[i]);
    memcpy(keys[n], fixed[i], lens[n] + 1);
    n++;
  }
  /* Binary: a NUL inside, a NUL inside a tag, 0xff bytes. */
  static const struct {
    const char *k;
    size_t len;
  } bin[] = {{"a\0b", 3}, {"{a\0b}c", 6}, {"\0", 1}, {"\xff\xfe{\x01}", 5},
             {"{\0}", 3}, {"\xff", 1}};
  for (size_t i = 0; i < sizeof bin / sizeof bin[0] && n < cap; i++) {
    memcpy(keys[n], bin[i].k, bin[i].len);
    lens[n++] = bin[i].len;
  }
  /* Every single byte value, and pseudo-random keys (a fixed LCG, so that
   * every run asks the same keys). */
  for (int b = 0; b < 256 && n < cap; b++) {
    keys[n][0] = (char)b;
    lens[n++] = 1;
  }
  uint32_t x = 12345;
  while (n < cap) {
    x = x * 1103515245u + 12345u;
    size_t len = (x >> 16) % 40;
    for (size_t j = 0; j < len; j++) {
      x = x * 1103515245u + 12345u;
      unsigned v = (x >> 16) & 0xff;
      keys[n][j] = v % 7 == 0 ? '{' : v % 11 == 0 ? '}' : (char)v;
    }
    lens[n++] = len;
  }
  return n;
}

static void test_keyslots(void) {
  RT_REQUIRE(up);
  static char keys[700][48];
  static size_t lens[700];
  size_t n = make_keys(keys, lens, 700);
  raw c;
  RT_REQUIRE(raw_open(&c, C.node[0].port) == 0);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    const char *argv[3] = {"CLUSTER", "KEYSLOT", keys[i]};
    size_t l[3] = {7, 7, lens[i]};
    char *bytes = NULL;
    size_t blen;
    redisReply *r = raw_send(&c, 3, argv, l) == 0
                        ? raw_next(&c, 5000, &bytes, &blen) : NULL;
    free(bytes);
    RT_CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
      drop(r);
      break;
    }
    if (r->integer != rl_slot_of(keys[i], lens[i]) && bad++ < 5)
      fprintf(stderr, "  key #%zu: CLUSTER KEYSLOT %lld, rl_slot_of %d\n", i,
              r->integer, rl_slot_of(keys[i], lens[i]));
    void *more = realloc(slots_seen, (nslots_seen + 1) * sizeof *slots_seen);
    if (more) {
      slots_seen = more;
      slots_seen[nslots_seen].key = malloc(lens[i] + 1);
      memcpy(slots_seen[nslots_seen].key, keys[i], lens[i]);
      slots_seen[nslots_seen].len = lens[i];
      slots_seen[nslots_seen++].slot = (int)r->integer;
    }
    drop(r);
  }
  raw_close(&c);
  rt_note("%zu keys: rl_slot_of disagreed with CLUSTER KEYSLOT on %d",
          nslots_seen, bad);
  RT_CHECK_EQ_INT(bad, 0);
  RT_CHECK_EQ_INT(nslots_seen, n);
}

/* A cluster nobody has written to. */
static void test_fresh(void) {
  RT_REQUIRE(up);
  state s;
  ask_state("fresh", C.node[0].port, &s);
  rt_state v = view_of(&s);
  rt_check_fresh(&v);
  state_free(&s);
}

/* One acknowledged write per shard, then SLOTS lists the replicas. */
static void test_steady(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  for (int i = 0; i < 3; i++) {
    char key[32];
    RT_REQUIRE(key_on(p[i], "w", key, sizeof key) >= 0);
    drop(rt_redis_cmd(&C.node[p[i]], "SET %s 1", key));
    drop(rt_redis_cmd(&C.node[p[i]], "WAIT 1 2000"));
  }
  uint64_t t0 = rt_now_ms();
  int listed = 0;
  while (listed != 3 && rt_now_ms() - t0 < 15000) {
    redisReply *r = rt_redis_cmd(&C.node[0], "CLUSTER SLOTS");
    listed = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
      listed += r->element[i]->elements == 4;
    drop(r);
    if (listed != 3) rt_sleep_ms(100);
  }
  RT_CHECK_EQ_INT(listed, 3);
  ask_state("steady", C.node[0].port, &st_steady);
  rt_state v = view_of(&st_steady);
  rt_check_steady(&v);
}

/* MOVED, CROSSSLOT, the non-local script key, CLUSTERDOWN for a slot
 * nobody serves. */
static void test_errors(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  char k0[32], k0b[32], k1[32], port[16];
  int s0 = key_on(p[0], "e", k0, sizeof k0);
  RT_REQUIRE(s0 >= 0 && key_on(p[1], "e", k1, sizeof k1) >= 0);
  /* A second key of p[0] in another slot. */
  int s0b = -1;
  for (int n = 0; n < 5000 && (s0b < 0 || s0b == s0); n++) {
    snprintf(k0b, sizeof k0b, "f:%d", n);
    s0b = rt_cluster_owner(&C, rl_slot_of_str(k0b)) == p[0]
              ? rl_slot_of_str(k0b) : -1;
  }
  RT_REQUIRE(s0b >= 0 && s0b != s0);

  redisReply *r = ask("err.moved", C.node[p[1]].port, "GET", k0, NULL);
  rt_check_moved(r, s0, "127.0.0.1", C.node[p[0]].port);
  drop(r);
  keep_int("err.moved.slot", s0);
  keep_int("err.moved.port", C.node[p[0]].port);

  r = ask("err.crossslot", C.node[p[0]].port, "MSET", k0, "1", k0b, "2", NULL);
  rt_check_kind(r, RL_REPLY_CROSSSLOT);
  drop(r);

  r = ask("err.nonlocal", C.node[p[0]].port, "EVAL",
          "#!lua flags=allow-cross-slot-keys\n"
          "redis.call('set',ARGV[1],'x') return redis.call('set',ARGV[2],'y')",
          "0", k0, k1, NULL);
  rt_check_kind(r, RL_REPLY_NONLOCAL);
  drop(r);

  /* A batch over two slots of this node and one key of another: the
   * other key is answered with the error, and the write after it is
   * done. */
  drop(ask(NULL, C.node[p[0]].port, "SET", k0, "1", NULL));
  drop(ask(NULL, C.node[p[0]].port, "SET", k0b, "1", NULL));
  r = ask("script.pcall_batch", C.node[p[0]].port, "EVAL", batch_script, "0",
          k0, k1, k0b, NULL);
  rt_check_pcall_batch(r, "1N1");
  drop(r);

  snprintf(port, sizeof port, "%d", s0);
  drop(ask(NULL, C.node[p[0]].port, "CLUSTER", "DELSLOTS", port, NULL));
  r = ask("err.clusterdown_unserved", C.node[p[0]].port, "GET", k0, NULL);
  rl_redirect rd;
  RT_CHECK_EQ_INT(rl_redirect_classify(r, &rd), RL_REPLY_CLUSTERDOWN);
  RT_CHECK_EQ_INT(rd.unserved, 1);
  drop(r);
  drop(ask(NULL, C.node[p[0]].port, "CLUSTER", "ADDSLOTS", port, NULL));
  RT_CHECK(rt_cluster_wait_settled(&C, 30000) == 0);
}

/* A slot in migration from p[0] to p[1]: one of its two keys moved. */
static void test_migration(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int src = p[0], dst = p[1];
  char tag[32], a[48], b[48], port[16];
  int slot = key_on(src, "m", tag, sizeof tag);
  RT_REQUIRE(slot >= 0);
  snprintf(a, sizeof a, "{%s}:a", tag);
  snprintf(b, sizeof b, "{%s}:b", tag);
  drop(rt_redis_cmd(&C.node[src], "SET %s 1", a));
  drop(rt_redis_cmd(&C.node[src], "SET %s 2", b));
  rt_migration m;
  RT_REQUIRE(rt_cluster_migrate_begin(&C, slot, dst, &m) == 0);
  keep_int("migration.slot", slot);
  keep_int("migration.from_port", C.node[src].port);
  keep_int("migration.to_port", C.node[dst].port);

  state s;
  ask_state("migrating", C.node[src].port, &s);
  rt_state v = view_of(&s);
  rt_check_migrating(&v, slot, C.node[src].port, C.node[dst].port);
  state_free(&s);

  snprintf(port, sizeof port, "%d", C.node[dst].port);
  drop(ask(NULL, C.node[src].port, "MIGRATE", "127.0.0.1", port, "", "0",
           "5000", "KEYS", a, NULL));
  redisReply *r = ask("err.ask", C.node[src].port, "GET", a, NULL);
  rt_check_ask(r, slot, C.node[dst].port);
  drop(r);
  /* The batch on the source: the key that left is not here, the one
   * still here is renewed. */
  r = ask("script.pcall_migrating", C.node[src].port, "EVAL", batch_script,
          "0", a, b, NULL);
  rt_check_pcall_batch(r, "N1");
  drop(r);
  r = ask("err.tryagain", C.node[src].port, "MGET", a, b, NULL);
  rt_check_kind(r, RL_REPLY_TRYAGAIN);
  drop(r);
  /* The target, without ASKING, sends the client back. */
  r = ask("err.moved_by_target", C.node[dst].port, "GET", a, NULL);
  rt_check_moved(r, slot, "127.0.0.1", C.node[src].port);
  drop(r);

  while (rt_cluster_migrate_keys(&C, &m, 100) > 0) {
  }
  RT_REQUIRE(rt_cluster_migrate_finish(&C, &m) == 0);
  ask_state("migrated", C.node[src].port, &st_migrated);
  rt_state before = view_of(&st_steady), after = view_of(&st_migrated);
  rt_check_migrated(&before, &after, slot, C.node[src].port,
                    C.node[dst].port);
}

/* CLUSTER FAILOVER on the replica of p[2]. */
static void test_failover(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int old = p[2], rep = rt_cluster_replica_of(&C, old);
  RT_REQUIRE(rep >= 0);
  RT_REQUIRE(rt_cluster_failover(&C, rep) == 0);
  keep_int("failover.old_port", C.node[old].port);
  keep_int("failover.new_port", C.node[rep].port);
  state s;
  ask_state("failover", C.node[p[0]].port, &s);
  rt_state before = view_of(&st_migrated), after = view_of(&s);
  rt_check_failover(&before, &after, C.node[old].port, C.node[rep].port);
  state_free(&st_migrated);
  st_migrated = s; /* the state before the next test */
}

/* SIGKILL of a primary: CLUSTERDOWN everywhere for a while, then its
 * replica serves its slots and SHARDS still lists it, failed. */
static void test_killed(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int bystander = p[0], victim = p[1];
  int heir = rt_cluster_replica_of(&C, victim);
  RT_REQUIRE(heir >= 0);
  char own[32];
  RT_REQUIRE(key_on(bystander, "kd", own, sizeof own) >= 0);
  int dead_port = C.node[victim].port;
  RT_REQUIRE(rt_redis_kill(&C.node[victim]) == 0);
  /* Poll the bystander for its own key until it says CLUSTERDOWN. */
  uint64_t t0 = rt_now_ms();
  int down = 0;
  while (!down && rt_now_ms() - t0 < 20000) {
    redisReply *r = rt_redis_cmd(&C.node[bystander], "GET %s", own);
    down = r && r->type == REDIS_REPLY_ERROR &&
           strncmp(r->str, "CLUSTERDOWN", 11) == 0;
    drop(r);
    if (!down) rt_sleep_ms(20);
  }
  RT_CHECK(down);
  if (down) {
    /* The window may close between two commands: keep only what came
     * while it was open. */
    rl_redirect rd;
    redisReply *r = ask("err.clusterdown", C.node[bystander].port, "GET",
                        own, NULL);
    if (rl_redirect_classify(r, &rd) == RL_REPLY_CLUSTERDOWN)
      RT_CHECK_EQ_INT(rd.unserved, 0);
    else
      unkeep("err.clusterdown");
    drop(r);
    /* A batch without declared keys still runs; its calls fail. */
    r = ask("script.pcall_down", C.node[bystander].port, "EVAL",
            batch_script, "0", own, NULL);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_STRING)
      RT_CHECK_EQ_INT(rl_redirect_parse(r->element[0]->str,
                                        r->element[0]->len, &rd),
                      RL_REPLY_CLUSTERDOWN);
    else
      unkeep("script.pcall_down");
    drop(r);
  }
  uint64_t t1 = rt_now_ms();
  while (rt_cluster_is_primary(&C, heir) != 1 && rt_now_ms() - t1 < 30000)
    rt_sleep_ms(100);
  RT_REQUIRE(rt_cluster_is_primary(&C, heir) == 1);
  RT_REQUIRE(rt_cluster_wait_settled(&C, 30000) == 0);
  /* Every node must have marked it failed before SHARDS says so. */
  keep_int("killed.dead_port", dead_port);
  keep_int("killed.promoted_port", C.node[heir].port);
  state s;
  ask_state("killed", C.node[bystander].port, &s);
  rt_state before = view_of(&st_migrated), after = view_of(&s);
  rt_check_killed(&before, &after, dead_port, C.node[heir].port);
  state_free(&s);
  state_free(&st_migrated);
  RT_CHECK(rt_cluster_restart(&C, victim) == 0);
}

/* Whether node a's SHARDS shows a hostname for n nodes. */
static int hostnames_seen(int a) {
  redisReply *r = rt_redis_cmd(&C.node[a], "CLUSTER SHARDS");
  int n = 0;
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
    const redisReply *sh = r->element[i];
    for (size_t j = 0; j + 1 < sh->elements; j += 2) {
      if (strcmp(sh->element[j]->str, "nodes") != 0) continue;
      const redisReply *nodes = sh->element[j + 1];
      for (size_t k = 0; k < nodes->elements; k++) {
        const redisReply *node = nodes->element[k];
        for (size_t f = 0; f + 1 < node->elements; f += 2)
          n += strcmp(node->element[f]->str, "hostname") == 0;
      }
    }
  }
  drop(r);
  return n;
}

static void set_all(const char *param, const char *value_or_null,
                    int except) {
  char value[64];
  for (int i = 0; i < RT_CLUSTER_NODES; i++) {
    if (i == except || C.node[i].pid <= 0) continue;
    if (value_or_null == NULL)
      snprintf(value, sizeof value, "node-%d.rlock.test", C.node[i].port);
    else
      snprintf(value, sizeof value, "%s", value_or_null);
    drop(ask(NULL, C.node[i].port, "CONFIG", "SET", param, value, NULL));
  }
}

/* cluster-preferred-endpoint-type hostname and unknown-endpoint: what
 * SHARDS, SLOTS and MOVED give then. Node a has no hostname. */
static void test_endpoints(void) {
  RT_REQUIRE(up);
  int p[RT_CLUSTER_NODES];
  RT_REQUIRE(rt_cluster_primaries(&C, p) == 3);
  int a = p[0], b = p[1];
  char ka[32], kb[32];
  int sa = key_on(a, "ep", ka, sizeof ka), sb = key_on(b, "ep", kb, sizeof kb);
  RT_REQUIRE(sa >= 0 && sb >= 0);
  set_all("cluster-announce-hostname", NULL, a);
  set_all("cluster-preferred-endpoint-type", "hostname", -1);
  uint64_t t0 = rt_now_ms();
  while (hostnames_seen(a) < RT_CLUSTER_NODES - 1 && rt_now_ms() - t0 < 20000)
    rt_sleep_ms(100);
  RT_CHECK_EQ_INT(hostnames_seen(a), RT_CLUSTER_NODES - 1);
  keep_int("endpoints.plain_port", C.node[a].port);

  state s;
  ask_state("hostname", C.node[a].port, &s);
  rt_state v = view_of(&s);
  rt_check_hostnames(&v, C.node[a].port);
  state_free(&s);
  char want[64];
  snprintf(want, sizeof want, "node-%d.rlock.test", C.node[b].port);
  redisReply *r = ask("hostname.moved", C.node[a].port, "GET", kb, NULL);
  rt_check_moved(r, sb, want, C.node[b].port);
  drop(r);
  keep_int("hostname.moved.slot", sb);
  keep_int("hostname.moved.port", C.node[b].port);
  r = ask("hostname.moved_unknown", C.node[b].port, "GET", ka, NULL);
  rt_check_moved(r, sa, "?", C.node[a].port);
  drop(r);
  keep_int("hostname.moved_unknown.slot", sa);
  keep_int("hostname.moved_unknown.port", C.node[a].port);

  set_all("cluster-preferred-endpoint-type", "unknown-endpoint", -1);
  ask_state("unknown", C.node[a].port, &s);
  v = view_of(&s);
  rt_check_unknown_endpoint(&v);
  state_free(&s);
  r = ask("unknown.moved", C.node[a].port, "GET", kb, NULL);
  rt_check_moved(r, sb, "", C.node[b].port);
  drop(r);
  keep_int("unknown.moved.slot", sb);
  keep_int("unknown.moved.port", C.node[b].port);

  set_all("cluster-preferred-endpoint-type", "ip", -1);
  set_all("cluster-announce-hostname", "", -1);
}

/* Part 3: Sentinel. */

static void test_sentinel(void) {
  if (up) rt_cluster_stop(&C);
  up = 0;
  static rt_sentinel S;
  RT_REQUIRE(rt_sentinel_start(&S, NULL) == 0);
  int m = rt_sentinel_master(&S);
  RT_REQUIRE(m >= 0);
  int r1 = (m + 1) % RT_SENTINEL_DATA, r2 = (m + 2) % RT_SENTINEL_DATA;
  int mp = S.data[m].port, sp = S.sentinel[0].port;
  drop(rt_redis_cmd(&S.data[m], "SET before 1"));
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[m], "WAIT 2 5000"), 2);
  keep_int("sentinel.master_port", mp);
  keep_int("sentinel.replica_port_a", S.data[r1].port);
  keep_int("sentinel.replica_port_b", S.data[r2].port);

  redisReply *r = ask("sentinel.addr", sp, "SENTINEL",
                      "GET-MASTER-ADDR-BY-NAME", RT_SENTINEL_NAME, NULL);
  rt_check_addr(r, mp);
  drop(r);
  r = ask("sentinel.addr_unknown", sp, "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
          "no-such-name", NULL);
  rt_check_addr_unknown(r);
  drop(r);
  r = ask("role.master", mp, "ROLE", NULL);
  rt_check_role_master(r, S.data[r1].port, S.data[r2].port);
  drop(r);
  r = ask("role.replica", S.data[r1].port, "ROLE", NULL);
  rt_check_role_replica(r, mp);
  drop(r);
  r = ask("role.sentinel", sp, "ROLE", NULL);
  rt_check_role_sentinel(r, RT_SENTINEL_NAME);
  drop(r);
  r = ask("err.readonly", S.data[r1].port, "SET", "k", "v", NULL);
  rt_check_kind(r, RL_REPLY_READONLY);
  drop(r);
  r = ask("err.readonly_script", S.data[r1].port, "EVAL",
          "return redis.call('set',KEYS[1],'v')", "1", "k", NULL);
  rt_check_kind(r, RL_REPLY_READONLY);
  drop(r);
  r = ask("err.unknown_command", sp, "GET", "x", NULL);
  rt_check_kind(r, RL_REPLY_ERROR);
  drop(r);

  /* WAIT on the connection that wrote: more replicas than exist, so it
   * waits out its timeout and says how many acknowledged. */
  raw c;
  RT_REQUIRE(raw_open(&c, mp) == 0);
  const char *set[] = {"SET", "w", "1"}, *wait[] = {"WAIT", "3", "300"};
  size_t setl[] = {3, 1, 1}, waitl[] = {4, 1, 3};
  char *bytes = NULL;
  size_t len = 0;
  RT_CHECK(raw_send(&c, 3, set, setl) == 0);
  drop(raw_next(&c, 5000, &bytes, &len));
  free(bytes);
  RT_CHECK(raw_send(&c, 3, wait, waitl) == 0);
  r = raw_next(&c, 5000, &bytes, &len);
  raw_close(&c);
  rt_note("%d> SET w 1; WAIT 3 300 => %lld   [kept]", mp,
          r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1);
  rt_check_wait(r, 2);
  if (r) keep_reply("wait.reply", mp, "SET w 1; WAIT 3 300", bytes, len);
  drop(r);

  /* +switch-master, on a subscription made before the master dies. */
  char buf[300];
  RT_REQUIRE(raw_open(&c, sp) == 0);
  const char *sub[] = {"SUBSCRIBE", "+switch-master"};
  size_t subl[] = {9, 14};
  RT_CHECK(raw_send(&c, 2, sub, subl) == 0);
  r = raw_next(&c, 5000, &bytes, &len);
  rt_note("%d> SUBSCRIBE +switch-master => %s   [kept]", sp,
          rt_show(r, buf, sizeof buf));
  rt_check_subscribed(r);
  if (r) keep_reply("sentinel.subscribed", sp, "SUBSCRIBE +switch-master",
                    bytes, len);
  drop(r);
  int n = rt_sentinel_kill_master(&S);
  RT_CHECK(n >= 0);
  r = raw_next(&c, 30000, &bytes, &len);
  raw_close(&c);
  rt_note("%d> (subscribed) => %s   [kept]", sp, rt_show(r, buf, sizeof buf));
  if (n >= 0) {
    rt_check_switch(r, RT_SENTINEL_NAME, mp, S.data[n].port);
    keep_int("switch.old_port", mp);
    keep_int("switch.new_port", S.data[n].port);
  }
  if (r) keep_reply("sentinel.switch", sp, "(message on +switch-master)",
                    bytes, len);
  drop(r);
  rt_sentinel_stop(&S);
}

/* Part 4: the C file. */

/* A C string literal of the bytes, broken after a "\r\n" once a line
 * is long. */
static void put_bytes(FILE *f, const char *s, size_t len) {
  int col = 5;
  fputs("\"", f);
  for (size_t i = 0; i < len; i++, col++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '\r') fputs("\\r", f);
    else if (ch == '\n' && col > 60 && i + 1 < len) {
      fputs("\\n\"\n    \"", f);
      col = 5;
    } else if (ch == '\n') fputs("\\n", f);
    else if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch == '?') fputs("\\?", f); /* no trigraphs */
    else if (ch >= 0x20 && ch < 0x7f) fputc(ch, f);
    else fprintf(f, "\\%03o", ch);
  }
  fputs("\"", f);
}

static int write_capture(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  fprintf(f,
          "/*\n"
          " * Replies of real servers (%s), captured on %s\n"
          " * by test/test_topology_replies.c with RT_CAPTURE_OUT=this file, from\n"
          " * the harness's 3+3 cluster and Sentinel setup on 127.0.0.1: the exact\n"
          " * bytes each server sent, read from a plain socket. Generated: to\n"
          " * refresh it, run that test again rather than edit it. The unit tests\n"
          " * read it through topology_fixture.h.\n"
          " */\n"
          "#include \"topology_fixture.h\"\n\n",
          version, date);
  fprintf(f, "const char rt_captured_from[] = \"%s, %s\";\n\n", version, date);
  fputs("const rt_capture rt_captures[] = {\n", f);
  for (size_t i = 0; i < nkeep; i++) {
    fprintf(f, "  {\"%s\", %d, ", keep[i].name, keep[i].port);
    put_bytes(f, keep[i].command, strlen(keep[i].command));
    fputs(",\n    ", f);
    put_bytes(f, keep[i].bytes, keep[i].len);
    fprintf(f, ",\n    %zu},\n", keep[i].len);
  }
  fputs("};\nconst size_t rt_ncaptures = sizeof rt_captures / sizeof rt_captures[0];\n\n", f);
  fputs("const rt_capture_int rt_capture_ints[] = {\n", f);
  for (size_t i = 0; i < nints; i++)
    fprintf(f, "  {\"%s\", %lld},\n", ints[i].name, ints[i].value);
  fputs("};\nconst size_t rt_ncapture_ints =\n    sizeof rt_capture_ints / sizeof rt_capture_ints[0];\n\n", f);
  fputs("/* CLUSTER KEYSLOT of each key. */\nconst rt_keyslot_case rt_keyslots[] = {\n", f);
  for (size_t i = 0; i < nslots_seen; i++) {
    fputs("  {", f);
    put_bytes(f, slots_seen[i].key, slots_seen[i].len);
    fprintf(f, ", %zu, %d},\n", slots_seen[i].len, slots_seen[i].slot);
  }
  fputs("};\nconst size_t rt_nkeyslots = sizeof rt_keyslots / sizeof rt_keyslots[0];\n", f);
  return fclose(f);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"keyslots", test_keyslots},   {"fresh", test_fresh},
      {"steady", test_steady},       {"errors", test_errors},
      {"migration", test_migration}, {"failover", test_failover},
      {"killed", test_killed},       {"endpoints", test_endpoints},
      {"sentinel", test_sentinel},
  };
  up = rt_cluster_start(&C, NULL) == 0;
  redisReply *v = rt_redis_cmd(&C.node[0], "INFO server");
  if (v && v->type == REDIS_REPLY_STRING) {
    char *at = strstr(v->str, "redis_version:");
    if (at) snprintf(version, sizeof version, "%.*s",
                     (int)strcspn(at, "\r\n"), at);
  }
  drop(v);
  rt_note("%s", version);
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  if (up) rt_cluster_stop(&C);
  const char *out = getenv("RT_CAPTURE_OUT");
  if (out && *out) {
    if (rc != 0 || argc > 1)
      fprintf(stderr, "not writing %s: only a full run that passed is kept\n",
              out);
    else if (write_capture(out) != 0)
      fprintf(stderr, "could not write %s\n", out), rc = 1;
    else
      fprintf(stderr, "wrote %zu replies to %s\n", nkeep, out);
  }
  return rc;
}
