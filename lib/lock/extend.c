/*
 * Explicit extension of a fixed-lease lock: one quorum round of the renew
 * script of the handle's kind for one hold. It succeeds only if the owner still holds the lock on
 * a majority and the new lease, counted from the round's start, leaves
 * validity. Each acquisition may be extended at most max_extensions times:
 * unbounded extension would let a holder that is stuck keep a lock forever.
 */
#include <string.h>

#include "kind.h"
#include "lock.h"
#include "ops.h"
#include "quarantine.h"
#include "resp.h"
#include "round.h"
#include "scripts.h"
#include "util.h"

static int classify_extend(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  /* The kind's renew script for one hold: "1" or "0" (scripts.c,
   * lease_scripts.c). */
  if (rep->type != REDIS_REPLY_STRING || rep->len != 1 ||
      (rep->str[0] != '0' && rep->str[0] != '1'))
    return RL_VOTE_FAIL;
  return rep->str[0] == '1' ? RL_VOTE_YES : RL_VOTE_NO;
}

static void extend_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_req *req = r->data;
  if (req == NULL) return;
  req->round = NULL;
  rl_client *c = r->client;
  rl_hold *h = rl_req_hold(req);
  if (h == NULL || h->gen != req->out_u64) {
    rl_req_finish(req, RLOCK_ENOTOWNER); /* released meanwhile */
    return;
  }
  int64_t drift = rl_drift_ms(c, req->lease_ms);
  int64_t elapsed = (int64_t)(rl_now_ms() - r->t_start);
  if (r->outcome == RL_VOTE_YES && req->lease_ms - elapsed - drift > 0) {
    h->extensions++;
    if (req->lease_ms > h->lease_ms) h->lease_ms = req->lease_ms;
    uint64_t valid = r->t_start + (uint64_t)(req->lease_ms - drift);
    if (valid > h->valid_until_ms) h->valid_until_ms = valid; /* never shortened */
    rl_req_finish(req, RLOCK_OK);
  } else if (r->no > r->n - r->quorum) {
    rl_hold_lost(c, h);
    rl_hold_drop(c, h);
    rl_req_finish(req, RLOCK_ELOST);
  } else {
    rl_req_finish(req, r->outcome == RL_VOTE_YES ? RLOCK_ENOQUORUM
                                                 : rl_round_error(r));
  }
}

const rl_round_ops rl_extend_ops = {classify_extend, extend_done, NULL,
                                        NULL};

void rl_extend_start(rl_req *req) {
  rlock *lock = req->lock;
  rl_client *c = lock->client;
  rl_hold *h = rl_req_live_hold(req);
  if (h == NULL) return;
  if (h->watchdog) {
    rl_req_finish(req, RLOCK_EINVAL);
    return;
  }
  if (h->extensions >= c->opts.max_extensions) {
    rl_req_finish(req, RLOCK_ELIMIT);
    return;
  }
  req->out_u64 = h->gen;
  /* The kind's renew script over this one hold (kind.h): the hold key,
   * and for a read hold the count hash paired with it. */
  const rl_kind *kind = lock->kind;
  int hk = kind->hold, pair = kind->renew_pair;
  char lease[24];
  rl_resp_put_i64(lease, req->lease_ms);
  const char *argv[] = {NULL,
                        pair ? "2" : "1",
                        rl_lock_keyk(lock, hk),
                        pair ? rl_lock_keyk(lock, hk + 1) : lease,
                        pair ? lease : req->owner,
                        req->owner};
  size_t len[] = {0,
                  1,
                  rl_lock_keylenk(lock, hk),
                  pair ? rl_lock_keylenk(lock, hk + 1) : strlen(lease),
                  pair ? strlen(lease) : req->ownerlen,
                  req->ownerlen};
  rl_round *r = rl_round_new(c, &rl_extend_ops, req, kind->renew, pair ? 6 : 5,
                             argv, len);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}
