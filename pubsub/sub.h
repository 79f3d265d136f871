/*
 * Internal to pubsub/: the table of channels some waiter needs, and what
 * each master has subscribed (on its own subscriber connections: master.h
 * says where a channel is subscribed, one server or the cluster node of
 * the channel's slot). sub.c owns the SUBSCRIBE/UNSUBSCRIBE traffic;
 * waiters.c owns the wait queues and decides who wakes. Loop thread only.
 */
#ifndef RL_SUB_H
#define RL_SUB_H

#include <stdint.h>
#include <uv.h>

#include "list.h"
#include "master.h"
#include "waitq.h"

typedef struct rl_chan rl_chan;
typedef struct rl_chan_run rl_chan_run;

/* The table of runs of hand-offs (rl_chan_run): buckets, and the most
 * entries it holds. */
#define RL_CHAN_RUN_BUCKETS 64
#define RL_CHAN_RUNS_MAX 1024

/*
 * A channel some waiter needs, or needed and is still being unsubscribed.
 * Per master i, at most one of bit i of sending (SUBSCRIBE in flight),
 * acked (subscribed, on where[i]) and leaving (UNSUBSCRIBE in flight) is
 * set: a master has at most one command in flight per channel, so the
 * bits always say what the master will have once its replies are in, and
 * a channel is freed only when no command for it is in flight (the
 * command's callback finds it by pointer).
 */
struct rl_chan {
  rl_chan *next; /* hash bucket chain */
  rl_pubsub *ps;
  int refs;        /* waiters in the queue */
  rl_list waiters; /* FIFO of waiters (waiters.c) */
  uint64_t sending, acked, leaving;
  uint64_t ever;   /* connections that acked since refs last became 1 */
  int confirmed;   /* acked on enough connections; see chan_check */
  uint64_t event_ms;   /* the last unlock event (dedup across masters) */
  uint64_t event_mask; /* masters whose message counted for that event */
  rl_conn **where;     /* per master, the connection it is acked on */
  struct rl_psw *event_w; /* the waiter that event woke, while it waits */
  size_t len;
  char name[];
};

struct rl_pubsub {
  rl_pubsub_config cfg;
  /* What an event on a channel does (waiters.c's chan_event, set by
   * rl_pubsub_new): idx is the master whose unlock message came, or -1
   * for a synthetic event (confirmation, or a subscription restored after
   * a reconnect). sub.c sees the events and waiters.c, above it, decides
   * who wakes; this pointer is how the one reaches the other. */
  void (*event)(rl_chan *ch, int idx);
  int n, quorum;
  rl_master **masters;
  rl_chan **buckets;
  size_t nbuckets, nchans;
  int closing;
  int open; /* masters whose subscriber side has not closed yet */
  /* Waiters claimed (rl_psw_claim) since the last message from a master,
   * per channel name (rl_chan_run): a channel may be freed and made again
   * between two claims (its last waiter left), so the count cannot live
   * in it. */
  rl_chan_run *runs[RL_CHAN_RUN_BUCKETS];
  size_t nruns;
};

/*
 * The run of one channel, keyed by its exact name: how many of its
 * waiters were claimed since the last message from a master (or the last
 * unlock of this process that published on it). An entry exists only
 * while a run may be under way: it is made when a hand-off is about to be
 * counted and removed when the run ends, so the table holds the channels
 * handed off since their last message, at most RL_CHAN_RUNS_MAX of them:
 * when full, the entry of a channel without waiters makes room, and a
 * channel that still finds none gets no hand-off, which only ends its run
 * sooner; what is left is freed on close.
 */
struct rl_chan_run {
  rl_chan_run *next; /* hash bucket chain */
  unsigned count;
  size_t len;
  char name[];
};

/* The run of channel name: NULL when none is under way, or, with make,
 * made (count 0) if there is room; NULL then when there is none. */
rl_chan_run *rl_chan_run_of(rl_pubsub *ps, const char *name, size_t len,
                            int make);

/* Ends the run of channel name, if any (its entry is freed), and returns
 * its count. */
unsigned rl_chan_run_end(rl_pubsub *ps, const char *name, size_t len);

/* The channel called name, made if needed; refs is incremented. The
 * caller queues its waiter, then calls rl_chan_sync. NULL when out of
 * memory. */
rl_chan *rl_chan_ref(rl_pubsub *ps, const char *name, size_t len);

/* The channel called name, or NULL. */
rl_chan *rl_chan_find(rl_pubsub *ps, const char *name, size_t len);

/* Brings every connection's subscription of ch in line with ch->refs and
 * checks confirmation. */
void rl_chan_sync(rl_chan *ch);

/* Drops a reference; after the last, the channel is unsubscribed and
 * freed once no command for it is in flight. */
void rl_chan_unref(rl_chan *ch);

/* Makes the pub/sub state with event as its event hook (rl_pubsub_new,
 * waiters.c, passes its own) and starts the masters' subscriber side.
 * NULL when out of memory. */
rl_pubsub *rl_pubsub_make(const rl_pubsub_config *cfg,
                          void (*event)(rl_chan *ch, int idx));

#endif
