/*
 * Several locks at once (rlock_lock_all, rlock_unlock_all): the request
 * both files share. multi.c has the public calls, the set's order and
 * unlock_all; multi_kind.c the acquisition, as the engine's row for
 * sets (the Redis side, and why one script per master, is
 * multi_scripts.c). Loop thread only, save the
 * public calls.
 */
#ifndef RL_MULTI_H
#define RL_MULTI_H

#include "family.h"

/* The most locks one call takes. */
#define RL_MULTI_MAX 1024

enum { RL_MULTI_LOCK = 1, RL_MULTI_UNLOCK, RL_MULTI_CANCEL };

typedef struct rl_multi_req {
  rl_req req;     /* first; req.lock is locks[0] */
  int op;
  size_t n;
  rlock **locks;  /* sorted by key, one per key; each a reference */
  size_t *pos;    /* where each was first listed by the caller */
  rlock_all_cb cb; /* async */
  void *arg;
  /* Acquisition (multi_kind.c): its attempts' ledgers are req.grants. */
  rl_fwait wait;
  size_t blocker; /* the lock a busy attempt found held, to wait for */
  rl_hold **pending; /* an async owner's marks in c->pending, per lock */
  /* unlock_all (multi.c): what each master said of each lock. */
  uint8_t *said;
  size_t *which; /* the locks of the round, by index */
  size_t nwhich;
  int status;       /* the error of the lock listed first by the caller */
  size_t status_at; /* where that lock was listed */
} rl_multi_req;

void rl_multi_acquire_start(rl_req *req);
void rl_multi_acquire_end(rl_req *req, int status);

#endif
