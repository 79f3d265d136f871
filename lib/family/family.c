/*
 * The lock family's shared machinery (family.h): per-client state, object
 * handles, posting requests, sleeping between attempts, argument vectors.
 *
 * Why a handle per object is an ordinary lock handle: a request names its
 * lock, and everything that carries requests (the queue, rl_req_finish,
 * rounds, refcounts that keep a handle alive while async requests are
 * pending) works with that. A semaphore's or a latch's handle owns one,
 * built on its own keys, so that the family's requests need nothing from
 * the core but two hooks (start, end) and its own kind.
 */
#include "family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "metrics.h"
#include "options.h"
#include "pubsub.h"
#include "resp.h"
#include "util.h"
#include "waitq.h"

/* --- per-client state ----------------------------------------------------- */

rl_family *rl_family_get(rl_client *c) {
  if (c->family != NULL) return c->family;
  if (rl_client_closing(c)) return NULL;
  rl_family *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  if (rl_holds_init(&f->permits, c->id) != 0) {
    free(f);
    return NULL;
  }
  f->c = c;
  rl_list_init(&f->watches);
  c->family = f;
  return f;
}

rl_watchdog *rl_family_watchdog(rl_client *c, rl_watchdog_due_cb due) {
  rl_family *f = rl_family_get(c);
  if (f == NULL) return NULL;
  if (!f->watchdog_open) {
    uint64_t period = (uint64_t)c->opts.watchdog_timeout_ms / 3;
    if (rl_watchdog_init(&f->watchdog, c->loop, period ? period : 1,
                         (size_t)c->opts.watchdog_batch, due,
                         c) != 0)
      return NULL;
    f->watchdog_open = 1;
    c->handles_open++; /* the client outlives the timer's close */
  }
  return &f->watchdog;
}

static void on_watchdog_closed(uv_handle_t *h) {
  rl_family *f = rl_container_of((uv_timer_t *)h, rl_family, watchdog.timer);
  rl_client *c = f->c;
  free(f);
  if (--c->handles_open == 0) rl_client_unref(c);
}

void rl_family_shutdown(rl_client *c) {
  rl_family *f = c->family;
  if (f == NULL) return;
  if (f->close_all != NULL) f->close_all(c, f);
  if (f->close_watches != NULL) f->close_watches(f);
  c->family = NULL;
  rl_holds_free(&f->permits);
  if (f->watchdog_open)
    rl_watchdog_close(&f->watchdog, on_watchdog_closed); /* frees f */
  else
    free(f);
}

/* --- object handles --------------------------------------------------------- */

int rl_object_new(rl_client *c, const char *name, const char *suffix,
                  rlock **out) {
  *out = NULL;
  if (c == NULL || rl_name_check(name) != 0) return RLOCK_EINVAL;
  /* The object's key and its fencing counter, "<key>:fence", in one
   * allocation with the channel and the name (lock.c). */
  size_t slen = strlen(suffix);
  char *fence = malloc(slen + 7);
  if (fence == NULL) return RLOCK_ENOMEM;
  memcpy(fence, suffix, slen);
  memcpy(fence + slen, ":fence", 7);
  const char *suffixes[] = {suffix, fence};
  rlock *obj = rl_lock_alloc(c, name, 2, suffixes, 0, 1, 0);
  free(fence);
  if (obj == NULL) return RLOCK_ENOMEM;
  *out = obj;
  return 0;
}

/* --- posting ---------------------------------------------------------------- */

int rl_fam_call(rlock *obj, rl_req *req, int owner_is_thread,
                uint64_t owner) {
  req->kind = RL_REQ_FAMILY;
  if (owner_is_thread)
    rl_owner_thread(obj->client, req);
  else
    rl_owner_async(obj->client, owner, req);
  if (req->t_post == 0) req->t_post = rl_now_ms();
  return rl_req_call(obj, req);
}

int rl_fam_post(rlock *obj, rl_req *req, uint64_t owner, rlock_cb cb,
                void *arg) {
  req->kind = RL_REQ_FAMILY;
  req->lock = obj;
  req->cb = cb;
  req->arg = arg;
  if (req->t_post == 0) req->t_post = rl_now_ms();
  rl_owner_async(obj->client, owner, req);
  rl_lock_ref(obj);
  int rc = rl_client_post(obj->client, req);
  if (rc != 0) {
    rl_lock_unref(obj);
    free(req);
  }
  return rc;
}

uint64_t rl_fam_deadline(int64_t wait_ms) {
  if (wait_ms == RLOCK_WAIT_FOREVER) return RL_FOREVER;
  uint64_t now = rl_now_ms();
  return (uint64_t)wait_ms > RL_FOREVER - now - 1 ? RL_FOREVER - 1
                                                  : now + (uint64_t)wait_ms;
}

void rl_fam_random_id(char out[33]) {
  unsigned char raw[16];
  if (rl_random_bytes(raw, sizeof raw) != 0) {
    /* No OS randomness: the generator the jitter uses, which is seeded
     * per process; ids need to be unique, not secret. */
    for (size_t i = 0; i < sizeof raw; i++)
      raw[i] = (unsigned char)rl_random_upto(255);
  }
  rl_hex(raw, sizeof raw, out);
}

static int cmp_i64_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

int64_t rl_fam_quorum_value(int64_t *v, int n, int quorum, int desc) {
  qsort(v, (size_t)n, sizeof v[0], cmp_i64_desc);
  return desc ? v[quorum - 1] : v[n - quorum];
}

/* --- sleeping between attempts ------------------------------------------- */

static void on_psw_wake(rl_psw *psw, void *data) {
  (void)psw;
  rl_fwait *w = data;
  w->retry(w->req);
}

static void on_timer_closed(uv_handle_t *h) { free(h); }

static void on_timer(uv_timer_t *t) {
  rl_fwait *w = t->data;
  if (w != NULL) w->retry(w->req);
}

static void stop_timer(rl_fwait *w) {
  if (w->timer == NULL) return;
  w->timer->data = NULL;
  uv_close((uv_handle_t *)w->timer, on_timer_closed);
  w->timer = NULL;
}

static void leave_queue(rl_fwait *w, int may_pass) {
  if (w->psw == NULL) return;
  rl_psw_leave(w->psw, may_pass);
  w->psw = NULL;
  w->channel = NULL;
  if (w->gauge != NULL) RL_ADD(*w->gauge, -1);
}

int rl_fwait_sleep(rl_fwait *w, rl_req *req, const char *channel,
                   size_t len, uint64_t ms, void (*retry)(rl_req *),
                   atomic_int_fast64_t *gauge) {
  rl_client *c = req->lock->client;
  w->req = req;
  w->retry = retry;
  if (channel != NULL && c->opts.wait_strategy == RLOCK_WAIT_PUBSUB) {
    stop_timer(w);
    if (w->psw != NULL && w->channel == channel) {
      rl_psw_sleep(w->psw, ms);
      return 0;
    }
    leave_queue(w, 1); /* another channel now: hand on an unused wake */
    rl_pubsub *ps = rl_pubsub_get(c);
    w->psw = ps ? rl_psw_join(ps, channel, len, ms, on_psw_wake, w) : NULL;
    if (w->psw == NULL) return RLOCK_ENOMEM;
    w->channel = channel;
    w->gauge = gauge;
    if (gauge != NULL) RL_ADD(*gauge, 1);
    return 0;
  }
  leave_queue(w, 1);
  if (w->timer == NULL) {
    w->timer = malloc(sizeof *w->timer);
    if (w->timer == NULL) return RLOCK_ENOMEM;
    uv_timer_init(c->loop, w->timer);
  }
  w->timer->data = w;
  uv_timer_start(w->timer, on_timer, ms, 0);
  return 0;
}

void rl_fwait_leave(rl_fwait *w, int may_pass) {
  stop_timer(w);
  leave_queue(w, may_pass);
}

/* --- argument vectors ------------------------------------------------------- */

void rl_args_init(rl_args *a) { memset(a, 0, sizeof *a); }

void rl_args_free(rl_args *a) {
  free(a->argv);
  free(a->len);
  free(a->off);
  free(a->pool);
  memset(a, 0, sizeof *a);
}

static int args_grow(rl_args *a) {
  if (a->oom) return -1;
  if (a->argc < a->cap) return 0;
  int cap = a->cap ? 2 * a->cap : 16;
  const char **argv = realloc(a->argv, sizeof *argv * (size_t)cap);
  if (argv != NULL) a->argv = argv;
  size_t *len = realloc(a->len, sizeof *len * (size_t)cap);
  if (len != NULL) a->len = len;
  long *off = realloc(a->off, sizeof *off * (size_t)cap);
  if (off != NULL) a->off = off;
  if (argv == NULL || len == NULL || off == NULL) {
    a->oom = 1;
    return -1;
  }
  a->cap = cap;
  return 0;
}

void rl_args_str(rl_args *a, const char *s, size_t len) {
  if (args_grow(a) != 0) return;
  a->argv[a->argc] = s;
  a->len[a->argc] = len;
  a->off[a->argc++] = -1;
}

void rl_args_i64(rl_args *a, int64_t v) {
  if (args_grow(a) != 0) return;
  if (a->used + 24 > a->pool_cap) {
    size_t cap = a->pool_cap ? 2 * a->pool_cap : 512;
    char *p = realloc(a->pool, cap);
    if (p == NULL) {
      a->oom = 1;
      return;
    }
    a->pool = p;
    a->pool_cap = cap;
  }
  size_t n = rl_resp_put_i64(a->pool + a->used, v);
  a->argv[a->argc] = NULL;
  a->len[a->argc] = n;
  a->off[a->argc++] = (long)a->used;
  a->used += n + 1;
}

void rl_args_deadline(rl_args *a) {
  rl_args_str(a, rl_arg_master_deadline, 0);
}

rl_round *rl_args_round(rl_args *a, rl_client *c, const rl_round_ops *ops,
                        void *data, int script) {
  if (a->oom) return NULL;
  for (int i = 0; i < a->argc; i++)
    if (a->off[i] >= 0) a->argv[i] = a->pool + a->off[i];
  return rl_round_new(c, ops, data, script, a->argc, a->argv, a->len);
}
