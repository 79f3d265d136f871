/*
 * The reply handlers of every round, by operation. They are internal; they
 * are named here so that the reply fuzzer (fuzz/fuzz_reply.c) can feed them
 * every reply shape a master could send, garbage included.
 */
#ifndef RL_OPS_H
#define RL_OPS_H

#include "round.h"

extern const rl_round_ops rl_acquire_ops; /* acquire.c */
extern const rl_round_ops rl_fence_ops;
extern const rl_round_ops rl_unlock_ops;  /* release.c */
extern const rl_round_ops rl_force_ops;
extern const rl_round_ops rl_release_ops;
extern const rl_round_ops rl_bool_ops;    /* query.c */
extern const rl_round_ops rl_pttl_ops;
extern const rl_round_ops rl_rwq_bool_ops; /* query.c, the read side */
extern const rl_round_ops rl_rwq_pttl_ops;
extern const rl_round_ops rl_extend_ops;  /* extend.c */
extern const rl_round_ops rl_renew_ops;   /* renew.c */

/* A renewal batch for n keys, as the watchdog makes one (freed by the
 * round's release hook). */
void *rl_renew_batch_new(size_t n);

/* Frees a round that was never sent, running its release hook. */
void rl_round_discard(rl_round *r);

#endif
