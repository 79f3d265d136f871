/*
 * Request dispatch: the client starts every request of the lock layer
 * here, by its kind (or its own start, a family request's). The top of
 * the lock layer: it calls each operation, and none of them calls back.
 */
#include "kind.h"
#include "lock.h"
#include "pubsub.h"

void rl_req_start(rl_req *req) {
  if (req->start != NULL) {
    req->start(req);
    return;
  }
  switch (req->kind) {
    case RL_REQ_ACQUIRE: rl_acquire_start(req); break;
    case RL_REQ_UNLOCK: rl_unlock_start(req); break;
    case RL_REQ_FORCE: rl_force_start(req); break;
    case RL_REQ_EXTEND: rl_extend_start(req); break;
    case RL_REQ_CANCEL: rl_cancel_start(req); break;
    default: rl_query_start(req); break;
  }
}
