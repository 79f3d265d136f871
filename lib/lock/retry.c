/*
 * The retry policy, one for every acquisition: a lock of any kind, a
 * semaphore's permits, a set of locks (rlock_lock_all) and a latch's
 * awaiter. What differs between them is how they wait (a lock's waiter
 * in its pub/sub wait queue or on a timer, the family's in theirs), not
 * when.
 *
 * A master that refused the script (AUTH, OOM, READONLY...) ends the
 * request at once, rather than retrying into the same refusal until the
 * deadline. Past the deadline the request ends, timed out if the object
 * was held. Held by another, with the pub/sub wait strategy: wait for
 * its unlock message, or until the holder's lease runs out at the latest
 * (a leaked key without expiry: look again every watchdog timeout).
 * Otherwise: the retry delay with its jitter, or the holder's remaining
 * lease when that is shorter. A waiter queued on the masters (fair,
 * write) attempts at least every third of waiter_alive_ms, each attempt
 * keeping it queued. Never past the deadline.
 *
 * After a split (a semaphore: a majority granted, but no n slots had a
 * majority each): every grant of it has been given back, and so have the
 * other contenders' (one waiter per client: waitq.h). Retrying at once,
 * woken by those give-backs' messages, each contender's next acquire
 * lands on every master right behind its own give-back and takes back
 * the very slot it gave back: masters that chose differently stay split,
 * for as long as the contenders keep retrying together (measured: four
 * clients, 111 to 258 attempts per hold, the same slot from the same
 * master after 100% of the splits). So the retry waits a random time
 * first, with no message waking it: whoever comes back first finds the
 * others' grants gone and every master choosing from the same free
 * slots. The window starts at a few of this attempt's round trips and
 * doubles with each split in a row, up to retry_delay_ms +
 * retry_jitter_ms.
 */
#include "retry.h"

#include "kind.h"
#include "lock.h"
#include "util.h"

int64_t rl_waiter_alive_ms(const rl_client *c) {
  int64_t ms = c->opts.waiter_alive_ms;
  if (ms != RLOCK_WAITER_ALIVE_AUTO) return ms;
  ms = 4 * c->opts.master_timeout_ms;
  return ms > 5000 ? ms : 5000;
}

uint64_t rl_heartbeat_ms(const rl_req *req) {
  const rl_kind *k = req->lock->kind;
  if (k == NULL || !k->heartbeat || !req->queued) return 0;
  return (uint64_t)rl_waiter_alive_ms(req->lock->client) / 3;
}

uint64_t rl_retry_delay_ms(const rl_client *c) {
  uint64_t ms = (uint64_t)c->opts.retry_delay_ms +
                rl_random_upto((uint64_t)c->opts.retry_jitter_ms);
  return ms > 0 ? ms : 1;
}

/* The random pause after a split (the top of this file says why). */
static uint64_t split_back_off(rl_req *req, uint64_t now, int *splits) {
  rl_client *c = req->lock->client;
  uint64_t cap = (uint64_t)c->opts.retry_delay_ms +
                 (uint64_t)c->opts.retry_jitter_ms;
  if (cap < 2) cap = 2;
  uint64_t window = 4 * (now - req->t_start) + 2;
  int n = splits != NULL ? *splits : 0;
  for (int k = 0; k < n && window < cap; k++) window *= 2;
  if (window > cap) window = cap;
  if (splits != NULL) (*splits)++;
  return 1 + rl_random_upto(window - 1);
}

int rl_retry_next(rl_req *req, rl_retry *p) {
  rl_client *c = req->lock->client;
  if (!p->split && p->splits != NULL) *p->splits = 0;
  if (p->err == RLOCK_EREDIS) return RL_RETRY_DONE;
  uint64_t now = rl_now_ms();
  if (req->deadline != RL_FOREVER && now >= req->deadline) {
    if (p->err == RL_EBUSY || p->split) p->err = RLOCK_ETIMEDOUT;
    return RL_RETRY_DONE;
  }
  int how;
  if (p->split) {
    p->ms = split_back_off(req, now, p->splits);
    how = RL_RETRY_BACKOFF;
  } else if (p->err == RL_EBUSY &&
             c->opts.wait_strategy == RLOCK_WAIT_PUBSUB) {
    p->ms = p->pttl >= 0 ? (uint64_t)p->pttl + 1
                         : (uint64_t)c->opts.watchdog_timeout_ms;
    how = RL_RETRY_WAIT;
  } else {
    p->ms = rl_retry_delay_ms(c);
    if (p->err == RL_EBUSY && p->pttl >= 0 && (uint64_t)p->pttl + 1 < p->ms)
      p->ms = (uint64_t)p->pttl + 1;
    how = RL_RETRY_POLL;
  }
  uint64_t beat = rl_heartbeat_ms(req);
  if (how != RL_RETRY_BACKOFF && beat > 0 && p->ms > beat) p->ms = beat;
  if (req->deadline != RL_FOREVER && req->deadline - now < p->ms)
    p->ms = req->deadline - now;
  return how;
}
