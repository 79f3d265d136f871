/*
 * The `scan` subcommand: SCANs every master (each primary of a cluster)
 * for the keys of locks and of the lock family, and reports those without
 * TTL (leaks) and those whose lease exceeds a threshold. Read-only. It
 * prints a human report or one JSON object (--json) whose field names
 * tools/rlock.1 documents.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "family_scripts.h"
#include "keys.h"
#include "master.h"
#include "options.h"
#include "tool.h"

enum { OPT_PATTERN = 256, OPT_OLDER, OPT_LEASE_OVER, OPT_ALL };

/* --- scan ---------------------------------------------------------------- */

static const char scan_usage[] =
    "usage: rlock scan [--json] [--all] [--pattern P] [--lease-over SECONDS]\n"
    "                  [--timeout MS] [--masters URL,...] [--prefix P]\n"
    "SCANs every master for lock keys (PREFIX* by default, minus the :fence\n"
    "counters; locks are PREFIX{NAME} hashes, and a read-write lock's :w\n"
    "hash and :r sorted set) and the keys of semaphores (:s, :s:t) and\n"
    "latches (:l, :l:d), and reports those with no TTL (leaks) and, with\n"
    "--lease-over, locks whose remaining lease exceeds SECONDS (a semaphore\n"
    "remembers its limit, and a latch lives, longer than any lease: see\n"
    "rlock_options); a fair queue (:q, :qt), read counts (:rc) or waiting\n"
    "writers (:wq) without TTL are leaks too. --all lists every one.\n"
    "Read-only.\n"
    "Exit 0 if clean, 1 if anything was reported, 2 if a master could not\n"
    "be scanned, 64 on bad usage.\n"
    "--older-than is refused: Redis keeps no held-since time for a lock (the\n"
    "watchdog keeps refreshing the TTL), so how long a lock has been held\n"
    "cannot be known from Redis.\n";

/* Escapes glob metacharacters of the prefix for SCAN MATCH. */
static char *glob_prefix(const char *prefix) {
  size_t n = strlen(prefix);
  char *out = malloc(2 * n + 2), *o = out;
  if (out == NULL) return NULL;
  for (const char *p = prefix; *p; p++) {
    if (strchr("*?[]\\", *p)) *o++ = '\\';
    *o++ = *p;
  }
  *o++ = '*';
  *o = '\0';
  return out;
}

typedef struct scan_totals {
  long long locks, leaks, long_leases, other;
  long long semlatch; /* semaphore and latch keys */
  long long family_leaks; /* keys that go with a lock, without TTL */
} scan_totals;

/*
 * The locks seen so far, by key, across masters: a lock is held on several
 * masters at once and must be counted once. An open-addressing set of key
 * strings, with what was found about each (a leak or a long lease on any
 * master).
 */
typedef struct seen_key {
  char *key;
  size_t len;
  int leak, over;
  int semlatch; /* a semaphore's or a latch's key, not a lock */
} seen_key;

typedef struct key_set {
  seen_key *slots;
  size_t cap, n;
} key_set;

static size_t key_hash(const char *s, size_t n) {
  size_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static int key_set_grow(key_set *ks) {
  size_t cap = ks->cap ? ks->cap * 2 : 1024;
  seen_key *slots = calloc(cap, sizeof *slots);
  if (slots == NULL) return -1;
  for (size_t i = 0; i < ks->cap; i++) {
    if (ks->slots[i].key == NULL) continue;
    size_t j = key_hash(ks->slots[i].key, ks->slots[i].len) & (cap - 1);
    while (slots[j].key != NULL) j = (j + 1) & (cap - 1);
    slots[j] = ks->slots[i];
  }
  free(ks->slots);
  ks->slots = slots;
  ks->cap = cap;
  return 0;
}

/* Records a lock found on one master; 0, or -1 when out of memory. */
static int key_set_add(key_set *ks, const char *key, size_t len, int leak,
                       int over, int semlatch) {
  if ((ks->n + 1) * 2 > ks->cap && key_set_grow(ks) != 0) return -1;
  size_t j = key_hash(key, len) & (ks->cap - 1);
  while (ks->slots[j].key != NULL &&
         !(ks->slots[j].len == len && memcmp(ks->slots[j].key, key, len) == 0))
    j = (j + 1) & (ks->cap - 1);
  seen_key *e = &ks->slots[j];
  if (e->key == NULL) {
    if ((e->key = malloc(len + 1)) == NULL) return -1;
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    e->len = len;
    ks->n++;
  }
  e->leak |= leak;
  e->over |= over;
  e->semlatch = semlatch;
  return 0;
}

static void key_set_totals(const key_set *ks, scan_totals *t) {
  for (size_t i = 0; i < ks->cap; i++) {
    if (ks->slots[i].key == NULL) continue;
    if (ks->slots[i].semlatch)
      t->semlatch++;
    else
      t->locks++;
    t->leaks += ks->slots[i].leak;
    t->long_leases += ks->slots[i].over;
  }
}

static void key_set_free(key_set *ks) {
  for (size_t i = 0; i < ks->cap; i++) free(ks->slots[i].key);
  free(ks->slots);
}

/* What one scan carries from key to key and from master to master. */
typedef struct scan_run {
  const char *pattern;
  long long lease_over_ms; /* -1: no threshold */
  int all;                 /* --all: report every key, not only findings */
  int json;
  scan_totals t;
  key_set ks;         /* the keys found so far, counted once */
  int first_key;      /* no key of this master reported yet */
  char err[512];      /* why this master could not be scanned */
} scan_run;

/* Keys a scan looks at: strings, without the fencing counters. */
static int scan_skips(const redisReply *k) {
  if (k->type != REDIS_REPLY_STRING) return 1;
  const rl_key_shape *sh = rl_key_shape_of(k->str, k->len, NULL);
  return sh != NULL && sh->role == RL_KEY_FENCE;
}

/* Starts one reported key's JSON object: its name, after a comma unless
 * it is the master's first. */
static void json_key_start(scan_run *run, const redisReply *k) {
  fputs(run->first_key ? "{\"key\":" : ",{\"key\":", stdout);
  rt_json_str(stdout, k->str, k->len);
  run->first_key = 0;
}

/* A key that goes with a lock (lkind's), reported only as a leak. */
static void report_family_leak(scan_run *run, const char *where,
                               const redisReply *k, const char *lkind) {
  run->t.family_leaks++;
  if (run->json) {
    json_key_start(run, k);
    fprintf(stdout, ",\"pttl_ms\":-1,\"holders\":null,\"leak\":true,"
            "\"lease_over\":false,\"kind\":\"%s\"}", lkind);
  } else {
    fprintf(stdout, "%s ", where);
    rt_human_str(stdout, k->str, k->len);
    fputs(": NO TTL (leak)\n", stdout);
    run->first_key = 0;
  }
}

/* What scan found of one lock's, semaphore's or latch's key. */
typedef struct key_finding {
  long long pttl, fields; /* fields: its holders, -1 if unknown */
  int leak, over;
  const char *kind;  /* "semaphore" or "latch", NULL for a lock's key */
  const char *lkind; /* for a lock's key: which kind of lock */
} key_finding;

/* Prints one lock's, semaphore's or latch's key found. */
static void report_key(scan_run *run, rl_conn *node, const char *where,
                       const redisReply *k, const key_finding *kf) {
  if (run->json) {
    json_key_start(run, k);
    if (node != NULL) {
      fputs(",\"node\":", stdout);
      rt_json_cstr(stdout, where);
    }
    fprintf(stdout,
            ",\"pttl_ms\":%lld,\"holders\":%lld,\"leak\":%s,"
            "\"lease_over\":%s,\"kind\":\"%s\"}",
            kf->pttl, kf->kind ? -1 : kf->fields, kf->leak ? "true" : "false",
            kf->over ? "true" : "false", kf->kind ? kf->kind : kf->lkind);
    return;
  }
  fprintf(stdout, "%s ", where);
  rt_human_str(stdout, k->str, k->len);
  if (kf->kind != NULL && kf->leak)
    fprintf(stdout, ": %s key, NO TTL (leak)\n", kf->kind);
  else if (kf->kind != NULL)
    fprintf(stdout, ": %s key, %lld ms left%s\n", kf->kind, kf->pttl,
            kf->over ? " (over threshold)" : "");
  else if (kf->leak)
    fprintf(stdout, ": NO TTL (leak), %lld holder(s)\n", kf->fields);
  else
    fprintf(stdout, ": lease %lld ms left%s, %lld holder(s)\n", kf->pttl,
            kf->over ? " (over threshold)" : "", kf->fields);
  run->first_key = 0;
}

/*
 * Decides what key k is from its TYPE, PTTL, HLEN, ZCARD and record
 * replies (rr, as scan_keys asks),
 * records it and reports it when it is a finding (or with --all).
 * Returns 0, or -1 when out of memory.
 */
static int scan_classify(scan_run *run, rl_conn *node, const char *where,
                         const redisReply *k, redisReply *const *rr) {
  int alive = rr[1]->type == REDIS_REPLY_INTEGER &&
              rr[1]->integer != -2; /* -2: it went away meanwhile */
  if (rr[0]->type != REDIS_REPLY_STATUS || strcmp(rr[0]->str, "none") == 0)
    return 0;
  /* The library's keys by suffix and type (keys.h); anything else is
   * another key. */
  const rl_key_shape *sh = rl_key_shape_of(k->str, k->len, rr[0]->str);
  key_finding kf = {.lkind = sh != NULL ? sh->kind : "lock"};
  if (alive && sh != NULL && sh->role == RL_KEY_WITH) {
    if (rr[1]->integer == -1) report_family_leak(run, where, k, kf.lkind);
    return 0;
  }
  /* A semaphore's or a latch's key: reported on its own terms. */
  if (sh != NULL && sh->role == RL_KEY_OBJECT) kf.kind = sh->kind;
  int lockish = sh != NULL && sh->role != RL_KEY_FENCE;
  if (!lockish || !alive) {
    run->t.other++;
    return 0;
  }
  const redisReply *cnt = strcmp(rr[0]->str, "zset") == 0 ? rr[3] : rr[2];
  kf.pttl = rr[1]->integer;
  kf.fields = cnt->type == REDIS_REPLY_INTEGER ? cnt->integer : -1;
  /* An election's leader record is three fields of its lock's hash, not
   * holders (family_scripts.h). */
  if (cnt == rr[2] && kf.fields > 0 && rr[4]->type == REDIS_REPLY_ARRAY)
    for (size_t j = 0; j < rr[4]->elements; j++)
      kf.fields -= rr[4]->element[j]->type == REDIS_REPLY_STRING;
  kf.leak = kf.pttl == -1;
  kf.over = kf.kind == NULL && run->lease_over_ms >= 0 &&
            kf.pttl > run->lease_over_ms;
  int rc = key_set_add(&run->ks, k->str, k->len, kf.leak, kf.over,
                       kf.kind != NULL);
  if (rc != 0) snprintf(run->err, sizeof run->err, "out of memory");
  if (kf.leak || kf.over || run->all) report_key(run, node, where, k, &kf);
  return rc;
}

/* The reads of each key scan_keys sends: TYPE, PTTL, HLEN, ZCARD, and
 * the leader record's fields (which HLEN counts). */
#define SCAN_READS 5

/* Reads the replies scan_page queued for key k and classifies it.
 * Returns 0, or -1 with a message in run->err. */
static int scan_key(scan_run *run, rt_master *ctx, rl_conn *node,
                    const char *where, const redisReply *k) {
  redisReply *rr[SCAN_READS] = {NULL};
  int rc = 0;
  for (int j = 0; j < SCAN_READS && rc == 0; j++) {
    if (rt_master_get_reply(ctx, &rr[j], NULL, 0) != REDIS_OK) {
      snprintf(run->err, sizeof run->err, "%s", rt_master_errstr(ctx));
      rc = -1;
    }
  }
  if (rc == 0) rc = scan_classify(run, node, where, k, rr);
  for (int j = 0; j < SCAN_READS; j++)
    if (rr[j] != NULL) freeReplyObject(rr[j]);
  return rc;
}

/* Asks for TYPE, PTTL, HLEN, ZCARD and the record fields of each key of
 * one SCAN page, in one pipeline, then reads and classifies them in
 * order. 0 or -1. */
static int scan_keys(scan_run *run, rt_master *ctx, rl_conn *node,
                     const char *where, const redisReply *keys) {
  static const char *const reads[SCAN_READS] = {
      "TYPE %b", "PTTL %b", "HLEN %b", "ZCARD %b",
      "HMGET %b " RL_ELECT_TOKEN_FIELD " " RL_ELECT_VALUE_FIELD
      " " RL_ELECT_OWNER_FIELD};
  for (size_t i = 0; i < keys->elements; i++) {
    const redisReply *k = keys->element[i];
    if (scan_skips(k)) continue;
    for (int j = 0; j < SCAN_READS; j++)
      rt_master_append(ctx, node, RL_MCMD_ANY_SLOT, reads[j], k->str,
                       (size_t)k->len);
  }
  for (size_t i = 0; i < keys->elements; i++) {
    const redisReply *k = keys->element[i];
    if (!scan_skips(k) && scan_key(run, ctx, node, where, k) != 0)
      return -1;
  }
  return 0;
}

/* Runs SCAN from cursor (updated to the next one) and looks at the page
 * of keys it returns. 0 or -1, with a message in run->err. */
static int scan_page(scan_run *run, rt_master *ctx, rl_conn *node,
                     const char *where, char *cursor, size_t cursorsize) {
  redisReply *r = rt_master_command(ctx, node, RL_MCMD_ANY_SLOT,
                                    "SCAN %s MATCH %s COUNT 1000", cursor,
                                    run->pattern);
  if (r == NULL) {
    snprintf(run->err, sizeof run->err, "%s", rt_master_errstr(ctx));
    return -1;
  }
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_ARRAY) {
    snprintf(run->err, sizeof run->err, "%s",
             r->type == REDIS_REPLY_ERROR ? r->str : "bad SCAN reply");
    freeReplyObject(r);
    return -1;
  }
  snprintf(cursor, cursorsize, "%s", r->element[0]->str);
  int rc = scan_keys(run, ctx, node, where, r->element[1]);
  freeReplyObject(r);
  return rc;
}

/* Scans one node of a connected master (node NULL: the server), printing
 * each reported key as it goes (the JSON array of keys is open while this
 * runs). Returns 0, or -1 with a message in run->err. */
static int scan_master(scan_run *run, rt_master *ctx, rl_conn *node,
                       const char *where) {
  char cursor[32] = "0";
  do {
    if (scan_page(run, ctx, node, where, cursor, sizeof cursor) != 0)
      return -1;
  } while (strcmp(cursor, "0") != 0);
  return 0;
}

/* Scans every node of a master that serves lock keys: the server, or
 * every primary of a cluster (a cluster's SCAN is per node). */
static int scan_nodes(scan_run *run, rt_master *ctx, const rt_master_url *u) {
  if (!u->cluster) return scan_master(run, ctx, NULL, u->display);
  rl_conn *nodes[1024];
  int n = rt_master_nodes(ctx, nodes, 1024);
  if (n > 1024) n = 1024;
  for (int k = 0; k < n; k++) {
    char where[1000], addr[300];
    rl_node_address(nodes[k], addr, sizeof addr);
    snprintf(where, sizeof where, "%s node %s", u->display, addr);
    if (scan_master(run, ctx, nodes[k],
                    addr[0] ? (run->json ? addr : where) : where) != 0) {
      char sub[512];
      snprintf(sub, sizeof sub, "%s", run->err);
      snprintf(run->err, sizeof run->err, "node %s: %.200s", addr, sub);
      return -1;
    }
  }
  return 0;
}

/* Scans one master and reports how it went. 0, or -1 if it failed. */
static int scan_one_master(scan_run *run, const rt_global *g,
                           const rt_master_url *u, long long timeout_ms,
                           int first) {
  int rc = -1;
  run->first_key = 1;
  run->err[0] = '\0';
  if (run->json) {
    fputs(first ? "{\"master\":" : ",{\"master\":", stdout);
    rt_json_cstr(stdout, u->display);
    fputs(",\"keys\":[", stdout);
  }
  rt_master *ctx =
      rt_master_open(u->spec, g, timeout_ms, run->err, sizeof run->err);
  if (ctx != NULL) {
    rc = scan_nodes(run, ctx, u);
    rt_master_free(ctx);
  }
  if (run->json) {
    fprintf(stdout, "],\"ok\":%s,\"error\":", rc == 0 ? "true" : "false");
    rt_json_cstr(stdout, rc == 0 ? NULL : run->err);
    fputc('}', stdout);
  } else if (rc != 0) {
    fprintf(stdout, "%s: error: %s\n", u->display, run->err);
  }
  return rc;
}

/* The totals after every master, and the exit code they make. */
static int scan_summary(const scan_run *run, size_t nmasters, size_t failed) {
  const scan_totals *t = &run->t;
  if (run->json) {
    fprintf(stdout,
            "],\"locks\":%lld,\"family_keys\":%lld,\"leaks\":%lld,"
            "\"lease_over\":%lld,\"other_keys\":%lld,"
            "\"failed_masters\":%zu}\n",
            t->locks, t->semlatch, t->leaks, t->long_leases, t->other, failed);
  } else {
    fprintf(stdout,
            "%lld lock(s) and %lld semaphore or latch key(s) on %zu "
            "master(s): %lld without TTL",
            t->locks, t->semlatch, nmasters - failed, t->leaks);
    if (run->lease_over_ms >= 0)
      fprintf(stdout, ", %lld with a lease over %lld ms", t->long_leases,
              run->lease_over_ms);
    if (failed) fprintf(stdout, "; %zu master(s) failed", failed);
    fputc('\n', stdout);
  }
  fflush(stdout);
  if (t->leaks > 0 || t->long_leases > 0) return RT_EXIT_FOUND;
  return failed ? RT_EXIT_NOMASTER : RT_EXIT_OK;
}

/* Scans every master and reports. Returns the exit code. */
static int scan_all(scan_run *run, const rt_global *g,
                    const rt_master_url *us, long long timeout_ms) {
  size_t failed = 0;
  if (run->json) {
    fputs("{\"pattern\":", stdout);
    rt_json_cstr(stdout, run->pattern);
    fputs(",\"lease_over_ms\":", stdout);
    if (run->lease_over_ms >= 0) fprintf(stdout, "%lld", run->lease_over_ms);
    else fputs("null", stdout);
    fputs(",\"masters\":[", stdout);
  }
  for (size_t i = 0; i < g->nmasters; i++)
    if (scan_one_master(run, g, &us[i], timeout_ms, i == 0) != 0) failed++;
  key_set_totals(&run->ks, &run->t);
  key_set_free(&run->ks);
  run->t.leaks += run->t.family_leaks;
  return scan_summary(run, g->nmasters, failed);
}

static const char older_than_refused[] =
    "rlock scan: --older-than is not supported: Redis keeps no\n"
    "record of when a lock was taken (the watchdog keeps resetting\n"
    "its TTL), so how long a lock has been held cannot be read\n"
    "from Redis. Use --lease-over SECONDS to find locks whose\n"
    "remaining lease is longer than SECONDS.\n";

/* What scan's command line says besides the scan_run. */
typedef struct scan_args {
  scan_run *run;
  const char *pattern; /* --pattern, or NULL */
  rt_read_args ra;
} scan_args;

/* Takes one of scan's options into g and arg, a scan_args. */
static int scan_take_option(rt_global *g, int opt, const char *longname,
                            void *arg) {
  scan_args *a = arg;
  (void)longname;
  switch (opt) {
  case OPT_ALL: a->run->all = 1; return RT_TAKE_OK;
  case OPT_PATTERN: a->pattern = optarg; return RT_TAKE_OK;
  case OPT_OLDER: fputs(older_than_refused, stderr); return RT_TAKE_BAD;
  case OPT_LEASE_OVER:
    if (rt_parse_seconds(optarg, &a->run->lease_over_ms) == 0)
      return RT_TAKE_OK;
    fprintf(stderr, "rlock scan: bad --lease-over '%s'\n", optarg);
    return RT_TAKE_BAD;
  default: return rt_read_option(g, "rlock scan", opt, &a->ra);
  }
}

static const struct option scan_long_options[] = {
    {"all", no_argument, NULL, OPT_ALL},
    {"pattern", required_argument, NULL, OPT_PATTERN},
    {"older-than", required_argument, NULL, OPT_OLDER},
    {"lease-over", required_argument, NULL, OPT_LEASE_OVER},
    RT_READ_LONG_OPTIONS,
    RT_GLOBAL_LONG_OPTIONS,
    RT_HELP_LONG_OPTION_AND_END};

int rt_cmd_scan(rt_global *g, int argc, char **argv) {
  scan_run run = {.lease_over_ms = -1};
  scan_args a = {.run = &run, .ra = {.timeout_ms = 1000}};
  rt_cmdline line = {"h", scan_long_options, scan_usage, scan_take_option,
                     &a, 0, 0};
  int code = rt_parse_options(g, argc, argv, &line);
  if (code >= 0) return code;
  run.json = a.ra.json;
  if (rl_prefix_check(g->prefix) != 0) {
    fprintf(stderr, "rlock scan: bad --prefix\n");
    return RT_EXIT_USAGE;
  }
  rt_master_url *us;
  if (rt_parse_masters(g, &us) != 0) return RT_EXIT_USAGE;
  char *pattern = a.pattern ? strdup(a.pattern) : glob_prefix(g->prefix);
  if (pattern == NULL) {
    free(us);
    return RT_EXIT_OSERR;
  }
  run.pattern = pattern;
  code = scan_all(&run, g, us, a.ra.timeout_ms);
  free(pattern);
  free(us);
  return code;
}
