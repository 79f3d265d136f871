/*
 * Fencing write-back, one function for every kind of acquisition (a
 * lock, a semaphore's permits, each first-acquired lock of a set).
 *
 * A first acquisition's token is the largest counter among the granting
 * masters. When a majority of servers already stores that token it is
 * handed out at once and the others are told fire-and-forget (one that
 * has not answered yet, only if its late reply is not a grant at or
 * above the token: the caller's late hook decides, from the catch-up
 * mark); otherwise it is first written back to a majority. Either way
 * every master that answers ends at or above it, so stale counters catch
 * up whenever they are reachable, and the next holder's majority, which
 * must overlap this one, counts from above it.
 */
#include "fence.h"

#include "quarantine.h"
#include "resp.h"
#include "scripts.h"

/* A fence_max round that raises the counter fence to the token (ops and
 * data as rl_round_new's), or NULL when out of memory. */
rl_round *rl_fence_round(rl_client *c, const rl_round_ops *ops, void *data,
                         const char *fence, size_t fencelen, uint64_t token) {
  char t[24], ttl[24];
  const char *argv[] = {NULL, "1", fence, t, ttl};
  size_t len[] = {0, 1, fencelen, rl_resp_put_u64(t, token),
                  rl_resp_put_i64(ttl, RL_FENCE_TTL_MS)};
  return rl_round_new(c, ops, data, RL_SCRIPT_FENCE_MAX, 5, argv, len);
}

/* Raises master i's fencing counter (the key fence) to the token,
 * expecting no answer: it lands after this attempt's acquire there. */
void rl_fence_one(rl_client *c, const char *fence, size_t fencelen,
                  uint64_t token, int i) {
  rl_round *u = rl_fence_round(c, NULL, NULL, fence, fencelen, token);
  if (u != NULL) rl_round_send_one(u, i);
}

int rl_fence_classify(rl_round *r, int i, const redisReply *rep) {
  (void)r;
  (void)i;
  return rep->type == REDIS_REPLY_INTEGER ? RL_VOTE_YES : RL_VOTE_FAIL;
}

int rl_fence_write_back(rl_client *c, const rl_fence_in *in,
                        const rl_round_ops *ops, void *data, rl_round **out) {
  *out = NULL;
  if (c->nmasters == 1) return 0;
  int agree = 0;
  for (int i = 0; i < c->nmasters; i++)
    if ((in->counted & (1ull << i)) && in->stored[i] >= 0 &&
        (uint64_t)in->stored[i] == in->token && !rl_master_duplicate(c, i))
      agree++;
  if (agree < in->quorum) {
    *out = rl_fence_round(c, ops, data, in->fence, in->fencelen, in->token);
    return *out != NULL ? 1 : -1;
  }
  /* A majority stores the token already: the others only catch up. */
  for (int i = 0; i < c->nmasters; i++) {
    if (in->stored[i] >= 0 && (uint64_t)in->stored[i] == in->token) continue;
    /* Its reply is still to come (a timed-out one too): the late hook
     * gets it, or its drop. */
    if (in->catchup != NULL && (in->later & (1ull << i)))
      in->catchup[i] |= in->catchup_bit;
    else
      rl_fence_one(c, in->fence, in->fencelen, in->token, i);
  }
  return 0;
}
