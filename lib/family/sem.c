/*
 * Semaphore handles, their public calls, release and the queries; the
 * holds are sem_hold.c, the acquisition sem_kind.c, renewal
 * sem_renew.c.
 *
 * Release gives back the owner's most recently acquired slots, named, to
 * every master. A slot held by a majority need not be on every master, so
 * each master frees those listed that are the owner's and says which
 * (sem_scripts.c): releasing by name is idempotent, which is what lets a
 * release that did not reach a majority be sent again without harm. A
 * listed slot that a master which had granted it no longer has means the
 * owner's lease ran out there (one lease covers all of an owner's slots on
 * a master): those permits were lost, and the others are checked against
 * that master too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "quarantine.h"
#include "scripts.h"
#include "sem_hold.h"
#include "sem_kind.h"
#include "util.h"

#define RL_SEM_MAX_PERMITS 100000

/* --- handles -------------------------------------------------------------- */

int rlock_sem_get(rlock_client *client, const char *name, int64_t permits,
                  rlock_sem **out) {
  if (out == NULL) return RLOCK_EINVAL;
  *out = NULL;
  if (client == NULL || permits < 1 || permits > RL_SEM_MAX_PERMITS)
    return RLOCK_EINVAL;
  if (rl_client_forked(client)) return RLOCK_EFORKED;
  rlock_sem *sem = calloc(1, sizeof *sem);
  if (sem == NULL) return RLOCK_ENOMEM;
  int rc = rl_object_new(client, name, ":s", &sem->obj);
  if (rc != 0) {
    free(sem);
    return rc;
  }
  sem->tkeylen = sem->obj->keylen + 2;
  sem->tkey = malloc(sem->tkeylen + 1);
  if (sem->tkey == NULL) {
    rl_lock_unref(sem->obj);
    free(sem);
    return RLOCK_ENOMEM;
  }
  memcpy(sem->tkey, rl_lock_key(sem->obj), sem->obj->keylen);
  memcpy(sem->tkey + sem->obj->keylen, ":t", 3);
  sem->permits = permits;
  atomic_init(&sem->refs, 1);
  *out = sem;
  return 0;
}

void rlock_sem_free(rlock_sem *sem) {
  if (sem != NULL) rl_sem_unref(sem);
}

const char *rlock_sem_name(const rlock_sem *sem) {
  return sem != NULL ? rl_lock_text(sem->obj) : NULL;
}

void rlock_sem_set_lost_cb(rlock_sem *sem, rlock_sem_lost_cb cb, void *arg) {
  if (sem == NULL) return;
  atomic_store(&sem->lost_arg, arg);
  atomic_store(&sem->lost_cb, cb);
}

void rlock_sem_set_risk_cb(rlock_sem *sem, rlock_sem_risk_cb cb, void *arg) {
  if (sem == NULL) return;
  atomic_store(&sem->risk_arg, arg);
  atomic_store(&sem->risk_cb, cb);
}

/* --- holds ---------------------------------------------------------------- */

/* The owner's live hold, or NULL after finishing req: RLOCK_ENOTOWNER
 * without one, RLOCK_ELOST (and the record dropped) for a lost one. */
static rl_hold *live_hold(rl_sem_req *sr) {
  rl_client *c = sr->req.lock->client;
  rl_hold *h = rl_sem_hold_find(c, sr->sem, sr->req.owner, sr->req.ownerlen);
  if (h == NULL) {
    rl_req_finish(&sr->req, RLOCK_ENOTOWNER);
    return NULL;
  }
  if (h->lost) {
    rl_sem_hold_drop(c, h);
    rl_req_finish(&sr->req, RLOCK_ELOST);
    return NULL;
  }
  return h;
}

/* --- release -------------------------------------------------------------- */

static int classify_release(rl_round *r, int i, const redisReply *rep) {
  rl_sem_req *sr = r->data;
  if (sr == NULL) return RL_VOTE_FAIL;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 + sr->nrel)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  for (size_t j = 0; j < sr->nrel; j++)
    sr->said[(size_t)i * sr->nrel + j] =
        rep->element[2 + j]->integer == 1 ? 1 : 2;
  return RL_VOTE_YES;
}

/* Removes the released slots from the hold (they are the last nrel). */
static void shrink_hold(rl_client *c, rl_hold *h, size_t nrel) {
  rl_permits *p = rl_permits_of(h);
  p->n -= nrel;
  h->count = (int64_t)p->n;
  RL_ADD(c->metrics.sem_permits_held, -(int64_t)nrel);
  if (p->n == 0) rl_sem_hold_drop(c, h);
}

static void release_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_sem_req *sr = r->data;
  if (sr == NULL) return;
  rl_req *req = &sr->req;
  req->round = NULL;
  rl_client *c = r->client;
  rl_hold *h = rl_sem_hold_find(c, sr->sem, req->owner, req->ownerlen);
  if (h == NULL || h->lost) { /* lost while the release was out */
    if (h != NULL) rl_sem_hold_drop(c, h);
    rl_req_finish(req, RLOCK_ELOST);
    return;
  }
  /* Per released slot: masters that freed it; masters that had granted
   * it and no longer have it (the owner's lease ran out there). */
  int all_freed = 1;
  uint64_t gone = 0;
  for (size_t j = 0; j < sr->nrel; j++) {
    int freed = 0;
    for (int i = 0; i < r->n; i++) {
      if (r->slot[i].vote != RL_VOTE_YES) continue;
      uint8_t said = sr->said[(size_t)i * sr->nrel + j];
      freed += said == 1;
      if (said == 2 && (sr->relmask[j] & (1ull << i))) gone |= 1ull << i;
    }
    if (freed < r->quorum) all_freed = 0;
  }
  shrink_hold(c, h, sr->nrel);
  h = rl_sem_hold_find(c, sr->sem, req->owner, req->ownerlen);
  if (all_freed) {
    RL_ADD(c->metrics.sem_releases, 1);
    rl_req_finish(req, RLOCK_OK);
    return;
  }
  /* Not freed by a majority: sent again, best effort (idempotent). */
  for (int i = 0; i < c->nmasters; i++)
    rl_sem_send_release(c, sr->sem, req->owner, req->ownerlen, sr->rel,
                        sr->nrel, i);
  if (gone != 0) RL_ADD(c->metrics.sem_permits_lost, (int64_t)sr->nrel);
  if (gone != 0 && h != NULL) {
    /* The masters that lost these lost all of the owner's there. */
    rl_permits *p = rl_permits_of(h);
    for (size_t j = 0; j < p->n; j++) p->mask[j] &= ~gone;
    if (!rl_sem_hold_intact(c, h)) {
      rl_sem_drop_everywhere(c, h);
      RL_ADD(c->metrics.sem_permits_lost, (int64_t)p->n);
      rl_sem_hold_drop(c, h);
    }
  }
  rl_req_finish(req, gone != 0 ? RLOCK_ELOST : rl_round_error(r));
}

static void release_release(rl_round *r) { (void)r; }

static const rl_round_ops release_ops = {classify_release, release_done, NULL,
                                        release_release};

static void release_start(rl_req *req) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_client *c = req->lock->client;
  rl_hold *h = live_hold(sr);
  if (h == NULL) return;
  rl_permits *p = rl_permits_of(h);
  if (sr->n > h->count) {
    rl_req_finish(req, RLOCK_ENOTOWNER); /* nothing changed */
    return;
  }
  size_t n = (size_t)sr->n;
  sr->rel = malloc(n * sizeof *sr->rel);
  sr->relmask = malloc(n * sizeof *sr->relmask);
  sr->said = calloc((size_t)c->nmasters * n, 1);
  if (sr->rel == NULL || sr->relmask == NULL || sr->said == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  sr->nrel = n;
  memcpy(sr->rel, p->slot + p->n - n, n * sizeof *sr->rel);
  memcpy(sr->relmask, p->mask + p->n - n, n * sizeof *sr->relmask);
  /* The last release stops the renewal before it is sent. */
  if ((size_t)h->count == n && c->family && c->family->watchdog_open)
    rl_watchdog_cancel(&c->family->watchdog, &h->wd);
  rl_args a;
  rl_args_init(&a);
  rl_args_str(&a, NULL, 0);
  rl_args_str(&a, "2", 1);
  rl_args_str(&a, rl_lock_key(sr->sem->obj), sr->sem->obj->keylen);
  rl_args_str(&a, sr->sem->tkey, sr->sem->tkeylen);
  rl_args_str(&a, req->owner, req->ownerlen);
  for (size_t k = 0; k < n; k++) rl_args_i64(&a, sr->rel[k]);
  rl_round *r = rl_args_round(&a, c, &release_ops, sr,
                              RL_FAM(RL_FAM_SEM_RELEASE));
  rl_args_free(&a);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  /* Every master's answer is needed to tell a lost permit from a master
   * that never had it; the master timeout bounds the wait. */
  r->wait_all = 1;
  req->round = r;
  rl_round_send(r);
}

/* --- queries -------------------------------------------------------------- */

/* Notes a limit mismatch in the client's last error, naming both. */
static void note_conflict(rlock_sem *sem, int64_t stored) {
  char why[200];
  int n = snprintf(why, sizeof why,
                   "semaphore %.100s has a limit of %lld permits; this "
                   "handle's is %lld",
                   rl_lock_text(sem->obj), (long long)stored,
                   (long long)sem->permits);
  rl_client_note_error(sem->obj->client, why, (size_t)n);
}

static int classify_available(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 5) return RL_VOTE_FAIL;
  for (size_t k = 0; k < 5; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->element[0]->integer; /* limit, -1 none */
  r->slot[i].v[1] = rep->element[1]->integer; /* free */
  return RL_VOTE_YES;
}

static void available_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_sem_req *sr = r->data;
  if (sr == NULL) return;
  sr->req.round = NULL;
  if (r->outcome != RL_VOTE_YES) {
    rl_req_finish(&sr->req, rl_round_error(r));
    return;
  }
  int64_t v[64];
  int k = 0;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->vote != RL_VOTE_YES) continue;
    if (sl->v[0] >= 0 && sl->v[0] != sr->sem->permits) {
      note_conflict(sr->sem, sl->v[0]);
      rl_req_finish(&sr->req, RLOCK_ECONFLICT);
      return;
    }
    v[k++] = sl->v[0] < 0 ? sr->sem->permits : sl->v[1];
  }
  sr->req.out_i64 = rl_fam_quorum_value(v, k, r->quorum, 1);
  rl_req_finish(&sr->req, RLOCK_OK);
}

static const rl_round_ops available_ops = {classify_available, available_done,
                                           NULL, NULL};

static int classify_int(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  return rep->type == REDIS_REPLY_INTEGER ? RL_VOTE_YES : RL_VOTE_FAIL;
}

static void reset_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_sem_req *sr = r->data;
  if (sr == NULL) return;
  sr->req.round = NULL;
  rl_req_finish(&sr->req,
                r->outcome == RL_VOTE_YES ? RLOCK_OK : rl_round_error(r));
}

static const rl_round_ops reset_ops = {classify_int, reset_done, NULL, NULL};

static void query_start(rl_req *req) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_client *c = req->lock->client;
  rlock_sem *sem = sr->sem;
  if (sr->op == RL_SEM_OP_HELD || sr->op == RL_SEM_OP_TOKEN) {
    rl_hold *h = rl_sem_hold_find(c, sem, req->owner, req->ownerlen);
    if (h != NULL && h->lost) h = NULL;
    req->out_i64 = h != NULL ? h->count : 0;
    req->out_u64 = h != NULL ? h->token : 0;
    rl_req_finish(req, sr->op == RL_SEM_OP_TOKEN && h == NULL
                           ? RLOCK_ENOTOWNER
                           : RLOCK_OK);
    return;
  }
  rl_args a;
  rl_args_init(&a);
  rl_args_str(&a, NULL, 0);
  rl_args_str(&a, "2", 1);
  rl_args_str(&a, rl_lock_key(sem->obj), sem->obj->keylen);
  rl_args_str(&a, sem->tkey, sem->tkeylen);
  if (sr->op == RL_SEM_OP_AVAILABLE) rl_args_str(&a, "", 0);
  rl_round *r = rl_args_round(
      &a, c, sr->op == RL_SEM_OP_AVAILABLE ? &available_ops : &reset_ops, sr,
      RL_FAM(sr->op == RL_SEM_OP_AVAILABLE ? RL_FAM_SEM_AVAILABLE
                                           : RL_FAM_SEM_FORCE));
  rl_args_free(&a);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}

/* --- cancel ----------------------------------------------------------------- */

static int cancel_on_loop(rlock_sem *sem, const char *owner, size_t ownerlen) {
  rl_client *c = sem->obj->client;
  for (rl_list *n = c->active.next; n != &c->active; n = n->next) {
    rl_req *r = rl_container_of(n, rl_req, node);
    if (r->kind != RL_REQ_FAMILY || r->start != rl_sem_acquire_start ||
        r->waiter != NULL || r->deciding)
      continue;
    if (r->lock->keylen != sem->obj->keylen ||
        memcmp(rl_lock_key(r->lock), rl_lock_key(sem->obj), sem->obj->keylen) !=
            0)
      continue;
    if (r->ownerlen != ownerlen || memcmp(r->owner, owner, ownerlen) != 0)
      continue;
    rl_req_finish(r, RLOCK_ECANCELED); /* its grants are given back */
    return 0;
  }
  return RLOCK_ENOTOWNER;
}

static void cancel_start(rl_req *req) {
  rl_sem_req *sr = (rl_sem_req *)req;
  rl_req_finish(req, cancel_on_loop(sr->sem, req->owner, req->ownerlen));
}

/* --- requests and the public calls ------------------------------------- */

static void free_parts(rl_sem_req *sr) {
  free(sr->hint);
  free(sr->rel);
  free(sr->relmask);
  free(sr->said);
  sr->hint = NULL;
  sr->rel = NULL;
  sr->relmask = NULL;
  sr->said = NULL;
}

static void sem_end(rl_req *req, int status) {
  rl_sem_req *sr = (rl_sem_req *)req;
  if (sr->op == RL_SEM_OP_ACQUIRE) rl_sem_acquire_end(req, status);
  free_parts(sr);
}

static void set_op(rl_sem_req *sr, rlock_sem *sem, int op) {
  sr->sem = sem;
  sr->op = op;
  sr->req.end = sem_end;
  switch (op) {
    case RL_SEM_OP_ACQUIRE: sr->req.start = rl_sem_acquire_start; break;
    case RL_SEM_OP_RELEASE: sr->req.start = release_start; break;
    case RL_SEM_OP_CANCEL: sr->req.start = cancel_start; break;
    default: sr->req.start = query_start; break;
  }
}

/* Runs a blocking request of the calling thread. */
static int call_thread(rlock_sem *sem, rl_sem_req *sr) {
  return rl_fam_call(sem->obj, &sr->req, 1, 0);
}

static void async_done(rlock *obj, int status, void *arg) {
  (void)obj;
  rl_sem_req *sr = arg; /* the request itself, freed after this */
  rlock_sem *sem = sr->sem;
  if (sr->cb != NULL) sr->cb(sem, status, sr->arg);
  rl_sem_unref(sem);
}

static int post_async(rlock_sem *sem, rl_sem_req *sr, uint64_t owner,
                      rlock_sem_cb cb, void *arg) {
  sr->cb = cb;
  sr->arg = arg;
  rl_sem_ref(sem);
  int rc = rl_fam_post(sem->obj, &sr->req, owner, async_done, sr);
  if (rc != 0) rl_sem_unref(sem); /* sr is freed */
  return rc;
}

static int acquire_args_ok(rlock_sem *sem, int64_t n, int64_t wait_ms,
                           int64_t lease_ms) {
  return n >= 1 && n <= sem->permits &&
         (wait_ms == RLOCK_WAIT_FOREVER || wait_ms >= 0) &&
         rl_lease_check(sem->obj, lease_ms);
}

static void set_acquire(rl_sem_req *sr, rlock_sem *sem, int64_t n,
                        int64_t wait_ms, int64_t lease_ms) {
  rl_client *c = sem->obj->client;
  set_op(sr, sem, RL_SEM_OP_ACQUIRE);
  sr->n = n;
  sr->req.watchdog = lease_ms == RLOCK_WATCHDOG;
  sr->req.lease_ms = sr->req.watchdog ? c->opts.watchdog_timeout_ms : lease_ms;
  sr->req.deadline = rl_fam_deadline(wait_ms);
}

int rlock_sem_acquire(rlock_sem *sem, int64_t n, int64_t wait_ms,
                      int64_t lease_ms) {
  if (sem == NULL || !acquire_args_ok(sem, n, wait_ms, lease_ms))
    return RLOCK_EINVAL;
  rl_sem_req sr;
  memset(&sr, 0, sizeof sr);
  set_acquire(&sr, sem, n, wait_ms, lease_ms);
  return call_thread(sem, &sr);
}

int rlock_sem_acquire_async(rlock_sem *sem, uint64_t owner, int64_t n,
                            int64_t wait_ms, int64_t lease_ms,
                            rlock_sem_cb cb, void *arg) {
  if (sem == NULL || cb == NULL || !acquire_args_ok(sem, n, wait_ms, lease_ms))
    return RLOCK_EINVAL;
  rl_sem_req *sr = calloc(1, sizeof *sr);
  if (sr == NULL) return RLOCK_ENOMEM;
  set_acquire(sr, sem, n, wait_ms, lease_ms);
  return post_async(sem, sr, owner, cb, arg);
}

int rlock_sem_release(rlock_sem *sem, int64_t n) {
  if (sem == NULL || n < 1 || n > sem->permits) return RLOCK_EINVAL;
  rl_sem_req sr;
  memset(&sr, 0, sizeof sr);
  set_op(&sr, sem, RL_SEM_OP_RELEASE);
  sr.n = n;
  return call_thread(sem, &sr);
}

int rlock_sem_release_async(rlock_sem *sem, uint64_t owner, int64_t n,
                            rlock_sem_cb cb, void *arg) {
  if (sem == NULL || n < 1 || n > sem->permits) return RLOCK_EINVAL;
  rl_sem_req *sr = calloc(1, sizeof *sr);
  if (sr == NULL) return RLOCK_ENOMEM;
  set_op(sr, sem, RL_SEM_OP_RELEASE);
  sr->n = n;
  return post_async(sem, sr, owner, cb, arg);
}

int rlock_sem_available(rlock_sem *sem, int64_t *n) {
  if (sem == NULL || n == NULL) return RLOCK_EINVAL;
  rl_sem_req sr;
  memset(&sr, 0, sizeof sr);
  set_op(&sr, sem, RL_SEM_OP_AVAILABLE);
  int rc = call_thread(sem, &sr);
  if (rc == 0) *n = sr.req.out_i64;
  return rc;
}

int rlock_sem_reset(rlock_sem *sem) {
  if (sem == NULL) return RLOCK_EINVAL;
  rl_sem_req sr;
  memset(&sr, 0, sizeof sr);
  set_op(&sr, sem, RL_SEM_OP_RESET);
  return call_thread(sem, &sr);
}

/* A question about an owner's hold: no round trip. On the loop thread it
 * reads the record directly (a blocking call would deadlock there). */
static int owner_query(rlock_sem *sem, int is_thread, uint64_t owner,
                       int op, int64_t *n, uint64_t *token) {
  rl_client *c = sem->obj->client;
  rl_sem_req sr;
  memset(&sr, 0, sizeof sr);
  set_op(&sr, sem, op);
  int rc;
  if (!is_thread && rl_client_on_loop(c)) {
    uv_mutex_lock(&c->qmu);
    int closed = c->closed;
    uv_mutex_unlock(&c->qmu);
    if (closed) return RLOCK_ECLOSED;
    rl_owner_async(c, owner, &sr.req);
    rl_hold *h = rl_sem_hold_find(c, sem, sr.req.owner, sr.req.ownerlen);
    if (h != NULL && h->lost) h = NULL;
    sr.req.out_i64 = h ? h->count : 0;
    sr.req.out_u64 = h ? h->token : 0;
    rc = op == RL_SEM_OP_TOKEN && h == NULL ? RLOCK_ENOTOWNER : RLOCK_OK;
  } else {
    rc = rl_fam_call(sem->obj, &sr.req, is_thread, owner);
  }
  if (rc == 0 && n != NULL) *n = sr.req.out_i64;
  if (rc == 0 && token != NULL) *token = sr.req.out_u64;
  return rc;
}

int rlock_sem_held(rlock_sem *sem, int64_t *n) {
  if (sem == NULL || n == NULL) return RLOCK_EINVAL;
  return owner_query(sem, 1, 0, RL_SEM_OP_HELD, n, NULL);
}

int rlock_sem_owner_held(rlock_sem *sem, uint64_t owner, int64_t *n) {
  if (sem == NULL || n == NULL) return RLOCK_EINVAL;
  return owner_query(sem, 0, owner, RL_SEM_OP_HELD, n, NULL);
}

int rlock_sem_fencing_token(rlock_sem *sem, uint64_t *token) {
  if (sem == NULL || token == NULL) return RLOCK_EINVAL;
  return owner_query(sem, 1, 0, RL_SEM_OP_TOKEN, NULL, token);
}

int rlock_sem_owner_fencing_token(rlock_sem *sem, uint64_t owner,
                                  uint64_t *token) {
  if (sem == NULL || token == NULL) return RLOCK_EINVAL;
  return owner_query(sem, 0, owner, RL_SEM_OP_TOKEN, NULL, token);
}

int rlock_sem_cancel_async(rlock_sem *sem, uint64_t owner) {
  if (sem == NULL) return RLOCK_EINVAL;
  rl_client *c = sem->obj->client;
  rl_sem_req sr;
  memset(&sr, 0, sizeof sr);
  set_op(&sr, sem, RL_SEM_OP_CANCEL);
  if (rl_client_on_loop(c)) {
    uv_mutex_lock(&c->qmu);
    int closed = c->closed;
    uv_mutex_unlock(&c->qmu);
    if (closed) return RLOCK_ECLOSED;
    rl_owner_async(c, owner, &sr.req);
    return cancel_on_loop(sem, sr.req.owner, sr.req.ownerlen);
  }
  return rl_fam_call(sem->obj, &sr.req, 0, owner);
}
