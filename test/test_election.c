/*
 * Elections (rlock_election_get and friends) against real masters, N = 1
 * and 3: one leader at a time with growing tokens across processes;
 * observers in other processes see every leader in token order and the
 * same sequence; the longest waiting campaigner leads next; a SIGKILLed
 * or SIGSTOPped leader is replaced within its lease; the at-risk callback
 * before the lost one; campaigns that give up leave nothing in Redis;
 * non-leaders cannot proclaim or resign; bad input is RLOCK_EINVAL; a
 * handle freed while its leadership is at risk runs no callback after
 * the free; a cancel or a free at any point of a campaign keeps the
 * rules (a cancel that returned 0 cancels; a free leaves nothing). The
 * Cluster refusal and a Sentinel election are in test_cluster.c and
 * test_sentinel.c, whose fixtures are up already.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "proxy.h"

static rt_redis srv[3];

/* --- an observer's record ------------------------------------------------- */

enum { OBS_MAX = 64 };

typedef struct seen {
  atomic_int n;
  uint64_t token[OBS_MAX];
  char value[OBS_MAX][32]; /* "" for no leader */
  int none[OBS_MAX];
  int order_broken; /* a token below one seen before */
} seen;

static void on_change(rlock_election *e, const char *value, uint64_t token,
                      void *arg) {
  (void)e;
  seen *s = arg;
  int i = atomic_load(&s->n);
  if (i >= OBS_MAX) return;
  for (int k = 0; k < i; k++)
    if (!s->none[k] && value != NULL && token < s->token[k])
      s->order_broken = 1;
  s->token[i] = token;
  s->none[i] = value == NULL;
  snprintf(s->value[i], sizeof s->value[i], "%s", value ? value : "");
  atomic_store(&s->n, i + 1);
}

/* Waits until the observer's last report is value (NULL: no leader). */
static int wait_seen(seen *s, const char *value, int ms) {
  uint64_t t0 = rt_now_ms();
  while (rt_now_ms() - t0 < (uint64_t)ms) {
    int n = atomic_load(&s->n);
    if (n > 0) {
      int k = n - 1;
      if (value == NULL ? s->none[k]
                        : !s->none[k] && strcmp(s->value[k], value) == 0)
        return 1;
    }
    rt_sleep_ms(2);
  }
  return 0;
}

/* The leaders an observer saw, in order, consecutive repeats dropped. */
static int leaders_of(const seen *s, char out[][32], uint64_t *tok, int cap) {
  int k = 0, n = atomic_load(&s->n);
  for (int i = 0; i < n && k < cap; i++) {
    if (s->none[i]) continue;
    if (k > 0 && tok[k - 1] == s->token[i] && !strcmp(out[k - 1], s->value[i]))
      continue;
    tok[k] = s->token[i];
    snprintf(out[k++], 32, "%s", s->value[i]);
  }
  return k;
}

/* Every key on every master of rs[0..n) but the restart records, as
 * "master key" lines, sorted. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keys_of(rt_redis *rs, int n, char *buf, size_t cap) {
  char *line[256];
  int k = 0;
  for (int i = 0; i < n; i++) {
    redisReply *r = rt_redis_cmd(&rs[i], "KEYS rlock:*");
    if (r == NULL) continue;
    for (size_t j = 0; j < r->elements && k < 256; j++) {
      if (strstr(r->element[j]->str, "run_ids") != NULL) continue;
      line[k] = malloc(strlen(r->element[j]->str) + 8);
      sprintf(line[k++], "%d %s\n", i, r->element[j]->str);
    }
    freeReplyObject(r);
  }
  qsort(line, (size_t)k, sizeof line[0], cmp_str);
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < k; i++) {
    if (off < cap) off += (size_t)snprintf(buf + off, cap - off, "%s", line[i]);
    free(line[i]);
  }
}

/* Waits up to 3 s for the keys of rs[0..n) to be want (a give-up's
 * clean-up is sent as the call returns, and lands a round trip later). */
static int keys_settle(rt_redis *rs, int n, const char *want) {
  char now[4096];
  uint64_t t0 = rt_now_ms();
  do {
    keys_of(rs, n, now, sizeof now);
    if (strcmp(now, want) == 0) return 1;
    rt_sleep_ms(20);
  } while (rt_now_ms() - t0 < 3000);
  fprintf(stderr, "  keys wanted:\n%s  keys found:\n%s", want, now);
  return 0;
}

/* --- bad input and non-leaders ---------------------------------------------- */

static void bad_input(void) {
  rlock_client *c = rt_client(srv, 1, 300);
  RT_REQUIRE(c != NULL);
  rlock_election *e = (rlock_election *)&c; /* must become NULL */
  RT_CHECK_EQ_INT(rlock_election_get(NULL, "x", &e), RLOCK_EINVAL);
  RT_CHECK(e == NULL);
  RT_CHECK_EQ_INT(rlock_election_get(c, "", &e), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_election_get(c, NULL, &e), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_election_get(c, "x", NULL), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_campaign(NULL, "v", 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_proclaim(NULL, "v"), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_resign(NULL), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_leader(NULL, NULL, 0, NULL), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_observe(NULL, on_change, NULL), RLOCK_EINVAL);
  RT_REQUIRE(rlock_election_get(c, "bad", &e) == 0);
  char *big = malloc(4098);
  RT_REQUIRE(big != NULL);
  memset(big, 'x', 4097);
  big[4097] = '\0';
  RT_CHECK_EQ_INT(rlock_campaign(e, big, 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_campaign(e, "v", -5), RLOCK_EINVAL);
  big[4096] = '\0'; /* exactly 4096: allowed */
  RT_CHECK_EQ_INT(rlock_campaign(e, big, 0), 0);
  char got[5000];
  uint64_t t = 0;
  RT_CHECK_EQ_INT(rlock_leader(e, got, sizeof got, &t), 0);
  RT_CHECK_EQ_INT(strlen(got), 4096);
  RT_CHECK(t > 0);
  big[4096] = 'x';
  RT_CHECK_EQ_INT(rlock_proclaim(e, big), RLOCK_EINVAL);
  /* A campaign while leading is refused. */
  RT_CHECK_EQ_INT(rlock_campaign(e, "again", 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_resign(e), 0);
  /* Not the leader any more. */
  RT_CHECK_EQ_INT(rlock_proclaim(e, "v"), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_resign(e), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_leader(e, got, sizeof got, &t), RLOCK_ENOENT);
  RT_CHECK_EQ_INT(rlock_campaign_cancel(e), RLOCK_ENOTOWNER);
  uint64_t mine;
  RT_CHECK_EQ_INT(rlock_election_token(e, &mine), RLOCK_ENOTOWNER);
  free(big);
  rlock_election_free(e);
  char keys[4096];
  keys_of(srv, 1, keys, sizeof keys);
  RT_CHECK(strstr(keys, "rlock:{bad}\n") == NULL);
  RT_CHECK(strstr(keys, "rlock:{bad}:q") == NULL);
  rlock_client_close(c);
}

/* --- one process: campaign, proclaim, resign, observe ------------------------- */

static void basics(int n) {
  rlock_client *a = rt_client_wd(srv, n, 300, 3000);
  rlock_client *b = rt_client_wd(srv, n, 300, 3000);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock_election *ea, *eb;
  RT_REQUIRE(rlock_election_get(a, "basic", &ea) == 0);
  RT_REQUIRE(rlock_election_get(b, "basic", &eb) == 0);
  seen s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_observe(eb, on_change, &s) == 0);
  RT_CHECK(wait_seen(&s, NULL, 5000)); /* no leader yet, said once */
  RT_CHECK_EQ_INT(rlock_campaign(ea, "alpha", 1000), 0);
  RT_CHECK(wait_seen(&s, "alpha", 5000));
  uint64_t t1 = 0, t2 = 0, mine = 0;
  RT_CHECK_EQ_INT(rlock_election_token(ea, &mine), 0);
  char v[64];
  RT_CHECK_EQ_INT(rlock_leader(eb, v, sizeof v, &t1), 0);
  RT_CHECK(strcmp(v, "alpha") == 0);
  RT_CHECK(t1 == mine);
  RT_CHECK_EQ_INT(rlock_proclaim(ea, "beta"), 0);
  RT_CHECK(wait_seen(&s, "beta", 5000));
  /* b campaigns; a resigns; b leads with a larger token. */
  RT_CHECK_EQ_INT(rlock_campaign(eb, "gamma", 0), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_proclaim(eb, "x"), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_resign(eb), RLOCK_ENOTOWNER);
  /* The library's questions about the fair lock see the leader's hold,
   * and nothing of its record once it resigned (the record goes with
   * the hold: it never makes the lock look held). */
  rlock *fl;
  RT_REQUIRE(rlock_get_fair(b, "basic", &fl) == 0);
  int64_t lease = 0;
  RT_CHECK_EQ_INT(rlock_is_locked(fl), 1);
  RT_CHECK(rlock_remaining_lease(fl, &lease) == 0 && lease > 0);
  RT_CHECK_EQ_INT(rlock_resign(ea), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(fl), 0);
  RT_CHECK(rlock_remaining_lease(fl, &lease) == 0 && lease == -2);
  rlock_free(fl);
  RT_CHECK(wait_seen(&s, NULL, 5000));
  RT_CHECK_EQ_INT(rlock_campaign(eb, "gamma", 1000), 0);
  RT_CHECK(wait_seen(&s, "gamma", 5000));
  RT_CHECK_EQ_INT(rlock_leader(ea, v, sizeof v, &t2), 0);
  RT_CHECK(strcmp(v, "gamma") == 0);
  RT_CHECK(t2 > t1);
  /* The sequence: none, alpha, beta, none, gamma (a read may fold a
   * none into the next leader, never drop a leader). */
  char ls[8][32];
  uint64_t tk[8];
  int k = leaders_of(&s, ls, tk, 8);
  RT_CHECK_EQ_INT(k, 3);
  RT_CHECK(k == 3 && !strcmp(ls[0], "alpha") && !strcmp(ls[1], "beta") &&
           !strcmp(ls[2], "gamma") && tk[0] == tk[1] && tk[2] > tk[1]);
  RT_CHECK(!s.order_broken);
  /* The leader's own handle observes too. */
  seen s2;
  memset(&s2, 0, sizeof s2);
  RT_REQUIRE(rlock_observe(ea, on_change, &s2) == 0);
  RT_CHECK(wait_seen(&s2, "gamma", 5000));
  RT_CHECK_EQ_INT(rlock_observe(ea, NULL, NULL), 0);
  rlock_metrics m;
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(a, &m), 0);
  RT_CHECK_EQ_INT(m.elections_won, 1);
  RT_CHECK_EQ_INT(m.election_wait.count, 1);
  RT_CHECK_EQ_INT(m.election_campaigners, 0);
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(b, &m), 0);
  RT_CHECK(m.election_leader_changes >= 2);
  rlock_election_free(eb); /* resigns */
  rlock_election_free(ea);
  char keys[4096];
  keys_of(srv, n, keys, sizeof keys); /* the resign is done when free returns */
  RT_CHECK(strstr(keys, "rlock:{basic}\n") == NULL);
  RT_CHECK(strstr(keys, "rlock:{basic}:q") == NULL);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void basics_n1(void) { basics(1); }
static void basics_n3(void) { basics(3); }

/* --- giving up leaves nothing ------------------------------------------------ */

static void on_done(rlock_election *e, int status, void *arg) {
  (void)e;
  atomic_store((atomic_int *)arg, status == 0 ? 1 : status);
}

static void give_up_leaves_nothing(int n) {
  rlock_client *lc = rt_client_wd(srv, n, 300, 3000);
  rlock_client *wc = rt_client_wd(srv, n, 300, 3000);
  rlock_client *cc = rt_client_wd(srv, n, 300, 3000);
  RT_REQUIRE(lc && wc && cc);
  rlock_election *le, *we, *ce;
  RT_REQUIRE(rlock_election_get(lc, "giveup", &le) == 0);
  RT_REQUIRE(rlock_election_get(wc, "giveup", &we) == 0);
  RT_REQUIRE(rlock_election_get(cc, "giveup", &ce) == 0);
  RT_REQUIRE(rlock_campaign(le, "leader", 1000) == 0);
  char before[4096], after[4096];
  keys_of(srv, n, before, sizeof before);
  /* A wait that runs out. */
  RT_CHECK_EQ_INT(rlock_campaign(we, "w", 300), RLOCK_ETIMEDOUT);
  RT_CHECK(keys_settle(srv, n, before));
  /* A cancelled one, queued first. */
  atomic_int st = 0;
  RT_REQUIRE(rlock_campaign_async(we, "w", 7, RLOCK_WAIT_FOREVER, on_done,
                                  &st) == 0);
  rt_sleep_ms(200);
  keys_of(srv, n, after, sizeof after);
  RT_CHECK(strstr(after, "rlock:{giveup}:q") != NULL); /* it queued */
  RT_CHECK_EQ_INT(rlock_campaign_cancel(we), 0);
  uint64_t t0 = rt_now_ms();
  while (atomic_load(&st) == 0 && rt_now_ms() - t0 < 3000) rt_sleep_ms(2);
  RT_CHECK_EQ_INT(atomic_load(&st), RLOCK_ECANCELED);
  /* One whose client closes while it waits. */
  atomic_int st2 = 0;
  RT_REQUIRE(rlock_campaign_async(ce, "c", 9, RLOCK_WAIT_FOREVER, on_done,
                                  &st2) == 0);
  rt_sleep_ms(200);
  rlock_client_close(cc);
  RT_CHECK_EQ_INT(atomic_load(&st2), RLOCK_ECLOSED);
  rlock_election_free(ce);
  RT_CHECK(keys_settle(srv, n, before));
  rlock_election_free(we);
  rlock_election_free(le);
  rlock_client_close(wc);
  rlock_client_close(lc);
}

static void give_up_leaves_nothing_n1(void) { give_up_leaves_nothing(1); }
static void give_up_leaves_nothing_n3(void) { give_up_leaves_nothing(3); }

/* --- processes ---------------------------------------------------------------- */

/* A child that observes name for ms and writes what it saw to fd: one
 * line "token value" per leader. */
static void observer_child(int n, const char *name, int ms, int fd) {
  rlock_client *c = rt_client_wd(srv, n, 300, 3000);
  if (c == NULL) _exit(2);
  rlock_election *e;
  if (rlock_election_get(c, name, &e) != 0) _exit(3);
  static seen s;
  memset(&s, 0, sizeof s);
  if (rlock_observe(e, on_change, &s) != 0) _exit(4);
  rt_sleep_ms(ms);
  rlock_observe(e, NULL, NULL);
  char ls[OBS_MAX][32];
  uint64_t tk[OBS_MAX];
  int k = leaders_of(&s, ls, tk, OBS_MAX);
  char line[128];
  for (int i = 0; i < k; i++) {
    int len = snprintf(line, sizeof line, "%llu %s\n",
                       (unsigned long long)tk[i], ls[i]);
    if (write(fd, line, (size_t)len) != len) _exit(5);
  }
  rlock_election_free(e);
  rlock_client_close(c);
  _exit(s.order_broken ? 6 : 0);
}

/* Leaders now, across processes (shared memory): a campaigner adds one
 * when it leads and takes it away before it resigns; 2 would be two
 * leaders at once. */
static atomic_int *leaders_now;

/* A campaigner that starts after delay ms, leads for hold ms, resigns. */
static void campaigner_child(int n, const char *name, const char *value,
                             int delay, int hold) {
  rt_sleep_ms(delay);
  rlock_client *c = rt_client_wd(srv, n, 300, 3000);
  if (c == NULL) _exit(2);
  rlock_election *e;
  if (rlock_election_get(c, name, &e) != 0) _exit(3);
  if (rlock_campaign(e, value, 20000) != 0) _exit(4);
  int twice = atomic_fetch_add(leaders_now, 1) != 0;
  rt_sleep_ms(hold);
  atomic_fetch_sub(leaders_now, 1);
  if (rlock_resign(e) != 0) _exit(5);
  if (twice) _exit(7);
  rlock_election_free(e);
  rlock_client_close(c);
  _exit(0);
}

static int read_all(int fd, char *buf, size_t cap) {
  size_t off = 0;
  ssize_t k;
  while (off + 1 < cap && (k = read(fd, buf + off, cap - 1 - off)) > 0)
    off += (size_t)k;
  buf[off] = '\0';
  return (int)off;
}

/* Three campaigners arriving 150 ms apart behind a leader lead in their
 * order of arrival (the fair queue); two observer processes see the same
 * leaders, in token order. */
static void successors_in_order(int n) {
  const char *name = n == 1 ? "succ1" : "succ3";
  leaders_now = mmap(NULL, sizeof *leaders_now, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RT_REQUIRE(leaders_now != MAP_FAILED);
  atomic_init(leaders_now, 0);
  int pfd[2][2];
  pid_t obs[2];
  for (int i = 0; i < 2; i++) {
    RT_REQUIRE(pipe(pfd[i]) == 0);
    obs[i] = fork();
    RT_REQUIRE(obs[i] >= 0);
    if (obs[i] == 0) {
      close(pfd[i][0]);
      observer_child(n, name, 4500, pfd[i][1]);
    }
    close(pfd[i][1]);
  }
  rt_sleep_ms(500); /* the observers are up */
  pid_t k[4];
  const char *vals[4] = {"p0", "p1", "p2", "p3"};
  for (int i = 0; i < 4; i++) {
    k[i] = fork();
    RT_REQUIRE(k[i] >= 0);
    if (k[i] == 0) campaigner_child(n, name, vals[i], 150 * i, i == 0 ? 800 : 300);
  }
  for (int i = 0; i < 4; i++) RT_CHECK_EQ_INT(rt_reap(k[i]), 0);
  char out[2][2048];
  for (int i = 0; i < 2; i++) {
    read_all(pfd[i][0], out[i], sizeof out[i]);
    close(pfd[i][0]);
    RT_CHECK_EQ_INT(rt_reap(obs[i]), 0);
  }
  fprintf(stderr, "  observer 0:\n%s  observer 1:\n%s", out[0], out[1]);
  RT_CHECK(strcmp(out[0], out[1]) == 0);
  /* p0, p1, p2, p3 with growing tokens. */
  unsigned long long prev = 0;
  char *p = out[0];
  for (int i = 0; i < 4; i++) {
    unsigned long long t;
    char v[32];
    int used;
    RT_REQUIRE(sscanf(p, "%llu %31s%n", &t, v, &used) == 2);
    RT_CHECK(strcmp(v, vals[i]) == 0);
    RT_CHECK(t > prev);
    prev = t;
    p += used + 1;
  }
  RT_CHECK(*p == '\0');
  munmap(leaders_now, sizeof *leaders_now);
}

static void successors_in_order_n1(void) { successors_in_order(1); }
static void successors_in_order_n3(void) { successors_in_order(3); }

/* A leader that SIGKILL ends, or SIGSTOP pauses past its lease: the
 * waiting campaigner leads within the lease (plus a renewal period and
 * the round trips), with a larger token, and an observer sees it. A
 * paused leader that resumes learns that it lost (its lost callback). */
static atomic_int child_lost;
static void on_child_lost(rlock_election *e, void *arg) {
  (void)e;
  (void)arg;
  atomic_store(&child_lost, 1);
}

static void leader_fails(int n, int sig) {
  const int64_t wd = 1500;
  const char *name = sig == SIGKILL ? "killed" : "paused";
  int pfd[2], done[2];
  RT_REQUIRE(pipe(pfd) == 0 && pipe(done) == 0);
  pid_t leader = fork();
  RT_REQUIRE(leader >= 0);
  if (leader == 0) {
    close(pfd[0]);
    close(done[1]);
    rlock_client *c = rt_client_wd(srv, n, 200, wd);
    rlock_election *e;
    if (c == NULL || rlock_election_get(c, name, &e) != 0) _exit(2);
    rlock_election_set_lost_cb(e, on_child_lost, NULL);
    if (rlock_campaign(e, "old", 5000) != 0) _exit(3);
    if (write(pfd[1], "L", 1) != 1) _exit(4);
    char b;
    if (read(done[0], &b, 1) != 1) _exit(5); /* resumed, told to check */
    rt_sleep_ms(100);
    _exit(atomic_load(&child_lost) ? 0 : 6);
  }
  close(pfd[1]);
  close(done[0]);
  char b;
  RT_REQUIRE(read(pfd[0], &b, 1) == 1);
  rlock_client *c = rt_client_wd(srv, n, 200, wd);
  RT_REQUIRE(c != NULL);
  rlock_election *e;
  RT_REQUIRE(rlock_election_get(c, name, &e) == 0);
  seen s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_observe(e, on_change, &s) == 0);
  RT_CHECK(wait_seen(&s, "old", 3000));
  uint64_t old = s.token[atomic_load(&s.n) - 1];
  atomic_int st = 0;
  RT_REQUIRE(rlock_campaign_async(e, "new", 1, 20000, on_done, &st) == 0);
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_ms();
  kill(leader, sig);
  while (atomic_load(&st) == 0 && rt_now_ms() - t0 < 10000) rt_sleep_ms(2);
  uint64_t took = rt_now_ms() - t0;
  fprintf(stderr, "  new leader %llu ms after the signal\n",
          (unsigned long long)took);
  RT_CHECK_EQ_INT(atomic_load(&st), 1);
  /* Within the lease and a renewal period, with room for round trips
   * under a sanitizer (a bound that catches a hang, not a measure). */
  RT_CHECK(took < (uint64_t)(wd + wd / 3 + 2500));
  RT_CHECK(wait_seen(&s, "new", 3000));
  uint64_t mine = 0;
  RT_CHECK_EQ_INT(rlock_election_token(e, &mine), 0);
  RT_CHECK(mine > old);
  RT_CHECK(!s.order_broken);
  if (sig == SIGSTOP) {
    kill(leader, SIGCONT);
    RT_CHECK(write(done[1], "C", 1) == 1);
    RT_CHECK_EQ_INT(rt_reap(leader), 0); /* it was told it lost */
    /* The resumed old leader wrote nothing: the value stays. */
    char v[32];
    RT_CHECK_EQ_INT(rlock_leader(e, v, sizeof v, NULL), 0);
    RT_CHECK(strcmp(v, "new") == 0);
  } else {
    RT_CHECK_EQ_INT(rt_reap(leader), 128 + SIGKILL);
  }
  close(pfd[0]);
  close(done[1]);
  RT_CHECK_EQ_INT(rlock_resign(e), 0);
  rlock_election_free(e);
  rlock_client_close(c);
}

static void sigkill_n1(void) { leader_fails(1, SIGKILL); }
static void sigkill_n3(void) { leader_fails(3, SIGKILL); }
static void sigstop_n3(void) { leader_fails(3, SIGSTOP); }

/* --- at risk, and back --------------------------------------------------------- */

static atomic_int risk_ev[8], risk_n;
static void on_risk(rlock_election *e, int at_risk, void *arg) {
  (void)e;
  (void)arg;
  int i = atomic_fetch_add(&risk_n, 1);
  if (i < 8) atomic_store(&risk_ev[i], at_risk);
}
static void on_lost_ev(rlock_election *e, void *arg) {
  (void)e;
  (void)arg;
  int i = atomic_fetch_add(&risk_n, 1);
  if (i < 8) atomic_store(&risk_ev[i], 'L');
}

static int wait_risk(int n, int ms) {
  uint64_t t0 = rt_now_ms();
  while (atomic_load(&risk_n) < n && rt_now_ms() - t0 < (uint64_t)ms)
    rt_sleep_ms(2);
  return atomic_load(&risk_n);
}

/* N = 3: a majority stopped puts the leader at risk (1) and back (0)
 * when resumed in time; stopped past the validity, 1 then lost. */
static void risk_then_back_or_lost_n3(void) {
  const int64_t wd = 3000;
  rlock_client *c = rt_client_wd(srv, 3, 100, wd);
  RT_REQUIRE(c != NULL);
  rlock_election *e;
  RT_REQUIRE(rlock_election_get(c, "risky", &e) == 0);
  atomic_store(&risk_n, 0);
  RT_REQUIRE(rlock_election_set_risk_cb(e, on_risk, NULL) == 0);
  RT_REQUIRE(rlock_election_set_lost_cb(e, on_lost_ev, NULL) == 0);
  RT_REQUIRE(rlock_campaign(e, "r", 3000) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  int k = wait_risk(1, 5000);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(k >= 1);
  RT_CHECK_EQ_INT(atomic_load(&risk_ev[0]), 1);
  RT_REQUIRE(wait_risk(2, 4000) >= 2);
  RT_CHECK_EQ_INT(atomic_load(&risk_ev[1]), 0);
  uint64_t tok;
  RT_CHECK_EQ_INT(rlock_election_token(e, &tok), 0);
  /* Now past the validity: 1, then lost. */
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  k = wait_risk(4, (int)wd + 3000);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_CHECK(k >= 4);
  RT_CHECK_EQ_INT(atomic_load(&risk_ev[2]), 1);
  RT_CHECK_EQ_INT(atomic_load(&risk_ev[3]), 'L');
  RT_CHECK_EQ_INT(rlock_election_token(e, &tok), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_resign(e), RLOCK_ENOTOWNER);
  rlock_metrics m;
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c, &m), 0);
  RT_CHECK_EQ_INT(m.election_at_risk, 2);
  RT_CHECK_EQ_INT(m.elections_lost, 1);
  rlock_election_free(e);
  rlock_client_close(c);
}

/* --- freeing a handle while its leadership is at risk ------------------------ */

static atomic_int fr_calls;   /* the freed handle's callbacks, all of them */
static atomic_int fr_free_in; /* free from inside the at-risk callback */
static atomic_int fr_freed;

static void fr_on_risk(rlock_election *e, int at_risk, void *arg) {
  (void)at_risk;
  (void)arg;
  atomic_fetch_add(&fr_calls, 1);
  if (atomic_load(&fr_free_in) && !atomic_exchange(&fr_freed, 1))
    rlock_election_free(e); /* on the loop: the resign goes on after */
}
static void fr_on_lost(rlock_election *e, void *arg) {
  (void)e;
  (void)arg;
  atomic_fetch_add(&fr_calls, 1);
}

/* Waits until no key of the election name is left on the masters (the
 * fence key aside), at most ms. */
static int name_gone_n(const char *key, int n, int ms) {
  uint64_t t0 = rt_now_ms();
  do {
    int left = 0;
    for (int i = 0; i < n; i++) left += rt_redis_int(&srv[i], "EXISTS %s", key);
    if (left == 0) return 1;
    rt_sleep_ms(20);
  } while (rt_now_ms() - t0 < (uint64_t)ms);
  return 0;
}

static int name_gone(const char *key, int ms) { return name_gone_n(key, 3, ms); }

/* N = 3: a leader's handle freed while a majority is stopped, once from
 * another thread when the at-risk callback is due (the renewal that
 * misses the majority in flight), once from inside that callback (on the
 * loop). rlock_election_free clears the lock's own lost and at-risk
 * callbacks before its barrier, so no callback of the handle runs after
 * it returns (a count that grows after it would fail), and what the
 * resign could not delete goes with the lease. Under ASan and valgrind a
 * callback on the freed handle would be reported. About 12 s. */
static void free_at_risk_n3(void) {
  const int64_t wd = 2000;
  for (int round = 0; round < 2; round++) {
    rlock_client *c = rt_client_wd(srv, 3, 100, wd);
    RT_REQUIRE(c != NULL);
    const char *name = round == 0 ? "freerisk0" : "freerisk1";
    char key[64];
    snprintf(key, sizeof key, "rlock:{%s}", name);
    rlock_election *e;
    RT_REQUIRE(rlock_election_get(c, name, &e) == 0);
    atomic_store(&fr_calls, 0);
    atomic_store(&fr_freed, 0);
    atomic_store(&fr_free_in, round == 1);
    RT_REQUIRE(rlock_election_set_risk_cb(e, fr_on_risk, NULL) == 0);
    RT_REQUIRE(rlock_election_set_lost_cb(e, fr_on_lost, NULL) == 0);
    RT_REQUIRE(rlock_campaign(e, "r", 3000) == 0);
    RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
    RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
    int calls;
    if (round == 0) {
      /* Renewals every wd/3; the one after the stop misses, and the next
       * attempt by the halfway point (wd/2 after the last renewal that
       * held) puts it at risk: free just then. */
      rt_sleep_ms((int)(wd / 2));
      rlock_election_free(e);
      calls = atomic_load(&fr_calls);
    } else {
      uint64_t t0 = rt_now_ms();
      while (!atomic_load(&fr_freed) && rt_now_ms() - t0 < (uint64_t)wd * 2)
        rt_sleep_ms(2);
      RT_CHECK(atomic_load(&fr_freed));
      calls = atomic_load(&fr_calls);
      RT_CHECK_EQ_INT(calls, 1); /* the at-risk 1, nothing after */
    }
    /* Past the lease while the majority is still stopped: a lost
     * callback would be due now. */
    rt_sleep_ms((int)wd + 500);
    RT_CHECK(rt_redis_resume(&srv[0]) == 0);
    RT_CHECK(rt_redis_resume(&srv[1]) == 0);
    RT_CHECK(name_gone(key, (int)wd + 3000));
    RT_CHECK_EQ_INT(atomic_load(&fr_calls), calls);
    rlock_client_close(c);
  }
}

/* --- a cancel or a free at any point of a campaign --------------------------- */

static atomic_int mid_status;
static void mid_done(rlock_election *e, int status, void *arg) {
  (void)e;
  (void)arg;
  atomic_store(&mid_status, status == 0 ? 1 : status);
}

/* N = 1: rlock_campaign_cancel at every point of an uncontended campaign
 * (before the lock is won, while the record is written, after): 0 means
 * the campaign ends RLOCK_ECANCELED, RLOCK_ENOTOWNER that it had ended,
 * won. Then rlock_election_free at every point: nothing is left (a
 * campaign that won after free looked at it would keep its leadership
 * for ever, renewed). The race windows are narrow: this checks the rules
 * at many points rather than catching a given interleaving. About 3 s. */
static void cancel_or_free_midway_n1(void) {
  rlock_client *c = rt_client(srv, 1, 300);
  RT_REQUIRE(c != NULL);
  rlock_election *e;
  RT_REQUIRE(rlock_election_get(c, "midway", &e) == 0);
  /* How long one campaign takes (the second: the scripts are loaded),
   * to spread the cancels over it. */
  RT_REQUIRE(rlock_campaign(e, "v", 1000) == 0);
  RT_REQUIRE(rlock_resign(e) == 0);
  uint64_t t0 = rt_now_us();
  RT_REQUIRE(rlock_campaign(e, "v", 1000) == 0);
  uint64_t span = rt_now_us() - t0;
  RT_REQUIRE(rlock_resign(e) == 0);
  if (span < 20) span = 20;
  unsigned seed = 12345;
  int canceled = 0, won = 0;
  for (int i = 0; i < 150; i++) {
    atomic_store(&mid_status, 0);
    /* An owner of its own each time: a give-back of the last campaign
     * may still be on its way, and the same owner would be the same
     * holder (reentrant) to the masters. */
    RT_REQUIRE(rlock_campaign_async(e, "v", 100 + (uint64_t)i, 1000, mid_done,
                                    NULL) == 0);
    usleep((useconds_t)(rand_r(&seed) % span));
    int rc = rlock_campaign_cancel(e);
    uint64_t t1 = rt_now_ms();
    while (atomic_load(&mid_status) == 0 && rt_now_ms() - t1 < 3000)
      rt_sleep_ms(1);
    int st = atomic_load(&mid_status);
    if (rc == 0) {
      canceled++;
      RT_CHECK_EQ_INT(st, RLOCK_ECANCELED);
    } else {
      won++;
      RT_CHECK_EQ_INT(rc, RLOCK_ENOTOWNER);
      RT_CHECK_EQ_INT(st, 1);
      RT_CHECK_EQ_INT(rlock_resign(e), 0);
    }
    if (!name_gone_n("rlock:{midway}", 1, 3000)) {
      RT_CHECK(!"a cancelled or resigned campaign left its lock");
      break;
    }
  }
  fprintf(stderr, "  cancels: %d took, %d after the win\n", canceled, won);
  rlock_election_free(e);
  for (int i = 0; i < 150; i++) {
    RT_REQUIRE(rlock_election_get(c, "midway", &e) == 0);
    RT_REQUIRE(rlock_campaign_async(e, "v", 1000 + (uint64_t)i, 1000,
                                    mid_done, NULL) == 0);
    usleep((useconds_t)(rand_r(&seed) % span));
    rlock_election_free(e);
    if (!name_gone_n("rlock:{midway}", 1, 3000)) {
      RT_CHECK(!"a freed handle kept its leadership");
      break;
    }
  }
  rlock_client_close(c);
}

/* A master restarted under a leader: it stays the leader, observers keep
 * it, and the next leader's token is larger. */
static void master_restart_n3(void) {
  rlock_client *a = rt_client_wd(srv, 3, 300, 3000);
  rlock_client *b = rt_client_wd(srv, 3, 300, 3000);
  RT_REQUIRE(a && b);
  rlock_election *ea, *eb;
  RT_REQUIRE(rlock_election_get(a, "restart", &ea) == 0);
  RT_REQUIRE(rlock_election_get(b, "restart", &eb) == 0);
  seen s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_observe(eb, on_change, &s) == 0);
  RT_REQUIRE(rlock_campaign(ea, "one", 2000) == 0);
  RT_CHECK(wait_seen(&s, "one", 3000));
  RT_REQUIRE(rt_redis_kill(&srv[2]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[2]) == 0);
  rt_sleep_ms(1500); /* renewals and a resubscription */
  RT_CHECK_EQ_INT(rlock_proclaim(ea, "one-b"), 0);
  RT_CHECK(wait_seen(&s, "one-b", 3000));
  uint64_t t1;
  RT_CHECK_EQ_INT(rlock_election_token(ea, &t1), 0);
  RT_CHECK_EQ_INT(rlock_resign(ea), 0);
  RT_CHECK_EQ_INT(rlock_campaign(eb, "two", 3000), 0);
  uint64_t t2;
  RT_CHECK_EQ_INT(rlock_election_token(eb, &t2), 0);
  RT_CHECK(t2 > t1);
  RT_CHECK(wait_seen(&s, "two", 3000));
  RT_CHECK(!s.order_broken);
  rlock_election_free(ea);
  rlock_election_free(eb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/*
 * After a reconnect the observer reads the state again: it reaches the
 * master through a proxy that is cut while the leader resigns and the
 * next one takes over (the change's message is lost to it), then let
 * through. Leases are 30 s watchdog ones, so the observer's timer at the
 * old record's expiry cannot be what tells it: it must report the new
 * leader within a few seconds of the heal, and in token order.
 */
static void observer_reconnects_n1(void) {
  rt_proxy *px = rt_proxy_start(srv[0].port);
  RT_REQUIRE(px != NULL);
  rt_redis via = srv[0];
  snprintf(via.url, sizeof via.url, "%s", rt_proxy_url(px));
  rlock_client *o = rt_client_wd(&via, 1, 300, 30000);
  rlock_client *a = rt_client_wd(srv, 1, 300, 30000);
  rlock_client *b = rt_client_wd(srv, 1, 300, 30000);
  RT_REQUIRE(o != NULL && a != NULL && b != NULL);
  rlock_election *eo, *ea, *eb;
  RT_REQUIRE(rlock_election_get(o, "recon", &eo) == 0);
  RT_REQUIRE(rlock_election_get(a, "recon", &ea) == 0);
  RT_REQUIRE(rlock_election_get(b, "recon", &eb) == 0);
  seen s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_observe(eo, on_change, &s) == 0);
  RT_CHECK_EQ_INT(rlock_campaign(ea, "first", 2000), 0);
  RT_CHECK(wait_seen(&s, "first", 5000));
  rt_proxy_cut(px);
  rt_sleep_ms(100);
  RT_CHECK_EQ_INT(rlock_resign(ea), 0);
  RT_CHECK_EQ_INT(rlock_campaign(eb, "second", 2000), 0);
  rt_sleep_ms(300);
  RT_CHECK(!wait_seen(&s, "second", 1)); /* the observer is cut off */
  uint64_t t0 = rt_now_ms();
  rt_proxy_pass(px);
  RT_CHECK(wait_seen(&s, "second", 8000));
  fprintf(stderr, "  the observer saw the new leader %llu ms after the heal\n",
          (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(!s.order_broken);
  rlock_election_free(eo);
  rlock_election_free(eb);
  rlock_election_free(ea);
  rlock_client_close(o);
  rlock_client_close(a);
  rlock_client_close(b);
  rt_proxy_stop(px);
}

/* A leader's lock deleted by force (rlock unlock --force --kind fair, or
 * rlock_force_unlock on a fair handle of the name) tells the observers at
 * once, as a resign does: with a 30 s watchdog lease, waiting for the
 * lease's end would leave them reporting a leader that is gone. */
static void force_unlock_tells_observers_n1(void) {
  rlock_client *a = rt_client_wd(srv, 1, 300, 30000);
  rlock_client *o = rt_client_wd(srv, 1, 300, 30000);
  RT_REQUIRE(a != NULL && o != NULL);
  rlock_election *ea, *eo;
  rlock *f;
  RT_REQUIRE(rlock_election_get(a, "forced", &ea) == 0);
  RT_REQUIRE(rlock_election_get(o, "forced", &eo) == 0);
  RT_REQUIRE(rlock_get_fair(o, "forced", &f) == 0);
  seen s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_observe(eo, on_change, &s) == 0);
  RT_CHECK_EQ_INT(rlock_campaign(ea, "leader", 2000), 0);
  RT_CHECK(wait_seen(&s, "leader", 5000));
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_force_unlock(f), 0);
  RT_CHECK(wait_seen(&s, NULL, 5000));
  fprintf(stderr, "  the observer saw no leader %llu ms after the force\n",
          (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(!s.order_broken);
  rlock_free(f);
  rlock_election_free(eo);
  rlock_election_free(ea);
  rlock_client_close(o);
  rlock_client_close(a);
}

/* Whether channel's subscribers on r come to want within ms, and stay
 * so for 400 ms (a subscription still on its way lands meanwhile). */
static int numsub_settles(rt_redis *r, const char *channel, long long want,
                          int ms) {
  uint64_t t0 = rt_now_ms(), since = 0;
  for (;;) {
    long long n = rt_redis_numsub(r, channel);
    uint64_t now = rt_now_ms();
    if (n != want)
      since = 0;
    else if (since == 0)
      since = now;
    else if (now - since >= 400)
      return 1;
    if (now - t0 >= (uint64_t)ms + 400) {
      fprintf(stderr, "  %s: %lld subscribers, not %lld\n", channel, n, want);
      return 0;
    }
    rt_sleep_ms(10);
  }
}

/* An observer that stops in its first callback. */
static atomic_int stopped_calls;
static void stop_at_first(rlock_election *e, const char *value,
                          uint64_t token, void *arg) {
  (void)value;
  (void)token;
  (void)arg;
  atomic_fetch_add(&stopped_calls, 1);
  rlock_observe(e, NULL, NULL);
}

/* An observer that stops from its first callback leaves no subscription
 * behind: alone on its client, and as the second of two handles of one
 * client, stopped after the first (whose watch it joined, so that its
 * first callback runs as it attaches). */
static void observer_stops_in_callback_n1(void) {
  rlock_client *a = rt_client_wd(srv, 1, 300, 30000);
  rlock_client *o = rt_client_wd(srv, 1, 300, 30000);
  RT_REQUIRE(a != NULL && o != NULL);
  rlock_election *ea, *e1, *e2;
  RT_REQUIRE(rlock_election_get(a, "stops", &ea) == 0);
  RT_REQUIRE(rlock_election_get(o, "stops", &e1) == 0);
  RT_REQUIRE(rlock_election_get(o, "stops", &e2) == 0);
  RT_CHECK_EQ_INT(rlock_campaign(ea, "leader", 2000), 0);
  const char *ch = "rlock:{stops}:e:ch";
  atomic_store(&stopped_calls, 0);
  RT_REQUIRE(rlock_observe(e1, stop_at_first, NULL) == 0);
  uint64_t t0 = rt_now_ms();
  while (atomic_load(&stopped_calls) < 1 && rt_now_ms() - t0 < 5000)
    rt_sleep_ms(2);
  RT_CHECK_EQ_INT(atomic_load(&stopped_calls), 1);
  RT_CHECK(numsub_settles(&srv[0], ch, 0, 3000));
  seen s;
  memset(&s, 0, sizeof s);
  RT_REQUIRE(rlock_observe(e1, on_change, &s) == 0);
  RT_CHECK(wait_seen(&s, "leader", 5000));
  RT_REQUIRE(rlock_observe(e2, stop_at_first, NULL) == 0);
  RT_CHECK_EQ_INT(atomic_load(&stopped_calls), 2);
  RT_CHECK(numsub_settles(&srv[0], ch, 1, 3000)); /* e1's watch is kept */
  RT_REQUIRE(rlock_observe(e1, NULL, NULL) == 0);
  RT_CHECK(numsub_settles(&srv[0], ch, 0, 3000));
  rlock_election_free(e2);
  rlock_election_free(e1);
  rlock_election_free(ea);
  rlock_client_close(o);
  rlock_client_close(a);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"bad_input", bad_input},
      {"basics_n1", basics_n1},
      {"basics_n3", basics_n3},
      {"give_up_leaves_nothing_n1", give_up_leaves_nothing_n1},
      {"give_up_leaves_nothing_n3", give_up_leaves_nothing_n3},
      {"successors_in_order_n1", successors_in_order_n1},
      {"successors_in_order_n3", successors_in_order_n3},
      {"sigkill_n1", sigkill_n1},
      {"sigkill_n3", sigkill_n3},
      {"sigstop_n3", sigstop_n3},
      {"risk_then_back_or_lost_n3", risk_then_back_or_lost_n3},
      {"master_restart_n3", master_restart_n3},
      {"free_at_risk_n3", free_at_risk_n3},
      {"cancel_or_free_midway_n1", cancel_or_free_midway_n1},
      {"observer_reconnects_n1", observer_reconnects_n1},
      {"force_unlock_tells_observers_n1", force_unlock_tells_observers_n1},
      {"observer_stops_in_callback_n1", observer_stops_in_callback_n1},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
