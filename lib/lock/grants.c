/*
 * The grants ledger of one acquisition attempt (grants.h): what each
 * master granted, shared by the attempt's round and its request, kept by
 * the hold or given back (acquire.c states the rules it serves). The
 * hand-off's round (transfer.c) is an attempt of its waiter and uses the
 * same ledger.
 */
#include <stdlib.h>
#include <string.h>

#include "fence.h"
#include "grants.h"
#include "kind.h"
#include "lock.h"
#include "quarantine.h"
#include "retry.h"
#include "round.h"
#include "util.h"

/* A ledger with copies of what its undos need: they may be sent after
 * the request and its handle are gone. */
rl_grants *rl_grants_new(rl_req *req, uint64_t base_gen,
                          const rl_acq *acq) {
  rl_client *c = req->lock->client;
  const rlock *lock = req->lock;
  size_t n = (size_t)c->nmasters, size = sizeof(rl_grants) + n;
  for (int k = 0; k < lock->nkeys; k++) size += rl_lock_keylenk(lock, k) + 1;
  size += lock->channellen + 1 + req->ownerlen + 1;
  rl_grants *g = rl_zalloc(size);
  if (g == NULL) return NULL;
  g->refs = 2;
  g->c = c;
  g->req = req;
  g->acq = acq;
  g->base_gen = base_gen;
  g->kind = lock->kind;
  g->ticket = req->ticket;
  g->slot = (uint8_t *)(g + 1);
  char *p = (char *)g->slot + n;
  for (int k = 0; k < lock->nkeys; k++) {
    memcpy(p, rl_lock_keyk(lock, k), rl_lock_keylenk(lock, k));
    g->keys[k] = p;
    g->keylens[k] = rl_lock_keylenk(lock, k);
    p += g->keylens[k] + 1;
  }
  g->key = (char *)g->keys[lock->kind->hold];
  g->keylen = g->keylens[lock->kind->hold];
  memcpy(p, rl_lock_channel(lock), lock->channellen);
  g->vals.channel = p;
  g->vals.channellen = lock->channellen;
  p += lock->channellen + 1;
  memcpy(p, req->owner, req->ownerlen);
  g->owner = p;
  g->ownerlen = req->ownerlen;
  g->vals.keys = g->keys;
  g->vals.keylens = g->keylens;
  g->vals.owner = g->owner;
  g->vals.ownerlen = g->ownerlen;
  return g;
}

rl_grants *rl_grants_new_kind(rl_req *req, const rl_acq *acq) {
  rl_client *c = req->lock->client;
  rl_grants *g = rl_zalloc(sizeof(rl_grants) + (size_t)c->nmasters);
  if (g == NULL) return NULL;
  g->refs = 2;
  g->c = c;
  g->req = req;
  g->acq = acq;
  g->slot = (uint8_t *)(g + 1);
  return g;
}

void rl_grants_unref(rl_grants *g) {
  if (--g->refs > 0) return;
  if (g->ext != NULL && g->acq->free != NULL) g->acq->free(g->ext);
  free(g);
}

/* Takes back master i's grant: a decrement where the owner's count is at
 * least the one this attempt's grant set (nothing elsewhere), and for a
 * waiter that still waits in the masters' queues, its place back (kind.h,
 * arguments a and C). */
void rl_grants_undo_lock(rl_grants *g, int i) {
  g->slot[i] |= RL_G_UNDONE;
  rl_call_vals v = g->vals;
  v.ticket = g->ticket;
  v.alive_ms = g->waiting && g->queued ? rl_waiter_alive_ms(g->c) : 0;
  rl_call_send_one(g->c, &g->kind->undo, &v, i);
}

int rl_grants_pending(const rl_grants *g, int i) {
  const rl_round *r = g->round;
  return r != NULL && !(g->slot[i] & RL_G_FINAL) &&
         (r->slot[i].vote == RL_VOTE_PENDING || r->slot[i].timed_out);
}

void rl_grants_abandon(rl_grants *g) {
  g->state = RL_G_ABANDONED;
  rl_round *r = g->round;
  /* A NOSCRIPT acquire resent as EVAL would land after the undo. */
  if (r != NULL) r->args.no_resend = 1;
  for (int i = 0; i < g->c->nmasters; i++) {
    if (g->slot[i] & RL_G_UNDONE) continue;
    if ((g->slot[i] & RL_G_GRANTED) || rl_grants_pending(g, i))
      g->acq->undo(g, i);
  }
}

/* The request lets go of its attempt: kept, or given back (waiting: the
 * request goes on, so a waiter gets its place in the queues back). */
void rl_attempt_end(rl_req *req, int keep, int waiting) {
  rl_grants *g = req->grants;
  if (g == NULL) return;
  req->grants = NULL;
  g->req = NULL;
  /* The round still runs for late replies, which need the ledger: the
   * request must not detach it. */
  if (req->round != NULL && req->round == g->round) req->round = NULL;
  if (keep) {
    /* A lock's hold is the request's; the other kinds' commit marked
     * their ledger kept themselves. */
    rl_hold *h = g->kind != NULL ? rl_req_hold(req) : NULL;
    if (h != NULL) g->kept_gen = h->gen;
    if (g->state == RL_G_OPEN) g->state = RL_G_KEPT;
  } else if (g->state == RL_G_OPEN) {
    g->waiting = waiting;
    rl_grants_abandon(g);
  }
  rl_grants_unref(g);
}

void rl_note_token(rl_client *c, int64_t token) {
  if (token > 0 && (uint64_t)token > c->max_token_seen)
    c->max_token_seen = (uint64_t)token;
}


void rl_grants_late(rl_grants *g, int i, int gr) {
  g->slot[i] |= RL_G_FINAL | (gr ? RL_G_GRANTED : 0);
  /* Kept: it joins the hold (every unlock goes to every master). Open: it
   * is kept or given back with the others. Abandoned: given back, unless
   * the undo already went out behind it. */
  if (gr && g->state == RL_G_ABANDONED && !(g->slot[i] & RL_G_UNDONE))
    g->acq->undo(g, i);
  if (gr && g->state == RL_G_KEPT) g->acq->kept_late(g, i);
}

void rl_grants_kept_late_lock(rl_grants *g, int i) {
  rl_hold *h = rl_holds_find(&g->c->holds, g->key, g->keylen, g->owner,
                             g->ownerlen);
  if (h != NULL && h->gen == g->kept_gen) h->masters |= 1ull << i;
}

void rl_grant_late(rl_round *r, int i, const rl_round_slot *got) {
  rl_grants *g = r->data;
  if (got != NULL) {
    r->slot[i].granted = 1;
    r->slot[i].v[0] = got->v[0];
    r->slot[i].v[1] = got->v[1];
    r->slot[i].v[2] = got->v[2];
    rl_note_token(r->client, got->v[0]);
  }
  if (g == NULL) return;
  rl_grants_late(g, i, got != NULL);
  /* Won before this master answered (write_back): a grant with the token
   * or above means its counter has it; anything else, a refusal, an error
   * or a drop, gets the token now, behind the acquire. */
  if (g->slot[i] & RL_G_CATCHUP) {
    g->slot[i] &= (uint8_t)~RL_G_CATCHUP;
    if (got == NULL || got->v[0] < 0 || (uint64_t)got->v[0] < g->token)
      rl_fence_one(r->client, g->keys[g->kind->fence],
                   g->keylens[g->kind->fence], g->token, i);
  }
}

void rl_grants_round_release(rl_round *r) {
  rl_grants *g = r->data;
  if (g == NULL) return;
  g->round = NULL;
  rl_grants_unref(g);
}

/* The token floor: this client's wall clock in microseconds, and one more
 * than the largest token it has seen; below 2^53, which Lua's doubles hold
 * exactly. */
uint64_t rl_token_floor(const rl_client *c) {
  uint64_t us = rl_wall_us();
  uint64_t seen = c->max_token_seen + 1;
  uint64_t f = us > seen ? us : seen;
  const uint64_t max = (1ull << 53) - (1ull << 32);
  return f < max ? f : max;
}

