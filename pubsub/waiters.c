/*
 * Wait queues: the waiting side of pub/sub waiting.
 *
 * Every waiter of one channel sits in the channel's FIFO queue from its
 * join until it leaves. It is in one of three states: SLEEPING (its timer
 * is armed for the sleep its owner asked for), WAKING (an event chose it;
 * its timer is armed for 0 ms, so that its callback never runs inside a
 * message's dispatch or inside this interface) or ATTEMPTING (its
 * callback ran; the owner's attempt is under way until it sleeps again or
 * leaves).
 *
 * An event (an unlock message, or a synthetic one: the subscription was
 * confirmed or restored) goes to the first waiter only, so one unlock
 * wakes one waiter and not all of them. If the first waiter is already
 * attempting, its attempt may have been decided before the unlock, so it
 * is marked poked and wakes again at once if that attempt fails. A waiter
 * that an event woke and that leaves without using it hands the wake on
 * to the next one (rl_psw_leave's may_pass).
 *
 * With N masters one unlock publishes up to N messages, a few
 * milliseconds apart. A message from master i starts a new event unless
 * the current event is younger than the event window and master i has not
 * yet reported it: each master publishes once per unlock, so a second
 * message from the same master is always a new unlock, and a message from
 * another master within the window is the same unlock seen again. It
 * wakes no other waiter, but it does wake again the waiter the event
 * chose, if that one still waits: its attempt may have run before the
 * unlock reached those masters (they apply it at different times), and
 * failed there; the later messages say that it has now. Dropping them
 * left the lock free with its next owner asleep until its sleep ran out.
 */
#include <stdlib.h>

#include "sub.h"
#include "util.h"

enum { W_SLEEPING = 1, W_WAKING, W_ATTEMPTING };

struct rl_psw {
  uv_timer_t timer; /* first: the handle is the waiter */
  rl_list node;     /* in ch->waiters */
  rl_chan *ch;
  rl_psw_cb cb;
  void *data;
  int left;  /* it left: the timer is closing */
  int state;
  int poked; /* an event came while it was attempting */
  int woken; /* its current attempt was started by an event */
};

static void on_psw_closed(uv_handle_t *h) { free(h); }

static void on_timer(uv_timer_t *t) {
  rl_psw *w = (rl_psw *)t;
  if (w->left || w->state == W_ATTEMPTING) return;
  w->woken = w->state == W_WAKING;
  w->state = W_ATTEMPTING;
  w->cb(w, w->data);
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

/* Wakes the first waiter; it is the one the current event chose. */
static void wake_first(rl_chan *ch) {
  if (rl_list_empty(&ch->waiters)) return;
  ch->event_w = rl_container_of(ch->waiters.next, rl_psw, node);
  wake(ch->event_w);
}

/* An unlock message on ch from master idx, or with -1 a synthetic event
 * (confirmation, or a subscription restored after a reconnect): sub.c
 * calls it through rl_pubsub.event. */
static void chan_event(rl_chan *ch, int idx) {
  if (idx >= 0) {
    /* A master published: the lock was free there, and the run of
     * hand-offs ends. */
    rl_chan_run_end(ch->ps, ch->name, ch->len);
    uint64_t bit = 1ull << idx, now = rl_now_ms();
    uint64_t window = ch->ps->cfg.event_window_ms;
    if (ch->event_ms != 0 && now - ch->event_ms <= window &&
        !(ch->event_mask & bit)) {
      ch->event_mask |= bit; /* the same unlock, from another master */
      if (ch->event_w != NULL) wake(ch->event_w);
      return;
    }
    ch->event_ms = now;
    ch->event_mask = bit;
  }
  wake_first(ch);
}

rl_pubsub *rl_pubsub_new(const rl_pubsub_config *cfg) {
  return rl_pubsub_make(cfg, chan_event);
}

void rl_pubsub_unlocked(rl_pubsub *ps, const char *channel, size_t len,
                        uint64_t published) {
  rl_chan *ch = rl_chan_find(ps, channel, len);
  if (ch == NULL || ch->refs == 0 || rl_list_empty(&ch->waiters)) return;
  /* Only the subscribed masters' messages will come. */
  uint64_t coming = published & ch->acked;
  uint64_t now = rl_now_ms();
  if (ch->event_ms != 0 && now - ch->event_ms <= ch->ps->cfg.event_window_ms &&
      (ch->event_mask & coming) != 0)
    return; /* a message of one of them already counted: see waitq.h */
  /* An event whose messages, from the masters in coming, are still to
   * come: every other master counts as having reported it already, so
   * that a message of theirs is a new unlock (chan_event). */
  ch->event_ms = now;
  ch->event_mask = ~coming;
  wake_first(ch);
}

rl_psw *rl_psw_first_idle(rl_pubsub *ps, const char *channel, size_t len,
                          rl_psw_cb cb, unsigned max_run, void **data) {
  rl_chan *ch = rl_chan_find(ps, channel, len);
  if (ch == NULL || ch->refs == 0 || rl_list_empty(&ch->waiters))
    return NULL;
  rl_psw *w = rl_container_of(ch->waiters.next, rl_psw, node);
  if (w->cb != cb || w->state == W_ATTEMPTING) return NULL;
  /* The run's entry is made now, so that the claim that may follow
   * always has it to count in: a channel for which there is no room gets
   * no hand-off. */
  rl_chan_run *run = rl_chan_run_of(ps, channel, len, 1);
  if (run == NULL || run->count >= max_run) return NULL;
  *data = w->data;
  return w;
}

void rl_psw_claim(rl_psw *w) {
  uv_timer_stop(&w->timer);
  w->woken = w->state == W_WAKING;
  w->state = W_ATTEMPTING;
  rl_chan_run *run = rl_chan_run_of(w->ch->ps, w->ch->name, w->ch->len, 1);
  if (run != NULL) run->count++;
}

unsigned rl_psw_handoffs(rl_pubsub *ps, const char *channel, size_t len,
                         int reset) {
  if (reset) return rl_chan_run_end(ps, channel, len);
  const rl_chan_run *run = rl_chan_run_of(ps, channel, len, 0);
  return run != NULL ? run->count : 0;
}

rl_psw *rl_psw_join(rl_pubsub *ps, const char *channel, size_t len,
                    uint64_t sleep_ms, rl_psw_cb cb, void *data) {
  rl_psw *w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  rl_chan *ch = rl_chan_ref(ps, channel, len);
  if (ch == NULL) {
    free(w);
    return NULL;
  }
  uv_timer_init(ps->cfg.loop, &w->timer);
  w->ch = ch;
  w->cb = cb;
  w->data = data;
  rl_list_push_back(&ch->waiters, &w->node);
  w->state = W_SLEEPING;
  uv_timer_start(&w->timer, on_timer, sleep_ms, 0);
  /* Only now, with the waiter queued: a confirmation may come at once. */
  rl_chan_sync(ch);
  return w;
}

void rl_psw_sleep(rl_psw *w, uint64_t sleep_ms) {
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
  uv_timer_start(&w->timer, on_timer, sleep_ms, 0);
}

void rl_psw_leave(rl_psw *w, int may_pass) {
  rl_chan *ch = w->ch;
  int pass = may_pass && (w->woken || w->state == W_WAKING || w->poked);
  rl_list_remove(&w->node);
  if (ch->event_w == w) ch->event_w = NULL;
  w->left = 1;
  uv_close((uv_handle_t *)&w->timer, on_psw_closed);
  if (pass) wake_first(ch);
  rl_chan_unref(ch);
}

int rl_psw_own_conns(rl_psw *w, rl_conn **conns, int cap) {
  rl_pubsub *ps = w->ch->ps;
  if (w->left || ps->closing || ps->n > cap) return -1;
  for (int i = 0; i < ps->n; i++) {
    rl_conn *conn = rl_master_sub_where(ps->masters[i], w->ch->name, w->ch->len);
    if (conn == NULL || conn->cfg == NULL ||
        !rl_conn_sub_idle(conn, w->ch->name, w->ch->len))
      return -1;
    conns[i] = conn;
  }
  return ps->n;
}

int rl_psw_run_woken(rl_psw *w) {
  if (w->left || w->state != W_WAKING) return 0;
  uv_timer_stop(&w->timer);
  on_timer(&w->timer);
  return 1;
}
