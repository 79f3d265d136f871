/*
 * Handshake failures are failures: a SELECT of a database the master does not
 * have, an AUTH it refuses, or a SCRIPT LOAD it cannot run (a server
 * without scripting), fails the connection. Nothing is written, the
 * caller gets RLOCK_EREDIS with the server's own text, the master's error
 * counter counts it, it is logged once per change of text, and the client
 * does not reconnect in a storm.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[1];

static atomic_int error_lines;
static char last_log[512];

static void on_log(int level, const char *msg, void *arg) {
  (void)arg;
  if (level == RLOCK_LOG_ERROR) {
    atomic_fetch_add(&error_lines, 1);
    snprintf(last_log, sizeof last_log, "%s", msg);
  }
}

static rlock_client *open_url(const char *url) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000;
  o.log_cb = on_log;
  o.log_level = RLOCK_LOG_DEBUG;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

/* The server's connections so far (INFO stats). */
static long long connections(rt_redis *r) {
  redisReply *rep = rt_redis_cmd(r, "INFO stats");
  long long v = -1;
  const char *p = rep && rep->type == REDIS_REPLY_STRING
                      ? strstr(rep->str, "total_connections_received:")
                      : NULL;
  if (p) v = atoll(p + 27);
  if (rep) freeReplyObject(rep);
  return v;
}

/* A database the master does not have: the lock must not land in db 0. */
static void bad_db(void) {
  char url[128];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d/99", srv[0].port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "baddb", &l) == 0);
  rt_sleep_ms(300); /* the connection attempt has come and gone */
  int rc = rlock_trylock(l, 0, 60000);
  char err[256] = "";
  rlock_client_last_error(c, err, sizeof err);
  fprintf(stderr, "  trylock: %s; last error: \"%s\"; key in db 0: %lld\n",
          rlock_strerror(rc), err,
          rt_redis_int(&srv[0], "EXISTS rlock:{baddb}"));
  RT_CHECK_EQ_INT(rc, RLOCK_EREDIS);
  RT_CHECK(strstr(err, "DB index is out of range") != NULL);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{baddb}"), 0);
  if (rc == 0) {
    rc = rlock_unlock(l);
    fprintf(stderr, "  unlock: %s\n", rlock_strerror(rc));
  }
  /* The first call, made before the attempt finished, is refused too. */
  rlock_free(l);
  rlock_client_close(c);
  c = open_url(url);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_get(c, "baddb", &l) == 0);
  rc = rlock_trylock(l, 0, 60000);
  RT_CHECK_EQ_INT(rc, RLOCK_EREDIS);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{baddb}"), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_int(&srv[0], "DEL rlock:{baddb} rlock:{baddb}:fence");
}

/* A refused password: WRONGPASS, counted, logged once, no storm. */
static void wrong_password(void) {
  rt_redis pw;
  RT_REQUIRE(rt_redis_start(&pw, "secret") == 0);
  char url[128];
  snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", pw.port);
  long long before = connections(&pw);
  atomic_store(&error_lines, 0);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "wrongpass", &l) == 0);
  int first = rlock_trylock(l, 0, 10000);
  rt_sleep_ms(3000);
  int later = rlock_trylock(l, 0, 10000);
  long long conns = connections(&pw) - before - 1; /* less the harness's */
  char err[256] = "";
  rlock_client_last_error(c, err, sizeof err);
  rlock_metrics m;
  RT_CHECK(rlock_metrics_snapshot(c, &m) == 0);
  fprintf(stderr, "  first call: %s, later call: %s; last error: \"%s\"\n"
          "  %lld connections in 3 s, %d ERROR log lines, errors metric %llu\n",
          rlock_strerror(first), rlock_strerror(later), err, conns,
          atomic_load(&error_lines), (unsigned long long)m.masters[0].errors);
  RT_CHECK_EQ_INT(first, RLOCK_EREDIS);
  RT_CHECK_EQ_INT(later, RLOCK_EREDIS);
  RT_CHECK(strncmp(err, "WRONGPASS", 9) == 0);
  /* Backoff from 50 ms doubling to 2 s, with jitter: at most 8 attempts
   * in 3 s. */
  RT_CHECK(conns >= 1 && conns <= 10);
  RT_CHECK_EQ_INT(atomic_load(&error_lines), 1);
  RT_CHECK(strstr(last_log, "WRONGPASS") != NULL);
  RT_CHECK(m.masters[0].errors >= 1);
  RT_CHECK_EQ_INT(m.masters[0].up, 0);
  RT_CHECK(strncmp(m.masters[0].error, "WRONGPASS", 9) == 0);
  /* Waiting for readiness learns it at once, not at the timeout. */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 60000), RLOCK_EREDIS);
  RT_CHECK(rt_now_ms() - t0 < 30000);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&pw);
}

/* A server without scripting (here its SCRIPT command renamed away, which
 * Redis and Valkey both answer "ERR unknown command 'SCRIPT'"; Valkey 9
 * without its Lua engine answers "Could not find scripting engine"): the
 * handshake fails, and the error says what is missing, with the server's
 * own text after it. */
static void no_scripting(void) {
  rt_redis bare;
  const char *args[] = {"--rename-command", "SCRIPT", "", NULL};
  RT_REQUIRE(rt_redis_start_ex(&bare, NULL, NULL, args) == 0);
  char url[128];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", bare.port);
  rlock_client *c = open_url(url);
  RT_REQUIRE(c != NULL);
  int rc = rlock_client_wait_ready(c, 10000);
  char err[256] = "";
  rlock_client_last_error(c, err, sizeof err);
  fprintf(stderr, "  wait_ready: %s; last error: \"%s\"\n",
          rlock_strerror(rc), err);
  RT_CHECK_EQ_INT(rc, RLOCK_EREDIS);
  RT_CHECK(strstr(err, "no Lua scripting") != NULL);
  RT_CHECK(strstr(err, "unknown command") != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "noscript", &l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), RLOCK_EREDIS);
  RT_CHECK_EQ_INT(rt_redis_int(&bare, "EXISTS rlock:{noscript}"), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&bare);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"bad_db", bad_db},
      {"wrong_password", wrong_password},
      {"no_scripting", no_scripting},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
