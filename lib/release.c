/*
 * Unlock and force unlock. Unlock first asks the client's own record: a
 * thread that never acquired the lock here is not its owner, and is told
 * so without a round trip and without touching another owner's lock. A
 * thread that did acquire it but whose hold Redis no longer has (a
 * majority answers "not owner") lost it, and is told that instead.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lock.h"
#include "round.h"
#include "scripts.h"

static int classify_unlock(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->integer;
  if (rep->integer == RL_UNLOCK_RELEASED ||
      rep->integer == RL_UNLOCK_DECREMENTED)
    return RL_VOTE_YES;
  return rep->integer == RL_UNLOCK_NOT_OWNER ? RL_VOTE_NO : RL_VOTE_FAIL;
}

/* The error of a round that was decided NO without a majority of NOs. */
int rl_round_error(const rl_round *r) {
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].error_reply) return RLOCK_EREDIS;
  return RLOCK_ENOQUORUM;
}

static void unlock_done(rl_round *r) {
  rl_req *req = r->data;
  if (req == NULL) return;
  req->round = NULL;
  rl_client *c = req->lock->client;
  rl_hold *h = rl_holds_find(&c->holds, req->lock->key, req->lock->keylen,
                             req->owner, req->ownerlen);
  if (r->outcome == RL_VOTE_YES) {
    if (h != NULL && --h->count <= 0) rl_holds_remove(&c->holds, h);
    rl_req_finish(req, h != NULL ? RLOCK_OK : RLOCK_ENOTOWNER);
  } else if (r->no >= r->quorum) {
    if (h != NULL) rl_holds_remove(&c->holds, h);
    rl_req_finish(req, RLOCK_ELOST);
  } else {
    rl_req_finish(req, rl_round_error(r));
  }
}

static const rl_round_ops unlock_ops = {classify_unlock, unlock_done, NULL,
                                        NULL};

void rl_unlock_start(rl_req *req) {
  rl_client *c = req->lock->client;
  rlock *lock = req->lock;
  rl_hold *h = rl_holds_find(&c->holds, lock->key, lock->keylen, req->owner,
                             req->ownerlen);
  if (h == NULL) {
    rl_req_finish(req, RLOCK_ENOTOWNER);
    return;
  }
  if (h->lost) {
    rl_holds_remove(&c->holds, h);
    rl_req_finish(req, RLOCK_ELOST);
    return;
  }
  char lease[24];
  snprintf(lease, sizeof lease, "%" PRId64, h->lease_ms);
  const char *argv[] = {NULL, "1", lock->key, lease, req->owner,
                        lock->channel};
  size_t len[] = {0, 1, lock->keylen, strlen(lease), req->ownerlen,
                  lock->channellen};
  rl_round *r =
      rl_round_new(c, &unlock_ops, req, RL_SCRIPT_UNLOCK, 6, argv, len);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}

static int classify_int(rl_round *r, int i, const redisReply *rep) {
  if (rep->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  r->slot[i].v[0] = rep->integer;
  return RL_VOTE_YES;
}

static void force_done(rl_round *r) {
  rl_req *req = r->data;
  if (req == NULL) return;
  req->round = NULL;
  rl_req_finish(req, r->outcome == RL_VOTE_YES ? RLOCK_OK : rl_round_error(r));
}

static const rl_round_ops force_ops = {classify_int, force_done, NULL, NULL};

void rl_force_start(rl_req *req) {
  rlock *lock = req->lock;
  const char *argv[] = {NULL, "1", lock->key, lock->channel};
  size_t len[] = {0, 1, lock->keylen, lock->channellen};
  rl_round *r = rl_round_new(lock->client, &force_ops, req, RL_SCRIPT_FORCE,
                             4, argv, len);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}
