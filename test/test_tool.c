/*
 * Integration tests of the rlock command-line tool (tools/rlock), run as a
 * real program: each case forks and execs the built binary (its path comes
 * from meson in $RLOCK_TOOL) against real redis-server processes, and
 * checks exit codes, output, timing and what is left in Redis. The test
 * program itself is single-threaded and links no rlock code, so under
 * valgrind only the test is checked; the tool runs natively.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static rt_redis srv[1];
static const char *tool;
static char tmp[256]; /* a private directory for outputs and marker files */

/* Every wait is bounded by this much, to turn a hang into a failure. */
#define BOUND_MS 15000

/* --- running the tool -------------------------------------------------- */

/* Tool processes still running; killed after each test. */
#define MAX_PIDS 16
static pid_t live[MAX_PIDS];

static void track(pid_t pid) {
  for (int i = 0; i < MAX_PIDS; i++)
    if (live[i] == 0) {
      live[i] = pid;
      return;
    }
}

static void untrack(pid_t pid) {
  for (int i = 0; i < MAX_PIDS; i++)
    if (live[i] == pid) live[i] = 0;
}

static void kill_leftovers(void) {
  for (int i = 0; i < MAX_PIDS; i++)
    if (live[i] > 0) {
      kill(live[i], SIGKILL);
      waitpid(live[i], NULL, 0);
      live[i] = 0;
    }
}

static void path_of(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", tmp, name);
}

/*
 * Starts the tool with args (NULL-terminated) after "--masters URL" for
 * the shared server, or with exactly args when masters is 0. stdout goes
 * to tmp/<out>.out and stderr to tmp/<out>.err. Returns the pid or -1.
 */
static pid_t spawn_argv(const char *out, int masters, char **args) {
  char *argv[64];
  int n = 0;
  argv[n++] = (char *)tool;
  if (masters) {
    argv[n++] = "--masters";
    argv[n++] = srv[0].url;
  }
  for (int i = 0; args[i] != NULL && n < 63; i++) argv[n++] = args[i];
  argv[n] = NULL;
  char o[512], e[512];
  snprintf(o, sizeof o, "%s/%s.out", tmp, out);
  snprintf(e, sizeof e, "%s/%s.err", tmp, out);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fo < 0 || fe < 0) _exit(120);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(tool, argv);
    _exit(121);
  }
  track(pid);
  return pid;
}

static pid_t spawn(const char *out, ...) {
  char *args[48];
  int n = 0;
  va_list ap;
  va_start(ap, out);
  char *a;
  while ((a = va_arg(ap, char *)) != NULL && n < 47) args[n++] = a;
  va_end(ap);
  args[n] = NULL;
  return spawn_argv(out, 1, args);
}

/*
 * Waits at most timeout_ms for pid. Returns its exit code, 1000 + N if it
 * died of signal N, or -1 on timeout (it is then killed).
 */
static int wait_exit(pid_t pid, int timeout_ms) {
  if (pid <= 0) return -2;
  uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      untrack(pid);
      return WIFSIGNALED(st) ? 1000 + WTERMSIG(st) : WEXITSTATUS(st);
    }
    if (r < 0 && errno != EINTR) return -3;
    if (rt_now_ms() >= end) {
      fprintf(stderr, "  tool pid %d did not exit in %d ms\n", (int)pid,
              timeout_ms);
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      untrack(pid);
      return -1;
    }
    rt_sleep_ms(5);
  }
}

/* Reads tmp/<name> into buf (NUL-terminated); "" if missing. */
static const char *slurp(const char *name, char *buf, size_t size) {
  char p[512];
  path_of(p, sizeof p, name);
  buf[0] = '\0';
  FILE *f = fopen(p, "r");
  if (f == NULL) return buf;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Runs the tool to completion with the shared master; returns as
 * wait_exit, and on an unexpected result the caller can print out.err. */
#define RUN(out, ...) wait_exit(spawn(out, __VA_ARGS__, (char *)NULL), BOUND_MS)

static int file_exists(const char *name) {
  char p[512];
  path_of(p, sizeof p, name);
  return access(p, F_OK) == 0;
}

static void remove_file(const char *name) {
  char p[512];
  path_of(p, sizeof p, name);
  unlink(p);
}

/* Polls until tmp/<name> exists and is not empty; 0, or -1 after ms. */
static int wait_file(const char *name, int ms) {
  char p[512];
  path_of(p, sizeof p, name);
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (rt_now_ms() < end) {
    struct stat sb;
    if (stat(p, &sb) == 0 && sb.st_size > 0) return 0;
    rt_sleep_ms(5);
  }
  return -1;
}

/* Polls until the key exists (1) or not (0) on the shared server. */
static int wait_key(const char *key, int want, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (rt_now_ms() < end) {
    if (rt_redis_int(&srv[0], "EXISTS %s", key) == want) return 0;
    rt_sleep_ms(5);
  }
  return -1;
}

/* --- a tiny JSON syntax checker -------------------------------------------- */

static const char *js_ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

static const char *js_value(const char *p, int depth);

static const char *js_string(const char *p) {
  if (*p++ != '"') return NULL;
  while (*p != '"') {
    if ((unsigned char)*p < 0x20) return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!strchr("0123456789abcdefABCDEF", p[i]) || p[i] == '\0')
            return NULL;
        p += 4;
      } else if (!strchr("\"\\/bfnrt", *p) || *p == '\0') {
        return NULL;
      }
    }
    p++;
  }
  return p + 1;
}

static const char *js_value(const char *p, int depth) {
  if (depth > 32) return NULL;
  p = js_ws(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    int obj = *p == '{';
    p = js_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (obj) {
        p = js_string(js_ws(p));
        if (p == NULL) return NULL;
        p = js_ws(p);
        if (*p++ != ':') return NULL;
      }
      p = js_value(p, depth + 1);
      if (p == NULL) return NULL;
      p = js_ws(p);
      if (*p == ',') {
        p++;
        continue;
      }
      if (*p == close) return p + 1;
      return NULL;
    }
  }
  if (*p == '"') return js_string(p);
  if (strncmp(p, "true", 4) == 0) return p + 4;
  if (strncmp(p, "false", 5) == 0) return p + 5;
  if (strncmp(p, "null", 4) == 0) return p + 4;
  const char *s = p;
  if (*p == '-') p++;
  while (*p >= '0' && *p <= '9') p++;
  return p > s && p[-1] != '-' ? p : NULL;
}

/* 1 if s is exactly one JSON value (and whitespace). */
static int json_valid(const char *s) {
  const char *e = js_value(s, 0);
  return e != NULL && *js_ws(e) == '\0';
}

/* --- cases --------------------------------------------------------------- */

static void exit_codes(void) {
  RT_CHECK_EQ_INT(RUN("ec0", "exec", "codes", "--", "sh", "-c", "exit 0"), 0);
  RT_CHECK_EQ_INT(RUN("ec13", "exec", "codes", "--", "sh", "-c", "exit 13"),
                  13);
  /* Death by a signal is reported as a shell would: 128 + N. */
  RT_CHECK_EQ_INT(
      RUN("ec9", "exec", "codes", "--", "sh", "-c", "kill -KILL $$"), 137);
  /* Without "--" after NAME as well. */
  RT_CHECK_EQ_INT(RUN("ecf", "exec", "codes", "false"), 1);
  RT_CHECK_EQ_INT(RUN("ecnf", "exec", "codes", "--", "/nonexistent/cmd"),
                  127);
  /* Every run released its lock. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{codes}"), 0);
}

/* A lock held by someone else, planted directly in Redis. */
static int plant(const char *key, int ttl_ms) {
  redisReply *r = rt_redis_cmd(&srv[0], "HSET %s other:1 1", key);
  if (r == NULL) return -1;
  freeReplyObject(r);
  if (ttl_ms > 0 &&
      rt_redis_int(&srv[0], "PEXPIRE %s %d", key, ttl_ms) != 1)
    return -1;
  return 0;
}

static void nowait_held(void) {
  RT_REQUIRE(plant("rlock:{busy}", 30000) == 0);
  uint64_t t0 = rt_now_ms();
  int rc = RUN("nw", "exec", "-n", "busy", "--", "sh", "-c", "exit 5");
  uint64_t el = rt_now_ms() - t0;
  RT_CHECK_EQ_INT(rc, 1);
  RT_CHECK(el < 3000); /* at once, not after the 30 s lease */
  RT_CHECK_EQ_INT(
      RUN("nw42", "exec", "-n", "-E", "42", "busy", "--", "true"), 42);
  char err[1024];
  RT_CHECK(strstr(slurp("nw42.err", err, sizeof err), "held") != NULL);
  /* The holder's lock is untouched. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "HEXISTS rlock:{busy} other:1"), 1);
  rt_redis_int(&srv[0], "DEL rlock:{busy}");
}

static void wait_timeout(void) {
  RT_REQUIRE(plant("rlock:{slow}", 30000) == 0);
  uint64_t t0 = rt_now_ms();
  int rc = RUN("wt", "exec", "-w", "0.3", "-E", "42", "slow", "--", "true");
  uint64_t el = rt_now_ms() - t0;
  RT_CHECK_EQ_INT(rc, 42);
  RT_CHECK(el >= 280);
  RT_CHECK(el < 3000);
  /* And a wait that ends because the holder lets go. */
  rt_redis_int(&srv[0], "PEXPIRE rlock:{slow} 500");
  t0 = rt_now_ms();
  rc = RUN("wt2", "exec", "-w", "5", "slow", "--", "true");
  el = rt_now_ms() - t0;
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(el < 4000);
  rt_redis_int(&srv[0], "DEL rlock:{slow}");
}

static void env_token(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "printf '%%s %%s' \"$RLOCK_TOKEN\" \"$RLOCK_NAME\" > %s/tok", tmp);
  RT_REQUIRE(RUN("tok", "exec", "tokens", "--", "sh", "-c", cmd) == 0);
  char buf[256];
  slurp("tok", buf, sizeof buf);
  unsigned long long token = 0;
  char name[64] = "";
  RT_REQUIRE(sscanf(buf, "%llu %63s", &token, name) == 2);
  RT_CHECK(token > 0);
  RT_CHECK(strcmp(name, "tokens") == 0);
  redisReply *r = rt_redis_cmd(&srv[0], "GET rlock:{tokens}:fence");
  RT_REQUIRE(r != NULL && r->type == REDIS_REPLY_STRING);
  RT_CHECK_EQ_INT(strtoull(r->str, NULL, 10), token);
  freeReplyObject(r);
  /* The next holder gets a larger token. */
  RT_REQUIRE(RUN("tok2", "exec", "tokens", "--", "sh", "-c", cmd) == 0);
  unsigned long long token2 = 0;
  RT_REQUIRE(sscanf(slurp("tok", buf, sizeof buf), "%llu", &token2) == 1);
  RT_CHECK(token2 > token);
}

static void mutual_exclusion(void) {
  char log[512], cmd[1200];
  path_of(log, sizeof log, "mx.log");
  unlink(log);
  snprintf(cmd, sizeof cmd,
           "echo start$0 >> %s; sleep 0.4; echo end$0 >> %s", log, log);
  pid_t a = spawn("mxa", "exec", "mx", "--", "sh", "-c", cmd, "1", (char *)NULL);
  RT_REQUIRE(wait_file("mx.log", BOUND_MS) == 0); /* a holds the lock */
  uint64_t t0 = rt_now_ms();
  pid_t b = spawn("mxb", "exec", "mx", "--", "sh", "-c", cmd, "2", (char *)NULL);
  RT_CHECK_EQ_INT(wait_exit(a, BOUND_MS), 0);
  RT_CHECK_EQ_INT(wait_exit(b, BOUND_MS), 0);
  uint64_t el = rt_now_ms() - t0;
  char buf[256];
  slurp("mx.log", buf, sizeof buf);
  RT_CHECK(strcmp(buf, "start1\nend1\nstart2\nend2\n") == 0);
  if (strcmp(buf, "start1\nend1\nstart2\nend2\n") != 0)
    fprintf(stderr, "  log: %s\n", buf);
  RT_CHECK(el >= 500); /* b waited for a's remaining sleep, then slept */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{mx}"), 0);
}

static void lost_lock(void) {
  /* A short watchdog timeout: renewals every 300 ms. */
  pid_t p = spawn("lost", "exec", "--watchdog-timeout", "900", "--grace", "2",
                  "lostlock", "--", "sleep", "30", (char *)NULL);
  RT_REQUIRE(wait_key("rlock:{lostlock}", 1, BOUND_MS) == 0);
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(RUN("lostfu", "unlock", "--force", "lostlock"), 0);
  int rc = wait_exit(p, BOUND_MS);
  uint64_t el = rt_now_ms() - t0;
  RT_CHECK_EQ_INT(rc, 75);
  RT_CHECK(el < 5000); /* about one renewal period, far from 30 s */
  char err[1024];
  RT_CHECK(strstr(slurp("lost.err", err, sizeof err), "lost") != NULL);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{lostlock}"), 0);
}

static void lost_grace_kill(void) {
  /* The child ignores SIGTERM: SIGKILL follows after --grace. */
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "trap '' TERM; touch %s/gk.ready; i=0; "
           "while [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done",
           tmp);
  remove_file("gk.ready");
  pid_t p = spawn("gk", "exec", "--watchdog-timeout", "900", "--grace", "0.5",
                  "gracelock", "--", "sh", "-c", cmd, (char *)NULL);
  RT_REQUIRE(wait_key("rlock:{gracelock}", 1, BOUND_MS) == 0);
  uint64_t t1 = rt_now_ms();
  while (!file_exists("gk.ready") && rt_now_ms() - t1 < BOUND_MS)
    rt_sleep_ms(5);
  rt_redis_int(&srv[0], "DEL rlock:{gracelock}");
  uint64_t t0 = rt_now_ms();
  int rc = wait_exit(p, BOUND_MS);
  uint64_t el = rt_now_ms() - t0;
  RT_CHECK_EQ_INT(rc, 75);
  RT_CHECK(el >= 400); /* the grace period was given */
  RT_CHECK(el < 6000);
}

/* rlock elect runs its command as leader with RLOCK_TOKEN set, exits
 * 75 when the leadership is lost (SIGTERM to the command); rlock observe
 * prints the leader, its change and its end, and exits 0 on SIGTERM. */
static void elect_and_observe(void) {
  pid_t obs = spawn("eobs", "observe", "eo", (char *)NULL);
  rt_sleep_ms(500);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "echo $RLOCK_TOKEN > %s/eo.tok", tmp);
  RT_CHECK_EQ_INT(RUN("eo1", "elect", "--value", "first", "eo", "--", "sh",
                      "-c", cmd), 0);
  char tok[64];
  RT_CHECK(atoll(slurp("eo.tok", tok, sizeof tok)) > 0);
  pid_t p = spawn("eo2", "elect", "--watchdog-timeout", "900", "--grace",
                  "0.5", "--value", "second", "eo", "--", "sleep", "30",
                  (char *)NULL);
  RT_REQUIRE(wait_key("rlock:{eo}", 1, BOUND_MS) == 0);
  rt_sleep_ms(200);
  RT_CHECK_EQ_INT(RUN("eofu", "unlock", "--force", "--fair", "eo"), 0);
  RT_CHECK_EQ_INT(wait_exit(p, BOUND_MS), 75);
  RT_CHECK_EQ_INT(RUN("eo3", "elect", "--sem", "x:2", "eo", "--", "true"),
                  64);
  rt_sleep_ms(300);
  kill(obs, SIGTERM);
  RT_CHECK_EQ_INT(wait_exit(obs, BOUND_MS), 0);
  char out[2048];
  slurp("eobs.out", out, sizeof out);
  fprintf(stderr, "  observed:\n%s", out);
  char *a = strstr(out, "none 0\n");
  char *b = a ? strstr(a, " first\n") : NULL;
  char *c = b ? strstr(b, " second\n") : NULL;
  RT_CHECK(a != NULL && b != NULL && c != NULL);
  RT_CHECK(c != NULL && strstr(c, "none ") != NULL);
  /* A value with a newline stays on its line: it cannot forge a change. */
  obs = spawn("eobs2", "observe", "eo", (char *)NULL);
  rt_sleep_ms(500);
  RT_CHECK_EQ_INT(RUN("eo4", "elect", "--value", "x\nleader 99 forged",
                      "eo", "--", "true"), 0);
  rt_sleep_ms(300);
  kill(obs, SIGTERM);
  RT_CHECK_EQ_INT(wait_exit(obs, BOUND_MS), 0);
  slurp("eobs2.out", out, sizeof out);
  fprintf(stderr, "  observed:\n%s", out);
  RT_CHECK(strstr(out, " x\\x0aleader 99 forged\n") != NULL);
  RT_CHECK(strstr(out, "\nleader 99 forged") == NULL);
}

/* The owner fields of a lock's hash: the fields that do not begin with
 * '#' (an election's record), one per line in buf. Returns how many. */
static int owners_of(const char *key, char *buf, size_t size) {
  redisReply *r = rt_redis_cmd(&srv[0], "HKEYS %s", key);
  int n = 0;
  buf[0] = '\0';
  size_t used = 0;
  for (size_t k = 0; r != NULL && r->type == REDIS_REPLY_ARRAY &&
                     k < r->elements;
       k++) {
    if (r->element[k]->str[0] == '#') continue;
    used += (size_t)snprintf(buf + used, size - used, "%s\n",
                             r->element[k]->str);
    n++;
  }
  if (r != NULL) freeReplyObject(r);
  return n;
}

/* The i-th member (from 0) of a fair queue, in queue order, into buf. */
static int queue_member(const char *key, int i, char *buf, size_t size) {
  redisReply *r = rt_redis_cmd(&srv[0], "ZRANGE %s %d %d", key, i, i);
  int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1;
  if (ok) snprintf(buf, size, "%s", r->element[0]->str);
  if (r != NULL) freeReplyObject(r);
  return ok ? 0 : -1;
}

/* rlock status of an election: the leader, its value, token and lease,
 * the campaigners in queue order; the leader record's fields ('#t', '#v',
 * '#o' in the fair lock's hash) are never shown as holders by status or
 * scan, and unlock --force ends the leadership. */
static void status_election(void) {
  static char out[16384];
  char cmd[700], want[600];
  snprintf(cmd, sizeof cmd,
           "echo \"$RLOCK_TOKEN\" > %s/se.tok; "
           "while [ ! -e %s/se.stop ]; do sleep 0.05; done",
           tmp, tmp);
  remove_file("se.tok");
  remove_file("se.stop");
  pid_t lead = spawn("sel", "elect", "--value", "leader \"one\"", "se", "--",
                     "sh", "-c", cmd, (char *)NULL);
  RT_REQUIRE(wait_file("se.tok", BOUND_MS) == 0);
  /* The record is written right after the lock is won. */
  uint64_t end = rt_now_ms() + BOUND_MS;
  while (rt_redis_int(&srv[0], "HEXISTS rlock:{se} #t") != 1 &&
         rt_now_ms() < end)
    rt_sleep_ms(10);
  RT_REQUIRE(rt_redis_int(&srv[0], "HLEN rlock:{se}") == 4);
  char tok[64];
  slurp("se.tok", tok, sizeof tok);
  tok[strcspn(tok, "\n")] = '\0';
  char leader[256];
  RT_REQUIRE(owners_of("rlock:{se}", leader, sizeof leader) == 1);
  leader[strcspn(leader, "\n")] = '\0';
  /* Two campaigners, queued one after the other. */
  pid_t c1 = spawn("sec1", "elect", "--value", "c1", "se", "--", "true",
                   (char *)NULL);
  while (rt_redis_int(&srv[0], "ZCARD rlock:{se}:q") != 1 && rt_now_ms() < end)
    rt_sleep_ms(10);
  pid_t c2 = spawn("sec2", "elect", "--value", "c2", "se", "--", "true",
                   (char *)NULL);
  while (rt_redis_int(&srv[0], "ZCARD rlock:{se}:q") != 2 && rt_now_ms() < end)
    rt_sleep_ms(10);
  char q1[256], q2[256];
  RT_REQUIRE(queue_member("rlock:{se}:q", 0, q1, sizeof q1) == 0);
  RT_REQUIRE(queue_member("rlock:{se}:q", 1, q2, sizeof q2) == 0);

  RT_CHECK_EQ_INT(RUN("sej", "status", "--json", "se"), 0);
  slurp("sej.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  /* One holder, the leader; no record field as an owner anywhere. */
  RT_CHECK(strstr(out, "\"owner\":\"#") == NULL);
  snprintf(want, sizeof want, "\"held\":true,\"holders\":[{\"owner\":\"%s\","
           "\"count\":1}]", leader);
  RT_CHECK(strstr(out, want) != NULL);
  RT_CHECK(strstr(out, "\"held_on\":1") != NULL);
  snprintf(want, sizeof want,
           "\"election\":{\"leader\":\"%s\",\"value\":\"leader \\\"one\\\"\","
           "\"token\":%s,\"lease_ms\":",
           leader, tok);
  const char *el = strstr(out, want);
  RT_CHECK(el != NULL);
  if (el != NULL) {
    long lease = strtol(el + strlen(want), NULL, 10);
    RT_CHECK(lease > 0 && lease <= 30000);
  }
  snprintf(want, sizeof want, "\"campaigners\":[{\"owner\":\"%s\"", q1);
  const char *a = strstr(out, want);
  snprintf(want, sizeof want, ",{\"owner\":\"%s\"", q2);
  const char *b = a != NULL ? strstr(a, want) : NULL;
  RT_CHECK(a != NULL && b != NULL);
  RT_CHECK(strstr(out, "\"kinds\":[\"lock\",\"election\",\"fair\"]") != NULL);

  RT_CHECK_EQ_INT(RUN("seh", "status", "se"), 0);
  slurp("seh.out", out, sizeof out);
  fprintf(stderr, "  status:\n%s", out);
  RT_CHECK(strstr(out, "#t") == NULL && strstr(out, "#v") == NULL &&
           strstr(out, "#o") == NULL);
  snprintf(want, sizeof want, "held by %s (count 1), lease", leader);
  RT_CHECK(strstr(out, want) != NULL);
  snprintf(want, sizeof want,
           "election: leader %s, value \"leader \"one\"\", token %s, lease ",
           leader, tok);
  RT_CHECK(strstr(out, want) != NULL);
  snprintf(want, sizeof want, "campaigners waiting: %s (ticket", q1);
  a = strstr(out, want);
  snprintf(want, sizeof want, ", %s (ticket", q2);
  RT_CHECK(a != NULL && strstr(a, want) != NULL);
  RT_CHECK(strstr(out, "fair queue:") == NULL); /* said as campaigners */
  RT_CHECK(strstr(out, "kinds found: lock election fair") != NULL);

  /* scan counts the leader alone as the hash's holder. */
  RT_CHECK_EQ_INT(RUN("ses", "scan", "--all", "--json"), 0);
  slurp("ses.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "{\"key\":\"rlock:{se}\",\"pttl_ms\":") != NULL);
  const char *k = strstr(out, "{\"key\":\"rlock:{se}\",");
  RT_CHECK(k != NULL && strstr(k, "\"holders\":1,") != NULL &&
           strstr(k, "\"holders\":1,") < strstr(k, "\"kind\""));
  RT_CHECK_EQ_INT(RUN("ses2", "scan", "--all"), 0);
  const char *line = strstr(slurp("ses2.out", out, sizeof out),
                            "rlock:{se}: lease ");
  RT_CHECK(line != NULL && strstr(line, ", 1 holder(s)\n") != NULL &&
           strstr(line, ", 1 holder(s)\n") < strchr(line, '\n'));

  /* unlock --force ends the leadership (rlock elect exits 75) and the
   * record with it; the campaigners lead in turn and are done. */
  RT_CHECK_EQ_INT(RUN("sefu", "unlock", "--force", "--fair", "se"), 0);
  RT_CHECK_EQ_INT(wait_exit(lead, BOUND_MS), 75);
  RT_CHECK_EQ_INT(wait_exit(c1, BOUND_MS), 0);
  RT_CHECK_EQ_INT(wait_exit(c2, BOUND_MS), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{se}"), 0);
  RT_CHECK_EQ_INT(RUN("sej2", "status", "--json", "se"), 0);
  slurp("sej2.out", out, sizeof out);
  RT_CHECK(strstr(out, "\"held\":false,\"holders\":[]") != NULL);
  RT_CHECK(strstr(out, "\"election\":null") != NULL);
  char stop[512];
  path_of(stop, sizeof stop, "se.stop");
  fclose(fopen(stop, "w"));
}

static void lease_runs_out(void) {
  uint64_t t0 = rt_now_ms();
  int rc = RUN("lease", "exec", "--lease", "500", "leased", "--", "sleep",
               "30");
  uint64_t el = rt_now_ms() - t0;
  RT_CHECK_EQ_INT(rc, 75);
  RT_CHECK(el >= 300);
  RT_CHECK(el < 8000);
  /* A command that ends within its lease is not disturbed. */
  RT_CHECK_EQ_INT(RUN("lease2", "exec", "--lease", "5000", "leased", "--",
                      "sh", "-c", "exit 4"),
                  4);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{leased}"), 0);
}

static void signal_forwarding(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "trap 'exit 7' TERM; touch %s/sig.ready; "
           "while :; do sleep 0.05; done",
           tmp);
  remove_file("sig.ready");
  pid_t p = spawn("sig", "exec", "fwd", "--", "sh", "-c", cmd, (char *)NULL);
  uint64_t t0 = rt_now_ms();
  while (!file_exists("sig.ready") && rt_now_ms() - t0 < BOUND_MS)
    rt_sleep_ms(5);
  RT_REQUIRE(file_exists("sig.ready"));
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{fwd}"), 1);
  kill(p, SIGTERM);
  RT_CHECK_EQ_INT(wait_exit(p, BOUND_MS), 7);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{fwd}"), 0);
}

static void signal_while_waiting(void) {
  /* A signal while waiting for the lock cancels the wait: rlock dies of
   * it, the command never runs, and the holder's lock is untouched. */
  RT_REQUIRE(plant("rlock:{sigwait}", 30000) == 0);
  remove_file("sw.ran");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "touch %s/sw.ran", tmp);
  pid_t p = spawn("sw", "exec", "sigwait", "--", "sh", "-c", cmd, (char *)NULL);
  rt_sleep_ms(300);
  kill(p, SIGTERM);
  RT_CHECK_EQ_INT(wait_exit(p, BOUND_MS), 1000 + SIGTERM);
  RT_CHECK(!file_exists("sw.ran"));
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "HLEN rlock:{sigwait}"), 1);
  rt_redis_int(&srv[0], "DEL rlock:{sigwait}");
}

static void status_json(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "echo \"$RLOCK_TOKEN\" > %s/st.tok; "
           "while [ ! -e %s/st.stop ]; do sleep 0.05; done",
           tmp, tmp);
  remove_file("st.tok");
  remove_file("st.stop");
  pid_t p = spawn("sth", "exec", "stat", "--", "sh", "-c", cmd, (char *)NULL);
  RT_REQUIRE(wait_file("st.tok", BOUND_MS) == 0);
  char tok[64];
  slurp("st.tok", tok, sizeof tok);
  tok[strcspn(tok, "\n")] = '\0';
  RT_CHECK(tok[0] != '\0');

  RT_CHECK_EQ_INT(RUN("stj", "status", "--json", "stat"), 0);
  static char out[8192];
  slurp("stj.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"name\":\"stat\"") != NULL);
  RT_CHECK(strstr(out, "\"key\":\"rlock:{stat}\"") != NULL);
  RT_CHECK(strstr(out, "\"ok\":true") != NULL);
  RT_CHECK(strstr(out, "\"held\":true") != NULL);
  RT_CHECK(strstr(out, "\"count\":1") != NULL);
  RT_CHECK(strstr(out, "\"answered\":1") != NULL);
  RT_CHECK(strstr(out, "\"held_on\":1") != NULL);
  char want[128];
  snprintf(want, sizeof want, "\"token\":\"%s\"", tok);
  RT_CHECK(strstr(out, want) != NULL);
  /* The holder is the field in Redis, the async owner 1 of the tool. */
  redisReply *r = rt_redis_cmd(&srv[0], "HKEYS rlock:{stat}");
  RT_REQUIRE(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
  char holder[256];
  snprintf(holder, sizeof holder, "\"owner\":\"%s\"", r->element[0]->str);
  RT_CHECK(strstr(out, holder) != NULL);
  RT_CHECK(strstr(r->element[0]->str, ":a1") != NULL);
  freeReplyObject(r);
  const char *pt = strstr(out, "\"pttl_ms\":");
  RT_REQUIRE(pt != NULL);
  long pttl = strtol(pt + 10, NULL, 10);
  RT_CHECK(pttl > 0 && pttl <= 30000);

  /* The human form says the same. */
  RT_CHECK_EQ_INT(RUN("sth2", "status", "stat"), 0);
  slurp("sth2.out", out, sizeof out);
  RT_CHECK(strstr(out, "held by") != NULL);
  RT_CHECK(strstr(out, tok) != NULL);

  /* Let the holder finish; then the lock shows free, token kept. */
  char stop[512];
  path_of(stop, sizeof stop, "st.stop");
  fclose(fopen(stop, "w"));
  RT_CHECK_EQ_INT(wait_exit(p, BOUND_MS), 0);
  RT_CHECK_EQ_INT(RUN("stj2", "status", "--json", "stat"), 0);
  slurp("stj2.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"held\":false") != NULL);
  RT_CHECK(strstr(out, "\"pttl_ms\":-2") != NULL);
  RT_CHECK(strstr(out, want) != NULL);
}

static void status_unreachable(void) {
  char masters[400];
  snprintf(masters, sizeof masters, "127.0.0.1:1,%s", srv[0].url);
  char *args[] = {"--masters", masters, "status", "--json", "nothing", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("su", 0, args), BOUND_MS), 0);
  static char out[8192];
  slurp("su.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"ok\":false,\"error\":\"") != NULL);
  RT_CHECK(strstr(out, "\"ok\":true") != NULL);
  RT_CHECK(strstr(out, "\"answered\":1") != NULL);
  /* No master at all answering: exit 2, still valid JSON. */
  char *args2[] = {"--masters", "127.0.0.1:1", "status", "--json", "x", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("su2", 0, args2), BOUND_MS), 2);
  RT_CHECK(json_valid(slurp("su2.out", out, sizeof out)));
}

static void password_db(void) {
  rt_redis pw;
  RT_REQUIRE(rt_redis_start(&pw, "sesame") == 0);
  char url[400];
  snprintf(url, sizeof url, "redis://:sesame@127.0.0.1:%d/3", pw.port);
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "echo \"$RLOCK_TOKEN\" > %s/pw.tok; "
           "while [ ! -e %s/pw.stop ]; do sleep 0.05; done",
           tmp, tmp);
  remove_file("pw.tok");
  remove_file("pw.stop");
  char *ex[] = {"--masters", url, "exec", "pwlock", "--", "sh", "-c", cmd,
                NULL};
  pid_t p = spawn_argv("pwh", 0, ex);
  RT_REQUIRE(wait_file("pw.tok", BOUND_MS) == 0);
  char *st[] = {"status", "--json", "--masters", url, "pwlock", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("pws", 0, st), BOUND_MS), 0);
  static char out[8192];
  slurp("pws.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"held\":true") != NULL);
  RT_CHECK(strstr(out, "sesame") == NULL); /* the password is masked */
  RT_CHECK(strstr(out, "redis://:***@127.0.0.1") != NULL);
  /* The lock is in db 3, not db 0. */
  RT_CHECK_EQ_INT(rt_redis_int(&pw, "EXISTS rlock:{pwlock}"), 0);
  redisReply *r = rt_redis_cmd(&pw, "SELECT 3");
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(rt_redis_int(&pw, "EXISTS rlock:{pwlock}"), 1);
  /* A wrong password is an error for that master. */
  char bad[400];
  snprintf(bad, sizeof bad, "redis://:wrong@127.0.0.1:%d/3", pw.port);
  char *st2[] = {"status", "--json", "--masters", bad, "pwlock", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("pws2", 0, st2), BOUND_MS), 2);
  RT_CHECK(strstr(slurp("pws2.out", out, sizeof out), "\"ok\":false") != NULL);
  char stop[512];
  path_of(stop, sizeof stop, "pw.stop");
  fclose(fopen(stop, "w"));
  RT_CHECK_EQ_INT(wait_exit(p, BOUND_MS), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&pw, "EXISTS rlock:{pwlock}"), 0);
  rt_redis_stop(&pw);
}

static void scan_leaks(void) {
  static char out[16384];
  /* Clean: only fencing counters (with TTLs) may be left by other cases. */
  int rc = RUN("sc0", "scan");
  RT_CHECK_EQ_INT(rc, 0);
  if (rc != 0) fprintf(stderr, "  %s", slurp("sc0.out", out, sizeof out));

  redisReply *r = rt_redis_cmd(&srv[0], "HSET rlock:{leak} x 1");
  RT_REQUIRE(r != NULL);
  freeReplyObject(r);
  RT_CHECK_EQ_INT(RUN("sc1", "scan"), 1);
  RT_CHECK(strstr(slurp("sc1.out", out, sizeof out), "rlock:{leak}") != NULL);
  RT_CHECK_EQ_INT(RUN("sc2", "scan", "--json"), 1);
  slurp("sc2.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"key\":\"rlock:{leak}\",\"pttl_ms\":-1") != NULL);
  RT_CHECK(strstr(out, "\"leak\":true") != NULL);
  RT_CHECK(strstr(out, "\"leaks\":1") != NULL);
  /* Another prefix's pattern does not see it. */
  RT_CHECK_EQ_INT(RUN("sc3", "scan", "--pattern", "other:*"), 0);
  rt_redis_int(&srv[0], "DEL rlock:{leak}");
  RT_CHECK_EQ_INT(RUN("sc4", "scan"), 0);

  /* A long remaining lease is reported only with --lease-over. */
  RT_REQUIRE(plant("rlock:{long}", 100000) == 0);
  RT_CHECK_EQ_INT(RUN("sc5", "scan"), 0);
  RT_CHECK_EQ_INT(RUN("sc6", "scan", "--lease-over", "50"), 1);
  RT_CHECK(strstr(slurp("sc6.out", out, sizeof out), "rlock:{long}") != NULL);
  RT_CHECK_EQ_INT(RUN("sc7", "scan", "--lease-over", "500"), 0);
  rt_redis_int(&srv[0], "DEL rlock:{long}");
  /* --older-than is refused, with the reason. */
  RT_CHECK_EQ_INT(RUN("sc8", "scan", "--older-than", "60"), 64);
  RT_CHECK(strstr(slurp("sc8.err", out, sizeof out), "not supported") !=
           NULL);
}

static void force_unlock(void) {
  RT_REQUIRE(plant("rlock:{forced}", 30000) == 0);
  /* Without --force nothing happens. */
  RT_CHECK_EQ_INT(RUN("fu0", "unlock", "forced"), 64);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{forced}"), 1);
  RT_CHECK_EQ_INT(RUN("fu1", "unlock", "--force", "forced"), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{forced}"), 0);
  /* Then the lock can be had at once. */
  RT_CHECK_EQ_INT(RUN("fu2", "exec", "-n", "forced", "--", "true"), 0);
}

static void no_quorum(void) {
  /* Retried within -w (and for ever without it), then -E's code; -n
   * gives up after the first attempt. */
  char *args[] = {"--masters", "127.0.0.1:1", "exec", "-w", "1",
                  "--connect-timeout", "300", "-E", "9", "nq", "--", "true",
                  NULL};
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("nq", 0, args), BOUND_MS), 9);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  char *argsn[] = {"--masters", "127.0.0.1:1", "exec", "-n",
                   "--connect-timeout", "300", "-E", "9", "nq", "--", "true",
                   NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("nqn", 0, argsn), BOUND_MS), 9);
  char *args2[] = {"--masters", "127.0.0.1:1", "unlock", "--force",
                   "--connect-timeout", "300", "nq", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("nq2", 0, args2), BOUND_MS), 1);
}

static void usage(void) {
  char *h[] = {"--help", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("h", 0, h), BOUND_MS), 0);
  char out[4096];
  RT_CHECK(strstr(slurp("h.out", out, sizeof out), "usage:") != NULL);
  char *h2[] = {"exec", "--help", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("h2", 0, h2), BOUND_MS), 0);
  RT_CHECK(strstr(slurp("h2.out", out, sizeof out), "--grace") != NULL);
  char *b1[] = {"frobnicate", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("b1", 0, b1), BOUND_MS), 64);
  char *b2[] = {"exec", "-w", "soon", "x", "--", "true", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("b2", 0, b2), BOUND_MS), 64);
  char *b3[] = {"exec", "x", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("b3", 0, b3), BOUND_MS), 64);
  char *b4[] = {"--masters", "http://x:1", "status", "x", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("b4", 0, b4), BOUND_MS), 64);
  RT_CHECK_EQ_INT(RUN("b5", "exec", "bad{name}", "--", "true"), 64);
}


/* --- TLS and unix sockets with credentials -------------------------------- */

/* Runs the tool with exactly args; its exit code. */
static int run_args(const char *out, char **args) {
  return wait_exit(spawn_argv(out, 0, args), BOUND_MS);
}

/* The tool's TLS flags and environment against a TLS-only master: exec,
 * status, scan and unlock --force work with the CA given, and fail with
 * the reason without it. */
static void tls_flags(void) {
  const rt_tls_files *tf = rt_tls();
  RT_REQUIRE(tf != NULL);
  rt_redis r;
  RT_REQUIRE(rt_redis_start_opts(&r, &(rt_redis_opts){.tls = 1}) == 0);
  char *ca = (char *)tf->ca;
  static char out[8192];
  char *ex[] = {"--masters", r.url, "--cacert", ca, "exec", "tlsl", "--",
                "true", NULL};
  RT_CHECK_EQ_INT(run_args("tls1", ex), 0);
  /* Options after the command too, and status/scan over TLS. */
  char *st[] = {"status", "--json", "--masters", r.url, "--cacert", ca,
                "tlsl", NULL};
  RT_CHECK_EQ_INT(run_args("tls2", st), 0);
  RT_CHECK(strstr(slurp("tls2.out", out, sizeof out), "\"ok\":true") != NULL);
  RT_CHECK(strstr(out, "rediss://127.0.0.1") != NULL);
  char *sc[] = {"scan", "--masters", r.url, "--cacert", ca, NULL};
  RT_CHECK_EQ_INT(run_args("tls3", sc), 0);
  char *un[] = {"unlock", "--force", "--masters", r.url, "--cacert", ca,
                "tlsl", NULL};
  RT_CHECK_EQ_INT(run_args("tls4", un), 0);
  /* Without the CA: verification fails, and status says why. */
  unsetenv("SSL_CERT_FILE");
  char *st2[] = {"status", "--masters", r.url, "tlsl", NULL};
  RT_CHECK_EQ_INT(run_args("tls5", st2), 2);
  RT_CHECK(strstr(slurp("tls5.out", out, sizeof out),
                  "certificate verify failed") != NULL);
  char *ex2[] = {"--masters", r.url, "exec", "-n", "tlsl", "--", "true",
                 NULL};
  RT_CHECK_EQ_INT(run_args("tls6", ex2), 1);
  /* The environment's CA. */
  setenv("RLOCK_CACERT", ca, 1);
  RT_CHECK_EQ_INT(run_args("tls7", ex2), 0);
  unsetenv("RLOCK_CACERT");
  /* A CA file that cannot be read is a usage error that says so. */
  char *ex3[] = {"--masters", r.url, "--cacert", "/nonexistent/ca.pem",
                 "exec", "tlsl", "--", "true", NULL};
  RT_CHECK_EQ_INT(run_args("tls8", ex3), 64);
  RT_CHECK(strstr(slurp("tls8.err", out, sizeof out),
                  "/nonexistent/ca.pem") != NULL);
  rt_redis_stop(&r);
}

/* --insecure, --sni, and --cert/--key with a master that requires a
 * client certificate. */
static void tls_verification_flags(void) {
  const rt_tls_files *tf = rt_tls();
  RT_REQUIRE(tf != NULL);
  char *ca = (char *)tf->ca;
  static char out[8192];
  rt_redis other, named, auth;
  RT_REQUIRE(rt_redis_start_opts(&other, &(rt_redis_opts){
      .tls = 1, .tls_cert = tf->other_cert, .tls_key = tf->other_key}) == 0);
  char *a1[] = {"--masters", other.url, "--cacert", ca, "exec", "-n", "v1",
                "--", "true", NULL};
  RT_CHECK_EQ_INT(run_args("tv1", a1), 1);
  char *a2[] = {"--masters", other.url, "--insecure", "exec", "v1", "--",
                "true", NULL};
  RT_CHECK_EQ_INT(run_args("tv2", a2), 0);
  setenv("RLOCK_INSECURE", "1", 1);
  char *a3[] = {"--masters", other.url, "status", "v1", NULL};
  RT_CHECK_EQ_INT(run_args("tv3", a3), 0);
  unsetenv("RLOCK_INSECURE");

  RT_REQUIRE(rt_redis_start_opts(&named, &(rt_redis_opts){
      .tls = 1, .tls_cert = tf->wrongname_cert,
      .tls_key = tf->wrongname_key}) == 0);
  char *b1[] = {"--masters", named.url, "--cacert", ca, "status", "v2", NULL};
  RT_CHECK_EQ_INT(run_args("tv4", b1), 2);
  RT_CHECK(strstr(slurp("tv4.out", out, sizeof out), "mismatch") != NULL);
  char *b2[] = {"--masters", named.url, "--cacert", ca, "--sni",
                "other.example", "exec", "v2", "--", "true", NULL};
  RT_CHECK_EQ_INT(run_args("tv5", b2), 0);

  RT_REQUIRE(rt_redis_start_opts(&auth, &(rt_redis_opts){
      .tls = 1, .tls_auth_clients = 1}) == 0);
  char *c1[] = {"--masters", auth.url, "--cacert", ca, "status", "v3", NULL};
  RT_CHECK_EQ_INT(run_args("tv6", c1), 2);
  RT_CHECK(strstr(slurp("tv6.out", out, sizeof out), "certificate") != NULL);
  char *c2[] = {"--masters", auth.url, "--cacert", ca, "--cert",
                (char *)tf->client_cert, "--key", (char *)tf->client_key,
                "exec", "v3", "--", "true", NULL};
  RT_CHECK_EQ_INT(run_args("tv7", c2), 0);
  setenv("RLOCK_CERT", tf->client_cert, 1);
  setenv("RLOCK_KEY", tf->client_key, 1);
  RT_CHECK_EQ_INT(run_args("tv8", c1), 0);
  unsetenv("RLOCK_CERT");
  unsetenv("RLOCK_KEY");
  rt_redis_stop(&other);
  rt_redis_stop(&named);
  rt_redis_stop(&auth);
}

/* A unix socket with a password and a db, in a comma-separated
 * RLOCK_MASTERS with a TLS master and a plain one. */
static void unix_auth_in_master_list(void) {
  const rt_tls_files *tf = rt_tls();
  RT_REQUIRE(tf != NULL);
  rt_redis sock, tls;
  RT_REQUIRE(rt_redis_start_opts(&sock, &(rt_redis_opts){
      .password = "sesame", .unix_socket = 1}) == 0);
  RT_REQUIRE(rt_redis_start_opts(&tls, &(rt_redis_opts){.tls = 1}) == 0);
  char list[1024];
  snprintf(list, sizeof list, "unix://:sesame@%s?db=2,%s,%s", sock.unixsock,
           tls.url, srv[0].url);
  setenv("RLOCK_MASTERS", list, 1);
  setenv("RLOCK_CACERT", tf->ca, 1);
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "echo \"$RLOCK_TOKEN\" > %s/ux.tok; "
           "while [ ! -e %s/ux.stop ]; do sleep 0.05; done", tmp, tmp);
  remove_file("ux.tok");
  remove_file("ux.stop");
  char *ex[] = {"exec", "uxlock", "--", "sh", "-c", cmd, NULL};
  pid_t p = spawn_argv("ux1", 0, ex);
  RT_CHECK(wait_file("ux.tok", BOUND_MS) == 0);
  static char out[8192];
  char *st[] = {"status", "--json", "uxlock", NULL};
  RT_CHECK_EQ_INT(run_args("ux2", st), 0);
  slurp("ux2.out", out, sizeof out);
  RT_CHECK(strstr(out, "\"held\":true") != NULL);
  RT_CHECK(strstr(out, "sesame") == NULL); /* the password is masked */
  /* In db 2 of the socket's server, not db 0. */
  RT_CHECK_EQ_INT(rt_redis_int(&sock, "EXISTS rlock:{uxlock}"), 0);
  redisReply *r = rt_redis_cmd(&sock, "SELECT 2");
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(rt_redis_int(&sock, "EXISTS rlock:{uxlock}"), 1);
  char stop[512];
  path_of(stop, sizeof stop, "ux.stop");
  fclose(fopen(stop, "w"));
  RT_CHECK_EQ_INT(wait_exit(p, BOUND_MS), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&sock, "EXISTS rlock:{uxlock}"), 0);
  unsetenv("RLOCK_MASTERS");
  unsetenv("RLOCK_CACERT");
  rt_redis_stop(&sock);
  rt_redis_stop(&tls);
}

/* The lock family's kinds: readers share, a writer waits for them, a
 * fair waiter keeps its turn; status shows each kind; unlock --force and
 * scan know them. */
static void kinds(void) {
  static char out[16384];
  char log[512], go[512], cmd[2048];
  path_of(log, sizeof log, "kinds.log");
  path_of(go, sizeof go, "kinds.go");
  unlink(log);
  unlink(go);
  /* Two readers at once: each starts before the other ends. A reader
   * holds until the test has looked at it (the file kinds.go, at most
   * 30 s), however slow the machine. */
  snprintf(cmd, sizeof cmd,
           "echo start$0 >> %s; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; "
           "do sleep 0.05; i=$((i+1)); done; sleep 0.1; echo end$0 >> %s",
           log, go, log);
  pid_t r1 = spawn("kr1", "exec", "--read", "kx", "--", "sh", "-c", cmd, "r1",
                   (char *)NULL);
  pid_t r2 = spawn("kr2", "exec", "--kind", "read", "kx", "--", "sh", "-c",
                   cmd, "r2", (char *)NULL);
  RT_REQUIRE(wait_file("kinds.log", BOUND_MS) == 0);
  for (uint64_t end = rt_now_ms() + BOUND_MS;; rt_sleep_ms(20)) {
    slurp("kinds.log", out, sizeof out);
    if ((strstr(out, "startr1") && strstr(out, "startr2")) ||
        rt_now_ms() > end)
      break;
  }
  RT_REQUIRE(strstr(out, "startr1") && strstr(out, "startr2"));
  /* While they read, a writer cannot have it at once... */
  RT_CHECK_EQ_INT(RUN("kw0", "exec", "--write", "-n", "kx", "--", "true"), 1);
  /* ...and status shows both readers. */
  RT_CHECK_EQ_INT(RUN("ks", "status", "kx"), 0);
  slurp("ks.out", out, sizeof out);
  RT_CHECK(strstr(out, "read-write:") != NULL);
  RT_CHECK(strstr(out, "kinds found: rw") != NULL);
  RT_CHECK_EQ_INT(RUN("ksj", "status", "--json", "kx"), 0);
  slurp("ksj.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"kinds\":[\"rw\"]") != NULL);
  RT_CHECK(strstr(out, "\"readers\":[{\"owner\"") != NULL);
  /* A waiting writer runs once both readers are done. */
  pid_t w = spawn("kw", "exec", "--write", "kx", "--", "sh", "-c", cmd, "w",
                  (char *)NULL);
  int gofd = open(go, O_CREAT | O_WRONLY, 0644);
  RT_REQUIRE(gofd >= 0);
  close(gofd);
  RT_CHECK_EQ_INT(wait_exit(r1, BOUND_MS), 0);
  RT_CHECK_EQ_INT(wait_exit(r2, BOUND_MS), 0);
  RT_CHECK_EQ_INT(wait_exit(w, BOUND_MS), 0);
  slurp("kinds.log", out, sizeof out);
  const char *ew = strstr(out, "startw");
  RT_CHECK(ew != NULL && strstr(out, "endr1") < ew && strstr(out, "endr2") < ew);
  RT_CHECK(strstr(out, "startr2") < strstr(out, "endr1") ||
           strstr(out, "startr1") < strstr(out, "endr2")); /* they overlapped */
  /* A fair lock: the holder, then its waiter; status shows the queue. */
  pid_t f1 = spawn("kf1", "exec", "--fair", "kf", "--", "sleep", "1",
                   (char *)NULL);
  RT_REQUIRE(wait_key("rlock:{kf}", 1, BOUND_MS) == 0);
  pid_t f2 = spawn("kf2", "exec", "--fair", "kf", "--", "true", (char *)NULL);
  uint64_t end = rt_now_ms() + BOUND_MS;
  while (rt_redis_int(&srv[0], "ZCARD rlock:{kf}:q") != 1 && rt_now_ms() < end)
    rt_sleep_ms(10);
  RT_CHECK_EQ_INT(RUN("kfs", "status", "kf"), 0);
  RT_CHECK(strstr(slurp("kfs.out", out, sizeof out), "fair queue:") != NULL);
  RT_CHECK(strstr(out, "kinds found: lock fair") != NULL);
  RT_CHECK_EQ_INT(wait_exit(f1, BOUND_MS), 0);
  RT_CHECK_EQ_INT(wait_exit(f2, BOUND_MS), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{kf}:q"), 0);
  /* unlock --force of each side. */
  redisReply *r = rt_redis_cmd(&srv[0], "ZADD rlock:{kx}:r 99999999999999 o");
  if (r) freeReplyObject(r);
  r = rt_redis_cmd(&srv[0], "HSET rlock:{kx}:rc o 1");
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(RUN("kfr", "unlock", "--force", "--read", "kx"), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{kx}:r"), 0);
  RT_REQUIRE(plant("rlock:{kx}:w", 30000) == 0);
  RT_CHECK_EQ_INT(RUN("kfw", "unlock", "--force", "--write", "kx"), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{kx}:w"), 0);
  RT_CHECK_EQ_INT(RUN("kfb", "unlock", "--force", "--kind", "sideways", "kx"),
                  64);
  /* scan: a waiting-writer set without TTL is a leak; a write hold with a
   * TTL is a lock. */
  r = rt_redis_cmd(&srv[0], "ZADD rlock:{kx}:wq 1 o");
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(RUN("kscan", "scan"), 1);
  RT_CHECK(strstr(slurp("kscan.out", out, sizeof out), "rlock:{kx}:wq: NO TTL") !=
           NULL);
  rt_redis_int(&srv[0], "DEL rlock:{kx}:wq");
  RT_REQUIRE(plant("rlock:{kx}:w", 30000) == 0);
  RT_CHECK_EQ_INT(RUN("kscan2", "scan", "--all"), 0);
  RT_CHECK(strstr(slurp("kscan2.out", out, sizeof out), "rlock:{kx}:w: lease") !=
           NULL);
  rt_redis_int(&srv[0], "DEL rlock:{kx}:w");
}

/* --- semaphores and latches ------------------------------------------------ */

/* The largest number of [start, end] intervals in tmp/<name> (lines "s T"
 * and "e T", T in ns) that overlap at any instant; -1 if unreadable. */
static int log_overlap(const char *name, int *starts) {
  static char buf[16384];
  slurp(name, buf, sizeof buf);
  long long t[128];
  int d[128], n = 0;
  *starts = 0;
  for (char *line = strtok(buf, "\n"); line && n < 128;
       line = strtok(NULL, "\n")) {
    char kind;
    long long v;
    if (sscanf(line, "%c %lld", &kind, &v) != 2) return -1;
    t[n] = v;
    d[n++] = kind == 's' ? 1 : -1;
    *starts += kind == 's';
  }
  for (int i = 0; i < n; i++) /* sort by time, ends first at a tie */
    for (int j = i + 1; j < n; j++)
      if (t[j] < t[i] || (t[j] == t[i] && d[j] < d[i])) {
        long long tt = t[i];
        t[i] = t[j];
        t[j] = tt;
        int dd = d[i];
        d[i] = d[j];
        d[j] = dd;
      }
  int cur = 0, max = 0;
  for (int i = 0; i < n; i++) {
    cur += d[i];
    if (cur > max) max = cur;
  }
  return max;
}

/* Six commands under `exec --sem pool:2` started at once: at most two run
 * at any instant (their own start and end times say so), all run. */
static void sem_exec_concurrency(void) {
  char log[512], cmd[1200];
  path_of(log, sizeof log, "sem.log");
  unlink(log);
  snprintf(cmd, sizeof cmd,
           "echo \"s $(date +%%s%%N)\" >> %s; "
           "[ -n \"$RLOCK_TOKEN\" ] && [ \"$RLOCK_NAME\" = pool ] || exit 3; "
           "sleep 0.3; echo \"e $(date +%%s%%N)\" >> %s",
           log, log);
  pid_t p[6];
  uint64_t t0 = rt_now_ms();
  for (int i = 0; i < 6; i++) {
    char out[16];
    snprintf(out, sizeof out, "sem%d", i);
    p[i] = spawn(out, "exec", "--sem", "pool:2", "--", "sh", "-c", cmd,
                 (char *)NULL);
  }
  for (int i = 0; i < 6; i++) RT_CHECK_EQ_INT(wait_exit(p[i], BOUND_MS), 0);
  uint64_t el = rt_now_ms() - t0;
  int starts = 0;
  int max = log_overlap("sem.log", &starts);
  fprintf(stderr, "  6 commands, at most %d at once (K = 2), %llu ms\n",
          max, (unsigned long long)el);
  RT_CHECK_EQ_INT(starts, 6);
  RT_CHECK(max >= 1 && max <= 2);
  RT_CHECK(el >= 900); /* three rounds of two */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "HLEN rlock:{pool}:s"), 1); /* K */
}

/* A held semaphore: -n fails at once, a different K is a usage error
 * that names the stored one, and bad options are refused. */
static void sem_exec_refusals(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "echo ok > %s/semr.ready; while [ ! -e %s/semr.stop ]; do sleep "
           "0.05; done",
           tmp, tmp);
  remove_file("semr.ready");
  remove_file("semr.stop");
  pid_t h = spawn("semrh", "exec", "--sem", "one:1", "--", "sh", "-c", cmd,
                  (char *)NULL);
  RT_REQUIRE(wait_file("semr.ready", BOUND_MS) == 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(RUN("semn", "exec", "-n", "--sem", "one:1", "--", "true"),
                  1);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  char err[2048];
  RT_CHECK(strstr(slurp("semn.err", err, sizeof err), "no 1 permit(s) free") !=
           NULL);
  RT_CHECK_EQ_INT(RUN("semk", "exec", "-n", "--sem", "one:3", "--", "true"),
                  64);
  slurp("semk.err", err, sizeof err);
  RT_CHECK(strstr(err, "limit of 1") != NULL);
  if (strstr(err, "limit of 1") == NULL) fprintf(stderr, "  %s", err);
  RT_CHECK_EQ_INT(RUN("semb1", "exec", "--sem", "one", "--", "true"), 64);
  RT_CHECK_EQ_INT(RUN("semb2", "exec", "--sem", "one:0", "--", "true"), 64);
  RT_CHECK_EQ_INT(
      RUN("semb3", "exec", "--permits", "2", "one", "--", "true"), 64);
  RT_CHECK_EQ_INT(RUN("semb4", "exec", "--sem", "one:1", "--permits", "2",
                      "--", "true"),
                  64);
  RT_CHECK_EQ_INT(RUN("semb5", "exec", "--sem", "one:1", "--fair", "--",
                      "true"),
                  64);
  char stop[512];
  path_of(stop, sizeof stop, "semr.stop");
  fclose(fopen(stop, "w"));
  RT_CHECK_EQ_INT(wait_exit(h, BOUND_MS), 0);
  /* Released: the permit is had at once. */
  RT_CHECK_EQ_INT(RUN("semn2", "exec", "-n", "--sem", "one:1", "--", "true"),
                  0);
}

/* status shows a semaphore's holders and a latch, in both forms; scan
 * reports a family key without a TTL. */
static void status_sem_latch(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "echo ok > %s/ssl.ready; while [ ! -e %s/ssl.stop ]; do sleep "
           "0.05; done",
           tmp, tmp);
  remove_file("ssl.ready");
  remove_file("ssl.stop");
  pid_t h = spawn("sslh", "exec", "--sem", "both:3", "--permits", "2", "--",
                  "sh", "-c", cmd, (char *)NULL);
  RT_REQUIRE(wait_file("ssl.ready", BOUND_MS) == 0);
  /* A latch of the same name, as latch_set leaves one. */
  redisReply *r = rt_redis_cmd(&srv[0],
                               "HSET rlock:{both}:l count 2 init 3 gen 17 "
                               "ttl 60000 linger 1000");
  RT_REQUIRE(r != NULL);
  freeReplyObject(r);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "PEXPIRE rlock:{both}:l 60000"), 1);
  RT_CHECK_EQ_INT(RUN("sslj", "status", "--json", "both"), 0);
  static char out[8192];
  slurp("sslj.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"sem\":{\"limit\":3,\"taken\":2,\"free\":1,") !=
           NULL);
  RT_CHECK(strstr(out, ":a1\",\"slots\":[1,2],\"lease_ms\":") != NULL);
  RT_CHECK(strstr(out, "\"latch\":{\"state\":\"counting\",\"count\":2,"
                       "\"init\":3,\"generation\":17,\"pttl_ms\":") != NULL);
  RT_CHECK(strstr(out, "\"held\":false") != NULL); /* no lock of it */
  if (strstr(out, "\"limit\":3") == NULL) fprintf(stderr, "  %s", out);
  RT_CHECK_EQ_INT(RUN("sslh2", "status", "both"), 0);
  slurp("sslh2.out", out, sizeof out);
  RT_CHECK(strstr(out, "semaphore: 2 of 3 permit(s) held, 1 free") != NULL);
  RT_CHECK(strstr(out, "holds slots 1,2") != NULL);
  RT_CHECK(strstr(out, "latch: counting, 2 of 3 left") != NULL);
  if (strstr(out, "latch:") == NULL) fprintf(stderr, "  %s", out);
  char stop[512];
  path_of(stop, sizeof stop, "ssl.stop");
  fclose(fopen(stop, "w"));
  RT_CHECK_EQ_INT(wait_exit(h, BOUND_MS), 0);
  RT_CHECK_EQ_INT(RUN("sslj2", "status", "--json", "both"), 0);
  slurp("sslj2.out", out, sizeof out);
  RT_CHECK(strstr(out, "\"taken\":0,\"free\":3,\"holders\":[]") != NULL);
  /* A latch key left without a TTL is a leak scan reports. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "PERSIST rlock:{both}:l"), 1);
  RT_CHECK_EQ_INT(RUN("sslsc", "scan", "--json"), 1);
  slurp("sslsc.out", out, sizeof out);
  RT_CHECK(json_valid(out));
  RT_CHECK(strstr(out, "\"key\":\"rlock:{both}:l\",\"pttl_ms\":-1") !=
           NULL);
  RT_CHECK(strstr(out, "\"kind\":\"latch\"") != NULL);
  RT_CHECK_EQ_INT(RUN("sslsc2", "scan"), 1);
  RT_CHECK(strstr(slurp("sslsc2.out", out, sizeof out),
                  "latch key, NO TTL (leak)") != NULL);
  rt_redis_int(&srv[0], "DEL rlock:{both}:l");
  RT_CHECK_EQ_INT(RUN("sslsc3", "scan"), 0);
}

/* Each case, then whatever tool process it left running is killed. */

/* --- the edges a new user meets ---------------------------------------------- */

/* Polls until tmp/<name> contains needle; 0, or -1 after ms. */
static int wait_text(const char *name, const char *needle, int ms) {
  static char buf[8192];
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (rt_now_ms() < end) {
    if (strstr(slurp(name, buf, sizeof buf), needle) != NULL) return 0;
    rt_sleep_ms(5);
  }
  return -1;
}

/* A lock taken away while a short command runs, with nothing to notice it
 * before the command ends (a forced unlock between renewals, or of a fixed
 * lease): the final unlock finds it lost, and that is exit 75 whatever the
 * command's status. */
static void lost_at_unlock(void) {
  static const char *const modes[][3] = {{"--lease", "5000", "3"},
                                          {"--watchdog-timeout", "30000", "0"}};
  for (int m = 0; m < 2; m++) {
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "echo x > %s/lu.ready; "
             "while [ ! -e %s/lu.go ]; do sleep 0.05; done; exit %s",
             tmp, tmp, modes[m][2]);
    remove_file("lu.ready");
    remove_file("lu.go");
    pid_t p = spawn("lu", "exec", modes[m][0], modes[m][1], "lulock", "--",
                    "sh", "-c", cmd, (char *)NULL);
    RT_REQUIRE(wait_file("lu.ready", BOUND_MS) == 0);
    RT_CHECK_EQ_INT(RUN("lufu", "unlock", "--force", "lulock"), 0);
    char go[512];
    path_of(go, sizeof go, "lu.go");
    fclose(fopen(go, "w"));
    int rc = wait_exit(p, BOUND_MS);
    char err[1024];
    slurp("lu.err", err, sizeof err);
    if (rc != 75) fprintf(stderr, "  %s: exit %d, stderr: %s\n", modes[m][0],
                          rc, err);
    RT_CHECK_EQ_INT(rc, 75);
    RT_CHECK(strstr(err, "lost") != NULL);
  }
}

/* exec -w rides out a majority that cannot be reached at first (a master
 * restarting), as rlock_trylock does, and reports the last reason when
 * -w runs out, with how many masters were connected. */
static void wait_rides_out_no_quorum(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  RT_REQUIRE(rt_redis_kill(&r) == 0);
  char *ex[] = {"--masters", r.url, "exec", "-v", "-w", "30",
                "--connect-timeout", "300", "-E", "9", "nqw", "--", "sh",
                "-c", "exit 6", NULL};
  pid_t p = spawn_argv("nqw", 0, ex);
  /* The first attempt failed and the tool waits on. */
  int retrying = wait_text("nqw.err", "retrying", BOUND_MS);
  RT_CHECK_EQ_INT(retrying, 0);
  RT_REQUIRE(rt_redis_restart(&r) == 0);
  int rc = wait_exit(p, BOUND_MS);
  char err[2048];
  if (rc != 6)
    fprintf(stderr, "  exit %d: %s\n", rc, slurp("nqw.err", err, sizeof err));
  RT_CHECK_EQ_INT(rc, 6);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "EXISTS rlock:{nqw}"), 0);
  /* Down for the whole wait: -E's code, with the master's last reason. */
  RT_REQUIRE(rt_redis_kill(&r) == 0);
  char *ex2[] = {"--masters", r.url, "exec", "-w", "1", "--connect-timeout",
                 "300", "-E", "9", "nqw2", "--", "true", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("nqw2", 0, ex2), BOUND_MS), 9);
  slurp("nqw2.err", err, sizeof err);
  if (strstr(err, "refused") == NULL) fprintf(stderr, "  stderr: %s\n", err);
  RT_CHECK(strstr(err, "refused") != NULL);
  RT_CHECK(strstr(err, "0 of 1 masters connected") != NULL);
  rt_redis_stop(&r);
}

/* No password in any message of the tool, which names what is wrong. */
static void secrets_masked(void) {
  static char err[2048];
  char *st[] = {"--masters", "redis://:supersecret@127.0.0.1:99999", "status",
                "x", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("sm1", 0, st), BOUND_MS), 64);
  slurp("sm1.err", err, sizeof err);
  if (strstr(err, "supersecret") != NULL || strstr(err, "port") == NULL)
    fprintf(stderr, "  status: %s\n", err);
  RT_CHECK(strstr(err, "supersecret") == NULL);
  RT_CHECK(strstr(err, ":***@") != NULL);
  RT_CHECK(strstr(err, "port") != NULL); /* the parser's reason */
  char *ex[] = {"--masters", "redis://user:supersecret@127.0.0.1:99999",
                "exec", "x", "--", "true", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("sm2", 0, ex), BOUND_MS), 64);
  slurp("sm2.err", err, sizeof err);
  if (strstr(err, "supersecret") != NULL) fprintf(stderr, "  exec: %s\n", err);
  RT_CHECK(strstr(err, "supersecret") == NULL);
  RT_CHECK(strstr(err, "user:***@") != NULL);
  char *em[] = {"--masters", "redis://:supersecret@127.0.0.1:1,", "status",
                "x", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("sm3", 0, em), BOUND_MS), 64);
  slurp("sm3.err", err, sizeof err);
  if (strstr(err, "supersecret") != NULL) fprintf(stderr, "  list: %s\n", err);
  RT_CHECK(strstr(err, "supersecret") == NULL);
}

/* Usage errors name the option and what it takes. */
static void usage_reasons(void) {
  static char err[2048];
  RT_CHECK_EQ_INT(RUN("ur1", "exec", "--lease", "abc", "x", "--", "true"), 64);
  slurp("ur1.err", err, sizeof err);
  if (strstr(err, "--lease") == NULL) fprintf(stderr, "  %s", err);
  RT_CHECK(strstr(err, "--lease") != NULL);
  RT_CHECK_EQ_INT(RUN("ur2", "exec", "-w", "soon", "x", "--", "true"), 64);
  slurp("ur2.err", err, sizeof err);
  RT_CHECK(strstr(err, "-w") != NULL);
  RT_CHECK(strstr(err, "soon") != NULL);
  RT_CHECK_EQ_INT(RUN("ur3", "exec", "--sem", "enc", "--", "true"), 64);
  slurp("ur3.err", err, sizeof err);
  if (strstr(err, "NAME:K") == NULL) fprintf(stderr, "  %s", err);
  RT_CHECK(strstr(err, "NAME:K") != NULL);
}

/* A plain redis:// URL to a TLS-only port says it may be one. */
static void plain_to_tls_port(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start_opts(&r, &(rt_redis_opts){.tls = 1}) == 0);
  char url[300];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", r.port);
  char *ex[] = {"--masters", url, "exec", "-w", "1", "--connect-timeout",
                "500", "tlsplain", "--", "true", NULL};
  RT_CHECK_EQ_INT(wait_exit(spawn_argv("ptls", 0, ex), BOUND_MS), 1);
  static char err[2048];
  slurp("ptls.err", err, sizeof err);
  if (strstr(err, "rediss://") == NULL) fprintf(stderr, "  %s", err);
  RT_CHECK(strstr(err, "rediss://") != NULL);
  rt_redis_stop(&r);
}


/* README's ACL rule for rlock status and scan (the lock rule, and what
 * they read with) is enough for both, over every kind they show. */
static void status_acl_rule(void) {
  rt_redis r;
  rt_redis_opts o = {.acl_user = "inspector", .acl_password = "insp-pw",
                     .acl_rule = RT_ACL_RULE " +scan +type +hlen +zrange "
                                 "+zcard"};
  RT_REQUIRE(rt_redis_start_opts(&r, &o) == 0);
  char *ex[] = {"--masters", r.url, "exec", "acllock", "--", "true", NULL};
  RT_CHECK_EQ_INT(run_args("sacl0", ex), 0);
  static char out[8192];
  char *st[] = {"status", "--json", "--masters", r.url, "acllock", NULL};
  int rc = run_args("sacl1", st);
  if (rc != 0) fprintf(stderr, "  status: %s%s", slurp("sacl1.out", out,
                       sizeof out), slurp("sacl1.err", out, sizeof out));
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(strstr(slurp("sacl1.out", out, sizeof out), "NOPERM") == NULL);
  char *sc[] = {"scan", "--masters", r.url, NULL};
  rc = run_args("sacl2", sc);
  if (rc != 0) fprintf(stderr, "  scan: %s", slurp("sacl2.err", out,
                       sizeof out));
  RT_CHECK_EQ_INT(rc, 0);
  rt_redis_stop(&r);
}

#define CASE(fn)                                                              \
  static void fn##_case(void) {                                               \
    fn();                                                                     \
    kill_leftovers();                                                         \
  }
CASE(exit_codes)
CASE(nowait_held)
CASE(wait_timeout)
CASE(env_token)
CASE(mutual_exclusion)
CASE(lost_lock)
CASE(lost_grace_kill)
CASE(lease_runs_out)
CASE(signal_forwarding)
CASE(signal_while_waiting)
CASE(status_json)
CASE(status_unreachable)
CASE(password_db)
CASE(scan_leaks)
CASE(force_unlock)
CASE(no_quorum)
CASE(usage)
CASE(tls_flags)
CASE(tls_verification_flags)
CASE(unix_auth_in_master_list)
CASE(kinds)
CASE(sem_exec_concurrency)
CASE(sem_exec_refusals)
CASE(status_sem_latch)
CASE(lost_at_unlock)
CASE(wait_rides_out_no_quorum)
CASE(secrets_masked)
CASE(usage_reasons)
CASE(plain_to_tls_port)
CASE(status_acl_rule)
CASE(elect_and_observe)
CASE(status_election)

static void remove_tmp(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmp);
}

int main(int argc, char **argv) {
  /* From meson, or next to this program in the build tree when run by
   * hand. */
  static char guess[4096];
  tool = getenv("RLOCK_TOOL");
  if (tool == NULL || *tool == '\0') {
    const char *slash = strrchr(argv[0], '/');
    int dirlen = slash ? (int)(slash - argv[0]) : 1;
    snprintf(guess, sizeof guess, "%.*s/../tools/rlock", dirlen,
             slash ? argv[0] : ".");
    tool = guess;
  }
  if (access(tool, X_OK) != 0) {
    fprintf(stderr, "RLOCK_TOOL must name the built rlock tool\n");
    printf("FAIL: setup (RLOCK_TOOL not set or not executable)\n");
    return 1;
  }
  const char *t = getenv("TMPDIR");
  snprintf(tmp, sizeof tmp, "%s/rlock-tool-XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmp) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  if (rt_redis_start_many(srv, 1) != 0) {
    fprintf(stderr, "cannot start %s\n", rt_server_program());
    remove_tmp();
    return 1;
  }
  static const rt_test tests[] = {
      {"exit_codes", exit_codes_case},
      {"nowait_held", nowait_held_case},
      {"wait_timeout", wait_timeout_case},
      {"env_token", env_token_case},
      {"mutual_exclusion", mutual_exclusion_case},
      {"lost_lock", lost_lock_case},
      {"lost_grace_kill", lost_grace_kill_case},
      {"lease_runs_out", lease_runs_out_case},
      {"signal_forwarding", signal_forwarding_case},
      {"signal_while_waiting", signal_while_waiting_case},
      {"status_json", status_json_case},
      {"status_unreachable", status_unreachable_case},
      {"password_db", password_db_case},
      {"scan_leaks", scan_leaks_case},
      {"force_unlock", force_unlock_case},
      {"no_quorum", no_quorum_case},
      {"usage", usage_case},
      {"tls_flags", tls_flags_case},
      {"tls_verification_flags", tls_verification_flags_case},
      {"unix_auth_in_master_list", unix_auth_in_master_list_case},
      {"kinds", kinds_case},
      {"sem_exec_concurrency", sem_exec_concurrency_case},
      {"sem_exec_refusals", sem_exec_refusals_case},
      {"status_sem_latch", status_sem_latch_case},
      {"lost_at_unlock", lost_at_unlock_case},
      {"wait_rides_out_no_quorum", wait_rides_out_no_quorum_case},
      {"secrets_masked", secrets_masked_case},
      {"usage_reasons", usage_reasons_case},
      {"plain_to_tls_port", plain_to_tls_port_case},
      {"status_acl_rule", status_acl_rule_case},
      {"elect_and_observe", elect_and_observe_case},
      {"status_election", status_election_case},
  };
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_redis_stop_many(srv, 1);
  remove_tmp();
  return rc;
}
