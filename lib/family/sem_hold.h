/*
 * Semaphores with leased permits, in the C layer (the Redis side is
 * sem_scripts.c, whose comment says why permits are numbered slots).
 *
 * An owner (a thread, or an async owner) holds permits as one hold: a
 * record in the client's family table (family.h) keyed by the slot hash's
 * key and the owner, like a lock's hold, whose ext is the list of slots it
 * holds and, per slot, the masters that granted it (a slot counts while a
 * majority of masters has it for the owner). This header has the
 * handle, the hold's and the request's types and sem_hold.c's functions:
 * the holds, their loss and giving back at close. Above it, sem_renew.c
 * has the watchdog's renewals (sem_renew.h), sem_kind.c the acquisition
 * (sem_kind.h), and sem.c the public calls, release and the queries.
 * Loop thread only, save the public calls.
 */
#ifndef RL_SEM_HOLD_H
#define RL_SEM_HOLD_H

#include <stdatomic.h>
#include <stdint.h>

#include "family.h"

struct rlock_sem {
  atomic_int refs;      /* the user's, each request's, each hold's */
  rlock *obj;           /* key "<p>{name}:s" (slots), fence ":s:fence",
                           channel ":s:ch"; its client and name */
  char *tkey;           /* "<p>{name}:s:t": the owners' lease expiries */
  size_t tkeylen;
  int64_t permits;      /* K, as this handle believes it */
  _Atomic(rlock_sem_lost_cb) lost_cb;
  void *_Atomic lost_arg;
  _Atomic(rlock_sem_risk_cb) risk_cb;
  void *_Atomic risk_arg;
  /* Acquisition attempts made through this handle (quorum rounds of
   * sem_acquire), and those that ended split: masters granted, but no n
   * slots had a majority (sem_kind.c). For tests and diagnosis. */
  atomic_uint_fast64_t attempts, splits;
};

/* A semaphore hold's slots (rl_hold.ext); the hold's count is n. */
typedef struct rl_permits {
  rlock_sem *sem;  /* a reference: the handle of the first acquisition,
                      whose lost callback runs */
  size_t n, cap;
  int64_t *slot;   /* in the order they were acquired */
  uint64_t *mask;  /* per slot: the masters that granted it and have not
                      since been found without it */
} rl_permits;

static inline rl_permits *rl_permits_of(const rl_hold *h) {
  return (rl_permits *)h->ext;
}

enum {
  RL_SEM_OP_ACQUIRE = 1,
  RL_SEM_OP_RELEASE,
  RL_SEM_OP_AVAILABLE,
  RL_SEM_OP_RESET,
  RL_SEM_OP_HELD,
  RL_SEM_OP_TOKEN,
  RL_SEM_OP_CANCEL
};

/* A semaphore request. An async one is allocated whole and freed as an
 * rl_req after its callback. */
typedef struct rl_sem_req {
  rl_req req; /* first */
  rlock_sem *sem;
  int op;
  int64_t n;
  rlock_sem_cb cb; /* async */
  void *arg;
  /* Acquisition (sem_kind.c): its attempts' ledgers are req.grants. */
  int pass;             /* the failed attempt hands its wake on */
  int64_t *hint;        /* slots to ask for first, from the last attempt */
  size_t nhint;
  rl_fwait waits[2];    /* the sleep between attempts, in waits[cur]; the
                           other joins behind when the request moves to
                           the back of its queue (sem_kind.c) */
  int cur;
  uv_timer_t *backoff;  /* the pause after a split (sem_kind.c) */
  int splits;           /* splits in a row */
  rl_hold *pending;     /* an async owner's mark in c->pending */
  int64_t *seen;        /* per master, the slots it said it had freed at
                           this request's last refusal there (-1: none
                           yet); see pass_wake in sem_kind.c */
  /* Release (sem.c): the slots given back and what masters said. */
  int64_t *rel;
  uint64_t *relmask;
  size_t nrel;
  uint8_t *said;        /* per master and slot: 1 freed, 2 not the owner's */
} rl_sem_req;

void rl_sem_ref(rlock_sem *sem);
void rl_sem_unref(rlock_sem *sem);

/* Holds (sem_hold.c). */
rl_hold *rl_sem_hold_find(rl_client *c, const rlock_sem *sem,
                          const char *owner, size_t ownerlen);
/* A new hold, with no slots yet; NULL when out of memory. */
rl_hold *rl_sem_hold_add(rl_client *c, rlock_sem *sem, const rl_req *req);
/* Adds a slot to a hold; 0 or RLOCK_ENOMEM. */
int rl_sem_hold_push(rl_hold *h, int64_t slot, uint64_t mask);
/* Forgets a hold: stops its renewal, drops its handle reference, frees. */
void rl_sem_hold_drop(rl_client *c, rl_hold *h);
/* Marks a hold lost: renewal stops, what is left of it is given back on
 * every master, the metrics and the log say so, and the handle's lost
 * callback runs, once. */
void rl_sem_hold_lost(rl_client *c, rl_hold *h);
/* The hold's slots that master idx granted, into out (at least h->count
 * long); their number. */
size_t rl_sem_hold_slots_on(const rl_hold *h, int idx, int64_t *out);
/* 1 if each of the hold's slots is still had by a majority of counted
 * masters, as far as the client knows. */
int rl_sem_hold_intact(rl_client *c, const rl_hold *h);

/*
 * Fire-and-forget scripts to master idx, each landing after every command
 * sent there before it: sem_release of the listed slots (a grant or
 * permits given back), and sem_drop of every slot of the owner but the
 * listed ones (a grant whose slots are unknown; all, with none listed).
 */
void rl_sem_send_release(rl_client *c, const rlock_sem *sem,
                         const char *owner, size_t ownerlen,
                         const int64_t *slots, size_t n, int idx);
void rl_sem_send_drop(rl_client *c, const rlock_sem *sem, const char *owner,
                      size_t ownerlen, const int64_t *keep, size_t n,
                      int idx);

/* Gives back everything the owner has of the semaphore, on every master
 * (a lost hold: a later acquisition must not stack on what survived). */
void rl_sem_drop_everywhere(rl_client *c, const rl_hold *h);

#endif
