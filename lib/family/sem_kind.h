/*
 * The semaphore's row of the acquisition engine (sem_kind.c): a
 * semaphore request's start and end hooks. Loop thread only.
 */
#ifndef RL_SEM_KIND_H
#define RL_SEM_KIND_H

#include "sem_hold.h"

/* The request's start and end hooks (rl_req.start, rl_req.end). */
void rl_sem_acquire_start(rl_req *req);
void rl_sem_acquire_end(rl_req *req, int status);

#endif
