/*
 * Pub/sub waiting, as a mechanism: subscriptions on every master (on the
 * subscriber connections the masters keep: master.h) and, per channel, a
 * FIFO queue of waiters that unlock messages wake one at a time. It knows nothing of locks: a waiter is a callback and its
 * data, woken when its next attempt is due (an unlock message came, its
 * subscription was confirmed, or its sleep ran out); the lock layer
 * (lib/lock/pubwait.c) decides what an attempt is. Loop thread only.
 */
#ifndef RL_WAITQ_H
#define RL_WAITQ_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "master.h"

typedef struct rl_pubsub rl_pubsub;
typedef struct rl_psw rl_psw;

typedef struct rl_pubsub_config {
  uv_loop_t *loop;
  int n;                      /* masters */
  rl_master *const *masters;  /* the n masters (the array is copied) */
  /* One unlock is published by up to n masters, a few ms apart: a
   * message from another master within this window is the same unlock. */
  uint64_t event_window_ms;
  void *data;
  /* Subscriber connection events, for the owner's log; optional. */
  void (*log)(void *data, int idx, int level, const char *msg);
  /* After rl_pubsub_close, once every subscriber connection closed. */
  void (*closed)(void *data);
} rl_pubsub_config;

/* Makes the pub/sub state and starts the masters' subscriber side. NULL
 * when out of memory. */
rl_pubsub *rl_pubsub_new(const rl_pubsub_config *cfg);

/* Closes the masters' subscriber connections and frees everything once
 * they have closed (then cfg->closed runs). Every waiter must have left. */
void rl_pubsub_close(rl_pubsub *ps);

/* A waiter's next attempt is due. It runs from a timer of its own, never
 * inside a call of this interface but rl_psw_run_woken, whose purpose it
 * is. */
typedef void (*rl_psw_cb)(rl_psw *w, void *data);

/*
 * Queues a waiter on channel (subscribing it if it is the first) and puts
 * it to sleep for at most sleep_ms: cb runs when an event chooses it or
 * the sleep runs out, whichever is first. NULL when out of memory.
 */
rl_psw *rl_psw_join(rl_pubsub *ps, const char *channel, size_t len,
                    uint64_t sleep_ms, rl_psw_cb cb, void *data);

/* After a failed attempt: sleeps again for at most sleep_ms, or, if an
 * event came while the attempt was out (it may have lost the race with
 * that unlock), wakes again at once. */
void rl_psw_sleep(rl_psw *w, uint64_t sleep_ms);

/*
 * Leaves the queue (the channel is unsubscribed after its last waiter);
 * w is freed. With may_pass, a waiter that an event chose and that leaves
 * without having used it (the caller's deadline came, it was cancelled)
 * hands the wake on to the next one, so that a free lock is never left
 * with everyone asleep; the caller passes 0 when the waiter got the lock
 * or the client is closing.
 */
void rl_psw_leave(rl_psw *w, int may_pass);

/*
 * An unlock this process made, known from its reply, which comes about
 * when its message does: wakes the channel's first waiter of this process
 * at once, as the message would, instead of whenever the subscriber
 * connection's read comes round. published has bit i
 * set for each master i that deleted the lock and so published on this
 * channel. Their messages, when they come within the event window, are
 * this same unlock and wake no other waiter (they poke the chosen one
 * again, as a late master's message does); a message from any other
 * master is a new event, as before. Nothing happens when nobody here
 * waits on the channel, or when one of those masters' messages already
 * counted in the current event (the message came first; if it was an
 * earlier unlock's, this one's message will be a new event and wake the
 * waiter then). The caller must know the unlock published on exactly this
 * channel, to its first waiter: the mechanism cannot tell.
 */
void rl_pubsub_unlocked(rl_pubsub *ps, const char *channel, size_t len,
                        uint64_t published);

/*
 * The hand-off (the lock layer's transfer.c): the first waiter of channel,
 * if it joined with cb and is not attempting (it sleeps, or an event chose
 * it and its attempt has not started), and fewer than max_run waiters of
 * the channel were claimed since the last message came from a master
 * (counted by the channel's exact name, in a table of bounded size: a
 * channel it has no room for gets none); else NULL. *data is set to its
 * data.
 */
rl_psw *rl_psw_first_idle(rl_pubsub *ps, const char *channel, size_t len,
                          rl_psw_cb cb, unsigned max_run, void **data);

/* Claims w, as if its callback had run: an attempt of its owner is under
 * way (events poke it, rl_psw_sleep and rl_psw_leave end it as they end
 * any attempt). Counts one hand-off on its channel. */
void rl_psw_claim(rl_psw *w);

/* How many waiters of channel were claimed since the last message from a
 * master (the count is kept by the channel's exact name and outlives the
 * channel's queue); with reset, it starts again from 0. */
unsigned rl_psw_handoffs(rl_pubsub *ps, const char *channel, size_t len,
                         int reset);

/*
 * A caller that waits on its own thread (the lock layer's own wait,
 * client.c): the connections where w's channel is subscribed, one per
 * master (master.h: rl_master_sub_where), into conns[0..n), when each
 * exists and is ready, plain TCP and idle but for that channel's own
 * SUBSCRIBE or UNSUBSCRIBE (rl_conn_sub_idle), so that reading them runs
 * nothing but this mechanism's bookkeeping and the dispatch of messages;
 * else -1. Reading them off the loop thread is the caller's business.
 */
int rl_psw_own_conns(rl_psw *w, rl_conn **conns, int cap);

/*
 * If an event chose w and its callback has not run yet (its 0 ms timer
 * is armed), runs it now, inside this call, exactly as the timer would
 * have; 1 if it ran, else 0. For the same caller, which read the event
 * itself and must not wait for the loop to run the timer.
 */
int rl_psw_run_woken(rl_psw *w);

#endif
