/*
 * ACL users and unix sockets with credentials: "redis://user:password@host"
 * authenticates as that user; README's smallest rule (RT_ACL_RULE) is enough
 * for locks (the lock, quorum, watchdog and pubsub programs pass under it:
 * their -acl variants), and a user missing any one of its commands gets
 * RLOCK_EREDIS with Redis's reason; "unix://[user]:password@/path?db=N" takes
 * a password and a db.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "scripts.h"

static rt_redis srv[1];

static rlock_client *open_url(const char *url) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

/* Takes a lock twice (reentrant), releases it twice: the first failing
 * status, or 0. A waiting acquisition exercises the unlock's PUBLISH. */
/* The reason rlock_client_last_error gave right after the cycle's first
 * failed call (a later call that succeeds clears a call's reason). */
static char cycle_err[256];

static int lock_cycle(rlock_client *c, const char *name) {
  rlock *l;
  cycle_err[0] = '\0';
  int rc = rlock_get(c, name, &l);
  if (rc != 0) return rc;
  if ((rc = rlock_trylock(l, 0, 10000)) == 0) {
    if ((rc = rlock_trylock(l, 0, 10000)) == 0) rc = rlock_unlock(l);
    if (rc != 0) rlock_client_last_error(c, cycle_err, sizeof cycle_err);
    int rc2 = rlock_unlock(l);
    if (rc == 0) rc = rc2;
  }
  if (rc != 0 && cycle_err[0] == '\0')
    rlock_client_last_error(c, cycle_err, sizeof cycle_err);
  rlock_free(l);
  return rc;
}

static void acl_setuser(rt_redis *r, const char *user, const char *rule) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "ACL SETUSER %s reset on >pw %s", user, rule);
  /* Split by spaces for hiredis's argv form. */
  const char *argv[64];
  size_t len[64];
  int argc = 0;
  for (char *save = NULL, *w = strtok_r(cmd, " ", &save); w && argc < 64;
       w = strtok_r(NULL, " ", &save)) {
    argv[argc] = w;
    len[argc++] = strlen(w);
  }
  redisReply *rep = NULL;
  redisContext *ctx = redisConnect("127.0.0.1", r->port);
  if (ctx && !ctx->err) rep = redisCommandArgv(ctx, argc, argv, len);
  RT_CHECK(rep != NULL && rep->type == REDIS_REPLY_STATUS);
  if (rep) freeReplyObject(rep);
  if (ctx) redisFree(ctx);
}

/* The smallest rule works: a lock cycle as that user. */
static void smallest_rule(void) {
  acl_setuser(&srv[0], "small", RT_ACL_RULE);
  char url[128];
  snprintf(url, sizeof url, "redis://small:pw@127.0.0.1:%d", srv[0].port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  RT_CHECK_EQ_INT(lock_cycle(c, "acl:small"), 0);
  rlock_client_close(c);
  /* The user name is what authenticates: the same password as another
   * user fails. */
  snprintf(url, sizeof url, "redis://nosuchuser:pw@127.0.0.1:%d",
           srv[0].port);
  c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(lock_cycle(c, "acl:nouser"), RLOCK_EREDIS);
  char err[256] = "";
  rlock_client_last_error(c, err, sizeof err);
  RT_CHECK(strncmp(err, "WRONGPASS", 9) == 0);
  rlock_client_close(c);
}

/* What deployment.md adds to the smallest rule for the rest of the lock
 * family; the same list, word for word. */
#define FAMILY_EXTRA                                                        \
  " +hget +hmget +hdel +zadd +zcard +zcount +zrange +zrangebyscore +zrank " \
  "+zrem +zremrangebyscore +zscore +sadd"

/* With the smallest rule and the family's commands, every kind works for
 * an ACL user: a fair lock, both sides of a read-write lock, a
 * semaphore's permits, a latch, an election (with an observer), each
 * taken and given back. */
static int seen_leader;
static void on_leader(rlock_election *e, const char *value, uint64_t token,
                      void *arg) {
  (void)e;
  (void)token;
  (void)arg;
  if (value != NULL && strcmp(value, "v") == 0) seen_leader = 1;
}

/* A second owner waits for l (its queue, for a fair lock and a writer). */
typedef struct waiter {
  rlock *l;
  int rc;
} waiter;
static void *wait_turn(void *p) {
  waiter *w = p;
  w->rc = rlock_trylock(w->l, 10000, 10000);
  if (w->rc == 0) w->rc = rlock_unlock(w->l);
  return NULL;
}

/* Holds a, lets b wait for it (queued), then gives a back: b's turn. */
static int contend(rlock *a, rlock *b) {
  int rc = rlock_trylock(a, 0, 10000);
  if (rc != 0) return rc;
  waiter w = {b, -1};
  pthread_t t;
  if (pthread_create(&t, NULL, wait_turn, &w) != 0) return -100;
  rt_sleep_ms(300);
  rc = rlock_unlock(a);
  pthread_join(t, NULL);
  return rc != 0 ? rc : w.rc;
}

static void family_rule(void) {
  acl_setuser(&srv[0], "fam", RT_ACL_RULE FAMILY_EXTRA);
  char url[128];
  snprintf(url, sizeof url, "redis://fam:pw@127.0.0.1:%d", srv[0].port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  char err[256] = "";
  rlock *f, *r, *w;
  RT_REQUIRE(rlock_get_fair(c, "acl:fam:f", &f) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(f, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(f), 0);
  RT_REQUIRE(rlock_get_read(c, "acl:fam:rw", &r) == 0);
  RT_REQUIRE(rlock_get_write(c, "acl:fam:rw", &w) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(r, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(r), 0);
  RT_CHECK_EQ_INT(rlock_trylock(w, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(w), 0);
  /* Contended: a second client's fair waiter and writer queue up. */
  rlock_client *c2 = open_url(url);
  RT_REQUIRE(c2 != NULL);
  rlock *f2, *w2;
  RT_REQUIRE(rlock_get_fair(c2, "acl:fam:f", &f2) == 0);
  RT_REQUIRE(rlock_get_write(c2, "acl:fam:rw", &w2) == 0);
  RT_CHECK_EQ_INT(contend(f, f2), 0);
  RT_CHECK_EQ_INT(contend(r, w2), 0);
  rlock_free(w2);
  rlock_free(f2);
  rlock_client_close(c2);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "acl:fam:s", 3, &s) == 0);
  RT_CHECK_EQ_INT(rlock_sem_acquire(s, 2, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 2), 0);
  rlock_latch *l;
  RT_REQUIRE(rlock_latch_get(c, "acl:fam:l", &l) == 0);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 1), 1);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0);
  RT_CHECK_EQ_INT(rlock_latch_await(l, 5000), 0);
  rlock_election *e;
  RT_REQUIRE(rlock_election_get(c, "acl:fam:e", &e) == 0);
  RT_CHECK_EQ_INT(rlock_observe(e, on_leader, NULL), 0);
  RT_CHECK_EQ_INT(rlock_campaign(e, "v", 5000), 0);
  RT_CHECK_EQ_INT(rlock_proclaim(e, "v"), 0);
  char v[16];
  RT_CHECK_EQ_INT(rlock_leader(e, v, sizeof v, NULL), 0);
  for (int i = 0; i < 250 && !seen_leader; i++) rt_sleep_ms(20);
  RT_CHECK(seen_leader);
  RT_CHECK_EQ_INT(rlock_resign(e), 0);
  rlock_client_last_error(c, err, sizeof err);
  if (err[0]) fprintf(stderr, "  last error: %s\n", err);
  rlock_election_free(e);
  rlock_latch_free(l);
  rlock_sem_free(s);
  rlock_free(w);
  rlock_free(r);
  rlock_free(f);
  rlock_client_close(c);
}

/* Each command of the rule, taken away alone, makes a lock cycle fail
 * with RLOCK_EREDIS and the server's reason: NOPERM for a command rlock
 * sends itself; for one a script runs, Redis 7.0 says "The user executing
 * the script can't run this command" (it words it NOPERM from 7.2), and
 * Valkey 8 "ERR ACL failure in script: User U has no permissions to run
 * the 'C' command". Only CLIENT SETNAME is optional, and pub/sub only
 * costs waiting speed. */
static void missing_one_permission(void) {
  char all[] = RT_ACL_COMMANDS;
  char *cmds[32];
  int n = 0;
  for (char *save = NULL, *w = strtok_r(all, " ", &save); w && n < 32;
       w = strtok_r(NULL, " ", &save))
    cmds[n++] = w;
  int failed_as_expected = 0, tested = 0;
  for (int k = 0; k < n; k++) {
    int optional = strcmp(cmds[k], "+client|setname") == 0;
    if (strcmp(cmds[k], "+subscribe") == 0 ||
        strcmp(cmds[k], "+unsubscribe") == 0)
      continue;
    char rule[600] = "~rlock:* &rlock:* -@all";
    for (int i = 0; i < n; i++)
      if (i != k) {
        strcat(rule, " ");
        strcat(rule, cmds[i]);
      }
    char user[32], url[128], name[64];
    snprintf(user, sizeof user, "miss%d", k);
    acl_setuser(&srv[0], user, rule);
    snprintf(url, sizeof url, "redis://%s:pw@127.0.0.1:%d", user,
             srv[0].port);
    snprintf(name, sizeof name, "acl:miss:%d", k);
    rlock_client *c = open_url(url);
    RT_REQUIRE(c != NULL);
    int rc = lock_cycle(c, name);
    char err[256] = "";
    snprintf(err, sizeof err, "%s", cycle_err);
    rlock_client_close(c);
    tested++;
    if (optional) {
      if (rc != 0) fprintf(stderr, "  without %s: %s\n", cmds[k], err);
      RT_CHECK_EQ_INT(rc, 0);
      failed_as_expected++;
      continue;
    }
    int said = strstr(err, "NOPERM") != NULL ||
               strstr(err, "can't run this command") != NULL ||
               strstr(err, "has no permissions to run") != NULL;
    if (rc != RLOCK_EREDIS || !said)
      fprintf(stderr, "  without %s: %s, \"%s\"\n", cmds[k],
              rlock_strerror(rc), err);
    RT_CHECK_EQ_INT(rc, RLOCK_EREDIS);
    RT_CHECK(said);
    failed_as_expected += rc == RLOCK_EREDIS && said;
    /* Whatever the failed script left (say, a hold whose unlock could not
     * DEL) expires with its lease: no key without a TTL, +pexpire missing
     * included (missing_pexpire_no_leak). */
    char q[80];
    snprintf(q, sizeof q, "PTTL rlock:{%s}", name);
    long long pttl = rt_redis_int(&srv[0], q);
    if (!(pttl == -2 || (pttl > 0 && pttl <= 10000)))
      fprintf(stderr, "  without %s: PTTL %lld\n", cmds[k], pttl);
    RT_CHECK(pttl == -2 || (pttl > 0 && pttl <= 10000));
  }
  fprintf(stderr, "  %d of %d users missing one permission behaved as "
          "expected\n", failed_as_expected, tested);
}

/* Without +pexpire, an acquire script whose HSET succeeds and whose
 * PEXPIRE then fails would leave the lock hash with no TTL, held by
 * nobody, forever. The scripts PEXPIRE the absent key first (a no-op that
 * fails the ACL check before anything is written): no key is left. */
static void missing_pexpire_no_leak(void) {
  char rule[600] = "~rlock:* &rlock:* -@all";
  char all[] = RT_ACL_COMMANDS;
  for (char *save = NULL, *w = strtok_r(all, " ", &save); w;
       w = strtok_r(NULL, " ", &save))
    if (strcmp(w, "+pexpire") != 0) {
      strcat(rule, " ");
      strcat(rule, w);
    }
  acl_setuser(&srv[0], "nopexpire", rule);
  char url[128];
  snprintf(url, sizeof url, "redis://nopexpire:pw@127.0.0.1:%d", srv[0].port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(lock_cycle(c, "acl:nopexpire"), RLOCK_EREDIS);
  rlock_client_close(c);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{acl:nopexpire}");
  fprintf(stderr, "  the lock key's PTTL: %lld\n", pttl);
  RT_CHECK(pttl == -2 || pttl > 0);
  rt_redis_int(&srv[0], "DEL rlock:{acl:nopexpire}");
}

/* The same at the scripts themselves, whatever the connection does first:
 * as a user with every command but PEXPIRE, the acquire script and the
 * restart records script fail and write nothing. */
static void scripts_write_nothing_without_pexpire(void) {
  acl_setuser(&srv[0], "nopexpire2",
              RT_ACL_RULE " +hget +hgetall -pexpire");
  for (int k = 0; k < RL_SCRIPT_COUNT; k++) {
    redisReply *l = rt_redis_cmd(&srv[0], "SCRIPT LOAD %s",
                                 rl_script_body((rl_script_id)k));
    RT_REQUIRE(l != NULL && l->type == REDIS_REPLY_STRING);
    freeReplyObject(l);
  }
  redisContext *ctx = redisConnect("127.0.0.1", srv[0].port);
  RT_REQUIRE(ctx != NULL && !ctx->err);
  redisReply *r = redisCommand(ctx, "AUTH nopexpire2 pw");
  RT_REQUIRE(r != NULL && r->type == REDIS_REPLY_STATUS);
  freeReplyObject(r);
  r = redisCommand(ctx, "EVALSHA %s 2 rlock:{acl:np2} rlock:{acl:np2}:fence "
                   "10000 me 1 5 0", rl_script_sha(RL_SCRIPT_ACQUIRE));
  RT_CHECK(r != NULL && r->type == REDIS_REPLY_ERROR);
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{acl:np2}"), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{acl:np2}:fence"), 0);
  r = redisCommand(ctx, "EVALSHA %s 1 rlock:np2:run_ids 60000 a:1 id 0",
                   rl_script_sha(RL_SCRIPT_RECORD));
  RT_CHECK(r != NULL && r->type == REDIS_REPLY_ERROR);
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:np2:run_ids"), 0);
  redisFree(ctx);
}

/* A db needs SELECT; without it the handshake is refused. */
static void user_with_db(void) {
  acl_setuser(&srv[0], "withdb", RT_ACL_RULE " +select");
  acl_setuser(&srv[0], "nodb", RT_ACL_RULE);
  char url[128];
  snprintf(url, sizeof url, "redis://withdb:pw@127.0.0.1:%d/2", srv[0].port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "acl:db", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{acl:db}"), 0);
  redisReply *rep = rt_redis_cmd(&srv[0], "SELECT 2");
  if (rep) freeReplyObject(rep);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{acl:db}"), 1);
  rep = rt_redis_cmd(&srv[0], "SELECT 0");
  if (rep) freeReplyObject(rep);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);

  snprintf(url, sizeof url, "redis://nodb:pw@127.0.0.1:%d/2", srv[0].port);
  c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), RLOCK_EREDIS);
  char err[256] = "";
  rlock_client_last_error(c, err, sizeof err);
  RT_CHECK(strncmp(err, "NOPERM", 6) == 0 && strstr(err, "select") != NULL);
  rlock_client_close(c);
}

/* --- unix sockets with a password and a db ------------------------------ */

static void unix_socket_auth_db(void) {
  rt_redis r;
  rt_redis_opts o = {.password = "secret", .unix_socket = 1,
                     .acl_user = "sockuser", .acl_password = "sockpw",
                     .acl_rule = RT_ACL_RULE " +select"};
  RT_REQUIRE(rt_redis_start_opts(&r, &o) == 0);
  char url[300];
  /* The default user's password and a db. */
  snprintf(url, sizeof url, "unix://:secret@%s?db=3", r.unixsock);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "unix:db", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  redisReply *rep = rt_redis_cmd(&r, "SELECT 3");
  if (rep) freeReplyObject(rep);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "EXISTS rlock:{unix:db}"), 1);
  rep = rt_redis_cmd(&r, "SELECT 0");
  if (rep) freeReplyObject(rep);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);
  /* An ACL user, percent-encoded as the URL form allows. */
  snprintf(url, sizeof url, "unix://sock%%75ser:sockpw@%s", r.unixsock);
  c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(lock_cycle(c, "unix:user"), 0);
  rlock_client_close(c);
  /* A wrong password is the server's WRONGPASS, not a hang. */
  snprintf(url, sizeof url, "unix://:wrong@%s", r.unixsock);
  c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_CHECK_EQ_INT(lock_cycle(c, "unix:wrong"), RLOCK_EREDIS);
  char err[256] = "";
  rlock_client_last_error(c, err, sizeof err);
  RT_CHECK(strncmp(err, "WRONGPASS", 9) == 0);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

/* --- hand-off within a client ------------------------------------------ */

/* A waiter of the same client is woken by the unlock's reply, not by its
 * message. A user without SUBSCRIBE gets no messages (its waiters sleep
 * to the holder's PTTL), which shows the difference: the holder's lease
 * is 30 s and the waiter's wait 12 s, so a waiter left to the message or
 * the PTTL times out; woken by the unlock, it acquires at once. */
typedef struct {
  rlock *lock;
  int rc;
  uint64_t done_ms;
} handoff_waiter;

static void *handoff_wait(void *p) {
  handoff_waiter *w = p;
  w->rc = rlock_trylock(w->lock, 12000, 10000);
  w->done_ms = rt_now_ms();
  if (w->rc == 0) RT_CHECK_EQ_INT(rlock_unlock(w->lock), 0);
  return NULL;
}

/* The rule of RT_ACL_RULE without SUBSCRIBE and UNSUBSCRIBE. */
static void nosub_user(void) {
  char rule[600] = "~rlock:* &rlock:* -@all";
  char all[] = RT_ACL_COMMANDS;
  for (char *save = NULL, *w = strtok_r(all, " ", &save); w;
       w = strtok_r(NULL, " ", &save))
    if (strcmp(w, "+subscribe") != 0 && strcmp(w, "+unsubscribe") != 0) {
      strcat(rule, " ");
      strcat(rule, w);
    }
  acl_setuser(&srv[0], "nosub", rule);
}

/* Waits (a bound) until the client counts n waiters. */
static void await_waiters(rlock_client *c, long n) {
  rlock_metrics m;
  uint64_t end = rt_now_ms() + 10000;
  do {
    rt_sleep_ms(10);
    RT_REQUIRE(rlock_metrics_snapshot(c, &m) == 0);
  } while ((long)m.waiters < n && rt_now_ms() < end);
  RT_CHECK_EQ_INT(m.waiters, n);
}

static void handoff_without_subscribe(void) {
  nosub_user();
  char url[128];
  snprintf(url, sizeof url, "redis://nosub:pw@127.0.0.1:%d", srv[0].port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  rlock *held, *waited;
  RT_REQUIRE(rlock_get(c, "acl:handoff", &held) == 0);
  RT_REQUIRE(rlock_get(c, "acl:handoff", &waited) == 0);
  RT_REQUIRE(rlock_trylock(held, 0, 30000) == 0);
  handoff_waiter w = {.lock = waited};
  pthread_t th;
  pthread_create(&th, NULL, handoff_wait, &w);
  await_waiters(c, 1);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(held), 0);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  /* Far below the 12 s the waiter would otherwise have waited. */
  RT_CHECK(w.done_ms - t0 < 6000);
  RT_CHECK_EQ_INT(rlock_is_locked(held), 0);
  rlock_free(held);
  rlock_free(waited);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  if (rt_redis_start_opts(srv, &(rt_redis_opts){0}) != 0) return 1;
  static const rt_test tests[] = {
      {"smallest_rule", smallest_rule},
      {"family_rule", family_rule},
      {"missing_one_permission", missing_one_permission},
      {"user_with_db", user_with_db},
      {"unix_socket_auth_db", unix_socket_auth_db},
      {"handoff_without_subscribe", handoff_without_subscribe},
      {"missing_pexpire_no_leak", missing_pexpire_no_leak},
      {"scripts_write_nothing_without_pexpire",
       scripts_write_nothing_without_pexpire},
  };
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_redis_stop_many(srv, 1);
  return rc;
}
