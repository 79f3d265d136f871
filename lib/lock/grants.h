/*
 * The grants ledger of one acquisition attempt (acquire.c), shared with
 * the hand-off (transfer.c), whose unlock round is also an attempt of the
 * waiter it hands the lock to: its grants are kept or given back by the
 * same rules. Loop thread only.
 */
#ifndef RL_GRANTS_H
#define RL_GRANTS_H

#include "kind.h"
#include "lock.h"
#include "pubsub.h"

/* Per master, in rl_grants.slot. RL_G_CATCHUP: the attempt won before
 * this master answered; its late reply decides whether its fencing
 * counter needs the token (rl_grant_late). */
enum { RL_G_GRANTED = 1, RL_G_FINAL = 2, RL_G_UNDONE = 4, RL_G_CATCHUP = 8 };
/* rl_grants.state. */
enum { RL_G_OPEN = 0, RL_G_KEPT, RL_G_ABANDONED };

typedef struct rl_grants {
  int refs;          /* the round, and the request while open */
  int state;
  rl_client *c;
  rl_round *round;   /* the acquire round, until it is freed */
  rl_req *req;       /* while open */
  uint64_t base_gen; /* the hold this attempt builds on; 0: none */
  uint64_t kept_gen; /* kept: the hold that has these grants */
  const rl_kind *kind;
  int queued;        /* this attempt queued the owner on the masters */
  int waiting;       /* abandoned while the request still waits */
  uint64_t ticket;
  /* A hand-off (transfer.c): the unlock request whose round this is,
   * until it is finished, and whether its outcome was decided. */
  rl_req *unlock;
  int unlock_decided;
  /* How the unlock's outcome is decided (release.c's, given by it). */
  void (*unlock_outcome)(rl_req *req, const rl_round *r, uint64_t published);
  rl_call_vals vals; /* for undos: the handle's keys, channel, owner, and
                       the count the attempt's grants set (count) */
  const char *keys[RL_KIND_MAXKEYS];
  size_t keylens[RL_KIND_MAXKEYS];
  char *key, *owner; /* the hold key, and the owner */
  size_t keylen, ownerlen;
  uint64_t token;    /* won: the token the late masters catch up to */
  uint8_t *slot;     /* per master, RL_G_* bits */
} rl_grants;

/* A ledger for req's next attempt, with two references (the round's and
 * the request's); NULL when out of memory. */
rl_grants *rl_grants_new(rl_req *req, uint64_t base_gen);
void rl_grants_unref(rl_grants *g);

/* The final reply of master i, or its drop, that came after its round
 * was decided or after the master timed out: gr 1 if it granted, else 0.
 * A grant joins the hold if the attempt was kept, and is given back if
 * it was abandoned. */
void rl_grants_late(rl_grants *g, int i, int gr);

/* A round's late hook for a lock grant (acquire.c, transfer.c): got is
 * master i's grant as parsed (written into its slot, its token noted),
 * or NULL for anything else; then rl_grants_late on the round's ledger. */
void rl_grant_late(rl_round *r, int i, const rl_round_slot *got);
/* A round's release hook: lets go of the round's reference to its
 * ledger (r->data). */
void rl_grants_round_release(rl_round *r);

/* The request lets go of its attempt: kept, or given back (waiting: the
 * request goes on waiting). */
void rl_attempt_end(rl_req *req, int keep, int waiting);

/* An attempt of req won a majority in round r: fencing, write-back and
 * the hold, then req is finished (or goes on, as acquire.c says). */
void rl_acquire_won(rl_req *req, rl_round *r, rl_grants *g);

/* A lock waiter's wake in its pub/sub wait queue: its next attempt. */
void rl_acquire_on_event(rl_psw *w, void *data);

/* An attempt failed with err (RL_EBUSY: the lock is held, holder_pttl
 * ms left): req waits again, retries, or is finished. */
void rl_acquire_failed(rl_req *req, int err, int64_t holder_pttl);

/* 1 if req's current attempt, started at req->t_start, is still valid. */
int rl_acquire_valid(rl_req *req);

/* The fencing floor this client sends (acquire.c, scripts.c). */
uint64_t rl_token_floor(const rl_client *c);

/* Notes a token seen, for the floor of the next ones. */
void rl_note_token(rl_client *c, int64_t token);

#endif
