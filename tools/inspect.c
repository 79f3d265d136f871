/*
 * The read-only subcommands of the rlock tool, `status` and `scan`. They
 * talk to each master directly (blocking, on the library's master layer,
 * tools/masterconn.c: a timeout, TLS, AUTH and SELECT from the URL; a
 * cluster's commands routed by slot, its scan over every primary) and only
 * ever read: a tool that helps diagnose a lock must not change it. Master
 * URLs are parsed by the library's own parser, so the accepted forms are
 * the library's.
 *
 * Both print either a human report or one JSON object (--json); the field
 * names are documented in tools/rlock.1 and must stay stable.
 */
#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "master.h"
#include "slot.h"
#include "tool.h"
#include "url.h"

/* --- master URLs ------------------------------------------------------ */

typedef struct master_url {
  const char *spec;  /* as given */
  int cluster;
  char display[600]; /* the URL with its password masked, for output */
} master_url;

/* Parses one master address with the library's own parser (the tool links
 * the library statically for it), so that the tool and the library can
 * never disagree about what a master URL means. Returns 0, or -1 if it is
 * malformed. */
static int parse_master(const char *s, master_url *u) {
  static rl_master_url mu; /* large; the tool is single-threaded */
  memset(u, 0, sizeof *u);
  u->spec = s;
  if (rl_master_url_parse(s, &mu, NULL) != 0) return -1;
  const rl_url *p = &mu.url;
  /* The URL as shown: its password masked. */
  const char *secret = p->has_password ? ":***@" : "";
  if (mu.kind != 0) {
    const rl_topo_addr *a = &mu.topo.addr[0];
    int v6 = strchr(a->host, ':') != NULL;
    u->cluster = mu.kind == RL_TOPO_CLUSTER;
    snprintf(u->display, sizeof u->display, "%s-%s://%.200s%s%s%.200s%s:%d",
             p->tls ? "rediss" : "redis",
             u->cluster ? "cluster" : "sentinel", p->has_user ? p->user : "",
             secret, v6 ? "[" : "", a->host, v6 ? "]" : "", a->port);
    return 0;
  }
  if (p->kind == RL_URL_UNIX) {
    if (p->has_password || p->db != 0)
      snprintf(u->display, sizeof u->display, "unix://%.200s%s%s?db=%d",
               p->has_user ? p->user : "", secret, p->path, p->db);
    else
      snprintf(u->display, sizeof u->display, "%s", s);
    return 0;
  }
  if (strstr(s, "://") == NULL) {
    snprintf(u->display, sizeof u->display, "%s", s);
    return 0;
  }
  int v6 = strchr(p->host, ':') != NULL;
  snprintf(u->display, sizeof u->display, "%s://%.200s%s%s%.200s%s:%d/%d",
           p->tls ? "rediss" : "redis", p->has_user ? p->user : "", secret,
           v6 ? "[" : "", p->host, v6 ? "]" : "", p->port, p->db);
  return 0;
}

/* Checks every master URL up front, so that a typo is a usage error
 * rather than an unreachable master. */
static int parse_masters(const rt_global *g, master_url **out) {
  master_url *us = calloc(g->nmasters, sizeof *us);
  if (us == NULL) return -1;
  for (size_t i = 0; i < g->nmasters; i++) {
    if (parse_master(g->masters[i], &us[i]) != 0) {
      fprintf(stderr, "rlock: bad master address '%s'\n", g->masters[i]);
      free(us);
      return -1;
    }
  }
  *out = us;
  return 0;
}

/*
 * Connects to one master with a timeout on the connect and on every
 * command, authenticating and selecting the database (TLS from g).
 * Returns the connection, or NULL with a message in err.
 */
static rt_master *connect_master(const master_url *u, const rt_global *g,
                                 long long timeout_ms, char *err,
                                 size_t errsize) {
  return rt_master_open(u->spec, g, timeout_ms, err, errsize);
}

/* --- JSON output ----------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len;
  unsigned min;
  unsigned cp;
  if (s[0] < 0x80) return 1;
  if ((s[0] & 0xe0) == 0xc0) len = 2, min = 0x80, cp = s[0] & 0x1f;
  else if ((s[0] & 0xf0) == 0xe0) len = 3, min = 0x800, cp = s[0] & 0x0f;
  else if ((s[0] & 0xf8) == 0xf0) len = 4, min = 0x10000, cp = s[0] & 0x07;
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

/* Writes s as a JSON string. Bytes that are not valid UTF-8 (Redis keys
 * are binary) are written as \u00XX, their Latin-1 reading, so the output
 * always parses. */
static void json_str(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  for (size_t i = 0; i < n;) {
    unsigned char ch = p[i];
    if (ch == '"' || ch == '\\') {
      fputc('\\', f);
      fputc(ch, f);
      i++;
    } else if (ch < 0x20 || ch == 0x7f) {
      fprintf(f, "\\u%04x", ch);
      i++;
    } else {
      size_t l = utf8_len(p + i, n - i);
      if (l == 0) {
        fprintf(f, "\\u%04x", ch);
        i++;
      } else {
        fwrite(p + i, 1, l, f);
        i += l;
      }
    }
  }
  fputc('"', f);
}

static void json_cstr(FILE *f, const char *s) {
  if (s == NULL) fputs("null", f);
  else json_str(f, s, strlen(s));
}

/* Prints s for a human, with control bytes escaped. */
static void human_str(FILE *f, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == 0x7f) fprintf(f, "\\x%02x", ch);
    else fputc(ch, f);
  }
}

/* --- shared option parsing ------------------------------------------------- */

enum { OPT_MASTERS = 256, OPT_PREFIX, OPT_JSON, OPT_TIMEOUT, OPT_PATTERN,
       OPT_OLDER, OPT_LEASE_OVER, OPT_ALL, OPT_HELP };

/* Checks the key prefix as the library does: at most 64 bytes, no braces. */
static int prefix_ok(const char *p) {
  return strlen(p) <= 64 && strchr(p, '{') == NULL && strchr(p, '}') == NULL;
}

/* --- status --------------------------------------------------------------- */

static const char status_usage[] =
    "usage: rlock status [--json] [--timeout MS] [--masters URL,...]\n"
    "                    [--prefix P] NAME\n"
    "Shows, for each master, who holds the lock NAME, their hold counts, the\n"
    "remaining lease (PTTL, ms) and the last fencing token. Read-only.\n"
    "Exit 0 if at least one master answered, 2 if none did, 64 on bad usage.\n";

/* Reads one string reply that is a decimal integer, or reports it absent. */
static int reply_ll(const redisReply *r, long long *out) {
  if (r == NULL) return -1;
  if (r->type == REDIS_REPLY_INTEGER) {
    *out = r->integer;
    return 0;
  }
  if (r->type == REDIS_REPLY_STRING)
    return rt_parse_ll(r->str, -(1LL << 62), 1LL << 62, out);
  return -1;
}

int rt_cmd_status(rt_global *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"masters", required_argument, NULL, OPT_MASTERS},
      {"prefix", required_argument, NULL, OPT_PREFIX},
      RT_TLS_LONG_OPTIONS,
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int json = 0, c;
  long long timeout_ms = 1000;
  optind = 0; /* 0: glibc reinitializes, dropping the earlier "+" mode */
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_JSON: json = 1; break;
    case OPT_TIMEOUT:
      if (rt_parse_ll(optarg, 1, 600000, &timeout_ms) != 0) {
        fprintf(stderr, "rlock status: bad --timeout '%s'\n", optarg);
        return RT_EXIT_USAGE;
      }
      break;
    case OPT_MASTERS:
      if (rt_set_masters(g, optarg) != 0) {
        fprintf(stderr, "rlock status: bad --masters '%s'\n", optarg);
        return RT_EXIT_USAGE;
      }
      break;
    case OPT_PREFIX: g->prefix = optarg; break;
    case 'h': fputs(status_usage, stdout); return RT_EXIT_OK;
    default:
      if (rt_tls_option(g, c, optarg)) break;
      fputs(status_usage, stderr);
      return RT_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    fputs(status_usage, stderr);
    return RT_EXIT_USAGE;
  }
  const char *name = argv[optind];
  size_t nlen = strlen(name);
  if (nlen == 0 || nlen > 512 || strchr(name, '{') || strchr(name, '}')) {
    fprintf(stderr, "rlock status: bad lock name\n");
    return RT_EXIT_USAGE;
  }
  if (!prefix_ok(g->prefix)) {
    fprintf(stderr, "rlock status: bad --prefix\n");
    return RT_EXIT_USAGE;
  }
  master_url *us;
  if (parse_masters(g, &us) != 0) return RT_EXIT_USAGE;

  size_t klen = strlen(g->prefix) + nlen + 3;
  char *key = malloc(klen), *fkey = malloc(klen + 6);
  if (key == NULL || fkey == NULL) {
    free(key);
    free(fkey);
    free(us);
    return RT_EXIT_OSERR;
  }
  snprintf(key, klen, "%s{%s}", g->prefix, name);
  snprintf(fkey, klen + 6, "%s:fence", key);

  FILE *f = stdout;
  size_t answered = 0, held_on = 0;
  if (json) {
    fputs("{\"name\":", f);
    json_cstr(f, name);
    fputs(",\"key\":", f);
    json_cstr(f, key);
    fputs(",\"fence_key\":", f);
    json_cstr(f, fkey);
    fprintf(f, ",\"quorum\":%zu,\"masters\":[", g->nmasters / 2 + 1);
  } else {
    fprintf(f, "lock ");
    human_str(f, key, strlen(key));
    fprintf(f, " (quorum %zu of %zu)\n", g->nmasters / 2 + 1, g->nmasters);
  }
  for (size_t i = 0; i < g->nmasters; i++) {
    char err[512] = "", node[300] = "";
    redisReply *r[4] = {NULL, NULL, NULL, NULL};
    rt_master *ctx = connect_master(&us[i], g, timeout_ms, err, sizeof err);
    if (ctx != NULL) {
      /* Every key of the lock shares its hash tag: one slot, one node. */
      int slot = rl_slot_of_str(key);
      rt_master_append(ctx, NULL, slot, "HGETALL %s", key);
      rt_master_append(ctx, NULL, slot, "PTTL %s", key);
      rt_master_append(ctx, NULL, slot, "GET %s", fkey);
      rt_master_append(ctx, NULL, slot, "PTTL %s", fkey);
      for (int k = 0; k < 4; k++) {
        redisReply *rep = NULL;
        if (rt_master_get_reply(ctx, &rep, node, sizeof node) != REDIS_OK) {
          snprintf(err, sizeof err, "%s", rt_master_errstr(ctx));
          break;
        }
        r[k] = rep;
        if (r[k]->type == REDIS_REPLY_ERROR && err[0] == '\0')
          snprintf(err, sizeof err, "%s", r[k]->str);
      }
      rt_master_free(ctx);
    }
    int ok = err[0] == '\0';
    if (ok && (r[0] == NULL || r[0]->type != REDIS_REPLY_ARRAY)) {
      ok = 0;
      snprintf(err, sizeof err, "unexpected reply to HGETALL");
    }
    long long pttl = -2, fpttl = -2;
    if (ok) {
      answered++;
      reply_ll(r[1], &pttl);
      reply_ll(r[3], &fpttl);
      if (r[0]->elements > 0) held_on++;
    }
    const char *token = ok && r[2] != NULL && r[2]->type == REDIS_REPLY_STRING
                            ? r[2]->str
                            : NULL;
    if (json) {
      fputs(i ? ",{" : "{", f);
      fputs("\"master\":", f);
      json_cstr(f, us[i].display);
      if (us[i].cluster) {
        fputs(",\"node\":", f);
        json_cstr(f, node[0] ? node : NULL);
      }
      fprintf(f, ",\"ok\":%s,\"error\":", ok ? "true" : "false");
      json_cstr(f, ok ? NULL : err);
      if (ok) {
        fprintf(f, ",\"held\":%s,\"holders\":[",
                r[0]->elements > 0 ? "true" : "false");
        for (size_t k = 0; k + 1 < r[0]->elements; k += 2) {
          long long cnt = 0;
          fputs(k ? ",{\"owner\":" : "{\"owner\":", f);
          json_str(f, r[0]->element[k]->str, r[0]->element[k]->len);
          if (reply_ll(r[0]->element[k + 1], &cnt) == 0)
            fprintf(f, ",\"count\":%lld}", cnt);
          else
            fputs(",\"count\":null}", f);
        }
        fprintf(f, "],\"pttl_ms\":%lld,\"token\":", pttl);
        json_cstr(f, token);
        fprintf(f, ",\"fence_pttl_ms\":%lld}", fpttl);
      } else {
        fputs(",\"held\":null,\"holders\":null,\"pttl_ms\":null,"
              "\"token\":null,\"fence_pttl_ms\":null}",
              f);
      }
    } else {
      if (us[i].cluster && node[0])
        fprintf(f, "  %s (node %s): ", us[i].display, node);
      else
        fprintf(f, "  %s: ", us[i].display);
      if (!ok) {
        fprintf(f, "error: %s\n", err);
      } else {
        if (r[0]->elements == 0) {
          fputs("free", f);
        } else {
          fputs("held by", f);
          for (size_t k = 0; k + 1 < r[0]->elements; k += 2) {
            fputs(k ? ", " : " ", f);
            human_str(f, r[0]->element[k]->str, r[0]->element[k]->len);
            fprintf(f, " (count %s)", r[0]->element[k + 1]->str
                                          ? r[0]->element[k + 1]->str
                                          : "?");
          }
          if (pttl == -1) fputs(", NO TTL (leaked)", f);
          else fprintf(f, ", lease %lld ms left", pttl);
        }
        if (token != NULL) {
          fprintf(f, ", last token %s", token);
          if (fpttl >= 0) fprintf(f, " (kept %lld s more)", fpttl / 1000);
        } else {
          fputs(", no token yet", f);
        }
        fputc('\n', f);
      }
    }
    for (int k = 0; k < 4; k++)
      if (r[k] != NULL) freeReplyObject(r[k]);
  }
  if (json)
    fprintf(f, "],\"answered\":%zu,\"held_on\":%zu}\n", answered, held_on);
  else
    fprintf(f, "  held on %zu of %zu masters, %zu answered\n", held_on,
            g->nmasters, answered);
  fflush(f);
  free(key);
  free(fkey);
  free(us);
  return answered > 0 ? RT_EXIT_OK : RT_EXIT_NOMASTER;
}

/* --- scan ----------------------------------------------------------------- */

static const char scan_usage[] =
    "usage: rlock scan [--json] [--all] [--pattern P] [--lease-over SECONDS]\n"
    "                  [--timeout MS] [--masters URL,...] [--prefix P]\n"
    "SCANs every master for lock keys (PREFIX* by default, minus the :fence\n"
    "counters; only hashes count as locks) and reports locks with no TTL\n"
    "(leaks) and, with --lease-over, locks whose remaining lease exceeds\n"
    "SECONDS. --all lists every lock. Read-only.\n"
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

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t m = strlen(suffix);
  return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

typedef struct scan_totals {
  long long locks, leaks, long_leases, other;
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
} seen_key;

typedef struct key_set {
  seen_key *slots;
  size_t cap, n;
} key_set;

static size_t key_hash(const char *s, size_t n) {
  size_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
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
                       int over) {
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
  return 0;
}

static void key_set_totals(const key_set *ks, scan_totals *t) {
  for (size_t i = 0; i < ks->cap; i++) {
    if (ks->slots[i].key == NULL) continue;
    t->locks++;
    t->leaks += ks->slots[i].leak;
    t->long_leases += ks->slots[i].over;
  }
}

static void key_set_free(key_set *ks) {
  for (size_t i = 0; i < ks->cap; i++) free(ks->slots[i].key);
  free(ks->slots);
}

/* A lock's key is PREFIX{NAME}; other hashes (such as the library's
 * PREFIXrun_ids restart records) are not locks. */
static int lock_shaped(const char *key, size_t len) {
  return len >= 3 && key[len - 1] == '}' && memchr(key, '{', len) != NULL;
}

/*
 * Scans one connected master, printing each reported key as it goes (the
 * JSON array of keys is open while this runs). Returns 0, or -1 with a
 * message in err after a failed command.
 */
static int scan_master(rt_master *ctx, rl_conn *node, const char *where,
                       const char *pattern, long long lease_over_ms, int all,
                       int json, int *first_key, scan_totals *t, key_set *ks,
                       char *err, size_t errsize) {
  char cursor[32] = "0";
  do {
    redisReply *r = rt_master_command(ctx, node, RL_MCMD_ANY_SLOT,
                                      "SCAN %s MATCH %s COUNT 1000", cursor,
                                      pattern);
    if (r == NULL) {
      snprintf(err, errsize, "%s", rt_master_errstr(ctx));
      return -1;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_ARRAY) {
      snprintf(err, errsize, "%s",
               r->type == REDIS_REPLY_ERROR ? r->str : "bad SCAN reply");
      freeReplyObject(r);
      return -1;
    }
    snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
    redisReply *keys = r->element[1];
    size_t sent = 0;
    for (size_t i = 0; i < keys->elements; i++) {
      redisReply *k = keys->element[i];
      if (k->type != REDIS_REPLY_STRING || ends_with(k->str, k->len, ":fence"))
        continue;
      rt_master_append(ctx, node, RL_MCMD_ANY_SLOT, "TYPE %b", k->str,
                       (size_t)k->len);
      rt_master_append(ctx, node, RL_MCMD_ANY_SLOT, "PTTL %b", k->str,
                       (size_t)k->len);
      rt_master_append(ctx, node, RL_MCMD_ANY_SLOT, "HLEN %b", k->str,
                       (size_t)k->len);
      sent++;
    }
    int failed = 0;
    for (size_t i = 0; i < keys->elements && sent > 0; i++) {
      redisReply *k = keys->element[i];
      if (k->type != REDIS_REPLY_STRING || ends_with(k->str, k->len, ":fence"))
        continue;
      sent--;
      redisReply *rr[3] = {NULL, NULL, NULL};
      for (int j = 0; j < 3; j++) {
        redisReply *rep = NULL;
        if (rt_master_get_reply(ctx, &rep, NULL, 0) != REDIS_OK) {
          if (!failed) snprintf(err, errsize, "%s", rt_master_errstr(ctx));
          failed = 1;
          break;
        }
        rr[j] = rep;
      }
      if (!failed && rr[0]->type == REDIS_REPLY_STATUS &&
          strcmp(rr[0]->str, "hash") == 0 &&
          lock_shaped(k->str, k->len) &&
          rr[1]->type == REDIS_REPLY_INTEGER &&
          rr[1]->integer != -2) { /* -2: it went away meanwhile */
        long long pttl = rr[1]->integer;
        long long fields = rr[2]->type == REDIS_REPLY_INTEGER
                               ? rr[2]->integer : -1;
        int leak = pttl == -1;
        int over = lease_over_ms >= 0 && pttl > lease_over_ms;
        if (key_set_add(ks, k->str, k->len, leak, over) != 0) {
          if (!failed) snprintf(err, errsize, "out of memory");
          failed = 1;
        }
        if (leak || over || all) {
          if (json) {
            fputs(*first_key ? "{\"key\":" : ",{\"key\":", stdout);
            json_str(stdout, k->str, k->len);
            if (node != NULL) {
              fputs(",\"node\":", stdout);
              json_cstr(stdout, where);
            }
            fprintf(stdout,
                    ",\"pttl_ms\":%lld,\"holders\":%lld,\"leak\":%s,"
                    "\"lease_over\":%s}",
                    pttl, fields, leak ? "true" : "false",
                    over ? "true" : "false");
          } else {
            fprintf(stdout, "%s ", where);
            human_str(stdout, k->str, k->len);
            if (leak)
              fprintf(stdout, ": NO TTL (leak), %lld holder(s)\n", fields);
            else
              fprintf(stdout, ": lease %lld ms left%s, %lld holder(s)\n", pttl,
                      over ? " (over threshold)" : "", fields);
          }
          *first_key = 0;
        }
      } else if (!failed && rr[0]->type == REDIS_REPLY_STATUS &&
                 strcmp(rr[0]->str, "none") != 0) {
        t->other++;
      }
      for (int j = 0; j < 3; j++)
        if (rr[j] != NULL) freeReplyObject(rr[j]);
      if (failed) break;
    }
    freeReplyObject(r);
    if (failed) return -1;
  } while (strcmp(cursor, "0") != 0);
  return 0;
}

/* Scans every node of a master that serves lock keys: the server, or
 * every primary of a cluster (a cluster's SCAN is per node). */
static int scan_nodes(rt_master *ctx, const master_url *u,
                      const char *pattern, long long lease_over_ms, int all,
                      int json, int *first_key, scan_totals *t, key_set *ks,
                      char *err, size_t errsize) {
  if (!u->cluster)
    return scan_master(ctx, NULL, u->display, pattern, lease_over_ms, all,
                       json, first_key, t, ks, err, errsize);
  rl_conn *nodes[1024];
  int n = rt_master_nodes(ctx, nodes, 1024);
  if (n > 1024) n = 1024;
  for (int k = 0; k < n; k++) {
    char where[1000], addr[300];
    rl_node_address(nodes[k], addr, sizeof addr);
    snprintf(where, sizeof where, "%s node %s", u->display, addr);
    if (scan_master(ctx, nodes[k], addr[0] ? (json ? addr : where) : where,
                    pattern, lease_over_ms, all, json, first_key, t, ks, err,
                    errsize) != 0) {
      char sub[512];
      snprintf(sub, sizeof sub, "%s", err);
      snprintf(err, errsize, "node %s: %.200s", addr, sub);
      return -1;
    }
  }
  return 0;
}

int rt_cmd_scan(rt_global *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"all", no_argument, NULL, OPT_ALL},
      {"pattern", required_argument, NULL, OPT_PATTERN},
      {"older-than", required_argument, NULL, OPT_OLDER},
      {"lease-over", required_argument, NULL, OPT_LEASE_OVER},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"masters", required_argument, NULL, OPT_MASTERS},
      {"prefix", required_argument, NULL, OPT_PREFIX},
      RT_TLS_LONG_OPTIONS,
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int json = 0, all = 0, c;
  long long timeout_ms = 1000, lease_over_ms = -1;
  const char *pattern_opt = NULL;
  optind = 0; /* 0: glibc reinitializes, dropping the earlier "+" mode */
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case OPT_JSON: json = 1; break;
    case OPT_ALL: all = 1; break;
    case OPT_PATTERN: pattern_opt = optarg; break;
    case OPT_OLDER:
      fprintf(stderr,
              "rlock scan: --older-than is not supported: Redis keeps no\n"
              "record of when a lock was taken (the watchdog keeps resetting\n"
              "its TTL), so how long a lock has been held cannot be read\n"
              "from Redis. Use --lease-over SECONDS to find locks whose\n"
              "remaining lease is longer than SECONDS.\n");
      return RT_EXIT_USAGE;
    case OPT_LEASE_OVER:
      if (rt_parse_seconds(optarg, &lease_over_ms) != 0) {
        fprintf(stderr, "rlock scan: bad --lease-over '%s'\n", optarg);
        return RT_EXIT_USAGE;
      }
      break;
    case OPT_TIMEOUT:
      if (rt_parse_ll(optarg, 1, 600000, &timeout_ms) != 0) {
        fprintf(stderr, "rlock scan: bad --timeout '%s'\n", optarg);
        return RT_EXIT_USAGE;
      }
      break;
    case OPT_MASTERS:
      if (rt_set_masters(g, optarg) != 0) {
        fprintf(stderr, "rlock scan: bad --masters '%s'\n", optarg);
        return RT_EXIT_USAGE;
      }
      break;
    case OPT_PREFIX: g->prefix = optarg; break;
    case 'h': fputs(scan_usage, stdout); return RT_EXIT_OK;
    default:
      if (rt_tls_option(g, c, optarg)) break;
      fputs(scan_usage, stderr);
      return RT_EXIT_USAGE;
    }
  }
  if (optind != argc) {
    fputs(scan_usage, stderr);
    return RT_EXIT_USAGE;
  }
  if (!prefix_ok(g->prefix)) {
    fprintf(stderr, "rlock scan: bad --prefix\n");
    return RT_EXIT_USAGE;
  }
  master_url *us;
  if (parse_masters(g, &us) != 0) return RT_EXIT_USAGE;
  char *pattern = pattern_opt ? strdup(pattern_opt) : glob_prefix(g->prefix);
  if (pattern == NULL) {
    free(us);
    return RT_EXIT_OSERR;
  }
  scan_totals t = {0, 0, 0, 0};
  key_set ks = {NULL, 0, 0};
  size_t failed = 0;
  if (json) {
    fputs("{\"pattern\":", stdout);
    json_cstr(stdout, pattern);
    fputs(",\"lease_over_ms\":", stdout);
    if (lease_over_ms >= 0) fprintf(stdout, "%lld", lease_over_ms);
    else fputs("null", stdout);
    fputs(",\"masters\":[", stdout);
  }
  for (size_t i = 0; i < g->nmasters; i++) {
    char err[512] = "";
    int first_key = 1, rc = -1;
    if (json) {
      fputs(i ? ",{\"master\":" : "{\"master\":", stdout);
      json_cstr(stdout, us[i].display);
      fputs(",\"keys\":[", stdout);
    }
    rt_master *ctx = connect_master(&us[i], g, timeout_ms, err, sizeof err);
    if (ctx != NULL) {
      rc = scan_nodes(ctx, &us[i], pattern, lease_over_ms, all, json,
                      &first_key, &t, &ks, err, sizeof err);
      rt_master_free(ctx);
    }
    if (rc != 0) failed++;
    if (json) {
      fprintf(stdout, "],\"ok\":%s,\"error\":", rc == 0 ? "true" : "false");
      json_cstr(stdout, rc == 0 ? NULL : err);
      fputc('}', stdout);
    } else if (rc != 0) {
      fprintf(stdout, "%s: error: %s\n", us[i].display, err);
    }
  }
  key_set_totals(&ks, &t);
  key_set_free(&ks);
  if (json) {
    fprintf(stdout,
            "],\"locks\":%lld,\"leaks\":%lld,\"lease_over\":%lld,"
            "\"other_keys\":%lld,\"failed_masters\":%zu}\n",
            t.locks, t.leaks, t.long_leases, t.other, failed);
  } else {
    fprintf(stdout, "%lld lock(s) on %zu master(s): %lld without TTL", t.locks,
            g->nmasters - failed, t.leaks);
    if (lease_over_ms >= 0)
      fprintf(stdout, ", %lld with a lease over %lld ms", t.long_leases,
              lease_over_ms);
    if (failed) fprintf(stdout, "; %zu master(s) failed", failed);
    fputc('\n', stdout);
  }
  fflush(stdout);
  free(pattern);
  free(us);
  if (t.leaks > 0 || t.long_leases > 0) return RT_EXIT_FOUND;
  return failed ? RT_EXIT_NOMASTER : RT_EXIT_OK;
}
