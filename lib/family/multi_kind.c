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
 *
 * This file is the set's row of the acquisition engine (rl_acq_multi,
 * grants.h; the engine is lib/lock/acquire.c): the ledger, its rules,
 * late replies and the retry policy are the engine's; the set's script,
 * how a reply reads, the per-lock decision and the holds are here.
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

/* The set's part of an attempt's ledger (rl_grants.ext); the ledger's
 * references are the round's, each fence round's, and the request's
 * while open. */
typedef struct rl_multi_attempt {
  size_t n;         /* locks */
  int nm;           /* masters */
  rlock **locks;    /* references, for late grants and undos */
  char *owner;
  size_t ownerlen;
  uint64_t *base_gen; /* per lock: the hold it re-enters, 0 none */
  int64_t *want;      /* per lock: the count its grant sets, which the
                         undo names */
  uint64_t *kept_gen; /* per lock, once kept */
  int64_t *token, *count, *existed; /* per master and lock (i * n + j) */
  uint64_t *out_token; /* per lock: the token to hand out */
  int fences_out, fences_failed;
} rl_multi_attempt;

extern const rl_acq rl_acq_multi;

static void attempt(rl_req *req) { rl_attempt_next(req, &rl_acq_multi); }

/* An attempt that failed: the retry policy (retry.c) says when; a busy
 * one waits in the queue of the lock found held (blocker). */
static void fail_attempt(rl_multi_req *mr, int err, int64_t pttl,
                         size_t blocker) {
  mr->blocker = blocker;
  rl_attempt_failed(&mr->req, &rl_acq_multi, err, pttl, 0, NULL);
}

/* --- the ledger ------------------------------------------------------------- */

static void ext_free(void *ext) {
  rl_multi_attempt *a = ext;
  for (size_t j = 0; j < a->n; j++)
    if (a->locks[j] != NULL) rl_lock_unref(a->locks[j]);
  free(a->locks);
  free(a->base_gen);
  free(a->want);
  free(a->kept_gen);
  free(a->out_token);
  free(a->token);
  free(a->count);
  free(a->existed);
  free(a);
}

static rl_multi_attempt *ext_new(rl_multi_req *mr) {
  rl_client *c = mr->req.lock->client;
  size_t n = mr->n, nm = (size_t)c->nmasters;
  rl_multi_attempt *a = calloc(1, sizeof *a + mr->req.ownerlen + 1);
  if (a == NULL) return NULL;
  a->locks = calloc(n, sizeof *a->locks);
  a->base_gen = calloc(n, sizeof *a->base_gen);
  a->want = calloc(n, sizeof *a->want);
  a->kept_gen = calloc(n, sizeof *a->kept_gen);
  a->out_token = calloc(n, sizeof *a->out_token);
  a->token = calloc(nm * n, sizeof *a->token);
  a->count = calloc(nm * n, sizeof *a->count);
  a->existed = calloc(nm * n, sizeof *a->existed);
  if (!a->locks || !a->base_gen || !a->want || !a->kept_gen ||
      !a->out_token || !a->token || !a->count || !a->existed) {
    ext_free(a);
    return NULL;
  }
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

/* multi_undo to master i: for each lock, one decrement where the owner's
 * count is at least the one this attempt's grant set, behind whatever was
 * sent there before. */
static void undo_master(rl_grants *g, int i) {
  rl_multi_attempt *a = g->ext;
  g->slot[i] |= RL_G_UNDONE;
  rl_args args;
  rl_args_init(&args);
  rl_args_str(&args, NULL, 0);
  rl_args_i64(&args, (int64_t)a->n);
  for (size_t j = 0; j < a->n; j++)
    rl_args_str(&args, rl_lock_key(a->locks[j]), a->locks[j]->keylen);
  rl_args_str(&args, a->owner, a->ownerlen);
  for (size_t j = 0; j < a->n; j++) rl_args_i64(&args, a->want[j]);
  rl_round *u =
      rl_args_round(&args, g->c, NULL, NULL, RL_FAM(RL_FAM_MULTI_UNDO));
  rl_args_free(&args);
  if (u != NULL) rl_round_send_one(u, i);
  /* Out of memory: the grants expire with their lease. */
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

/* The engine's reading of a reply (rl_acq.read): a grant's per-lock
 * triples go into the ledger. */
static int read_reply(rl_round *r, int i, const redisReply *rep,
                      rl_round_slot *sl, int late) {
  rl_grants *g = r->data;
  if (g == NULL) return 2;
  rl_multi_attempt *a = g->ext;
  int gr = parse(rep, a->n, sl, a, i);
  if (gr == 1 && !late)
    for (size_t j = 0; j < a->n; j++)
      rl_note_token(r->client, a->token[(size_t)i * a->n + j]);
  return gr;
}

static void late(rl_round *r, int i, const rl_round_slot *got) {
  rl_grants *g = r->data;
  if (g != NULL) rl_grants_late(g, i, got != NULL);
}

/* Kept: a late grant joins each lock's hold. */
static void kept_late(rl_grants *g, int i) {
  rl_multi_attempt *a = g->ext;
  for (size_t j = 0; j < a->n; j++) {
    rl_hold *h = rl_holds_find(&g->c->holds, rl_lock_key(a->locks[j]),
                               a->locks[j]->keylen, a->owner, a->ownerlen);
    if (h != NULL && h->gen == a->kept_gen[j]) h->masters |= 1ull << i;
  }
}

/* --- deciding ------------------------------------------------------------- */

/* Each lock becomes, or adds to, the owner's hold, as a lock's
 * acquisition leaves it (rl_acquire_hold). */
static void commit(rl_multi_req *mr) {
  rl_req *req = &mr->req;
  rl_client *c = req->lock->client;
  rl_grants *g = req->grants;
  rl_multi_attempt *a = g->ext;
  for (size_t j = 0; j < mr->n; j++) {
    rl_hold *h = rl_acquire_hold(req, mr->locks[j], a->out_token[j]);
    if (h == NULL) {
      /* Out of memory: the locks committed so far are held (an unlock
       * releases them); the rest is given back with the attempt. */
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
    a->kept_gen[j] = h->gen;
    RL_ADD(c->metrics.acquisitions, 1);
    RL_ADD(c->metrics.acquisitions_kind[RL_KIND_LOCK], 1);
  }
  g->state = RL_G_KEPT;
  RL_ADD(c->metrics.lock_all_acquisitions, 1);
  rl_hist_observe(&c->metrics.wait, rl_now_ms() - req->t_post);
  rl_attempt_end(req, 1, 0);
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

/* One write-back round per first-acquired lock whose token a majority
 * does not store yet (fence.c), all at once; the set is held when each
 * reached a majority. */
static void fence_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_grants *g = r->data;
  if (g == NULL) return;
  rl_multi_attempt *a = g->ext;
  if (r->outcome != RL_VOTE_YES) a->fences_failed++;
  if (--a->fences_out > 0) return;
  rl_multi_req *mr = (rl_multi_req *)g->req;
  if (mr == NULL) return; /* finished: its grants were given back */
  if (!a->fences_failed && rl_acquire_valid(&mr->req)) {
    commit(mr);
    return;
  }
  rl_attempt_end(&mr->req, 0, 0);
  fail_attempt(mr, RLOCK_ENOQUORUM, -1, 0);
}

static void fence_release(rl_round *r) {
  if (r->data != NULL) rl_grants_unref(r->data);
}

static const rl_round_ops fence_ops = {rl_fence_classify, fence_done, NULL,
                                       fence_release};

/* Tokens of the first acquisitions; written back where needed, then
 * committed. */
static void hand_out_tokens(rl_multi_req *mr, rl_round *r) {
  rl_grants *g = mr->req.grants;
  rl_multi_attempt *a = g->ext;
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
    int rc = rl_fence_write_back(c, &in, &fence_ops, g, &f);
    if (rc < 0) {
      for (size_t k = 0; k < nneed; k++) rl_round_discard(need[k]);
      rl_req_finish(&mr->req, RLOCK_ENOMEM);
      return;
    }
    if (rc > 0) {
      g->refs++;
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
  rl_multi_attempt *a = req->grants->ext;
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
    rl_attempt_end(req, 0, 0);
    attempt(req);
    return;
  }
  hand_out_tokens(mr, r);
}

/* The engine's decision (rl_acq.decide) on a settled round. */
static void decide(rl_req *req, rl_round *r, rl_grants *g) {
  (void)g;
  rl_multi_req *mr = (rl_multi_req *)req;
  if (r->outcome == RL_VOTE_YES && rl_acquire_valid(req)) {
    won(mr, r);
    return;
  }
  rl_attempt_end(req, 0, 0);
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

/* --- attempts and waiting --------------------------------------------------- */

static void retry(rl_req *req) { attempt(req); }

/* Sleeps as the retry policy said, in the queue of the lock found held:
 * until its unlock message, or its holder's lease. */
static void wait_next(rl_req *req, int how, const rl_retry *p) {
  (void)how;
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  const rlock *held = mr->locks[mr->blocker];
  if (rl_fwait_sleep(&mr->wait, req, rl_lock_channel(held), held->channellen,
                     p->ms, retry, &c->metrics.waiters) != 0)
    rl_req_finish(req, RLOCK_ENOMEM);
}

/* The engine's next attempt (rl_acq.round): the ledger with the set's
 * part, and the round of multi_acquire. */
static rl_round *make_round(rl_req *req, rl_grants **out) {
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  rl_grants *g = rl_grants_new_kind(req, &rl_acq_multi);
  *out = g;
  rl_multi_attempt *a = g != NULL ? ext_new(mr) : NULL;
  if (a == NULL) return NULL;
  g->ext = a;
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
      rl_args_round(&args, c, &rl_acquire_ops, g, RL_FAM(RL_FAM_MULTI_ACQUIRE));
  rl_args_free(&args);
  return r;
}

/* The set's commit goes through its own write-back rounds (fence_done). */
static void commit_req(rl_req *req) { commit((rl_multi_req *)req); }

const rl_acq rl_acq_multi = {
    .script = "multi_acquire",
    .round = make_round,
    .read = read_reply,
    .undo = undo_master,
    .late = late,
    .decide = decide,
    .kept_late = kept_late,
    .commit = commit_req,
    .wait = wait_next,
    .free = ext_free,
};

void rl_multi_acquire_start(rl_req *req) {
  rl_multi_req *mr = (rl_multi_req *)req;
  if (!req->owner_is_thread) {
    /* As for one lock, each of the set's (a set never names one lock
     * twice: multi.c). */
    mr->pending = calloc(mr->n, sizeof *mr->pending);
    if (mr->pending == NULL) {
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
    for (size_t j = 0; j < mr->n; j++) {
      int rc = rl_acquire_mark_pending(req, mr->locks[j], &mr->pending[j]);
      if (rc != 0) {
        rl_req_finish(req, rc);
        return;
      }
    }
  }
  attempt(req);
}

void rl_multi_acquire_end(rl_req *req, int status) {
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  int got = status == RLOCK_OK;
  rl_attempt_end(req, got, 0);
  rl_fwait_leave(&mr->wait, !got && !rl_client_closing(c));
  if (mr->pending != NULL) {
    for (size_t j = 0; j < mr->n; j++)
      if (mr->pending[j] != NULL) rl_holds_remove(&c->pending, mr->pending[j]);
    free(mr->pending);
    mr->pending = NULL;
  }
  if (!got) rl_metrics_count_failure(&c->metrics, status);
}
