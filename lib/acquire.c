/*
 * Acquisition: one quorum round of the acquire script per attempt; retry
 * with jitter while the wait allows; fencing write-back when N > 1.
 *
 * Safety rests on three rules here. A round counts only if a majority
 * granted and the validity, lease - elapsed - (lease * drift + 2 ms), is
 * still positive. A failed attempt is undone exactly on every master that
 * granted it, including masters whose grant arrives after their timeout
 * or after the round was decided (the round keeps listening for them). And
 * with N > 1 a first acquisition's token (the largest counter among the
 * granting masters) is written back to a majority before it is handed out,
 * so that the next holder's majority, which must overlap this one, counts
 * from above it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "pubsub.h"
#include "ops.h"
#include "round.h"
#include "scripts.h"
#include "util.h"

struct rl_sleep {
  uv_timer_t timer; /* first: the handle is the sleep */
  rl_req *req;
};

static void attempt(rl_req *req);
static void fail_attempt(rl_req *req, int err, int64_t holder_pttl);

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

/* Argument positions in an acquire round (after EVALSHA sha). */
enum { A_KEY = 3, A_OWNER = 6 };

void rl_undo_grant(rl_client *c, const char *key, size_t keylen,
                   const char *owner, size_t ownerlen, int idx) {
  char channel[RL_OWNER_MAX + 600];
  if (keylen + 4 > sizeof channel) return;
  memcpy(channel, key, keylen);
  memcpy(channel + keylen, ":ch", 4);
  const char *argv[] = {NULL, "1", key, owner, channel};
  size_t len[] = {0, 1, keylen, ownerlen, keylen + 3};
  rl_round *u = rl_round_new(c, NULL, NULL, RL_SCRIPT_UNDO, 5, argv, len);
  if (u != NULL) rl_round_send_one(u, idx);
  /* Out of memory: the grant expires with its lease. */
}

static void undo_slot(rl_round *r, int i) {
  const rl_argv *a = &r->args;
  r->slot[i].granted = 0;
  rl_undo_grant(r->client, a->argv[A_KEY], a->argvlen[A_KEY],
                a->argv[A_OWNER], a->argvlen[A_OWNER], i);
}

/* Undoes every grant of a round whose acquisition is not kept. */
static void undo_grants(rl_round *r) {
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].granted) undo_slot(r, i);
}

static int parse_grant(const redisReply *rep, rl_round_slot *sl) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) return -1;
  for (size_t k = 0; k < rep->elements; k++)
    if (rep->element[k]->type != REDIS_REPLY_INTEGER) return -1;
  long long ok = rep->element[0]->integer;
  if (ok == 1 && rep->elements == 3) {
    sl->v[0] = rep->element[1]->integer; /* token */
    sl->v[1] = rep->element[2]->integer; /* count */
    return 1;
  }
  if (ok == 0 && rep->elements == 2) {
    sl->v[2] = rep->element[1]->integer; /* the holder's PTTL */
    return 0;
  }
  return -1;
}

static int classify_acquire(rl_round *r, int i, const redisReply *rep) {
  rl_round_slot *sl = &r->slot[i];
  int g = parse_grant(rep, sl);
  if (g < 0) {
    rl_client_note_error(r->client, "unexpected reply to acquire", 27);
    sl->error_reply = 1;
    return RL_VOTE_FAIL;
  }
  sl->granted = g;
  /* A quarantined master's grant is real (it is undone or released like
   * any other) but does not count toward the quorum. */
  if (g && rl_conn_quarantined(&r->client->conns[i])) return RL_VOTE_FAIL;
  return g ? RL_VOTE_YES : RL_VOTE_NO;
}

static void acquire_late(rl_round *r, int i, const redisReply *rep) {
  rl_round_slot tmp;
  if (rep == NULL || parse_grant(rep, &tmp) != 1) return;
  r->slot[i].granted = 1;
  r->slot[i].v[0] = tmp.v[0];
  r->slot[i].v[1] = tmp.v[1];
  /* Before the decision, this grant is kept or undone with the others;
   * after it, it is undone unless the acquisition was kept. */
  if (r->decided && !r->keep) undo_slot(r, i);
}

/* Records the hold and finishes the request. */
static void commit(rl_req *req) {
  rl_client *c = req->lock->client;
  rl_hold *h = rl_req_hold(req);
  if (h != NULL && h->lost) {
    rl_hold_drop(c, h);
    h = NULL;
  }
  if (h == NULL) {
    h = rl_holds_add(&c->holds, req->lock->key, req->lock->keylen,
                     req->owner, req->ownerlen);
    if (h == NULL) {
      for (int i = 0; i < c->nmasters; i++)
        if (req->granted_mask & (1ull << i)) {
          rl_undo_grant(c, req->lock->key, req->lock->keylen, req->owner,
                        req->ownerlen, i);
        }
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
    h->token = req->token;
    h->acquired_ms = req->t_start;
    h->gen = ++c->hold_gen;
    RL_ADD(c->metrics.locks_held, 1);
    h->owner_id = req->owner_id;
    h->owner_is_thread = req->owner_is_thread;
    h->lock = req->lock;
    rl_lock_ref(h->lock);
    rl_wheel_node_init(&h->wd);
  }
  /* Grants never shorten a TTL, so a reentrant acquisition keeps the
   * longer of the two leases, and the watchdog once it has it. */
  int first = h->count == 0;
  h->count++;
  if (first || req->lease_ms > h->lease_ms) h->lease_ms = req->lease_ms;
  if ((uint64_t)req->lease_ms > c->max_lease_granted)
    c->max_lease_granted = (uint64_t)req->lease_ms;
  if (first) h->extensions = 0;
  h->watchdog = h->watchdog || req->watchdog;
  if (h->watchdog && !h->wd.armed) rl_watchdog_start(&c->watchdog, &h->wd);
  uint64_t valid =
      req->t_start + (uint64_t)(req->lease_ms - rl_drift_ms(c, req->lease_ms));
  if (first || valid > h->valid_until_ms) h->valid_until_ms = valid;
  req->out_u64 = h->token;
  req->count = h->count;
  rl_req_finish(req, RLOCK_OK);
}

static int validity_left(rl_req *req) {
  rl_client *c = req->lock->client;
  int64_t elapsed = (int64_t)(rl_now_ms() - req->t_start);
  return req->lease_ms - elapsed - rl_drift_ms(c, req->lease_ms) > 0;
}

static void undo_mask(rl_req *req) {
  rl_client *c = req->lock->client;
  for (int i = 0; i < c->nmasters; i++)
    if (req->granted_mask & (1ull << i))
      rl_undo_grant(c, req->lock->key, req->lock->keylen, req->owner,
                    req->ownerlen, i);
  req->granted_mask = 0;
}

static int classify_fence(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  return rep->type == REDIS_REPLY_INTEGER ? RL_VOTE_YES : RL_VOTE_FAIL;
}

static void fence_done(rl_round *r) {
  rl_req *req = r->data;
  if (req == NULL) return; /* closed: the grants expire with the lease */
  req->round = NULL;
  if (r->outcome == RL_VOTE_YES && validity_left(req)) {
    commit(req);
    return;
  }
  undo_mask(req);
  fail_attempt(req, RLOCK_ENOQUORUM, -1);
}

const rl_round_ops rl_fence_ops = {classify_fence, fence_done, NULL,
                                       NULL};

static void write_back(rl_req *req) {
  rl_client *c = req->lock->client;
  char token[24], ttl[24];
  snprintf(token, sizeof token, "%" PRIu64, req->token);
  snprintf(ttl, sizeof ttl, "%d", RL_FENCE_TTL_MS);
  const char *argv[] = {NULL, "1", req->lock->fence, token, ttl};
  size_t len[] = {0, 1, req->lock->fencelen, strlen(token), strlen(ttl)};
  rl_round *r = rl_round_new(c, &rl_fence_ops, req, RL_SCRIPT_FENCE_MAX, 5,
                             argv, len);
  if (r == NULL) {
    undo_mask(req);
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  rl_round_send(r);
}

static void acquire_won(rl_req *req, rl_round *r) {
  rl_client *c = req->lock->client;
  int64_t token = 0;
  int agree = 0;
  req->granted_mask = 0;
  for (int i = 0; i < r->n; i++) {
    if (!r->slot[i].granted) continue;
    req->granted_mask |= 1ull << i;
    if (r->slot[i].v[0] > token) token = r->slot[i].v[0];
  }
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].granted && r->slot[i].v[0] == token) agree++;
  req->token = (uint64_t)token;
  rl_hold *h = rl_req_hold(req);
  int reentrant = 0;
  for (int i = 0; i < r->n; i++)
    if (r->slot[i].vote == RL_VOTE_YES && r->slot[i].v[1] > 1) reentrant++;
  if (h != NULL && !h->lost && reentrant < r->quorum) {
    /* The owner's hold did not last on a majority (it expired or was
     * taken on some masters, perhaps by another holder since): what the
     * masters granted is a new hold, which needs a new token. The old one
     * is lost. Its callback runs with this request marked deciding, so
     * that a cancel from it cannot free the request under us. */
    req->deciding = 1;
    rl_hold_lost(c, h);
    req->deciding = 0;
    rl_hold_drop(c, h);
    h = NULL;
  }
  int first = h == NULL || h->lost;
  /* With N = 1, or when a majority already stores this very token, there
   * is nothing to write back. */
  if (!first || c->nmasters == 1 || agree >= r->quorum) {
    commit(req);
    return;
  }
  write_back(req);
}

static void acquire_done(rl_round *r) {
  rl_req *req = r->data;
  if (req == NULL) {
    undo_grants(r);
    return;
  }
  req->round = NULL;
  if (r->outcome == RL_VOTE_YES && validity_left(req)) {
    r->keep = 1;
    acquire_won(req, r);
    return;
  }
  undo_grants(r);
  if (r->outcome == RL_VOTE_YES) {
    fail_attempt(req, RLOCK_ENOQUORUM, -1); /* too slow: no validity left */
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
    if (sl->vote == RL_VOTE_NO && sl->v[2] == -2 && pttl < 0) pttl = 0;
  }
  if (r->no > 0)
    fail_attempt(req, RL_EBUSY, pttl);
  else
    fail_attempt(req, any_error ? RLOCK_EREDIS : RLOCK_ENOQUORUM, -1);
}

const rl_round_ops rl_acquire_ops = {classify_acquire, acquire_done,
                                         acquire_late, NULL};

static void fail_attempt(rl_req *req, int err, int64_t holder_pttl) {
  rl_client *c = req->lock->client;
  if (err == RLOCK_EREDIS) {
    /* A master refused the script (AUTH, OOM, READONLY...): say so now
     * rather than retry into the same refusal until the deadline. */
    rl_req_finish(req, err);
    return;
  }
  uint64_t now = rl_now_ms();
  if (req->deadline != RL_FOREVER && now >= req->deadline) {
    rl_req_finish(req, err == RL_EBUSY ? RLOCK_ETIMEDOUT : err);
    return;
  }
  if (err == RL_EBUSY && c->opts.wait_strategy == RLOCK_WAIT_PUBSUB) {
    /* Held by another: sleep until its unlock message (pubsub/). */
    rl_pubsub_wait(req, holder_pttl);
    return;
  }
  uint64_t wait = (uint64_t)c->opts.retry_delay_ms +
                  rl_random_upto((uint64_t)c->opts.retry_jitter_ms);
  if (err == RL_EBUSY && holder_pttl >= 0 && (uint64_t)holder_pttl < wait)
    wait = holder_pttl > 0 ? (uint64_t)holder_pttl : 1;
  if (req->deadline != RL_FOREVER && req->deadline - now < wait)
    wait = req->deadline - now;
  sleep_then_attempt(req, wait);
}

static void attempt(rl_req *req) {
  rl_client *c = req->lock->client;
  rlock *lock = req->lock;
  char lease[24], ttl[24];
  snprintf(lease, sizeof lease, "%" PRId64, req->lease_ms);
  snprintf(ttl, sizeof ttl, "%d", RL_FENCE_TTL_MS);
  const char *argv[] = {NULL,  "2",        lock->key, lock->fence,
                        lease, req->owner, ttl};
  size_t len[] = {0,        1,           lock->keylen, lock->fencelen,
                  strlen(lease), req->ownerlen, strlen(ttl)};
  rl_round *r =
      rl_round_new(c, &rl_acquire_ops, req, RL_SCRIPT_ACQUIRE, 7, argv, len);
  if (r == NULL) {
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  req->round = r;
  req->t_start = rl_now_ms();
  rl_round_send(r);
}

void rl_acquire_retry(rl_req *req) { attempt(req); }

void rl_acquire_start(rl_req *req) {
  rl_client *c = req->lock->client;
  if (!req->owner_is_thread) {
    /* An async owner may have one acquisition of a lock in flight: two at
     * once would race on its count and its token. */
    if (rl_holds_find(&c->pending, req->lock->key, req->lock->keylen,
                      req->owner, req->ownerlen) != NULL) {
      rl_req_finish(req, RLOCK_EINVAL);
      return;
    }
    req->pending = rl_holds_add(&c->pending, req->lock->key,
                                req->lock->keylen, req->owner, req->ownerlen);
    if (req->pending == NULL) {
      rl_req_finish(req, RLOCK_ENOMEM);
      return;
    }
  }
  attempt(req);
}
