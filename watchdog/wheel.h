/*
 * The hashed timer wheel behind the lease-renewal watchdog. Every held lock
 * embeds one rl_wheel_node, so that arming, re-arming and cancelling a
 * renewal cost O(1) and no allocation. The wheel is pure bookkeeping: it
 * knows no clock and no event loop, and time reaches it only through the
 * now_ms arguments, which lets the unit tests drive it without sleeping.
 * The driver runs one timer while rl_wheel_count() is not zero, calls
 * rl_wheel_advance() when it fires and re-arms it with rl_wheel_next_ms().
 *
 * Time is cut into ticks of tick_ms. A node due at tick T sits in slot
 * T % nslots with a rounds count of the full revolutions it must still
 * wait. A node never fires before its expire_ms: rl_wheel_advance(now)
 * fires exactly the armed nodes whose expire_ms <= now, in order of their
 * ticks, where a node inserted with its tick already past counts as due on
 * the wheel's current tick. Nodes due on the same tick fire in no set order.
 *
 * Not thread-safe; all calls for one wheel must come from one thread.
 */
#ifndef RL_WHEEL_H
#define RL_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#include "rlock.h"

/* Intrusive: embedded in each held lock, of which a client may have a
 * million, so it is kept to 32 bytes: rounds and armed share a word. */
typedef struct rl_wheel_node {
  struct rl_wheel_node *next, *prev;    /* slot list links; NULL when not armed */
  uint64_t expire_ms;                   /* absolute due time */
  uint64_t rounds : 63;                 /* full revolutions still to wait */
  uint64_t armed : 1;                   /* 1 while in the wheel */
} rl_wheel_node;

typedef void (*rl_wheel_cb)(rl_wheel_node *node, void *arg);

typedef struct rl_wheel {
  rl_wheel_node *slots;     /* nslots circular lists, each with a sentinel */
  rl_wheel_node deferred;   /* nodes inserted while an advance runs */
  unsigned nslots;
  uint64_t tick_ms;
  uint64_t cur_tick;        /* the tick of the last advance (or of init) */
  uint64_t now_ms;          /* the time of the last advance (or of init) */
  size_t count;             /* armed nodes, deferred ones included */
  int advancing;            /* 1 while rl_wheel_advance() runs callbacks */
  int rest;                 /* cur_tick's slot may hold a node due within
                               cur_tick: the last advance ended before the
                               tick's last ms, or an overdue node was put
                               there. Else the next advance need not walk
                               that slot again (a thousand nodes when a
                               million locks are renewed). */
  /* The last placement's arithmetic, by expire_ms and cur_tick: the holds
   * a renewal answer re-arms all fall due at one time, and each placement
   * took three 64-bit divisions. */
  int memo_valid;
  uint64_t memo_expire, memo_cur, memo_tick, memo_rounds, memo_slot;
} rl_wheel;

/* nslots >= 1, tick_ms >= 1. Returns 0, RLOCK_EINVAL on a bad argument
 * (or a NULL wheel) or RLOCK_ENOMEM if the slots cannot be allocated. */
int rl_wheel_init(rl_wheel *w, unsigned nslots, uint64_t tick_ms,
                  uint64_t now_ms);

/* Frees the slots. Nodes still armed are not touched: their links are left
 * stale, and they must go through rl_wheel_node_init() before reuse. */
void rl_wheel_free(rl_wheel *w);

/* Marks a node as not armed; call it once before the node's first use. */
void rl_wheel_node_init(rl_wheel_node *n);

/* Arms n to fire at expire_ms, in O(1). An armed node is moved (cancel and
 * insert). An expire_ms in the past fires on the next advance; a node
 * inserted from a callback never fires within the advance that runs it. */
void rl_wheel_insert(rl_wheel *w, rl_wheel_node *n, uint64_t expire_ms);

/* Disarms n in O(1); a no-op if it is not armed. Safe from a callback, on
 * any node, including one that would have fired in the same advance. */
void rl_wheel_cancel(rl_wheel *w, rl_wheel_node *n);

/* The number of armed nodes. */
size_t rl_wheel_count(const rl_wheel *w);

/* Moves the wheel's time to now_ms (time never goes back: an earlier now_ms
 * counts as the last one) and fires every node whose expire_ms <= now_ms.
 * A node is disarmed before its callback runs. The callback may cancel and
 * insert any node, the fired one included, but must not advance or free
 * the wheel (a nested advance returns 0 and does nothing). Returns how many
 * nodes fired. Costs O(ticks + fired) for a jump of up to nslots ticks, and
 * O(nslots + count + k log k) for a longer one, where k nodes fell due more
 * than a revolution before now_ms. */
size_t rl_wheel_advance(rl_wheel *w, uint64_t now_ms, rl_wheel_cb cb,
                        void *arg);

/* The ms from now_ms until the wheel next needs advancing: 0 if a node is
 * already due, UINT64_MAX if the wheel is empty. Never later than the
 * earliest expire_ms, and never 0 when nothing is due; it may be the start
 * of the earliest node's tick rather than its expire_ms (then the next
 * call, after advancing there, is exact). At most one revolution when
 * every node is further away. O(1) when empty; otherwise O(nslots), plus
 * the nodes of cur_tick's slot up to its first with no rounds left (all
 * of them when the last advance ended mid-tick or an overdue node was
 * inserted), and of the first later slot with a node due on its tick up
 * to that node when that tick starts after now_ms. */
uint64_t rl_wheel_next_ms(const rl_wheel *w, uint64_t now_ms);

#endif
