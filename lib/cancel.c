/*
 * Cancellation of async acquisitions (rlock_cancel_async): a lock-layer
 * decision (which request, which grants to give back), so it lives here
 * and not with the wait queues it may take a request out of.
 */
#include <string.h>

#include "lock.h"
#include "pubsub.h"

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
