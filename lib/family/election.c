/*
 * Elections in the family layer (election.h): the leader record's rounds
 * and the observers.
 *
 * What N masters mean. The record is written by the leader where it holds
 * the fair lock, so it is on a majority once the write round succeeded;
 * it goes with the hold (election_scripts.c). A read asks every master
 * (within the master timeout) and reports the (token, value) that a
 * majority stores, the highest such token when there are several; no
 * leader when a majority stores none; and nothing new when neither holds
 * (a write or an expiry is under way on some masters, or too few
 * answered): then it reads again a little later, backing off.
 *
 * Observation. One watch per election and client, shared by every handle
 * that observes it, because a channel's event wakes one waiter of a
 * client (pubsub/waitq.h): the watch is that waiter, and it tells all its
 * observers. It sleeps in the channel's wait queue until a message (a
 * proclaim, a resign, a loss the leader saw), a confirmed or restored
 * subscription (so every reconnect is followed by a read), or the
 * record's expiry on a majority (a leader that died sends nothing); then
 * it reads. Reads are one at a time; an event during a read makes another
 * read follow it. A record with a token below the highest one reported
 * is never reported: observers see leaders in token order.
 */
#include "election.h"

#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "options.h"
#include "pubsub.h"
#include "quarantine.h"
#include "retry.h"
#include "scripts.h"
#include "util.h"
#include "waitq.h"

/* How long a watch with no leader to expire sleeps without an event. */
#define IDLE_SLEEP_MS (3600 * 1000)
/* A record's expiry is read again this much after it (clock slack). */
#define EXPIRY_SLACK_MS 5

enum { OP_PROCLAIM = 1, OP_NOTIFY, OP_READ, OP_STATUS, OP_ATTACH, OP_DETACH };

typedef struct rl_elect_req {
  rl_req req; /* first: an async one is freed as an rl_req */
  int op;
  uint64_t token;
  char *value; /* proclaim: a copy */
  size_t len;
  rl_eobs *obs; /* attach, detach */
  rl_erec rec[RL_MAX_MASTERS];
  /* read, status: what the caller gets */
  char *out;
  size_t cap;
  uint64_t out_token;
  int64_t out_lease;
  char *waiters[RL_MAX_MASTERS]; /* status: per master, the queue text */
  char **out_waiters;
  rlock_cb cb;
  void *arg;
} rl_elect_req;

struct rl_ewatch {
  rl_list node; /* in the family's watches */
  rl_family *f;
  rlock *obj;
  rl_list observers;
  rl_psw *psw;
  rl_round *round; /* the read in flight */
  rl_erec rec[RL_MAX_MASTERS];
  int known;      /* a state was decided */
  int has_leader;
  uint64_t token; /* the leader's, or the last one's */
  char *value;
  size_t len;
  unsigned undecided; /* undecided reads in a row */
  int reporting;
};

/* --- deciding ------------------------------------------------------------- */

static int same_record(const rl_erec *a, const rl_erec *b) {
  return a->token == b->token && a->len == b->len &&
         (a->len == 0 || memcmp(a->value, b->value, a->len) == 0);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int rl_elect_decide(const rl_erec *rec, int n, int quorum, int *at,
                    int64_t *expiry_ms) {
  int best = -1, bestcount = 0, none = 0;
  for (int i = 0; i < n; i++) {
    if (!rec[i].answered) continue;
    if (rec[i].token == 0) {
      none++;
      continue;
    }
    int count = 0;
    for (int j = 0; j < n; j++)
      if (rec[j].answered && same_record(&rec[i], &rec[j])) count++;
    if (count >= quorum && (best < 0 || rec[i].token > rec[best].token)) {
      best = i;
      bestcount = count;
    }
  }
  *at = best;
  *expiry_ms = -1;
  if (best >= 0) {
    /* The record leaves the majority when bestcount - quorum + 1 of the
     * masters that have it expired it: that many-th smallest PTTL. */
    int64_t p[RL_MAX_MASTERS];
    int k = 0, unknown = 0;
    for (int j = 0; j < n; j++) {
      if (!rec[j].answered || !same_record(&rec[best], &rec[j])) continue;
      if (rec[j].pttl < 0) unknown = 1;
      p[k++] = rec[j].pttl;
    }
    qsort(p, (size_t)k, sizeof p[0], cmp_i64);
    if (!unknown) *expiry_ms = p[bestcount - quorum];
    return RL_ELECT_LEADER;
  }
  return none >= quorum ? RL_ELECT_NONE : RL_ELECT_UNDECIDED;
}

static void recs_clear(rl_erec *rec, int n) {
  for (int i = 0; i < n; i++) {
    free(rec[i].value);
    memset(&rec[i], 0, sizeof rec[i]);
  }
}

/* elect_read: {token, pttl, value} or {0, pttl}. */
static int parse_record(rl_erec *e, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
      rep->element[0]->type != REDIS_REPLY_INTEGER ||
      rep->element[1]->type != REDIS_REPLY_INTEGER)
    return RL_VOTE_FAIL;
  long long t = rep->element[0]->integer;
  free(e->value);
  memset(e, 0, sizeof *e);
  e->pttl = rep->element[1]->integer;
  if (t > 0) {
    if (rep->elements < 3 || rep->element[2]->type != REDIS_REPLY_STRING)
      return RL_VOTE_FAIL;
    const redisReply *v = rep->element[2];
    e->value = malloc(v->len + 1);
    if (e->value == NULL) return RL_VOTE_FAIL;
    memcpy(e->value, v->str, v->len);
    e->value[v->len] = '\0';
    e->len = v->len;
    e->token = (uint64_t)t;
  }
  e->answered = 1;
  return RL_VOTE_YES;
}

/* Keeps only the answers whose votes still count after settling. */
static void recs_settle(rl_round *r, rl_erec *rec) {
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote != RL_VOTE_YES) rec[i].answered = 0;
}

/* --- rounds of requests ------------------------------------------------- */

static void send_round(rl_elect_req *er, const rl_round_ops *ops, int script,
                 int wait_all);

static void finish_round(rl_round *r, int status) {
  rl_elect_req *er = r->data;
  er->req.round = NULL;
  rl_req_finish(&er->req, status);
}

static int classify_proclaim(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  return rep->integer == 1 ? RL_VOTE_YES : RL_VOTE_NO;
}

static void proclaim_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  if (r->outcome == RL_VOTE_YES)
    finish_round(r, RLOCK_OK);
  else
    finish_round(r, r->no >= r->quorum ? RLOCK_ENOTOWNER : rl_round_error(r));
}

static const rl_round_ops proclaim_ops = {classify_proclaim, proclaim_done,
                                          NULL, NULL};

static int classify_any(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  return rep->type == REDIS_REPLY_ERROR ? RL_VOTE_FAIL : RL_VOTE_YES;
}

static void notify_done(rl_round *r) {
  if (r->data != NULL) finish_round(r, RLOCK_OK);
}

static const rl_round_ops notify_ops = {classify_any, notify_done, NULL, NULL};

static int classify_read(rl_round *r, int i, const redisReply *rep) {
  rl_elect_req *er = r->data;
  if (er == NULL) return RL_VOTE_FAIL;
  return parse_record(&er->rec[i], rep);
}

static void copy_out(char *out, size_t cap, const char *v, size_t len) {
  if (out == NULL || cap == 0) return;
  size_t k = len < cap - 1 ? len : cap - 1;
  if (k > 0) memcpy(out, v, k);
  out[k] = '\0';
}

static void read_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  rl_elect_req *er = r->data;
  recs_settle(r, er->rec);
  int at;
  int64_t expiry;
  int d = rl_elect_decide(er->rec, r->n, r->quorum, &at, &expiry);
  int status = RLOCK_OK;
  if (d == RL_ELECT_LEADER) {
    copy_out(er->out, er->cap, er->rec[at].value, er->rec[at].len);
    er->out_token = er->rec[at].token;
    er->out_lease = expiry;
    if (er->op == OP_STATUS && er->out_waiters != NULL) {
      *er->out_waiters = er->waiters[at];
      er->waiters[at] = NULL;
    }
  } else if (d == RL_ELECT_NONE) {
    status = RLOCK_ENOENT;
    if (er->op == OP_STATUS && er->out_waiters != NULL) {
      for (int i = 0; i < r->n; i++)
        if (er->rec[i].answered && er->rec[i].token == 0 && er->waiters[i]) {
          *er->out_waiters = er->waiters[i];
          er->waiters[i] = NULL;
          break;
        }
    }
  } else {
    status = r->yes >= r->quorum ? RLOCK_ENOQUORUM : rl_round_error(r);
  }
  finish_round(r, status);
}

static const rl_round_ops read_ops = {classify_read, read_done, NULL, NULL};

/* elect_status: {token, pttl, value, owner, (member, ticket)...}: kept as
 * a read's record, and the queue as text. */
static int classify_status(rl_round *r, int i, const redisReply *rep) {
  rl_elect_req *er = r->data;
  if (er == NULL) return RL_VOTE_FAIL;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 4) return RL_VOTE_FAIL;
  for (size_t k = 2; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_STRING) return RL_VOTE_FAIL;
  redisReply head = *rep;
  head.elements = 3;
  int vote = parse_record(&er->rec[i], &head);
  if (vote != RL_VOTE_YES) return vote;
  size_t need = 1;
  for (size_t k = 4; k + 1 < rep->elements; k += 2)
    need += rep->element[k]->len + rep->element[k + 1]->len + 2;
  char *t = malloc(need);
  if (t == NULL) return RL_VOTE_FAIL;
  size_t off = 0;
  for (size_t k = 4; k + 1 < rep->elements; k += 2) {
    memcpy(t + off, rep->element[k]->str, rep->element[k]->len);
    off += rep->element[k]->len;
    t[off++] = ' ';
    memcpy(t + off, rep->element[k + 1]->str, rep->element[k + 1]->len);
    off += rep->element[k + 1]->len;
    t[off++] = '\n';
  }
  t[off] = '\0';
  free(er->waiters[i]);
  er->waiters[i] = t;
  return RL_VOTE_YES;
}

static const rl_round_ops status_ops = {classify_status, read_done, NULL,
                                        NULL};

static void send_round(rl_elect_req *er, const rl_round_ops *ops, int script,
                 int wait_all) {
  rl_req *req = &er->req;
  rlock *obj = req->lock;
  rl_client *c = obj->client;
  rl_args a;
  rl_args_init(&a);
  rl_args_str(&a, NULL, 0);
  int two = script == RL_FAM(RL_FAM_ELECT_STATUS);
  rl_args_str(&a, two ? "2" : "1", 1);
  rl_args_str(&a, rl_lock_keyk(obj, 0), rl_lock_keylenk(obj, 0));
  if (two) rl_args_str(&a, rl_lock_keyk(obj, 1), rl_lock_keylenk(obj, 1));
  if (er->op == OP_PROCLAIM) {
    rl_args_str(&a, req->owner, req->ownerlen);
    rl_args_i64(&a, (int64_t)er->token);
    rl_args_str(&a, er->value, er->len);
  } else if (er->op == OP_NOTIFY) {
    rl_args_str(&a, "0", 1);
  }
  rl_round *r = rl_args_round(&a, c, ops, er, script);
  rl_args_free(&a);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  r->wait_all = wait_all;
  req->round = r;
  req->t_start = rl_now_ms();
  rl_round_send(r);
}

static void attach_on_loop(rlock *obj, rl_eobs *o, int *status);
static void detach_on_loop(rl_eobs *o);

static void elect_start(rl_req *req) {
  rl_elect_req *er = (rl_elect_req *)req;
  int status = RLOCK_OK;
  switch (er->op) {
    case OP_PROCLAIM:
      send_round(er, &proclaim_ops, RL_FAM(RL_FAM_ELECT_PROCLAIM), 0);
      break;
    case OP_NOTIFY:
      send_round(er, &notify_ops, RL_FAM(RL_FAM_ELECT_NOTIFY), 0);
      break;
    case OP_READ:
      send_round(er, &read_ops, RL_FAM(RL_FAM_ELECT_READ), 1);
      break;
    case OP_STATUS:
      send_round(er, &status_ops, RL_FAM(RL_FAM_ELECT_STATUS), 1);
      break;
    case OP_ATTACH:
      attach_on_loop(req->lock, er->obs, &status);
      rl_req_finish(req, status);
      break;
    case OP_DETACH:
      detach_on_loop(er->obs);
      rl_req_finish(req, RLOCK_OK);
      break;
  }
}

static void elect_end(rl_req *req, int status) {
  (void)status;
  rl_elect_req *er = (rl_elect_req *)req;
  recs_clear(er->rec, RL_MAX_MASTERS);
  for (int i = 0; i < RL_MAX_MASTERS; i++) {
    free(er->waiters[i]);
    er->waiters[i] = NULL;
  }
  free(er->value);
  er->value = NULL;
}

static rl_elect_req *req_new(int op) {
  rl_elect_req *er = calloc(1, sizeof *er);
  if (er == NULL) return NULL;
  er->op = op;
  er->req.start = elect_start;
  er->req.end = elect_end;
  er->req.deadline = RL_FOREVER;
  return er;
}

/* A blocking request on the calling thread. */
static int call(rlock *obj, rl_elect_req *er) {
  int rc = rl_fam_call(obj, &er->req, 1, 0);
  return rc;
}

/* --- public-facing calls -------------------------------------------------- */

int rl_elect_object(rl_client *c, const char *name, rlock **out) {
  *out = NULL;
  if (c == NULL || rl_name_check(name) != 0) return RLOCK_EINVAL;
  const char *suffixes[] = {"", ":q", ":e"};
  rlock *obj = rl_lock_alloc(c, name, 3, suffixes, 0, 0, 2);
  if (obj == NULL) return RLOCK_ENOMEM;
  *out = obj;
  return 0;
}

static void async_done(rlock *obj, int status, void *arg) {
  (void)obj;
  rl_elect_req *er = arg; /* the request itself, freed after this */
  if (er->cb != NULL) er->cb(obj, status, er->arg);
}

int rl_elect_proclaim(rlock *obj, uint64_t owner, uint64_t token,
                      const char *value, size_t len, rlock_cb cb, void *arg) {
  rl_elect_req *er = req_new(OP_PROCLAIM);
  if (er == NULL) return RLOCK_ENOMEM;
  er->value = malloc(len + 1);
  if (er->value == NULL) {
    free(er);
    return RLOCK_ENOMEM;
  }
  if (len > 0) memcpy(er->value, value, len);
  er->value[len] = '\0';
  er->len = len;
  er->token = token;
  er->cb = cb;
  er->arg = arg;
  int rc = rl_fam_post(obj, &er->req, owner, async_done, er);
  return rc;
}

int rl_elect_notify(rlock *obj) {
  rl_elect_req *er = req_new(OP_NOTIFY);
  if (er == NULL) return RLOCK_ENOMEM;
  return rl_fam_post(obj, &er->req, 0, async_done, er);
}

static int read_call(rlock *obj, int op, char *value, size_t cap,
                     uint64_t *token, int64_t *lease_ms, char **waiters) {
  rl_elect_req *er = req_new(op);
  if (er == NULL) return RLOCK_ENOMEM;
  er->out = value;
  er->cap = cap;
  er->out_waiters = waiters;
  er->out_lease = -1;
  int rc = call(obj, er);
  if (rc == 0) {
    if (token != NULL) *token = er->out_token;
    if (lease_ms != NULL) *lease_ms = er->out_lease;
  }
  free(er);
  return rc;
}

int rl_elect_read(rlock *obj, char *value, size_t cap, uint64_t *token,
                  int64_t *lease_ms) {
  return read_call(obj, OP_READ, value, cap, token, lease_ms, NULL);
}

int rl_elect_status(rlock *obj, char *value, size_t cap, uint64_t *token,
                    int64_t *lease_ms, char **waiters) {
  *waiters = NULL;
  return read_call(obj, OP_STATUS, value, cap, token, lease_ms, waiters);
}

/* --- observation ---------------------------------------------------------- */

static void watch_read(rl_ewatch *w);

static void on_wake(rl_psw *psw, void *data) {
  (void)psw;
  watch_read(data);
}

/* Tells every observer the watch's state: all of them when it changed,
 * else those not told yet. An observer may detach itself or another one
 * from its callback. */
static void report(rl_ewatch *w, int changed) {
  rl_list todo;
  rl_list_init(&todo);
  rl_list_splice(&todo, &w->observers);
  w->reporting = 1;
  rl_list *n;
  while ((n = rl_list_pop_front(&todo)) != NULL) {
    rl_eobs *o = rl_container_of(n, rl_eobs, node);
    rl_list_push_back(&w->observers, &o->node);
    if (!changed && o->told) continue;
    o->told = 1;
    o->cb(o->data, w->has_leader ? (w->value ? w->value : "") : NULL,
          w->has_leader ? w->len : 0, w->token);
  }
  w->reporting = 0;
}

static void watch_free(rl_ewatch *w) {
  rl_list_remove(&w->node);
  if (w->psw != NULL) rl_psw_leave(w->psw, 0);
  if (w->round != NULL) w->round->data = NULL;
  recs_clear(w->rec, RL_MAX_MASTERS);
  free(w->value);
  rl_lock_unref(w->obj);
  free(w);
}

/* Frees a watch nobody observes any more (not while it reports). */
static void watch_check(rl_ewatch *w) {
  if (!w->reporting && rl_list_empty(&w->observers)) watch_free(w);
}

static int classify_watch(rl_round *r, int i, const redisReply *rep) {
  rl_ewatch *w = r->data;
  if (w == NULL) return RL_VOTE_FAIL;
  return parse_record(&w->rec[i], rep);
}

static void watch_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  rl_ewatch *w = r->data;
  rl_client *c = r->client;
  r->data = NULL;
  w->round = NULL;
  recs_settle(r, w->rec);
  int at;
  int64_t expiry;
  int d = rl_elect_decide(w->rec, r->n, r->quorum, &at, &expiry);
  uint64_t sleep_ms = IDLE_SLEEP_MS;
  int changed = 0, decided = 1;
  if (d == RL_ELECT_LEADER && w->rec[at].token >= w->token) {
    const rl_erec *e = &w->rec[at];
    if (!w->has_leader || e->token != w->token || e->len != w->len ||
        (e->len > 0 && memcmp(e->value, w->value, e->len) != 0)) {
      char *v = malloc(e->len + 1);
      if (v != NULL) {
        memcpy(v, e->value ? e->value : "", e->len);
        v[e->len] = '\0';
        free(w->value);
        w->value = v;
        w->len = e->len;
        if (!w->has_leader || e->token != w->token)
          RL_ADD(c->metrics.elect_leader_changes, 1);
        w->token = e->token;
        w->has_leader = 1;
        changed = 1;
      } else {
        decided = 0;
      }
    }
    if (expiry >= 0) sleep_ms = (uint64_t)expiry + EXPIRY_SLACK_MS;
  } else if (d == RL_ELECT_NONE) {
    if (w->has_leader) {
      RL_ADD(c->metrics.elect_leader_changes, 1);
      changed = 1;
    }
    w->has_leader = 0;
    /* A campaigner that won the lock and has not written its record yet
     * writes it (a message) or dies (the lock's expiry). */
    for (int i = 0; i < r->n; i++)
      if (w->rec[i].answered && w->rec[i].pttl > 0 &&
          (uint64_t)w->rec[i].pttl + EXPIRY_SLACK_MS < sleep_ms)
        sleep_ms = (uint64_t)w->rec[i].pttl + EXPIRY_SLACK_MS;
  } else {
    /* Undecided, or a majority with a record older than one reported
     * (a master lost its data): read again, backing off. */
    decided = 0;
  }
  recs_clear(w->rec, RL_MAX_MASTERS);
  if (decided) {
    int first = !w->known;
    w->known = 1;
    w->undecided = 0;
    report(w, changed || first);
  } else {
    uint64_t base = rl_retry_delay_ms(c);
    if (base < 10) base = 10;
    unsigned k = w->undecided < 8 ? w->undecided : 8;
    w->undecided++;
    sleep_ms = base << k;
    uint64_t cap = (uint64_t)c->opts.watchdog_timeout_ms / 3;
    if (cap < base) cap = base;
    if (sleep_ms > cap) sleep_ms = cap;
  }
  if (rl_list_empty(&w->observers)) {
    watch_free(w);
    return;
  }
  rl_psw_sleep(w->psw, sleep_ms);
}

static const rl_round_ops watch_ops = {classify_watch, watch_done, NULL,
                                       NULL};

static void watch_read(rl_ewatch *w) {
  rlock *obj = w->obj;
  rl_client *c = obj->client;
  const char *argv[3] = {NULL, "1", rl_lock_keyk(obj, 0)};
  size_t len[3] = {0, 1, rl_lock_keylenk(obj, 0)};
  rl_round *r = rl_round_new(c, &watch_ops, w, RL_FAM(RL_FAM_ELECT_READ), 3,
                             argv, len);
  if (r == NULL) {
    rl_psw_sleep(w->psw, rl_retry_delay_ms(c) + 10);
    return;
  }
  r->wait_all = 1;
  w->round = r;
  rl_round_send(r);
}

static void close_watches(rl_family *f) {
  while (!rl_list_empty(&f->watches)) {
    rl_ewatch *w = rl_container_of(f->watches.next, rl_ewatch, node);
    rl_list *n;
    while ((n = rl_list_pop_front(&w->observers)) != NULL)
      rl_container_of(n, rl_eobs, node)->w = NULL;
    watch_free(w);
  }
}

static rl_ewatch *watch_find(rl_family *f, rlock *obj) {
  for (rl_list *n = f->watches.next; n != &f->watches; n = n->next) {
    rl_ewatch *w = rl_container_of(n, rl_ewatch, node);
    if (w->obj->keylen == obj->keylen &&
        memcmp(rl_lock_key(w->obj), rl_lock_key(obj), obj->keylen) == 0)
      return w;
  }
  return NULL;
}

static void attach_on_loop(rlock *obj, rl_eobs *o, int *status) {
  rl_client *c = obj->client;
  rl_family *f = rl_family_get(c);
  if (f == NULL) {
    *status = rl_client_closing(c) ? RLOCK_ECLOSED : RLOCK_ENOMEM;
    return;
  }
  if (o->w != NULL) detach_on_loop(o);
  rl_ewatch *w = watch_find(f, obj);
  if (w == NULL) {
    rl_pubsub *ps = rl_pubsub_get(c);
    w = calloc(1, sizeof *w);
    if (w == NULL || ps == NULL) {
      free(w);
      *status = RLOCK_ENOMEM;
      return;
    }
    w->f = f;
    w->obj = obj;
    rl_lock_ref(obj);
    rl_list_init(&w->observers);
    rl_list_push_back(&f->watches, &w->node);
    f->close_watches = close_watches;
    /* A first read at once; the subscription's confirmation wakes it
     * again, so that nothing published before it is missed. */
    w->psw = rl_psw_join(ps, rl_lock_channel(obj), obj->channellen, 0,
                         on_wake, w);
    if (w->psw == NULL) {
      watch_free(w);
      *status = RLOCK_ENOMEM;
      return;
    }
  }
  o->w = w;
  o->told = 0;
  rl_list_push_back(&w->observers, &o->node);
  if (w->known) report(w, 0);
}

static void detach_on_loop(rl_eobs *o) {
  rl_ewatch *w = o->w;
  if (w == NULL) return;
  rl_list_remove(&o->node);
  o->w = NULL;
  /* A read in flight finds no observer and frees the watch. */
  if (w->round == NULL) watch_check(w);
}

static int on_loop_closed(rl_client *c) {
  uv_mutex_lock(&c->qmu);
  int closed = c->closed;
  uv_mutex_unlock(&c->qmu);
  return closed;
}

static int attach_call(rlock *obj, rl_eobs *o, int op) {
  rl_client *c = obj->client;
  if (rl_client_on_loop(c)) {
    int status = RLOCK_OK;
    if (op == OP_DETACH) {
      detach_on_loop(o);
      return 0;
    }
    if (on_loop_closed(c)) return RLOCK_ECLOSED;
    attach_on_loop(obj, o, &status);
    return status;
  }
  rl_elect_req *er = req_new(op);
  if (er == NULL) return RLOCK_ENOMEM;
  er->obs = o;
  int rc = call(obj, er);
  free(er);
  return rc;
}

int rl_elect_attach(rlock *obj, rl_eobs *o) {
  return attach_call(obj, o, OP_ATTACH);
}

int rl_elect_detach(rlock *obj, rl_eobs *o) {
  return attach_call(obj, o, OP_DETACH);
}
