/*
 * Semaphore renewals (sem_renew.c): the family watchdog keeps every
 * hold's lease. Loop thread only.
 */
#ifndef RL_SEM_RENEW_H
#define RL_SEM_RENEW_H

#include "sem_hold.h"

/* Arms a hold's renewal; the family watchdog's routine. */
void rl_sem_watch(rl_client *c, rl_hold *h);
void rl_sem_renew_due(rl_wheel_node **due, size_t n, void *arg);

#endif
