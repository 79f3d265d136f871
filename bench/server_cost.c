/*
 * What rlock's scripts cost the Redis server, next to a minimal
 * Redisson-style lock measured in the same run.
 *
 * At N = 1 the server's one thread bounds every throughput figure, so the
 * server CPU a script takes is what a user's Redis can carry. This program
 * drives each kind's acquire, release, renewal and hand-off scripts with
 * raw hiredis pipelining (the library's own script texts, by the internal
 * scripts.h: no rlock thread runs), one script per measuring window on
 * keys of its own, and reports for each window:
 *   cpu_us   server CPU per operation: the delta of INFO cpu's
 *            used_cpu_user + used_cpu_sys over the window, divided by the
 *            operations (the server's network work included);
 *   call_us  INFO commandstats' usec_per_call of EVALSHA over the window
 *            (the script alone, its redis.call commands included).
 * The minimal pair is Redisson's RedissonLock shape: acquire EXISTS or
 * HEXISTS, HINCRBY, PEXPIRE; release HEXISTS, HINCRBY, DEL, PUBLISH; and
 * the renewal floor is one script of one PEXPIRE per key.
 *
 *   bench_server_cost [-n ops] [-r runs] [-d depth] [host:port]
 *
 * SC_VARIANT=ID=FILE[,ID=FILE...] runs the Lua text in FILE in place of
 * script ID (scripts.h's numbering, e.g. 0 the reentrant lock's acquire;
 * same arguments): a variant is measured beside the minimal pair of the
 * same run before it goes into lib/lua/. SC_ONLY=PREFIX[,PREFIX...]
 * measures only the operations whose names begin so (e.g. "fair.,lock.").
 *
 * Run it against a server of its own (scripts/bench starts one): it
 * resets the server's statistics (CONFIG RESETSTAT) before each window and
 * leaves the fencing counters it creates to their TTL. Every run uses the
 * same lock names; a first, unreported run creates their fencing
 * counters, so the figures are those of locks used again.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "scripts.h"

#define MAX_ARGS 512
#define LEASE "30000"
#define OWNER_A "5f0c6a3e-8d2b-4c71-9a4e-2b7d1c0e9f31:1"
#define OWNER_B "5f0c6a3e-8d2b-4c71-9a4e-2b7d1c0e9f31:2"
#define BATCH 100

static redisContext *C;
static int depth = 256;
static int run_id;
/* The group of the window: the operations judged against one floor. */
static const char *group = "";
static char deadline[64]; /* "<master us + 10 min>:0" */
static char floor_[32];

/* A command being built: its arguments in one pool. */
typedef struct {
  int argc;
  const char *argv[MAX_ARGS];
  size_t len[MAX_ARGS];
  char pool[MAX_ARGS * 64];
  size_t used;
} cmd;

static void add(cmd *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = c->pool + c->used;
  int n = vsnprintf(p, sizeof c->pool - c->used, fmt, ap);
  va_end(ap);
  c->argv[c->argc] = p;
  c->len[c->argc++] = (size_t)n;
  c->used += (size_t)n + 1;
}

static char shas[RL_SCRIPT_COUNT][41];
static char min_acquire_sha[41], min_release_sha[41], min_renew_sha[41];

/* Redisson's RedissonLock.tryLockInnerAsync and unlockInnerAsync. */
static const char min_acquire_lua[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";
static const char min_release_lua[] =
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "local c = redis.call('hincrby', KEYS[1], ARGV[3], -1)\n"
    "if c > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[2], ARGV[1])\n"
    "return 1\n";
static const char min_renew_lua[] =
    "for i = 1, #KEYS do redis.call('pexpire', KEYS[i], ARGV[1]) end\n"
    "return 1\n";

static redisReply *cmd_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = redisvCommand(C, fmt, ap);
  va_end(ap);
  if (r == NULL) {
    fprintf(stderr, "server_cost: %s\n", C->errstr);
    exit(1);
  }
  return r;
}

static void load(const char *body, char sha[41]) {
  redisReply *r = cmd_("SCRIPT LOAD %s", body);
  if (r->type != REDIS_REPLY_STRING) {
    fprintf(stderr, "server_cost: SCRIPT LOAD: %s\n", r->str ? r->str : "?");
    exit(1);
  }
  memcpy(sha, r->str, 41);
  freeReplyObject(r);
}

static double info_field(const char *section, const char *field) {
  redisReply *r = cmd_("INFO %s", section);
  const char *p = r->str ? strstr(r->str, field) : NULL;
  double v = p ? strtod(p + strlen(field), NULL) : 0;
  freeReplyObject(r);
  return v;
}

static double server_cpu_us(void) {
  return (info_field("cpu", "used_cpu_user:") +
          info_field("cpu", "used_cpu_sys:")) * 1e6;
}

/* The key of lock i of kind k: the same names in every run, so that
 * after the first (a warm-up, not reported) each lock is one used before,
 * its fencing counter there, as a lock an application takes again and
 * again. */
static void key(char *out, size_t n, const char *k, int i) {
  snprintf(out, n, "sc:{%s%d}", k, i);
}

typedef void (*build_fn)(cmd *c, int i);
/* 1 where reply r to operation i is what the common path replies. */
typedef int (*check_fn)(const redisReply *r);

/* Sends operations 0..n-1, depth at a time, and counts the replies that
 * check refuses: the figures are only meaningful for the common path. */
static int pipeline(int n, build_fn build, check_fn check) {
  static cmd c;
  int bad = 0;
  for (int at = 0; at < n; at += depth) {
    int m = n - at < depth ? n - at : depth;
    for (int j = 0; j < m; j++) {
      c.argc = 0;
      c.used = 0;
      build(&c, at + j);
      redisAppendCommandArgv(C, c.argc, c.argv, c.len);
    }
    for (int j = 0; j < m; j++) {
      redisReply *r;
      if (redisGetReply(C, (void **)&r) != REDIS_OK) {
        fprintf(stderr, "server_cost: %s\n", C->errstr);
        exit(1);
      }
      if (r->type == REDIS_REPLY_ERROR) {
        if (bad == 0) fprintf(stderr, "server_cost: %s\n", r->str);
        bad++;
      } else if (check && !check(r)) {
        bad++;
      }
      freeReplyObject(r);
    }
  }
  return bad;
}

typedef struct {
  double cpu_us, call_us;
} figure;

static figure sum(figure a, figure b) {
  return (figure){a.cpu_us + b.cpu_us, (a.call_us + b.call_us) / 2};
}

/* SC_ONLY=a,b,...: only the operations whose names begin with one of
 * these (the minimal pair always), to try one kind's variants quickly. */
static const char *only;

static int wanted(const char *name) {
  if (only == NULL || strncmp(name, "minimal.", 8) == 0) return 1;
  for (const char *p = only; *p;) {
    size_t l = strcspn(p, ",");
    if (l > 0 && strncmp(name, p, l) == 0) return 1;
    p += l + (p[l] == ',');
  }
  return 0;
}

/* One measuring window: n operations of one script. */
static figure measure(const char *name, int n, build_fn build,
                      check_fn check) {
  if (!wanted(name)) return (figure){0, 0};
  freeReplyObject(cmd_("CONFIG RESETSTAT"));
  double c0 = server_cpu_us();
  int bad = pipeline(n, build, check);
  double c1 = server_cpu_us();
  figure f = {(c1 - c0) / n, 0};
  redisReply *r = cmd_("INFO commandstats");
  const char *p = r->str ? strstr(r->str, "cmdstat_evalsha:") : NULL;
  p = p ? strstr(p, "usec_per_call=") : NULL;
  f.call_us = p ? strtod(p + strlen("usec_per_call="), NULL) : 0;
  freeReplyObject(r);
  if (bad)
    fprintf(stderr, "server_cost: %s: %d of %d not on the common path\n",
            name, bad, n);
  if (run_id == 0) return f;
  printf("{\"bench\":\"server_cost\",\"run\":%d,\"group\":\"%s\","
         "\"op\":\"%s\",\"ops\":%d,\"cpu_us\":%.3f,\"call_us\":%.3f}\n",
         run_id, group, name, n, f.cpu_us, f.call_us);
  fflush(stdout);
  return f;
}

static void unmeasured(int n, build_fn build) { pipeline(n, build, NULL); }

static void evalsha(cmd *c, const char *sha, int nkeys) {
  add(c, "EVALSHA");
  add(c, "%s", sha);
  add(c, "%d", nkeys);
}

/* Replies. */
static int granted(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
         r->element[0]->integer == 1;
}
static int is_nil(const redisReply *r) { return r->type == REDIS_REPLY_NIL; }
static int is_one(const redisReply *r) {
  return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}
static int all_renewed(const redisReply *r) {
  if (r->type == REDIS_REPLY_STRING) {
    for (size_t i = 0; i < r->len; i++)
      if (r->str[i] != '1') return 0;
    return r->len == BATCH;
  }
  return 0;
}

/* The minimal pair. */
static void min_acquire(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "m", i);
  evalsha(c, min_acquire_sha, 1);
  add(c, "%s", k);
  add(c, LEASE);
  add(c, OWNER_A);
}
static void min_release(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "m", i);
  evalsha(c, min_release_sha, 2);
  add(c, "%s", k);
  add(c, "%s:ch", k);
  add(c, "0");
  add(c, LEASE);
  add(c, OWNER_A);
}
static void min_renew(cmd *c, int b) {
  evalsha(c, min_renew_sha, BATCH);
  for (int j = 0; j < BATCH; j++) {
    char k[64];
    key(k, sizeof k, "m", b * BATCH + j);
    add(c, "%s", k);
  }
  add(c, LEASE);
}

/* The reentrant lock. */
static void lock_acquire_as(cmd *c, int i, const char *kind,
                            const char *owner) {
  char k[64];
  key(k, sizeof k, kind, i);
  evalsha(c, shas[RL_SCRIPT_ACQUIRE], 2);
  add(c, "%s", k);
  add(c, "%s:fence", k);
  add(c, LEASE);
  add(c, "%s", owner);
  add(c, "1");
  add(c, "%s", floor_);
  add(c, "%s", deadline);
}
static void lock_unlock_as(cmd *c, int i, const char *kind,
                           const char *owner) {
  char k[64];
  key(k, sizeof k, kind, i);
  evalsha(c, shas[RL_SCRIPT_UNLOCK], 1);
  add(c, "%s", k);
  add(c, LEASE);
  add(c, "%s", owner);
  add(c, "%s:ch", k);
  add(c, "0");
}
static void lock_acquire(cmd *c, int i) { lock_acquire_as(c, i, "l", OWNER_A); }
static void lock_unlock(cmd *c, int i) { lock_unlock_as(c, i, "l", OWNER_A); }
static void lock_renew(cmd *c, int b) {
  evalsha(c, shas[RL_SCRIPT_RENEW], BATCH);
  for (int j = 0; j < BATCH; j++) {
    char k[64];
    key(k, sizeof k, "l", b * BATCH + j);
    add(c, "%s", k);
  }
  add(c, LEASE);
  for (int j = 0; j < BATCH; j++) add(c, OWNER_A);
}
static void hand_acquire(cmd *c, int i) { lock_acquire_as(c, i, "h", OWNER_A); }
static void hand_unlock(cmd *c, int i) { lock_unlock_as(c, i, "h", OWNER_B); }
static void hand_transfer(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "h", i);
  evalsha(c, shas[RL_SCRIPT_TRANSFER], 2);
  add(c, "%s", k);
  add(c, "%s:fence", k);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "0");
  add(c, OWNER_B);
  add(c, LEASE);
  add(c, "%s", floor_);
  add(c, "%s", deadline);
}

/* The fair lock. */
static void fair_keys(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "f", i);
  add(c, "%s", k);
  add(c, "%s:fence", k);
  add(c, "%s:q", k);
  add(c, "%s:qt", k);
}
static void fair_acquire(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_FAIR_ACQUIRE)], 4);
  fair_keys(c, i);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "1");
  add(c, "%s", floor_);
  add(c, "1");
  add(c, "0");
  add(c, "%s", deadline);
}
static void fair_unlock(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_FAIR_UNLOCK)], 4);
  fair_keys(c, i);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "0");
}

/* The read-write lock. */
static void rw_keys(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "rw", i);
  add(c, "%s:w", k);
  add(c, "%s:r", k);
  add(c, "%s:rc", k);
  add(c, "%s:wq", k);
  add(c, "%s:w:fence", k);
}
static void read_acquire(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_RW_READ_ACQUIRE)], 5);
  rw_keys(c, i);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "1");
  add(c, "%s", floor_);
  add(c, "%s", deadline);
}
static void read_unlock(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_RW_READ_UNLOCK)], 5);
  rw_keys(c, i);
  add(c, OWNER_A);
  add(c, "0");
}
static void read_renew(cmd *c, int b) {
  evalsha(c, shas[RL_FAM(RL_FAM_LEASE_RENEW)], 2 * BATCH);
  for (int j = 0; j < BATCH; j++) {
    char k[64];
    key(k, sizeof k, "rw", b * BATCH + j);
    add(c, "%s:r", k);
    add(c, "%s:rc", k);
  }
  add(c, LEASE);
  for (int j = 0; j < BATCH; j++) add(c, OWNER_A);
}
static void write_acquire(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_RW_WRITE_ACQUIRE)], 5);
  rw_keys(c, i);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "1");
  add(c, "%s", floor_);
  add(c, "0");
  add(c, "%s", deadline);
}
static void write_unlock(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_RW_WRITE_UNLOCK)], 5);
  rw_keys(c, i);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "0");
}

/* The semaphore: one permit of a semaphore of 4 each time. */
static void sem_keys(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "s", i);
  add(c, "%s:s", k);
  add(c, "%s:s:t", k);
  add(c, "%s:s:fence", k);
}
static void sem_acquire(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_SEM_ACQUIRE)], 3);
  sem_keys(c, i);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "%s", floor_);
  add(c, "4");
  add(c, "1");
  add(c, "60000");
  add(c, "%s", deadline);
}
static void sem_release(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_SEM_RELEASE)], 3);
  sem_keys(c, i);
  add(c, OWNER_A);
  add(c, "1");
}

/* The latch: set to 1, then the count-down that opens it. */
static void latch_keys(cmd *c, int i) {
  char k[64];
  key(k, sizeof k, "c", i);
  add(c, "%s:l", k);
  add(c, "%s:l:d", k);
}
static void latch_set(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_LATCH_SET)], 2);
  latch_keys(c, i);
  add(c, "1");
  add(c, LEASE);
  add(c, "1000");
}
static void latch_down(cmd *c, int i) {
  evalsha(c, shas[RL_FAM(RL_FAM_LATCH_COUNT_DOWN)], 2);
  latch_keys(c, i);
  add(c, "id1");
}
static int opened(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
         r->element[0]->integer == 2;
}

/* Two locks at once. */
static void multi_acquire(cmd *c, int i) {
  char k1[64], k2[64];
  key(k1, sizeof k1, "ma", i);
  key(k2, sizeof k2, "mb", i);
  evalsha(c, shas[RL_FAM(RL_FAM_MULTI_ACQUIRE)], 4);
  add(c, "%s", k1);
  add(c, "%s:fence", k1);
  add(c, "%s", k2);
  add(c, "%s:fence", k2);
  add(c, LEASE);
  add(c, OWNER_A);
  add(c, "%s", floor_);
  add(c, "1");
  add(c, "1");
  add(c, "%s", deadline);
}
static int all_released(const redisReply *r) {
  if (r->type != REDIS_REPLY_ARRAY) return 0;
  for (size_t i = 0; i < r->elements; i++)
    if (r->element[i]->integer != 1) return 0;
  return 1;
}
static void multi_unlock(cmd *c, int i) {
  char k1[64], k2[64];
  key(k1, sizeof k1, "ma", i);
  key(k2, sizeof k2, "mb", i);
  evalsha(c, shas[RL_FAM(RL_FAM_MULTI_UNLOCK)], 2);
  add(c, "%s", k1);
  add(c, "%s", k2);
  add(c, OWNER_A);
  add(c, LEASE);
  add(c, "0");
  add(c, LEASE);
  add(c, "0");
}

static int sem_freed(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
         r->element[0]->integer == 1;
}

/* The minimal pair, measured right before the operations it is judged
 * against (first and second, NULL for none), when they are wanted: the
 * machine's load moves both sides of a ratio together only within a
 * short time. The minimal keys are acquired then released, so they are
 * free again for the next group. */
static int floor_pair(int n, figure *ma, figure *mr, figure *mp,
                      const char *first, const char *second) {
  if (!wanted(first) && !(second && wanted(second))) return 0;
  *ma = measure("minimal.acquire", n, min_acquire, is_nil);
  *mr = measure("minimal.release", n, min_release, is_one);
  *mp = sum(*ma, *mr);
  return 1;
}

static void row(const char *name, figure f, figure base) {
  if (run_id == 0 || f.cpu_us == 0) return;
  printf("# %-28s cpu %7.2f us  %5.2fx   evalsha %6.2f us  %5.2fx\n", name,
         f.cpu_us, f.cpu_us / base.cpu_us, f.call_us,
         f.call_us / base.call_us);
}


int main(int argc, char **argv) {
  int n = 50000, runs = 3, opt;
  while ((opt = getopt(argc, argv, "n:r:d:")) != -1) {
    if (opt == 'n') n = atoi(optarg);
    else if (opt == 'r') runs = atoi(optarg);
    else if (opt == 'd') depth = atoi(optarg);
    else {
      fprintf(stderr, "usage: %s [-n ops] [-r runs] [-d depth] [host:port]\n",
              argv[0]);
      return 2;
    }
  }
  n -= n % BATCH;
  if (n < BATCH) n = BATCH;
  char host[64] = "127.0.0.1";
  int port = 6379;
  if (optind < argc) {
    const char *colon = strrchr(argv[optind], ':');
    if (colon) {
      snprintf(host, sizeof host, "%.*s", (int)(colon - argv[optind]),
               argv[optind]);
      port = atoi(colon + 1);
    }
  }
  C = redisConnect(host, port);
  if (C == NULL || C->err) {
    fprintf(stderr, "server_cost: cannot connect to %s:%d\n", host, port);
    return 1;
  }
  for (int i = 0; i < RL_SCRIPT_COUNT; i++)
    load(rl_script_body((rl_script_id)i), shas[i]);
  /* SC_VARIANT=ID=FILE[,ID=FILE...]: the Lua text in each FILE in place
   * of script ID (scripts.h's numbering; same arguments). */
  const char *alt = getenv("SC_VARIANT");
  for (const char *v = alt; v && *v;) {
    static char body[65536];
    char spec[512];
    size_t sl = strcspn(v, ",");
    snprintf(spec, sizeof spec, "%.*s", (int)sl, v);
    v += sl + (v[sl] == ',');
    char *eq = strchr(spec, '=');
    FILE *f = eq ? fopen(eq + 1, "r") : NULL;
    size_t m = f ? fread(body, 1, sizeof body - 1, f) : 0;
    if (f) fclose(f);
    body[m] = 0;
    int id = atoi(spec);
    if (m == 0 || id < 0 || id >= RL_SCRIPT_COUNT) {
      fprintf(stderr, "server_cost: SC_VARIANT %s\n", spec);
      return 2;
    }
    load(body, shas[id]);
  }
  only = getenv("SC_ONLY");
  load(min_acquire_lua, min_acquire_sha);
  load(min_release_lua, min_release_sha);
  load(min_renew_lua, min_renew_sha);

  /* Run 0 warms up: it creates the fencing counters and is not shown. */
  for (int run = 0; run <= runs; run++) {
    run_id = run;
    redisReply *t = cmd_("TIME");
    uint64_t us = strtoull(t->element[0]->str, NULL, 10) * 1000000 +
                  strtoull(t->element[1]->str, NULL, 10);
    freeReplyObject(t);
    snprintf(deadline, sizeof deadline, "%" PRIu64 ":0", us + 600000000);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    snprintf(floor_, sizeof floor_, "%" PRIu64,
             (uint64_t)tv.tv_sec * 1000000 + (uint64_t)tv.tv_usec);

    if (run > 0)
      printf("# run %d: server CPU per operation and EVALSHA usec_per_call,"
             " ratio to the minimal pair measured just before\n", run);
    figure ma, mr, mp, mren, a, b;
    group = "lock";
    if (floor_pair(n, &ma, &mr, &mp, "lock.acquire", "lock.unlock")) {
      a = measure("lock.acquire", n, lock_acquire, granted);
      b = measure("lock.unlock", n, lock_unlock, is_one);
      row("lock pair", sum(a, b), mp);
      row("  lock acquire", a, ma);
      row("  lock unlock", b, mr);
    }
    group = "transfer";
    if (floor_pair(n, &ma, &mr, &mp, "lock.transfer", NULL)) {
      unmeasured(n, hand_acquire);
      a = measure("lock.transfer", n, hand_transfer, granted);
      unmeasured(n, hand_unlock);
      row("lock transfer (vs pair)", a, mp);
    }
    group = "fair";
    if (floor_pair(n, &ma, &mr, &mp, "fair.acquire", "fair.unlock")) {
      a = measure("fair.acquire", n, fair_acquire, granted);
      b = measure("fair.unlock", n, fair_unlock, is_one);
      row("fair pair", sum(a, b), mp);
    }
    group = "read";
    if (floor_pair(n, &ma, &mr, &mp, "read.acquire", "read.unlock")) {
      a = measure("read.acquire", n, read_acquire, granted);
      b = measure("read.unlock", n, read_unlock, is_one);
      row("read pair", sum(a, b), mp);
    }
    group = "write";
    if (floor_pair(n, &ma, &mr, &mp, "write.acquire", "write.unlock")) {
      a = measure("write.acquire", n, write_acquire, granted);
      b = measure("write.unlock", n, write_unlock, is_one);
      row("write pair", sum(a, b), mp);
    }
    group = "sem";
    if (floor_pair(n, &ma, &mr, &mp, "sem.acquire", "sem.release")) {
      a = measure("sem.acquire", n, sem_acquire, granted);
      b = measure("sem.release", n, sem_release, sem_freed);
      row("sem pair", sum(a, b), mp);
    }
    group = "latch";
    if (floor_pair(n, &ma, &mr, &mp, "latch.set", "latch.count_down")) {
      a = measure("latch.set", n, latch_set, granted);
      b = measure("latch.count_down", n, latch_down, opened);
      row("latch set+count_down", sum(a, b), mp);
    }
    group = "multi2";
    if (floor_pair(n, &ma, &mr, &mp, "multi2.acquire", "multi2.unlock")) {
      a = measure("multi2.acquire", n, multi_acquire, granted);
      b = measure("multi2.unlock", n, multi_unlock, all_released);
      row("multi2 pair (vs 2 pairs)", sum(a, b), sum(mp, mp));
    }
    /* The renewals run on holds: the locks, read holds and minimal
     * locks are taken (unmeasured) before, and given back after. */
    group = "lock_renew";
    if (wanted("lock.renew_x100")) {
      unmeasured(n, lock_acquire);
      unmeasured(n, min_acquire);
      mren = measure("minimal.pexpire_x100", n / BATCH, min_renew, is_one);
      unmeasured(n, min_release);
      a = measure("lock.renew_x100", n / BATCH, lock_renew, all_renewed);
      row("lock renew x100", a, mren);
      unmeasured(n, lock_unlock);
    }
    group = "read_renew";
    if (wanted("read.renew_x100")) {
      unmeasured(n, read_acquire);
      unmeasured(n, min_acquire);
      mren = measure("minimal.pexpire_x100", n / BATCH, min_renew, is_one);
      unmeasured(n, min_release);
      a = measure("read.renew_x100", n / BATCH, read_renew, all_renewed);
      row("read renew x100", a, mren);
      unmeasured(n, read_unlock);
    }
    fflush(stdout);
  }
  redisFree(C);
  return 0;
}
