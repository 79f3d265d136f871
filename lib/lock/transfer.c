/*
 * Hand-off in one round trip. When a thread or async owner of
 * this client waits for a reentrant lock that another owner of the same
 * client is releasing for the last time, the unlock is sent as a transfer
 * (scripts.c, transfer_lua): where the releasing owner's count reaches 0,
 * the script gives the lock to the waiter as an acquisition would (its
 * field set to 1, its lease, the fencing counter bumped) and publishes
 * nothing, since the lock is never free. The waiter is granted when that
 * reply arrives, without the unlock message and without an acquire round
 * trip of its own: one round trip instead of two.
 *
 * Why it is as safe as an unlock followed by an acquisition:
 *  - The transfer round is an attempt of the waiter. It has the waiter's
 *    grants ledger (grants.h), so its grants are kept or given back by the
 *    rules of acquire.c: the waiter holds the lock only when a majority of
 *    servers (duplicates and masters in restart quarantine not counted)
 *    granted it and the validity, counted from before the first send, is
 *    still positive; the token is the largest granted, written back as any
 *    first acquisition's. When the grants fall short, every grant is
 *    undone (the undo deletes the waiter's field and publishes: the lock
 *    is then free there) and the waiter goes back to waiting; a grant
 *    that lands after that is undone by the ledger's late rule. A waiter
 *    cancelled, timed out or closed while the transfer is in flight
 *    abandons the ledger as any attempt does: its grants, and those still
 *    to come, are undone. No grant outlives its request: the script
 *    grants nothing after the master-clock deadline of the command, as
 *    acquire does, and then only releases (and publishes).
 *  - For the releasing owner the round is its unlock: a master that
 *    transferred, released or decremented votes yes, one where the owner
 *    is gone votes no, and the unlock is decided by the rules of
 *    release.c (its outcome function), whatever becomes of the grant: either
 *    way the lock is no longer the releasing owner's.
 *  - Only a waiter between attempts is taken (pubwait.c,
 *    rl_pubsub_handoff_waiter), and it is claimed in its wait queue as if
 *    an event had started its attempt: events that come meanwhile poke
 *    it, and a transfer that fails sends it back to sleep (or at once to
 *    a new attempt, if poked) as any failed attempt.
 *  - The new holder's watchdog starts as at any grant (acquire.c's
 *    commit); the releasing owner's stopped before the unlock was sent.
 *  - Other clients' waiters hear nothing of a hand-off and sleep on up to
 *    the holder's PTTL; a run of hand-offs is bounded (pubwait.c), after
 *    which an unlock publishes.
 *
 * Only the reentrant lock: its hash holds one owner and its waiters are
 * not queued on the masters. The fair lock and the read-write lock's
 * sides choose in Lua whom an unlock wakes, and keep their messages.
 */
#include "transfer.h"

#include <string.h>

#include "grants.h"
#include "pubsub.h"
#include "quarantine.h"
#include "resp.h"
#include "round.h"
#include "scripts.h"
#include "util.h"
#include "waitq.h"

/* A grant reply ({1, token, 1, 0}, acquire's) or 0 ({0, code}). */
static int read_grant(const redisReply *rep, rl_round_slot *sl) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
      rep->element[0]->type != REDIS_REPLY_INTEGER)
    return -1;
  if (rep->element[0]->integer == 1)
    return rl_parse_lock_grant(rep, sl) == 1 ? 1 : -1;
  if (rep->element[1]->type != REDIS_REPLY_INTEGER) return -1;
  sl->v[0] = rep->element[1]->integer; /* the unlock's code */
  return 0;
}

/* The releasing owner's vote: a transfer, a release or a decrement is
 * yes; a master where the owner is gone says no. */
static int classify_transfer(rl_round *r, int i, const redisReply *rep) {
  rl_grants *g = r->data;
  rl_round_slot *sl = &r->slot[i];
  if (g != NULL) g->slot[i] |= RL_G_FINAL;
  int gr = read_grant(rep, sl);
  if (gr < 0) {
    rl_client_note_error(r->client, "unexpected reply to transfer", 28);
    sl->error_reply = 1;
    return RL_VOTE_FAIL;
  }
  if (gr == 1) {
    sl->granted = 1;
    rl_note_token(r->client, sl->v[0]);
    if (g != NULL) g->slot[i] |= RL_G_GRANTED;
    return RL_VOTE_YES;
  }
  if (sl->v[0] == RL_UNLOCK_RELEASED || sl->v[0] == RL_UNLOCK_DECREMENTED)
    return RL_VOTE_YES;
  return sl->v[0] == RL_UNLOCK_NOT_OWNER ? RL_VOTE_NO : RL_VOTE_FAIL;
}

static void transfer_late(rl_round *r, int i, const redisReply *rep) {
  rl_round_slot tmp;
  memset(&tmp, 0, sizeof tmp);
  int gr = rep != NULL && read_grant(rep, &tmp) == 1;
  rl_grant_late(r, i, gr ? &tmp : NULL);
}

/* The masters that released the lock and published (the transfer was
 * not made there: its deadline had passed). */
static uint64_t published_by(const rl_round *r) {
  uint64_t m = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_YES && !r->slot[i].granted &&
        r->slot[i].v[0] == RL_UNLOCK_RELEASED)
      m |= 1ull << i;
  return m;
}

static void transfer_done(rl_round *r) {
  rl_grants *g = r->data;
  if (g == NULL || !rl_votes_settle(r, 0)) return;
  rl_client *c = r->client;
  /* The grants that count, as rl_votes_settle(r, 1) would count them:
   * duplicates already lost their vote; quarantined masters' grants do
   * not count either. */
  int grants = 0, pending = 0;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->vote == RL_VOTE_PENDING)
      pending++;
    else if (sl->vote == RL_VOTE_YES && sl->granted &&
             !rl_master_quarantined(c, i) && !sl->node_quarantined)
      grants++;
  }
  rl_req *req = g->req; /* the waiter, while its attempt is open */
  int decided = req == NULL || grants >= r->quorum ||
                grants + pending < r->quorum;
  int won = 0;
  if (decided && req != NULL) {
    if (req->round == r) req->round = NULL;
    if (grants >= r->quorum && rl_acquire_valid(req)) {
      won = 1;
      rl_acquire_won(req, r, g); /* the waiter first: it is what waits */
    } else {
      /* Given back (the undos publish where the lock was the waiter's),
       * and the waiter waits again. */
      rl_attempt_end(req, 0, 1);
      rl_attempt_failed(req, &rl_acq_lock, RL_EBUSY, 0, 0, NULL);
    }
  }
  if (!g->unlock_decided) {
    g->unlock_decided = 1;
    rl_req *u = g->unlock;
    g->unlock = NULL;
    if (u != NULL) {
      u->grants = NULL;
      u->end = NULL;
      g->unlock_outcome(u, r, won ? 0 : published_by(r));
    }
  }
  if (!decided) {
    /* The grant needs the masters that have not answered: decide again
     * once every one answered or timed out (the master timeout bounds
     * it). */
    r->wait_all = 1;
    r->decided = 0;
  }
}

static const rl_round_ops transfer_ops = {classify_transfer, transfer_done,
                                          transfer_late, rl_grants_round_release};

/* The unlock request was finished by someone else (the client closed)
 * before its round was decided. */
static void unlock_end(rl_req *req, int status) {
  (void)status;
  rl_grants *g = req->grants;
  req->grants = NULL;
  req->end = NULL;
  if (g != NULL && g->unlock == req) g->unlock = NULL;
}

int rl_transfer_start(rl_req *req, rl_hold *h,
                      rl_unlock_outcome_fn outcome) {
  rl_client *c = req->lock->client;
  const rlock *lock = req->lock;
  /* Every master must take the command now: its argument count is above
   * what a connection that has not authenticated yet may send. */
  for (int i = 0; i < c->nmasters; i++)
    if (!rl_master_ready(c->masters[i])) return 0;
  rl_psw *psw = NULL;
  rl_req *w = rl_pubsub_handoff_waiter(c, lock, req->owner, req->ownerlen,
                                       rl_acquire_on_event, &psw);
  if (w == NULL) return 0;
  rl_grants *g = rl_grants_new(w, 0, &rl_acq_lock);
  if (g == NULL) return 0;
  g->vals.count = 1; /* the waiter's grant, a first acquisition */
  char lease[24], wlease[24], floor[24];
  rl_resp_put_i64(lease, h->lease_ms);
  rl_resp_put_i64(wlease, w->lease_ms);
  rl_resp_put_u64(floor, rl_token_floor(c));
  const char *argv[] = {NULL,        "2",
                        rl_lock_key(lock), rl_lock_fence(lock),
                        lease,       req->owner,
                        "1",         w->owner,
                        wlease,      floor,
                        rl_arg_master_deadline};
  size_t len[] = {0,
                  1,
                  lock->keylen,
                  rl_lock_fencelen(lock),
                  strlen(lease),
                  req->ownerlen,
                  1,
                  w->ownerlen,
                  strlen(wlease),
                  strlen(floor),
                  0};
  rl_round *r = rl_round_new(c, &transfer_ops, g, RL_SCRIPT_TRANSFER,
                             (int)(sizeof argv / sizeof argv[0]), argv, len);
  if (r == NULL) {
    rl_grants_unref(g);
    rl_grants_unref(g);
    return 0;
  }
  /* The waiter's attempt, as acquire.c's attempt() starts one. */
  rl_psw_claim(psw);
  g->round = r;
  g->unlock = req;
  g->unlock_outcome = outcome;
  w->grants = g;
  w->round = r;
  w->t_start = rl_now_ms();
  req->grants = g; /* for unlock_end */
  req->end = unlock_end;
  req->round = NULL;
  rl_round_send(r);
  return 1;
}
