/*
 * Hand-off in one round trip (transfer.c): the last unlock of a
 * reentrant lock that a waiter of the same client waits for gives the
 * lock to that waiter in the unlock's own script. Loop thread only.
 */
#ifndef RL_TRANSFER_H
#define RL_TRANSFER_H

#include "lock.h"

/* How an unlock request whose round r was decided is finished (release.c,
 * as its unlock_done does); published has a bit per master that deleted
 * the lock and published its unlock message. */
typedef void (*rl_unlock_outcome_fn)(rl_req *req, const struct rl_round *r,
                                     uint64_t published);

/*
 * For rl_unlock_start: req unlocks the owner's last hold h (its watchdog
 * already stopped). If a waiter of this client can take the lock over,
 * sends the transfer round, which finishes req (as an unlock, through
 * outcome) and the waiter (granted, or back to waiting), and returns 1;
 * else returns 0 and the caller sends the plain unlock.
 */
int rl_transfer_start(rl_req *req, rl_hold *h, rl_unlock_outcome_fn outcome);

#endif
