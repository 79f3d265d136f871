/*
 * Pub/sub waiting and cancellation, as the lock layer uses them. A waiting
 * acquisition that found the lock held by another owner (RL_EBUSY) hands
 * itself to rl_pubsub_wait instead of sleeping a fixed retry delay; the
 * mechanism (pubsub/waitq.h) wakes it through a callback, and the next
 * attempt starts (through the callback the acquisition gave) when an
 * unlock message, the holder's PTTL or the caller's deadline comes first. Loop thread only.
 */
#ifndef RL_PUBSUB_H
#define RL_PUBSUB_H

#include <stdint.h>

#include "client.h"
#include "waitq.h"

/*
 * Parks req, whose attempt just failed with RL_EBUSY, in the FIFO queue of
 * its lock's channel (subscribing the channel if it is the first waiter)
 * for at most sleep_ms (the retry policy's, retry.c); wake (with req as
 * its data) starts its next attempt. On failure req is finished.
 * (pubwait.c)
 */
void rl_pubsub_wait(rl_req *req, uint64_t sleep_ms, rl_psw_cb wake);

/* Takes req out of its wait queue, if it is in one, and unsubscribes the
 * channel after its last waiter. Called when req finishes. (pubwait.c) */
void rl_pubsub_leave(rl_req *req);

/*
 * An unlock of lock by this client is decided: published has a bit per
 * master that deleted the lock and published its unlock message. Wakes
 * this client's first waiter for the lock, if any, without waiting for
 * the message (pubsub/waitq.h says how its messages are then counted). The reentrant lock only (pubwait.c says why); a no-op
 * for the other kinds. (pubwait.c)
 */
void rl_pubsub_unlocked_by(rl_client *c, const rlock *lock, uint64_t published);

/* The client's pub/sub state, made (and connecting) on first use; NULL
 * when out of memory. For the lock family's waits (family.c), which join
 * wait queues (pubsub/waitq.h) with callbacks of their own. (pubwait.c) */
struct rl_pubsub *rl_pubsub_get(rl_client *c);

/*
 * The waiter of this client that an unlock of lock by owner may hand the
 * lock to in its own round trip (transfer.c), or NULL; *psw is its place
 * in the wait queue, for rl_psw_claim; wake is the callback a lock's
 * waiters joined with (rl_acquire_on_event). pubwait.c says which
 * waiters qualify, and how runs of hand-offs end. (pubwait.c)
 */
rl_req *rl_pubsub_handoff_waiter(rl_client *c, const rlock *lock,
                                 const char *owner, size_t ownerlen,
                                 rl_psw_cb wake, rl_psw **psw);

/*
 * The caller's own wait (fast.c): req, a blocking acquisition parked in
 * its wait queue, waits on its caller's thread. The subscriber
 * connections of its channel, one per master, into conns, when every one
 * is ready, plain TCP and idle but for the channel's own SUBSCRIBE or
 * UNSUBSCRIBE (pubsub/waitq.h, rl_psw_own_conns): how many; else -1 (the
 * loop waits for it as before). (pubwait.c)
 */
int rl_pubsub_own_wait(rl_req *req, rl_conn **conns, int cap);

/* The same caller, after it read an event that chose req: starts req's
 * next attempt now, as the waiter's timer would on the loop. 1 if it
 * did. (pubwait.c) */
int rl_pubsub_run_woken(rl_req *req);

/* Client shutdown: closes the subscriber connections. Requests must have
 * been finished before. Safe when pub/sub was never used. (pubwait.c) */
void rl_pubsub_shutdown(rl_client *c);

/*
 * rlock_cancel_async on the loop thread: finishes the oldest pending
 * async acquisition of owner (an rl_owner_async owner string) on lock with
 * RLOCK_ECANCELED. 0 if one was cancelled, else RLOCK_ENOTOWNER.
 * (cancel.c)
 */
int rl_pubsub_cancel(rlock *lock, const char *owner, size_t ownerlen);

/* An RL_REQ_CANCEL request taken from the queue. (cancel.c) */
void rl_cancel_start(rl_req *req);

#endif
