/* Thread-local waiters and thread sequence numbers; see wait.h. */
#include "wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static pthread_key_t waiter_key;
static pthread_once_t waiter_once = PTHREAD_ONCE_INIT;
static __thread rl_waiter *self_waiter;
static __thread uint64_t self_seq;
static atomic_uint_fast64_t next_seq = 1;

/* Waiters are never freed but kept for the next thread: the loop signals
 * a caller's waiter after letting go of its mutex (client.c, so that the
 * woken caller does not block on it at once), by which time the caller
 * may have returned and its thread exited. A waiter signalled after it
 * passed to another thread only wakes that one for nothing: waiters
 * always look at their request again. */
static uv_mutex_t spare_mu;
static rl_waiter *spare; /* linked through next */

static void destroy_waiter(void *p) {
  rl_waiter *w = p;
  uv_mutex_lock(&spare_mu);
  w->next = spare;
  spare = w;
  uv_mutex_unlock(&spare_mu);
}

static int key_made; /* make_key ran */

static void make_key(void) {
  pthread_key_create(&waiter_key, destroy_waiter);
  if (uv_mutex_init(&spare_mu) != 0) abort();
  key_made = 1;
}

static rl_waiter *take_spare(void) {
  uv_mutex_lock(&spare_mu);
  rl_waiter *w = spare;
  if (w != NULL) spare = w->next;
  uv_mutex_unlock(&spare_mu);
  return w;
}

rl_waiter *rl_waiter_self(void) {
  if (self_waiter != NULL) return self_waiter;
  pthread_once(&waiter_once, make_key);
  rl_waiter *w = take_spare();
  if (w != NULL) {
    pthread_setspecific(waiter_key, w);
    self_waiter = w;
    return w;
  }
  w = malloc(sizeof *w);
  if (w == NULL) return NULL;
  if (uv_mutex_init(&w->mu) != 0) {
    free(w);
    return NULL;
  }
  if (uv_cond_init(&w->cond) != 0) {
    uv_mutex_destroy(&w->mu);
    free(w);
    return NULL;
  }
  pthread_setspecific(waiter_key, w);
  self_waiter = w;
  return w;
}

void rl_waiter_after_fork(void) {
  /* Another thread of the parent may have held either mutex at the fork;
   * in the child that thread is gone, and nobody else signals this
   * thread's waiter. Made anew; the old objects are simply forgotten. */
  if (!key_made) return; /* no waiter was ever made */
  if (uv_mutex_init(&spare_mu) != 0) abort();
  if (self_waiter != NULL && (uv_mutex_init(&self_waiter->mu) != 0 ||
                              uv_cond_init(&self_waiter->cond) != 0)) {
    /* A later call makes another, or says RLOCK_ENOMEM. */
    pthread_setspecific(waiter_key, NULL);
    self_waiter = NULL;
  }
}

atomic_uint rl_forks;

/* In the child, on the forking thread, before fork() returns there. */
static void on_fork_child(void) {
  atomic_fetch_add_explicit(&rl_forks, 1, memory_order_relaxed);
  rl_waiter_after_fork();
}

static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}

void rl_fork_watch(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_fork_handler);
}

uint64_t rl_thread_seq(void) {
  if (self_seq == 0) self_seq = atomic_fetch_add(&next_seq, 1);
  return self_seq;
}
