/*
 * Watchdog driver and batched renewal; see watchdog.h.
 *
 * Timing: a hold is renewed every period (watchdog_timeout_ms / 3). A
 * renewal counts only if a majority of masters renewed it and the
 * renewal's own validity, lease - elapsed - drift, is still positive; the
 * hold's validity then runs from the start of that round. A renewal that
 * reaches no majority is retried, sooner as the validity runs out, and when
 * too little validity is left to finish one more round (two master
 * timeouts), the lock is declared lost: before its validity ends, never
 * after. A renewal that finds the owner gone on so many masters that no
 * majority can hold it declares it lost at once.
 */
#include "watchdog.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "lock.h"
#include "ops.h"
#include "round.h"
#include "scripts.h"
#include "util.h"

#define TICK_MS 10
#define SLOTS 1024

static rl_watchdog *of(uv_timer_t *t) {
  return rl_container_of(t, rl_watchdog, timer);
}

static void on_timer(uv_timer_t *t);

/* Arms the timer for the wheel's next due time, if earlier than now set. */
static void schedule(rl_watchdog *w, uint64_t due) {
  uint64_t now = uv_now(w->timer.loop);
  if (uv_is_active((uv_handle_t *)&w->timer) && w->timer_due <= due) return;
  w->timer_due = due;
  uv_timer_start(&w->timer, on_timer, due > now ? due - now : 0, 0);
}

static void arm(rl_watchdog *w, rl_hold *h, uint64_t delay) {
  if (w->closed) return;
  uint64_t due = uv_now(w->timer.loop) + delay;
  rl_wheel_insert(&w->wheel, &h->wd, due);
  schedule(w, due);
}

void rl_watchdog_start(rl_watchdog *w, rl_hold *h) {
  arm(w, h, w->period_ms);
}

void rl_watchdog_cancel(rl_watchdog *w, rl_hold *h) {
  if (w->closed) return;
  rl_wheel_cancel(&w->wheel, &h->wd);
  /* The timer may fire for nothing; it then re-arms or stays off. */
}

void rl_hold_lost(rl_client *c, rl_hold *h) {
  if (h->lost) return;
  h->lost = 1;
  RL_ADD(c->metrics.locks_lost, 1);
  rl_log(c, RLOCK_LOG_ERROR, "lock %.*s lost by %.*s", (int)h->keylen, h->key,
         (int)h->ownerlen, h->owner);
  rl_watchdog_cancel(&c->watchdog, h);
  rlock *lock = h->lock;
  rlock_lost_cb cb = lock ? atomic_load(&lock->lost_cb) : NULL;
  if (cb != NULL)
    cb(lock, h->owner_id, h->owner_is_thread, atomic_load(&lock->lost_arg));
}

/* --- batched renewal ----------------------------------------------------- */

typedef struct batch {
  size_t n;
  uint64_t *gen;
  uint16_t *ones, *zeros;
} batch;

/* Argument positions: EVALSHA sha numkeys key1..keyn lease owner1..ownern */
#define KEY_ARG(r, k) (3 + (k))
#define OWNER_ARG(r, b, k) (3 + (b)->n + 1 + (k))

static int classify_renew(rl_round *r, int i, const redisReply *rep) {
  (void)i;
  batch *b = r->data;
  if (b == NULL) return RL_VOTE_FAIL;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != b->n)
    return RL_VOTE_FAIL;
  for (size_t k = 0; k < b->n; k++) {
    const redisReply *e = rep->element[k];
    if (e->type != REDIS_REPLY_INTEGER) return RL_VOTE_FAIL;
  }
  for (size_t k = 0; k < b->n; k++) {
    if (rep->element[k]->integer == 1)
      b->ones[k]++;
    else
      b->zeros[k]++;
  }
  return RL_VOTE_YES;
}

static void renew_done(rl_round *r) {
  batch *b = r->data;
  rl_client *c = r->client;
  if (b == NULL || c->shut_down) return;
  rl_watchdog *w = &c->watchdog;
  int64_t lease = c->opts.watchdog_timeout_ms;
  int64_t drift = rl_drift_ms(c, lease);
  uint64_t now = rl_now_ms();
  int fresh = lease - (int64_t)(now - r->t_start) - drift > 0;
  uint64_t mt = (uint64_t)c->opts.master_timeout_ms;
  for (size_t k = 0; k < b->n; k++) {
    const rl_argv *a = &r->args;
    size_t ki = KEY_ARG(r, k), oi = OWNER_ARG(r, b, k);
    rl_hold *h = rl_holds_find(&c->holds, a->argv[ki], a->argvlen[ki],
                               a->argv[oi], a->argvlen[oi]);
    if (h == NULL || h->gen != b->gen[k] || h->lost || h->wd.armed)
      continue; /* released, replaced, or already re-armed */
    if (b->ones[k] >= r->quorum && fresh) {
      RL_ADD(c->metrics.renewals, 1);
      h->valid_until_ms = r->t_start + (uint64_t)(lease - drift);
      arm(w, h, w->period_ms);
      continue;
    }
    if (b->zeros[k] > r->n - r->quorum) {
      rl_hold_lost(c, h); /* the owner is gone from too many masters */
      continue;
    }
    RL_ADD(c->metrics.renewal_failures, 1);
    rl_log(c, RLOCK_LOG_WARN, "renewal of %.*s missed a majority",
           (int)h->keylen, h->key);
    uint64_t left = h->valid_until_ms > now ? h->valid_until_ms - now : 0;
    if (left <= 2 * mt) {
      rl_hold_lost(c, h); /* no time for another round: say so now */
      continue;
    }
    uint64_t retry = (left - 2 * mt) / 2;
    if (retry > w->period_ms) retry = w->period_ms;
    arm(w, h, retry);
  }
}

static void renew_release(rl_round *r) { free(r->data); }

const rl_round_ops rl_renew_ops = {classify_renew, renew_done, NULL,
                                       renew_release};

void *rl_renew_batch_new(size_t n) {
  batch *b = calloc(1, sizeof *b + n * (sizeof(uint64_t) + 2 * sizeof(uint16_t)));
  if (b == NULL) return NULL;
  b->n = n;
  b->gen = (uint64_t *)(b + 1);
  b->ones = (uint16_t *)(b->gen + n);
  b->zeros = b->ones + n;
  return b;
}

static void send_batch(rl_watchdog *w, rl_hold **hs, size_t n) {
  rl_client *c = w->c;
  size_t argc = 2 + n + 1 + n;
  batch *b = rl_renew_batch_new(n);
  const char **argv = malloc(argc * sizeof *argv);
  size_t *len = malloc(argc * sizeof *len);
  char lease[24], nkeys[24];
  rl_round *r = NULL;
  if (b != NULL && argv != NULL && len != NULL) {
    int ll = snprintf(lease, sizeof lease, "%lld",
                      (long long)c->opts.watchdog_timeout_ms);
    int nl = snprintf(nkeys, sizeof nkeys, "%zu", n);
    argv[0] = NULL;
    len[0] = 0;
    argv[1] = nkeys;
    len[1] = (size_t)nl;
    for (size_t k = 0; k < n; k++) {
      argv[2 + k] = hs[k]->key;
      len[2 + k] = hs[k]->keylen;
      argv[3 + n + k] = hs[k]->owner;
      len[3 + n + k] = hs[k]->ownerlen;
      b->gen[k] = hs[k]->gen;
    }
    argv[2 + n] = lease;
    len[2 + n] = (size_t)ll;
    r = rl_round_new(c, &rl_renew_ops, b, RL_SCRIPT_RENEW, (int)argc, argv, len);
  }
  free(argv);
  free(len);
  if (r == NULL) {
    /* Out of memory: try these again soon rather than lose them. */
    free(b);
    for (size_t k = 0; k < n; k++) arm(w, hs[k], TICK_MS * 10);
    return;
  }
  r->wait_all = 1;
  rl_round_send(r);
}

static void on_due(rl_wheel_node *node, void *arg) {
  rl_watchdog *w = arg;
  rl_hold *h = rl_container_of(node, rl_hold, wd);
  if (w->ndue == w->capdue) {
    size_t cap = w->capdue ? w->capdue * 2 : 256;
    rl_hold **d = realloc(w->due, cap * sizeof *d);
    if (d == NULL) {
      rl_wheel_insert(&w->wheel, node, uv_now(w->timer.loop) + TICK_MS);
      return;
    }
    w->due = d;
    w->capdue = cap;
  }
  w->due[w->ndue++] = h;
}

static void on_timer(uv_timer_t *t) {
  rl_watchdog *w = of(t);
  uint64_t now = uv_now(t->loop);
  w->ndue = 0;
  /* Renew what falls due within the next eighth of a period too: a little
   * early is harmless, and it fills batches that would otherwise go out
   * half empty, one timer tick apart. */
  rl_wheel_advance(&w->wheel, now + w->period_ms / 8, on_due, w);
  size_t per = (size_t)w->c->opts.watchdog_batch;
  for (size_t i = 0; i < w->ndue; i += per)
    send_batch(w, w->due + i, w->ndue - i < per ? w->ndue - i : per);
  w->ndue = 0;
  uint64_t next = rl_wheel_next_ms(&w->wheel, now);
  if (next != UINT64_MAX) schedule(w, now + (next ? next : 1));
}

int rl_watchdog_init(rl_watchdog *w, rl_client *c, uv_loop_t *loop) {
  memset(w, 0, sizeof *w);
  w->c = c;
  w->period_ms = (uint64_t)c->opts.watchdog_timeout_ms / 3;
  if (w->period_ms == 0) w->period_ms = 1;
  /* The wheel first: on failure no handle is on the loop yet. */
  if (rl_wheel_init(&w->wheel, SLOTS, TICK_MS, uv_now(loop)) != 0)
    return RLOCK_ENOMEM;
  uv_timer_init(loop, &w->timer);
  return 0;
}

void rl_watchdog_close(rl_watchdog *w, uv_close_cb close_cb) {
  w->closed = 1;
  uv_timer_stop(&w->timer);
  rl_wheel_free(&w->wheel);
  free(w->due);
  w->due = NULL;
  uv_close((uv_handle_t *)&w->timer, close_cb);
}
