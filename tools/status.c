/*
 * The `status` subcommand: what every master holds of one NAME, as every
 * kind (the lock, the fair queue, the election held through them, the
 * read-write lock, the semaphore and the latch). It talks to each master directly and only reads: a tool that
 * helps diagnose a lock must not change it. It prints a human report or
 * one JSON object (--json) whose field names tools/rlock.1 documents.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "family_scripts.h"
#include "keys.h"
#include "options.h"
#include "slot.h"
#include "tool.h"

/* Every key of the name, as the library lays them out (keys.h). */
typedef struct name_keys {
  char k[RL_KEY_COUNT][RL_KEY_MAX];
} name_keys;

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
    "there are. An election (the lock's hash has a leader record) shows its\n"
    "leader, value, token and lease, and the campaigners waiting in order.\n"
    "Read-only.\n"
    "Exit 0 if at least one master answered, 2 if none did, 64 on bad usage.\n";

/* What one master says of NAME's other kinds (rlock.h's lock family):
 * the replies of the commands status_family_append queued. */
enum { FQ, FQT, RW_W, RW_WPTTL, RW_R, RW_RC, RW_WQ, RW_FENCE, FAM_N };

/* Every key of a name shares its hash tag: one slot, one node. */
static void status_family_append(rt_master *ctx, int slot,
                                 const name_keys *nk) {
  const char *zrange = "ZRANGE %s 0 -1 WITHSCORES";
  rt_master_append(ctx, NULL, slot, zrange, nk->k[RL_KEY_FAIR_QUEUE]);
  rt_master_append(ctx, NULL, slot, zrange, nk->k[RL_KEY_FAIR_TIMES]);
  rt_master_append(ctx, NULL, slot, "HGETALL %s", nk->k[RL_KEY_RW_WRITE]);
  rt_master_append(ctx, NULL, slot, "PTTL %s", nk->k[RL_KEY_RW_WRITE]);
  rt_master_append(ctx, NULL, slot, zrange, nk->k[RL_KEY_RW_READ]);
  rt_master_append(ctx, NULL, slot, "HGETALL %s",
                   nk->k[RL_KEY_RW_READ_COUNT]);
  rt_master_append(ctx, NULL, slot, zrange, nk->k[RL_KEY_RW_WAITING]);
  rt_master_append(ctx, NULL, slot, "GET %s", nk->k[RL_KEY_RW_FENCE]);
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

static void semlatch_read(rt_master *ctx, int slot, const name_keys *nk,
                          semlatch_view *v) {
  memset(v, 0, sizeof *v);
  redisReply **r[] = {&v->slots, &v->leases, &v->time,
                      &v->token, &v->latch,  &v->lpttl};
  rt_master_append(ctx, NULL, slot, "HGETALL %s", nk->k[RL_KEY_SEM]);
  rt_master_append(ctx, NULL, slot, "ZRANGE %s 0 -1 WITHSCORES",
                   nk->k[RL_KEY_SEM_LEASES]);
  rt_master_append(ctx, NULL, slot, "TIME");
  rt_master_append(ctx, NULL, slot, "GET %s", nk->k[RL_KEY_SEM_FENCE]);
  rt_master_append(ctx, NULL, slot, "HGETALL %s", nk->k[RL_KEY_LATCH]);
  rt_master_append(ctx, NULL, slot, "PTTL %s", nk->k[RL_KEY_LATCH]);
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

/* Whether field f of a lock's hash is a record (an election's leader
 * record, family_scripts.h) rather than an owner: never listed as a
 * holder. */
static int is_record(const redisReply *f) {
  return f->len > 0 && f->str[0] == RL_RECORD_FIELD_MARK;
}

/* The owners in an HGETALL reply of a lock's hash. */
static size_t holder_count(const redisReply *h) {
  size_t n = 0;
  for (size_t k = 0; is_array(h) && k + 1 < h->elements; k += 2)
    n += !is_record(h->element[k]);
  return n;
}

/* Whether the hash is an election's: it has a leader's token. A
 * campaigner that has won the lock and not yet written its record looks
 * like a plain fair lock for that moment. */
static int is_election(const redisReply *h) {
  return field_of(h, RL_ELECT_TOKEN_FIELD, 2) != NULL;
}

/* The leader's owner field when the record's owner still holds the lock
 * (as the library's read decides), else NULL. */
static const redisReply *election_leader(const redisReply *h) {
  for (size_t k = 0; is_array(h) && k + 1 < h->elements; k += 2) {
    const redisReply *f = h->element[k], *o = h->element[k + 1];
    if (f->len != 2 || memcmp(f->str, RL_ELECT_OWNER_FIELD, 2) != 0) continue;
    return o->len > 0 && !is_record(o) && field_of(h, o->str, o->len) != NULL
               ? o
               : NULL;
  }
  return NULL;
}

/* No member left (next_live). */
#define NO_MEMBER ((size_t)-1)

/* The index, from k on, of the next member of a WITHSCORES reply whose
 * score (a time in the master's clock) is after now, with that score in
 * *until; NO_MEMBER when there is none. Members whose time ran out are
 * gone as far as the library is concerned, so status leaves them out. */
static size_t next_live(const redisReply *z, size_t k, long long now,
                        long long *until) {
  for (; is_array(z) && k + 1 < z->elements; k += 2) {
    *until = 0;
    reply_ll(z->element[k + 1], until);
    if (*until > now) return k;
  }
  return NO_MEMBER;
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
    rt_json_str(f, m->str, m->len);
    fprintf(f, ",\"ticket\":%lld,\"alive_ms\":%lld}", ticket, until - now);
  }
  fputs("],\"rw\":{\"writers\":[", f);
  for (size_t k = 0; is_array(r[RW_W]) && k + 1 < r[RW_W]->elements; k += 2) {
    long long cnt = 0;
    fputs(k ? ",{\"owner\":" : "{\"owner\":", f);
    rt_json_str(f, r[RW_W]->element[k]->str, r[RW_W]->element[k]->len);
    reply_ll(r[RW_W]->element[k + 1], &cnt);
    fprintf(f, ",\"count\":%lld}", cnt);
  }
  long long wpttl = -2;
  reply_ll(r[RW_WPTTL], &wpttl);
  fprintf(f, "],\"write_pttl_ms\":%lld,\"readers\":[", wpttl);
  int first = 1;
  long long exp, until;
  for (size_t k = 0; (k = next_live(r[RW_R], k, now, &exp)) != NO_MEMBER;
       k += 2) {
    const redisReply *m = r[RW_R]->element[k];
    long long cnt = 0;
    const char *c = field_of(r[RW_RC], m->str, m->len);
    if (c != NULL) rt_parse_ll(c, 0, 1LL << 62, &cnt);
    fputs(first ? "{\"owner\":" : ",{\"owner\":", f);
    first = 0;
    rt_json_str(f, m->str, m->len);
    fprintf(f, ",\"count\":%lld,\"lease_ms\":%lld}", cnt, exp - now);
  }
  fputs("],\"waiting_writers\":[", f);
  first = 1;
  for (size_t k = 0; (k = next_live(r[RW_WQ], k, now, &until)) != NO_MEMBER;
       k += 2) {
    fputs(first ? "{\"owner\":" : ",{\"owner\":", f);
    first = 0;
    rt_json_str(f, r[RW_WQ]->element[k]->str, r[RW_WQ]->element[k]->len);
    fprintf(f, ",\"alive_ms\":%lld}", until - now);
  }
  fputs("],\"token\":", f);
  rt_json_cstr(f, r[RW_FENCE] != NULL && r[RW_FENCE]->type == REDIS_REPLY_STRING
                   ? r[RW_FENCE]->str
                   : NULL);
  fputs("}", f);
}

static void status_family_human(FILE *f, redisReply *const *r,
                                long long now, int election) {
  int kinds = family_kinds(r);
  if ((kinds & 1) && !election) {
    fputs("    fair queue:", f);
    for (size_t k = 0; k + 1 < r[FQ]->elements; k += 2) {
      const redisReply *m = r[FQ]->element[k];
      long long until = score_of(r[FQT], m->str, m->len, now);
      fputs(k ? ", " : " ", f);
      rt_human_str(f, m->str, m->len);
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
    rt_human_str(f, r[RW_W]->element[0]->str, r[RW_W]->element[0]->len);
    fprintf(f, " (count %s, lease %lld ms left)", r[RW_W]->element[1]->str,
            wpttl);
  } else {
    fputs(" no writer", f);
  }
  int n = 0;
  long long exp, until;
  for (size_t k = 0; (k = next_live(r[RW_R], k, now, &exp)) != NO_MEMBER;
       k += 2) {
    const redisReply *m = r[RW_R]->element[k];
    const char *c = field_of(r[RW_RC], m->str, m->len);
    fputs(n++ ? ", " : "; readers ", f);
    rt_human_str(f, m->str, m->len);
    fprintf(f, " (count %s, lease %lld ms left)", c ? c : "?", exp - now);
  }
  if (n == 0) fputs("; no reader", f);
  n = 0;
  for (size_t k = 0; (k = next_live(r[RW_WQ], k, now, &until)) != NO_MEMBER;
       k += 2) {
    fputs(n++ ? ", " : "; waiting writers ", f);
    rt_human_str(f, r[RW_WQ]->element[k]->str, r[RW_WQ]->element[k]->len);
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
    if (strcmp(f->str, RL_SEM_LIMIT_FIELD) == 0)
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
    rt_json_str(p->f, owner->str, owner->len);
    fprintf(p->f, ",\"slots\":[%s],\"lease_ms\":%lld}", slots, lease_ms);
  } else {
    fputs(p->first ? " " : "; ", p->f);
    rt_human_str(p->f, owner->str, owner->len);
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
    rt_json_cstr(f, v->token && v->token->type == REDIS_REPLY_STRING
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

/* Takes one of status's options (all of them shared) into g and arg, an
 * rt_read_args. */
static int status_take_option(rt_global *g, int opt, const char *longname,
                              void *arg) {
  (void)longname;
  return rt_read_option(g, "rlock status", opt, arg);
}

static const struct option status_long_options[] = {
    RT_READ_LONG_OPTIONS, RT_GLOBAL_LONG_OPTIONS, RT_HELP_LONG_OPTION_AND_END};

/* What one master says of NAME. */
typedef struct master_view {
  char err[512];  /* why it could not be read; "" when ok */
  char node[300]; /* the node that answered, in a cluster */
  /* The lock's four replies (HGETALL, PTTL, the fence's GET and PTTL),
   * TIME, then the other kinds' (FAM_N). */
  redisReply *r[5 + FAM_N];
  semlatch_view sl; /* the semaphore's and the latch's, after them */
  int ok;
  long long pttl, fpttl, now; /* the lock's and fence's PTTL, its clock */
  const char *token;          /* the last fencing token, or NULL */
  size_t holders;             /* owner fields of the lock's hash */
  int election;               /* the hash has a leader record */
} master_view;

/* The election's lines (an election's hash only): the leader, then the
 * campaigners waiting, which are the fair lock's queue. */
static void election_human(FILE *f, const master_view *v) {
  const redisReply *h = v->r[0], *q = v->r[5 + FQ];
  const redisReply *leader = election_leader(h);
  const char *val = field_of(h, RL_ELECT_VALUE_FIELD, 2);
  fputs("    election: ", f);
  if (leader != NULL) {
    fputs("leader ", f);
    rt_human_str(f, leader->str, leader->len);
    fputs(", value \"", f);
    if (val != NULL) rt_human_str(f, val, strlen(val));
    fprintf(f, "\", token %s, lease %lld ms left\n",
            field_of(h, RL_ELECT_TOKEN_FIELD, 2), v->pttl);
  } else {
    fputs("no leader (a record whose owner no longer holds the lock)\n", f);
  }
  fputs("    campaigners waiting:", f);
  if (!is_array(q) || q->elements == 0) fputs(" none", f);
  for (size_t k = 0; is_array(q) && k + 1 < q->elements; k += 2) {
    const redisReply *m = q->element[k];
    long long until = score_of(v->r[5 + FQT], m->str, m->len, v->now);
    fputs(k ? ", " : " ", f);
    rt_human_str(f, m->str, m->len);
    fprintf(f, " (ticket %s, skipped in %lld ms)", q->element[k + 1]->str,
            until - v->now);
  }
  fputc('\n', f);
}

/* ,"election":... of one master's JSON object: null for a plain lock. */
static void election_json(FILE *f, const master_view *v) {
  const redisReply *h = v->r[0], *q = v->r[5 + FQ];
  fputs(",\"election\":", f);
  if (!v->election) {
    fputs("null", f);
    return;
  }
  const redisReply *leader = election_leader(h);
  long long token = 0;
  const char *t = field_of(h, RL_ELECT_TOKEN_FIELD, 2);
  if (t != NULL) rt_parse_ll(t, 0, 1LL << 62, &token);
  fputs("{\"leader\":", f);
  if (leader != NULL)
    rt_json_str(f, leader->str, leader->len);
  else
    fputs("null", f);
  fputs(",\"value\":", f);
  rt_json_cstr(f, leader != NULL ? field_of(h, RL_ELECT_VALUE_FIELD, 2)
                                 : NULL);
  fprintf(f, ",\"token\":%lld,\"lease_ms\":%lld,\"campaigners\":[",
          leader != NULL ? token : 0, leader != NULL ? v->pttl : -2);
  for (size_t k = 0; is_array(q) && k + 1 < q->elements; k += 2) {
    const redisReply *m = q->element[k];
    long long ticket = 0;
    reply_ll(q->element[k + 1], &ticket);
    long long until = score_of(v->r[5 + FQT], m->str, m->len, v->now);
    fputs(k ? ",{\"owner\":" : "{\"owner\":", f);
    rt_json_str(f, m->str, m->len);
    fprintf(f, ",\"ticket\":%lld,\"alive_ms\":%lld}", ticket,
            until - v->now);
  }
  fputs("]}", f);
}

/* Sends the lock's and the other kinds' reads, and reads their replies
 * into v; err says why when one failed. */
static void status_query(rt_master *ctx, const name_keys *nk,
                         master_view *v) {
  const char *key = nk->k[RL_KEY_LOCK], *fkey = nk->k[RL_KEY_LOCK_FENCE];
  /* Every key of the lock shares its hash tag: one slot, one node. */
  int slot = rl_slot_of_str(key);
  rt_master_append(ctx, NULL, slot, "HGETALL %s", key);
  rt_master_append(ctx, NULL, slot, "PTTL %s", key);
  rt_master_append(ctx, NULL, slot, "GET %s", fkey);
  rt_master_append(ctx, NULL, slot, "PTTL %s", fkey);
  rt_master_append(ctx, NULL, slot, "TIME");
  status_family_append(ctx, slot, nk);
  for (int k = 0; k < 5 + FAM_N; k++) {
    redisReply *rep = NULL;
    if (rt_master_get_reply(ctx, &rep, v->node, sizeof v->node) != REDIS_OK) {
      snprintf(v->err, sizeof v->err, "%s", rt_master_errstr(ctx));
      break;
    }
    v->r[k] = rep;
    if (rep->type == REDIS_REPLY_ERROR && v->err[0] == '\0')
      snprintf(v->err, sizeof v->err, "%s", rep->str);
  }
  if (v->err[0] == '\0') semlatch_read(ctx, slot, nk, &v->sl);
}

/* Reads what master u says of the lock key and its fence key into v.
 * Returns the kinds found there (the bits family_kinds and semlatch_kinds
 * return, and 4 for the lock's hash). */
static int status_read_master(const rt_master_url *u, const rt_global *g,
                              long long timeout_ms, const name_keys *nk,
                              master_view *v) {
  memset(v, 0, sizeof *v);
  rt_master *ctx =
      rt_master_open(u->spec, g, timeout_ms, v->err, sizeof v->err);
  if (ctx != NULL) {
    status_query(ctx, nk, v);
    rt_master_free(ctx);
  }
  redisReply **r = v->r;
  v->ok = v->err[0] == '\0';
  if (v->ok && (r[0] == NULL || r[0]->type != REDIS_REPLY_ARRAY)) {
    v->ok = 0;
    snprintf(v->err, sizeof v->err, "unexpected reply to HGETALL");
  }
  v->pttl = v->fpttl = -2;
  if (!v->ok) return 0;
  reply_ll(r[1], &v->pttl);
  reply_ll(r[3], &v->fpttl);
  if (is_array(r[4]) && r[4]->elements == 2) {
    long long sec = 0, usec = 0;
    reply_ll(r[4]->element[0], &sec);
    reply_ll(r[4]->element[1], &usec);
    v->now = sec * 1000 + usec / 1000;
  }
  if (r[2] != NULL && r[2]->type == REDIS_REPLY_STRING) v->token = r[2]->str;
  v->holders = holder_count(r[0]);
  v->election = is_election(r[0]);
  return (r[0]->elements > 0 ? 4 : 0) | (v->election ? 32 : 0) |
         family_kinds(r + 5) | semlatch_kinds(&v->sl);
}

static void master_view_free(master_view *v) {
  semlatch_free(&v->sl);
  for (int k = 0; k < 5 + FAM_N; k++)
    if (v->r[k] != NULL) freeReplyObject(v->r[k]);
}

/* One master's JSON object; first: it is the first of the array. */
static void status_master_json(FILE *f, const rt_master_url *u,
                               const master_view *v, int first) {
  const redisReply *h = v->r[0];
  fputs(first ? "{" : ",{", f);
  fputs("\"master\":", f);
  rt_json_cstr(f, u->display);
  if (u->cluster) {
    fputs(",\"node\":", f);
    rt_json_cstr(f, v->node[0] ? v->node : NULL);
  }
  fprintf(f, ",\"ok\":%s,\"error\":", v->ok ? "true" : "false");
  rt_json_cstr(f, v->ok ? NULL : v->err);
  if (!v->ok) {
    fputs(",\"held\":null,\"holders\":null,\"pttl_ms\":null,"
          "\"token\":null,\"fence_pttl_ms\":null,\"fair_queue\":null,"
          "\"election\":null,\"rw\":null,\"sem\":null,\"latch\":null}",
          f);
    return;
  }
  fprintf(f, ",\"held\":%s,\"holders\":[", v->holders > 0 ? "true" : "false");
  for (size_t k = 0, first = 1; k + 1 < h->elements; k += 2) {
    long long cnt = 0;
    if (is_record(h->element[k])) continue;
    fputs(first ? "{\"owner\":" : ",{\"owner\":", f);
    first = 0;
    rt_json_str(f, h->element[k]->str, h->element[k]->len);
    if (reply_ll(h->element[k + 1], &cnt) == 0)
      fprintf(f, ",\"count\":%lld}", cnt);
    else
      fputs(",\"count\":null}", f);
  }
  fprintf(f, "],\"pttl_ms\":%lld,\"token\":", v->pttl);
  rt_json_cstr(f, v->token);
  fprintf(f, ",\"fence_pttl_ms\":%lld", v->fpttl);
  election_json(f, v);
  status_family_json(f, v->r + 5, v->now);
  semlatch_json(f, &v->sl);
  fputc('}', f);
}

/* One master's lines for a human. */
static void status_master_human(FILE *f, const rt_master_url *u,
                                const master_view *v) {
  const redisReply *h = v->r[0];
  if (u->cluster && v->node[0])
    fprintf(f, "  %s (node %s): ", u->display, v->node);
  else
    fprintf(f, "  %s: ", u->display);
  if (!v->ok) {
    fprintf(f, "error: %s\n", v->err);
    return;
  }
  if (v->holders == 0) {
    fputs("free", f);
  } else {
    fputs("held by", f);
    for (size_t k = 0, first = 1; k + 1 < h->elements; k += 2) {
      if (is_record(h->element[k])) continue;
      fputs(first ? " " : ", ", f);
      first = 0;
      rt_human_str(f, h->element[k]->str, h->element[k]->len);
      fprintf(f, " (count %s)",
              h->element[k + 1]->str ? h->element[k + 1]->str : "?");
    }
    if (v->pttl == -1) fputs(", NO TTL (leaked)", f);
    else fprintf(f, ", lease %lld ms left", v->pttl);
  }
  if (v->token != NULL) {
    fprintf(f, ", last token %s", v->token);
    if (v->fpttl >= 0) fprintf(f, " (kept %lld s more)", v->fpttl / 1000);
  } else {
    fputs(", no token yet", f);
  }
  fputc('\n', f);
  if (v->election) election_human(f, v);
  status_family_human(f, v->r + 5, v->now, v->election);
  semlatch_human(f, &v->sl);
}

/* What the report says before the masters. */
static void status_header(FILE *f, int json, const char *name,
                          const name_keys *nk, size_t nmasters) {
  const char *key = nk->k[RL_KEY_LOCK];
  if (json) {
    fputs("{\"name\":", f);
    rt_json_cstr(f, name);
    fputs(",\"key\":", f);
    rt_json_cstr(f, key);
    fputs(",\"fence_key\":", f);
    rt_json_cstr(f, nk->k[RL_KEY_LOCK_FENCE]);
    fprintf(f, ",\"quorum\":%zu,\"masters\":[", nmasters / 2 + 1);
  } else {
    fprintf(f, "lock ");
    rt_human_str(f, key, strlen(key));
    fprintf(f, " (quorum %zu of %zu)\n", nmasters / 2 + 1, nmasters);
  }
}

/* What the report says after the masters: how many held and answered, and
 * the kinds found on any master: "lock" is the hash a lock or fair handle
 * holds (the two are one lock), "election" that hash with a leader
 * record, "fair" a fair queue, "rw" a read-write lock, "sem" a semaphore,
 * "latch" a latch. */
static void status_footer(FILE *f, int json, int kinds_found, size_t held_on,
                          size_t answered, size_t nmasters) {
  const char *kn[6] = {"lock", "election", "fair", "rw", "sem", "latch"};
  int kb[6] = {4, 32, 1, 2, 8, 16};
  if (json) {
    fprintf(f, "],\"answered\":%zu,\"held_on\":%zu,\"kinds\":[", answered,
            held_on);
    for (int k = 0, first = 1; k < 6; k++)
      if (kinds_found & kb[k]) {
        fprintf(f, "%s\"%s\"", first ? "" : ",", kn[k]);
        first = 0;
      }
    fputs("]}\n", f);
  } else {
    fprintf(f, "  held on %zu of %zu masters, %zu answered; kinds found:",
            held_on, nmasters, answered);
    for (int k = 0; k < 6; k++)
      if (kinds_found & kb[k]) fprintf(f, " %s", kn[k]);
    if (kinds_found == 0) fputs(" none", f);
    fputc('\n', f);
  }
}

/* Reads and reports every master on the lock key and its fence key.
 * Returns the exit code. */
static int status_report(const rt_global *g, const rt_master_url *us,
                         int json, long long timeout_ms, const char *name,
                         const name_keys *nk) {
  FILE *f = stdout;
  size_t answered = 0, held_on = 0;
  int kinds_found = 0;
  status_header(f, json, name, nk, g->nmasters);
  for (size_t i = 0; i < g->nmasters; i++) {
    master_view v;
    kinds_found |= status_read_master(&us[i], g, timeout_ms, nk, &v);
    if (v.ok) {
      answered++;
      if (v.holders > 0) held_on++;
    }
    if (json)
      status_master_json(f, &us[i], &v, i == 0);
    else
      status_master_human(f, &us[i], &v);
    master_view_free(&v);
  }
  status_footer(f, json, kinds_found, held_on, answered, g->nmasters);
  fflush(f);
  return answered > 0 ? RT_EXIT_OK : RT_EXIT_NOMASTER;
}

int rt_cmd_status(rt_global *g, int argc, char **argv) {
  rt_read_args ra = {.timeout_ms = 1000};
  rt_cmdline line = {"h", status_long_options, status_usage,
                     status_take_option, &ra, 1, 1};
  int code = rt_parse_options(g, argc, argv, &line);
  if (code >= 0) return code;
  const char *name = argv[optind];
  /* The library's own rule for a lock name, as rlock_get applies it. */
  if (rl_name_check(name) != 0) {
    fprintf(stderr, "rlock status: bad lock name\n");
    return RT_EXIT_USAGE;
  }
  if (rl_prefix_check(g->prefix) != 0) {
    fprintf(stderr, "rlock status: bad --prefix\n");
    return RT_EXIT_USAGE;
  }
  rt_master_url *us;
  if (rt_parse_masters(g, &us) != 0) return RT_EXIT_USAGE;
  name_keys *nk = malloc(sizeof *nk);
  code = RT_EXIT_OSERR;
  if (nk != NULL) {
    for (int id = 0; id < RL_KEY_COUNT; id++)
      rl_key_of(nk->k[id], sizeof nk->k[id], g->prefix, name, id);
    code = status_report(g, us, ra.json, ra.timeout_ms, name, nk);
  }
  free(nk);
  free(us);
  return code;
}
