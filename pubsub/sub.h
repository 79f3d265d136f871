/*
 * Internal to pubsub/: subscriber connections (one per master, separate
 * from the command connections), the client's table of channels, and what
 * each connection has subscribed. sub.c owns the connections and the
 * SUBSCRIBE/UNSUBSCRIBE traffic; waiters.c owns the wait queues and decides
 * who wakes. Loop thread only.
 */
#ifndef RL_SUB_H
#define RL_SUB_H

#include <hiredis/async.h>
#include <stdint.h>
#include <uv.h>

#include "client.h"
#include "list.h"
#include "url.h"

typedef struct rl_pubsub rl_pubsub;
typedef struct rl_chan rl_chan;

/*
 * A channel some waiter of this client needs, or needed and is still
 * being unsubscribed. Per subscriber connection i, at most one of bit i of
 * sending (SUBSCRIBE in flight), acked (subscribed) and leaving
 * (UNSUBSCRIBE in flight) is set: a connection never has two commands in
 * flight for one channel, because hiredis 0.14.1 keys its callbacks by
 * channel name and an UNSUBSCRIBE reply that overtakes a fresh SUBSCRIBE
 * would delete the new callback.
 */
struct rl_chan {
  rl_chan *next; /* hash bucket chain */
  rl_pubsub *ps;
  int refs;        /* waiters in the queue */
  rl_list waiters; /* FIFO of waiters (waiters.c) */
  uint64_t sending, acked, leaving;
  uint64_t ever;   /* connections that acked since refs last became 1 */
  int confirmed;   /* acked on enough connections; see rl_chan_check */
  uint64_t event_ms;   /* the last unlock event (dedup across masters) */
  uint64_t event_mask; /* masters whose message counted for that event */
  size_t len;
  char name[];
};

enum { RL_SUB_DOWN = 0, RL_SUB_CONNECTING, RL_SUB_READY, RL_SUB_CLOSED };

typedef struct rl_sub {
  rl_pubsub *ps;
  int idx;
  int state;
  redisAsyncContext *ac;
  uv_timer_t timer; /* connect timeout */
  uv_timer_t retry; /* reconnect backoff */
  uint64_t backoff_ms;
  uint64_t connects;
} rl_sub;

struct rl_pubsub {
  rl_client *client;
  int n, quorum;
  rl_sub *subs;
  rl_chan **buckets;
  size_t nbuckets, nchans;
  int closing;
  int handles_open;
  size_t anchorlen;
  char anchor[128];
};

/* The client's pub/sub state, made (and connecting) on first use. NULL
 * when out of memory. */
rl_pubsub *rl_pubsub_get(rl_client *c);

/* The channel called name, made if needed; refs is incremented. The
 * caller queues its waiter, then calls rl_chan_sync. NULL when out of
 * memory. */
rl_chan *rl_chan_ref(rl_pubsub *ps, const char *name, size_t len);

/* Brings every connection's subscription of ch in line with ch->refs and
 * checks confirmation. */
void rl_chan_sync(rl_chan *ch);

/* Drops a reference; after the last, the channel is unsubscribed and
 * freed once no command for it is in flight. */
void rl_chan_unref(rl_chan *ch);

/* waiters.c: an unlock message from master idx (or -1 for a synthetic
 * event: confirmation, or a subscription restored after a reconnect). */
void rl_chan_event(rl_chan *ch, int idx);

#endif
