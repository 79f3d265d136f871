/*
 * The locks a client holds, by (key, owner): reentry count, fencing token,
 * lease and validity. Redis is the truth about who holds a lock; this table
 * is what the client knows it acquired, so that reentrant acquisitions
 * keep their token, unlock can tell "never held" (not the owner) from
 * "held but lost", and the watchdog knows what to renew. Loop thread only.
 */
#ifndef RL_HOLDS_H
#define RL_HOLDS_H

#include <stddef.h>
#include <stdint.h>

#include "wheel.h"

struct rlock;

typedef struct rl_hold {
  struct rl_hold *hnext; /* hash chain */
  uint32_t hash;
  char *key;   /* the lock's hash key */
  size_t keylen;
  char *owner; /* the owner field */
  size_t ownerlen;
  int64_t count;
  uint64_t token;
  int64_t lease_ms;
  int watchdog;
  uint64_t acquired_ms;    /* monotonic, at the start of the winning round */
  uint64_t valid_until_ms; /* monotonic: safe to act as holder until then */
  int lost;
  uint64_t masters;        /* the masters known to have it (bit per index):
                              granted there, and not since found gone */
  uint64_t gen;            /* unique per record: a renewal answer for an
                              earlier record of the same (key, owner) is
                              never applied to this one */
  uint64_t owner_id;       /* the thread id or the async owner */
  int owner_is_thread;
  int extensions;          /* rlock_extend calls on this acquisition */
  struct rlock *lock;      /* the handle of the first acquisition (a
                              reference): whose lost-lock callback runs */
  rl_wheel_node wd;        /* the watchdog's renewal timer */
  void *ext;               /* a semaphore hold's slots (sem.h) */
} rl_hold;

typedef struct rl_holds {
  rl_hold **buckets;
  size_t nbuckets; /* a power of two */
  size_t count;
} rl_holds;

int rl_holds_init(rl_holds *t);
/* Frees every record. */
void rl_holds_free(rl_holds *t);
rl_hold *rl_holds_find(rl_holds *t, const char *key, size_t keylen,
                       const char *owner, size_t ownerlen);
/* Adds a zeroed record (count 0) for (key, owner); NULL if out of memory.
 * The caller has checked that none exists. */
rl_hold *rl_holds_add(rl_holds *t, const char *key, size_t keylen,
                      const char *owner, size_t ownerlen);
void rl_holds_remove(rl_holds *t, rl_hold *h);

#endif
