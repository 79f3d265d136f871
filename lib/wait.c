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

static void make_key(void) {
  pthread_key_create(&waiter_key, destroy_waiter);
  if (uv_mutex_init(&spare_mu) != 0) abort();
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

uint64_t rl_thread_seq(void) {
  if (self_seq == 0) self_seq = atomic_fetch_add(&next_seq, 1);
  return self_seq;
}
