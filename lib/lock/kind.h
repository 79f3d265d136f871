/*
 * Lock kinds: what differs between a reentrant lock, a fair lock and the
 * two sides of a read-write lock, as one table row per kind, so that the
 * lock operations (acquire.c, release.c, renew.c, extend.c, query.c,
 * pubwait.c, hold.c) serve every kind with one code path and no copies.
 *
 * A row says, per operation, which script runs, over which of the
 * handle's keys, with which arguments (rl_call); how an acquire reply
 * reads; what the watchdog renews; which channel a waiter listens on; and
 * how its waiters behave. Everything else (quorum rounds, the grants
 * ledger, fencing write-back, reentrancy, the watchdog's timing, pub/sub
 * waiting, cancellation) is the same for all. The rows live with their
 * kind: kind.c (the reentrant lock), fair.c, rwlock.c.
 */
#ifndef RL_KIND_H
#define RL_KIND_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "round.h"
#include "scripts.h"

struct rl_req;

/* The most keys a handle has (the read-write lock's five). */
#define RL_KIND_MAXKEYS 5

enum rl_kind_id { RL_KIND_LOCK = 0, RL_KIND_FAIR, RL_KIND_READ, RL_KIND_WRITE };

/*
 * One script call of an operation: the script (an rl_script_id, or -1 if
 * the kind has no such operation), how many of the handle's keys it takes
 * (its first nkeys), and its arguments after the keys, one code each:
 *   L  the lease in ms            O  the owner
 *   C  the count to set where the owner's field is absent (acquire); in
 *      an undo, the same value: the count the undone grant set, which
 *      names the grant (scripts.c, undo_lua)
 *   F  the fencing floor          T  the fair ticket
 *   A  how long a waiter stays queued by this attempt (0 for a single
 *      attempt or a re-entry: they never queue)
 *   a  the same for an undo: the waiter's alive bound if the request
 *      still waits, else 0
 *   l  "1" for the owner's last hold, else "0"
 *   c  the handle's channel      D  the deadline in the master's clock
 *                                   (last; see rl_arg_master_deadline)
 *   0 1 r w  that character, as an argument
 */
typedef struct rl_call {
  int script;
  int nkeys;
  const char *args;
} rl_call;

/* The values an rl_call's codes stand for. */
typedef struct rl_call_vals {
  const char *const *keys; /* the handle's keys, in its scripts' order */
  const size_t *keylens;
  const char *channel;
  size_t channellen;
  const char *owner;
  size_t ownerlen;
  int64_t lease_ms, count, alive_ms;
  uint64_t floor, ticket;
  int last;
  /* Where rl_lock_vals puts the handle's keys for keys and keylens to
   * point to (a handle stores offsets, not pointers): a copy of the
   * struct keeps pointing to the original's. */
  const char *keyv[RL_KIND_MAXKEYS];
  size_t lenv[RL_KIND_MAXKEYS];
} rl_call_vals;

/* Acquire replies, read into a round slot: a grant sets v[0] the token,
 * v[1] the count, v[2] 1 if the owner's field was there (returns 1); a
 * refusal sets v[2] the ms to sleep at most (-1 if unknown), or one of
 * these (returns 0); -1 for a malformed reply. The two are reply values
 * in a slot, not result codes: the engine turns LATE into a failed vote
 * and DEADLK into RLOCK_EDEADLK. */
#define RL_GRANT_LATE RL_ACQUIRE_REPLY_LATE /* past the deadline: nothing
                                               granted */
#define RL_GRANT_DEADLK (-4) /* a read holder asked for the write side */

typedef struct rl_kind {
  const char *name; /* "lock", "fair", "read", "write" */
  int id;
  /* The handle's keys, as suffixes of <prefix>{<name>}; which of them is
   * the hold key (rlock.key: the hash or zset an owner's hold is in, by
   * which the client's table knows it) and which the fencing counter. */
  const char *const *suffixes;
  int nkeys, hold, fence;
  /* The waiters' channel: this key's name + ":ch"; with per_owner, a
   * fair waiter's own channel, that + ":" + its owner. */
  int chan_key;
  unsigned per_owner : 1;
  rl_call acquire, unlock, undo, force, release, leave;
  /* Renewal (the watchdog, rlock_extend): a script with the renew
   * script's reply (one string: a '1' or '0' per hold) over, per hold,
   * the hold key and, with renew_pair, the key after it, then the lease
   * and the owners. */
  int renew;
  unsigned renew_pair : 1;
  int (*parse_grant)(const redisReply *rep, rl_round_slot *sl);
  /* Refuses an acquisition before any round (0 to go on, or an error):
   * the write side refuses a read holder (RLOCK_EDEADLK). Optional. */
  int (*precheck)(struct rl_req *req);
  /* Waiters stay queued on the masters only while they show they are
   * alive (each attempt does), so they attempt at least every third of
   * waiter_alive_ms (fair, write). */
  unsigned heartbeat : 1;
  /* A waiter woken by an event that then got its share wakes the next
   * one too (read: every reader may go at once). */
  unsigned wake_all : 1;
  /* The queries read the side through the rw_query script (read). */
  unsigned rw_query : 1;
} rl_kind;

extern const rl_kind rl_kind_lock, rl_kind_fair, rl_kind_read, rl_kind_write;

/*
 * Fills argv/len with EVALSHA's numkeys, keys and arguments of call (argv
 * [0] is the NULL that rl_round_new replaces with the script's SHA); buf
 * holds the numbers formatted. Returns argc, for rl_round_new.
 */
#define RL_CALL_MAXARGS (2 + RL_KIND_MAXKEYS + 10)
int rl_call_build(const rl_call *call, const rl_call_vals *v,
                  const char **argv, size_t *len, char (*buf)[24]);

/* A round of call (rl_round_new's ops and data), or NULL when out of
 * memory. */
rl_round *rl_call_round(struct rlock_client *c, const rl_call *call,
                        const rl_call_vals *v, const rl_round_ops *ops,
                        void *data);

/* Sends call to master idx, expecting no answer (an undo, a leave, a
 * release): it lands after every command sent there before it. */
void rl_call_send_one(struct rlock_client *c, const rl_call *call,
                      const rl_call_vals *v, int idx);

/* The reentrant lock's reading of acquire replies, shared with the fair
 * and read-write parsers for what they have in common. */
int rl_parse_lock_grant(const redisReply *rep, rl_round_slot *sl);

#endif
