/*
 * What a new user meets first, against real servers: a client inherited
 * across fork(), a master whose host name does not resolve, passwords in
 * the reasons an open gives, and the reasons rlock_client_last_error
 * keeps. Each case checks the call's return and the words it leaves.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static rt_redis srv[3];

/* --- fork ----------------------------------------------------------------- */

/* The parent's worker: takes and releases its own lock until told to stop,
 * counting what went wrong. */
typedef struct parent_load {
  rlock *lock;
  atomic_int stop;
  int ok, errors, last_rc;
} parent_load;

static void *parent_work(void *arg) {
  parent_load *p = arg;
  while (!atomic_load(&p->stop)) {
    int rc = rlock_trylock(p->lock, 1000, 5000);
    if (rc == 0) rc = rlock_unlock(p->lock);
    if (rc == 0) {
      p->ok++;
    } else {
      p->errors++;
      p->last_rc = rc;
    }
  }
  return NULL;
}

static void on_async(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)status;
  (void)arg;
}

/* In the child: every call on the inherited client. A bit of the result
 * for each that did not refuse with RLOCK_EFORKED; a hang ends in
 * SIGALRM. */
static int child_calls(rlock_client *c, rlock *l) {
  int bad = 0;
  alarm(20);
  if (rlock_trylock(l, 0, 5000) != RLOCK_EFORKED) bad |= 1 << 0;
  if (rlock_lock(l, RLOCK_WATCHDOG) != RLOCK_EFORKED) bad |= 1 << 1;
  if (rlock_unlock(l) != RLOCK_EFORKED) bad |= 1 << 2;
  if (rlock_is_locked(l) != RLOCK_EFORKED) bad |= 1 << 3;
  rlock *other = NULL;
  if (rlock_get(c, "forked-other", &other) != RLOCK_EFORKED || other != NULL)
    bad |= 1 << 4;
  if (rlock_lock_async(l, 7, 0, 5000, on_async, NULL) != RLOCK_EFORKED)
    bad |= 1 << 5;
  if (rlock_client_wait_ready(c, 1000) != RLOCK_EFORKED) bad |= 1 << 6;
  rlock_metrics *m = malloc(sizeof *m);
  if (m == NULL || rlock_metrics_snapshot(c, m) != RLOCK_EFORKED)
    bad |= 1 << 7;
  free(m);
  char why[256];
  rlock_client_last_error(c, why, sizeof why);
  if (strstr(why, "fork") == NULL) bad |= 1 << 8;
  if (strstr(rlock_strerror(RLOCK_EFORKED), "fork") == NULL) bad |= 1 << 9;
  rlock_sem *sem = NULL;
  if (rlock_sem_get(c, "forked-sem", 2, &sem) != RLOCK_EFORKED) bad |= 1 << 10;
  /* Closing it in the child returns at once and leaves the parent's
   * connections alone (the parent's checks tell). */
  rlock_free(l);
  rlock_client_close(c);
  /* A client of the child's own works. */
  rlock_client *own = rt_client(srv, 1, 1000);
  rlock *ol = NULL;
  if (own == NULL || rlock_get(own, "forked-own", &ol) != 0 ||
      rlock_trylock(ol, 2000, 5000) != 0 || rlock_unlock(ol) != 0)
    bad |= 1 << 11;
  rlock_free(ol);
  rlock_client_close(own);
  return bad;
}

static void fork_inherited_client(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l, *pl;
  RT_REQUIRE(rlock_get(c, "forked", &l) == 0);
  RT_REQUIRE(rlock_get(c, "forked-parent", &pl) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  parent_load load = {.lock = pl};
  atomic_init(&load.stop, 0);
  pthread_t th;
  RT_REQUIRE(pthread_create(&th, NULL, parent_work, &load) == 0);
  rt_sleep_ms(50); /* the parent is busy when it forks */
  fflush(NULL);
  /* The child's verdict comes back through a pipe, not its exit status:
   * under valgrind a forked child exits with valgrind's error status for
   * the memory of the parent's other threads, which it cannot free. */
  int verdict[2];
  RT_REQUIRE(pipe(verdict) == 0);
  pid_t pid = fork();
  RT_REQUIRE(pid >= 0);
  if (pid == 0) {
    close(verdict[0]);
    int bad = child_calls(c, l);
    ssize_t wr = write(verdict[1], &bad, sizeof bad);
    _exit(wr == (ssize_t)sizeof bad ? 0 : 1);
  }
  close(verdict[1]);
  int st = 0;
  pid_t w = -1;
  uint64_t end = rt_now_ms() + 30000;
  while ((w = waitpid(pid, &st, WNOHANG)) == 0 && rt_now_ms() < end)
    rt_sleep_ms(10);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  RT_CHECK(w == pid);
  RT_CHECK(WIFEXITED(st));
  int bad = -1;
  ssize_t got = read(verdict[0], &bad, sizeof bad);
  close(verdict[0]);
  RT_CHECK_EQ_INT(got, (ssize_t)sizeof bad);
  if (got == (ssize_t)sizeof bad && bad != 0)
    fprintf(stderr, "  child: calls not refused, bits 0x%x\n", bad);
  RT_CHECK_EQ_INT(bad, 0);
  if (WIFSIGNALED(st))
    fprintf(stderr, "  child died of signal %d (SIGALRM: it hung)\n",
            WTERMSIG(st));
  /* The parent went on undisturbed while the child ran and closed. */
  rt_sleep_ms(100);
  atomic_store(&load.stop, 1);
  pthread_join(th, NULL);
  if (load.errors != 0)
    fprintf(stderr, "  parent: %d ok, %d errors (last %s)\n", load.ok,
            load.errors, rlock_strerror(load.last_rc));
  RT_CHECK_EQ_INT(load.errors, 0);
  RT_CHECK(load.ok > 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  /* Nothing the child tried reached the master. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{forked}"), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{forked-other}"), 0);
  rlock_free(l);
  rlock_free(pl);
  rlock_client_close(c);
}

/* --- a master whose name does not resolve ---------------------------------- */

static void unresolvable_master(void) {
  const char *m[3] = {srv[0].url, srv[1].url, "no-such-host.invalid:6379"};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 3;
  o.master_timeout_ms = 1000;
  o.connect_timeout_ms = 500;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  rlock_client *c = NULL;
  int rc = rlock_client_open(&c, &o);
  char why[320] = "";
  rlock_open_error(why, sizeof why);
  if (rc != 0) fprintf(stderr, "  open: %s: %s\n", rlock_strerror(rc), why);
  RT_REQUIRE(rc == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 10000), 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "resolve", &l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 5000, 5000), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{resolve}"), 1);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[1], "EXISTS rlock:{resolve}"), 1);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  /* The master is named down, with why. */
  rlock_metrics *mt = malloc(sizeof *mt);
  RT_REQUIRE(mt != NULL);
  RT_REQUIRE(rlock_metrics_snapshot(c, mt) == 0);
  RT_CHECK_EQ_INT(mt->nmasters, 3);
  RT_CHECK(!mt->masters[2].up);
  RT_CHECK(strstr(mt->masters[2].address, "no-such-host.invalid") != NULL);
  RT_CHECK(strstr(mt->masters[2].error, "resolve") != NULL);
  if (strstr(mt->masters[2].error, "resolve") == NULL)
    fprintf(stderr, "  master 2: '%s' '%s'\n", mt->masters[2].address,
            mt->masters[2].error);
  free(mt);
  rlock_free(l);
  rlock_client_close(c);
  /* A malformed address is still refused at open. */
  const char *bad[2] = {srv[0].url, "redis://no-such-host.invalid:99999"};
  o.masters = bad;
  o.nmasters = 2;
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  RT_CHECK(c == NULL);
}

/* --- passwords never in a reason ------------------------------------------- */

static int open_why(const char *master, char *why, size_t size) {
  const char *m[1] = {master};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  rlock_client *c = NULL;
  int rc = rlock_client_open(&c, &o);
  rlock_open_error(why, size);
  if (c != NULL) rlock_client_close(c);
  return rc;
}

static void password_masked(void) {
  static const char *const urls[] = {
      "redis://user:supersecret@127.0.0.1:99999",
      "redis://:supersecret@127.0.0.1:99999",
      "rediss://:supersecret@127.0.0.1:0/1",
      "unix://:supersecret@relative/path",
      "redis-cluster://:supersecret@127.0.0.1:99999",
      "redis-sentinel://:supersecret@127.0.0.1:1",
      "user:supersecret@127.0.0.1:1",
      "http://:supersecret@127.0.0.1:1",
  };
  for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    char why[320];
    int rc = open_why(urls[i], why, sizeof why);
    RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
    if (strstr(why, "supersecret") != NULL || strstr(why, "***") == NULL)
      fprintf(stderr, "  %s -> %s\n", urls[i], why);
    RT_CHECK(strstr(why, "supersecret") == NULL);
    RT_CHECK(strstr(why, "***") != NULL);
  }
  /* Two masters that are one server: both named, neither with its
   * password. */
  char a[300], b[300];
  snprintf(a, sizeof a, "redis://:supersecret@127.0.0.1:%d", srv[0].port);
  snprintf(b, sizeof b, "redis://u:supersecret@127.0.0.1:%d", srv[0].port);
  const char *m[2] = {a, b};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 2;
  rlock_client *c = NULL;
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  char why[320];
  rlock_open_error(why, sizeof why);
  RT_CHECK(strstr(why, "supersecret") == NULL);
  /* The same for a cluster given twice. */
  const char *cl[2] = {"redis-cluster://:supersecret@127.0.0.1:7000",
                       "redis-cluster://u:supersecret@127.0.0.1:7000"};
  o.masters = cl;
  RT_CHECK_EQ_INT(rlock_client_open(&c, &o), RLOCK_EINVAL);
  rlock_open_error(why, sizeof why);
  if (strstr(why, "supersecret") != NULL) fprintf(stderr, "  %s\n", why);
  RT_CHECK(strstr(why, "supersecret") == NULL);
  RT_CHECK(strstr(why, "same server") != NULL);
}

/* --- reasons: the URL forms ------------------------------------------------- */

static void url_reasons(void) {
  char why[320];
  RT_CHECK_EQ_INT(open_why("http://127.0.0.1:1", why, sizeof why),
                  RLOCK_EINVAL);
  /* Every scheme a master takes is listed. */
  RT_CHECK(strstr(why, "redis-cluster://") != NULL);
  RT_CHECK(strstr(why, "rediss-sentinel://") != NULL);
  RT_CHECK(strstr(why, "unix://") != NULL);
  /* A query on a TCP URL: the database goes in the path. */
  RT_CHECK_EQ_INT(open_why("redis://127.0.0.1:1?db=2", why, sizeof why),
                  RLOCK_EINVAL);
  if (strstr(why, "/db") == NULL) fprintf(stderr, "  ?db=2: %s\n", why);
  RT_CHECK(strstr(why, "bad host or port") == NULL);
  RT_CHECK(strstr(why, "/db") != NULL);
}

/* A plain redis:// URL to a TLS-only port: the call's no-quorum comes with
 * a reason that suggests rediss://. */
static void plain_to_tls_port(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start_opts(&r, &(rt_redis_opts){.tls = 1}) == 0);
  char url[300];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", r.port);
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.connect_timeout_ms = 2000;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "tlsplain", &l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), RLOCK_ENOQUORUM);
  char why[256];
  rlock_client_last_error(c, why, sizeof why);
  if (strstr(why, "rediss://") == NULL) fprintf(stderr, "  '%s'\n", why);
  RT_CHECK(strstr(why, "rediss://") != NULL);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

/* --- rlock_client_last_error ----------------------------------------------- */

/* Keeps master 0 busy for about 300 ms with a script that spins, from a
 * connection of its own, as a slow server would be. The spin reads the
 * server's CPU clock (os.clock) where the script has it (Valkey), else
 * TIME (Redis 7.0, whose scripts have no os): from Redis 7.2 on, and on
 * Valkey, TIME in a script is the time the script started at, all along. */
static void *busy_master(void *arg) {
  (void)arg;
  struct timeval tv = {5, 0};
  redisContext *rc = redisConnectWithTimeout("127.0.0.1", srv[0].port, tv);
  if (rc == NULL || rc->err) {
    if (rc) redisFree(rc);
    return NULL;
  }
  redisReply *r = redisCommand(
      rc, "EVAL %s 0",
      "local ok, clock = pcall(function() return os.clock end)\n"
      "local function now()\n"
      "  if ok and clock then return clock() * 1000000 end\n"
      "  local t = redis.call('time')\n"
      "  return t[1] * 1000000 + t[2]\n"
      "end\n"
      "local start = now()\n"
      "repeat until now() - start > 300000\n"
      "return 1");
  if (r) freeReplyObject(r);
  redisFree(rc);
  return NULL;
}

static void last_error_reasons(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "reasons", &l) == 0);
  char why[256];
  /* A lease too short to leave any validity says so, with the minimum. */
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 2), RLOCK_EINVAL);
  rlock_client_last_error(c, why, sizeof why);
  if (strstr(why, "lease_ms 2") == NULL) fprintf(stderr, "  2 ms: %s\n", why);
  RT_CHECK(strstr(why, "lease_ms 2") != NULL);
  RT_CHECK(strstr(why, "at least") != NULL);
  /* A later refusal for another reason replaces it. */
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 100LL * 86400000), RLOCK_EINVAL);
  rlock_client_last_error(c, why, sizeof why);
  RT_CHECK(strstr(why, "lease_ms 2") == NULL);
  /* A call that succeeds clears it. */
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), 0);
  RT_CHECK_EQ_INT(rlock_client_last_error(c, why, sizeof why), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  /* A lease that the round outlasts: a majority grants it, but no
   * validity is left; the call says no quorum, and the reason why. */
  pthread_t busy;
  RT_REQUIRE(pthread_create(&busy, NULL, busy_master, NULL) == 0);
  rt_sleep_ms(50); /* the script runs */
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 100), RLOCK_ENOQUORUM);
  pthread_join(busy, NULL);
  rlock_client_last_error(c, why, sizeof why);
  if (strstr(why, "no validity") == NULL)
    fprintf(stderr, "  100 ms: %s\n", why);
  RT_CHECK(strstr(why, "lease of 100 ms left no validity") != NULL);
  /* A negative wait is refused with its reason too. */
  RT_CHECK_EQ_INT(rlock_trylock(l, -7, 5000), RLOCK_EINVAL);
  rlock_client_last_error(c, why, sizeof why);
  RT_CHECK(strstr(why, "wait_ms -7") != NULL);
  rlock_free(l);
  rlock_client_close(c);
}

/* rlock_client_wait_ready that runs out says why the masters that are
 * not up are not, each as its metrics say. */
static void wait_ready_reasons(void) {
  rt_redis gone;
  RT_REQUIRE(rt_redis_start(&gone, NULL) == 0);
  char url[300];
  snprintf(url, sizeof url, "%s", gone.url);
  rt_redis_stop(&gone);
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 300), RLOCK_ENOQUORUM);
  char why[512];
  rlock_client_last_error(c, why, sizeof why);
  if (strstr(why, "masters[0]") == NULL)
    fprintf(stderr, "  why: %s\n", why);
  RT_CHECK(strstr(why, "masters[0]") != NULL);
  RT_CHECK(strstr(why, "refused") != NULL);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"fork_inherited_client", fork_inherited_client},
      {"unresolvable_master", unresolvable_master},
      {"password_masked", password_masked},
      {"url_reasons", url_reasons},
      {"plain_to_tls_port", plain_to_tls_port},
      {"last_error_reasons", last_error_reasons},
      {"wait_ready_reasons", wait_ready_reasons},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
