/*
 * libuv <-> hiredis glue: one uv_poll_t per async context, started and
 * stopped as hiredis asks for read and write interest, closed when hiredis
 * cleans up. Unlike the stock adapter it never swallows a poll error; see
 * adapter.h.
 */
#include "adapter.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>

typedef struct rl_adapter {
  redisAsyncContext *ac; /* NULL once hiredis has cleaned up */
  uv_poll_t poll;
  int events;
  int guard_sigpipe;
} rl_adapter;

static void guarded_write(rl_adapter *a) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  redisAsyncHandleWrite(a->ac);
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
      !sigismember(&old, SIGPIPE)) {
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  rl_adapter *a = handle->data;
  if (a->ac == NULL) return;
  if (status < 0) {
    /* libuv stopped the handle. Let hiredis read the socket error: while
     * connecting, the write path checks SO_ERROR and reports a failed
     * connect; once connected, the read path sees the error and
     * disconnects, calling every pending callback. */
    a->events = 0;
    if (!(a->ac->c.flags & REDIS_CONNECTED)) {
      if (a->guard_sigpipe)
        guarded_write(a);
      else
        redisAsyncHandleWrite(a->ac);
    } else {
      redisAsyncHandleRead(a->ac);
    }
    return;
  }
  if (events & UV_READABLE) redisAsyncHandleRead(a->ac);
  if (a->ac != NULL && (events & UV_WRITABLE)) {
    if (a->guard_sigpipe)
      guarded_write(a);
    else
      redisAsyncHandleWrite(a->ac);
  }
}

static void update(rl_adapter *a, int events) {
  if (events == a->events) return;
  a->events = events;
  if (events == 0)
    uv_poll_stop(&a->poll);
  else
    uv_poll_start(&a->poll, events, on_poll);
}

static void add_read(void *p) {
  rl_adapter *a = p;
  update(a, a->events | UV_READABLE);
}

static void del_read(void *p) {
  rl_adapter *a = p;
  update(a, a->events & ~UV_READABLE);
}

static void add_write(void *p) {
  rl_adapter *a = p;
  update(a, a->events | UV_WRITABLE);
}

static void del_write(void *p) {
  rl_adapter *a = p;
  update(a, a->events & ~UV_WRITABLE);
}

static void on_close(uv_handle_t *handle) { free(handle->data); }

static void cleanup(void *p) {
  rl_adapter *a = p;
  a->ac->ev.data = NULL;
  a->ac = NULL;
  uv_poll_stop(&a->poll);
  uv_close((uv_handle_t *)&a->poll, on_close);
}

void rl_adapter_flush(redisAsyncContext *ac) {
  rl_adapter *a = ac->ev.data;
  if (a == NULL || !(a->events & UV_WRITABLE)) return;
  if (a->guard_sigpipe)
    guarded_write(a);
  else
    redisAsyncHandleWrite(ac);
}

int rl_adapter_attach(redisAsyncContext *ac, uv_loop_t *loop,
                      int guard_sigpipe) {
  if (ac->ev.data != NULL) return UV_EEXIST;
  rl_adapter *a = calloc(1, sizeof *a);
  if (a == NULL) return UV_ENOMEM;
  int rc = uv_poll_init(loop, &a->poll, ac->c.fd);
  if (rc != 0) {
    free(a);
    return rc;
  }
  a->ac = ac;
  a->guard_sigpipe = guard_sigpipe;
  a->poll.data = a;
  ac->ev.addRead = add_read;
  ac->ev.delRead = del_read;
  ac->ev.addWrite = add_write;
  ac->ev.delWrite = del_write;
  ac->ev.cleanup = cleanup;
  ac->ev.data = a;
  return 0;
}
