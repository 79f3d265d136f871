/*
 * Script-level tests of the lock family (lib/lua/family_scripts.h): every
 * script is loaded into real redis-server processes and called with
 * EVALSHA, as the C layer will call it, and each rule the scripts promise
 * is checked against what Redis then holds: FIFO order and wake-ups of the
 * fair lock, the skip of a dead waiter, leaving the queue, readers sharing
 * and writers excluding, writer preference, per-reader expiry, upgrade
 * refusal, permits never above the limit, expired permits coming back,
 * over-release and limit disagreement refused, the latch's states and
 * TTLs, several locks all or none, deadlines and fencing floors.
 *
 * The C layer does not exist yet, so the tests play the clients: owners
 * are strings ("cA:1" is owner 1 of client cA), N masters are driven one
 * by one to produce interleavings a real client would only hit by chance,
 * and time passes for real (leases of a second, sleeps that outlast them).
 * Every test ends by checking that each key it left has a TTL.
 */
#include <hiredis/hiredis.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_scripts.h"
#include "harness.h"

#define NSERVERS 3
static rt_redis servers[NSERVERS];
static redisContext *conns[NSERVERS];
static redisReply *last; /* the reply of the latest call, freed by the next */

/* --- calling scripts ------------------------------------------------------ */

/* A connection of our own per server (the harness's rt_redis_cmd has no
 * argv form), with every family script loaded and its SHA checked. */
static redisContext *conn(int srv) {
  if (conns[srv] != NULL) return conns[srv];
  struct timeval tv = {5, 0};
  redisContext *c =
      redisConnectWithTimeout("127.0.0.1", servers[srv].port, tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "  cannot connect to server %d\n", srv);
    if (c) redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  for (int id = 0; id < RL_FAM_SCRIPT_COUNT; id++) {
    const char *body = rl_fam_script_body((rl_fam_script_id)id);
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", body);
    int ok = r && r->type == REDIS_REPLY_STRING &&
             strcmp(r->str, rl_fam_script_sha((rl_fam_script_id)id)) == 0;
    if (!ok)
      fprintf(stderr, "  script %s did not load: %s\n",
              rl_fam_script_name((rl_fam_script_id)id),
              r && r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
    RT_CHECK(ok);
    if (r) freeReplyObject(r);
  }
  conns[srv] = c;
  return c;
}

/* EVALSHA of a script on one server; keys and args are NULL-terminated. */
static redisReply *call(int srv, rl_fam_script_id id, const char *const *keys,
                        const char *const *args) {
  const char *argv[80];
  char nk[16];
  int n = 0, k = 0;
  if (last) freeReplyObject(last);
  last = NULL;
  argv[n++] = "EVALSHA";
  argv[n++] = rl_fam_script_sha(id);
  argv[n++] = nk;
  for (; keys[k] != NULL && n < 78; k++) argv[n++] = keys[k];
  snprintf(nk, sizeof nk, "%d", k);
  for (int a = 0; args[a] != NULL && n < 80; a++) argv[n++] = args[a];
  redisContext *c = conn(srv);
  if (c == NULL) return NULL;
  last = redisCommandArgv(c, n, argv, NULL);
  if (last && last->type == REDIS_REPLY_ERROR)
    fprintf(stderr, "  %s: error reply: %s\n", rl_fam_script_name(id),
            last->str);
  return last;
}

#define CALL(srv, id, keys, ...) \
  call(srv, id, keys, (const char *const[]){__VA_ARGS__, NULL})
#define NOARGS NULL

/* Element i of the latest array reply, or LLONG_MIN. */
static long long at(size_t i) {
  if (last == NULL || last->type != REDIS_REPLY_ARRAY || i >= last->elements)
    return LLONG_MIN;
  const redisReply *e = last->element[i];
  return e->type == REDIS_REPLY_INTEGER ? e->integer : LLONG_MIN;
}

/* Character i of the latest string reply (lease_renew answers one '1' or
 * '0' per pair) as 1 or 0, or LLONG_MIN. */
static long long ch(size_t i) {
  if (last == NULL || last->type != REDIS_REPLY_STRING || i >= last->len ||
      (last->str[i] != '0' && last->str[i] != '1'))
    return LLONG_MIN;
  return last->str[i] - '0';
}

static size_t len(void) {
  return last && last->type == REDIS_REPLY_ARRAY ? last->elements : 0;
}

/* The latest reply as an integer, or LLONG_MIN. */
static long long ival(void) {
  return last && last->type == REDIS_REPLY_INTEGER ? last->integer
                                                    : LLONG_MIN;
}

/* A decimal string that stays valid for the next 64 calls. */
static const char *num(long long v) {
  static char ring[64][24];
  static int next;
  char *s = ring[next++ & 63];
  snprintf(s, 24, "%lld", v);
  return s;
}

/* A plain command on our connection; the reply is kept as `last`. */
static redisReply *cmd(int srv, const char *fmt, const char *arg) {
  if (last) freeReplyObject(last);
  redisContext *c = conn(srv);
  last = c ? redisCommand(c, fmt, arg) : NULL;
  return last;
}

static long long cmd_int(int srv, const char *fmt, const char *arg) {
  cmd(srv, fmt, arg);
  return ival();
}

/* The server's clock in microseconds. */
static long long server_us(int srv) {
  cmd(srv, "TIME", "");
  if (len() != 2) return 0;
  return atoll(last->element[0]->str) * 1000000LL +
         atoll(last->element[1]->str);
}

static void flush_all(void) {
  for (int i = 0; i < NSERVERS; i++) {
    redisContext *c = conn(i);
    if (c) freeReplyObject(redisCommand(c, "FLUSHALL"));
  }
}

/* --- keys --------------------------------------------------------------- */

/* One kind's keys for one name, NULL-terminated in v. */
typedef struct keyset {
  char buf[6][96];
  const char *v[7];
} keyset;

static void keys_of(keyset *k, const char *name, const char *const *sfx) {
  int i = 0;
  for (; sfx[i] != NULL && i < 6; i++) {
    snprintf(k->buf[i], sizeof k->buf[i], "fam:{%s}%s", name, sfx[i]);
    k->v[i] = k->buf[i];
  }
  k->v[i] = NULL;
}

static const char *const FAIR[] = {"", ":fence", ":q", ":qt", NULL};
static const char *const RW[] = {":w", ":r", ":rc", ":wq", ":w:fence", NULL};
static const char *const SEM[] = {":s", ":s:t", ":s:fence", NULL};
static const char *const LATCH[] = {":l", ":l:d", NULL};

/* How many keys the name has on a server. */
static long long key_count(int srv, const char *name) {
  char pat[128];
  snprintf(pat, sizeof pat, "fam:{%s}*", name);
  cmd(srv, "KEYS %s", pat);
  return last && last->type == REDIS_REPLY_ARRAY ? (long long)last->elements
                                                  : -1;
}

/* "A key without a TTL is a bug": fails for every key of the name, on
 * every server, whose PTTL is not positive. */
static void check_ttls_at(const char *name, int line) {
  char pat[128];
  snprintf(pat, sizeof pat, "fam:{%s}*", name);
  for (int s = 0; s < NSERVERS; s++) {
    redisContext *c = conn(s);
    if (c == NULL) continue;
    redisReply *ks = redisCommand(c, "KEYS %s", pat);
    for (size_t i = 0; ks && i < ks->elements; i++) {
      redisReply *p = redisCommand(c, "PTTL %s", ks->element[i]->str);
      if (p == NULL || p->type != REDIS_REPLY_INTEGER || p->integer <= 0) {
        fprintf(stderr, "  key %s on server %d: PTTL %lld\n",
                ks->element[i]->str, s, p ? p->integer : -99);
        rt__fail(__FILE__, line, "every key has a TTL");
      }
      if (p) freeReplyObject(p);
    }
    if (ks) freeReplyObject(ks);
  }
}
#define CHECK_TTLS(name) check_ttls_at(name, __LINE__)

/* --- pub/sub ------------------------------------------------------------ */

/* A connection subscribed to a channel pattern, confirmed. */
static redisContext *sub_open(int srv, const char *pattern) {
  struct timeval tv = {5, 0};
  redisContext *c =
      redisConnectWithTimeout("127.0.0.1", servers[srv].port, tv);
  if (c == NULL || c->err) {
    if (c) redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  redisReply *r = redisCommand(c, "PSUBSCRIBE %s", pattern);
  int ok = r && r->type == REDIS_REPLY_ARRAY;
  if (r) freeReplyObject(r);
  if (!ok) {
    redisFree(c);
    return NULL;
  }
  return c;
}

/* The next message within ms: 1 with its channel and payload, 0 if none
 * came, -1 on a connection error. */
static int sub_next(redisContext *c, int ms, char *chan, size_t chanlen,
                    char *msg, size_t msglen) {
  void *rep = NULL;
  for (;;) {
    if (redisGetReplyFromReader(c, &rep) != REDIS_OK) return -1;
    if (rep != NULL) break;
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return 0;
    if (redisBufferRead(c) != REDIS_OK) return -1;
  }
  redisReply *r = rep;
  int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 4;
  if (ok) {
    snprintf(chan, chanlen, "%s", r->element[2]->str);
    snprintf(msg, msglen, "%s", r->element[3]->str);
  }
  freeReplyObject(r);
  return ok ? 1 : -1;
}

/* 1 if the next message within ms is exactly (chan, msg). */
static int expect_msg(redisContext *c, const char *chan, const char *msg) {
  char ch[128], m[128];
  if (sub_next(c, 2000, ch, sizeof ch, m, sizeof m) != 1) {
    fprintf(stderr, "  no message (wanted %s %s)\n", chan, msg);
    return 0;
  }
  if (strcmp(ch, chan) != 0 || (msg != NULL && strcmp(m, msg) != 0)) {
    fprintf(stderr, "  message %s %s (wanted %s %s)\n", ch, m, chan,
            msg ? msg : "*");
    return 0;
  }
  return 1;
}

/* 1 if no message comes within ms. */
static int expect_quiet(redisContext *c, int ms) {
  char ch[128], m[128];
  int got = sub_next(c, ms, ch, sizeof ch, m, sizeof m);
  if (got == 1) fprintf(stderr, "  unexpected message %s %s\n", ch, m);
  return got == 0;
}

/* --- fair lock ---------------------------------------------------------- */

#define LONG "10000" /* a lease or liveness bound no test outlives */
/* A lease or liveness bound that a test lets run out: long enough that the
 * calls made before it must run out take far less, even under valgrind on
 * a loaded machine; PAST_SHORT_MS is a sleep that surely outlasts it. */
#define SHORT "1000"
#define SHORT_MS 1000
#define PAST_SHORT_MS 1400

/* A fair attempt: lease, owner, count 1 (a first acquisition), floor 0,
 * ticket, skip, no deadline (the last argument, as the connection appends
 * it). */
static void fair_try(int srv, const keyset *k, const char *owner,
                     long long ticket, const char *skip) {
  CALL(srv, RL_FAM_FAIR_ACQUIRE, k->v, LONG, owner, "1", "0", num(ticket),
       skip, "0");
}

static void test_scripts_load(void) {
  for (int s = 0; s < NSERVERS; s++) RT_REQUIRE(conn(s) != NULL);
  /* Each SHA names its body (the shebang twins are distinct scripts). */
  RT_CHECK(strcmp(rl_fam_script_sha(RL_FAM_MULTI_ACQUIRE),
                  rl_fam_script_sha(RL_FAM_MULTI_ACQUIRE_XSLOT)) != 0);
  RT_CHECK(strncmp(rl_fam_script_body(RL_FAM_MULTI_UNDO_XSLOT), "#!lua", 5) ==
           0);
  cmd(0, "SCRIPT EXISTS %s", rl_fam_script_sha(RL_FAM_SEM_ACQUIRE));
  RT_CHECK(len() == 1 && last->element[0]->integer == 1);
}

static void test_fair_fifo_wakes_next(void) {
  flush_all();
  keyset k;
  keys_of(&k, "fifo", FAIR);
  fair_try(0, &k, "cA:1", 10, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(2), 1);
  RT_CHECK_EQ_INT(at(3), 0);  /* the owner's field was not there */
  RT_CHECK_EQ_INT(at(4), 10); /* a waiting attempt has a place at once */
  long long tok_a = at(1);
  /* B, C, D arrive in this order while A holds. */
  const char *owners[] = {"cB:1", "cC:1", "cD:1"};
  for (int i = 0; i < 3; i++) {
    fair_try(0, &k, owners[i], 100 + i, LONG);
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
    RT_CHECK(at(1) > 0 && at(1) <= 10000); /* A's PTTL */
    RT_CHECK_EQ_INT(at(2), i);             /* place in the queue */
  }
  redisContext *sub = sub_open(0, "fam:{fifo}:ch*");
  RT_REQUIRE(sub != NULL);
  long long tok_prev = tok_a;
  for (int i = 0; i < 3; i++) {
    const char *holder = i == 0 ? "cA:1" : owners[i - 1];
    CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, holder);
    RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
    /* Exactly the next waiter is told, on its own channel. */
    char chan[64];
    snprintf(chan, sizeof chan, "fam:{fifo}:ch:%s", owners[i]);
    RT_CHECK(expect_msg(sub, chan, owners[i]));
    RT_CHECK(expect_quiet(sub, 100));
    /* Those behind it and a newcomer (single attempt) do not jump. */
    for (int j = i + 1; j < 3; j++) {
      fair_try(0, &k, owners[j], 100 + j, LONG);
      RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
      RT_CHECK_EQ_INT(at(1), -1);    /* the lock is free */
      RT_CHECK_EQ_INT(at(2), j - i); /* still behind */
      RT_CHECK(at(3) > 0 && at(3) <= 10000);
    }
    fair_try(0, &k, "cE:1", 999, "0");
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
    RT_CHECK_EQ_INT(at(2), -1); /* a single attempt never queues */
    fair_try(0, &k, owners[i], 100 + i, LONG);
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
    RT_CHECK_EQ_INT(at(4), 100 + i); /* the place it left */
    RT_CHECK(at(1) > tok_prev);      /* tokens grow holder to holder */
    tok_prev = at(1);
  }
  /* The last holder's unlock, with nobody queued, goes to plain waiters. */
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cD:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK(expect_msg(sub, "fam:{fifo}:ch", "0"));
  redisFree(sub);
  RT_CHECK_EQ_INT(key_count(0, "fifo"), 1); /* only the fencing counter */
  CHECK_TTLS("fifo");
}

/* With N masters every queue orders waiters by their ticket, whatever
 * order their requests reached each master in; a master that missed a
 * waiter gets it back at its place; an undone grant gives the place back. */
static void test_fair_quorum_order(void) {
  flush_all();
  keyset k;
  keys_of(&k, "fq", FAIR);
  for (int s = 0; s < 3; s++) {
    fair_try(s, &k, "cH:1", 1, LONG);
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  }
  /* y (ticket 200) reaches every master before x (ticket 100) does, and
   * x never reaches master 1 (down, say). */
  for (int s = 0; s < 3; s++) {
    fair_try(s, &k, "cY:1", 200, LONG);
    RT_CHECK_EQ_INT(at(2), 0);
  }
  fair_try(0, &k, "cX:1", 100, LONG);
  RT_CHECK_EQ_INT(at(2), 0); /* in front of y, who came first here */
  fair_try(2, &k, "cX:1", 100, LONG);
  RT_CHECK_EQ_INT(at(2), 0);
  for (int s = 0; s < 3; s++) {
    CALL(s, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cH:1");
    RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  }
  /* y's round: only master 1 (which never saw x) grants it. */
  int granted = 0;
  long long ticket = 0;
  for (int s = 0; s < 3; s++) {
    fair_try(s, &k, "cY:1", 200, LONG);
    if (at(0) == RL_FAM_REPLY_GRANTED) {
      granted++;
      ticket = at(4);
      RT_CHECK_EQ_INT(s, 1);
    }
  }
  RT_CHECK_EQ_INT(granted, 1);
  RT_CHECK_EQ_INT(ticket, 200);
  /* No majority: y undoes its grant and gets its place back. */
  CALL(1, RL_FAM_FAIR_UNDO, k.v, "cY:1", num(ticket), LONG, "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  cmd(1, "ZSCORE fam:{fq}:q %s", "cY:1");
  RT_CHECK(last && last->type == REDIS_REPLY_STRING &&
           strcmp(last->str, "200") == 0);
  RT_CHECK_EQ_INT(cmd_int(1, "EXISTS %s", "fam:{fq}"), 0);
  /* x's next round reaches master 1 too, queues at its place there, and
   * wins everywhere; y is refused everywhere. */
  for (int s = 0; s < 3; s++) {
    fair_try(s, &k, "cX:1", 100, LONG);
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
    RT_CHECK_EQ_INT(at(4), 100);
    fair_try(s, &k, "cY:1", 200, LONG);
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
    RT_CHECK_EQ_INT(at(2), 0);
  }
  for (int s = 0; s < 3; s++) {
    cmd(s, "ZRANGE fam:{fq}:q 0 -1 %s", "WITHSCORES");
    RT_CHECK_EQ_INT(len(), 2); /* only y is left, at place 0 */
  }
  CHECK_TTLS("fq");
}

static void test_fair_dead_waiter_skipped(void) {
  flush_all();
  keyset k;
  keys_of(&k, "skip", FAIR);
  fair_try(0, &k, "cA:1", 1, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  fair_try(0, &k, "cB:1", 100, SHORT); /* B will die */
  RT_CHECK_EQ_INT(at(2), 0);
  fair_try(0, &k, "cC:1", 200, LONG);
  fair_try(0, &k, "cD:1", 300, LONG);
  RT_CHECK_EQ_INT(at(2), 2);
  redisContext *sub = sub_open(0, "fam:{skip}:ch*");
  RT_REQUIRE(sub != NULL);
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cA:1");
  RT_CHECK(expect_msg(sub, "fam:{skip}:ch:cB:1", "cB:1"));
  /* B does not come. C must wait, at most until B may be skipped. */
  fair_try(0, &k, "cC:1", 200, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 1);
  RT_CHECK(at(3) > 0 && at(3) <= SHORT_MS);
  rt_sleep_ms(PAST_SHORT_MS);
  /* D's attempt drops B and tells C, now first, that the lock is free. */
  fair_try(0, &k, "cD:1", 300, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 1);
  RT_CHECK(expect_msg(sub, "fam:{skip}:ch:cC:1", "cC:1"));
  RT_CHECK_EQ_INT(cmd_int(0, "ZSCORE fam:{skip}:qt %s", "cB:1"), LLONG_MIN);
  fair_try(0, &k, "cC:1", 200, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  /* B was only paused: back, it keeps its ticket, so its place. */
  fair_try(0, &k, "cB:1", 100, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 0);
  redisFree(sub);
  CHECK_TTLS("skip");
}

/* A batched touch keeps a waiter alive past its skip bound; a waiter that
 * was dropped is told it must queue again. */
static void test_fair_touch_keeps_waiter(void) {
  flush_all();
  keyset k;
  keys_of(&k, "touch", FAIR);
  fair_try(0, &k, "cA:1", 1, LONG);
  fair_try(0, &k, "cB:1", 100, SHORT);
  fair_try(0, &k, "cC:1", 200, LONG);
  const char *pair[] = {k.v[3], k.v[2], "fam:{gone}:qt", "fam:{gone}:q",
                        NULL};
  CALL(0, RL_FAM_WAITER_TOUCH, pair, LONG, "cB:1", "cZ:1");
  RT_CHECK_EQ_INT(len(), 2);
  RT_CHECK_EQ_INT(at(0), 1);
  RT_CHECK_EQ_INT(at(1), 0);
  rt_sleep_ms(PAST_SHORT_MS);
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cA:1");
  fair_try(0, &k, "cC:1", 200, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY); /* B was not skipped */
  RT_CHECK_EQ_INT(at(2), 1);
  fair_try(0, &k, "cB:1", 100, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("touch");
  CHECK_TTLS("gone");
  RT_CHECK_EQ_INT(key_count(0, "gone"), 0);
}

static void test_fair_leave(void) {
  flush_all();
  keyset k;
  keys_of(&k, "leave", FAIR);
  fair_try(0, &k, "cA:1", 1, LONG);
  fair_try(0, &k, "cB:1", 100, LONG);
  fair_try(0, &k, "cC:1", 200, LONG);
  fair_try(0, &k, "cD:1", 300, LONG);
  CALL(0, RL_FAM_FAIR_LEAVE, k.v, "cC:1"); /* from the middle */
  RT_CHECK_EQ_INT(ival(), 1);
  RT_CHECK_EQ_INT(cmd_int(0, "ZCARD %s", "fam:{leave}:q"), 2);
  RT_CHECK_EQ_INT(cmd_int(0, "ZCARD %s", "fam:{leave}:qt"), 2);
  fair_try(0, &k, "cD:1", 300, LONG);
  RT_CHECK_EQ_INT(at(2), 1);
  redisContext *sub = sub_open(0, "fam:{leave}:ch*");
  RT_REQUIRE(sub != NULL);
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cA:1");
  RT_CHECK(expect_msg(sub, "fam:{leave}:ch:cB:1", "cB:1"));
  /* The first waiter gives up while the lock is free: the next is told. */
  CALL(0, RL_FAM_FAIR_LEAVE, k.v, "cB:1");
  RT_CHECK_EQ_INT(ival(), 1);
  RT_CHECK(expect_msg(sub, "fam:{leave}:ch:cD:1", "cD:1"));
  CALL(0, RL_FAM_FAIR_LEAVE, k.v, "cD:1");
  RT_CHECK_EQ_INT(ival(), 1);
  CALL(0, RL_FAM_FAIR_LEAVE, k.v, "cD:1");
  RT_CHECK_EQ_INT(ival(), 0);
  /* Nothing left behind: the queue's keys are gone. */
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{leave}:q"), 0);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{leave}:qt"), 0);
  RT_CHECK_EQ_INT(key_count(0, "leave"), 1); /* the fencing counter */
  redisFree(sub);
  CHECK_TTLS("leave");
}

/* Force deletes the lock whoever holds it, tells the next waiter, and
 * keeps the queue. */
static void test_fair_force(void) {
  flush_all();
  keyset k;
  keys_of(&k, "ff", FAIR);
  fair_try(0, &k, "cA:1", 1, LONG);
  fair_try(0, &k, "cB:1", 100, LONG);
  redisContext *sub = sub_open(0, "fam:{ff}:ch*");
  RT_REQUIRE(sub != NULL);
  CALL(0, RL_FAM_FAIR_FORCE, k.v, NULL);
  RT_CHECK_EQ_INT(ival(), 1);
  RT_CHECK(expect_msg(sub, "fam:{ff}:ch:cB:1", "cB:1"));
  CALL(0, RL_FAM_FAIR_FORCE, k.v, NULL);
  RT_CHECK_EQ_INT(ival(), 0);
  RT_CHECK(expect_quiet(sub, 50));
  fair_try(0, &k, "cA:1", 1, "0"); /* B is still first */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  fair_try(0, &k, "cB:1", 100, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  redisFree(sub);
  CHECK_TTLS("ff");
}

static void test_fair_reentrant_floor_deadline(void) {
  flush_all();
  keyset k;
  keys_of(&k, "fre", FAIR);
  long long now = server_us(0);
  /* A deadline in the past: refused, and nothing is written. */
  CALL(0, RL_FAM_FAIR_ACQUIRE, k.v, LONG, "cA:1", "1", "0", "5", LONG,
       num(now - 1000000));
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_LATE);
  RT_CHECK(at(1) >= now);
  RT_CHECK_EQ_INT(key_count(0, "fre"), 0);
  /* A deadline ahead, and a floor far above the master's clock. */
  long long floor = now + 1000000000000LL;
  CALL(0, RL_FAM_FAIR_ACQUIRE, k.v, LONG, "cA:1", "1", num(floor), "5",
       LONG, num(now + 60000000));
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(1), floor);
  /* Re-entry with a shorter lease: count 2, same token, TTL kept. */
  CALL(0, RL_FAM_FAIR_ACQUIRE, k.v, "100", "cA:1", "2", "0", "5", "0",
       "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(1), floor);
  RT_CHECK_EQ_INT(at(2), 2);
  RT_CHECK_EQ_INT(at(3), 1); /* the owner's field was there */
  RT_CHECK(cmd_int(0, "PTTL %s", "fam:{fre}") > 5000);
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cA:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cA:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  CALL(0, RL_FAM_FAIR_UNLOCK, k.v, LONG, "cA:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_NOT_OWNER);
  /* The counter goes on from the floor; a lower floor changes nothing. */
  CALL(0, RL_FAM_FAIR_ACQUIRE, k.v, LONG, "cB:1", "1", num(now), "6", "0",
       "0");
  RT_CHECK_EQ_INT(at(1), floor + 1);
  CHECK_TTLS("fre");
}

/* --- read-write lock ---------------------------------------------------- */

/* First acquisitions (count 1), floor 0, no deadline. */
/* count: what the client sends, "1" for a first hold, the hold's count
 * plus one for a re-entry. */
static void rw_read_n(int srv, const keyset *k, const char *owner,
                      const char *lease, const char *count) {
  CALL(srv, RL_FAM_RW_READ_ACQUIRE, k->v, lease, owner, count, "0", "0");
}

static void rw_read(int srv, const keyset *k, const char *owner,
                    const char *lease) {
  rw_read_n(srv, k, owner, lease, "1");
}

static void rw_write_n(int srv, const keyset *k, const char *owner,
                       const char *alive, const char *count) {
  CALL(srv, RL_FAM_RW_WRITE_ACQUIRE, k->v, LONG, owner, count, "0", alive,
       "0");
}

static void rw_write(int srv, const keyset *k, const char *owner,
                     const char *alive) {
  rw_write_n(srv, k, owner, alive, "1");
}

/* rw_query's element i for owner. */
static long long rw_q(const keyset *k, const char *owner, size_t i) {
  CALL(0, RL_FAM_RW_QUERY, k->v, owner);
  return at(i);
}

static void test_rw_share_exclude_prefer_writer(void) {
  flush_all();
  keyset k;
  keys_of(&k, "rw", RW);
  redisContext *sub = sub_open(0, "fam:{rw}:w:ch");
  RT_REQUIRE(sub != NULL);
  rw_read(0, &k, "cR:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  long long tok_r = at(1);
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED); /* readers share */
  RT_CHECK(at(1) > tok_r);                /* each first hold a token */
  RT_CHECK_EQ_INT(rw_q(&k, "", 2), 2);
  rw_write(0, &k, "cW:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 2); /* readers hold it */
  RT_CHECK(at(1) > 0 && at(1) <= 10000);
  /* A writer waits: a new reader waits behind it, an old one re-enters. */
  rw_read(0, &k, "cR:3", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 3);
  rw_read(0, &k, "cR:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(2), 2);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  rw_write(0, &k, "cW:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY); /* cR:2 still reads */
  RT_CHECK(expect_quiet(sub, 50));
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK(expect_msg(sub, "fam:{rw}:w:ch", "r")); /* the last reader */
  rw_write(0, &k, "cW:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  long long tok_w = at(1);
  RT_CHECK(tok_w > tok_r);
  RT_CHECK_EQ_INT(rw_q(&k, "", 4), 0); /* no writer waits any more */
  /* The writer excludes readers and writers. */
  rw_read(0, &k, "cR:3", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 1);
  rw_write(0, &k, "cW:2", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 1);
  RT_CHECK_EQ_INT(rw_q(&k, "", 4), 0); /* a single attempt never waits */
  CALL(0, RL_FAM_RW_WRITE_UNLOCK, k.v, LONG, "cW:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK(expect_msg(sub, "fam:{rw}:w:ch", "w"));
  rw_read(0, &k, "cR:3", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(1), tok_w + 1); /* it reads what write tok_w wrote */
  redisFree(sub);
  CHECK_TTLS("rw");
}

static void test_rw_upgrade_refused(void) {
  flush_all();
  keyset k;
  keys_of(&k, "up", RW);
  rw_read(0, &k, "cR:1", LONG);
  rw_write(0, &k, "cR:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_DEADLK);
  RT_CHECK_EQ_INT(len(), 1);
  /* Nothing changed: still one read hold, no writer, none waiting. */
  RT_CHECK_EQ_INT(rw_q(&k, "cR:1", 1), 1);
  RT_CHECK_EQ_INT(at(3), 0);
  RT_CHECK_EQ_INT(at(4), 0);
  /* Even alone, a reader is refused: it must release first. */
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1");
  rw_write(0, &k, "cR:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("up");
}

static void test_rw_writer_keeps_read(void) {
  flush_all();
  keyset k;
  keys_of(&k, "down", RW);
  rw_write(0, &k, "cW:1", LONG);
  long long tok = at(1);
  rw_read(0, &k, "cW:1", LONG); /* the writer takes the read side */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(1), tok + 1); /* after its own write */
  rw_read_n(0, &k, "cW:1", LONG, "2"); /* a read re-entry keeps it */
  RT_CHECK_EQ_INT(at(1), tok + 1);
  RT_CHECK_EQ_INT(at(2), 2);
  RT_CHECK_EQ_INT(at(3), 1);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cW:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  /* and may still re-enter the write side */
  rw_write_n(0, &k, "cW:1", LONG, "2");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(2), 2);
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  CALL(0, RL_FAM_RW_WRITE_UNLOCK, k.v, LONG, "cW:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  CALL(0, RL_FAM_RW_WRITE_UNLOCK, k.v, LONG, "cW:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  /* It kept its read hold: another reader joins, a writer waits. */
  RT_CHECK_EQ_INT(rw_q(&k, "cW:1", 0), 0);
  RT_CHECK_EQ_INT(at(1), 1);
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  rw_write(0, &k, "cW:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 2);
  CHECK_TTLS("down");
}

static void test_rw_reader_expires_alone(void) {
  flush_all();
  keyset k;
  keys_of(&k, "rexp", RW);
  rw_read(0, &k, "cR:1", SHORT); /* this reader will crash */
  rw_read(0, &k, "cR:2", LONG);
  rw_read(0, &k, "cR:3", SHORT); /* this one is kept alive */
  const char *pairs[] = {k.v[1], k.v[2], NULL};
  CALL(0, RL_FAM_LEASE_RENEW, pairs, LONG, "cR:3");
  RT_CHECK_EQ_INT(ch(0), 1);
  rw_write(0, &k, "cW:1", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  rt_sleep_ms(PAST_SHORT_MS);
  RT_CHECK_EQ_INT(rw_q(&k, "", 2), 2); /* cR:1's share is gone alone */
  CALL(0, RL_FAM_LEASE_RENEW, pairs, LONG, "cR:1");
  RT_CHECK_EQ_INT(ch(0), 0);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_NOT_OWNER);
  RT_CHECK_EQ_INT(rw_q(&k, "cR:2", 1), 1);
  RT_CHECK_EQ_INT(rw_q(&k, "cR:3", 1), 1);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  rw_write(0, &k, "cW:1", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY); /* cR:3 */
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:3");
  rw_write(0, &k, "cW:1", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("rexp");
}

static void test_rw_dead_waiting_writer(void) {
  flush_all();
  keyset k;
  keys_of(&k, "dww", RW);
  rw_read(0, &k, "cR:1", LONG);
  rw_write(0, &k, "cW:1", SHORT); /* waits, then dies */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK(at(1) > 0 && at(1) <= 10000);
  rt_sleep_ms(PAST_SHORT_MS);
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{dww}:wq"), 0);
  CHECK_TTLS("dww");
}

static void test_rw_writer_leaves_and_undo(void) {
  flush_all();
  keyset k;
  keys_of(&k, "wl", RW);
  redisContext *sub = sub_open(0, "fam:{wl}:?:ch");
  RT_REQUIRE(sub != NULL);
  rw_read(0, &k, "cR:1", LONG);
  rw_write(0, &k, "cW:1", LONG);
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  CALL(0, RL_FAM_RW_WRITE_LEAVE, k.v, "cW:1");
  RT_CHECK_EQ_INT(ival(), 1);
  RT_CHECK(expect_msg(sub, "fam:{wl}:r:ch", "q")); /* readers may go */
  rw_read(0, &k, "cR:2", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_RW_WRITE_LEAVE, k.v, "cW:1");
  RT_CHECK_EQ_INT(ival(), 0);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1");
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:2");
  RT_CHECK(expect_msg(sub, "fam:{wl}:w:ch", "r"));
  /* An undone write grant of a writer that still waits re-registers it,
   * so readers do not slip in while it retries. */
  rw_write(0, &k, "cW:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_RW_WRITE_UNDO, k.v, "cW:1", LONG, "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK(expect_msg(sub, "fam:{wl}:w:ch", "w"));
  RT_CHECK(expect_quiet(sub, 50)); /* readers wait behind the writer */
  rw_read(0, &k, "cR:3", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 3);
  RT_CHECK(at(1) > 0 && at(1) <= 10000); /* until the writer's alive */
  CALL(0, RL_FAM_RW_WRITE_LEAVE, k.v, "cW:1");
  RT_CHECK(expect_msg(sub, "fam:{wl}:r:ch", "q"));
  /* Force: the read side, then the write side. */
  rw_read(0, &k, "cR:1", LONG);
  CALL(0, RL_FAM_RW_FORCE, k.v, "r");
  RT_CHECK_EQ_INT(ival(), 1);
  RT_CHECK(expect_msg(sub, "fam:{wl}:w:ch", "r"));
  RT_CHECK_EQ_INT(rw_q(&k, "cR:1", 1), 0);
  RT_CHECK_EQ_INT(at(2), 0);
  rw_write(0, &k, "cW:1", LONG);
  CALL(0, RL_FAM_RW_FORCE, k.v, "w");
  RT_CHECK_EQ_INT(ival(), 1);
  /* No writer waits: both sides hear that the writer went. */
  RT_CHECK(expect_msg(sub, "fam:{wl}:w:ch", "w"));
  RT_CHECK(expect_msg(sub, "fam:{wl}:r:ch", "w"));
  CALL(0, RL_FAM_RW_FORCE, k.v, "w");
  RT_CHECK_EQ_INT(ival(), 0);
  redisFree(sub);
  CHECK_TTLS("wl");
}

static void test_rw_deadline_floor(void) {
  flush_all();
  keyset k;
  keys_of(&k, "rwf", RW);
  long long now = server_us(0);
  CALL(0, RL_FAM_RW_READ_ACQUIRE, k.v, LONG, "cR:1", "1", "0", num(now - 1));
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_LATE);
  CALL(0, RL_FAM_RW_WRITE_ACQUIRE, k.v, LONG, "cW:1", "1", "0", LONG,
       num(now - 1));
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_LATE);
  RT_CHECK_EQ_INT(key_count(0, "rwf"), 0); /* not even a waiting writer */
  long long floor = now + 1000000000000LL;
  CALL(0, RL_FAM_RW_WRITE_ACQUIRE, k.v, LONG, "cW:1", "1", num(floor), "0",
       num(now + 60000000));
  RT_CHECK_EQ_INT(at(1), floor);
  CALL(0, RL_FAM_RW_WRITE_UNLOCK, k.v, LONG, "cW:1");
  rw_read(0, &k, "cR:1", LONG);
  RT_CHECK_EQ_INT(at(1), floor + 1); /* above the last write's token */
  /* A reader's floor raises the counter: the next writer is above it. */
  CALL(0, RL_FAM_RW_READ_ACQUIRE, k.v, LONG, "cR:2", "1", num(floor + 10),
       "0");
  RT_CHECK_EQ_INT(at(1), floor + 10);
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1");
  CALL(0, RL_FAM_RW_READ_UNLOCK, k.v, "cR:2");
  rw_write(0, &k, "cW:2", "0");
  RT_CHECK_EQ_INT(at(1), floor + 11); /* above every read before it */
  CHECK_TTLS("rwf");
}

/* A re-entry reaching a master that missed the hold (it was down when the
 * hold was taken) is granted there with the hold's count, whatever that
 * master's queue or waiting writers say: the owner holds on a majority. */
/* Each kind's undo takes back only the grant it names, by the count that
 * grant set: an undo whose attempt was refused or never ran (the owner's
 * count is still the one before it) changes nothing, above all not the
 * owner's earlier hold; the undo of a granted re-entry decrements. */
static void test_undo_names_its_grant(void) {
  flush_all();
  keyset f, rw;
  keys_of(&f, "un", FAIR);
  keys_of(&rw, "uw", RW);
  /* Fair: A holds (1); the undo of a re-entry that never ran (2). */
  fair_try(0, &f, "cA:1", 100, "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_FAIR_UNDO, f.v, "cA:1", "0", "0", "2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_NOT_OWNER);
  cmd(0, "HGET fam:{un} %s", "cA:1");
  RT_CHECK(last && last->type == REDIS_REPLY_STRING &&
           strcmp(last->str, "1") == 0);
  /* A re-entry granted, then its undo: back to 1. */
  CALL(0, RL_FAM_FAIR_ACQUIRE, f.v, LONG, "cA:1", "2", "0", "100", "0", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(2), 2);
  CALL(0, RL_FAM_FAIR_UNDO, f.v, "cA:1", "0", "0", "2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  cmd(0, "HGET fam:{un} %s", "cA:1");
  RT_CHECK(last && last->type == REDIS_REPLY_STRING &&
           strcmp(last->str, "1") == 0);
  /* Another owner's refused attempt, undone: nothing. */
  fair_try(0, &f, "cB:1", 200, "0");
  RT_CHECK(at(0) != RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_FAIR_UNDO, f.v, "cB:1", "0", "0", "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_NOT_OWNER);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{un}"), 1);
  /* Write side: the same two orders. */
  rw_write(0, &rw, "cA:1", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_RW_WRITE_UNDO, rw.v, "cA:1", "0", "2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_NOT_OWNER);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{uw}:w"), 1);
  rw_write_n(0, &rw, "cA:1", "0", "2");
  RT_CHECK_EQ_INT(at(2), 2);
  CALL(0, RL_FAM_RW_WRITE_UNDO, rw.v, "cA:1", "0", "2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{uw}:w"), 1);
  /* Read side (the write holder may read): the read unlock with a count
   * is the undo. */
  rw_read(0, &rw, "cA:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_RW_READ_UNLOCK, rw.v, "cA:1", "0", "2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_NOT_OWNER);
  RT_CHECK_EQ_INT(rw_q(&rw, "cA:1", 1), 1);
  rw_read_n(0, &rw, "cA:1", LONG, "2");
  RT_CHECK_EQ_INT(at(2), 2);
  CALL(0, RL_FAM_RW_READ_UNLOCK, rw.v, "cA:1", "0", "2");
  RT_CHECK_EQ_INT(ival(), RL_FAM_DECREMENTED);
  RT_CHECK_EQ_INT(rw_q(&rw, "cA:1", 1), 1);
  CALL(0, RL_FAM_RW_READ_UNLOCK, rw.v, "cA:1", "0", "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK_EQ_INT(rw_q(&rw, "cA:1", 1), 0);
  CHECK_TTLS("un");
  CHECK_TTLS("uw");
}

static void test_reentry_catches_up(void) {
  flush_all();
  keyset f, k;
  keys_of(&f, "cu", FAIR);
  keys_of(&k, "curw", RW);
  fair_try(0, &f, "cA:1", 1, LONG); /* master 0 only: others missed it */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  fair_try(1, &f, "cB:1", 50, LONG); /* master 1 has a queue, lock free */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CALL(1, RL_FAM_FAIR_UNLOCK, f.v, LONG, "cB:1");
  fair_try(1, &f, "cC:1", 60, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  fair_try(1, &f, "cD:1", 70, LONG); /* queued behind C's hold */
  CALL(1, RL_FAM_FAIR_UNLOCK, f.v, LONG, "cC:1");
  /* A's re-entry (count 2): granted on master 1 though D is first. */
  CALL(1, RL_FAM_FAIR_ACQUIRE, f.v, LONG, "cA:1", "2", "0", "1", "0", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(2), 2);
  RT_CHECK_EQ_INT(at(3), 0); /* it was not there */
  RT_CHECK_EQ_INT(cmd_int(1, "ZCARD %s", "fam:{cu}:q"), 1); /* D waits on */
  /* A re-entry where the hold is there is an increment, existed 1. */
  CALL(0, RL_FAM_FAIR_ACQUIRE, f.v, LONG, "cA:1", "2", "0", "1", "0", "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(2) == 2 && at(3) == 1);
  /* The read side: a writer waits on master 1, which missed R's hold. */
  rw_read(0, &k, "cR:1", LONG);
  rw_read(1, &k, "cX:1", LONG);
  rw_write(1, &k, "cW:1", LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  rw_read(1, &k, "cR:1", LONG); /* a first read would wait */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 3);
  CALL(1, RL_FAM_RW_READ_ACQUIRE, k.v, LONG, "cR:1", "3", "0", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(2), 3);
  RT_CHECK_EQ_INT(at(3), 0);
  /* The write side: a re-entry sets the count where the field is gone. */
  rw_write(2, &k, "cV:1", "0");
  CALL(2, RL_FAM_RW_WRITE_UNLOCK, k.v, LONG, "cV:1", "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  CALL(2, RL_FAM_RW_WRITE_ACQUIRE, k.v, LONG, "cV:1", "4", "0", "0", "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(2) == 4 && at(3) == 0);
  /* "1" as the unlock's last flag deletes whatever the count. */
  CALL(2, RL_FAM_RW_WRITE_UNLOCK, k.v, LONG, "cV:1", "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  CALL(1, RL_FAM_RW_READ_UNLOCK, k.v, "cR:1", "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK_EQ_INT(rw_q(&k, "cR:1", 1), 1); /* master 0's hold is its own */
  CALL(0, RL_FAM_FAIR_UNLOCK, f.v, LONG, "cA:1", "1");
  RT_CHECK_EQ_INT(ival(), RL_FAM_RELEASED);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{cu}"), 0);
  CHECK_TTLS("cu");
  CHECK_TTLS("curw");
}

/* An ACL user without PEXPIRE: the acquire scripts write nothing at all
 * (Redis does not roll a script back, and a key written before a refused
 * PEXPIRE would have no TTL), while the same calls by a user with it
 * work. */
static void test_acl_without_pexpire_writes_nothing(void) {
  flush_all();
  redisContext *c = conn(0);
  RT_REQUIRE(c != NULL);
  freeReplyObject(redisCommand(c, "ACL SETUSER famnp on >pw ~* &* +@all "
                                  "-pexpire"));
  struct timeval tv = {5, 0};
  redisContext *u = redisConnectWithTimeout("127.0.0.1", servers[0].port, tv);
  RT_REQUIRE(u != NULL && !u->err);
  redisReply *r = redisCommand(u, "AUTH famnp pw");
  RT_REQUIRE(r && r->type == REDIS_REPLY_STATUS);
  freeReplyObject(r);
  keyset f, k;
  keys_of(&f, "np", FAIR);
  keys_of(&k, "nprw", RW);
  struct {
    rl_fam_script_id id;
    const keyset *ks;
    const char *args[8];
  } calls[] = {
      {RL_FAM_FAIR_ACQUIRE, &f, {LONG, "cA:1", "1", "0", "1", LONG, "0"}},
      {RL_FAM_RW_READ_ACQUIRE, &k, {LONG, "cR:1", "1", "0", "0"}},
      {RL_FAM_RW_WRITE_ACQUIRE, &k, {LONG, "cW:1", "1", "0", LONG, "0"}},
  };
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    const char *argv[24];
    char nk[8];
    int n = 0, nkeys = 0;
    argv[n++] = "EVALSHA";
    argv[n++] = rl_fam_script_sha(calls[i].id);
    argv[n++] = nk;
    for (; calls[i].ks->v[nkeys] != NULL; nkeys++)
      argv[n++] = calls[i].ks->v[nkeys];
    snprintf(nk, sizeof nk, "%d", nkeys);
    for (int a = 0; calls[i].args[a] != NULL; a++) argv[n++] = calls[i].args[a];
    r = redisCommandArgv(u, n, argv, NULL);
    RT_CHECK(r != NULL && r->type == REDIS_REPLY_ERROR);
    /* Redis 7.0's words, and Valkey 8's. */
    if (r && r->type == REDIS_REPLY_ERROR &&
        strstr(r->str, "can't run this command") == NULL &&
        strstr(r->str, "has no permissions to run") == NULL) {
      fprintf(stderr, "  %s: %s\n", rl_fam_script_name(calls[i].id), r->str);
      RT_CHECK(0);
    }
    if (r) freeReplyObject(r);
  }
  RT_CHECK_EQ_INT(key_count(0, "np"), 0);
  RT_CHECK_EQ_INT(key_count(0, "nprw"), 0);
  /* The probe changes nothing for a user that may: a grant, TTLs kept. */
  fair_try(0, &f, "cA:1", 1, LONG);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  rw_write(0, &k, "cW:1", "0");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK(cmd_int(0, "PTTL %s", "fam:{np}") > 5000);
  redisFree(u);
  freeReplyObject(redisCommand(c, "ACL DELUSER famnp"));
  CHECK_TTLS("np");
  CHECK_TTLS("nprw");
}

/* --- semaphore ---------------------------------------------------------- */

/* sem_acquire with K, n, lease, no floor or deadline, and up to 2 hints
 * (NULL for none); the deadline is the last argument, as the connection
 * appends it. */
static void sem_try(int srv, const keyset *k, const char *owner, int K,
                    int n, const char *lease, const char *h1,
                    const char *h2) {
  const char *args[12] = {lease, owner, "0", num(K), num(n), LONG};
  int a = 6;
  if (h1 != NULL) args[a++] = h1;
  if (h2 != NULL) args[a++] = h2;
  args[a++] = "0";
  args[a] = NULL;
  call(srv, RL_FAM_SEM_ACQUIRE, k->v, args);
}

/* The owner of a slot on a server, into buf ("" if free). */
static const char *slot_owner(int srv, const keyset *k, int slot, char *buf,
                              size_t size) {
  redisContext *c = conn(srv);
  redisReply *r = c ? redisCommand(c, "HGET %s %d", k->v[0], slot) : NULL;
  snprintf(buf, size, "%s",
           r && r->type == REDIS_REPLY_STRING ? r->str : "");
  if (r) freeReplyObject(r);
  return buf;
}

/* Slots taken on a server: the hash's fields but its records (the limit,
 * the refusal count, the owners' "#at:" marks), which start with '#'. */
static long long slots_taken(int srv, const keyset *k) {
  cmd(srv, "HKEYS %s", k->v[0]);
  long long n = 0;
  for (size_t i = 0; i < len(); i++)
    if (last->element[i]->str[0] != '#') n++;
  return n;
}

/* A field of the slot hash as a number (-1 when absent). */
static long long sem_field(int srv, const keyset *k, const char *field) {
  redisContext *c = conn(srv);
  redisReply *r =
      c ? redisCommand(c, "HGET %s %s", k->v[0], field) : NULL;
  long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
  if (r) freeReplyObject(r);
  return v;
}

static void test_sem_limit_and_wakeup(void) {
  flush_all();
  keyset k;
  keys_of(&k, "sem", SEM);
  sem_try(0, &k, "cA:1", 3, 2, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK(at(1) > 0);         /* a token for A's first permits */
  RT_CHECK_EQ_INT(at(2), 2);   /* A holds 2 */
  RT_CHECK_EQ_INT(at(3), 1);   /* 1 free */
  RT_CHECK_EQ_INT(len(), 6);
  RT_CHECK(at(4) == 1 && at(5) == 2);
  long long tok_a = at(1);
  sem_try(0, &k, "cA:1", 3, 1, LONG, NULL, NULL); /* A takes one more */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(1), 0); /* A keeps its token */
  RT_CHECK_EQ_INT(at(2), 3);
  RT_CHECK_EQ_INT(at(4), 3);
  sem_try(0, &k, "cB:1", 3, 1, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK(at(1) > 0 && at(1) <= 10000); /* until A's lease ends */
  RT_CHECK_EQ_INT(at(2), 0);
  CALL(0, RL_FAM_SEM_AVAILABLE, k.v, "cA:1");
  RT_CHECK(at(0) == 3 && at(1) == 0 && at(2) == 3 && at(3) == 3);
  redisContext *sub = sub_open(0, "fam:{sem}:s:ch");
  RT_REQUIRE(sub != NULL);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "2");
  RT_CHECK_EQ_INT(at(0), 1); /* freed */
  RT_CHECK_EQ_INT(at(1), 2); /* A's left */
  RT_CHECK_EQ_INT(at(2), 1); /* slot 2 was A's */
  RT_CHECK(expect_msg(sub, "fam:{sem}:s:ch", "1")); /* one came back */
  sem_try(0, &k, "cB:1", 3, 1, LONG, "3", "2"); /* 3 is A's: 2 is free */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(4), 2);
  RT_CHECK(at(1) > tok_a);
  redisFree(sub);
  CHECK_TTLS("sem");
}

/* Random interleavings of acquisitions and releases by several owners,
 * checked after every call against a model: a grant happens exactly when
 * enough permits are free, never more than K slots are taken, and every
 * slot belongs to the owner the model says. */
static void test_sem_never_above_limit(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semr", SEM);
  enum { K = 4, OWNERS = 6, OPS = 400 };
  int owner_of[K + 1] = {0}; /* 0 = free, else owner index + 1 */
  unsigned seed = (unsigned)rt_now_ms();
  fprintf(stderr, "  seed %u\n", seed);
  srand(seed);
  char name[OWNERS][16];
  for (int o = 0; o < OWNERS; o++) snprintf(name[o], 16, "c%d:1", o);
  int grants = 0, refusals = 0, over = 0;
  for (int op = 0; op < OPS; op++) {
    int o = rand() % OWNERS, action = rand() % 3;
    int free_n = 0, mine[K], nmine = 0;
    for (int s = 1; s <= K; s++) {
      if (owner_of[s] == 0) free_n++;
      if (owner_of[s] == o + 1) mine[nmine++] = s;
    }
    if (action == 0 || nmine == 0) {
      int n = 1 + rand() % 3;
      sem_try(0, &k, name[o], K, n, LONG, NULL, NULL);
      if (n <= free_n) {
        RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
        for (size_t i = 4; i < len(); i++) {
          long long s = at(i);
          RT_REQUIRE(s >= 1 && s <= K && owner_of[s] == 0);
          owner_of[s] = o + 1;
        }
        grants++;
      } else {
        RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
        RT_CHECK_EQ_INT(at(2), free_n);
        refusals++;
      }
    } else if (action == 1) {
      int s = mine[rand() % nmine];
      CALL(0, RL_FAM_SEM_RELEASE, k.v, name[o], num(s));
      RT_CHECK_EQ_INT(at(0), 1);
      RT_CHECK_EQ_INT(at(1), nmine - 1);
      owner_of[s] = 0;
    } else {
      /* A release that lists a slot that is not the owner's (another's,
       * a free one, or one past K) frees the owner's listed slots only
       * and leaves that one as it was. */
      int other = 1;
      while (other <= K && owner_of[other] == o + 1) other++;
      const char *args[K + 3] = {name[o]};
      int a = 1;
      for (int i = 0; i < nmine; i++) args[a++] = num(mine[i]);
      args[a++] = num(other <= K ? other : K + 1);
      args[a] = NULL;
      const char *const *kv = k.v;
      call(0, RL_FAM_SEM_RELEASE, kv, args);
      RT_CHECK_EQ_INT(at(0), nmine);
      RT_CHECK_EQ_INT(at(1), 0);
      for (int i = 0; i < nmine; i++) RT_CHECK_EQ_INT(at(2 + (size_t)i), 1);
      RT_CHECK_EQ_INT(at(2 + (size_t)nmine), 0);
      for (int i = 0; i < nmine; i++) owner_of[mine[i]] = 0;
      over++;
    }
    RT_CHECK(slots_taken(0, &k) <= K);
    for (int s = 1; s <= K; s++) {
      char buf[32];
      const char *want = owner_of[s] ? name[owner_of[s] - 1] : "";
      if (strcmp(slot_owner(0, &k, s, buf, sizeof buf), want) != 0) {
        fprintf(stderr, "  op %d slot %d: %s, model %s\n", op, s, buf, want);
        RT_REQUIRE(0);
      }
    }
  }
  fprintf(stderr, "  %d grants, %d refusals, %d over-releases\n", grants,
          refusals, over);
  RT_CHECK(grants > 20 && refusals > 20 && over > 20);
  CHECK_TTLS("semr");
}

static void test_sem_expiry_returns_permits(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semx", SEM);
  sem_try(0, &k, "cA:1", 3, 2, SHORT, NULL, NULL); /* A will crash */
  sem_try(0, &k, "cC:1", 3, 1, SHORT, NULL, NULL); /* C is renewed */
  const char *pairs[] = {k.v[1], k.v[0], NULL};
  CALL(0, RL_FAM_LEASE_RENEW, pairs, LONG, "cC:1");
  RT_CHECK_EQ_INT(ch(0), 1);
  sem_try(0, &k, "cB:1", 3, 2, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BUSY);
  RT_CHECK(at(1) > 0 && at(1) <= SHORT_MS); /* until A's lease ends */
  redisContext *sub = sub_open(0, "fam:{semx}:s:ch");
  RT_REQUIRE(sub != NULL);
  rt_sleep_ms(PAST_SHORT_MS);
  CALL(0, RL_FAM_SEM_AVAILABLE, k.v, "");
  RT_CHECK_EQ_INT(at(1), 2); /* expired permits count as free at once */
  sem_try(0, &k, "cB:1", 3, 2, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK(expect_msg(sub, "fam:{semx}:s:ch", "2")); /* A's came back */
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "1");
  RT_CHECK_EQ_INT(at(0), 0); /* no longer A's */
  RT_CHECK_EQ_INT(at(2), 0);
  CALL(0, RL_FAM_LEASE_RENEW, pairs, LONG, "cA:1");
  RT_CHECK_EQ_INT(ch(0), 0);
  RT_CHECK_EQ_INT(slots_taken(0, &k), 3); /* B's two and C's one */
  redisFree(sub);
  CHECK_TTLS("semx");
}

/* The only holder dies: its lease runs out, and with it the TTL of the
 * expiry zset, which then no longer names the dead owner. Its slots must
 * come back all the same. */
static void test_sem_last_holder_expires(void) {
  flush_all();
  keyset k;
  keys_of(&k, "seml", SEM);
  sem_try(0, &k, "cA:1", 2, 2, SHORT, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  rt_sleep_ms(PAST_SHORT_MS);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", k.v[1]), 0); /* the zset went */
  CALL(0, RL_FAM_SEM_AVAILABLE, k.v, "");
  RT_CHECK_EQ_INT(at(1), 2);
  sem_try(0, &k, "cB:1", 2, 2, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("seml");
}

static void test_sem_refusals_change_nothing(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semo", SEM);
  sem_try(0, &k, "cA:1", 3, 2, LONG, NULL, NULL);
  sem_try(0, &k, "cB:1", 3, 1, LONG, NULL, NULL);
  long long ttl = cmd_int(0, "PTTL %s", k.v[1]);
  /* Another's slot, a free one, none at all: nothing freed. */
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cB:1", "1");
  RT_CHECK(at(0) == 0 && at(1) == 1 && at(2) == 0);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "3", "4");
  RT_CHECK(at(0) == 0 && at(1) == 2 && at(2) == 0 && at(3) == 0);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cB:1", NULL);
  RT_CHECK(at(0) == 0 && at(1) == 1);
  char buf[32];
  RT_CHECK(strcmp(slot_owner(0, &k, 1, buf, sizeof buf), "cA:1") == 0);
  RT_CHECK(strcmp(slot_owner(0, &k, 2, buf, sizeof buf), "cA:1") == 0);
  RT_CHECK(strcmp(slot_owner(0, &k, 3, buf, sizeof buf), "cB:1") == 0);
  /* A client that believes in another limit is told, and changes
   * nothing. */
  sem_try(0, &k, "cC:1", 4, 1, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_MISMATCH);
  RT_CHECK_EQ_INT(at(1), 3);
  sem_try(0, &k, "cA:1", 3, 4, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BADARG);
  RT_CHECK_EQ_INT(slots_taken(0, &k), 3);
  RT_CHECK_EQ_INT(cmd_int(0, "ZCARD %s", k.v[1]), 2);
  RT_CHECK(cmd_int(0, "PTTL %s", k.v[1]) <= ttl);
  /* A deadline in the past (the last argument) refuses before anything
   * else, hints or not. */
  CALL(0, RL_FAM_SEM_ACQUIRE, k.v, LONG, "cD:1", "0", "3", "1", LONG,
       num(server_us(0) - 1));
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_LATE);
  CALL(0, RL_FAM_SEM_ACQUIRE, k.v, LONG, "cD:1", "0", "3", "1", LONG,
       "2", num(server_us(0) - 1));
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_LATE);
  /* The operator's reset forgets the limit: K = 4 is accepted then. */
  CALL(0, RL_FAM_SEM_FORCE, k.v, NULL);
  RT_CHECK_EQ_INT(ival(), 1);
  sem_try(0, &k, "cC:1", 4, 4, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("semo");
}

static void test_sem_floor(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semf", SEM);
  long long floor = server_us(0) + 1000000000000LL;
  CALL(0, RL_FAM_SEM_ACQUIRE, k.v, LONG, "cA:1", num(floor), "1", "1",
       LONG, "0");
  RT_CHECK_EQ_INT(at(1), floor);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "1");
  sem_try(0, &k, "cB:1", 1, 1, LONG, NULL, NULL);
  RT_CHECK_EQ_INT(at(1), floor + 1); /* K = 1 fences as a lock */
  CHECK_TTLS("semf");
}

/*
 * Three masters, K = 2. X reaches masters 0 and 1, Y masters 1 and 2, Z
 * masters 0 and 2 (the others timed out, say). Each got a grant from a
 * majority, and no master counts more than 2: anonymous permits would
 * let three owners hold a semaphore of two. Counted per slot, a slot
 * needs a majority for one owner, and at most K owners hold one.
 */
static void test_sem_quorum_counts_slots(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semq", SEM);
  const char *who[3] = {"cX:1", "cY:1", "cZ:1"};
  const int reach[3][2] = {{0, 1}, {1, 2}, {0, 2}};
  int majority_grants = 0;
  int slot_masters[3][3] = {{0}}; /* [owner][slot]: masters granting it */
  for (int o = 0; o < 3; o++) {
    int granted = 0;
    for (int j = 0; j < 2; j++) {
      sem_try(reach[o][j], &k, who[o], 2, 1, LONG, NULL, NULL);
      if (at(0) == RL_FAM_REPLY_GRANTED) {
        granted++;
        slot_masters[o][at(4)]++;
      }
    }
    if (granted >= 2) majority_grants++;
  }
  for (int s = 0; s < 3; s++) RT_CHECK(slots_taken(s, &k) <= 2);
  RT_CHECK_EQ_INT(majority_grants, 3); /* the trap, for anonymous permits */
  int holders = 0;
  for (int o = 0; o < 3; o++)
    for (int s = 1; s <= 2; s++)
      if (slot_masters[o][s] >= 2) holders++;
  RT_CHECK_EQ_INT(holders, 2); /* X (slot 1) and Z (slot 2) */
  RT_CHECK(slot_masters[0][1] == 2 && slot_masters[2][2] == 2);
  /* Y holds no slot on a majority: it gives back what it got, on one
   * master by its slot (known from the reply), on the other with a drop
   * that keeps nothing (as for a master that never answered). */
  {
    const char *args[] = {"cY:1", "1", "2", NULL};
    call(reach[1][0], RL_FAM_SEM_RELEASE, k.v, args);
    RT_CHECK_EQ_INT(at(0), 1);
    RT_CHECK_EQ_INT(at(1), 0);
    const char *drop[] = {"cY:1", NULL};
    call(reach[1][1], RL_FAM_SEM_DROP, k.v, drop);
    RT_CHECK_EQ_INT(at(0), 1);
    RT_CHECK_EQ_INT(at(1), 0);
    RT_CHECK_EQ_INT(cmd_int(reach[1][1], "ZSCORE %s cY:1", k.v[1]),
                    LLONG_MIN); /* no lease left behind */
  }
  /* Every slot has at most one owner on a majority of masters. */
  for (int s = 1; s <= 2; s++) {
    int count[3] = {0};
    for (int m = 0; m < 3; m++) {
      char buf[32];
      slot_owner(m, &k, s, buf, sizeof buf);
      for (int o = 0; o < 3; o++)
        if (strcmp(buf, who[o]) == 0) count[o]++;
    }
    int majorities = 0;
    for (int o = 0; o < 3; o++) majorities += count[o] >= 2;
    RT_CHECK(majorities <= 1);
  }
  /* The hint makes masters that chose differently converge: W asks all
   * three with slot 2 first after Z gives its permit back. */
  for (int j = 0; j < 2; j++) {
    CALL(reach[2][j], RL_FAM_SEM_RELEASE, k.v, "cZ:1", "2");
    RT_CHECK_EQ_INT(at(0), 1);
  }
  for (int m = 0; m < 3; m++) {
    sem_try(m, &k, "cW:1", 2, 1, LONG, "2", NULL);
    RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
    RT_CHECK_EQ_INT(at(4), 2);
  }
  CHECK_TTLS("semq");
}

/* A drop keeps the listed slots and frees the owner's others, and the
 * owner's lease goes with its last slot. */
static void test_sem_drop_keeps_listed(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semd", SEM);
  sem_try(0, &k, "cA:1", 4, 3, LONG, NULL, NULL);
  sem_try(0, &k, "cB:1", 4, 1, LONG, NULL, NULL);
  sem_try(0, &k, "cC:1", 4, 1, LONG, NULL, NULL); /* refused behind A */
  RT_REQUIRE(at(0) == RL_FAM_REPLY_BUSY);
  redisContext *sub = sub_open(0, "fam:{semd}:s:ch");
  RT_REQUIRE(sub != NULL);
  CALL(0, RL_FAM_SEM_DROP, k.v, "cA:1", "2");
  RT_CHECK(at(0) == 2 && at(1) == 1);
  RT_CHECK(expect_msg(sub, "fam:{semd}:s:ch", "2"));
  char buf[32];
  RT_CHECK(strcmp(slot_owner(0, &k, 2, buf, sizeof buf), "cA:1") == 0);
  RT_CHECK(strcmp(slot_owner(0, &k, 4, buf, sizeof buf), "cB:1") == 0);
  RT_CHECK_EQ_INT(slots_taken(0, &k), 2);
  CALL(0, RL_FAM_SEM_DROP, k.v, "cA:1", NULL);
  RT_CHECK(at(0) == 1 && at(1) == 0);
  RT_CHECK_EQ_INT(cmd_int(0, "ZSCORE %s cA:1", k.v[1]), LLONG_MIN);
  CALL(0, RL_FAM_SEM_DROP, k.v, "cA:1", NULL); /* nothing left: quiet */
  RT_CHECK(at(0) == 0 && at(1) == 0);
  RT_CHECK(expect_msg(sub, "fam:{semd}:s:ch", "1"));
  RT_CHECK(expect_quiet(sub, 50));
  redisFree(sub);
  CHECK_TTLS("semd");
}

/*
 * A freed permit is announced only when this master refused someone while
 * the owner held here (since its first grant): a refused waiter sleeps
 * until a message, and a waiter's give-back of a grant nobody was refused
 * behind must not wake it (at N = 3 that woke waiters in a loop while a
 * holder held on the other two). The records live in the slot hash under
 * names that are never slots, count as no slot, and go with the last slot.
 */
static void test_sem_announces_only_behind_refusals(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semw", SEM);
  redisContext *sub = sub_open(0, "fam:{semw}:s:ch");
  RT_REQUIRE(sub != NULL);
  sem_try(0, &k, "cA:1", 2, 2, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#at:cA:1"), 0);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "1"); /* nobody refused: quiet */
  RT_CHECK_EQ_INT(at(0), 1);
  RT_CHECK(expect_quiet(sub, 50));
  sem_try(0, &k, "cB:1", 2, 1, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  sem_try(0, &k, "cC:1", 2, 1, LONG, NULL, NULL); /* refused behind both */
  RT_REQUIRE(at(0) == RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#refused"), 1);
  RT_CHECK_EQ_INT(slots_taken(0, &k), 2);
  CALL(0, RL_FAM_SEM_AVAILABLE, k.v, "");
  RT_CHECK(at(0) == 2 && at(1) == 0 && at(2) == 2);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cB:1", "1");
  RT_CHECK_EQ_INT(at(0), 1);
  RT_CHECK(expect_msg(sub, "fam:{semw}:s:ch", "1"));
  RT_CHECK_EQ_INT(sem_field(0, &k, "#at:cB:1"), -1); /* went with B's slot */
  sem_try(0, &k, "cC:1", 2, 1, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#at:cC:1"), 1);
  sem_try(0, &k, "cD:1", 2, 1, LONG, NULL, NULL); /* behind A and C */
  RT_REQUIRE(at(0) == RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#refused"), 2);
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "2");
  RT_CHECK(expect_msg(sub, "fam:{semw}:s:ch", "1"));
  /* E is granted after the refusal and gives back: nobody was refused
   * behind it, as the third master's give-back at N = 3. */
  sem_try(0, &k, "cE:1", 2, 1, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_SEM_DROP, k.v, "cE:1", NULL);
  RT_CHECK_EQ_INT(at(0), 1);
  RT_CHECK(expect_quiet(sub, 50));
  /* C was held when D was refused: its drop is announced, and with the
   * last slot the refusal count and every mark go. */
  CALL(0, RL_FAM_SEM_DROP, k.v, "cC:1", NULL);
  RT_CHECK_EQ_INT(at(0), 1);
  RT_CHECK(expect_msg(sub, "fam:{semw}:s:ch", "1"));
  RT_CHECK_EQ_INT(cmd_int(0, "HLEN %s", k.v[0]), 1); /* the limit only */
  /* A dead owner's mark goes with its slots when its lease is reclaimed,
   * which is announced as before (the waiters' timers bring them there). */
  sem_try(0, &k, "cF:1", 2, 2, SHORT, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("semw");
  rt_sleep_ms(PAST_SHORT_MS);
  sem_try(0, &k, "cG:1", 2, 1, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  RT_CHECK(expect_msg(sub, "fam:{semw}:s:ch", "2"));
  RT_CHECK_EQ_INT(sem_field(0, &k, "#at:cF:1"), -1);
  RT_CHECK_EQ_INT(slots_taken(0, &k), 1);
  /* The operator's reset forgets the records with the rest. */
  sem_try(0, &k, "cH:1", 2, 2, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_BUSY);
  CALL(0, RL_FAM_SEM_FORCE, k.v, NULL);
  RT_CHECK(expect_msg(sub, "fam:{semw}:s:ch", "reset"));
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", k.v[0]), 0);
  redisFree(sub);
  CHECK_TTLS("semw");
}

/*
 * A refusal says how many slots this master has freed so far, by release,
 * drop or a lease run out (its fifth element): a refused waiter hands a
 * wake on only for frees it has not seen refused before (sem_kind.c's
 * pass_wake), so that two waiters for more than is free do not wake each
 * other forever. The count is a record, never a slot, and goes with the
 * last slot, as the refusal count does.
 */
static void test_sem_refusal_counts_frees(void) {
  flush_all();
  keyset k;
  keys_of(&k, "semc", SEM);
  sem_try(0, &k, "cA:1", 2, 2, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  sem_try(0, &k, "cB:1", 2, 2, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(len(), 5);
  RT_CHECK_EQ_INT(at(2), 0); /* none free */
  RT_CHECK_EQ_INT(at(4), 0); /* none freed yet */
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "1");
  RT_CHECK_EQ_INT(at(0), 1);
  sem_try(0, &k, "cB:1", 2, 2, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_BUSY);
  RT_CHECK_EQ_INT(at(2), 1);
  RT_CHECK_EQ_INT(at(4), 1);
  /* Refused again with nothing freed meanwhile: the same count. */
  sem_try(0, &k, "cB:1", 2, 2, LONG, NULL, NULL);
  RT_CHECK(at(0) == RL_FAM_REPLY_BUSY && at(4) == 1);
  /* A release that frees nothing counts nothing; a drop counts. */
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "1");
  RT_CHECK_EQ_INT(at(0), 0);
  sem_try(0, &k, "cC:1", 2, 1, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  CALL(0, RL_FAM_SEM_DROP, k.v, "cC:1", NULL);
  RT_CHECK_EQ_INT(at(0), 1);
  sem_try(0, &k, "cB:1", 2, 2, LONG, NULL, NULL);
  RT_CHECK(at(0) == RL_FAM_REPLY_BUSY && at(4) == 2);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#freed"), 2);
  RT_CHECK_EQ_INT(slots_taken(0, &k), 1);
  /* With the last slot the count goes. */
  CALL(0, RL_FAM_SEM_RELEASE, k.v, "cA:1", "2");
  RT_CHECK_EQ_INT(at(0), 1);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#freed"), -1);
  RT_CHECK_EQ_INT(sem_field(0, &k, "#refused"), -1);
  /* Slots taken back from a lease that ran out count too. */
  sem_try(0, &k, "cD:1", 2, 2, SHORT, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  CHECK_TTLS("semc");
  rt_sleep_ms(PAST_SHORT_MS);
  sem_try(0, &k, "cE:1", 2, 1, LONG, NULL, NULL);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  sem_try(0, &k, "cB:1", 2, 2, LONG, NULL, NULL);
  RT_CHECK(at(0) == RL_FAM_REPLY_BUSY && at(4) == 2);
  CHECK_TTLS("semc");
}

/* --- latch -------------------------------------------------------------- */

static void test_latch_states(void) {
  flush_all();
  keyset k;
  keys_of(&k, "lat", LATCH);
  CALL(0, RL_FAM_LATCH_COUNT, k.v, NULL);
  RT_CHECK(at(0) == RL_LATCH_MISSING && at(1) == -1);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "id0");
  RT_CHECK(at(0) == RL_LATCH_MISSING);
  RT_CHECK_EQ_INT(key_count(0, "lat"), 0);
  CALL(0, RL_FAM_LATCH_SET, k.v, "3", LONG, "5000");
  RT_CHECK(at(0) == 1 && at(1) == 3);
  long long gen = at(2);
  CALL(0, RL_FAM_LATCH_SET, k.v, "7", LONG, "5000");
  RT_CHECK(at(0) == 0 && at(1) == 3 && at(2) == gen);
  redisContext *sub = sub_open(0, "fam:{lat}:l:ch");
  RT_REQUIRE(sub != NULL);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "id1");
  RT_CHECK(at(0) == RL_LATCH_COUNTING && at(1) == 2);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "id1"); /* a retry */
  RT_CHECK(at(0) == RL_LATCH_REPEATED && at(1) == 2);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "id2");
  RT_CHECK(at(0) == RL_LATCH_COUNTING && at(1) == 1);
  RT_CHECK(expect_quiet(sub, 50));
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "id3");
  RT_CHECK(at(0) == RL_LATCH_OPENED && at(1) == 0);
  RT_CHECK(expect_msg(sub, "fam:{lat}:l:ch", num(gen)));
  CALL(0, RL_FAM_LATCH_COUNT, k.v, NULL);
  RT_CHECK(at(0) == RL_LATCH_OPENED && at(1) == 0 && at(2) == gen);
  RT_CHECK(at(3) > 0 && at(3) <= 5000); /* it lingers, then goes */
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", k.v[1]), 0);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "id4");
  RT_CHECK(at(0) == RL_LATCH_DONE);
  /* Set again: a new generation, which an awaiter of the old one reads
   * as "it opened". */
  CALL(0, RL_FAM_LATCH_SET, k.v, "1", LONG, "5000");
  RT_CHECK(at(0) == 1 && at(2) > gen);
  CALL(0, RL_FAM_LATCH_SET, k.v, "0", LONG, "5000");
  RT_CHECK(at(0) == 0); /* counting: a bad count is not even looked at */
  CALL(0, RL_FAM_LATCH_FORCE, k.v, NULL);
  RT_CHECK_EQ_INT(ival(), 1);
  RT_CHECK(expect_msg(sub, "fam:{lat}:l:ch", "x"));
  CALL(0, RL_FAM_LATCH_SET, k.v, "0", LONG, "5000");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_BADARG);
  redisFree(sub);
  CHECK_TTLS("lat");
}

static void test_latch_ttls(void) {
  flush_all();
  keyset k;
  keys_of(&k, "latt", LATCH);
  /* Activity keeps a counting latch; abandoned, it goes (ttl 1200 ms). */
  CALL(0, RL_FAM_LATCH_SET, k.v, "3", "1200", "1000");
  rt_sleep_ms(700);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "a");
  RT_CHECK(at(0) == RL_LATCH_COUNTING);
  CHECK_TTLS("latt");
  rt_sleep_ms(700); /* 1400 ms after setting, 700 after the count-down */
  CALL(0, RL_FAM_LATCH_COUNT, k.v, NULL);
  RT_CHECK(at(0) == RL_LATCH_COUNTING && at(1) == 2);
  rt_sleep_ms(1500);
  CALL(0, RL_FAM_LATCH_COUNT, k.v, NULL);
  RT_CHECK(at(0) == RL_LATCH_MISSING); /* not open: gone */
  RT_CHECK_EQ_INT(key_count(0, "latt"), 0);
  /* An open latch lingers, then goes. */
  CALL(0, RL_FAM_LATCH_SET, k.v, "1", LONG, SHORT);
  CALL(0, RL_FAM_LATCH_COUNT_DOWN, k.v, "b");
  RT_CHECK(at(0) == RL_LATCH_OPENED);
  CHECK_TTLS("latt");
  rt_sleep_ms(PAST_SHORT_MS);
  RT_CHECK_EQ_INT(key_count(0, "latt"), 0);
}

/* --- several locks ------------------------------------------------------ */

static void multi_keys(const char *const *names, size_t n, char buf[][64],
                       const char **kv, int with_fence) {
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    snprintf(buf[j], 64, "fam:{%s}", names[i]);
    kv[j] = buf[j];
    j++;
    if (with_fence) {
      snprintf(buf[j], 64, "fam:{%s}:fence", names[i]);
      kv[j] = buf[j];
      j++;
    }
  }
  kv[j] = NULL;
}

/* lock_all / undo / unlock_all over names (at most 6) with the given
 * script ids: an acquisition as a first one (count 1 where absent), no
 * floor, no deadline; an unlock that is nobody's last. */
/* count: each lock's count as the client sends it ("1" for a first
 * hold, the hold's count plus one for a re-entry), for acquisitions and
 * for the undos that name them. */
static void multi_n(int srv, rl_fam_script_id id, const char *const *names,
                    size_t n, const char *owner, const char *count) {
  char buf[16][64];
  const char *kv[17];
  int acquire = id == RL_FAM_MULTI_ACQUIRE || id == RL_FAM_MULTI_ACQUIRE_XSLOT;
  multi_keys(names, n, buf, kv, acquire);
  const char *args[20];
  int a = 0;
  if (acquire) {
    args[a++] = LONG;
    args[a++] = owner;
    args[a++] = "0";
    for (size_t i = 0; i < n; i++) args[a++] = count;
    args[a++] = "0";
    args[a] = NULL;
    call(srv, id, kv, args);
  } else if (id == RL_FAM_MULTI_UNLOCK || id == RL_FAM_MULTI_UNLOCK_XSLOT) {
    args[a++] = owner;
    for (size_t i = 0; i < n; i++) {
      args[a++] = LONG;
      args[a++] = "0";
    }
    args[a] = NULL;
    call(srv, id, kv, args);
  } else { /* an undo: each lock's count as its grant set it */
    args[a++] = owner;
    for (size_t i = 0; i < n; i++) args[a++] = count;
    args[a] = NULL;
    call(srv, id, kv, args);
  }
}

static void multi(int srv, rl_fam_script_id id, const char *const *names,
                  size_t n, const char *owner) {
  multi_n(srv, id, names, n, owner, "1");
}

static long long holders_count(const char *lock) {
  char key[64];
  snprintf(key, sizeof key, "fam:{%s}", lock);
  return cmd_int(0, "HLEN %s", key);
}

static void test_multi_all_or_nothing(void) {
  flush_all();
  const char *ab[] = {"ma", "mb"}, *ba[] = {"mb", "ma"};
  const char *bc[] = {"mb", "mc"}, *cb[] = {"mc", "mb"};
  multi(0, RL_FAM_MULTI_ACQUIRE, ab, 2, "cX:1");
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(len(), 7);
  RT_CHECK(at(2) == 1 && at(5) == 1); /* counts */
  RT_CHECK(at(3) == 0 && at(6) == 0); /* first acquisitions */
  long long ta = at(1);
  multi(0, RL_FAM_MULTI_ACQUIRE, bc, 2, "cY:1");
  RT_CHECK(at(0) == RL_FAM_REPLY_BUSY && at(1) == 1 && at(2) > 0);
  multi(0, RL_FAM_MULTI_ACQUIRE, cb, 2, "cY:1");
  RT_CHECK(at(0) == RL_FAM_REPLY_BUSY && at(1) == 2);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{mc}"), 0); /* none taken */
  /* Re-entry in another order; then the undo takes exactly that back. */
  multi_n(0, RL_FAM_MULTI_ACQUIRE, ba, 2, "cX:1", "2");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(2) == 2 && at(5) == 2);
  RT_CHECK(at(3) == 1 && at(6) == 1); /* re-entries */
  RT_CHECK_EQ_INT(at(4), ta); /* a re-entry keeps the token */
  /* The undo of a third level that was never granted here: nothing. */
  multi_n(0, RL_FAM_MULTI_UNDO, ba, 2, "cX:1", "3");
  RT_CHECK(at(0) == RL_FAM_NOT_OWNER && at(1) == RL_FAM_NOT_OWNER);
  multi_n(0, RL_FAM_MULTI_UNDO, ba, 2, "cX:1", "2");
  RT_CHECK(at(0) == RL_FAM_DECREMENTED && at(1) == RL_FAM_DECREMENTED);
  cmd(0, "HGET fam:{ma} %s", "cX:1");
  RT_CHECK(last && last->type == REDIS_REPLY_STRING &&
           strcmp(last->str, "1") == 0);
  redisContext *sub = sub_open(0, "fam:{m?}:ch");
  RT_REQUIRE(sub != NULL);
  multi(0, RL_FAM_MULTI_UNLOCK, ab, 2, "cX:1");
  RT_CHECK(at(0) == RL_FAM_RELEASED && at(1) == RL_FAM_RELEASED);
  RT_CHECK(expect_msg(sub, "fam:{ma}:ch", "0"));
  RT_CHECK(expect_msg(sub, "fam:{mb}:ch", "0"));
  multi(0, RL_FAM_MULTI_UNLOCK, ab, 2, "cX:1");
  RT_CHECK(at(0) == RL_FAM_NOT_OWNER && at(1) == RL_FAM_NOT_OWNER);
  /* A single holder of one lock of the set blocks the whole set. */
  cmd(0, "HSET fam:{mc} %s 1", "cS:1");
  cmd(0, "PEXPIRE fam:{mc} %s", LONG);
  multi(0, RL_FAM_MULTI_ACQUIRE, bc, 2, "cY:1");
  RT_CHECK(at(0) == RL_FAM_REPLY_BUSY && at(1) == 2);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{mb}"), 0);
  redisFree(sub);
  CHECK_TTLS("ma");
  CHECK_TTLS("mb");
  CHECK_TTLS("mc");
}

/* Two owners take {a, b} and {b, a} over and over, in turns: each call
 * takes both or none, so no lock is ever held by one while the other
 * holds its partner, and both keep getting through. */
static void test_multi_opposite_orders(void) {
  flush_all();
  const char *ab[] = {"oa", "ob"}, *ba[] = {"ob", "oa"};
  int wins[2] = {0, 0};
  for (int round = 0; round < 200; round++) {
    int who = round % 2;
    const char *owner = who ? "cY:1" : "cX:1";
    multi(0, RL_FAM_MULTI_ACQUIRE, who ? ba : ab, 2, owner);
    long long got = at(0);
    long long ha = holders_count("oa"), hb = holders_count("ob");
    RT_CHECK(ha <= 1 && hb <= 1);
    char oa[32], ob[32];
    cmd(0, "HKEYS %s", "fam:{oa}");
    snprintf(oa, sizeof oa, "%s", len() ? last->element[0]->str : "");
    cmd(0, "HKEYS %s", "fam:{ob}");
    snprintf(ob, sizeof ob, "%s", len() ? last->element[0]->str : "");
    RT_CHECK(strcmp(oa, ob) == 0); /* both held by one owner, or free */
    if (got == RL_FAM_REPLY_GRANTED) {
      wins[who]++;
      if (rand() % 2) { /* hold on for the other's next turn, or not */
        multi(0, RL_FAM_MULTI_UNLOCK, ab, 2, owner);
      }
    } else {
      RT_CHECK_EQ_INT(got, RL_FAM_REPLY_BUSY);
      multi(0, RL_FAM_MULTI_UNLOCK, ab, 2, who ? "cX:1" : "cY:1");
    }
  }
  RT_CHECK(wins[0] > 10 && wins[1] > 10);
  CHECK_TTLS("oa");
  CHECK_TTLS("ob");
}

static void test_multi_deadline_floor_xslot(void) {
  flush_all();
  char buf[4][64];
  const char *kv[5];
  const char *names[] = {"fa", "fb"};
  multi_keys(names, 2, buf, kv, 1);
  long long now = server_us(0);
  const char *late[] = {LONG, "cX:1", "0", "1", "1", num(now - 1),
                        NULL};
  call(0, RL_FAM_MULTI_ACQUIRE, kv, late);
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_LATE);
  RT_CHECK_EQ_INT(key_count(0, "fa") + key_count(0, "fb"), 0);
  /* The floor counts for a counter that is there too (fb's, below). */
  RT_CHECK(rt_redis_int(&servers[0], "SET fam:{fb}:fence 5 PX 60000") ==
               LLONG_MIN);
  long long floor = now + 1000000000000LL;
  /* A re-entry's count where the hash is absent: 3 (a master that missed
   * the hold catches up). */
  const char *ok[] = {LONG, "cX:1", num(floor), "1", "3",
                      num(now + 60000000), NULL};
  call(0, RL_FAM_MULTI_ACQUIRE_XSLOT, kv, ok); /* the shebang twin */
  RT_CHECK_EQ_INT(at(0), RL_FAM_REPLY_GRANTED);
  RT_CHECK_EQ_INT(at(1), floor);
  RT_CHECK_EQ_INT(at(4), floor);
  RT_CHECK_EQ_INT(at(2), 1);
  RT_CHECK_EQ_INT(at(5), 3);
  cmd(0, "HGET fam:{fb} %s", "cX:1");
  RT_CHECK(last && last->type == REDIS_REPLY_STRING &&
           strcmp(last->str, "3") == 0);
  /* The owner's last unlock deletes whatever the count. */
  const char *ub[] = {"fam:{fb}", NULL};
  CALL(0, RL_FAM_MULTI_UNLOCK, ub, "cX:1", LONG, "1");
  RT_CHECK_EQ_INT(at(0), RL_FAM_RELEASED);
  RT_CHECK_EQ_INT(cmd_int(0, "EXISTS %s", "fam:{fb}"), 0);
  CALL(0, RL_FAM_MULTI_ACQUIRE, kv, LONG, "cX:1", "0", "2", "1", "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(2) == 2 && at(5) == 1);
  const char *undo_counts[] = {"cX:1", "2", "1", NULL};
  const char *uk[] = {"fam:{fa}", "fam:{fb}", NULL};
  call(0, RL_FAM_MULTI_UNDO_XSLOT, uk, undo_counts);
  RT_CHECK(at(0) == RL_FAM_DECREMENTED && at(1) == RL_FAM_RELEASED);
  multi(0, RL_FAM_MULTI_UNDO, names, 2, "cX:1");
  RT_CHECK(at(0) == RL_FAM_RELEASED && at(1) == RL_FAM_NOT_OWNER);
  multi(0, RL_FAM_MULTI_ACQUIRE, names, 2, "cY:1");
  RT_CHECK_EQ_INT(at(1), floor + 1);
  RT_CHECK_EQ_INT(at(4), floor + 2);
  multi(0, RL_FAM_MULTI_UNLOCK_XSLOT, names, 2, "cY:1");
  RT_CHECK(at(0) == RL_FAM_RELEASED && at(1) == RL_FAM_RELEASED);
  CHECK_TTLS("fa");
  CHECK_TTLS("fb");
}

/* A first acquisition (count 1: the client holds nothing) that finds the
 * owner's field left over from a hold the client ended without its
 * release landing takes a new token, above the one that hold had; a
 * re-entry (count 2) keeps the token. The fair lock, both sides of the
 * read-write lock and lock_all; the reentrant lock's own script:
 * test_leftover_field.c leftover_field_new_token. */
static void test_leftover_field_new_token(void) {
  flush_all();
  keyset k;
  keys_of(&k, "left", FAIR);
  fair_try(0, &k, "cL:1", 0, "0");
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  long long tok = at(1);
  fair_try(0, &k, "cL:1", 0, "0"); /* the field is left over */
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) > tok && at(2) == 2);
  tok = at(1);
  CALL(0, RL_FAM_FAIR_ACQUIRE, k.v, LONG, "cL:1", "3", "0", "0", "0", "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == tok && at(2) == 3);
  keyset w;
  keys_of(&w, "leftrw", RW);
  rw_write(0, &w, "cL:1", "0");
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  tok = at(1);
  rw_write(0, &w, "cL:1", "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) > tok && at(2) == 2);
  tok = at(1);
  rw_write_n(0, &w, "cL:1", "0", "3");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == tok && at(2) == 3);
  CALL(0, RL_FAM_RW_WRITE_UNLOCK, w.v, LONG, "cL:1", "1");
  rw_read(0, &w, "cR:1", LONG);
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  tok = at(1);
  rw_read(0, &w, "cR:1", LONG);
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) > tok && at(2) == 2);
  tok = at(1);
  rw_read_n(0, &w, "cR:1", LONG, "3");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == tok && at(2) == 3);
  const char *ab[] = {"la", "lb"};
  multi(0, RL_FAM_MULTI_ACQUIRE, ab, 2, "cL:1");
  RT_REQUIRE(at(0) == RL_FAM_REPLY_GRANTED);
  long long ta = at(1), tb = at(4);
  multi(0, RL_FAM_MULTI_ACQUIRE, ab, 2, "cL:1");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) > ta && at(4) > tb);
  RT_CHECK(at(3) == 1 && at(6) == 1); /* the fields were there */
  ta = at(1), tb = at(4);
  multi_n(0, RL_FAM_MULTI_ACQUIRE, ab, 2, "cL:1", "3");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == ta && at(4) == tb);
  RT_CHECK(at(2) == 3 && at(5) == 3);
  CHECK_TTLS("left");
  CHECK_TTLS("leftrw");
  CHECK_TTLS("la");
  CHECK_TTLS("lb");
}

/* With no counter, no floor and no deadline (so no client wall clock),
 * a first acquisition's token is 1: the master's own clock sets none.
 * Were it the master's TIME, a master restarted empty with its clock far
 * ahead would lift tokens to its clock (README: "A master's own clock
 * sets no token"). The clients always send a floor (their wall clock at
 * least), so this is the scripts' rule, seen bare. */
static void test_token_not_from_master_clock(void) {
  flush_all();
  keyset f, w, m;
  keys_of(&f, "mc1", FAIR);
  fair_try(0, &f, "cM:1", 0, "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == 1);
  keys_of(&w, "mc2", RW);
  rw_write(0, &w, "cM:1", "0");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == 1);
  keys_of(&m, "mc3", RW);
  rw_read(0, &m, "cM:1", LONG);
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == 1);
  keyset sk;
  keys_of(&sk, "mc4", SEM);
  sem_try(0, &sk, "cM:1", 2, 1, LONG, NULL, NULL);
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == 1);
  const char *ab[] = {"mc5", "mc6"};
  multi(0, RL_FAM_MULTI_ACQUIRE, ab, 2, "cM:1");
  RT_CHECK(at(0) == RL_FAM_REPLY_GRANTED && at(1) == 1 && at(4) == 1);
  CHECK_TTLS("mc1");
  CHECK_TTLS("mc2");
}

/*
 * Redis does not roll a script back when one of its commands is refused.
 * As a user without +pexpire, every writing script must fail before it
 * writes a key it cannot give a TTL: nothing of these names may be left
 * without one (the lock's own scripts do the same: lib/lua/scripts.c, and
 * test_acl's scripts_write_nothing_without_pexpire).
 */
static void test_scripts_need_pexpire_first(void) {
  flush_all();
  cmd(0, "ACL SETUSER %s on >nopx ~fam:* &fam:* +@all -pexpire", "nopx");
  RT_REQUIRE(last && last->type == REDIS_REPLY_STATUS);
  keyset ks, kl, kl2;
  keys_of(&ks, "ap", SEM);
  keys_of(&kl, "al", LATCH);
  keys_of(&kl2, "al2", LATCH);
  /* A latch set by a user who may, for the count-down below. */
  CALL(0, RL_FAM_LATCH_SET, kl2.v, "3", LONG, LONG);
  RT_REQUIRE(at(0) == 1);
  struct timeval tv = {5, 0};
  redisContext *c =
      redisConnectWithTimeout("127.0.0.1", servers[0].port, tv);
  RT_REQUIRE(c != NULL && c->err == 0);
  redisReply *r = redisCommand(c, "AUTH nopx nopx");
  RT_REQUIRE(r && r->type == REDIS_REPLY_STATUS);
  freeReplyObject(r);
  for (int id = 0; id < RL_FAM_SCRIPT_COUNT; id++)
    freeReplyObject(redisCommand(c, "SCRIPT LOAD %s",
                                 rl_fam_script_body((rl_fam_script_id)id)));
  const char *sem = rl_fam_script_sha(RL_FAM_SEM_ACQUIRE);
  const char *set = rl_fam_script_sha(RL_FAM_LATCH_SET);
  const char *down = rl_fam_script_sha(RL_FAM_LATCH_COUNT_DOWN);
  const char *multi_sha = rl_fam_script_sha(RL_FAM_MULTI_ACQUIRE);
  redisReply *rs[4];
  rs[0] = redisCommand(c, "EVALSHA %s 3 %s %s %s " LONG " cA:1"
                       " 0 3 1 " LONG " 0", sem, ks.v[0], ks.v[1], ks.v[2]);
  rs[1] = redisCommand(c, "EVALSHA %s 2 %s %s 3 " LONG " " LONG, set,
                       kl.v[0], kl.v[1]);
  rs[2] = redisCommand(c, "EVALSHA %s 2 %s %s id1", down, kl2.v[0],
                       kl2.v[1]);
  rs[3] = redisCommand(c, "EVALSHA %s 4 fam:{am1} fam:{am1}:fence fam:{am2} "
                       "fam:{am2}:fence " LONG " cA:1 0 1 1 0",
                       multi_sha);
  for (int i = 0; i < 4; i++) {
    RT_CHECK(rs[i] != NULL && rs[i]->type == REDIS_REPLY_ERROR);
    if (rs[i] != NULL && rs[i]->type == REDIS_REPLY_ERROR)
      fprintf(stderr, "  refused as expected: %.80s\n", rs[i]->str);
    if (rs[i]) freeReplyObject(rs[i]);
  }
  redisFree(c);
  RT_CHECK_EQ_INT(key_count(0, "ap"), 0);
  RT_CHECK_EQ_INT(key_count(0, "al"), 0);
  RT_CHECK_EQ_INT(key_count(0, "am1") + key_count(0, "am2"), 0);
  CALL(0, RL_FAM_LATCH_COUNT, kl2.v, NULL);
  RT_CHECK(at(0) == RL_LATCH_COUNTING && at(1) == 3);
  CHECK_TTLS("ap");
  CHECK_TTLS("al");
  CHECK_TTLS("al2");
  CHECK_TTLS("am1");
  CHECK_TTLS("am2");
  cmd(0, "ACL DELUSER %s", "nopx");
}

int main(int argc, char **argv) {
  if (rt_redis_start_many(servers, NSERVERS) != 0) return 1;
  static const rt_test tests[] = {
      {"scripts_load", test_scripts_load},
      {"fair_fifo_wakes_next", test_fair_fifo_wakes_next},
      {"fair_quorum_order", test_fair_quorum_order},
      {"fair_dead_waiter_skipped", test_fair_dead_waiter_skipped},
      {"fair_touch_keeps_waiter", test_fair_touch_keeps_waiter},
      {"fair_leave", test_fair_leave},
      {"fair_force", test_fair_force},
      {"fair_reentrant_floor_deadline", test_fair_reentrant_floor_deadline},
      {"rw_share_exclude_prefer_writer", test_rw_share_exclude_prefer_writer},
      {"rw_upgrade_refused", test_rw_upgrade_refused},
      {"rw_writer_keeps_read", test_rw_writer_keeps_read},
      {"rw_reader_expires_alone", test_rw_reader_expires_alone},
      {"rw_dead_waiting_writer", test_rw_dead_waiting_writer},
      {"rw_writer_leaves_and_undo", test_rw_writer_leaves_and_undo},
      {"rw_deadline_floor", test_rw_deadline_floor},
      {"reentry_catches_up", test_reentry_catches_up},
      {"undo_names_its_grant", test_undo_names_its_grant},
      {"acl_without_pexpire_writes_nothing",
       test_acl_without_pexpire_writes_nothing},
      {"sem_limit_and_wakeup", test_sem_limit_and_wakeup},
      {"sem_never_above_limit", test_sem_never_above_limit},
      {"sem_expiry_returns_permits", test_sem_expiry_returns_permits},
      {"sem_last_holder_expires", test_sem_last_holder_expires},
      {"sem_refusals_change_nothing", test_sem_refusals_change_nothing},
      {"sem_floor", test_sem_floor},
      {"sem_quorum_counts_slots", test_sem_quorum_counts_slots},
      {"sem_drop_keeps_listed", test_sem_drop_keeps_listed},
      {"sem_announces_only_behind_refusals",
       test_sem_announces_only_behind_refusals},
      {"sem_refusal_counts_frees", test_sem_refusal_counts_frees},
      {"latch_states", test_latch_states},
      {"latch_ttls", test_latch_ttls},
      {"multi_all_or_nothing", test_multi_all_or_nothing},
      {"multi_opposite_orders", test_multi_opposite_orders},
      {"multi_deadline_floor_xslot", test_multi_deadline_floor_xslot},
      {"leftover_field_new_token", test_leftover_field_new_token},
      {"token_not_from_master_clock", test_token_not_from_master_clock},
      {"scripts_need_pexpire_first", test_scripts_need_pexpire_first},
  };
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  if (last) freeReplyObject(last);
  for (int i = 0; i < NSERVERS; i++)
    if (conns[i]) redisFree(conns[i]);
  rt_redis_stop_many(servers, NSERVERS);
  return rc;
}
