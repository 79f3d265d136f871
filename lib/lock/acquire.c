/*
 * Acquisition: one quorum round of the acquire script per attempt; retry
 * with jitter while the wait allows; the fencing token written back. The
 * engine of every kind of acquisition (the last paragraph says how).
 *
 * Safety rests on these rules.
 *
 * A round counts only if a majority granted (duplicates of one server and
 * masters in restart quarantine not counted: quarantine.c) and the
 * validity, lease - elapsed - (lease * drift + 2 ms), is still positive.
 *
 * No grant outlives its attempt. Each attempt keeps a ledger of its grants
 * (rl_grants), shared by its round and its request, that ends either kept
 * (the grants are the hold's; late ones join it: unlock goes to every
 * master) or abandoned. Abandoning gives back every grant, and sends the
 * undo at once, queued behind the acquire, to every master that has not
 * answered yet: its grant may land late, perhaps after this client is
 * gone, and the undo then lands right after it. An attempt is abandoned
 * when its round fails, when the write-back of its token fails, when it
 * is cancelled, when its client closes, and when it finishes for any
 * other reason than success, whether the round was decided or not.
 *
 * Fencing: a first acquisition's token is the largest counter among the
 * granting masters, each at least the floor this client sends (its wall
 * clock in microseconds, and one more than the largest token it has seen:
 * see scripts.c). When a majority of servers already stores that token it
 * is handed out at once and the others are told fire-and-forget (one
 * that has not answered yet, only if its late reply is not a grant at or
 * above the token); otherwise it is first written back to a majority.
 * Either way every master that answers ends at or above it, so stale
 * counters catch up whenever they are reachable, and the next holder's
 * majority, which must overlap this one, counts from above it.
 *
 * A reentrant acquisition builds on the owner's hold. A master that never
 * had the hold (it was down when the hold was taken) lacking it is no
 * evidence against the hold; a master that had it and has lost it is. So
 * the hold continues when a majority of servers granted reentrantly (the
 * owner's field was there all along), or when it is within its validity
 * and no master that had it lost it; when only more answers could tell,
 * the round waits for every master. Either way a master that missed the
 * hold is given the hold's count, not 1, and the last unlock deletes the
 * key whatever the count (release.c). Otherwise the hold is lost (its
 * owner is told), its release goes out to every master, queued behind this
 * attempt, and the attempt starts again as a first acquisition, with a
 * new token. The same happens when the hold was lost while the attempt
 * was in flight.
 *
 * Every kind of lock goes through here (kind.h): the handle's kind says
 * which script an attempt runs and with what, how its replies read, and
 * how a grant is undone. Kinds whose waiters queue on the masters (fair,
 * write) add three rules: an undone grant gives a waiter that still waits
 * its place back; an acquisition that won leaves the queues of the
 * masters that did not grant; and one that gives up (deadline, cancel,
 * close, error) leaves every master's queue, after its undos, so that
 * nothing of it stays in Redis.
 *
 * The engine. Every acquisition, of a lock of any kind, of a semaphore's
 * permits (lib/family/sem_kind.c) and of a set of locks
 * (lib/family/multi_kind.c), runs its attempts here: one round per
 * attempt over a ledger of its grants (grants.c), kept or given back by
 * the rules above, late replies included; the retry policy (retry.c);
 * the fencing write-back (fence.c). What differs is the kind's row
 * (rl_acq, grants.h): its script and arguments, how a reply reads, how a
 * grant is undone, how a settled round decides (for a lock, below; a
 * semaphore counts the masters behind each slot, a set decides lock by
 * lock), how a hold is recorded, and where a waiter sleeps. The family's
 * rows are set by lib/family, above this layer, and reached only through
 * their function pointers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"
#include "grants.h"
#include "kind.h"
#include "lock.h"
#include "ops.h"
#include "pubsub.h"
#include "quarantine.h"
#include "resp.h"
#include "retry.h"
#include "round.h"
#include "scripts.h"
#include "util.h"

struct rl_sleep {
  uv_timer_t timer; /* first: the handle is the sleep */
  rl_req *req;
};

static void attempt(rl_req *req) { rl_attempt_next(req, &rl_acq_lock); }

static void on_sleep_closed(uv_handle_t *h) { free(h); }

void rl_sleep_cancel(rl_req *req) {
  rl_pubsub_leave(req);
  rl_sleep *s = req->sleep;
  if (s == NULL) return;
  req->sleep = NULL;
  s->req = NULL;
  uv_close((uv_handle_t *)&s->timer, on_sleep_closed);
}

static void on_wake(uv_timer_t *t) {
  rl_sleep *s = (rl_sleep *)t;
  if (s->req != NULL) attempt(s->req);
}

static void sleep_then_attempt(rl_req *req, uint64_t ms) {
  if (req->sleep == NULL) {
    rl_sleep *s = malloc(sizeof *s);
    if (s == NULL) {
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
    uv_timer_init(req->lock->client->loop, &s->timer);
    s->req = req;
    req->sleep = s;
  }
  uv_timer_start(&req->sleep->timer, on_wake, ms, 0);
}

/* The owner's vals for a call of req's handle. */
static void req_vals(const rl_req *req, rl_call_vals *v) {
  rl_lock_vals(req->lock, v);
  v->owner = req->owner;
  v->ownerlen = req->ownerlen;
  v->ticket = req->ticket;
}

/* A waiter that gives up leaves every master's queue; on each master this
 * lands after its undos there. */
static void leave_queues(rl_req *req) {
  rl_client *c = req->lock->client;
  rl_call_vals v;
  req_vals(req, &v);
  for (int i = 0; i < c->nmasters; i++)
    rl_call_send_one(c, &req->lock->kind->leave, &v, i);
  req->queued = 0;
}

void rl_acquire_end(rl_req *req, int status) {
  rl_attempt_end(req, status == RLOCK_OK, 0);
  if (status != RLOCK_OK && req->queued) leave_queues(req);
}

/* --- the engine: an attempt's round ------------------------------------ */

/* Every kind's round reads a reply the same way: the kind says what it
 * means (acq->read), the ledger records it. A round whose ledger is gone
 * (the fuzzer's) reads it as the reentrant lock's. */
static const rl_acq *acq_of(const rl_round *r) {
  const rl_grants *g = r->data;
  return g != NULL ? g->acq : &rl_acq_lock;
}

static int classify_acquire(rl_round *r, int i, const redisReply *rep) {
  rl_round_slot *sl = &r->slot[i];
  rl_grants *g = r->data;
  const rl_acq *acq = acq_of(r);
  int gr = acq->read(r, i, rep, sl, 0);
  if (gr == 2 && g == NULL) return RL_VOTE_FAIL;
  if (g != NULL) g->slot[i] |= RL_G_FINAL;
  if (gr < 0) {
    char why[64];
    int n = snprintf(why, sizeof why, "unexpected reply to %s", acq->script);
    rl_client_note_error(r->client, why, n > 0 ? (size_t)n : 0);
    sl->error_reply = 1;
    return RL_VOTE_FAIL;
  }
  if (gr == 2) return RL_VOTE_FAIL; /* too late for the master */
  sl->granted = gr;
  if (gr == 0) return RL_VOTE_NO;
  if (g != NULL) g->slot[i] |= RL_G_GRANTED;
  /* A quarantined master's grant counts or not when the round is decided
   * (rl_votes_settle): records may still be on their way. */
  return RL_VOTE_YES;
}

static void acquire_late(rl_round *r, int i, const redisReply *rep) {
  rl_round_slot tmp;
  memset(&tmp, 0, sizeof tmp);
  const rl_acq *acq = acq_of(r);
  int gr = rep != NULL && acq->read(r, i, rep, &tmp, 1) == 1;
  acq->late(r, i, gr ? &tmp : NULL);
}

static void acquire_done(rl_round *r) {
  rl_grants *g = r->data;
  if (g == NULL || !rl_votes_settle(r, 1)) return;
  rl_req *req = g->req;
  if (req == NULL) return; /* finished meanwhile: given back already */
  req->round = NULL;
  g->acq->decide(req, r, g);
}

const rl_round_ops rl_acquire_ops = {classify_acquire, acquire_done,
                                     acquire_late, rl_grants_round_release};

void rl_attempt_next(rl_req *req, const rl_acq *acq) {
  rl_grants *g = NULL;
  rl_round *r = acq->round(req, &g);
  if (r == NULL) {
    if (g != NULL) {
      g->refs = 1;
      rl_grants_unref(g);
    }
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  g->round = r;
  req->grants = g;
  req->round = r;
  req->t_start = rl_now_ms();
  rl_round_send(r);
}

void rl_attempt_failed(rl_req *req, const rl_acq *acq, int err, int64_t pttl,
                       int split, int *splits) {
  rl_retry p = {err, pttl, split, splits, 0};
  int how = rl_retry_next(req, &p);
  if (how == RL_RETRY_DONE)
    rl_req_finish(req, p.err);
  else
    acq->wait(req, how, &p);
}

int rl_acquire_valid(rl_req *req) {
  rl_client *c = req->lock->client;
  int64_t elapsed = (int64_t)(rl_now_ms() - req->t_start);
  return req->lease_ms - elapsed - rl_drift_ms(c, req->lease_ms) > 0;
}

/* The write-back's round: its majority hands the token out (the kind's
 * commit); anything else fails the attempt, which is given back. */
static void fence_done(rl_round *r) {
  if (!rl_votes_settle(r, 0)) return;
  rl_req *req = r->data;
  if (req == NULL) return; /* finished: its grants were given back */
  req->round = NULL;
  const rl_acq *acq = req->grants != NULL ? req->grants->acq : &rl_acq_lock;
  if (r->outcome == RL_VOTE_YES && rl_acquire_valid(req)) {
    acq->commit(req);
    return;
  }
  rl_attempt_end(req, 0, 1);
  rl_attempt_failed(req, acq, RLOCK_ENOQUORUM, -1, 0, NULL);
}

const rl_round_ops rl_fence_ops = {rl_fence_classify, fence_done, NULL,
                                   NULL};

void rl_attempt_write_back(rl_req *req, const rl_fence_in *in) {
  rl_round *r;
  int rc = rl_fence_write_back(req->lock->client, in, &rl_fence_ops, req, &r);
  if (rc == 0) {
    req->grants->acq->commit(req);
  } else if (rc < 0) {
    rl_req_finish(req, RLOCK_ENOMEM);
  } else {
    req->round = r;
    rl_round_send(r);
  }
}

/* --- the lock's row: replies -------------------------------------------- */

/* The kind's reading of an acquire reply (kind.h); a refusal past the
 * master's deadline is no vote. */
static int lock_read(rl_round *r, int i, const redisReply *rep,
                     rl_round_slot *sl, int late) {
  (void)i;
  const rl_grants *g = r->data;
  const rl_kind *k = g != NULL ? g->kind : &rl_kind_lock;
  int gr = k->parse_grant(rep, sl);
  if (late) return gr;
  if (gr == 0) sl->granted = 0;
  if (gr == 0 && sl->v[2] == RL_GRANT_LATE) return 2;
  if (gr == 1) rl_note_token(r->client, sl->v[0]);
  return gr;
}

/* --- the lock's row: deciding ------------------------------------------- */

rl_hold *rl_acquire_hold(rl_req *req, rlock *lock, uint64_t token) {
  rl_client *c = req->lock->client;
  rl_hold *h = rl_holds_find(&c->holds, rl_lock_key(lock), lock->keylen,
                             req->owner, req->ownerlen);
  if (h != NULL && h->lost) {
    rl_hold_drop(c, h);
    h = NULL;
  }
  if (h == NULL) {
    h = rl_holds_add(&c->holds, rl_lock_key(lock), lock->keylen, req->owner,
                     req->ownerlen);
    if (h == NULL) return NULL;
    h->token = token;
    h->acquired_ms = req->t_start;
    h->gen = ++c->hold_gen;
    RL_ADD(c->metrics.locks_held, 1);
    h->owner_id = req->owner_id;
    h->owner_is_thread = req->owner_is_thread;
    h->lock = lock;
    rl_lock_ref(h->lock);
    rl_wheel_node_init(&h->wd);
  }
  /* The masters that have it now: this attempt's grants so far. */
  if (req->grants != NULL)
    for (int i = 0; i < c->nmasters; i++)
      if (req->grants->slot[i] & RL_G_GRANTED) h->masters |= 1ull << i;
  /* Grants never shorten a TTL, so a reentrant acquisition keeps the
   * longer of the two leases, and the watchdog once it has it. */
  int first = h->count == 0;
  h->count++;
  if (first || req->lease_ms > h->lease_ms) h->lease_ms = req->lease_ms;
  if (first) h->extensions = 0;
  h->watchdog = h->watchdog || req->watchdog;
  if (h->watchdog && !h->wd.armed) rl_watchdog_start(&c->watchdog, &h->wd);
  uint64_t valid =
      req->t_start + (uint64_t)(req->lease_ms - rl_drift_ms(c, req->lease_ms));
  if (first || valid > h->valid_until_ms) h->valid_until_ms = valid;
  return h;
}

/* Records the hold and finishes the request (its grants are then kept). */
static void commit(rl_req *req) {
  rl_client *c = req->lock->client;
  rl_hold *h = rl_acquire_hold(req, req->lock, req->token);
  if (h == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM); /* the grants are given back */
    return;
  }
  req->out_u64 = h->token;
  req->count = h->count;
  RL_ADD(c->metrics.acquisitions_kind[req->lock->kind->id], 1);
  rl_req_finish(req, RLOCK_OK);
}

/* The token, handed out now or after its write-back (fence.c). A master
 * that has not answered yet most often grants with a token at least this
 * one (a first grant's token is at least the client's wall clock when
 * the master runs it, and it ran later): its late reply says whether it
 * needs the catch-up (rl_grant_late). Sent at once to every such master,
 * catch-ups were two commands more per lock+unlock pair with five
 * masters (bench_latency, MONITOR), each a script run on masters that
 * share the client's CPUs here. */
static void write_back(rl_req *req, rl_round *won, rl_grants *g) {
  int64_t stored[RL_MAX_MASTERS];
  rl_fence_in in = {rl_lock_fence(req->lock), rl_lock_fencelen(req->lock),
                    req->token, won->quorum, stored, 0, 0,
                    g != NULL ? g->slot : NULL, RL_G_CATCHUP};
  for (int i = 0; i < won->n; i++) {
    const rl_round_slot *sl = &won->slot[i];
    stored[i] = sl->granted ? sl->v[0] : -1;
    if (sl->granted) in.counted |= 1ull << i;
    if (sl->vote == RL_VOTE_PENDING || sl->timed_out) in.later |= 1ull << i;
  }
  if (g != NULL) g->token = req->token;
  rl_attempt_write_back(req, &in);
}

/* For a reentrant round: 1 if the hold continues, 0 if it is lost, -1 if
 * only the masters that have not answered yet can tell. */
static int hold_intact(rl_round *r, const rl_hold *h) {
  rl_client *c = r->client;
  int confirmed = 0, lost_somewhere = 0;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (!sl->granted || rl_master_duplicate(c, i)) continue;
    if (sl->v[2])
      confirmed++;
    else if (h->masters & (1ull << i))
      lost_somewhere = 1; /* it had the hold, and has it no more */
  }
  if (confirmed >= r->quorum) return 1;
  if (!lost_somewhere && rl_now_ms() <= h->valid_until_ms) return 1;
  return r->yes + r->no + r->fail < r->n ? -1 : 0;
}

void rl_acquire_won(rl_req *req, rl_round *r, rl_grants *g) {
  rl_client *c = req->lock->client;
  rl_hold *h = rl_req_hold(req);
  if (g->base_gen != 0) {
    int live = h != NULL && h->gen == g->base_gen && !h->lost;
    int intact = live ? hold_intact(r, h) : 0;
    if (intact < 0) {
      /* Wait for every master (each answers or times out), then decide
       * again. */
      r->wait_all = 1;
      r->decided = 0;
      req->round = r;
      return;
    }
    if (intact) {
      commit(req); /* reentrant */
      return;
    }
    if (live) {
      /* Lost: told, and released where it survived, behind this attempt
       * (which it takes too). The callback runs with the request marked
       * deciding, so that a cancel from it cannot free the request. */
      req->deciding = 1;
      rl_hold_lost(c, h);
      req->deciding = 0;
    }
    rl_attempt_end(req, 0, 1);
    attempt(req); /* afresh, behind the release */
    return;
  }
  if (req->queued) {
    /* Won: the masters that did not grant still have the owner queued,
     * where it would stand first and hold everyone else back. */
    rl_call_vals v;
    req_vals(req, &v);
    for (int i = 0; i < r->n; i++)
      if (!r->slot[i].granted) rl_call_send_one(c, &req->lock->kind->leave, &v, i);
    req->queued = 0;
  }
  int64_t token = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].granted && r->slot[i].v[0] > token)
      token = r->slot[i].v[0];
  req->token = (uint64_t)token;
  rl_note_token(c, token);
  write_back(req, r, g);
}

static void lock_failed(rl_req *req, int err, int64_t pttl) {
  rl_attempt_failed(req, &rl_acq_lock, err, pttl, 0, NULL);
}

static void lock_decide(rl_req *req, rl_round *r, rl_grants *g) {
  if (r->outcome == RL_VOTE_YES && rl_acquire_valid(req)) {
    rl_acquire_won(req, r, g);
    return;
  }
  int deadlk = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_NO && r->slot[i].v[2] == RL_GRANT_DEADLK)
      deadlk = 1;
  if (deadlk && !req->read_cleared && req->lock->kind->precheck != NULL &&
      req->lock->kind->precheck(req) == 0 &&
      rl_holds_find(&req->lock->client->pending,
                    rl_lock_keyk(req->lock, rl_kind_read.hold),
                    rl_lock_keylenk(req->lock, rl_kind_read.hold),
                    req->owner, req->ownerlen) == NULL) {
    /* A master says the owner holds the read side, and the client has no
     * read hold of it, nor a read acquisition in flight (an async owner's,
     * which may be writing its grants back): that read hold is left over
     * from one whose unlock got no answer, which the client ended
     * (release.c), or from a given-up attempt whose undo is on its way.
     * It is dropped on those masters, and the attempt made again behind
     * the drop, once: a drop that does not land leaves the refusal
     * below. */
    rl_call_vals v;
    req_vals(req, &v);
    for (int i = 0; i < r->n; i++)
      if (r->slot[i].vote == RL_VOTE_NO &&
          r->slot[i].v[2] == RL_GRANT_DEADLK)
        rl_call_send_one(req->lock->client, &rl_kind_read.release, &v, i);
    req->read_cleared = 1;
    rl_attempt_end(req, 0, 1);
    attempt(req);
    return;
  }
  rl_attempt_end(req, 0, !deadlk);
  if (deadlk) {
    /* A master says the owner holds the read side: it would wait for
     * itself. */
    rl_req_finish(req, RLOCK_EDEADLK);
    return;
  }
  if (r->outcome == RL_VOTE_YES) {
    /* Too slow: a majority granted, but no validity was left. */
    rl_client *c = req->lock->client;
    char why[200];
    int n = snprintf(why, sizeof why,
                     "a majority granted the lock, but its lease of %lld ms "
                     "left no validity after the round (%lld ms, with a "
                     "drift allowance of %lld ms): use a longer lease",
                     (long long)req->lease_ms,
                     (long long)(rl_now_ms() - req->t_start),
                     (long long)rl_drift_ms(c, req->lease_ms));
    rl_client_note_error(c, why, n > 0 ? (size_t)n : 0);
    lock_failed(req, RLOCK_ENOQUORUM, -1);
    return;
  }
  int64_t pttl = -1;
  int any_error = 0;
  for (int i = 0; i < r->n; i++) {
    const rl_round_slot *sl = &r->slot[i];
    if (sl->error_reply) any_error = 1;
    if (sl->vote == RL_VOTE_NO && sl->v[2] >= 0 &&
        (pttl < 0 || sl->v[2] < pttl))
      pttl = sl->v[2];
    /* -2 is PTTL's answer for a key that is gone: retry at once. */
    if (sl->vote == RL_VOTE_NO && sl->v[2] == -2 && pttl < 0) pttl = 0;
  }
  if (r->no > 0)
    lock_failed(req, RL_EBUSY, pttl);
  else
    lock_failed(req, any_error ? RLOCK_EREDIS : RLOCK_ENOQUORUM, -1);
}

void rl_acquire_on_event(rl_psw *w, void *data) {
  (void)w;
  attempt(data);
}

/* After a failed attempt, as the retry policy (retry.c) said: a lock's
 * waiter waits for an event in its pub/sub wait queue, and polls on a
 * timer. */
static void lock_wait(rl_req *req, int how, const rl_retry *p) {
  if (how == RL_RETRY_WAIT)
    rl_pubsub_wait(req, p->ms, rl_acquire_on_event);
  else
    sleep_then_attempt(req, p->ms);
}

static rl_round *lock_round(rl_req *req, rl_grants **out) {
  rl_client *c = req->lock->client;
  rlock *lock = req->lock;
  /* A lost hold was released on every master when it was found lost, and
   * that release is queued before this attempt: build on nothing. */
  rl_hold *h = rl_req_hold(req);
  if (h != NULL && h->lost) {
    rl_hold_drop(c, h);
    h = NULL;
  }
  /* The last argument is the deadline in each master's own clock, after
   * which it grants nothing: a grant that lands after this client stopped
   * waiting (a stalled master, perhaps after the client is gone) would
   * outlive its attempt. Each connection appends it as it writes the
   * command, from its own estimate of the master's clock (round.h). */
  rl_call_vals v;
  req_vals(req, &v);
  v.lease_ms = req->lease_ms;
  v.count = h != NULL ? h->count + 1 : 1;
  v.floor = rl_token_floor(c);
  /* A first acquisition that may still wait after this attempt queues
   * (fair, write): a single attempt, or the last one, only asks. */
  uint64_t now = rl_now_ms();
  int may_wait = req->deadline == RL_FOREVER || req->deadline > now;
  int queues = lock->kind->heartbeat && h == NULL && may_wait;
  v.alive_ms = queues ? rl_waiter_alive_ms(c) : 0;
  rl_grants *g = rl_grants_new(req, h != NULL ? h->gen : 0, &rl_acq_lock);
  *out = g;
  /* The undo names the grant by the count it set: on a master that
   * refused this attempt or never ran it, the owner's earlier hold is
   * left as it is. */
  if (g != NULL) g->vals.count = v.count;
  rl_round *r = g == NULL ? NULL
                          : rl_call_round(c, &lock->kind->acquire, &v,
                                          &rl_acquire_ops, g);
  if (r == NULL) return NULL;
  if (queues) req->queued = 1;
  g->queued = req->queued; /* by this attempt or an earlier one */
  r->late_is_quiet = 1; /* acquire_late keeps or gives back a grant */
  return r;
}

const rl_acq rl_acq_lock = {
    .script = "acquire",
    .round = lock_round,
    .read = lock_read,
    .undo = rl_grants_undo_lock,
    .late = rl_grant_late,
    .decide = lock_decide,
    .kept_late = rl_grants_kept_late_lock,
    .commit = commit,
    .wait = lock_wait,
};

void rl_acquire_start(rl_req *req) {
  const rl_kind *kind = req->lock->kind;
  if (kind->precheck != NULL) {
    int rc = kind->precheck(req);
    if (rc != 0) {
      rl_req_finish(req, rc);
      return;
    }
  }
  /* The ticket orders this acquisition in every master's queue, the same
   * on all of them and on every attempt; a clock below 2^53 us. */
  req->ticket = rl_wall_us();
  if (!req->owner_is_thread) {
    int rc = rl_acquire_mark_pending(req, req->lock, &req->pending);
    if (rc != 0) {
      rl_req_finish(req, rc);
      return;
    }
  }
  attempt(req);
}

int rl_acquire_mark_pending(rl_req *req, rlock *obj, rl_hold **mark) {
  rl_client *c = obj->client;
  if (rl_holds_find(&c->pending, rl_lock_key(obj), obj->keylen, req->owner,
                    req->ownerlen) != NULL)
    return RLOCK_EINVAL;
  *mark = rl_holds_add(&c->pending, rl_lock_key(obj), obj->keylen, req->owner,
                       req->ownerlen);
  return *mark == NULL ? RLOCK_ENOMEM : 0;
}
