/*
 * Opening a client: the table of hooks through which the core (and the
 * quorum layer's rounds) reach the layers above them (client.h's
 * rl_client_hooks). This is the one place that names those layers'
 * functions for the core: the top layer may call every layer below it,
 * so the core never names a layer above its own.
 */
#include "family.h"
#include "lock.h"
#include "pubsub.h"
#include "quarantine.h"
#include "round.h"

/* A request finishes: an acquisition's grants are kept by its hold, or
 * given back (acquire.c), and the round in flight lets go of the request:
 * it lives on for late replies, which must not call back into it. */
static void req_end(rl_req *req, int status) {
  if (req->kind == RL_REQ_ACQUIRE) rl_acquire_end(req, status);
  if (req->round != NULL) {
    req->round->data = NULL;
    req->round = NULL;
  }
}

/* Semaphore permits are given back first, as locks are, written before
 * the connections close (family.c); then the lock layer's waits end, every
 * lock still held is released (closed runs when those rounds are over)
 * and the grouping of renewals by node stops. */
static void shutdown_layers(rl_client *c, void (*closed)(rl_client *c)) {
  rl_family_shutdown(c);
  rl_pubsub_shutdown(c);
  rl_release_all(c, closed);
  rl_renew_close(c);
}

static const rl_client_hooks hooks = {
    .quarantine_init = rl_quarantine_init,
    .quarantine_free = rl_quarantine_free,
    .node_info = rl_quarantine_on_info,
    .node_state = rl_quarantine_on_state,
    .node_quarantined = rl_node_quarantined,
    .start = rl_req_start,
    .end = req_end,
    .cancel = rl_sleep_cancel,
    .renew_due = rl_renew_due,
    .shutdown = shutdown_layers,
};

int rlock_client_open(rlock_client **out, const rlock_options *opts) {
  return rl_client_open(out, opts, &hooks);
}
