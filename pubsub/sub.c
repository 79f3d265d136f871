/*
 * Subscriber connections and channel subscriptions.
 *
 * Each master gets a second connection, made when the client first waits,
 * that only ever sends AUTH and SELECT (before anything else) and then
 * SUBSCRIBE and UNSUBSCRIBE: hiredis 0.14.1 drops or aborts a subscribed
 * connection that is sent anything else. Three more facts of hiredis
 * 0.14.1 shape this file:
 *
 * - It keeps one callback per channel name, put in place by SUBSCRIBE and
 *   removed by the UNSUBSCRIBE reply. A connection therefore never has two
 *   commands in flight for one channel (see rl_chan in sub.h): an
 *   UNSUBSCRIBE reply that overtook a fresh SUBSCRIBE would delete the new
 *   callback and its messages would be lost.
 * - When an UNSUBSCRIBE reply says the connection has no channel left, it
 *   leaves subscribed mode, and a SUBSCRIBE reply still on its way then
 *   trips an assertion. Each connection therefore first subscribes an
 *   anchor channel of its own and keeps it until it closes, so that the
 *   count never drops to zero.
 * - The callback's private data is the connection, never a channel: the
 *   dispatcher finds the channel by name in the client's table, so a
 *   message for a channel already freed is simply not found.
 *
 * Confirmation. A waiter that subscribes tries once more after the
 * subscription is confirmed, because an unlock between its failed attempt
 * and the subscription sent a message nobody heard. A channel counts as
 * confirmed when a majority of masters acknowledged the SUBSCRIBE, or,
 * when fewer than a majority of subscriber connections are up, all that
 * are up (at least one). An unlock reaches a majority of masters, and a
 * majority overlaps every other majority, so a confirmed waiter hears it
 * unless a message is lost; a lost message costs at most the holder's
 * PTTL, which bounds every sleep.
 *
 * After a reconnect, every channel with waiters is subscribed again, and
 * each acknowledgement of a restored subscription counts as an event (a
 * message may have been lost while the connection was down).
 */
#include "sub.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapter.h"
#include "util.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

static void connect_now(rl_sub *s);
static void on_retry(uv_timer_t *t);
static void chan_check(rl_chan *ch);

/* --- the channel table --------------------------------------------------- */

static uint64_t hash_name(const char *p, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

static rl_chan **bucket_of(rl_pubsub *ps, const char *name, size_t len) {
  return &ps->buckets[hash_name(name, len) & (ps->nbuckets - 1)];
}

static rl_chan *chan_find(rl_pubsub *ps, const char *name, size_t len) {
  for (rl_chan *ch = *bucket_of(ps, name, len); ch != NULL; ch = ch->next)
    if (ch->len == len && memcmp(ch->name, name, len) == 0) return ch;
  return NULL;
}

static void table_grow(rl_pubsub *ps) {
  size_t n = ps->nbuckets * 2;
  rl_chan **b = calloc(n, sizeof *b);
  if (b == NULL) return; /* longer chains, still correct */
  for (size_t i = 0; i < ps->nbuckets; i++) {
    rl_chan *ch = ps->buckets[i];
    while (ch != NULL) {
      rl_chan *next = ch->next;
      rl_chan **slot = &b[hash_name(ch->name, ch->len) & (n - 1)];
      ch->next = *slot;
      *slot = ch;
      ch = next;
    }
  }
  free(ps->buckets);
  ps->buckets = b;
  ps->nbuckets = n;
}

static void chan_free(rl_chan *ch) {
  rl_pubsub *ps = ch->ps;
  rl_chan **p = bucket_of(ps, ch->name, ch->len);
  while (*p != ch) p = &(*p)->next;
  *p = ch->next;
  ps->nchans--;
  free(ch);
}

/* Frees ch once nobody waits on it and no connection has it. */
static void chan_maybe_free(rl_chan *ch) {
  if (ch->refs == 0 && (ch->sending | ch->acked | ch->leaving) == 0)
    chan_free(ch);
}

/* --- subscribing ------------------------------------------------------------ */

static void on_sub_reply(redisAsyncContext *ac, void *r, void *privdata);

static int send_cmd(rl_sub *s, const char *cmd, const char *name,
                    size_t len) {
  if (s->state != RL_SUB_READY || s->ac == NULL) return -1;
  return redisAsyncCommand(s->ac, on_sub_reply, s, "%s %b", cmd, name, len) ==
                 REDIS_OK
             ? 0
             : -1;
}

/* Sends what connection i needs for ch, if nothing is in flight there. */
static void chan_sync_one(rl_chan *ch, int i) {
  rl_pubsub *ps = ch->ps;
  uint64_t bit = 1ull << i;
  if (ps->closing || rl_client_closing(ps->client)) return;
  if ((ch->sending | ch->leaving) & bit) return;
  if (ch->refs > 0 && !(ch->acked & bit)) {
    if (send_cmd(&ps->subs[i], "SUBSCRIBE", ch->name, ch->len) == 0)
      ch->sending |= bit;
  } else if (ch->refs == 0 && (ch->acked & bit)) {
    if (send_cmd(&ps->subs[i], "UNSUBSCRIBE", ch->name, ch->len) == 0) {
      ch->acked &= ~bit;
      ch->leaving |= bit;
    }
  }
}

void rl_chan_sync(rl_chan *ch) {
  for (int i = 0; i < ch->ps->n; i++) chan_sync_one(ch, i);
  chan_check(ch);
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* Marks ch confirmed once enough connections acknowledged it (see the top
 * of the file); confirmation wakes the first waiter for its retry. */
static void chan_check(rl_chan *ch) {
  rl_pubsub *ps = ch->ps;
  if (ch->refs == 0 || ch->confirmed || ch->acked == 0) return;
  int ready = 0;
  for (int i = 0; i < ps->n; i++)
    if (ps->subs[i].state == RL_SUB_READY) ready++;
  int need = ready >= ps->quorum ? ps->quorum : (ready > 0 ? ready : 1);
  if (popcount64(ch->acked) < need) return;
  ch->confirmed = 1;
  rl_chan_event(ch, -1);
}

static void check_all(rl_pubsub *ps) {
  for (size_t b = 0; b < ps->nbuckets; b++)
    for (rl_chan *ch = ps->buckets[b]; ch != NULL; ch = ch->next)
      chan_check(ch);
}

rl_chan *rl_chan_ref(rl_pubsub *ps, const char *name, size_t len) {
  rl_chan *ch = chan_find(ps, name, len);
  if (ch == NULL) {
    ch = calloc(1, sizeof *ch + len + 1);
    if (ch == NULL) return NULL;
    ch->ps = ps;
    ch->len = len;
    memcpy(ch->name, name, len);
    rl_list_init(&ch->waiters);
    if (ps->nchans >= ps->nbuckets) table_grow(ps);
    rl_chan **slot = bucket_of(ps, name, len);
    ch->next = *slot;
    *slot = ch;
    ps->nchans++;
  }
  if (ch->refs++ == 0) {
    /* A new generation of waiters: they need a fresh confirmation. */
    ch->confirmed = 0;
    ch->ever = ch->acked;
  }
  return ch;
}

void rl_chan_unref(rl_chan *ch) {
  if (--ch->refs > 0) return;
  ch->confirmed = 0;
  for (int i = 0; i < ch->ps->n; i++) chan_sync_one(ch, i);
  chan_maybe_free(ch);
}

/* The dispatcher: every reply and message of a subscriber connection. */
static void on_sub_reply(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  rl_sub *s = privdata;
  redisReply *rep = r;
  if (rep == NULL || s->state == RL_SUB_CLOSED) return;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 3) return;
  redisReply *kind = rep->element[0], *name = rep->element[1];
  if (kind->type != REDIS_REPLY_STRING || name->type != REDIS_REPLY_STRING)
    return;
  rl_pubsub *ps = s->ps;
  if ((size_t)name->len == ps->anchorlen &&
      memcmp(name->str, ps->anchor, ps->anchorlen) == 0)
    return;
  rl_chan *ch = chan_find(ps, name->str, (size_t)name->len);
  if (ch == NULL) return;
  uint64_t bit = 1ull << s->idx;
  if (strcasecmp(kind->str, "message") == 0) {
    if (ch->refs > 0) rl_chan_event(ch, s->idx);
  } else if (strcasecmp(kind->str, "subscribe") == 0) {
    if (!(ch->sending & bit)) return;
    ch->sending &= ~bit;
    ch->acked |= bit;
    int restored = (ch->ever & bit) != 0;
    ch->ever |= bit;
    if (ch->refs == 0) {
      chan_sync_one(ch, s->idx); /* nobody waits any more: unsubscribe */
      return;
    }
    if (restored && ch->confirmed) {
      rl_chan_event(ch, -1);
      return;
    }
    chan_check(ch);
  } else if (strcasecmp(kind->str, "unsubscribe") == 0) {
    if (!(ch->leaving & bit)) return;
    ch->leaving &= ~bit;
    chan_sync_one(ch, s->idx); /* a waiter may have come meanwhile */
    chan_maybe_free(ch);
  }
}

/* --- connections ------------------------------------------------------------ */

/* Connection i is gone: it has no subscription any more. */
static void forget_conn(rl_pubsub *ps, int i) {
  uint64_t bit = 1ull << i;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    rl_chan *ch = ps->buckets[b];
    while (ch != NULL) {
      rl_chan *next = ch->next;
      ch->sending &= ~bit;
      ch->acked &= ~bit;
      ch->leaving &= ~bit;
      chan_maybe_free(ch);
      ch = next;
    }
  }
}

static void schedule_reconnect(rl_sub *s) {
  if (s->state == RL_SUB_CLOSED) return;
  uint64_t b = s->backoff_ms;
  uint64_t delay = b / 2 + rl_random_upto(b / 2);
  s->backoff_ms = b * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : b * 2;
  uv_timer_start(&s->retry, on_retry, delay, 0);
}

static void on_setup_reply(redisAsyncContext *ac, void *r, void *privdata) {
  rl_sub *s = privdata;
  redisReply *rep = r;
  if (rep != NULL && rep->type == REDIS_REPLY_ERROR) {
    rl_client_note_error(s->ps->client, rep->str, (size_t)rep->len);
    redisAsyncDisconnect(ac);
  }
}

static void on_connect(const redisAsyncContext *cac, int status) {
  rl_sub *s = cac->data;
  redisAsyncContext *ac = (redisAsyncContext *)cac;
  rl_pubsub *ps = s->ps;
  uv_timer_stop(&s->timer);
  if (status != REDIS_OK) {
    s->ac = NULL; /* hiredis frees the context after this callback */
    s->state = RL_SUB_DOWN;
    schedule_reconnect(s);
    return;
  }
  int flags = fcntl(ac->c.fd, F_GETFD);
  if (flags >= 0) fcntl(ac->c.fd, F_SETFD, flags | FD_CLOEXEC);
  s->backoff_ms = BACKOFF_MIN_MS;
  s->connects++;
  const rl_url *u = &ps->client->conns[s->idx].url;
  /* AUTH and SELECT go before the first SUBSCRIBE, while the connection
   * is not yet in subscribed mode and takes ordinary commands. */
  if (u->has_password)
    redisAsyncCommand(ac, on_setup_reply, s, "AUTH %s", u->password);
  if (u->db != 0) redisAsyncCommand(ac, on_setup_reply, s, "SELECT %d", u->db);
  s->state = RL_SUB_READY;
  send_cmd(s, "SUBSCRIBE", ps->anchor, ps->anchorlen);
  for (size_t b = 0; b < ps->nbuckets; b++)
    for (rl_chan *ch = ps->buckets[b]; ch != NULL; ch = ch->next)
      chan_sync_one(ch, s->idx);
  check_all(ps);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  (void)status;
  rl_sub *s = ac->data;
  s->ac = NULL;
  uv_timer_stop(&s->timer);
  if (s->state == RL_SUB_CLOSED) return;
  s->state = RL_SUB_DOWN;
  forget_conn(s->ps, s->idx);
  check_all(s->ps); /* fewer connections up may be enough now */
  schedule_reconnect(s);
}

static void on_connect_timeout(uv_timer_t *t) {
  rl_sub *s = t->data;
  if (s->state != RL_SUB_CONNECTING) return;
  redisAsyncContext *ac = s->ac;
  s->ac = NULL;
  s->state = RL_SUB_DOWN;
  redisAsyncFree(ac); /* never connected: no callbacks but cleanup */
  schedule_reconnect(s);
}

static void connect_now(rl_sub *s) {
  const rl_url *u = &s->ps->client->conns[s->idx].url;
  redisAsyncContext *ac = u->kind == RL_URL_UNIX
                              ? redisAsyncConnectUnix(u->path)
                              : redisAsyncConnect(u->host, u->port);
  if (ac == NULL || ac->err) {
    if (ac) redisAsyncFree(ac);
    schedule_reconnect(s);
    return;
  }
  ac->data = s;
  if (rl_adapter_attach(ac, s->ps->client->loop,
                        s->ps->client->conn_cfg.guard_sigpipe) != 0) {
    redisAsyncFree(ac);
    schedule_reconnect(s);
    return;
  }
  s->ac = ac;
  s->state = RL_SUB_CONNECTING;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  uv_timer_start(&s->timer, on_connect_timeout,
                 s->ps->client->conn_cfg.connect_timeout_ms, 0);
}

static void on_retry(uv_timer_t *t) { connect_now(t->data); }

/* --- lifecycle ------------------------------------------------------------- */

rl_pubsub *rl_pubsub_get(rl_client *c) {
  if (c->pubsub != NULL) return c->pubsub;
  rl_pubsub *ps = calloc(1, sizeof *ps);
  if (ps == NULL) return NULL;
  ps->subs = calloc((size_t)c->nmasters, sizeof *ps->subs);
  ps->nbuckets = 16;
  ps->buckets = calloc(ps->nbuckets, sizeof *ps->buckets);
  if (ps->subs == NULL || ps->buckets == NULL) {
    free(ps->subs);
    free(ps->buckets);
    free(ps);
    return NULL;
  }
  ps->client = c;
  ps->n = c->nmasters;
  ps->quorum = c->nmasters / 2 + 1;
  /* The anchor has no '{', so it can never be a lock's channel. */
  int len = snprintf(ps->anchor, sizeof ps->anchor, "%sanchor:%s",
                     c->opts.key_prefix, c->id);
  ps->anchorlen = (size_t)len;
  for (int i = 0; i < ps->n; i++) {
    rl_sub *s = &ps->subs[i];
    s->ps = ps;
    s->idx = i;
    s->backoff_ms = BACKOFF_MIN_MS;
    uv_timer_init(c->loop, &s->timer);
    uv_timer_init(c->loop, &s->retry);
    s->timer.data = s;
    s->retry.data = s;
  }
  ps->handles_open = 2 * ps->n;
  /* The whole of pub/sub counts as one of the client's open handles, so
   * that the client outlives the close callbacks below. */
  c->handles_open++;
  c->pubsub = ps;
  for (int i = 0; i < ps->n; i++) connect_now(&ps->subs[i]);
  return ps;
}

static void on_timer_closed(uv_handle_t *h) {
  rl_sub *s = h->data;
  rl_pubsub *ps = s->ps;
  if (--ps->handles_open > 0) return;
  rl_client *c = ps->client;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    rl_chan *ch = ps->buckets[b];
    while (ch != NULL) {
      rl_chan *next = ch->next;
      free(ch);
      ch = next;
    }
  }
  free(ps->buckets);
  free(ps->subs);
  free(ps);
  /* As client.c does for its own handles. */
  if (--c->handles_open == 0) rl_client_unref(c);
}

void rl_pubsub_close(rl_client *c) {
  rl_pubsub *ps = c->pubsub;
  if (ps == NULL) return;
  c->pubsub = NULL;
  ps->closing = 1;
  for (int i = 0; i < ps->n; i++) {
    rl_sub *s = &ps->subs[i];
    s->state = RL_SUB_CLOSED;
    if (s->ac != NULL) {
      redisAsyncContext *ac = s->ac;
      s->ac = NULL;
      redisAsyncFree(ac);
    }
    uv_close((uv_handle_t *)&s->timer, on_timer_closed);
    uv_close((uv_handle_t *)&s->retry, on_timer_closed);
  }
}
