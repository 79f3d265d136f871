/*
 * What the watchdog does with a hold whose renewal missed a majority
 * (renew.c): the one rule for every kind it renews, a lock's hold or a
 * semaphore's permits (sem_renew.c). Loop thread only.
 */
#ifndef RL_RENEW_H
#define RL_RENEW_H

#include <stdint.h>

#include "client.h"
#include "holds.h"

/* How long one renewal round may take: the master timeout, and the
 * replicas' acknowledgement after it when replica_acks asks for one. */
uint64_t rl_renew_round_ms(const rl_client *c);

typedef struct rl_renew_miss {
  int at_risk;       /* it is at risk from now on (it was not) */
  int lost;          /* too little validity for another round: lost now */
  uint64_t retry_ms; /* otherwise, when to renew it again */
} rl_renew_miss;

/*
 * Decides, at now, for hold h whose renewal just missed a majority: it is
 * at risk once less than half its validity is left (or no time for two
 * more rounds); it is lost when no round can finish within what is left
 * (so the owner hears of it before its validity ends, never after);
 * otherwise it is renewed again in half of what is left beyond two
 * rounds, at most period_ms later, and, while it is not at risk, no later
 * than the halfway point, so that masters that never answer put it at
 * risk in time. The caller says the risk (once) before acting on lost.
 */
void rl_renew_missed(const rl_client *c, const rl_hold *h, uint64_t now,
                     uint64_t period_ms, rl_renew_miss *out);

#endif
