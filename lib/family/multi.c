/*
 * rlock_lock_all and rlock_unlock_all: the public calls, the set's order,
 * and the release of a set; the acquisition is multi_kind.c.
 *
 * Why the set is sorted. multi_acquire takes the whole set on a master at
 * once, so the order never decides who waits for whom; but the key order
 * makes every caller's command for one set identical (and a name listed
 * twice is taken once, not twice), and gives a fallback that takes the
 * locks one by one, where one script cannot reach them all (Redis Cluster,
 * when the keys are on different nodes: docs/architecture.md), one global order
 * that cannot deadlock.
 *
 * unlock_all releases one hold of each lock in one round: multi_unlock
 * does on each master what the single unlock does per lock (the owner's
 * last hold deletes whatever the count), and each lock's outcome is
 * decided as rlock_unlock decides it (release.c), from every master's
 * answer (the round waits for all, within the master timeout).
 */
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "multi.h"
#include "ops.h"
#include "quarantine.h"
#include "scripts.h"
#include "util.h"

/* --- building the set ------------------------------------------------------- */

typedef struct entry {
  rlock *lock;
  size_t pos;
} entry;

static int cmp_key(const void *x, const void *y) {
  const entry *a = x, *b = y;
  size_t n = a->lock->keylen < b->lock->keylen ? a->lock->keylen
                                               : b->lock->keylen;
  int c = memcmp(rl_lock_key(a->lock), rl_lock_key(b->lock), n);
  if (c != 0) return c;
  if (a->lock->keylen != b->lock->keylen)
    return a->lock->keylen < b->lock->keylen ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static void multi_free_parts(rl_multi_req *mr) {
  for (size_t j = 0; j < mr->n; j++) rl_lock_unref(mr->locks[j]);
  free(mr->locks);
  free(mr->pos);
  free(mr->said);
  free(mr->which);
  mr->locks = NULL;
  mr->pos = NULL;
  mr->said = NULL;
  mr->which = NULL;
  mr->n = 0;
}

/* Fills mr's set from the caller's: one client, sorted, one per key. 0,
 * RLOCK_EINVAL or RLOCK_ENOMEM. */
static int make_set(rl_multi_req *mr, rlock *const *locks, size_t n) {
  if (locks == NULL || n == 0 || n > RL_MULTI_MAX) return RLOCK_EINVAL;
  for (size_t j = 0; j < n; j++)
    if (locks[j] == NULL || locks[j]->client != locks[0]->client)
      return RLOCK_EINVAL;
  /* The set is taken by one script over the reentrant lock's keys: a
   * fair lock's queue or a read-write lock's sides are not in it. */
  for (size_t j = 0; j < n; j++)
    if (locks[j]->kind != &rl_kind_lock) {
      static const char why[] =
          "rlock_lock_all/rlock_unlock_all take only rlock_get handles "
          "(not fair, read or write ones)";
      rl_client_note_error(locks[j]->client, why, sizeof why - 1);
      return RLOCK_EINVAL;
    }
  entry *e = malloc(n * sizeof *e);
  mr->locks = malloc(n * sizeof *mr->locks);
  mr->pos = malloc(n * sizeof *mr->pos);
  if (e == NULL || mr->locks == NULL || mr->pos == NULL) {
    free(e);
    free(mr->locks);
    free(mr->pos);
    mr->locks = NULL;
    mr->pos = NULL;
    return RLOCK_ENOMEM;
  }
  for (size_t j = 0; j < n; j++) e[j] = (entry){locks[j], j};
  qsort(e, n, sizeof *e, cmp_key);
  size_t m = 0;
  for (size_t j = 0; j < n; j++) {
    if (m > 0 && mr->locks[m - 1]->keylen == e[j].lock->keylen &&
        memcmp(rl_lock_key(mr->locks[m - 1]), rl_lock_key(e[j].lock),
               e[j].lock->keylen) == 0)
      continue; /* listed twice: once (the first listed position kept) */
    mr->locks[m] = e[j].lock;
    mr->pos[m++] = e[j].pos;
    rl_lock_ref(e[j].lock);
  }
  free(e);
  mr->n = m;
  return 0;
}

/* --- unlock_all --------------------------------------------------------------- */

static int classify_unlock(rl_round *r, int i, const redisReply *rep) {
  rl_multi_req *mr = r->data;
  if (mr == NULL) return RL_VOTE_FAIL;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != mr->nwhich)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  for (size_t k = 0; k < mr->nwhich; k++) {
    long long v = rep->element[k]->integer;
    mr->said[(size_t)i * mr->nwhich + k] =
        v == RL_UNLOCK_RELEASED || v == RL_UNLOCK_DECREMENTED ? 1
        : v == RL_UNLOCK_NOT_OWNER                            ? 2
                                                              : 0;
  }
  return RL_VOTE_YES;
}

/* Keeps the error of the lock listed first by the caller. */
static void note_result(rl_multi_req *mr, size_t j, int err, int *status,
                        size_t *at) {
  if (err == RLOCK_OK) return;
  if (*status == RLOCK_OK || mr->pos[j] < *at) {
    *status = err;
    *at = mr->pos[j];
  }
}

static void unlock_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_multi_req *mr = r->data;
  if (mr == NULL) return;
  rl_req *req = &mr->req;
  req->round = NULL;
  rl_client *c = r->client;
  int status = mr->status; /* RLOCK_ELOST from the start, or 0 */
  size_t at = mr->status_at;
  for (size_t k = 0; k < mr->nwhich; k++) {
    size_t j = mr->which[k];
    rlock *lock = mr->locks[j];
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(lock), lock->keylen,
                               req->owner, req->ownerlen);
    int yes = 0, no = 0;
    for (int i = 0; i < r->n; i++) {
      if (r->slot[i].vote != RL_VOTE_YES) continue;
      uint8_t said = mr->said[(size_t)i * mr->nwhich + k];
      yes += said == 1;
      no += said == 2;
    }
    if (yes >= r->quorum) {
      if (h != NULL && --h->count <= 0) {
        RL_ADD(c->metrics.releases, 1);
        rl_hold_drop(c, h);
      }
      if (h == NULL) note_result(mr, j, RLOCK_ENOTOWNER, &status, &at);
    } else if (no >= r->quorum) {
      if (h != NULL) {
        rl_hold_release_everywhere(c, h);
        rl_hold_drop(c, h);
      }
      note_result(mr, j, RLOCK_ELOST, &status, &at);
    } else {
      /* As rlock_unlock: the hold ends here, released everywhere best
       * effort; outer levels are lost and their owner told. */
      if (h != NULL) {
        if (h->count > 1) {
          rl_hold_lost(c, h);
        } else {
          rl_hold_release_everywhere(c, h);
          rl_hold_drop(c, h);
        }
      }
      note_result(mr, j, rl_round_error(r), &status, &at);
    }
  }
  rl_req_finish(req, status);
}

static const rl_round_ops unlock_ops = {classify_unlock, unlock_done, NULL,
                                        NULL};

static void unlock_start(rl_req *req) {
  rl_multi_req *mr = (rl_multi_req *)req;
  rl_client *c = req->lock->client;
  /* Every lock must be the owner's, or nothing is done. */
  for (size_t j = 0; j < mr->n; j++)
    if (rl_holds_find(&c->holds, rl_lock_key(mr->locks[j]),
                      mr->locks[j]->keylen, req->owner,
                      req->ownerlen) == NULL) {
      rl_req_finish(req, RLOCK_ENOTOWNER);
      return;
    }
  mr->which = malloc(mr->n * sizeof *mr->which);
  mr->said = calloc((size_t)c->nmasters * mr->n, 1);
  if (mr->which == NULL || mr->said == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  for (size_t j = 0; j < mr->n; j++) {
    rlock *lock = mr->locks[j];
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(lock), lock->keylen,
                               req->owner, req->ownerlen);
    if (h->lost) { /* as rlock_unlock: dropped, and said */
      rl_hold_drop(c, h);
      note_result(mr, j, RLOCK_ELOST, &mr->status, &mr->status_at);
      continue;
    }
    mr->which[mr->nwhich++] = j;
  }
  if (mr->nwhich == 0) {
    rl_req_finish(req, mr->status);
    return;
  }
  rl_args args;
  rl_args_init(&args);
  rl_args_str(&args, NULL, 0);
  rl_args_i64(&args, (int64_t)mr->nwhich);
  for (size_t k = 0; k < mr->nwhich; k++) {
    rlock *lock = mr->locks[mr->which[k]];
    rl_args_str(&args, rl_lock_key(lock), lock->keylen);
  }
  rl_args_str(&args, req->owner, req->ownerlen);
  for (size_t k = 0; k < mr->nwhich; k++) {
    rlock *lock = mr->locks[mr->which[k]];
    rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(lock), lock->keylen,
                               req->owner, req->ownerlen);
    /* The last release stops the renewal before it is sent; it deletes
     * whatever the count, unless an acquisition of the owner is in
     * flight (its grant must only be decremented). */
    if (h->count == 1) rl_watchdog_cancel(&c->watchdog, &h->wd);
    int last = h->count == 1 &&
               rl_holds_find(&c->pending, rl_lock_key(lock), lock->keylen,
                             req->owner, req->ownerlen) == NULL;
    rl_args_i64(&args, h->lease_ms);
    rl_args_str(&args, last ? "1" : "0", 1);
  }
  rl_round *r =
      rl_args_round(&args, c, &unlock_ops, mr, RL_FAM(RL_FAM_MULTI_UNLOCK));
  rl_args_free(&args);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  r->wait_all = 1;
  req->round = r;
  rl_round_send(r);
}

/* --- cancel -------------------------------------------------------------- */

static int cancel_on_loop(rlock *lock, const char *owner, size_t ownerlen) {
  rl_client *c = lock->client;
  for (rl_list *n = c->active.next; n != &c->active; n = n->next) {
    rl_req *r = rl_container_of(n, rl_req, node);
    if (r->kind != RL_REQ_FAMILY || r->start != rl_multi_acquire_start ||
        r->waiter != NULL || r->deciding)
      continue;
    if (r->ownerlen != ownerlen || memcmp(r->owner, owner, ownerlen) != 0)
      continue;
    rl_multi_req *mr = (rl_multi_req *)r;
    for (size_t j = 0; j < mr->n; j++)
      if (mr->locks[j]->keylen == lock->keylen &&
          memcmp(rl_lock_key(mr->locks[j]), rl_lock_key(lock), lock->keylen) ==
              0) {
        rl_req_finish(r, RLOCK_ECANCELED);
        return 0;
      }
  }
  return RLOCK_ENOTOWNER;
}

static void cancel_start(rl_req *req) {
  rl_req_finish(req, cancel_on_loop(req->lock, req->owner, req->ownerlen));
}

/* --- requests and the public calls ------------------------------------- */

static void multi_end(rl_req *req, int status) {
  rl_multi_req *mr = (rl_multi_req *)req;
  if (mr->op == RL_MULTI_LOCK) rl_multi_acquire_end(req, status);
}

static int init(rl_multi_req *mr, int op, rlock *const *locks, size_t n) {
  memset(mr, 0, sizeof *mr);
  if (locks != NULL && n > 0 && locks[0] != NULL) {
    int rc = rl_family_refused(locks[0]->client, "several locks at once");
    if (rc != 0) return rc;
  }
  mr->op = op;
  mr->req.end = multi_end;
  mr->req.start = op == RL_MULTI_LOCK     ? rl_multi_acquire_start
                  : op == RL_MULTI_UNLOCK ? unlock_start
                                          : cancel_start;
  return make_set(mr, locks, n);
}

static int set_acquire(rl_multi_req *mr, rlock *const *locks, size_t n,
                       int64_t wait_ms, int64_t lease_ms) {
  if ((wait_ms < 0 && wait_ms != RLOCK_WAIT_FOREVER) || locks == NULL ||
      n == 0 || locks[0] == NULL || !rl_lease_check(locks[0], lease_ms))
    return RLOCK_EINVAL;
  int rc = init(mr, RL_MULTI_LOCK, locks, n);
  if (rc != 0) return rc;
  rl_client *c = locks[0]->client;
  mr->req.watchdog = lease_ms == RLOCK_WATCHDOG;
  mr->req.lease_ms = mr->req.watchdog ? c->opts.watchdog_timeout_ms : lease_ms;
  mr->req.deadline = rl_fam_deadline(wait_ms);
  return 0;
}

static int call(rl_multi_req *mr) {
  int rc = rl_fam_call(mr->locks[0], &mr->req, 1, 0);
  multi_free_parts(mr);
  return rc;
}

int rlock_lock_all(rlock *const *locks, size_t n, int64_t wait_ms,
                   int64_t lease_ms) {
  rl_multi_req mr;
  int rc = set_acquire(&mr, locks, n, wait_ms, lease_ms);
  if (rc != 0) return rc;
  return call(&mr);
}

int rlock_unlock_all(rlock *const *locks, size_t n) {
  rl_multi_req mr;
  int rc = init(&mr, RL_MULTI_UNLOCK, locks, n);
  if (rc != 0) return rc;
  return call(&mr);
}

static void async_done(rlock *lock, int status, void *arg) {
  (void)lock;
  rl_multi_req *mr = arg; /* the request itself, freed after this */
  if (mr->cb != NULL) mr->cb(status, mr->arg);
  multi_free_parts(mr);
}

static int post(rl_multi_req *mr, uint64_t owner, rlock_all_cb cb,
                void *arg) {
  mr->cb = cb;
  mr->arg = arg;
  rl_multi_req copy = *mr; /* a failed post frees mr, not the set */
  int rc = rl_fam_post(mr->locks[0], &mr->req, owner, async_done, mr);
  if (rc != 0) multi_free_parts(&copy);
  return rc;
}

int rlock_lock_all_async(rlock *const *locks, size_t n, uint64_t owner,
                         int64_t wait_ms, int64_t lease_ms, rlock_all_cb cb,
                         void *arg) {
  if (cb == NULL) return RLOCK_EINVAL;
  rl_multi_req *mr = malloc(sizeof *mr);
  if (mr == NULL) return RLOCK_ENOMEM;
  int rc = set_acquire(mr, locks, n, wait_ms, lease_ms);
  if (rc != 0) {
    free(mr);
    return rc;
  }
  return post(mr, owner, cb, arg);
}

int rlock_unlock_all_async(rlock *const *locks, size_t n, uint64_t owner,
                           rlock_all_cb cb, void *arg) {
  rl_multi_req *mr = malloc(sizeof *mr);
  if (mr == NULL) return RLOCK_ENOMEM;
  int rc = init(mr, RL_MULTI_UNLOCK, locks, n);
  if (rc != 0) {
    free(mr);
    return rc;
  }
  return post(mr, owner, cb, arg);
}

int rlock_cancel_all_async(rlock *lock, uint64_t owner) {
  if (lock == NULL) return RLOCK_EINVAL;
  rl_client *c = lock->client;
  if (rl_client_on_loop(c)) {
    uv_mutex_lock(&c->qmu);
    int closed = c->closed;
    uv_mutex_unlock(&c->qmu);
    if (closed) return RLOCK_ECLOSED;
    rl_req tmp;
    rl_owner_async(c, owner, &tmp);
    return cancel_on_loop(lock, tmp.owner, tmp.ownerlen);
  }
  rl_multi_req mr;
  int rc = init(&mr, RL_MULTI_CANCEL, &lock, 1);
  if (rc != 0) return rc;
  rc = rl_fam_call(lock, &mr.req, 0, owner);
  multi_free_parts(&mr);
  return rc;
}
