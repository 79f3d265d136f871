/*
 * Per-thread wait objects for the blocking API: one mutex and condition
 * variable per application thread, made on its first blocking call and
 * kept for a later thread when it exits (never freed: a late signal must
 * find it), so the hot path allocates nothing.
 */
#ifndef RL_WAIT_H
#define RL_WAIT_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

struct rl_waiter {
  uv_mutex_t mu;
  uv_cond_t cond;
  struct rl_waiter *next; /* wait.c: among the spares */
};

typedef struct rl_waiter rl_waiter;

/* The calling thread's waiter, or NULL if it could not be made. */
rl_waiter *rl_waiter_self(void);

/* In a child of fork(), on the forking thread: makes its waiter's mutex
 * and condition variable and the spares' mutex anew, since a thread of
 * the parent may have held them at the fork. */
void rl_waiter_after_fork(void);

/* The forks this process has seen: a pthread_atfork child handler,
 * registered by the first rl_fork_watch, adds one in the child (and runs
 * rl_waiter_after_fork there). A client remembers the count it was
 * opened at (client.h's rl_client_forked). */
extern atomic_uint rl_forks;

/* Registers that handler, once per process; any thread. */
void rl_fork_watch(void);

/* A small number that names the calling thread for its lifetime, unique
 * in the process (thread ids may be reused; these are not). */
uint64_t rl_thread_seq(void);

#endif
