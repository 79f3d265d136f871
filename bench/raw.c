/*
 * The raw side of every ratio: rlock's acquire and unlock scripts sent by
 * synchronous hiredis, one connection per master, to all masters at once.
 * See raw.h.
 */
#include "raw.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "floor_scripts.h"
#include "stats.h"

#define LEASE_MS "10000"
#define DEADLINE_US 10000000 /* the acquire's deadline: 10 s from now */

static int load(redisContext *c, const char *body, char sha[41]) {
  redisReply *r = redisCommand(c, "SCRIPT LOAD %s", body);
  int ok = r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40;
  if (ok) memcpy(sha, r->str, 41);
  if (r) freeReplyObject(r);
  return ok ? 0 : -1;
}

int raw_open(raw_conns *rc, char **masters, int n) {
  memset(rc, 0, sizeof *rc);
  if (n < 1 || n > RAW_MAX_MASTERS) return -1;
  for (int m = 0; m < n; m++) {
    char host[64];
    int port;
    if (bench_host_port(masters[m], host, sizeof host, &port) != 0) {
      fprintf(stderr, "raw: bad master %s\n", masters[m]);
      raw_close(rc);
      return -1;
    }
    rc->c[m] = redisConnect(host, port);
    rc->n = m + 1;
    if (rc->c[m] == NULL || rc->c[m]->err ||
        load(rc->c[m], floor_acquire_lua, rc->acquire_sha) != 0 ||
        load(rc->c[m], floor_unlock_lua, rc->unlock_sha) != 0) {
      fprintf(stderr, "raw: cannot use master %s\n", masters[m]);
      raw_close(rc);
      return -1;
    }
  }
  return 0;
}

void raw_close(raw_conns *rc) {
  for (int m = 0; m < rc->n; m++)
    if (rc->c[m]) redisFree(rc->c[m]);
  rc->n = 0;
}

void raw_lock_init(raw_lock *l, const char *name) {
  snprintf(l->key, sizeof l->key, "rlock:{%s}", name);
  snprintf(l->fence, sizeof l->fence, "%s:fence", l->key);
  snprintf(l->channel, sizeof l->channel, "%s:ch", l->key);
}

void raw_owner(char *buf, size_t size, unsigned seed, unsigned thread) {
  snprintf(buf, size, "%08x%08x%08x%08x:%u", seed, seed * 2654435761u,
           ~seed, seed ^ 0x5bd1e995u, thread);
}

static int granted(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         r->element[0]->type == REDIS_REPLY_INTEGER &&
         r->element[0]->integer == 1;
}

static int released(const redisReply *r) {
  return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

/* One command on every master; returns how many replies passed ok(). */
static int round_all(raw_conns *rc, int argc, const char **argv,
                     const size_t *len, int (*ok)(const redisReply *),
                     uint64_t *quorum_ns) {
  uint64_t t0 = bench_now_ns();
  if (rc->n == 1) {
    /* One master: the plainest synchronous call there is. */
    redisReply *r = redisCommandArgv(rc->c[0], argc, argv, len);
    if (r == NULL) return -1;
    int g = ok(r);
    freeReplyObject(r);
    if (quorum_ns) *quorum_ns = bench_now_ns() - t0;
    return g;
  }
  for (int m = 0; m < rc->n; m++)
    if (redisAppendCommandArgv(rc->c[m], argc, argv, len) != REDIS_OK)
      return -1;
  for (int m = 0; m < rc->n; m++) {
    int done = 0;
    do {
      if (redisBufferWrite(rc->c[m], &done) != REDIS_OK) return -1;
    } while (!done);
  }
  int waiting[RAW_MAX_MASTERS], left = rc->n, good = 0;
  int majority = rc->n / 2 + 1;
  for (int m = 0; m < rc->n; m++) waiting[m] = m;
  while (left > 0) {
    struct pollfd pf[RAW_MAX_MASTERS];
    for (int k = 0; k < left; k++)
      pf[k] = (struct pollfd){.fd = rc->c[waiting[k]]->fd, .events = POLLIN};
    if (poll(pf, (nfds_t)left, -1) < 0) return -1;
    for (int k = left - 1; k >= 0; k--) {
      if (!(pf[k].revents & (POLLIN | POLLERR | POLLHUP))) continue;
      redisContext *c = rc->c[waiting[k]];
      void *r = NULL;
      if (redisBufferRead(c) != REDIS_OK ||
          redisGetReplyFromReader(c, &r) != REDIS_OK)
        return -1;
      if (r == NULL) continue; /* a partial reply: poll again */
      if (ok(r) && ++good == majority && quorum_ns)
        *quorum_ns = bench_now_ns() - t0;
      freeReplyObject(r);
      waiting[k] = waiting[--left];
    }
  }
  return good;
}

/* The acquire's numbers, as rlock computes them per attempt: the token
 * floor (the wall clock in microseconds) and a deadline (rlock's is in
 * each master's clock; these masters share the machine's). */
typedef struct acquire_nums {
  char floor[24], deadline[24];
} acquire_nums;

static void acquire_nums_now(acquire_nums *n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
  snprintf(n->floor, sizeof n->floor, "%" PRIu64, us);
  snprintf(n->deadline, sizeof n->deadline, "%" PRIu64, us + DEADLINE_US);
}

/* EVALSHA sha 2 key fence lease owner count floor deadline: the 10
 * arguments of lib/lock/acquire.c (attempt), for a first acquisition. */
#define ACQUIRE_ARGC 10
static void acquire_argv(raw_conns *rc, const raw_lock *l, const char *owner,
                         const acquire_nums *n, const char **argv,
                         size_t *len) {
  const char *a[] = {"EVALSHA", rc->acquire_sha, "2", l->key,
                     l->fence,  LEASE_MS,        owner, "1",
                     n->floor,  n->deadline};
  for (int i = 0; i < ACQUIRE_ARGC; i++) {
    argv[i] = a[i];
    len[i] = strlen(a[i]);
  }
}

/* EVALSHA sha 1 key lease owner channel last: lib/lock/release.c
 * (rl_unlock_start) for the owner's only hold. */
#define UNLOCK_ARGC 8
static void unlock_argv(raw_conns *rc, const raw_lock *l, const char *owner,
                        const char **argv, size_t *len) {
  const char *a[] = {"EVALSHA", rc->unlock_sha, "1",        l->key,
                     LEASE_MS,  owner,          l->channel, "1"};
  for (int i = 0; i < UNLOCK_ARGC; i++) {
    argv[i] = a[i];
    len[i] = strlen(a[i]);
  }
}

int raw_acquire(raw_conns *rc, const raw_lock *l, const char *owner,
                uint64_t *quorum_ns) {
  const char *argv[ACQUIRE_ARGC];
  size_t len[ACQUIRE_ARGC];
  acquire_nums n;
  acquire_nums_now(&n);
  acquire_argv(rc, l, owner, &n, argv, len);
  return round_all(rc, ACQUIRE_ARGC, argv, len, granted, quorum_ns);
}

int raw_unlock(raw_conns *rc, const raw_lock *l, const char *owner,
               uint64_t *quorum_ns) {
  const char *argv[UNLOCK_ARGC];
  size_t len[UNLOCK_ARGC];
  unlock_argv(rc, l, owner, argv, len);
  return round_all(rc, UNLOCK_ARGC, argv, len, released, quorum_ns);
}

int raw_pipelined_pairs(raw_conns *rc, const raw_lock *locks, int count,
                        const char *owner) {
  redisContext *c = rc->c[0];
  acquire_nums n;
  acquire_nums_now(&n);
  for (int i = 0; i < count; i++) {
    const char *argv[ACQUIRE_ARGC];
    size_t len[ACQUIRE_ARGC];
    acquire_argv(rc, &locks[i], owner, &n, argv, len);
    if (redisAppendCommandArgv(c, ACQUIRE_ARGC, argv, len) != REDIS_OK)
      return -1;
    unlock_argv(rc, &locks[i], owner, argv, len);
    if (redisAppendCommandArgv(c, UNLOCK_ARGC, argv, len) != REDIS_OK)
      return -1;
  }
  int good = 0;
  for (int i = 0; i < count; i++) {
    redisReply *a = NULL, *u = NULL;
    if (redisGetReply(c, (void **)&a) != REDIS_OK ||
        redisGetReply(c, (void **)&u) != REDIS_OK)
      return -1;
    good += granted(a) && released(u);
    freeReplyObject(a);
    freeReplyObject(u);
  }
  return good;
}

int raw_relay(raw_conns *rc, const raw_lock *l, const char *from,
              const char *to) {
  redisContext *c = rc->c[0];
  const char *argv[ACQUIRE_ARGC > UNLOCK_ARGC ? ACQUIRE_ARGC : UNLOCK_ARGC];
  size_t len[ACQUIRE_ARGC > UNLOCK_ARGC ? ACQUIRE_ARGC : UNLOCK_ARGC];
  unlock_argv(rc, l, from, argv, len);
  if (redisAppendCommandArgv(c, UNLOCK_ARGC, argv, len) != REDIS_OK) return -1;
  acquire_nums n;
  acquire_nums_now(&n);
  acquire_argv(rc, l, to, &n, argv, len);
  if (redisAppendCommandArgv(c, ACQUIRE_ARGC, argv, len) != REDIS_OK) return -1;
  return raw_relay_replies(c);
}

int raw_relay_replies(redisContext *c) {
  redisReply *u = NULL, *a = NULL;
  if (redisGetReply(c, (void **)&u) != REDIS_OK) return -1;
  int ok = released(u);
  freeReplyObject(u);
  if (redisGetReply(c, (void **)&a) != REDIS_OK) return -1;
  ok = ok && granted(a);
  freeReplyObject(a);
  return ok;
}

int raw_format_acquire(raw_conns *rc, const raw_lock *l, const char *owner,
                       char **cmd) {
  const char *argv[ACQUIRE_ARGC];
  size_t len[ACQUIRE_ARGC];
  acquire_nums n;
  acquire_nums_now(&n);
  acquire_argv(rc, l, owner, &n, argv, len);
  return redisFormatCommandArgv(cmd, ACQUIRE_ARGC, argv, len);
}

int raw_format_unlock(raw_conns *rc, const raw_lock *l, const char *owner,
                      char **cmd) {
  const char *argv[UNLOCK_ARGC];
  size_t len[UNLOCK_ARGC];
  unlock_argv(rc, l, owner, argv, len);
  return redisFormatCommandArgv(cmd, UNLOCK_ARGC, argv, len);
}

int raw_granted(const redisReply *r) { return granted(r); }
int raw_released(const redisReply *r) { return released(r); }
