/*
 * Metrics and logging against real masters: the Prometheus exposition
 * parses (names, types, label syntax, values), and counters, gauges and
 * histograms move as locks are taken, waited for, released and lost and
 * as masters fail; the log callback hears about connections.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static rt_redis srv[1];

/* --- a small checker of the text exposition format ------------------- */

static int name_ok(const char *s, size_t n) {
  if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':')) return 0;
  return 1;
}

/* Returns the number of samples, or -1 with the bad line on stderr. */
static int check_exposition(const char *text) {
  char typed[64][64];
  int ntyped = 0, samples = 0;
  const char *p = text;
  while (*p) {
    const char *e = strchr(p, '\n');
    if (e == NULL) return -1; /* every line ends with a newline */
    size_t n = (size_t)(e - p);
    char line[512];
    if (n >= sizeof line) return -1;
    memcpy(line, p, n);
    line[n] = '\0';
    p = e + 1;
    if (strncmp(line, "# HELP ", 7) == 0) continue;
    if (strncmp(line, "# TYPE ", 7) == 0) {
      char name[64], type[32];
      if (sscanf(line + 7, "%63s %31s", name, type) != 2) goto bad;
      if (strcmp(type, "counter") && strcmp(type, "gauge") &&
          strcmp(type, "histogram"))
        goto bad;
      if (ntyped < 64) strcpy(typed[ntyped++], name);
      continue;
    }
    /* name{labels} value */
    size_t k = strcspn(line, "{ ");
    if (!name_ok(line, k)) goto bad;
    char base[64];
    snprintf(base, sizeof base, "%.*s", (int)k, line);
    int declared = 0;
    for (int t = 0; t < ntyped; t++) {
      size_t tl = strlen(typed[t]);
      if (strcmp(base, typed[t]) == 0 ||
          (strncmp(base, typed[t], tl) == 0 &&
           (!strcmp(base + tl, "_bucket") || !strcmp(base + tl, "_sum") ||
            !strcmp(base + tl, "_count"))))
        declared = 1;
    }
    if (!declared) goto bad;
    const char *q = line + k;
    if (*q == '{') {
      q++;
      while (*q != '}') {
        size_t ln = strcspn(q, "=");
        if (!name_ok(q, ln) || q[ln] != '=' || q[ln + 1] != '"') goto bad;
        q += ln + 2;
        while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
        if (*q != '"') goto bad;
        q++;
        if (*q == ',') q++;
        else if (*q != '}') goto bad;
      }
      q++;
    }
    if (*q != ' ') goto bad;
    char *end;
    strtod(q + 1, &end);
    if (end == q + 1 || *end != '\0') goto bad;
    samples++;
    continue;
  bad:
    fprintf(stderr, "  bad exposition line: '%s'\n", line);
    return -1;
  }
  return samples;
}

static double sample(const char *text, const char *prefix) {
  const char *p = strstr(text, prefix);
  if (p == NULL) return -1;
  p = strchr(p + strlen(prefix), ' ');
  return p ? atof(p + 1) : -1;
}

static char *expose(rlock_client *c) {
  int n = rlock_metrics_prometheus(c, NULL, 0);
  if (n <= 0) return NULL;
  char *buf = malloc((size_t)n + 1);
  int m = rlock_metrics_prometheus(c, buf, (size_t)n + 1);
  if (m != n) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* --- tests ------------------------------------------------------------ */

/* A client without restart quarantine: these tests restart the master and
 * count reconnections; the quarantine has its own test. */
static rlock_client *open_noq(void) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = 1000;
  o.restart_quarantine_ms = 0;
  return rt_client_opts(srv, 1, &o);
}

static void exposition_parses(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "metrics", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  char *t = expose(c);
  RT_REQUIRE(t != NULL);
  int samples = check_exposition(t);
  RT_CHECK(samples > 30);
  const char *names[] = {
      "rlock_acquisitions_total ", "rlock_acquire_failures_total{reason=\"timeout\"}",
      "rlock_releases_total ", "rlock_renewals_total ", "rlock_renewal_failures_total ",
      "rlock_locks_lost_total ", "rlock_locks_held ", "rlock_waiters ",
      "rlock_wait_seconds_bucket{le=\"+Inf\"}", "rlock_wait_seconds_count ",
      "rlock_hold_seconds_sum ", "rlock_master_up{master=\"0\"",
      "rlock_master_timeouts_total{", "rlock_master_errors_total{",
      "rlock_master_reconnects_total{", "rlock_master_restarts_total{"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strstr(t, names[i]) == NULL) fprintf(stderr, "  missing %s\n", names[i]);
    RT_CHECK(strstr(t, names[i]) != NULL);
  }
  /* A short buffer: cut, NUL-terminated, full length returned. */
  char small[16];
  int n = rlock_metrics_prometheus(c, small, sizeof small);
  RT_CHECK(n == (int)strlen(t));
  RT_CHECK(strlen(small) == sizeof small - 1);
  free(t);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);
}

static void counters_move(void) {
  rlock_client *c = open_noq(), *other = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL && other != NULL);
  rlock *l, *lo;
  RT_REQUIRE(rlock_get(c, "moving", &l) == 0);
  RT_REQUIRE(rlock_get(other, "moving", &lo) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  rlock_metrics a, b;
  RT_REQUIRE(rlock_metrics_snapshot(c, &a) == 0);
  RT_CHECK(a.acquisitions >= 1);
  RT_CHECK_EQ_INT(a.locks_held, 0);
  RT_CHECK_EQ_INT(a.nmasters, 1);
  RT_CHECK_EQ_INT(a.masters[0].up, 1);
  RT_CHECK(strstr(srv[0].url, a.masters[0].address) != NULL);

  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0); /* reentrant: one hold */
  RT_REQUIRE(rlock_metrics_snapshot(c, &b) == 0);
  RT_CHECK_EQ_INT(b.acquisitions, a.acquisitions + 2);
  RT_CHECK_EQ_INT(b.locks_held, 1);
  RT_CHECK_EQ_INT(b.wait.count, a.wait.count + 2);
  /* Another client times out on it: a failure by timeout there. */
  RT_CHECK_EQ_INT(rlock_trylock(lo, 150, 5000), RLOCK_ETIMEDOUT);
  rlock_metrics o;
  RT_REQUIRE(rlock_metrics_snapshot(other, &o) == 0);
  RT_CHECK_EQ_INT(o.failed_timedout, 1);
  RT_CHECK(o.wait.count == 0);
  RT_CHECK_EQ_INT(o.waiters, 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_REQUIRE(rlock_metrics_snapshot(c, &b) == 0);
  RT_CHECK_EQ_INT(b.releases, a.releases + 1);
  RT_CHECK_EQ_INT(b.locks_held, 0);
  RT_CHECK_EQ_INT(b.hold.count, a.hold.count + 1);
  RT_CHECK(b.hold.buckets[RLOCK_HIST_BUCKETS - 1] == b.hold.count);

  /* An error reply is counted against its master. */
  redisReply *r = rt_redis_cmd(&srv[0], "CONFIG SET maxmemory 1");
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), RLOCK_EREDIS);
  r = rt_redis_cmd(&srv[0], "CONFIG SET maxmemory 0");
  if (r) freeReplyObject(r);
  RT_REQUIRE(rlock_metrics_snapshot(c, &b) == 0);
  RT_CHECK(b.masters[0].errors >= a.masters[0].errors + 1);
  RT_CHECK_EQ_INT(b.failed_redis, a.failed_redis + 1);

  /* A stopped master's commands time out; a killed one reconnects. */
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), RLOCK_ENOQUORUM);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  RT_REQUIRE(rlock_metrics_snapshot(c, &b) == 0);
  RT_CHECK(b.masters[0].timeouts >= a.masters[0].timeouts + 1);
  RT_CHECK_EQ_INT(b.failed_noquorum, a.failed_noquorum + 1);
  rt_sleep_ms(300); /* the late grant comes back and is undone */
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 5000, 5000), 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_REQUIRE(rlock_metrics_snapshot(c, &b) == 0);
  RT_CHECK(b.masters[0].reconnects >= a.masters[0].reconnects + 1);
  RT_CHECK(b.masters[0].restarts >= a.masters[0].restarts + 1);
  char *t = expose(c);
  RT_REQUIRE(t != NULL);
  RT_CHECK(check_exposition(t) > 0);
  RT_CHECK(sample(t, "rlock_master_restarts_total{") >= 1);
  RT_CHECK(sample(t, "rlock_acquire_failures_total{reason=\"no_quorum\"}") >= 1);
  free(t);
  rlock_free(l);
  rlock_free(lo);
  rlock_client_close(c);
  rlock_client_close(other);
}

typedef struct {
  pthread_mutex_t mu;
  int connected, warned, lines;
} log_rec;

static void on_log(int level, const char *msg, void *arg) {
  log_rec *r = arg;
  pthread_mutex_lock(&r->mu);
  r->lines++;
  if (level == RLOCK_LOG_INFO && strstr(msg, "connected")) r->connected++;
  if (level <= RLOCK_LOG_WARN) r->warned++;
  pthread_mutex_unlock(&r->mu);
}

static void logging(void) {
  log_rec rec = {.mu = PTHREAD_MUTEX_INITIALIZER};
  const char *m[] = {srv[0].url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.log_cb = on_log;
  o.log_arg = &rec;
  o.restart_quarantine_ms = 0;
  rlock_client *c;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "logged", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_CHECK(rlock_unlock(l) == 0);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_CHECK(rlock_trylock(l, 5000, 5000) == 0);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);
  RT_CHECK(rec.connected >= 2); /* first connection and the reconnection */
  RT_CHECK(rec.warned >= 1);    /* the drop, and the restart noticed */
  /* At ERROR only, the same events log nothing at INFO or WARN. */
  log_rec quiet = {.mu = PTHREAD_MUTEX_INITIALIZER};
  o.log_arg = &quiet;
  o.log_level = RLOCK_LOG_ERROR;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_REQUIRE(rlock_get(c, "logged", &l) == 0);
  RT_CHECK(rlock_trylock(l, 0, 5000) == 0);
  RT_CHECK(rlock_unlock(l) == 0);
  rlock_free(l);
  rlock_client_close(c);
  RT_CHECK_EQ_INT(quiet.lines, 0);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"exposition_parses", exposition_parses},
      {"counters_move", counters_move},
      {"logging", logging},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
