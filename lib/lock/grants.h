/*
 * The acquisition engine (acquire.c) and the grants ledger of one attempt
 * (grants.c), for every kind of acquisition: a lock of any kind (kind.h),
 * a semaphore's permits and a set of locks (lib/family, which sets their
 * rows). The hand-off (transfer.c), whose unlock round is also an attempt
 * of the waiter it hands the lock to, keeps or gives back its grants by
 * the same rules. Loop thread only.
 */
#ifndef RL_GRANTS_H
#define RL_GRANTS_H

#include "fence.h"
#include "kind.h"
#include "lock.h"
#include "pubsub.h"

/* Per master, in rl_grants.slot. RL_G_CATCHUP: the attempt won before
 * this master answered; its late reply decides whether its fencing
 * counter needs the token (rl_grant_late). RL_G_UNKNOWN: what it granted
 * is not known (a kind that names its grants gives them back otherwise:
 * the semaphore drops every slot but the hold's). */
enum {
  RL_G_GRANTED = 1,
  RL_G_FINAL = 2,
  RL_G_UNDONE = 4,
  RL_G_CATCHUP = 8,
  RL_G_UNKNOWN = 16
};
/* rl_grants.state. */
enum { RL_G_OPEN = 0, RL_G_KEPT, RL_G_ABANDONED };

struct rl_grants;
struct rl_retry;

/*
 * An acquisition kind, as the engine sees it: what differs between a lock
 * (all four kinds of kind.h share one row, rl_acq_lock, and read their
 * scripts from the handle's kind), a semaphore's permits and a set of
 * locks. The engine does the rest: the attempt's round and its ledger,
 * the rules by which grants are kept or given back, late replies, the
 * retry policy (retry.c) and the fencing write-back (fence.c).
 */
typedef struct rl_acq {
  const char *script; /* named in "unexpected reply to <script>" */
  /* Builds the next attempt's ledger (*g: rl_grants_new or
   * rl_grants_new_kind, the kind's part in ext) and its round, with ops
   * rl_acquire_ops and data the ledger; NULL when out of memory (*g, if
   * set, is freed). */
  rl_round *(*round)(rl_req *req, struct rl_grants **g);
  /* Reads master i's reply of round r into sl and its ledger (r->data,
   * NULL when gone; late: it came after the round was decided):
   * 1 a grant, 0 a refusal (a no vote), 2 a refusal that is no vote
   * (too late for the master), -1 malformed. */
  int (*read)(rl_round *r, int i, const redisReply *rep, rl_round_slot *sl,
              int late);
  /* Gives back master i's grant, or what it may still grant (it has not
   * answered), behind whatever was sent there before; marks it undone. */
  void (*undo)(struct rl_grants *g, int i);
  /* Master i's late reply: got its grant as read, or NULL for anything
   * else; applies rl_grants_late, and the kind's own rules. */
  void (*late)(rl_round *r, int i, const rl_round_slot *got);
  /* The round is decided (rl_votes_settle): what it means for req. */
  void (*decide)(rl_req *req, rl_round *r, struct rl_grants *g);
  /* A grant that came after the attempt was kept (rl_grants_late). */
  void (*kept_late)(struct rl_grants *g, int i);
  /* The fencing write-back reached a majority: the hold is recorded and
   * req finished. */
  void (*commit)(rl_req *req);
  /* Sleeps req after a failed attempt, as the retry policy said (how,
   * an RL_RETRY_*, for p->ms); its next attempt is rl_attempt_next. */
  void (*wait)(rl_req *req, int how, const struct rl_retry *p);
  /* Frees the kind's part of a ledger (g->ext). */
  void (*free)(void *ext);
} rl_acq;

/* The engine's round ops for an attempt's round (data: its ledger), and
 * for the fencing write-back's (data: the request). (acquire.c) */
extern const rl_round_ops rl_acquire_ops;
extern const rl_round_ops rl_fence_ops;

/* The reentrant, fair and read-write locks' row (acquire.c). */
extern const rl_acq rl_acq_lock;

typedef struct rl_grants {
  int refs;          /* the round, and the request while open */
  int state;
  rl_client *c;
  rl_round *round;   /* the acquire round, until it is freed */
  rl_req *req;       /* while open */
  const rl_acq *acq; /* the acquisition's kind */
  void *ext;         /* the kind's part of the ledger (acq->free) */
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

/* A lock's ledger for req's next attempt (acq: rl_acq_lock), with two
 * references (the round's and the request's); NULL when out of memory. */
rl_grants *rl_grants_new(rl_req *req, uint64_t base_gen,
                          const rl_acq *acq);
/* Another kind's ledger (acq), for req's next attempt: the same, with
 * only the per-master flags; the kind sets ext. */
rl_grants *rl_grants_new_kind(rl_req *req, const rl_acq *acq);
void rl_grants_unref(rl_grants *g);

/* Gives back every grant the attempt has, and may still get (acq->undo
 * on each master that granted, or has not answered yet). */
void rl_grants_abandon(rl_grants *g);

/* 1 if master i may still grant: no final answer yet. */
int rl_grants_pending(const rl_grants *g, int i);

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

/* The next attempt of req, of kind acq: its round (acq->round) over a
 * new ledger, sent. On failure req is finished. */
void rl_attempt_next(rl_req *req, const rl_acq *acq);

/* An attempt of req failed with err (RL_EBUSY: held, pttl ms left, -1
 * unknown; split: a split, counted in *splits): the retry policy
 * (retry.c) finishes req or has it wait (acq->wait). */
void rl_attempt_failed(rl_req *req, const rl_acq *acq, int err, int64_t pttl,
                       int split, int *splits);

/* The write-back of the token of req's open attempt, as fence.c says
 * (in); then its kind's commit, or a failed attempt. */
void rl_attempt_write_back(rl_req *req, const rl_fence_in *in);

/* 1 if req's current attempt, started at req->t_start, is still valid:
 * lease - elapsed - drift > 0. */
int rl_acquire_valid(rl_req *req);

/* The owner's hold of lock (req's handle, or one of a set's) becomes, or
 * adds to, a hold of the client's table: the token for a new one, the
 * masters that granted this attempt (req->grants), the count, the lease,
 * the validity and the watchdog. NULL when out of memory. */
rl_hold *rl_acquire_hold(rl_req *req, rlock *lock, uint64_t token);

/* An attempt of req won a majority in round r: fencing, write-back and
 * the hold, then req is finished (or goes on, as acquire.c says). */
void rl_acquire_won(rl_req *req, rl_round *r, rl_grants *g);

/* An async owner has one acquisition of a lock, a semaphore or a set's
 * lock in flight at a time (two would race on its hold's count and
 * token): marks obj as pending for req's owner in the client's pending
 * table (*mark, removed when the request ends). RLOCK_EINVAL when the
 * owner already has one in flight, RLOCK_ENOMEM, or 0. */
int rl_acquire_mark_pending(rl_req *req, rlock *obj, rl_hold **mark);

/* A lock waiter's wake in its pub/sub wait queue: its next attempt. */
void rl_acquire_on_event(rl_psw *w, void *data);

/* A lock's undo of master i's grant, and a late grant joining its kept
 * hold: rl_acq_lock's (grants.c). */
void rl_grants_undo_lock(rl_grants *g, int i);
void rl_grants_kept_late_lock(rl_grants *g, int i);

/* The fencing floor this client sends (acquire.c, scripts.c). */
uint64_t rl_token_floor(const rl_client *c);

/* Notes a token seen, for the floor of the next ones. */
void rl_note_token(rl_client *c, int64_t token);

#endif
