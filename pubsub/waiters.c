/*
 * Wait queues: the waiting side of pub/sub waiting, and cancellation of
 * async waits.
 *
 * Every waiting acquisition of one lock in one client sits in its
 * channel's FIFO queue from its first RL_EBUSY until it finishes. It is in
 * one of three states: SLEEPING (its timer is armed for the holder's PTTL
 * or the caller's deadline, whichever is first), WAKING (an event chose
 * it; its timer is armed for 0 ms, so that an attempt never starts inside
 * a hiredis callback or inside rl_pubsub_wait itself) or ATTEMPTING (an
 * acquire round, or the jittered retry after a quorum failure, is under
 * way).
 *
 * An event (an unlock message, or a synthetic one: the subscription was
 * confirmed or restored) goes to the first waiter only, so one unlock
 * wakes one waiter and not all of them. If the first waiter is already
 * attempting, its attempt may have been decided before the unlock, so it
 * is marked poked and retries at once if that attempt fails. A waiter that
 * an event woke and that leaves without the lock (deadline, cancel) hands
 * the wake on to the next one, so that a free lock is never left with
 * everyone asleep.
 *
 * With N masters one unlock publishes up to N messages, a few
 * milliseconds apart. A message from master i starts a new event unless
 * the current event is younger than the master timeout and master i has
 * not yet reported it: each master publishes once per unlock, so a second
 * message from the same master is always a new unlock, and a message from
 * another master within the window is the same unlock seen again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "pubsub.h"
#include "sub.h"
#include "util.h"

enum { W_SLEEPING = 1, W_WAKING, W_ATTEMPTING };

typedef struct rl_psw {
  uv_timer_t timer; /* first: the handle is the waiter */
  rl_list node;     /* in ch->waiters */
  rl_chan *ch;
  rl_req *req; /* NULL once it left */
  int state;
  int poked; /* an event came while it was attempting */
  int woken; /* its current attempt was started by an event */
} rl_psw;

static void on_psw_closed(uv_handle_t *h) { free(h); }

static void on_timer(uv_timer_t *t) {
  rl_psw *w = (rl_psw *)t;
  if (w->req == NULL || w->state == W_ATTEMPTING) return;
  w->woken = w->state == W_WAKING;
  w->state = W_ATTEMPTING;
  rl_acquire_retry(w->req);
}

/* Chooses w for the next attempt, on the next loop iteration. */
static void wake(rl_psw *w) {
  switch (w->state) {
    case W_SLEEPING:
      w->state = W_WAKING;
      uv_timer_start(&w->timer, on_timer, 0, 0);
      break;
    case W_ATTEMPTING:
      w->poked = 1;
      break;
    default: /* already waking: its attempt starts after this event */
      break;
  }
}

static void wake_first(rl_chan *ch) {
  if (rl_list_empty(&ch->waiters)) return;
  wake(rl_container_of(ch->waiters.next, rl_psw, node));
}

void rl_chan_event(rl_chan *ch, int idx) {
  if (idx >= 0) {
    uint64_t bit = 1ull << idx, now = rl_now_ms();
    uint64_t window = (uint64_t)ch->ps->client->opts.master_timeout_ms;
    if (ch->event_ms != 0 && now - ch->event_ms <= window &&
        !(ch->event_mask & bit)) {
      ch->event_mask |= bit; /* the same unlock, from another master */
      return;
    }
    ch->event_ms = now;
    ch->event_mask = bit;
  }
  wake_first(ch);
}

/* How long a waiter sleeps without an event: the holder's PTTL (the lock
 * is free by then at the latest), capped by the caller's deadline. */
static uint64_t sleep_ms(rl_req *req, int64_t pttl) {
  rl_client *c = req->lock->client;
  uint64_t ms;
  if (pttl < 0) /* no expiry known: a leaked key; look again now and then */
    ms = (uint64_t)c->opts.watchdog_timeout_ms;
  else
    ms = (uint64_t)pttl + 1;
  if (req->deadline != RL_FOREVER) {
    uint64_t now = rl_now_ms();
    uint64_t left = req->deadline > now ? req->deadline - now : 0;
    if (left < ms) ms = left;
  }
  return ms;
}

void rl_pubsub_wait(rl_req *req, int64_t holder_pttl) {
  rl_client *c = req->lock->client;
  if (rl_client_closing(c)) {
    rl_req_finish(req, RLOCK_ECLOSED);
    return;
  }
  rl_psw *w = req->psw;
  if (w != NULL) {
    if (w->poked) {
      /* An event came while this attempt was out: it may have lost the
       * race with the unlock, so try again at once. */
      w->poked = 0;
      w->state = W_WAKING;
      uv_timer_start(&w->timer, on_timer, 0, 0);
      return;
    }
    w->woken = 0;
    w->state = W_SLEEPING;
    uv_timer_start(&w->timer, on_timer, sleep_ms(req, holder_pttl), 0);
    return;
  }
  rl_pubsub *ps = rl_pubsub_get(c);
  w = calloc(1, sizeof *w);
  rl_chan *ch = NULL;
  if (ps == NULL || w == NULL ||
      (ch = rl_chan_ref(ps, req->lock->channel, req->lock->channellen)) ==
          NULL) {
    free(w);
    rl_req_finish(req, RLOCK_ENOMEM);
    return;
  }
  uv_timer_init(c->loop, &w->timer);
  w->ch = ch;
  w->req = req;
  req->psw = w;
  rl_list_push_back(&ch->waiters, &w->node);
  RL_ADD(c->metrics.waiters, 1);
  w->state = W_SLEEPING;
  uv_timer_start(&w->timer, on_timer, sleep_ms(req, holder_pttl), 0);
  /* Only now, with the waiter queued: a confirmation may come at once. */
  rl_chan_sync(ch);
}

/* 1 if req's owner holds the lock now (its acquisition succeeded). */
static int owner_holds(rl_req *req) {
  rl_hold *h = rl_req_hold(req);
  return h != NULL && !h->lost && h->count > 0;
}

void rl_pubsub_leave(rl_req *req) {
  rl_psw *w = req->psw;
  if (w == NULL) return;
  req->psw = NULL;
  rl_chan *ch = w->ch;
  int pass = (w->woken || w->state == W_WAKING || w->poked) &&
             !owner_holds(req) && !rl_client_closing(req->lock->client);
  rl_list_remove(&w->node);
  RL_ADD(req->lock->client->metrics.waiters, -1);
  w->req = NULL;
  uv_close((uv_handle_t *)&w->timer, on_psw_closed);
  if (pass) wake_first(ch);
  rl_chan_unref(ch);
}

/* --- cancellation ----------------------------------------------------------- */

int rl_pubsub_cancel(rlock *lock, const char *owner, size_t ownerlen) {
  rl_client *c = lock->client;
  rl_list *n;
  for (n = c->active.next; n != &c->active; n = n->next) {
    rl_req *r = rl_container_of(n, rl_req, node);
    if (r->kind != RL_REQ_ACQUIRE || r->waiter != NULL || r->deciding)
      continue;
    if (r->lock->keylen != lock->keylen ||
        memcmp(r->lock->key, lock->key, lock->keylen) != 0)
      continue;
    if (r->ownerlen != ownerlen || memcmp(r->owner, owner, ownerlen) != 0)
      continue;
    if (r->round != NULL && r->granted_mask != 0) {
      /* Cancelled while writing back its fencing token: the grants it
       * already has are given back rather than left to expire. */
      for (int i = 0; i < c->nmasters; i++)
        if (r->granted_mask & (1ull << i))
          rl_undo_grant(c, r->lock->key, r->lock->keylen, r->owner,
                        r->ownerlen, i);
      r->granted_mask = 0;
    }
    rl_req_finish(r, RLOCK_ECANCELED);
    return 0;
  }
  return RLOCK_ENOTOWNER;
}

void rl_cancel_start(rl_req *req) {
  rl_req_finish(req, rl_pubsub_cancel(req->lock, req->owner, req->ownerlen));
}
