/*
 * The Sentinel harness behind harness_sentinel.h. The sentinels are
 * configured at run time (SENTINEL MONITOR, SENTINEL SET, SENTINEL CONFIG
 * SET) rather than by a file written beforehand, because their ports and
 * the master's are only known once harness.c has started them; a
 * sentinel saves that configuration in its own sentinel.conf, so a
 * restarted sentinel would keep it.
 */
#include "harness_sentinel.h"

#include "harness_node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETTLE_MS 30000

static int running(const rt_redis *r) { return r->pid > 0; }
static int answering(const rt_redis *r) { return r->pid > 0 && !r->paused; }

static int reply_ok(redisReply *rep) {
  int ok = rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0;
  if (rep) freeReplyObject(rep);
  return ok;
}

/* In TLS mode (RT_TLS=1: harness.c starts every server TLS-only, with
 * its CA and server certificate, clients not required to show one), the
 * servers' own connections must use TLS too: a replica's to its master
 * and a sentinel's to the data nodes and to the other sentinels
 * (tls-replication, which Sentinel also reads for its outgoing links). */
static const char *tls_args(void) {
  return rt_tls_mode() ? " --tls-replication yes" : "";
}

static void data_args(const rt_sentinel *s, char *buf, size_t cap) {
  snprintf(buf, cap, "--repl-diskless-sync-delay 0%s%s%s",
           s->password[0] ? " --masterauth " : "", s->password, tls_args());
}

int rt_sentinel_index_of_port(const rt_sentinel *s, int port) {
  for (int i = 0; i < RT_SENTINEL_DATA; i++)
    if (s->data[i].port == port) return i;
  return -1;
}

int rt_sentinel_reported_port(rt_sentinel *s, int k) {
  if (!answering(&s->sentinel[k])) return -1;
  redisReply *rep = rt_redis_cmd(&s->sentinel[k],
                                 "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                                 RT_SENTINEL_NAME);
  int port = -1;
  if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
      rep->element[1]->type == REDIS_REPLY_STRING)
    port = atoi(rep->element[1]->str);
  if (rep) freeReplyObject(rep);
  return port;
}

/* ROLE of data node i: 1 master, 0 replica, -1 no answer. With a
 * replica, *of is the index of its master and *connected whether ROLE
 * says "connected". */
static int role(rt_sentinel *s, int i, int *of, int *connected) {
  if (!answering(&s->data[i])) return -1;
  redisReply *rep = rt_redis_cmd(&s->data[i], "ROLE");
  int v = -1;
  if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 3 &&
      rep->element[0]->type == REDIS_REPLY_STRING) {
    v = strcmp(rep->element[0]->str, "master") == 0;
    if (!v && rep->elements >= 5 &&
        rep->element[2]->type == REDIS_REPLY_INTEGER &&
        rep->element[3]->type == REDIS_REPLY_STRING) {
      if (of) *of = rt_sentinel_index_of_port(s, (int)rep->element[2]->integer);
      if (connected)
        *connected = strcmp(rep->element[3]->str, "connected") == 0;
    }
  }
  if (rep) freeReplyObject(rep);
  return v;
}

int rt_sentinel_master(rt_sentinel *s) {
  int port = -1;
  for (int k = 0; k < RT_SENTINELS; k++) {
    if (!answering(&s->sentinel[k])) continue;
    int p = rt_sentinel_reported_port(s, k);
    if (p < 0 || (port >= 0 && p != port)) return -1;
    port = p;
  }
  int m = rt_sentinel_index_of_port(s, port);
  return m >= 0 && role(s, m, NULL, NULL) == 1 ? m : -1;
}

/* The ends of every sentinel's log: what they tried and why it failed
 * (an election lost, no replica good enough) is only written there. */
static void logs_tail(const rt_sentinel *s, const char *why) {
  for (int k = 0; k < RT_SENTINELS; k++)
    if (s->sentinel[k].dir[0] != '\0')
      rt_redis_log_tail(&s->sentinel[k], why, 1536);
}

int rt_sentinel_wait_master_not(rt_sentinel *s, int old, int timeout_ms) {
  for (uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;; rt_sleep_ms(50)) {
    int m = rt_sentinel_master(s);
    if (m >= 0 && m != old) return m;
    if (rt_now_ms() > end) break;
  }
  fprintf(stderr, "rt_sentinel: sentinels agree on no master other than "
                  "data[%d] after %d ms\n", old, timeout_ms);
  logs_tail(s, "no failover");
  return -1;
}

/* Every running data node but the master follows it with the link up. */
static int replicas_follow(rt_sentinel *s, int m) {
  for (int i = 0; i < RT_SENTINEL_DATA; i++) {
    if (i == m || !answering(&s->data[i])) continue;
    int of = -1, connected = 0;
    if (role(s, i, &of, &connected) != 0 || of != m || !connected) return 0;
  }
  return 1;
}

int rt_sentinel_wait_replicas(rt_sentinel *s, int timeout_ms) {
  for (uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;; rt_sleep_ms(50)) {
    int m = rt_sentinel_master(s);
    if (m >= 0 && replicas_follow(s, m)) return 0;
    if (rt_now_ms() > end) break;
  }
  fprintf(stderr, "rt_sentinel: replicas do not follow the master after "
                  "%d ms\n", timeout_ms);
  logs_tail(s, "replicas do not follow");
  return -1;
}

/* A field of SENTINEL MASTER's flat key-value reply, as an integer, or
 * -1. */
static long field(redisReply *rep, const char *name) {
  for (size_t j = 0; j + 1 < rep->elements; j += 2)
    if (rep->element[j]->type == REDIS_REPLY_STRING &&
        strcmp(rep->element[j]->str, name) == 0 &&
        rep->element[j + 1]->type == REDIS_REPLY_STRING)
      return strtol(rep->element[j + 1]->str, NULL, 10);
  return -1;
}

static int flags_are_master(redisReply *rep) {
  for (size_t j = 0; j + 1 < rep->elements; j += 2)
    if (rep->element[j]->type == REDIS_REPLY_STRING &&
        strcmp(rep->element[j]->str, "flags") == 0)
      return rep->element[j + 1]->type == REDIS_REPLY_STRING &&
             strcmp(rep->element[j + 1]->str, "master") == 0;
  return 0;
}

/* Whether every sentinel sees the master up, with both replicas and the
 * two other sentinels. */
static int sentinels_ready(rt_sentinel *s) {
  for (int k = 0; k < RT_SENTINELS; k++) {
    redisReply *rep = rt_redis_cmd(&s->sentinel[k], "SENTINEL MASTER %s",
                                   RT_SENTINEL_NAME);
    int ok = rep && rep->type == REDIS_REPLY_ARRAY && flags_are_master(rep) &&
             field(rep, "num-slaves") == RT_SENTINEL_DATA - 1 &&
             field(rep, "num-other-sentinels") == RT_SENTINELS - 1;
    if (rep) freeReplyObject(rep);
    if (!ok) return 0;
  }
  return 1;
}

static int configure_sentinel(rt_sentinel *s, int k) {
  rt_redis *r = &s->sentinel[k];
  if (!reply_ok(rt_redis_cmd(r, "SENTINEL MONITOR %s 127.0.0.1 %d %d",
                             RT_SENTINEL_NAME, s->data[0].port,
                             RT_SENTINEL_QUORUM)))
    return -1;
  if (!reply_ok(rt_redis_cmd(r, "SENTINEL SET %s down-after-milliseconds %d "
                                "failover-timeout %d",
                             RT_SENTINEL_NAME, RT_SENTINEL_DOWN_AFTER_MS,
                             RT_SENTINEL_FAILOVER_TIMEOUT_MS)))
    return -1;
  if (!s->password[0]) return 0;
  if (!reply_ok(rt_redis_cmd(r, "SENTINEL SET %s auth-pass %s",
                             RT_SENTINEL_NAME, s->password)) ||
      !reply_ok(rt_redis_cmd(r, "SENTINEL CONFIG SET sentinel-pass %s",
                             s->password)))
    return -1;
  return 0;
}

int rt_sentinel_start(rt_sentinel *s, const char *password) {
  memset(s, 0, sizeof *s);
  if (password && strlen(password) >= sizeof s->password) return -1;
  if (password) strcpy(s->password, password);
  char args[256];
  data_args(s, args, sizeof args);
  const char *step = "start the data nodes";
  for (int i = 0; i < RT_SENTINEL_DATA; i++)
    if (rt_node_start(&s->data[i], s->password, 0, args) != 0) goto fail;
  step = "make data[1] and data[2] replicas";
  for (int i = 1; i < RT_SENTINEL_DATA; i++)
    if (!reply_ok(rt_redis_cmd(&s->data[i], "REPLICAOF 127.0.0.1 %d",
                               s->data[0].port)))
      goto fail;
  step = "start the sentinels";
  for (int k = 0; k < RT_SENTINELS; k++)
    if (rt_node_start(&s->sentinel[k], s->password, 1,
                      rt_tls_mode() ? tls_args() + 1 : NULL) != 0 ||
        configure_sentinel(s, k) != 0)
      goto fail;
  step = "see every sentinel know the master, the replicas and the others";
  for (uint64_t end = rt_now_ms() + SETTLE_MS; !sentinels_ready(s);
       rt_sleep_ms(100))
    if (rt_now_ms() > end) goto fail;
  step = "see the replicas follow the master";
  if (rt_sentinel_wait_replicas(s, SETTLE_MS) != 0) goto fail;
  return 0;
fail:
  fprintf(stderr, "rt_sentinel: could not %s\n", step);
  rt_sentinel_stop(s);
  return -1;
}

void rt_sentinel_stop(rt_sentinel *s) {
  rt_redis_stop_many(s->sentinel, RT_SENTINELS);
  rt_redis_stop_many(s->data, RT_SENTINEL_DATA);
}

int rt_sentinel_kill_master(rt_sentinel *s) {
  int m = rt_sentinel_master(s);
  if (m < 0 || rt_redis_kill(&s->data[m]) != 0) {
    fprintf(stderr, "rt_sentinel: no master to kill\n");
    return -1;
  }
  int n = rt_sentinel_wait_master_not(s, m, SETTLE_MS);
  if (n < 0 || rt_sentinel_wait_replicas(s, SETTLE_MS) != 0) return -1;
  return n;
}

int rt_sentinel_restart(rt_sentinel *s, int i) {
  char args[256];
  data_args(s, args, sizeof args);
  if (running(&s->data[i]) || rt_node_restart(&s->data[i], 0, args) != 0) {
    fprintf(stderr, "rt_sentinel: could not restart data[%d]\n", i);
    return -1;
  }
  return rt_sentinel_wait_replicas(s, SETTLE_MS);
}

int rt_sentinel_pause(rt_sentinel *s, int i) {
  return rt_redis_pause(&s->data[i]);
}

int rt_sentinel_resume(rt_sentinel *s, int i) {
  return rt_redis_resume(&s->data[i]);
}
