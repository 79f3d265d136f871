/*
 * Self-test of the test harness (harness.c): every other integration test
 * trusts it to start real servers, to fault them for real and to report
 * failures, so each of those promises is checked here against the
 * processes, sockets and files themselves. The runner is checked by
 * running it in a forked child on a table of inner tests whose outcome is
 * known, and comparing its output line by line.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Frees rep and says whether it had this type and, for a non-NULL str,
 * this text. */
static int reply_is(redisReply *rep, int type, const char *str) {
  int ok = rep && rep->type == type &&
           (!str || (rep->str && strcmp(rep->str, str) == 0));
  if (rep) freeReplyObject(rep);
  return ok;
}

/* PING on a raw connection of our own with a timeout of ms; 1 on PONG. */
static int raw_ping(int port, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
  int ok = 0;
  if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK)
    ok = reply_is(redisCommand(c, "PING"), REDIS_REPLY_STATUS, "PONG");
  if (c) redisFree(c);
  return ok;
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static int process_gone(pid_t pid) {
  return pid > 0 && kill(pid, 0) == -1 && errno == ESRCH;
}

/* The state letter of /proc/PID/stat ('T' when stopped), or '?'. */
static char proc_state(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return '?';
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : '?';
}

static void test_basic(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  char url[64];
  snprintf(url, sizeof url, "127.0.0.1:%d", r.port);
  RT_CHECK(r.pid > 0);
  RT_CHECK(r.port > 0 && r.port < 65536);
  RT_CHECK(strcmp(r.url, url) == 0);
  RT_CHECK(r.password[0] == '\0');
  RT_CHECK_EQ_INT(r.paused, 0);
  RT_CHECK(reply_is(rt_redis_cmd(&r, "PING"), REDIS_REPLY_STATUS, "PONG"));
  RT_CHECK(reply_is(rt_redis_cmd(&r, "SET %s %b", "k", "v\0w", (size_t)3),
                    REDIS_REPLY_STATUS, "OK"));
  redisReply *rep = rt_redis_cmd(&r, "GET k");
  RT_CHECK(rep && rep->type == REDIS_REPLY_STRING && rep->len == 3 &&
           memcmp(rep->str, "v\0w", 3) == 0);
  if (rep) freeReplyObject(rep);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "INCRBY n %d", 41), 41);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "GET k"), LLONG_MIN);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "NOSUCHCOMMAND"), LLONG_MIN);
  RT_CHECK(reply_is(rt_redis_cmd(&r, "NOSUCHCOMMAND"), REDIS_REPLY_ERROR,
                    NULL));
  RT_CHECK_EQ_INT(rt_redis_dbsize(&r), 2);
  /* The error reply did not break the cached connection. */
  RT_CHECK(raw_ping(r.port, 1000));
  rt_redis_stop(&r);
  RT_CHECK_EQ_INT(r.pid, 0);
}

/* Checks that a client without AUTH is refused and rt_redis_cmd is not. */
static void check_auth(rt_redis *r, const char *password) {
  redisContext *c = redisConnect("127.0.0.1", r->port);
  RT_CHECK(c && !c->err);
  if (c && !c->err) {
    redisReply *rep = redisCommand(c, "GET k");
    RT_CHECK(rep && rep->type == REDIS_REPLY_ERROR &&
             strncmp(rep->str, "NOAUTH", 6) == 0);
    if (rep) freeReplyObject(rep);
    RT_CHECK(reply_is(redisCommand(c, "AUTH %s", "wrong"),
                      REDIS_REPLY_ERROR, NULL));
    RT_CHECK(reply_is(redisCommand(c, "AUTH %s", password),
                      REDIS_REPLY_STATUS, "OK"));
  }
  if (c) redisFree(c);
  RT_CHECK(reply_is(rt_redis_cmd(r, "PING"), REDIS_REPLY_STATUS, "PONG"));
}

static void test_password(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, "s3cret") == 0);
  char url[96];
  snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d", r.port);
  RT_CHECK(strcmp(r.url, url) == 0);
  RT_CHECK(strcmp(r.password, "s3cret") == 0);
  check_auth(&r, "s3cret");
  /* A restarted server keeps its password. */
  RT_CHECK(rt_redis_kill(&r) == 0);
  RT_CHECK(rt_redis_restart(&r) == 0);
  check_auth(&r, "s3cret");
  rt_redis_stop(&r);
}

static void test_pause_resume(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  RT_CHECK(reply_is(rt_redis_cmd(&r, "SET k v"), REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(raw_ping(r.port, 300));
  RT_REQUIRE(rt_redis_pause(&r) == 0);
  RT_CHECK_EQ_INT(r.paused, 1);
  RT_CHECK(proc_state(r.pid) == 'T');
  uint64_t t0 = rt_now_ms();
  RT_CHECK(!raw_ping(r.port, 300));
  /* It waited out the timeout rather than being refused. */
  RT_CHECK(rt_now_ms() - t0 >= 250);
  RT_CHECK(rt_redis_resume(&r) == 0);
  RT_CHECK_EQ_INT(r.paused, 0);
  RT_CHECK(proc_state(r.pid) != 'T');
  RT_CHECK(raw_ping(r.port, 300));
  RT_CHECK(reply_is(rt_redis_cmd(&r, "GET k"), REDIS_REPLY_STRING, "v"));
  /* Stopping a paused server works too. */
  pid_t pid = r.pid;
  RT_CHECK(rt_redis_pause(&r) == 0);
  rt_redis_stop(&r);
  RT_CHECK(process_gone(pid));
}

static void test_kill_restart(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  RT_CHECK(reply_is(rt_redis_cmd(&r, "SET k v"), REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_redis_dbsize(&r), 1);
  int port = r.port;
  pid_t old = r.pid;
  char dir[sizeof r.dir];
  strcpy(dir, r.dir);
  RT_REQUIRE(rt_redis_kill(&r) == 0);
  RT_CHECK_EQ_INT(r.pid, 0);
  RT_CHECK_EQ_INT(r.port, port);
  RT_CHECK(strcmp(r.dir, dir) == 0 && exists(dir));
  RT_CHECK(process_gone(old));
  RT_CHECK(!raw_ping(port, 300));
  RT_CHECK(reply_is(rt_redis_cmd(&r, "PING"), REDIS_REPLY_STATUS, NULL) == 0);
  RT_CHECK_EQ_INT(rt_redis_dbsize(&r), -1);
  RT_CHECK(rt_redis_kill(&r) == -1);
  RT_REQUIRE(rt_redis_restart(&r) == 0);
  RT_CHECK(r.pid > 0 && r.pid != old);
  RT_CHECK_EQ_INT(r.port, port);
  RT_CHECK(raw_ping(port, 1000));
  RT_CHECK_EQ_INT(rt_redis_dbsize(&r), 0);
  RT_CHECK(reply_is(rt_redis_cmd(&r, "GET k"), REDIS_REPLY_NIL, NULL));
  RT_CHECK(rt_redis_restart(&r) == -1); /* It is running. */
  rt_redis_stop(&r);
}

static void test_start_many(void) {
  rt_redis rs[3];
  RT_REQUIRE(rt_redis_start_many(rs, 3) == 0);
  for (int i = 0; i < 3; i++) {
    RT_CHECK(rs[i].pid > 0);
    RT_CHECK(raw_ping(rs[i].port, 1000));
    for (int j = 0; j < i; j++) {
      RT_CHECK(rs[i].port != rs[j].port);
      RT_CHECK(rs[i].pid != rs[j].pid);
      RT_CHECK(strcmp(rs[i].dir, rs[j].dir) != 0);
    }
  }
  RT_CHECK(reply_is(rt_redis_cmd(&rs[1], "SET k v"), REDIS_REPLY_STATUS,
                    "OK"));
  RT_CHECK_EQ_INT(rt_redis_dbsize(&rs[0]), 0);
  RT_CHECK_EQ_INT(rt_redis_dbsize(&rs[1]), 1);
  RT_CHECK_EQ_INT(rt_redis_dbsize(&rs[2]), 0);
  char dirs[3][sizeof rs[0].dir];
  pid_t pids[3];
  for (int i = 0; i < 3; i++) {
    strcpy(dirs[i], rs[i].dir);
    pids[i] = rs[i].pid;
  }
  rt_redis_stop_many(rs, 3);
  for (int i = 0; i < 3; i++) {
    RT_CHECK_EQ_INT(rs[i].pid, 0);
    RT_CHECK(!exists(dirs[i]));
    RT_CHECK(process_gone(pids[i]));
  }
}

static void test_stop(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  char dir[sizeof r.dir], log[sizeof r.dir + 16];
  strcpy(dir, r.dir);
  snprintf(log, sizeof log, "%s/redis.log", dir);
  const char *tmp = getenv("TMPDIR");
  tmp = tmp && *tmp ? tmp : "/tmp";
  RT_CHECK(strncmp(dir, tmp, strlen(tmp)) == 0);
  RT_CHECK(exists(dir) && exists(log));
  /* Files a test makes the server write go too, in subdirectories also. */
  RT_CHECK(reply_is(rt_redis_cmd(&r, "CONFIG SET appendonly yes"),
                    REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(reply_is(rt_redis_cmd(&r, "SAVE"), REDIS_REPLY_STATUS, "OK"));
  char aof[sizeof log];
  snprintf(aof, sizeof aof, "%s/appendonlydir", dir);
  /* Let the AOF rewrite child finish, so that no orphan of it outlives
   * the test (stop kills it too, but it could not reap it). */
  for (uint64_t t0 = rt_now_ms(); rt_now_ms() - t0 < 3000; rt_sleep_ms(10)) {
    redisReply *rep = rt_redis_cmd(&r, "INFO persistence");
    int busy = !rep || rep->type != REDIS_REPLY_STRING ||
               !strstr(rep->str, "aof_rewrite_in_progress:0") ||
               !strstr(rep->str, "aof_rewrite_scheduled:0");
    if (rep) freeReplyObject(rep);
    if (!busy && exists(aof)) break;
  }
  RT_CHECK(exists(aof));
  pid_t pid = r.pid;
  rt_redis copy = r;
  rt_redis_stop(&r);
  RT_CHECK(!exists(dir));
  RT_CHECK(process_gone(pid));
  RT_CHECK_EQ_INT(r.pid, 0);
  RT_CHECK(r.dir[0] == '\0');
  /* Stop is idempotent, and a stale copy cannot signal the old pid. */
  rt_redis_stop(&r);
  RT_CHECK(rt_redis_pause(&copy) == -1);
  RT_CHECK(rt_redis_kill(&copy) == -1);
  rt_redis_stop(&copy);
  rt_redis zero;
  memset(&zero, 0, sizeof zero);
  rt_redis_stop(&zero);
  RT_CHECK_EQ_INT(rt_redis_dbsize(&zero), -1);
}

/* A live process other than pgid itself in process group pgid, or 0. */
static pid_t pgrp_member(pid_t pgid) {
  DIR *d = opendir("/proc");
  pid_t found = 0;
  for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
    pid_t p = (pid_t)atoi(e->d_name);
    char path[64], buf[512], state;
    int ppid, pgrp;
    if (p <= 0 || p == pgid) continue;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    char *q = strrchr(buf, ')');
    if (q && sscanf(q + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
        pgrp == pgid && state != 'Z')
      found = p;
  }
  if (d) closedir(d);
  return found;
}

/* Stop also kills what the server forked (here a slow BGSAVE child), which
 * would otherwise go on writing into the removed directory. As a child
 * subreaper, this process inherits the orphan and sees how it ended. */
static void test_stop_kills_children(void) {
  RT_REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  rt_redis r;
  pid_t child = 0, w = 0;
  int st = 0, started = rt_redis_start(&r, NULL) == 0;
  RT_CHECK(started);
  if (started) {
    RT_CHECK(reply_is(rt_redis_cmd(&r, "MSET a 1 b 2 c 3"),
                      REDIS_REPLY_STATUS, "OK"));
    RT_CHECK(reply_is(rt_redis_cmd(&r, "CONFIG SET rdb-key-save-delay %d",
                                   1000000), REDIS_REPLY_STATUS, "OK"));
    RT_CHECK(reply_is(rt_redis_cmd(&r, "BGSAVE"), REDIS_REPLY_STATUS, NULL));
    for (uint64_t t0 = rt_now_ms(); rt_now_ms() - t0 < 2000; rt_sleep_ms(10))
      if ((child = pgrp_member(r.pid)) != 0) break;
    RT_CHECK(child > 0);
    rt_redis_stop(&r);
  }
  for (uint64_t t0 = rt_now_ms(); child > 0 && rt_now_ms() - t0 < 3000;
       rt_sleep_ms(10))
    if ((w = waitpid(child, &st, WNOHANG)) != 0) break;
  RT_CHECK(child > 0 && w == child && WIFSIGNALED(st) &&
           WTERMSIG(st) == SIGKILL);
  if (child > 0 && w == 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* The server must not hold our descriptors (here a pipe without
 * O_CLOEXEC) nor write to our stdout. */
static void test_fd_hygiene(void) {
  int p[2];
  RT_REQUIRE(pipe(p) == 0);
  struct stat ps;
  RT_CHECK(fstat(p[0], &ps) == 0);
  rt_redis r;
  int started = rt_redis_start(&r, NULL) == 0;
  RT_CHECK(started);
  if (started) {
    char path[128], link[512], want[512];
    int shared = 0, nfds = 0;
    for (int fd = 0; fd < 1024; fd++) {
      struct stat st;
      snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)r.pid, fd);
      if (stat(path, &st) != 0) continue;
      nfds++;
      shared += st.st_dev == ps.st_dev && st.st_ino == ps.st_ino;
    }
    RT_CHECK(nfds >= 3);
    RT_CHECK_EQ_INT(shared, 0);
    RT_CHECK_EQ_INT(getpgid(r.pid), r.pid); /* A process group of its own. */
    snprintf(path, sizeof path, "/proc/%d/fd/1", (int)r.pid);
    ssize_t n = readlink(path, link, sizeof link - 1);
    link[n > 0 ? n : 0] = '\0';
    snprintf(want, sizeof want, "%s/redis.log", r.dir);
    RT_CHECK(strcmp(link, want) == 0);
    rt_redis_stop(&r);
  }
  close(p[0]);
  close(p[1]);
}

static void read_all(int fd, char *buf, size_t size);

/* Forks a child that starts a server, writes "PID DIR" of it to rep and
 * then waits for signals. Returns the child's pid, or -1. */
static pid_t server_child(char *rep, size_t size) {
  int p[2];
  if (pipe(p) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* Even if the test times out. */
    close(p[0]);
    rt_redis r;
    if (rt_redis_start(&r, NULL) == 0)
      dprintf(p[1], "%d %s\n", (int)r.pid, r.dir);
    close(p[1]);
    for (;;) pause();
  }
  close(p[1]);
  if (pid > 0) read_all(p[0], rep, size); /* EOF: the child closed it. */
  else close(p[0]);
  return pid;
}

/* A server dies by SIGKILL with a test process that is SIGKILLed
 * (PR_SET_PDEATHSIG), although its directory stays behind. As a child
 * subreaper, this process inherits the orphaned server and can reap it. */
static void test_parent_death(void) {
  char rep[512], log[300];
  int pid = 0, st = 0;
  char dir[256] = "";
  RT_REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  pid_t child = server_child(rep, sizeof rep);
  RT_CHECK(child > 0);
  RT_CHECK(sscanf(rep, "%d %255s", &pid, dir) == 2);
  RT_CHECK(pid > 0 && proc_state(pid) != '?');
  if (child > 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
  pid_t w = 0;
  uint64_t t0 = rt_now_ms();
  while (pid > 0 && (w = waitpid(pid, &st, WNOHANG)) == 0 &&
         rt_now_ms() - t0 < 3000)
    rt_sleep_ms(10);
  RT_CHECK(w == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  if (pid > 0 && w == 0) kill(pid, SIGKILL), waitpid(pid, NULL, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  snprintf(log, sizeof log, "%s/redis.log", dir);
  RT_CHECK(dir[0] != '\0' && exists(log));
  unlink(log);
  rmdir(dir);
}

/* SIGTERM kills the servers, removes their directories and still
 * terminates the process by that signal. */
static void test_sigterm(void) {
  char rep[512];
  int pid = 0, st = 0;
  char dir[256] = "";
  pid_t child = server_child(rep, sizeof rep);
  RT_REQUIRE(child > 0);
  RT_CHECK(sscanf(rep, "%d %255s", &pid, dir) == 2);
  RT_CHECK(pid > 0 && proc_state(pid) != '?' && exists(dir));
  kill(child, SIGTERM);
  waitpid(child, &st, 0);
  RT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  RT_CHECK(process_gone(pid));
  RT_CHECK(dir[0] != '\0' && !exists(dir));
}

/* A binary that cannot run fails at once, without retries or leftovers;
 * directories go under $TMPDIR. */
static void test_bad_binary(void) {
  char tmp[] = "/tmp/rt_selftest.XXXXXX";
  RT_REQUIRE(mkdtemp(tmp) != NULL);
  char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
  setenv("TMPDIR", tmp, 1);
  char *old_server = getenv("RLOCK_TEST_SERVER")
                         ? strdup(getenv("RLOCK_TEST_SERVER")) : NULL;
  setenv("RLOCK_TEST_SERVER", "/nonexistent/redis-server", 1);
  rt_redis r;
  uint64_t t0 = rt_now_ms();
  RT_CHECK(rt_redis_start(&r, NULL) == -1);
  RT_CHECK(rt_now_ms() - t0 < 1000);
  RT_CHECK_EQ_INT(r.pid, 0);
  RT_CHECK(r.dir[0] == '\0');
  if (old_server) setenv("RLOCK_TEST_SERVER", old_server, 1);
  else unsetenv("RLOCK_TEST_SERVER");
  free(old_server);
  RT_CHECK(rt_redis_start(&r, NULL) == 0);
  RT_CHECK(strncmp(r.dir, tmp, strlen(tmp)) == 0);
  rt_redis_stop(&r);
  if (old) setenv("TMPDIR", old, 1);
  else unsetenv("TMPDIR");
  free(old);
  RT_CHECK(rmdir(tmp) == 0); /* It is empty again. */
}

/* Inner tests, run by rt_main in a forked child. */

static int report_fd = -1;

static void report_server(const rt_redis *r) {
  dprintf(report_fd, "%d %s\n", (int)r->pid, r->dir);
}

static void inner_pass(void) {
  RT_CHECK(1 + 1 == 2);
  RT_CHECK_EQ_INT(2, 2);
}

/* The lines of the first checks of inner_fail and inner_require. */
static const int inner_fail_line = __LINE__ + 2;
static void inner_fail(void) {
  RT_CHECK(1 + 1 == 3);
  RT_CHECK_EQ_INT(2 * 2, 5);
  RT_CHECK(0 > 1);
}

static const int inner_require_line = __LINE__ + 2;
static void inner_require(void) {
  RT_REQUIRE(1 == 2);
  puts("REACHED");
}

static void inner_leak(void) {
  rt_redis r;
  if (rt_redis_start(&r, NULL) == 0) report_server(&r);
}

static const int inner_thread_line = __LINE__ + 2;
static void *failing_thread(void *arg) {
  RT_CHECK(arg == NULL);
  return NULL;
}

/* A check that fails on another thread fails the test. */
static void inner_thread(void) {
  static int not_null;
  pthread_t th;
  RT_REQUIRE(pthread_create(&th, NULL, failing_thread, &not_null) == 0);
  pthread_join(th, NULL);
}

/* A server the inner runner's process starts before rt_main. */
static rt_redis shared_srv;
static int shared_runs;

static const int inner_shared_line = __LINE__ + 2;
static void inner_shared(void) {
  RT_CHECK_EQ_INT(rt_redis_int(&shared_srv, "INCR n"), ++shared_runs);
}

static void inner_hang(void) {
  rt_redis r;
  if (rt_redis_start(&r, NULL) == 0) report_server(&r);
  rt_sleep_ms(10000);
}

static const rt_test inner_tests[] = {
    {"inner_pass", inner_pass},       {"inner_fail", inner_fail},
    {"inner_require", inner_require}, {"inner_leak", inner_leak},
    {"inner_thread", inner_thread},   {"inner_shared", inner_shared},
    {"inner_hang", inner_hang}, /* Must stay last: see run_inner. */
};

typedef struct inner_run {
  int status;
  char out[4096], err[8192], rep[1024];
} inner_run;

static void read_all(int fd, char *buf, size_t size) {
  size_t len = 0;
  while (len + 1 < size) {
    ssize_t n = read(fd, buf + len, size - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  close(fd);
}

/* Runs rt_main on the inner tests in a child: argv names the tests, or if
 * it is empty, all but inner_hang run. With shared, the child starts
 * shared_srv first and leaves it to the runner's atexit cleanup. */
static int run_inner(inner_run *ir, char **argv, int argc,
                     const char *timeout, int shared) {
  int out[2], err[2], rep[2];
  if (pipe(out) || pipe(err) || pipe(rep)) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    close(rep[0]);
    report_fd = rep[1];
    if (timeout) setenv("RT_TEST_TIMEOUT", timeout, 1);
    size_t n = sizeof inner_tests / sizeof inner_tests[0];
    if (shared && rt_redis_start(&shared_srv, NULL) == 0)
      report_server(&shared_srv);
    int rc = rt_main(argc, argv, inner_tests, argc > 1 ? n : n - 1);
    if (shared) exit(rc);
    _exit(rc);
  }
  close(out[1]);
  close(err[1]);
  close(rep[1]);
  read_all(out[0], ir->out, sizeof ir->out);
  read_all(err[0], ir->err, sizeof ir->err);
  read_all(rep[0], ir->rep, sizeof ir->rep);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ir->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return 0;
}

/* Checks that the server the child reported is gone with its dir. */
static void check_reported_gone(const inner_run *ir) {
  int pid = 0;
  char dir[256] = "";
  RT_CHECK(sscanf(ir->rep, "%d %255s", &pid, dir) == 2);
  RT_CHECK(process_gone(pid));
  RT_CHECK(dir[0] != '\0' && !exists(dir));
}

static void test_runner(void) {
  inner_run ir;
  char *all[] = {"inner", NULL};
  RT_REQUIRE(run_inner(&ir, all, 1, "0", 0) == 0);
  char want[1024];
  snprintf(want, sizeof want,
           "PASS: inner_pass\n"
           "FAIL: inner_fail (%s:%d: 1 + 1 == 3)\n"
           "FAIL: inner_require (%s:%d: 1 == 2)\n"
           "PASS: inner_leak\n"
           "FAIL: inner_thread (%s:%d: arg == NULL)\n"
           "FAIL: inner_shared (%s:%d: rt_redis_int(&shared_srv, \"INCR n\") "
           "== ++shared_runs)\n"
           "2 passed, 4 failed\n",
           __FILE__, inner_fail_line, __FILE__, inner_require_line, __FILE__,
           inner_thread_line, __FILE__, inner_shared_line);
  RT_CHECK(strcmp(ir.out, want) == 0);
  if (strcmp(ir.out, want) != 0)
    fprintf(stderr, "  got:\n%s  want:\n%s", ir.out, want);
  RT_CHECK_EQ_INT(ir.status, 1);
  char line[512];
  snprintf(line, sizeof line, "  check failed: %s:%d: 1 + 1 == 3\n",
           __FILE__, inner_fail_line);
  RT_CHECK(strstr(ir.err, line) != NULL);
  /* Both kinds of check went on after failing. */
  RT_CHECK(strstr(ir.err, "left: 4, right: 5") != NULL);
  RT_CHECK(strstr(ir.err, ": 0 > 1\n") != NULL);
  RT_CHECK(strstr(ir.out, "REACHED") == NULL);  /* RT_REQUIRE did not. */
  RT_CHECK(strstr(ir.err, "note: inner_leak left 1 server(s)") != NULL);
  check_reported_gone(&ir);

  char *some[] = {"inner", "inner_pass", "nosuch", NULL};
  RT_REQUIRE(run_inner(&ir, some, 3, NULL, 0) == 0);
  RT_CHECK(strcmp(ir.out, "PASS: inner_pass\nFAIL: nosuch (no such test)\n"
                          "1 passed, 1 failed\n") == 0);
  RT_CHECK_EQ_INT(ir.status, 1);

  char *one[] = {"inner", "inner_pass", NULL};
  RT_REQUIRE(run_inner(&ir, one, 2, NULL, 0) == 0);
  RT_CHECK(strcmp(ir.out, "PASS: inner_pass\n1 passed, 0 failed\n") == 0);
  RT_CHECK_EQ_INT(ir.status, 0);

  /* --except: every test but those named (meson's -more halves). */
  char *but[] = {"inner",        "--except",     "inner_fail",
                 "inner_require", "inner_leak",  "inner_thread",
                 "inner_shared", "inner_hang",   NULL};
  RT_REQUIRE(run_inner(&ir, but, 8, NULL, 0) == 0);
  RT_CHECK(strcmp(ir.out, "PASS: inner_pass\n1 passed, 0 failed\n") == 0);
  RT_CHECK_EQ_INT(ir.status, 0);
  char *but_bad[] = {"inner",        "--except",   "inner_fail",
                     "inner_require", "inner_leak", "inner_thread",
                     "inner_shared", "inner_hang", "nosuch",
                     NULL};
  RT_REQUIRE(run_inner(&ir, but_bad, 9, NULL, 0) == 0);
  RT_CHECK(strcmp(ir.out, "FAIL: nosuch (no such test)\nPASS: inner_pass\n"
                          "1 passed, 1 failed\n") == 0);
  RT_CHECK_EQ_INT(ir.status, 1);
}

/* A server started outside any test outlives each test, and the atexit
 * cleanup stops it at the end. */
static void test_shared_server(void) {
  inner_run ir;
  char *twice[] = {"inner", "inner_shared", "inner_shared", NULL};
  RT_REQUIRE(run_inner(&ir, twice, 3, NULL, 1) == 0);
  RT_CHECK(strcmp(ir.out, "PASS: inner_shared\nPASS: inner_shared\n"
                          "2 passed, 0 failed\n") == 0);
  RT_CHECK_EQ_INT(ir.status, 0);
  RT_CHECK(strstr(ir.err, "note:") == NULL);
  check_reported_gone(&ir);
}

static void test_watchdog(void) {
  inner_run ir;
  char *hang[] = {"inner", "inner_pass", "inner_hang", "inner_pass", NULL};
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(run_inner(&ir, hang, 4, "1", 0) == 0);
  uint64_t took = rt_now_ms() - t0;
  RT_CHECK(strcmp(ir.out, "PASS: inner_pass\nFAIL: inner_hang (timeout)\n"
                          "1 passed, 1 failed\n") == 0);
  RT_CHECK_EQ_INT(ir.status, 1);
  RT_CHECK(took >= 900 && took < 5000);
  check_reported_gone(&ir);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"basic", test_basic},
      {"password", test_password},
      {"pause_resume", test_pause_resume},
      {"kill_restart", test_kill_restart},
      {"start_many", test_start_many},
      {"stop", test_stop},
      {"stop_kills_children", test_stop_kills_children},
      {"fd_hygiene", test_fd_hygiene},
      {"parent_death", test_parent_death},
      {"sigterm", test_sigterm},
      {"bad_binary", test_bad_binary},
      {"runner", test_runner},
      {"shared_server", test_shared_server},
      {"watchdog", test_watchdog},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
