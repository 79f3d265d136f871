/*
 * rlock_lock_all's acquisition: one quorum round of multi_acquire per
 * attempt, which on each master takes every lock of the set or none; the
 * set is held when a majority granted it. Each lock then becomes, or adds
 * to, an ordinary hold in the client's table, exactly as a single
 * acquisition would leave it (its count, token, lease, the masters that
 * have it, the lock's watchdog): rlock_unlock, the lock's renewal and
 * close treat it as any other.
 *
 * The rules are the single lock's (acquire.c), lock by lock:
 * - No grant outlives its attempt: a ledger per attempt, kept or
 *   abandoned; abandoning sends multi_undo (per lock, one decrement where
 *   the owner's count is at least the one this attempt's grant set: a
 *   master that refused the set keeps every hold the owner had before) to
 *   every master that granted, and at once to every master that has not
 *   answered yet, so that it lands right behind a late grant. Kept, a
 *   late grant joins the holds.
 * - Validity: lease - elapsed - drift must be positive at the decision.
 * - A re-entered lock continues its hold when a majority granted it
 *   re-entrantly, or when no master that had it lost it and it is within
 *   its validity; when only more answers can tell, the round waits for
 *   every master; otherwise that hold is lost (its owner told), released
 *   everywhere behind this attempt, and the attempt starts again, with
 *   that lock as a first acquisition.
 * - Tokens of first acquisitions: the largest counter among the granting
 *   masters, handed out at once when a majority of servers already stores
 *   it (the others told, fire and forget), else written back to a
 *   majority first: one fence_max round per such lock, all at once.
 * Waiting: a busy reply names the lock found held; the attempt sleeps in
 * that lock's wait queue, until its unlock message or its holder's PTTL.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "multi.h"
#include "fence.h"
#include "grants.h"
#include "ops.h"
#include "quarantine.h"
#include "retry.h"
#include "scripts.h"
#include "util.h"

enum { G_GRANTED = 1, G_FINAL = 2, G_UNDONE = 4 };
enum { A_OPEN = 0, A_KEPT, A_ABANDONED };

typedef struct rl_multi_attempt {
  int refs;         /* the round, each fence round, the request if open */
  int state;
  rl_client *c;
  rl_round *round;  /* the acquire round, until freed */
  rl_multi_req *mr; /* while open */
  size_t n;         /* locks */
  int nm;           /* masters */
  rlock **locks;    /* references, for late grants and undos */
  char *owner;
  size_t ownerlen;
  uint64_t *base_gen; /* per lock: the hold it re-enters, 0 none */
  int64_t *want;      /* per lock: the count its grant sets, which the
                         undo names */
  uint64_t *kept_gen; /* per lock, once kept */
  uint8_t *flags;     /* per master */
  int64_t *token, *count, *existed; /* per master and lock (i * n + j) */
  uint64_t *out_token; /* per lock: the token to hand out */
  int fences_out, fences_failed;
} rl_multi_attempt;

static void attempt(rl_req *req);
static void fail_attempt(rl_multi_req *mr, int err, int64_t pttl,
                         size_t blocker);

/* --- the ledger ------------------------------------------------------------- */

static rl_multi_attempt *attempt_new(rl_multi_req *mr) {
  rl_client *c = mr->req.lock->client;
  size_t n = mr->n, nm = (size_t)c->nmasters;
  rl_multi_attempt *a = calloc(1, sizeof *a + mr->req.ownerlen + 1);
  if (a == NULL) return NULL;
  a->locks = calloc(n, sizeof *a->locks);
  a->base_gen = calloc(n, sizeof *a->base_gen);
  a->want = calloc(n, sizeof *a->want);
  a->kept_gen = calloc(n, sizeof *a->kept_gen);
  a->out_token = calloc(n, sizeof *a->out_token);
  a->flags = calloc(nm, 1);
  a->token = calloc(nm * n, sizeof *a->token);
  a->count = calloc(nm * n, sizeof *a->count);
  a->existed = calloc(nm * n, sizeof *a->existed);
  if (!a->locks || !a->base_gen || !a->want || !a->kept_gen ||
      !a->out_token || !a->flags || !a->token || !a->count || !a->existed) {
    free(a->locks);
    free(a->base_gen);
    free(a->want);
    free(a->kept_gen);
    free(a->out_token);
    free(a->flags);
    free(a->token);
    free(a->count);
    free(a->existed);
    free(a);
    return NULL;
  }
  a->refs = 2;
  a->c = c;
  a->mr = mr;
  a->n = n;
  a->nm = (int)nm;
  for (size_t j = 0; j < n; j++) {
    a->locks[j] = mr->locks[j];
    rl_lock_ref(a->locks[j]);
  }
  a->owner = (char *)(a + 1);
  memcpy(a->owner, mr->req.owner, mr->req.ownerlen);
  a->ownerlen = mr->req.ownerlen;
  return a;
}

static void attempt_unref(rl_multi_attempt *a) {
  if (--a->refs > 0) return;
  for (size_t j = 0; j < a->n; j++) rl_lock_unref(a->locks[j]);
  free(a->locks);
  free(a->base_gen);
  free(a->want);
  free(a->kept_gen);
  free(a->out_token);
  free(a->flags);
  free(a->token);
  free(a->count);
  free(a->existed);
  free(a);
}

/* multi_undo to master i: for each lock, one decrement where the owner's
 * count is at least the one this attempt's grant set, behind whatever was
 * sent there before. */
static void undo_master(rl_multi_attempt *a, int i) {
  a->flags[i] |= G_UNDONE;
  rl_args args;
  rl_args_init(&args);
  rl_args_str(&args, NULL, 0);
  rl_args_i64(&args, (int64_t)a->n);
  for (size_t j = 0; j < a->n; j++)
    rl_args_str(&args, rl_lock_key(a->locks[j]), a->locks[j]->keylen);
  rl_args_str(&args, a->owner, a->ownerlen);
  for (size_t j = 0; j < a->n; j++) rl_args_i64(&args, a->want[j]);
  rl_round *u =
      rl_args_round(&args, a->c, NULL, NULL, RL_FAM(RL_FAM_MULTI_UNDO));
  rl_args_free(&args);
  if (u != NULL) rl_round_send_one(u, i);
  /* Out of memory: the grants expire with their lease. */
}

static void attempt_abandon(rl_multi_attempt *a) {
  a->state = A_ABANDONED;
  rl_round *r = a->round;
  if (r != NULL) r->args.no_resend = 1;
  for (int i = 0; i < a->nm; i++) {
    if (a->flags[i] & G_UNDONE) continue;
    int pending = r != NULL && !(a->flags[i] & G_FINAL) &&
                  (r->slot[i].vote == RL_VOTE_PENDING || r->slot[i].timed_out);
    if ((a->flags[i] & G_GRANTED) || pending) undo_master(a, i);
  }
}

static void attempt_end(rl_multi_req *mr, int keep) {
  rl_multi_attempt *a = mr->att;
  if (a == NULL) return;
  mr->att = NULL;
  a->mr = NULL;
  if (mr->req.round != NULL && mr->req.round == a->round)
    mr->req.round = NULL;
  if (!keep && a->state == A_OPEN) attempt_abandon(a);
  attempt_unref(a);
}

/* --- replies ---------------------------------------------------------------- */

/* 1 granted (the per-lock triples into the ledger row, if given), 0 busy
 * (v[0] the lock's 1-based index, v[1] its PTTL), 2 late, -1 malformed. */
static int parse(const redisReply *rep, size_t n, rl_round_slot *sl,
                 rl_multi_attempt *a, int i) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) return -1;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return -1;
  long long code = rep->element[0]->integer;
  if (code == 1 && rep->elements == 1 + 3 * n) {
    if (a != NULL)
      for (size_t j = 0; j < n; j++) {
        a->token[(size_t)i * n + j] = rep->element[1 + 3 * j]->integer;
        a->count[(size_t)i * n + j] = rep->element[2 + 3 * j]->integer;
        a->existed[(size_t)i * n + j] = rep->element[3 + 3 * j]->integer;
      }
    return 1;
  }
  if (code == 0 && rep->elements == 3) {
    sl->v[0] = rep->element[1]->integer;
    sl->v[1] = rep->element[2]->integer;
    return sl->v[0] >= 1 && (size_t)sl->v[0] <= n ? 0 : -1;
  }
  if (code == -1 && rep->elements == 2) return 2;
  return -1;
}

static int classify_acquire(rl_round *r, int i, const redisReply *rep) {
  rl_round_slot *sl = &r->slot[i];
  rl_multi_attempt *a = r->data;
  if (a == NULL) return RL_VOTE_FAIL;
  a->flags[i] |= G_FINAL;
  int g = parse(rep, a->n, sl, a, i);
  if (g < 0) {
    rl_client_note_error(r->client, "unexpected reply to multi_acquire", 33);
    sl->error_reply = 1;
    return RL_VOTE_FAIL;
  }
  if (g == 2) return RL_VOTE_FAIL; /* too late for the master */
  sl->granted = g;
  if (g == 0) return RL_VOTE_NO;
  a->flags[i] |= G_GRANTED;
  for (size_t j = 0; j < a->n; j++)
    rl_note_token(r->client, a->token[(size_t)i * a->n + j]);
  return RL_VOTE_YES;
}

static void acquire_late(rl_round *r, int i, const redisReply *rep) {
  rl_multi_attempt *a = r->data;
  if (a == NULL) return;
  rl_round_slot tmp;
  int g = rep != NULL && parse(rep, a->n, &tmp, a, i) == 1;
  a->flags[i] |= G_FINAL | (g ? G_GRANTED : 0);
  if (!g) return;
  if (a->state == A_ABANDONED && !(a->flags[i] & G_UNDONE)) undo_master(a, i);
  if (a->state == A_KEPT)
    for (size_t j = 0; j < a->n; j++) {
      rl_hold *h = rl_holds_find(&a->c->holds, rl_lock_key(a->locks[j]),
                                 a->locks[j]->keylen, a->owner, a->ownerlen);
      if (h != NULL && h->gen == a->kept_gen[j]) h->masters |= 1ull << i;
    }
}

static void acquire_release(rl_round *r) {
  rl_multi_attempt *a = r->data;
  if (a == NULL) return;
  a->round = NULL;
  attempt_unref(a);
}

/* --- deciding ------------------------------------------------------------- */

static int validity_left(const rl_req *req) {
  rl_client *c = req->lock->client;
  int64_t elapsed = (int64_t)(rl_now_ms() - req->t_start);
  return req->lease_ms - elapsed - rl_drift_ms(c, req->lease_ms) > 0;
}

/* Each lock becomes, or adds to, the owner's hold, as commit() in
 * acquire.c does for one. */
static void commit(rl_multi_req *mr) {
  rl_req *req = &mr->req;
  rl_client *c = req->lock->client;
  rl_multi_attempt *a = mr->att;
  uint64_t granted = 0;
  for (int i = 0; i < a->nm; i++)
    if (a->flags[i] & G_GRANTED) granted |= 1ull << i;
  for (size_t j = 0; j < mr->n; j++) {
    rlock *lock = mr->locks[j];
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(lock), lock->keylen,
                               req->owner, req->ownerlen);
    if (h != NULL && h->lost) {
      rl_hold_drop(c, h);
      h = NULL;
    }
    if (h == NULL) {
      h = rl_holds_add(&c->holds, rl_lock_key(lock), lock->keylen, req->owner,
                       req->ownerlen);
      if (h == NULL) {
        /* Out of memory: the locks committed so far are held (an unlock
         * releases them); the rest is given back with the attempt. */
        rl_req_finish(req, RLOCK_ENOMEM);
        return;
      }
      h->token = a->out_token[j];
      h->acquired_ms = req->t_start;
      h->gen = ++c->hold_gen;
      RL_ADD(c->metrics.locks_held, 1);
      h->owner_id = req->owner_id;
      h->owner_is_thread = req->owner_is_thread;
      h->lock = lock;
      rl_lock_ref(lock);
      rl_wheel_node_init(&h->wd);
    }
    h->masters |= granted;
    int first = h->count == 0;
    h->count++;
    if (first || req->lease_ms > h->lease_ms) h->lease_ms = req->lease_ms;
    if (first) h->extensions = 0;
    h->watchdog = h->watchdog || req->watchdog;
    if (h->watchdog && !h->wd.armed) rl_watchdog_start(&c->watchdog, &h->wd);
    uint64_t valid = req->t_start +
                     (uint64_t)(req->lease_ms - rl_drift_ms(c, req->lease_ms));
    if (first || valid > h->valid_until_ms) h->valid_until_ms = valid;
    a->kept_gen[j] = h->gen;
    RL_ADD(c->metrics.acquisitions, 1);
    RL_ADD(c->metrics.acquisitions_kind[RL_KIND_LOCK], 1);
  }
  a->state = A_KEPT;
  RL_ADD(c->metrics.lock_all_acquisitions, 1);
  rl_hist_observe(&c->metrics.wait, rl_now_ms() - req->t_post);
  attempt_end(mr, 1);
  rl_req_finish(req, RLOCK_OK);
}

/* As hold_intact in acquire.c, for lock j: 1 the hold continues, 0 it is
 * lost, -1 only the masters that have not answered can tell. */
static int hold_intact(rl_round *r, rl_multi_attempt *a, size_t j,
                       const rl_hold *h) {
  int confirmed = 0, lost_somewhere = 0;
  for (int i = 0; i < r->n; i++) {
    if (!r->slot[i].granted || r->slot[i].vote != RL_VOTE_YES ||
        rl_master_duplicate(r->client, i))
      continue;
    if (a->existed[(size_t)i * a->n + j])
      confirmed++;
    else if (h->masters & (1ull << i))
      lost_somewhere = 1;
  }
  if (confirmed >= r->quorum) return 1;
  if (!lost_somewhere && rl_now_ms() <= h->valid_until_ms) return 1;
  return r->yes + r->no + r->fail < r->n ? -1 : 0;
}

static void fence_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_multi_attempt *a = r->data;
  if (a == NULL) return;
  if (r->outcome != RL_VOTE_YES) a->fences_failed++;
  if (--a->fences_out > 0) return;
  rl_multi_req *mr = a->mr;
  if (mr == NULL) return; /* finished: its grants were given back */
  if (!a->fences_failed && validity_left(&mr->req)) {
    commit(mr);
    return;
  }
  attempt_end(mr, 0);
  fail_attempt(mr, RLOCK_ENOQUORUM, -1, 0);
}

static void fence_release(rl_round *r) {
  if (r->data != NULL) attempt_unref(r->data);
}

static const rl_round_ops fence_ops = {rl_fence_classify, fence_done, NULL,
                                       fence_release};

/* Tokens of the first acquisitions; written back where needed, then
 * committed. */
static void hand_out_tokens(rl_multi_req *mr, rl_round *r) {
  rl_multi_attempt *a = mr->att;
  rl_client *c = r->client;
  size_t n = a->n;
  rl_round *need[RL_MULTI_MAX];
  size_t nneed = 0;
  for (size_t j = 0; j < n; j++) {
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(a->locks[j]),
                               a->locks[j]->keylen, a->owner, a->ownerlen);
    if (h != NULL && !h->lost && h->count > 0) continue; /* re-entered */
    int64_t token = 0;
    for (int i = 0; i < r->n; i++)
      if (r->slot[i].vote == RL_VOTE_YES && a->token[(size_t)i * n + j] > token)
        token = a->token[(size_t)i * n + j];
    a->out_token[j] = (uint64_t)token;
    int64_t stored[RL_MAX_MASTERS];
    rl_fence_in in = {rl_lock_fence(a->locks[j]), rl_lock_fencelen(a->locks[j]),
                      (uint64_t)token, r->quorum, stored, 0, 0, NULL, 0};
    for (int i = 0; i < r->n; i++) {
      stored[i] = r->slot[i].granted ? a->token[(size_t)i * n + j] : -1;
      if (r->slot[i].vote == RL_VOTE_YES) in.counted |= 1ull << i;
    }
    rl_round *f;
    int rc = rl_fence_write_back(c, &in, &fence_ops, a, &f);
    if (rc < 0) {
      for (size_t k = 0; k < nneed; k++) rl_round_discard(need[k]);
      rl_req_finish(&mr->req, RLOCK_ENOMEM);
      return;
    }
    if (rc > 0) {
      a->refs++;
      need[nneed++] = f;
    }
  }
  if (nneed == 0) {
    commit(mr);
    return;
  }
  a->fences_out = (int)nneed;
  for (size_t k = 0; k < nneed; k++) rl_round_send(need[k]);
}

static void won(rl_multi_req *mr, rl_round *r) {
  rl_req *req = &mr->req;
  rl_client *c = r->client;
  rl_multi_attempt *a = mr->att;
  int undecided = 0, lost = 0;
  for (size_t j = 0; j < a->n; j++) {
    if (a->base_gen[j] == 0) continue;
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(a->locks[j]),
                               a->locks[j]->keylen, a->owner, a->ownerlen);
    int live = h != NULL && h->gen == a->base_gen[j] && !h->lost;
    int intact = live ? hold_intact(r, a, j, h) : 0;
    if (intact < 0) undecided = 1;
    if (intact == 0) lost = 1;
  }
  if (undecided && !lost) {
    r->wait_all = 1;
    r->decided = 0;
    req->round = r;
    return;
  }
  if (lost) {
    /* Each lost hold: told, released where it survived, behind this
     * attempt (which it takes too); then the attempt starts again. */
    for (size_t j = 0; j < a->n; j++) {
      if (a->base_gen[j] == 0) continue;
      rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(a->locks[j]),
                                 a->locks[j]->keylen, a->owner, a->ownerlen);
      if (h == NULL || h->gen != a->base_gen[j] || h->lost) continue;
      if (hold_intact(r, a, j, h) != 1) {
        req->deciding = 1;
        rl_hold_lost(c, h);
        req->deciding = 0;
      }
    }
    attempt_end(mr, 0);
    attempt(req);
    return;
  }
  hand_out_tokens(mr, r);
}

static void acquire_done(rl_round *r) {
  rl_multi_attempt *a = r->data;
  if (a == NULL || !rl_votes_settle(r, 1)) return;
  rl_multi_req *mr = a->mr;
  if (mr == NULL) return; /* finished meanwhile: given back already */
  rl_req *req = &mr->req;
  req->round = NULL;
  if (r->outcome == RL_VOTE_YES && validity_left(req)) {
    won(mr, r);
    return;
  }
  attempt_end(mr, 0);
  if (r->outcome == RL_VOTE_YES) {
    fail_attempt(mr, RLOCK_ENOQUORUM, -1, 0); /* too slow */
    return;
  }
  int64_t pttl = -1;
  size_t blocker = 0;
  int busy = 0, any_error = 0;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->error_reply) any_error = 1;
    if (sl->vote != RL_VOTE_NO) continue;
    if (!busy || (sl->v[1] >= 0 && (pttl < 0 || sl->v[1] < pttl))) {
      blocker = (size_t)sl->v[0] - 1;
      pttl = sl->v[1] >= 0 ? sl->v[1] : pttl;
    }
    busy = 1;
  }
  if (busy)
    fail_attempt(mr, RL_EBUSY, pttl, blocker);
  else
    fail_attempt(mr, any_error ? RLOCK_EREDIS : RLOCK_ENOQUORUM, -1, 0);
}

static const rl_round_ops acquire_ops = {classify_acquire, acquire_done,
                                         acquire_late, acquire_release};

/* --- attempts and waiting --------------------------------------------------- */

static void retry(rl_req *req) { attempt(req); }

static void fail_attempt(rl_multi_req *mr, int err, int64_t pttl,
                         size_t blocker) {
  rl_req *req = &mr->req;
  rl_client *c = req->lock->client;
  /* The retry policy (retry.c) says when; the set waits in the queue of
   * the lock found held. */
  rl_retry p = {err, pttl, 0, NULL, 0};
  if (rl_retry_next(req, &p) == RL_RETRY_DONE) {
    rl_req_finish(req, p.err);
    return;
  }
  uint64_t ms = p.ms;
  const rlock *held = mr->locks[blocker];
  if (rl_fwait_sleep(&mr->wait, req, rl_lock_channel(held), held->channellen,
                     ms, retry, &c->metrics.waiters) != 0)
    rl_req_finish(req, RLOCK_ENOMEM);
}

static void attempt(rl_req *req) {
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  rl_multi_attempt *a = attempt_new(mr);
  if (a == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  rl_args args;
  rl_args_init(&args);
  rl_args_str(&args, NULL, 0);
  rl_args_i64(&args, (int64_t)(2 * mr->n));
  for (size_t j = 0; j < mr->n; j++) {
    rlock *lock = mr->locks[j];
    rl_args_str(&args, rl_lock_key(lock), lock->keylen);
    rl_args_str(&args, rl_lock_fence(lock), rl_lock_fencelen(lock));
  }
  rl_args_i64(&args, req->lease_ms);
  rl_args_str(&args, req->owner, req->ownerlen);
  rl_args_i64(&args, (int64_t)rl_token_floor(c));
  for (size_t j = 0; j < mr->n; j++) {
    rlock *lock = mr->locks[j];
    /* A lost hold was released everywhere when it was found lost, before
     * this attempt: build on nothing. */
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(lock), lock->keylen,
                               req->owner, req->ownerlen);
    if (h != NULL && h->lost) {
      rl_hold_drop(c, h);
      h = NULL;
    }
    a->base_gen[j] = h != NULL ? h->gen : 0;
    a->want[j] = h != NULL ? h->count + 1 : 1;
    rl_args_i64(&args, a->want[j]);
  }
  rl_args_deadline(&args);
  rl_round *r =
      rl_args_round(&args, c, &acquire_ops, a, RL_FAM(RL_FAM_MULTI_ACQUIRE));
  rl_args_free(&args);
  if (r == NULL) {
    a->refs = 1;
    attempt_unref(a);
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  a->round = r;
  mr->att = a;
  req->round = r;
  req->t_start = rl_now_ms();
  rl_round_send(r);
}

void rl_multi_acquire_start(rl_req *req) {
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  if (!req->owner_is_thread) {
    /* As for one lock: an async owner has one acquisition of a lock in
     * flight at a time. */
    for (size_t j = 0; j < mr->n; j++)
      if (rl_holds_find(&c->pending, rl_lock_key(mr->locks[j]),
                        mr->locks[j]->keylen, req->owner,
                        req->ownerlen) != NULL) {
        rl_req_finish(req, RLOCK_EINVAL);
        return;
      }
    mr->pending = calloc(mr->n, sizeof *mr->pending);
    for (size_t j = 0; mr->pending != NULL && j < mr->n; j++) {
      mr->pending[j] =
          rl_holds_add(&c->pending, rl_lock_key(mr->locks[j]),
                       mr->locks[j]->keylen, req->owner, req->ownerlen);
      if (mr->pending[j] == NULL) {
        rl_req_finish(req, RLOCK_ENOMEM);
        return;
      }
    }
    if (mr->pending == NULL) {
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
  }
  attempt(req);
}

void rl_multi_acquire_end(rl_req *req, int status) {
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  int got = status == RLOCK_OK;
  attempt_end(mr, got);
  rl_fwait_leave(&mr->wait, !got && !rl_client_closing(c));
  if (mr->pending != NULL) {
    for (size_t j = 0; j < mr->n; j++)
      if (mr->pending[j] != NULL) rl_holds_remove(&c->pending, mr->pending[j]);
    free(mr->pending);
    mr->pending = NULL;
  }
  if (!got) {
    rl_metrics *m = &c->metrics;
    switch (status) {
      case RLOCK_ETIMEDOUT: RL_ADD(m->failed_timedout, 1); break;
      case RLOCK_ENOQUORUM: RL_ADD(m->failed_noquorum, 1); break;
      case RLOCK_EREDIS: RL_ADD(m->failed_redis, 1); break;
      case RLOCK_ECLOSED: RL_ADD(m->failed_closed, 1); break;
      case RLOCK_ECANCELED: RL_ADD(m->failed_canceled, 1); break;
      default: RL_ADD(m->failed_other, 1); break;
    }
  }
}
