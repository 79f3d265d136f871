/*
 * The watchdog's timer wheel: slot lists, the rounds bookkeeping and the
 * advance loop. It is kept apart from the libuv driver so that every rule
 * about when a node fires can be tested here with made-up clocks.
 *
 * Invariant, between advances: a node in slot s with rounds r is due on the
 * (r + 1)th tick after cur_tick that maps to s, or it is overdue (its tick
 * is cur_tick or earlier, and then it sits in cur_tick's slot with rounds 0).
 * Only ticks newer than cur_tick ("fresh" visits) count rounds down; the
 * slot of cur_tick itself is looked at again by the next advance, because
 * that tick may have been only partly over when the last advance ran.
 */
#include "wheel.h"

#include <stdlib.h>

static void rl__link_tail(rl_wheel_node *head, rl_wheel_node *n) {
  n->prev = head->prev;
  n->next = head;
  head->prev->next = n;
  head->prev = n;
}

static void rl__unlink(rl_wheel_node *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n->prev = NULL;
}

/* A list head (a slot, or a list a walk detaches) uses only the links. */
static void rl__head_init(rl_wheel_node *h) { h->next = h->prev = h; }

int rl_wheel_init(rl_wheel *w, unsigned nslots, uint64_t tick_ms,
                  uint64_t now_ms) {
  unsigned i;

  if (w == NULL || nslots == 0 || tick_ms == 0)
    return RLOCK_EINVAL;
  w->slots = calloc(nslots, sizeof(*w->slots));
  if (w->slots == NULL)
    return RLOCK_ENOMEM;
  for (i = 0; i < nslots; i++)
    rl__head_init(&w->slots[i]);
  rl__head_init(&w->deferred);
  w->nslots = nslots;
  w->tick_ms = tick_ms;
  w->cur_tick = now_ms / tick_ms;
  w->now_ms = now_ms;
  w->count = 0;
  w->advancing = 0;
  w->rest = 0;
  w->memo_valid = 0;
  return 0;
}

void rl_wheel_free(rl_wheel *w) {
  free(w->slots);
  w->slots = NULL;
  w->count = 0;
}

void rl_wheel_node_init(rl_wheel_node *n) {
  n->next = n->prev = NULL;
  n->expire_ms = n->rounds = 0;
  n->armed = 0;
}

/* Puts an unlinked node in its slot, with rounds counted from cur_tick. */
static void rl__place(rl_wheel *w, rl_wheel_node *n) {
  uint64_t tick, delta, rounds;

  if (!w->memo_valid || n->expire_ms != w->memo_expire ||
      w->cur_tick != w->memo_cur) {
    tick = n->expire_ms / w->tick_ms;
    w->memo_valid = 1;
    w->memo_expire = n->expire_ms;
    w->memo_cur = w->cur_tick;
    w->memo_tick = tick;
    if (tick > w->cur_tick) {
      /* Fresh visits of the slot come delta, delta - nslots, ... ticks
       * from now; the last of them, at tick itself, is the one that
       * fires. */
      delta = tick - w->cur_tick;
      rounds = (delta - 1) / w->nslots;
      /* Below 2^63 unless a one-slot wheel is given a time 2^63 ticks
       * away; then it waits fewer rounds, and still never fires early. */
      w->memo_rounds = rounds >> 63 ? (UINT64_MAX >> 1) : rounds;
      w->memo_slot = tick % w->nslots;
    }
  }
  if (w->memo_tick <= w->cur_tick) {
    /* Overdue: the next advance looks at cur_tick's slot again. */
    n->rounds = 0;
    w->rest = 1;
    rl__link_tail(&w->slots[w->cur_tick % w->nslots], n);
    return;
  }
  n->rounds = w->memo_rounds;
  rl__link_tail(&w->slots[w->memo_slot], n);
}

void rl_wheel_insert(rl_wheel *w, rl_wheel_node *n, uint64_t expire_ms) {
  if (n->armed)
    rl_wheel_cancel(w, n);
  n->expire_ms = expire_ms;
  n->armed = 1;
  w->count++;
  if (w->advancing) {
    /* Placed when the advance ends, so that it cannot fire within it. */
    n->rounds = 0;
    rl__link_tail(&w->deferred, n);
    return;
  }
  rl__place(w, n);
}

void rl_wheel_cancel(rl_wheel *w, rl_wheel_node *n) {
  if (!n->armed)
    return;
  rl__unlink(n);
  n->rounds = 0;
  n->armed = 0;
  w->count--;
}

size_t rl_wheel_count(const rl_wheel *w) {
  return w->count;
}

/* Fires the due nodes of list, which the caller has detached, and puts the
 * others back in slot. Nodes are taken off the head one at a time, so a
 * callback may unlink any node, those still in list too, without breaking
 * the walk. A node is due if it has no rounds left, its expire_ms has come,
 * and its tick is this one or earlier (a node a whole revolution ahead
 * shares cur_tick's slot with rounds 0, and must wait for its own tick).
 * Only a fresh visit counts rounds down. */
static size_t rl__fire(rl_wheel *w, rl_wheel_node *list, rl_wheel_node *slot,
                       uint64_t tick, uint64_t now_ms, int fresh,
                       rl_wheel_cb cb, void *arg) {
  rl_wheel_node *n;
  size_t fired = 0;
  /* A node's tick is after this one if its expire_ms reaches the next
   * tick's start: a comparison per node rather than a division. None is
   * when that start is past UINT64_MAX. */
  int later_possible = tick < UINT64_MAX / w->tick_ms;
  uint64_t next_start = later_possible ? (tick + 1) * w->tick_ms : 0;

  while (list->next != list) {
    n = list->next;
    rl__unlink(n);
    if (n->rounds > 0 || n->expire_ms > now_ms ||
        (later_possible && n->expire_ms >= next_start)) {
      if (n->rounds > 0 && fresh)
        n->rounds--;
      rl__link_tail(slot, n);
      continue;
    }
    n->armed = 0;
    w->count--;
    fired++;
    cb(n, arg);
  }
  return fired;
}

/* Visits the slot of tick: detaches its list, then fires from it. */
static size_t rl__visit(rl_wheel *w, uint64_t tick, uint64_t now_ms, int fresh,
                        rl_wheel_cb cb, void *arg) {
  rl_wheel_node *slot = &w->slots[tick % w->nslots];
  rl_wheel_node pending;

  if (slot->next == slot)
    return 0;
  pending.next = slot->next;
  pending.prev = slot->prev;
  pending.next->prev = pending.prev->next = &pending;
  rl__head_init(slot);
  return rl__fire(w, &pending, slot, tick, now_ms, fresh, cb, arg);
}

/* Sorts a NULL-terminated chain (next links only) by expire_ms, stably. */
static rl_wheel_node *rl__sort(rl_wheel_node *a) {
  rl_wheel_node *b, *slow, *fast, head, *t = &head;

  if (a == NULL || a->next == NULL)
    return a;
  for (slow = a, fast = a->next; fast != NULL && fast->next != NULL;
       fast = fast->next->next)
    slow = slow->next;
  b = slow->next;
  slow->next = NULL;
  a = rl__sort(a);
  b = rl__sort(b);
  while (a != NULL && b != NULL) {
    if (b->expire_ms < a->expire_ms) {
      t->next = b;
      b = b->next;
    } else {
      t->next = a;
      a = a->next;
    }
    t = t->next;
  }
  t->next = a != NULL ? a : b;
  return head.next;
}

/* Accounts, without firing anything, for the skip fresh ticks that follow
 * cur_tick: each slot is walked once and its nodes' rounds reduced by the
 * number of times the skipped ticks visit it. The nodes that fell due in
 * the skipped span go to the list due, in order of expire_ms. */
static void rl__skip(rl_wheel *w, uint64_t skip, rl_wheel_node *due) {
  uint64_t nslots = w->nslots;
  uint64_t first = (w->cur_tick + 1) % nslots;
  uint64_t s, visits;
  rl_wheel_node *head, *n, *next, *chain = NULL;

  for (s = 0; s < nslots; s++) {
    head = &w->slots[s];
    visits = skip / nslots + ((s + nslots - first) % nslots < skip % nslots);
    for (n = head->next; n != head; n = next) {
      next = n->next;
      if (n->rounds >= visits) {
        n->rounds -= visits;
        continue;
      }
      rl__unlink(n);
      n->rounds = 0;
      n->next = chain;
      chain = n;
    }
  }
  rl__head_init(due);
  for (n = rl__sort(chain); n != NULL; n = next) {
    next = n->next;
    rl__link_tail(due, n);
  }
}

size_t rl_wheel_advance(rl_wheel *w, uint64_t now_ms, rl_wheel_cb cb,
                        void *arg) {
  uint64_t now_tick, jump, start, steps, i;
  rl_wheel_node *n, due;
  size_t fired;

  if (w->advancing)
    return 0;
  if (now_ms < w->now_ms)
    now_ms = w->now_ms;
  now_tick = now_ms / w->tick_ms;
  if (w->count == 0) {
    w->cur_tick = now_tick;
    w->now_ms = now_ms;
    w->rest = 0;
    return 0;
  }

  w->advancing = 1;
  /* The rest of the last advance's tick comes first, if it has any. */
  fired = w->rest ? rl__visit(w, w->cur_tick, now_ms, 0, cb, arg) : 0;
  jump = now_tick - w->cur_tick;
  start = w->cur_tick + 1;
  steps = jump;
  if (jump > w->nslots) {
    /* Only the last revolution is walked tick by tick. The nodes due
     * before it are sorted instead, and fire first. */
    rl__skip(w, jump - w->nslots, &due);
    fired += rl__fire(w, &due, &w->slots[now_tick % w->nslots], now_tick,
                      now_ms, 0, cb, arg);
    start = now_tick - w->nslots + 1;
    steps = w->nslots;
  }
  for (i = 0; i < steps && w->count > 0; i++)
    fired += rl__visit(w, start + i, now_ms, 1, cb, arg);
  w->cur_tick = now_tick;
  w->now_ms = now_ms;
  w->advancing = 0;
  /* At the tick's last ms, every node due within it has fired. */
  w->rest = now_ms % w->tick_ms != w->tick_ms - 1;

  /* Nodes the callbacks inserted: their rounds count from the new tick. */
  while (w->deferred.next != &w->deferred) {
    n = w->deferred.next;
    rl__unlink(n);
    rl__place(w, n);
  }
  return fired;
}

uint64_t rl_wheel_next_ms(const rl_wheel *w, uint64_t now_ms) {
  uint64_t best = UINT64_MAX;
  uint64_t k, tick, start;
  const rl_wheel_node *head, *n;
  int found;

  if (w->count == 0)
    return UINT64_MAX;
  /* Deferred nodes exist only while callbacks run; count them anyway. */
  for (n = w->deferred.next; n != &w->deferred; n = n->next)
    if (n->expire_ms < best)
      best = n->expire_ms;
  /* Nodes with rounds 0 in the slot k ticks ahead (k >= 1) are due on
   * exactly that tick, so the first such slot bounds everything after it;
   * when that tick starts after now_ms, its start is the answer, found at
   * the slot's first such node (a slot holds a thousand nodes when a
   * million locks are renewed: reading each one is a cache miss), and the
   * driver that wakes then finds the exact time in cur_tick's slot.
   * That slot (k = 0) mixes overdue nodes and nodes a full revolution
   * ahead; their expire_ms says which, so take the minimum. */
  for (k = 0; k < w->nslots; k++) {
    head = &w->slots[(w->cur_tick + k) % w->nslots];
    /* Without a rest, cur_tick's slot holds nothing due before its next
     * turn, a revolution on. */
    start = (w->cur_tick + (k > 0 ? k : w->nslots)) * w->tick_ms;
    found = 0;
    for (n = head->next; n != head; n = n->next) {
      if (n->rounds == 0) {
        found = 1;
        if ((k > 0 || !w->rest) && start > now_ms) {
          if (start < best)
            best = start;
          break;
        }
        if (n->expire_ms < best)
          best = n->expire_ms;
      }
    }
    if (found && k > 0)
      break;
  }
  if (best == UINT64_MAX) {
    /* Every node is more than a revolution ahead: wake a revolution on,
     * when their rounds will have come down (at the latest). */
    tick = w->cur_tick + w->nslots + 1;
    if (tick <= UINT64_MAX / w->tick_ms)
      best = tick * w->tick_ms;
  }
  return best <= now_ms ? 0 : best - now_ms;
}
