/*
 * The retry policy of every acquisition (retry.c): what an attempt that
 * failed does next, for a lock of any kind, a semaphore's permits, a set
 * of locks and a latch's awaiter alike. Loop thread only.
 */
#ifndef RL_RETRY_H
#define RL_RETRY_H

#include <stdint.h>

#include "client.h"

/* waiter_alive_ms as set, or its automatic value. */
int64_t rl_waiter_alive_ms(const rl_client *c);

/* How often a queued waiter of req's kind must attempt to stay queued
 * (a third of waiter_alive_ms), or 0 when it need not. */
uint64_t rl_heartbeat_ms(const rl_req *req);

/* The retry delay: retry_delay_ms and a random jitter up to
 * retry_jitter_ms, at least 1 ms. */
uint64_t rl_retry_delay_ms(const rl_client *c);

/* rl_retry_next's answers. */
enum {
  RL_RETRY_DONE = 0, /* finish the request with p->err */
  RL_RETRY_WAIT,     /* wait for an event (pub/sub) at most p->ms */
  RL_RETRY_POLL,     /* try again after p->ms */
  RL_RETRY_BACKOFF   /* after a split: pause p->ms, no event cuts it short */
};

typedef struct rl_retry {
  /* In: why the attempt failed (RL_EBUSY: held by another). Out, with
   * RL_RETRY_DONE: the status to finish with. */
  int err;
  /* In, with RL_EBUSY: the ms until the holder's lease runs out, or -1
   * when unknown. */
  int64_t pttl;
  /* In: the attempt failed on a split (a majority granted, but masters
   * chose differently and nothing could be held: the semaphore's slots),
   * counted in *splits; any other failure sets *splits to 0. */
  int split;
  int *splits;
  uint64_t ms; /* out */
} rl_retry;

/* Decides what req does after a failed attempt (retry.c says how). */
int rl_retry_next(rl_req *req, rl_retry *p);

#endif
