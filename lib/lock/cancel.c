/*
 * Cancellation of async acquisitions (rlock_cancel_async): a lock-layer
 * decision (which request; its grants are given back by the attempt's
 * ledger as it finishes), so it lives here and not with the wait queues
 * it may take a request out of.
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
        memcmp(rl_lock_key(r->lock), rl_lock_key(lock), lock->keylen) != 0)
      continue;
    if (r->ownerlen != ownerlen || memcmp(r->owner, owner, ownerlen) != 0)
      continue;
    /* Whatever the attempt was granted, or may still be, is given back
     * by its ledger when it finishes (rl_acquire_end, acquire.c). */
    rl_req_finish(r, RLOCK_ECANCELED);
    return 0;
  }
  return RLOCK_ENOTOWNER;
}

void rl_cancel_start(rl_req *req) {
  rl_req_finish(req, rl_pubsub_cancel(req->lock, req->owner, req->ownerlen));
}
