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
static int parse_master(const char *s, master_url *u, const char **why) {
  static rl_master_url mu; /* large; the tool is single-threaded */
  memset(u, 0, sizeof *u);
  u->spec = s;
  if (rl_master_url_parse(s, &mu, why) != 0) return -1;
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
    const char *why = "invalid";
    if (parse_master(g->masters[i], &us[i], &why) != 0) {
      char shown[600]; /* without its password */
      rl_url_mask(g->masters[i], shown, sizeof shown);
      fprintf(stderr, "rlock: bad master address '%s': %s\n", shown, why);
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

static const char status_usage[] =
    "usage: rlock status [--json] [--timeout MS] [--masters URL,...]\n"
    "                    [--prefix P] NAME\n"
    "Shows, for each master, who holds the lock NAME, their hold counts, the\n"
    "remaining lease (PTTL, ms) and the last fencing token; and, for every\n"
    "other kind found under NAME, its state: the fair lock's queue in order\n"
    "(owner, ticket, ms until it is skipped unless it attempts again), the\n"
    "read-write lock's writer, readers with their remaining leases, waiting\n"
    "writers and last token; and the semaphore (limit, holders and their\n"
    "slots and leases) and the latch (count, state, TTL) called NAME, when\n"
    "there are. Read-only.\n"
    "Exit 0 if at least one master answered, 2 if none did, 64 on bad usage.\n";

/* What one master says of NAME's other kinds (rlock.h's lock family):
 * the replies of the commands status_family_append queued. */
enum { FQ, FQT, RW_W, RW_WPTTL, RW_R, RW_RC, RW_WQ, RW_FENCE, FAM_N };

/* Every key of a name shares its hash tag: one slot, one node. */
static void status_family_append(rt_master *ctx, int slot, const char *key) {
  rt_master_append(ctx, NULL, slot, "ZRANGE %s:q 0 -1 WITHSCORES", key);
  rt_master_append(ctx, NULL, slot, "ZRANGE %s:qt 0 -1 WITHSCORES", key);
  rt_master_append(ctx, NULL, slot, "HGETALL %s:w", key);
  rt_master_append(ctx, NULL, slot, "PTTL %s:w", key);
  rt_master_append(ctx, NULL, slot, "ZRANGE %s:r 0 -1 WITHSCORES", key);
  rt_master_append(ctx, NULL, slot, "HGETALL %s:rc", key);
  rt_master_append(ctx, NULL, slot, "ZRANGE %s:wq 0 -1 WITHSCORES", key);
  rt_master_append(ctx, NULL, slot, "GET %s:w:fence", key);
}

/* --- status: the semaphore and the latch of a name ----------------------- */

/* What one master has of the semaphore and the latch called NAME: the
 * replies, read after the lock's on the same connection. */
typedef struct semlatch_view {
  redisReply *slots;  /* HGETALL <p>{name}:s: slot -> owner, "#..." records */
  redisReply *leases; /* ZRANGE <p>{name}:s:t 0 -1 WITHSCORES (master ms) */
  redisReply *time;   /* TIME, to tell leases that ran out */
  redisReply *token;  /* GET <p>{name}:s:fence */
  redisReply *latch;  /* HGETALL <p>{name}:l */
  redisReply *lpttl;  /* PTTL <p>{name}:l */
} semlatch_view;

static void semlatch_read(rt_master *ctx, int slot, const char *key,
                          semlatch_view *v) {
  memset(v, 0, sizeof *v);
  redisReply **r[] = {&v->slots, &v->leases, &v->time,
                      &v->token, &v->latch,  &v->lpttl};
  rt_master_append(ctx, NULL, slot, "HGETALL %s:s", key);
  rt_master_append(ctx, NULL, slot, "ZRANGE %s:s:t 0 -1 WITHSCORES", key);
  rt_master_append(ctx, NULL, slot, "TIME");
  rt_master_append(ctx, NULL, slot, "GET %s:s:fence", key);
  rt_master_append(ctx, NULL, slot, "HGETALL %s:l", key);
  rt_master_append(ctx, NULL, slot, "PTTL %s:l", key);
  for (size_t k = 0; k < sizeof r / sizeof r[0]; k++)
    if (rt_master_get_reply(ctx, r[k], NULL, 0) != REDIS_OK) *r[k] = NULL;
}

static void semlatch_free(semlatch_view *v) {
  redisReply *r[] = {v->slots, v->leases, v->time,
                     v->token, v->latch,  v->lpttl};
  for (size_t k = 0; k < sizeof r / sizeof r[0]; k++)
    if (r[k] != NULL) freeReplyObject(r[k]);
}

static int is_array(const redisReply *r) {
  return r != NULL && r->type == REDIS_REPLY_ARRAY;
}

/* 8 if the master has a semaphore of the name, 16 a latch, or both. */
static int semlatch_kinds(const semlatch_view *v) {
  return (is_array(v->slots) && v->slots->elements > 0 ? 8 : 0) |
         (is_array(v->latch) && v->latch->elements > 0 ? 16 : 0);
}

/* The score of member m in a WITHSCORES reply, or def. */
static long long score_of(const redisReply *z, const char *m, size_t len,
                          long long def) {
  for (size_t k = 0; is_array(z) && k + 1 < z->elements; k += 2)
    if ((size_t)z->element[k]->len == len &&
        memcmp(z->element[k]->str, m, len) == 0) {
      long long v;
      return reply_ll(z->element[k + 1], &v) == 0 ? v : def;
    }
  return def;
}

/* The value of field m in an HGETALL reply, or NULL. */
static const char *field_of(const redisReply *h, const char *m, size_t len) {
  for (size_t k = 0; is_array(h) && k + 1 < h->elements; k += 2)
    if ((size_t)h->element[k]->len == len &&
        memcmp(h->element[k]->str, m, len) == 0)
      return h->element[k + 1]->str;
  return NULL;
}

/* Bit 0: a fair queue; bit 1: anything of a read-write lock. */
static int family_kinds(redisReply *const *r) {
  int k = 0;
  if (is_array(r[FQ]) && r[FQ]->elements > 0) k |= 1;
  if ((is_array(r[RW_W]) && r[RW_W]->elements > 0) ||
      (is_array(r[RW_R]) && r[RW_R]->elements > 0) ||
      (is_array(r[RW_WQ]) && r[RW_WQ]->elements > 0) ||
      (r[RW_FENCE] != NULL && r[RW_FENCE]->type == REDIS_REPLY_STRING))
    k |= 2;
  return k;
}

/* now: the master's clock in ms (scores are in it). */
static void status_family_json(FILE *f, redisReply *const *r, long long now) {
  fputs(",\"fair_queue\":[", f);
  for (size_t k = 0; is_array(r[FQ]) && k + 1 < r[FQ]->elements; k += 2) {
    const redisReply *m = r[FQ]->element[k];
    long long ticket = 0;
    reply_ll(r[FQ]->element[k + 1], &ticket);
    long long until = score_of(r[FQT], m->str, m->len, now);
    fputs(k ? ",{\"owner\":" : "{\"owner\":", f);
    json_str(f, m->str, m->len);
    fprintf(f, ",\"ticket\":%lld,\"alive_ms\":%lld}", ticket, until - now);
  }
  fputs("],\"rw\":{\"writers\":[", f);
  for (size_t k = 0; is_array(r[RW_W]) && k + 1 < r[RW_W]->elements; k += 2) {
    long long cnt = 0;
    fputs(k ? ",{\"owner\":" : "{\"owner\":", f);
    json_str(f, r[RW_W]->element[k]->str, r[RW_W]->element[k]->len);
    reply_ll(r[RW_W]->element[k + 1], &cnt);
    fprintf(f, ",\"count\":%lld}", cnt);
  }
  long long wpttl = -2;
  reply_ll(r[RW_WPTTL], &wpttl);
  fprintf(f, "],\"write_pttl_ms\":%lld,\"readers\":[", wpttl);
  int first = 1;
  for (size_t k = 0; is_array(r[RW_R]) && k + 1 < r[RW_R]->elements; k += 2) {
    const redisReply *m = r[RW_R]->element[k];
    long long exp = 0, cnt = 0;
    reply_ll(r[RW_R]->element[k + 1], &exp);
    if (exp <= now) continue; /* ran out: no longer a reader */
    const char *c = field_of(r[RW_RC], m->str, m->len);
    if (c != NULL) rt_parse_ll(c, 0, 1LL << 62, &cnt);
    fputs(first ? "{\"owner\":" : ",{\"owner\":", f);
    first = 0;
    json_str(f, m->str, m->len);
    fprintf(f, ",\"count\":%lld,\"lease_ms\":%lld}", cnt, exp - now);
  }
  fputs("],\"waiting_writers\":[", f);
  first = 1;
  for (size_t k = 0; is_array(r[RW_WQ]) && k + 1 < r[RW_WQ]->elements;
       k += 2) {
    long long until = 0;
    reply_ll(r[RW_WQ]->element[k + 1], &until);
    if (until <= now) continue;
    fputs(first ? "{\"owner\":" : ",{\"owner\":", f);
    first = 0;
    json_str(f, r[RW_WQ]->element[k]->str, r[RW_WQ]->element[k]->len);
    fprintf(f, ",\"alive_ms\":%lld}", until - now);
  }
  fputs("],\"token\":", f);
  json_cstr(f, r[RW_FENCE] != NULL && r[RW_FENCE]->type == REDIS_REPLY_STRING
                   ? r[RW_FENCE]->str
                   : NULL);
  fputs("}", f);
}

static void status_family_human(FILE *f, redisReply *const *r,
                                long long now) {
  int kinds = family_kinds(r);
  if (kinds & 1) {
    fputs("    fair queue:", f);
    for (size_t k = 0; k + 1 < r[FQ]->elements; k += 2) {
      const redisReply *m = r[FQ]->element[k];
      long long until = score_of(r[FQT], m->str, m->len, now);
      fputs(k ? ", " : " ", f);
      human_str(f, m->str, m->len);
      fprintf(f, " (ticket %s, skipped in %lld ms)",
              r[FQ]->element[k + 1]->str, until - now);
    }
    fputc('\n', f);
  }
  if (!(kinds & 2)) return;
  fputs("    read-write:", f);
  if (is_array(r[RW_W]) && r[RW_W]->elements >= 2) {
    long long wpttl = -2;
    reply_ll(r[RW_WPTTL], &wpttl);
    fputs(" written by ", f);
    human_str(f, r[RW_W]->element[0]->str, r[RW_W]->element[0]->len);
    fprintf(f, " (count %s, lease %lld ms left)", r[RW_W]->element[1]->str,
            wpttl);
  } else {
    fputs(" no writer", f);
  }
  int n = 0;
  for (size_t k = 0; is_array(r[RW_R]) && k + 1 < r[RW_R]->elements; k += 2) {
    const redisReply *m = r[RW_R]->element[k];
    long long exp = 0;
    reply_ll(r[RW_R]->element[k + 1], &exp);
    if (exp <= now) continue;
    const char *c = field_of(r[RW_RC], m->str, m->len);
    fputs(n++ ? ", " : "; readers ", f);
    human_str(f, m->str, m->len);
    fprintf(f, " (count %s, lease %lld ms left)", c ? c : "?", exp - now);
  }
  if (n == 0) fputs("; no reader", f);
  n = 0;
  for (size_t k = 0; is_array(r[RW_WQ]) && k + 1 < r[RW_WQ]->elements;
       k += 2) {
    long long until = 0;
    reply_ll(r[RW_WQ]->element[k + 1], &until);
    if (until <= now) continue;
    fputs(n++ ? ", " : "; waiting writers ", f);
    human_str(f, r[RW_WQ]->element[k]->str, r[RW_WQ]->element[k]->len);
    fprintf(f, " (skipped in %lld ms)", until - now);
  }
  if (r[RW_FENCE] != NULL && r[RW_FENCE]->type == REDIS_REPLY_STRING)
    fprintf(f, "; last token %s", r[RW_FENCE]->str);
  fputc('\n', f);
}

/* The master's clock in ms, or -1. */
static long long master_ms(const semlatch_view *v) {
  if (!is_array(v->time) || v->time->elements != 2) return -1;
  return atoll(v->time->element[0]->str) * 1000 +
         atoll(v->time->element[1]->str) / 1000;
}

/* The lease of owner on this master in ms from now: <= 0 if it ran out
 * (its slots count as free), -1000000 if it has none. */
static long long lease_left(const semlatch_view *v, const char *owner,
                            size_t len) {
  long long now = master_ms(v);
  for (size_t k = 0; is_array(v->leases) && k + 1 < v->leases->elements;
       k += 2) {
    const redisReply *o = v->leases->element[k];
    if (o->len == len && memcmp(o->str, owner, len) == 0)
      return atoll(v->leases->element[k + 1]->str) - now;
  }
  return -1000000;
}

/* A field of the latch hash, as a number, or def. */
static long long latch_field(const semlatch_view *v, const char *name,
                             long long def) {
  for (size_t k = 0; is_array(v->latch) && k + 1 < v->latch->elements; k += 2)
    if (strcmp(v->latch->element[k]->str, name) == 0)
      return atoll(v->latch->element[k + 1]->str);
  return def;
}

/* Whether a field of the slot hash is a slot: the others are records
 * ("#limit", "#refused", "#at:<owner>"; sem_scripts.c) and start with '#'. */
static int sem_is_slot(const redisReply *field) {
  return field->str[0] != '#';
}

/* The semaphore's limit, taken slots (live leases only) and, per owner
 * in the order first seen, its slots. */
static long long sem_limit(const semlatch_view *v, long long *taken) {
  long long limit = -1;
  *taken = 0;
  for (size_t k = 0; is_array(v->slots) && k + 1 < v->slots->elements;
       k += 2) {
    const redisReply *f = v->slots->element[k], *o = v->slots->element[k + 1];
    if (strcmp(f->str, "#limit") == 0)
      limit = atoll(o->str);
    else if (sem_is_slot(f) && lease_left(v, o->str, o->len) > 0)
      (*taken)++;
  }
  return limit;
}

/* Calls fn for each live owner once, with its slots as a string list. */
static void sem_owners(const semlatch_view *v,
                       void (*fn)(const redisReply *owner, const char *slots,
                                  long long lease_ms, void *arg),
                       void *arg) {
  if (!is_array(v->slots)) return;
  size_t n = v->slots->elements;
  for (size_t k = 0; k + 1 < n; k += 2) {
    const redisReply *o = v->slots->element[k + 1];
    if (!sem_is_slot(v->slots->element[k])) continue;
    int seen = 0;
    for (size_t p = 0; p < k; p += 2)
      if (sem_is_slot(v->slots->element[p]) &&
          v->slots->element[p + 1]->len == o->len &&
          memcmp(v->slots->element[p + 1]->str, o->str, o->len) == 0)
        seen = 1;
    long long left = lease_left(v, o->str, o->len);
    if (seen || left <= 0) continue;
    char slots[512] = "";
    size_t used = 0;
    for (size_t q = k; q + 1 < n && used + 24 < sizeof slots; q += 2)
      if (sem_is_slot(v->slots->element[q]) &&
          v->slots->element[q + 1]->len == o->len &&
          memcmp(v->slots->element[q + 1]->str, o->str, o->len) == 0)
        used += (size_t)snprintf(slots + used, sizeof slots - used, "%s%s",
                                 used ? "," : "", v->slots->element[q]->str);
    fn(o, slots, left, arg);
  }
}

typedef struct owner_print {
  FILE *f;
  int json, first;
} owner_print;

static void print_owner(const redisReply *owner, const char *slots,
                        long long lease_ms, void *arg) {
  owner_print *p = arg;
  if (p->json) {
    fputs(p->first ? "{\"owner\":" : ",{\"owner\":", p->f);
    json_str(p->f, owner->str, owner->len);
    fprintf(p->f, ",\"slots\":[%s],\"lease_ms\":%lld}", slots, lease_ms);
  } else {
    fputs(p->first ? " " : "; ", p->f);
    human_str(p->f, owner->str, owner->len);
    fprintf(p->f, " holds slot%s %s, lease %lld ms left",
            strchr(slots, ',') ? "s" : "", slots, lease_ms);
  }
  p->first = 0;
}

/* ,"sem":...,"latch":... of one master's JSON object. */
static void semlatch_json(FILE *f, const semlatch_view *v) {
  long long taken;
  long long limit = sem_limit(v, &taken);
  fputs(",\"sem\":", f);
  if (limit < 0 && !(is_array(v->slots) && v->slots->elements > 0)) {
    fputs("null", f);
  } else {
    fprintf(f, "{\"limit\":%lld,\"taken\":%lld,\"free\":%lld,\"holders\":[",
            limit, taken, limit >= 0 ? limit - taken : -1);
    owner_print p = {f, 1, 1};
    sem_owners(v, print_owner, &p);
    fputs("],\"token\":", f);
    json_cstr(f, v->token && v->token->type == REDIS_REPLY_STRING
                     ? v->token->str
                     : NULL);
    fputc('}', f);
  }
  fputs(",\"latch\":", f);
  if (!is_array(v->latch) || v->latch->elements == 0) {
    fputs("null", f);
    return;
  }
  long long count = latch_field(v, "count", -1);
  long long pttl = v->lpttl && v->lpttl->type == REDIS_REPLY_INTEGER
                       ? v->lpttl->integer
                       : -2;
  fprintf(f, "{\"state\":\"%s\",\"count\":%lld,\"init\":%lld,"
             "\"generation\":%lld,\"pttl_ms\":%lld}",
          count > 0 ? "counting" : "open", count, latch_field(v, "init", -1),
          latch_field(v, "gen", -1), pttl);
}

/* The human lines of one master. */
static void semlatch_human(FILE *f, const semlatch_view *v) {
  long long taken;
  long long limit = sem_limit(v, &taken);
  if (limit >= 0 || (is_array(v->slots) && v->slots->elements > 0)) {
    fprintf(f, "    semaphore: %lld of %lld permit(s) held, %lld free", taken,
            limit, limit - taken);
    owner_print p = {f, 0, 1};
    if (taken > 0) fputs(":", f);
    sem_owners(v, print_owner, &p);
    if (v->token && v->token->type == REDIS_REPLY_STRING)
      fprintf(f, "; last token %s", v->token->str);
    fputc('\n', f);
  }
  if (is_array(v->latch) && v->latch->elements > 0) {
    long long count = latch_field(v, "count", -1);
    long long pttl = v->lpttl && v->lpttl->type == REDIS_REPLY_INTEGER
                         ? v->lpttl->integer
                         : -2;
    if (count > 0)
      fprintf(f, "    latch: counting, %lld of %lld left", count,
              latch_field(v, "init", -1));
    else
      fprintf(f, "    latch: open (reached zero)");
    if (pttl == -1)
      fputs(", NO TTL (leaked)\n", f);
    else
      fprintf(f, ", goes in %lld ms\n", pttl);
  }
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
  int kinds_found = 0;
  for (size_t i = 0; i < g->nmasters; i++) {
    char err[512] = "", node[300] = "";
    /* The lock's four replies, TIME, then the other kinds' (FAM_N);
     * the semaphore's and the latch's after them. */
    redisReply *r[5 + FAM_N] = {NULL};
    semlatch_view sl;
    memset(&sl, 0, sizeof sl);
    rt_master *ctx = connect_master(&us[i], g, timeout_ms, err, sizeof err);
    int slot = rl_slot_of_str(key);
    if (ctx != NULL) {
      /* Every key of the lock shares its hash tag: one slot, one node. */
      rt_master_append(ctx, NULL, slot, "HGETALL %s", key);
      rt_master_append(ctx, NULL, slot, "PTTL %s", key);
      rt_master_append(ctx, NULL, slot, "GET %s", fkey);
      rt_master_append(ctx, NULL, slot, "PTTL %s", fkey);
      rt_master_append(ctx, NULL, slot, "TIME");
      status_family_append(ctx, slot, key);
      for (int k = 0; k < 5 + FAM_N; k++) {
        redisReply *rep = NULL;
        if (rt_master_get_reply(ctx, &rep, node, sizeof node) != REDIS_OK) {
          snprintf(err, sizeof err, "%s", rt_master_errstr(ctx));
          break;
        }
        r[k] = rep;
        if (r[k]->type == REDIS_REPLY_ERROR && err[0] == '\0')
          snprintf(err, sizeof err, "%s", r[k]->str);
      }
      if (err[0] == '\0') semlatch_read(ctx, slot, key, &sl);
      rt_master_free(ctx);
    }
    int ok = err[0] == '\0';
    if (ok && (r[0] == NULL || r[0]->type != REDIS_REPLY_ARRAY)) {
      ok = 0;
      snprintf(err, sizeof err, "unexpected reply to HGETALL");
    }
    long long pttl = -2, fpttl = -2, now = 0;
    if (ok) {
      answered++;
      reply_ll(r[1], &pttl);
      reply_ll(r[3], &fpttl);
      if (r[0]->elements > 0) held_on++;
      if (is_array(r[4]) && r[4]->elements == 2) {
        long long sec = 0, us_ = 0;
        reply_ll(r[4]->element[0], &sec);
        reply_ll(r[4]->element[1], &us_);
        now = sec * 1000 + us_ / 1000;
      }
      kinds_found |= (r[0]->elements > 0 ? 4 : 0) | family_kinds(r + 5) |
                     semlatch_kinds(&sl);
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
        fprintf(f, ",\"fence_pttl_ms\":%lld", fpttl);
        status_family_json(f, r + 5, now);
        semlatch_json(f, &sl);
        fputc('}', f);
      } else {
        fputs(",\"held\":null,\"holders\":null,\"pttl_ms\":null,"
              "\"token\":null,\"fence_pttl_ms\":null,\"fair_queue\":null,"
              "\"rw\":null,\"sem\":null,\"latch\":null}",
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
        status_family_human(f, r + 5, now);
        semlatch_human(f, &sl);
      }
    }
    semlatch_free(&sl);
    for (int k = 0; k < 5 + FAM_N; k++)
      if (r[k] != NULL) freeReplyObject(r[k]);
  }
  /* The kinds found on any master: "lock" is the hash a lock or fair
   * handle holds (the two are one lock), "fair" a fair queue, "rw" a
   * read-write lock, "sem" a semaphore, "latch" a latch. */
  const char *kn[5] = {"lock", "fair", "rw", "sem", "latch"};
  int kb[5] = {4, 1, 2, 8, 16};
  if (json) {
    fprintf(f, "],\"answered\":%zu,\"held_on\":%zu,\"kinds\":[", answered,
            held_on);
    for (int k = 0, first = 1; k < 5; k++)
      if (kinds_found & kb[k]) {
        fprintf(f, "%s\"%s\"", first ? "" : ",", kn[k]);
        first = 0;
      }
    fputs("]}\n", f);
  } else {
    fprintf(f, "  held on %zu of %zu masters, %zu answered; kinds found:",
            held_on, g->nmasters, answered);
    for (int k = 0; k < 5; k++)
      if (kinds_found & kb[k]) fprintf(f, " %s", kn[k]);
    if (kinds_found == 0) fputs(" none", f);
    fputc('\n', f);
  }
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

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t m = strlen(suffix);
  return n >= m && memcmp(s + n - m, suffix, m) == 0;
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

/* A lock's key is PREFIX{NAME}; other hashes (such as the library's
 * PREFIXrun_ids restart records) are not locks. */
static int lock_shaped(const char *key, size_t len) {
  return len >= 3 && key[len - 1] == '}' && memchr(key, '{', len) != NULL;
}

/* The fair and read-write locks' keys (rlock.h): PREFIX{NAME}:w, the
 * write side of a read-write lock (a hash, as a lock) and :r, its read
 * holds (a sorted set), are locks (1); the fair queue (:q, :qt), the read
 * counts (:rc) and the waiting writers (:wq) go with one (2): not counted
 * as locks, but a leak all the same when they have no TTL. 0 for anything
 * else. *kind names the kind they belong to. */
static int family_shaped(const char *key, size_t len, const char *type,
                         const char **kind) {
  static const struct {
    const char *suffix, *type, *kind;
    int what;
  } shapes[] = {{"}:w", "hash", "read-write", 1},
                {"}:r", "zset", "read-write", 1},
                {"}:q", "zset", "fair", 2},
                {"}:qt", "zset", "fair", 2},
                {"}:rc", "hash", "read-write", 2},
                {"}:wq", "zset", "read-write", 2}};
  if (memchr(key, '{', len) == NULL) return 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    if (ends_with(key, len, shapes[i].suffix) &&
        strcmp(type, shapes[i].type) == 0) {
      *kind = shapes[i].kind;
      return shapes[i].what;
    }
  return 0;
}

/* A semaphore's or a latch's key: PREFIX{NAME} and ":s" (slots, a hash),
 * ":s:t" (leases, a zset), ":l" (the latch, a hash) or ":l:d" (its
 * count-down ids, a set); NULL if none of them. */
static const char *family_kind(const char *key, size_t len) {
  static const struct {
    const char *suffix, *kind;
  } k[] = {{"}:s", "semaphore"},
           {"}:s:t", "semaphore"},
           {"}:l", "latch"},
           {"}:l:d", "latch"}};
  if (memchr(key, '{', len) == NULL) return NULL;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (ends_with(key, len, k[i].suffix)) return k[i].kind;
  return NULL;
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
      rt_master_append(ctx, node, RL_MCMD_ANY_SLOT, "ZCARD %b", k->str,
                       (size_t)k->len);
      sent++;
    }
    int failed = 0;
    for (size_t i = 0; i < keys->elements && sent > 0; i++) {
      redisReply *k = keys->element[i];
      if (k->type != REDIS_REPLY_STRING || ends_with(k->str, k->len, ":fence"))
        continue;
      sent--;
      redisReply *rr[4] = {NULL, NULL, NULL, NULL};
      for (int j = 0; j < 4; j++) {
        redisReply *rep = NULL;
        if (rt_master_get_reply(ctx, &rep, NULL, 0) != REDIS_OK) {
          if (!failed) snprintf(err, errsize, "%s", rt_master_errstr(ctx));
          failed = 1;
          break;
        }
        rr[j] = rep;
      }
      const char *lkind = "lock";
      int fam = !failed && rr[0]->type == REDIS_REPLY_STATUS
                    ? family_shaped(k->str, k->len, rr[0]->str, &lkind)
                    : 0;
      /* A semaphore's or a latch's key: reported on its own terms. */
      const char *kind = failed ? NULL : family_kind(k->str, k->len);
      if (!failed && rr[1]->type == REDIS_REPLY_INTEGER &&
          rr[1]->integer != -2 && fam == 2) {
        /* Goes with a lock: reported only as a leak. */
        if (rr[1]->integer == -1) {
          t->family_leaks++;
          if (json) {
            fputs(*first_key ? "{\"key\":" : ",{\"key\":", stdout);
            json_str(stdout, k->str, k->len);
            fprintf(stdout, ",\"pttl_ms\":-1,\"holders\":null,\"leak\":true,"
                    "\"lease_over\":false,\"kind\":\"%s\"}", lkind);
          } else {
            fprintf(stdout, "%s ", where);
            human_str(stdout, k->str, k->len);
            fputs(": NO TTL (leak)\n", stdout);
          }
          *first_key = 0;
        }
      } else if (!failed && rr[0]->type == REDIS_REPLY_STATUS &&
          strcmp(rr[0]->str, "none") != 0 &&
          ((strcmp(rr[0]->str, "hash") == 0 && lock_shaped(k->str, k->len)) ||
           fam == 1 || kind != NULL) &&
          rr[1]->type == REDIS_REPLY_INTEGER &&
          rr[1]->integer != -2) { /* -2: it went away meanwhile */
        long long pttl = rr[1]->integer;
        const redisReply *cnt = strcmp(rr[0]->str, "zset") == 0 ? rr[3] : rr[2];
        long long fields = cnt->type == REDIS_REPLY_INTEGER ? cnt->integer : -1;
        int leak = pttl == -1;
        int over =
            kind == NULL && lease_over_ms >= 0 && pttl > lease_over_ms;
        if (key_set_add(ks, k->str, k->len, leak, over, kind != NULL) != 0) {
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
                    "\"lease_over\":%s,\"kind\":\"%s\"}",
                    pttl, kind ? -1 : fields, leak ? "true" : "false",
                    over ? "true" : "false", kind ? kind : lkind);
          } else if (kind != NULL) {
            fprintf(stdout, "%s ", where);
            human_str(stdout, k->str, k->len);
            if (leak)
              fprintf(stdout, ": %s key, NO TTL (leak)\n", kind);
            else
              fprintf(stdout, ": %s key, %lld ms left%s\n", kind, pttl,
                      over ? " (over threshold)" : "");
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
      for (int j = 0; j < 4; j++)
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
  scan_totals t = {0};
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
  t.leaks += t.family_leaks;
  if (json) {
    fprintf(stdout,
            "],\"locks\":%lld,\"family_keys\":%lld,\"leaks\":%lld,"
            "\"lease_over\":%lld,\"other_keys\":%lld,"
            "\"failed_masters\":%zu}\n",
            t.locks, t.semlatch, t.leaks, t.long_leases, t.other, failed);
  } else {
    fprintf(stdout,
            "%lld lock(s) and %lld semaphore or latch key(s) on %zu "
            "master(s): %lld without TTL",
            t.locks, t.semlatch, g->nmasters - failed, t.leaks);
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
