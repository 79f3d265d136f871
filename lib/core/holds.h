/*
 * The locks a client holds, by (key, owner): reentry count, fencing token,
 * lease and validity. Redis is the truth about who holds a lock; this table
 * is what the client knows it acquired, so that reentrant acquisitions
 * keep their token, unlock can tell "never held" (not the owner) from
 * "held but lost", and the watchdog knows what to renew. Loop thread only.
 *
 * A client may hold a million locks, so a record is kept small (at most
 * 300 bytes per held lock, handle included): it borrows its key
 * from the lock's handle instead of copying it, and it keeps its owner as
 * the pair of numbers the owner field is made of, not as the field's text
 * (rl_holds_owner writes the text when a command needs it). This file
 * owns the owner field's format for that reason: "<client id>:<thread>"
 * for a thread, "<client id>:a<owner>" for an async owner.
 */
#ifndef RL_HOLDS_H
#define RL_HOLDS_H

#include <stddef.h>
#include <stdint.h>

#include "wheel.h"

struct rlock;

/* The longest owner field, with its NUL: a 32-character client id, ":a"
 * and 20 digits. */
#define RL_HOLDS_OWNER_MAX 64

/* The longest key a record takes (12 bits): far above the longest a
 * handle makes (lock.c checks). */
#define RL_HOLDS_KEY_MAX 4095

/* The fields a renewal reads come first, with the wheel node: at a
 * million locks each one read is a cache miss. 136 bytes, one 144-byte
 * malloc chunk: the key's length and the flags share 16 bits, and the
 * hash is not kept (a lookup compares the owner, the length, then the
 * key; a removal or a growth of the table hashes the key again). */
typedef struct rl_hold {
  rl_wheel_node wd;        /* the watchdog's renewal timer */
  struct rl_hold *hnext;   /* hash chain */
  const char *key;         /* the lock's hash key: borrowed, see rl_holds_add */
  uint16_t keylen : 12;
  uint16_t owner_is_thread : 1;
  uint16_t watchdog : 1;
  uint16_t lost : 1;
  uint16_t removed : 1;    /* out of the table, kept while pinned */
  uint16_t pins : 15;      /* renewal batches in flight that point here */
  uint16_t at_risk : 1;    /* the at-risk callback said 1 and not since 0
                              (renew.c) */
  int32_t extensions;      /* rlock_extend calls on this acquisition */
  uint64_t gen;            /* unique per record: an answer about an earlier
                              record of the same (key, owner) is never
                              applied to this one */
  uint64_t valid_until_ms; /* monotonic: safe to act as holder until then */
  uint64_t masters;        /* the masters known to have it (bit per index):
                              granted there, and not since found gone */
  uint64_t owner_id;       /* the thread id or the async owner */
  int64_t count;
  uint64_t token;
  int64_t lease_ms;
  uint64_t acquired_ms;    /* monotonic, at the start of the winning round */
  struct rlock *lock;      /* the handle of the first acquisition (a
                              reference): whose lost-lock callback runs,
                              and whose key this record borrows */
  void *ext;               /* a semaphore hold's slots (sem_hold.h) */
} rl_hold;

typedef struct rl_holds {
  rl_hold **buckets;
  size_t nbuckets; /* a power of two */
  size_t count;
  char id[33];     /* the client id that starts every owner field */
  size_t idlen;    /* its length: an owner field is written per hold
                      renewed, and strlen was a tenth of that */
} rl_holds;

/* id: the client's id, 32 characters, the prefix of its owner fields. */
int rl_holds_init(rl_holds *t, const char *id);
/* Frees every record. */
void rl_holds_free(rl_holds *t);

/* The record of (key, owner field), or NULL. An owner field that is not
 * of this client's form has none. */
rl_hold *rl_holds_find(rl_holds *t, const char *key, size_t keylen,
                       const char *owner, size_t ownerlen);
/* The same, with the owner as its numbers. */
rl_hold *rl_holds_find_id(rl_holds *t, const char *key, size_t keylen,
                          uint64_t owner_id, int owner_is_thread);

/* Adds a zeroed record (count 0) for (key, owner), with owner_id and
 * owner_is_thread set from the owner field; NULL if out of memory, if
 * the key is longer than RL_HOLDS_KEY_MAX or if the field is not of this
 * client's form. The caller has checked that
 * none exists. The key is not copied: it must stay valid, unchanged, for
 * as long as the record (a handle's key; the hold keeps a reference to
 * its handle, and a pending mark lives no longer than its request, which
 * keeps one too; a semaphore's permits keep a reference to their
 * semaphore, whose handle's key they borrow, and drop it after the
 * record: sem.c). */
rl_hold *rl_holds_add(rl_holds *t, const char *key, size_t keylen,
                      const char *owner, size_t ownerlen);
/* Takes h out of the table and frees it, or, while it is pinned, marks it
 * removed and leaves the free to the last unpin. */
void rl_holds_remove(rl_holds *t, rl_hold *h);

/* A renewal batch keeps pointers to its holds until its answer: pinning
 * keeps a record's memory while it is pointed to, so that the answer
 * reaches each hold without a lookup (a bucket and a chain read from
 * memory: a third of the watchdog's time at a million locks) and finds a
 * released one marked removed. rl_holds_unpin frees a removed record when
 * its last pin goes. */
static inline void rl_holds_pin(rl_hold *h) { h->pins++; }
void rl_holds_unpin(rl_hold *h);

/* Writes h's owner field and its NUL to buf (RL_HOLDS_OWNER_MAX bytes);
 * returns its length. */
size_t rl_holds_owner(const rl_holds *t, const rl_hold *h, char *buf);

/* The owner field of (owner_id, owner_is_thread) for the client id, the
 * same way; lock.c makes every request's owner with it. */
size_t rl_owner_format(const char *id, uint64_t owner_id, int owner_is_thread,
                       char *buf);

#endif
