/*
 * Count-down latches in the C layer (the Redis side, and why a count-down
 * carries an id and a setting a generation, is latch_scripts.c).
 *
 * What N masters mean for each call. Set: 1 when a majority set it, 0
 * when a majority was already counting, else no quorum (the round waits
 * for every master, within the master timeout, to tell). Count-down: done
 * when a majority counted its id (or had already, or was open); the id is
 * made once per call, so the call retries a round that reached no
 * majority without ever counting twice on one master. Count: the
 * quorum-th smallest count, so 0 exactly when a majority is open (or has
 * no latch). Await: open when a majority is open, or has moved to another
 * generation than the one the awaiter saw counting there (the awaited one
 * opened, and the latch was set again); gone, RLOCK_ELOST, when a majority
 * that the awaiter saw counting no longer has it (deleted, or expired
 * after latch_ttl_ms without activity): an abandoned latch never lets its
 * awaiters through as if it had opened. A latch not set yet is waited for.
 *
 * An awaiter sleeps in the latch channel's wait queue until a message
 * (the latch opened, or was deleted), or the latch's own remaining life,
 * or its deadline; several awaiters of one client wake one another in
 * turn (each passes the wake on as it leaves).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "ops.h"
#include "quarantine.h"
#include "retry.h"
#include "scripts.h"
#include "util.h"

/* How many rounds a count-down tries before it says no quorum. */
#define COUNT_DOWN_TRIES 3

struct rlock_latch {
  atomic_int refs;
  rlock *obj;  /* key "<p>{name}:l", channel ":l:ch"; client, name */
  char *dkey;  /* "<p>{name}:l:d": the ids counted */
  size_t dkeylen;
};

enum { OP_SET = 1, OP_COUNT_DOWN, OP_COUNT, OP_AWAIT, OP_DELETE, OP_CANCEL };

typedef struct rl_latch_req {
  rl_req req; /* first: an async one is freed as an rl_req */
  rlock_latch *latch;
  int op;
  int64_t count;
  rlock_latch_cb cb;
  void *arg;
  char id[33];            /* a count-down's id */
  int tries;
  int last_err;
  int64_t gen[RL_MAX_MASTERS]; /* await: the generation seen counting */
  rl_fwait wait;
  int waiting;            /* counted in the waiters metric */
} rl_latch_req;

static void latch_ref(rlock_latch *l) { atomic_fetch_add(&l->refs, 1); }

static void latch_unref(rlock_latch *l) {
  if (atomic_fetch_sub(&l->refs, 1) != 1) return;
  rl_lock_unref(l->obj);
  free(l->dkey);
  free(l);
}

int rlock_latch_get(rlock_client *client, const char *name,
                    rlock_latch **out) {
  if (out == NULL) return RLOCK_EINVAL;
  *out = NULL;
  if (client == NULL) return RLOCK_EINVAL;
  if (rl_client_forked(client)) return RLOCK_EFORKED;
  rlock_latch *l = calloc(1, sizeof *l);
  if (l == NULL) return RLOCK_ENOMEM;
  int rc = rl_object_new(client, name, ":l", &l->obj);
  if (rc != 0) {
    free(l);
    return rc;
  }
  l->dkeylen = l->obj->keylen + 2;
  l->dkey = malloc(l->dkeylen + 1);
  if (l->dkey == NULL) {
    rl_lock_unref(l->obj);
    free(l);
    return RLOCK_ENOMEM;
  }
  memcpy(l->dkey, rl_lock_key(l->obj), l->obj->keylen);
  memcpy(l->dkey + l->obj->keylen, ":d", 3);
  atomic_init(&l->refs, 1);
  *out = l;
  return 0;
}

void rlock_latch_free(rlock_latch *latch) {
  if (latch != NULL) latch_unref(latch);
}

const char *rlock_latch_name(const rlock_latch *latch) {
  return latch != NULL ? rl_lock_text(latch->obj) : NULL;
}

/* --- rounds ------------------------------------------------------------- */

static void send_round(rl_latch_req *lr, const rl_round_ops *ops,
                       int script, int wait_all);

/* 1 if rep is an array of at least min integers. */
static int ints(const redisReply *rep, size_t min) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < min) return 0;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return 0;
  return 1;
}

static void finish_round(rl_round *r, int status) {
  rl_latch_req *lr = r->data;
  lr->req.round = NULL;
  rl_req_finish(&lr->req, status);
}

/* set: {1, count, gen} set, {0, count, gen} already counting. */
static int classify_set(rl_round *r, int i, const redisReply *rep) {
  if (!ints(rep, 1)) return RL_VOTE_FAIL;
  long long code = rep->element[0]->integer;
  r->slot[i].v[0] = code;
  if (code == 1 || code == 0) return RL_VOTE_YES;
  return code == RL_FAM_REPLY_BADARG ? RL_VOTE_NO : RL_VOTE_FAIL;
}

static void set_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  int set = 0, counting = 0, bad = 0;
  for (int i = 0; i < r->n; i++) {
    if (r->slot[i].vote == RL_VOTE_YES) {
      set += r->slot[i].v[0] == 1;
      counting += r->slot[i].v[0] == 0;
    }
    if (r->slot[i].vote == RL_VOTE_NO) bad++;
  }
  if (set >= r->quorum)
    finish_round(r, 1);
  else if (counting >= r->quorum)
    finish_round(r, 0);
  else
    finish_round(r, bad >= r->quorum ? RLOCK_EINVAL : rl_round_error(r));
}

static const rl_round_ops set_ops = {classify_set, set_done, NULL, NULL};

/* count_down: 1 counted, 2 opened it, 3 open already, 4 counted before
 * (all yes), 0 no such latch. */
static int classify_down(rl_round *r, int i, const redisReply *rep) {
  if (!ints(rep, 2)) return RL_VOTE_FAIL;
  long long code = rep->element[0]->integer;
  r->slot[i].v[0] = code;
  if (code >= 1 && code <= 4) return RL_VOTE_YES;
  return code == 0 ? RL_VOTE_NO : RL_VOTE_FAIL;
}

static void retry_down(rl_req *req);

static void down_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  rl_latch_req *lr = r->data;
  rl_client *c = r->client;
  if (r->outcome == RL_VOTE_YES) {
    RL_ADD(c->metrics.latch_count_downs, 1);
    finish_round(r, RLOCK_OK);
    return;
  }
  if (r->no >= r->quorum) {
    finish_round(r, RLOCK_ENOENT);
    return;
  }
  int err = rl_round_error(r);
  lr->req.round = NULL;
  if (err == RLOCK_EREDIS || ++lr->tries >= COUNT_DOWN_TRIES) {
    rl_req_finish(&lr->req, err);
    return;
  }
  /* The same id again: a master that counted it says so (4). */
  if (rl_fwait_sleep(&lr->wait, &lr->req, NULL, 0, rl_retry_delay_ms(c),
                     retry_down, NULL) != 0)
    rl_req_finish(&lr->req, RLOCK_ENOMEM);
}

static const rl_round_ops down_ops = {classify_down, down_done, NULL, NULL};

/* count: {state, count, gen, pttl}: v[0..2] the first three, the pttl
 * (the latch's remaining life, an awaiter's longest sleep) in granted. */
static int classify_count(rl_round *r, int i, const redisReply *rep) {
  if (!ints(rep, 4) || rep->elements != 4) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->element[0]->integer;
  r->slot[i].v[1] = rep->element[1]->integer;
  r->slot[i].v[2] = rep->element[2]->integer;
  r->slot[i].granted = (int)(rep->element[3]->integer > INT32_MAX
                                 ? INT32_MAX
                                 : rep->element[3]->integer);
  return RL_VOTE_YES;
}

/* The count as a majority sees it: the quorum-th smallest (0 open or
 * not set). */
static void count_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  rl_latch_req *lr = r->data;
  if (r->outcome != RL_VOTE_YES) {
    finish_round(r, rl_round_error(r));
    return;
  }
  int64_t v[RL_MAX_MASTERS];
  int k = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_YES)
      v[k++] = r->slot[i].v[0] == 1 ? r->slot[i].v[1] : 0;
  lr->req.out_i64 = rl_fam_quorum_value(v, k, r->quorum, 0);
  finish_round(r, RLOCK_OK);
}

static const rl_round_ops count_ops = {classify_count, count_done, NULL,
                                       NULL};

/* force: 1 if it existed. */
static int classify_int(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  return rep->type == REDIS_REPLY_INTEGER ? RL_VOTE_YES : RL_VOTE_FAIL;
}

static void delete_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  finish_round(r, r->outcome == RL_VOTE_YES ? RLOCK_OK : rl_round_error(r));
}

static const rl_round_ops delete_ops = {classify_int, delete_done, NULL,
                                        NULL};

/* --- await ------------------------------------------------------------------ */

static void look(rl_req *req);

/* Sleeps until the next look, as the retry policy says (retry.c): err is
 * the look's error, or RL_EBUSY when it saw the latch counting, life ms
 * from its end (-1 unknown). */
static void await_fail(rl_latch_req *lr, int err, int64_t life) {
  rl_req *req = &lr->req;
  rl_client *c = req->lock->client;
  rl_retry p = {err, life, 0, NULL, 0};
  if (rl_retry_next(req, &p) == RL_RETRY_DONE) {
    rl_req_finish(req, p.err);
    return;
  }
  /* A latch that is counting is looked at now and then anyway. */
  uint64_t sleep_ms = p.ms;
  if (err == RL_EBUSY && sleep_ms > (uint64_t)c->opts.watchdog_timeout_ms)
    sleep_ms = (uint64_t)c->opts.watchdog_timeout_ms;
  if (!lr->waiting) {
    lr->waiting = 1;
    RL_ADD(c->metrics.latch_waiters, 1);
  }
  if (rl_fwait_sleep(&lr->wait, req, rl_lock_channel(lr->latch->obj),
                     lr->latch->obj->channellen, sleep_ms, look, NULL) != 0)
    rl_req_finish(req, RLOCK_ENOMEM);
}

static void await_done(rl_round *r) {
  if (!rl_votes_settle(r, 0) || r->data == NULL) return;
  rl_latch_req *lr = r->data;
  rl_client *c = r->client;
  lr->req.round = NULL;
  if (r->outcome != RL_VOTE_YES) {
    await_fail(lr, rl_round_error(r), -1);
    return;
  }
  int opened = 0, vanished = 0;
  int64_t life = -1;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->vote != RL_VOTE_YES) continue;
    int64_t state = sl->v[0], gen = sl->v[2];
    if (state == 2) {
      opened++;
    } else if (state == 1) {
      if (lr->gen[i] == 0)
        lr->gen[i] = gen;
      else if (gen != lr->gen[i])
        opened++; /* a new generation: the awaited one opened */
      /* A PTTL of 0: it goes within the millisecond, and counts. */
      if (sl->granted >= 0 && (life < 0 || sl->granted < life))
        life = sl->granted;
    } else if (lr->gen[i] != 0) {
      vanished++; /* it was counting here, and went without opening */
    }
  }
  if (opened >= r->quorum) {
    RL_ADD(c->metrics.latch_opened, 1);
    rl_req_finish(&lr->req, RLOCK_OK);
    return;
  }
  if (vanished >= r->quorum) {
    rl_req_finish(&lr->req, RLOCK_ELOST);
    return;
  }
  /* Until a message (opened, deleted), or until the latch's own life ends
   * (abandoned: it expires, without a message), and now and then anyway. */
  await_fail(lr, RL_EBUSY, life);
}

static const rl_round_ops await_ops = {classify_count, await_done, NULL,
                                       NULL};

/* Every master's answer is waited for (within the master timeout): the
 * awaiter must have seen a master counting to tell, later, that the latch
 * went from it. Decided on the first majority, a look that missed one
 * master (it answered late) and a later one that missed another saw the
 * latch go from one master only, and slept on until its deadline. */
static void look(rl_req *req) {
  rl_latch_req *lr = (rl_latch_req *)req;
  send_round(lr, &await_ops, RL_FAM(RL_FAM_LATCH_COUNT), 1);
}

/* --- starting requests -------------------------------------------------- */

static void send_round(rl_latch_req *lr, const rl_round_ops *ops, int script,
                       int wait_all) {
  rl_req *req = &lr->req;
  rl_client *c = req->lock->client;
  rlock_latch *l = lr->latch;
  rl_args a;
  rl_args_init(&a);
  rl_args_str(&a, NULL, 0);
  int two = script != RL_FAM(RL_FAM_LATCH_COUNT);
  rl_args_str(&a, two ? "2" : "1", 1);
  rl_args_str(&a, rl_lock_key(l->obj), l->obj->keylen);
  if (two) rl_args_str(&a, l->dkey, l->dkeylen);
  if (lr->op == OP_SET) {
    rl_args_i64(&a, lr->count);
    rl_args_i64(&a, c->opts.latch_ttl_ms);
    rl_args_i64(&a, c->opts.latch_linger_ms);
  } else if (lr->op == OP_COUNT_DOWN) {
    rl_args_str(&a, lr->id, 32);
  }
  rl_round *r = rl_args_round(&a, c, ops, lr, script);
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

static void retry_down(rl_req *req) {
  send_round((rl_latch_req *)req, &down_ops,
             RL_FAM(RL_FAM_LATCH_COUNT_DOWN), 0);
}

static int cancel_on_loop(rlock_latch *l, const char *owner, size_t ownerlen);

static void latch_start(rl_req *req) {
  rl_latch_req *lr = (rl_latch_req *)req;
  switch (lr->op) {
    case OP_SET:
      send_round(lr, &set_ops, RL_FAM(RL_FAM_LATCH_SET), 1);
      break;
    case OP_COUNT_DOWN:
      send_round(lr, &down_ops, RL_FAM(RL_FAM_LATCH_COUNT_DOWN), 0);
      break;
    case OP_COUNT:
      send_round(lr, &count_ops, RL_FAM(RL_FAM_LATCH_COUNT), 0);
      break;
    case OP_AWAIT:
      look(req);
      break;
    case OP_DELETE:
      send_round(lr, &delete_ops, RL_FAM(RL_FAM_LATCH_FORCE), 0);
      break;
    case OP_CANCEL:
      rl_req_finish(req, cancel_on_loop(lr->latch, req->owner,
                                        req->ownerlen));
      break;
  }
}

static void latch_end(rl_req *req, int status) {
  (void)status;
  rl_latch_req *lr = (rl_latch_req *)req;
  rl_client *c = req->lock->client;
  /* Awaiters of one client wake one another in turn. */
  rl_fwait_leave(&lr->wait, !rl_client_closing(c));
  if (lr->waiting) RL_ADD(c->metrics.latch_waiters, -1);
  lr->waiting = 0;
}

static int cancel_on_loop(rlock_latch *l, const char *owner,
                          size_t ownerlen) {
  rl_client *c = l->obj->client;
  for (rl_list *n = c->active.next; n != &c->active; n = n->next) {
    rl_req *r = rl_container_of(n, rl_req, node);
    if (r->kind != RL_REQ_FAMILY || r->start != latch_start ||
        r->waiter != NULL)
      continue;
    rl_latch_req *lr = (rl_latch_req *)r;
    if (lr->op != OP_AWAIT || lr->latch->obj->keylen != l->obj->keylen ||
        memcmp(rl_lock_key(lr->latch->obj), rl_lock_key(l->obj),
               l->obj->keylen) != 0)
      continue;
    if (r->ownerlen != ownerlen || memcmp(r->owner, owner, ownerlen) != 0)
      continue;
    rl_req_finish(r, RLOCK_ECANCELED);
    return 0;
  }
  return RLOCK_ENOTOWNER;
}

static void init(rl_latch_req *lr, rlock_latch *l, int op) {
  memset(lr, 0, sizeof *lr);
  lr->latch = l;
  lr->op = op;
  lr->req.start = latch_start;
  lr->req.end = latch_end;
  if (op == OP_COUNT_DOWN) rl_fam_random_id(lr->id);
}

static int call(rlock_latch *l, int op, int64_t count, int64_t wait_ms,
                int64_t *out) {
  rl_latch_req lr;
  init(&lr, l, op);
  lr.count = count;
  lr.req.deadline = rl_fam_deadline(wait_ms);
  int rc = rl_fam_call(l->obj, &lr.req, 1, 0);
  if (rc == 0 && out != NULL) *out = lr.req.out_i64;
  return rc;
}

static void async_done(rlock *obj, int status, void *arg) {
  (void)obj;
  rl_latch_req *lr = arg; /* the request itself, freed after this */
  if (lr->cb != NULL) lr->cb(lr->latch, status, lr->arg);
  latch_unref(lr->latch);
}

static int post(rlock_latch *l, int op, uint64_t owner, int64_t wait_ms,
                rlock_latch_cb cb, void *arg) {
  rl_latch_req *lr = malloc(sizeof *lr);
  if (lr == NULL) return RLOCK_ENOMEM;
  init(lr, l, op);
  lr->cb = cb;
  lr->arg = arg;
  lr->req.deadline = rl_fam_deadline(wait_ms);
  latch_ref(l);
  int rc = rl_fam_post(l->obj, &lr->req, owner, async_done, lr);
  if (rc != 0) latch_unref(l);
  return rc;
}

/* --- the public calls --------------------------------------------------- */

int rlock_latch_set(rlock_latch *latch, int64_t count) {
  if (latch == NULL || count < 1) return RLOCK_EINVAL;
  return call(latch, OP_SET, count, 0, NULL);
}

int rlock_latch_count_down(rlock_latch *latch) {
  if (latch == NULL) return RLOCK_EINVAL;
  return call(latch, OP_COUNT_DOWN, 0, 0, NULL);
}

int rlock_latch_count(rlock_latch *latch, int64_t *count) {
  if (latch == NULL || count == NULL) return RLOCK_EINVAL;
  return call(latch, OP_COUNT, 0, 0, count);
}

int rlock_latch_await(rlock_latch *latch, int64_t wait_ms) {
  if (latch == NULL || (wait_ms < 0 && wait_ms != RLOCK_WAIT_FOREVER))
    return RLOCK_EINVAL;
  return call(latch, OP_AWAIT, 0, wait_ms, NULL);
}

int rlock_latch_delete(rlock_latch *latch) {
  if (latch == NULL) return RLOCK_EINVAL;
  return call(latch, OP_DELETE, 0, 0, NULL);
}

int rlock_latch_count_down_async(rlock_latch *latch, rlock_latch_cb cb,
                                 void *arg) {
  if (latch == NULL) return RLOCK_EINVAL;
  return post(latch, OP_COUNT_DOWN, 0, 0, cb, arg);
}

int rlock_latch_await_async(rlock_latch *latch, uint64_t owner,
                            int64_t wait_ms, rlock_latch_cb cb, void *arg) {
  if (latch == NULL || cb == NULL ||
      (wait_ms < 0 && wait_ms != RLOCK_WAIT_FOREVER))
    return RLOCK_EINVAL;
  return post(latch, OP_AWAIT, owner, wait_ms, cb, arg);
}

int rlock_latch_cancel_async(rlock_latch *latch, uint64_t owner) {
  if (latch == NULL) return RLOCK_EINVAL;
  rl_client *c = latch->obj->client;
  if (rl_client_on_loop(c)) {
    uv_mutex_lock(&c->qmu);
    int closed = c->closed;
    uv_mutex_unlock(&c->qmu);
    if (closed) return RLOCK_ECLOSED;
    rl_req tmp;
    rl_owner_async(c, owner, &tmp);
    return cancel_on_loop(latch, tmp.owner, tmp.ownerlen);
  }
  rl_latch_req lr;
  init(&lr, latch, OP_CANCEL);
  return rl_fam_call(latch->obj, &lr.req, 0, owner);
}
