/*
 * Subscriber connections and channel subscriptions.
 *
 * Each master gets a second connection (lib/conn.c in subscriber mode),
 * made when the client first waits, that sends only SUBSCRIBE and
 * UNSUBSCRIBE after its handshake: a connection in subscribed mode takes
 * nothing else, and keeping subscriptions off the command connections
 * keeps a flood of messages from delaying lock replies. Messages arrive
 * at any time and go to one dispatcher, which finds the channel by name
 * in the table, so a message for a channel already freed is simply not
 * found. Replies to SUBSCRIBE and UNSUBSCRIBE come in order, each to its
 * own command.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"
#include "rlock.h"

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

/* A SUBSCRIBE or UNSUBSCRIBE in flight: its bytes, which the connection
 * writes from here, and the channel it is for. */
typedef struct sub_cmd {
  rl_chan *ch;
  int unsubscribe;
  uv_buf_t buf;
  char bytes[];
} sub_cmd;

static void on_sub_reply(rl_cmd *cmd, redisReply *rep, int status);

static int send_cmd(rl_sub *s, rl_chan *ch, int unsubscribe) {
  if (s->conn.state != RL_CONN_READY) return -1;
  const char *argv[] = {unsubscribe ? "UNSUBSCRIBE" : "SUBSCRIBE", ch->name};
  size_t len[] = {unsubscribe ? 11u : 9u, ch->len};
  size_t size = rl_resp_size(2, argv, len);
  sub_cmd *sc = malloc(sizeof *sc + size);
  if (sc == NULL) return -1;
  sc->ch = ch;
  sc->unsubscribe = unsubscribe;
  sc->buf = uv_buf_init(sc->bytes, (unsigned)rl_resp_write(sc->bytes, 2,
                                                            argv, len));
  if (rl_conn_send(&s->conn, &sc->buf, 1, -1, 1, on_sub_reply, sc,
                   s->idx) != 0) {
    free(sc);
    return -1;
  }
  return 0;
}

/* Sends what connection i needs for ch, if nothing is in flight there. */
static void chan_sync_one(rl_chan *ch, int i) {
  rl_pubsub *ps = ch->ps;
  uint64_t bit = 1ull << i;
  if (ps->closing) return;
  if ((ch->sending | ch->leaving) & bit) return;
  if (ch->refs > 0 && !(ch->acked & bit)) {
    if (send_cmd(&ps->subs[i], ch, 0) == 0) ch->sending |= bit;
  } else if (ch->refs == 0 && (ch->acked & bit)) {
    if (send_cmd(&ps->subs[i], ch, 1) == 0) {
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
    if (ps->subs[i].conn.state == RL_CONN_READY) ready++;
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

/* The reply to one SUBSCRIBE or UNSUBSCRIBE of connection cmd->idx. */
static void on_sub_reply(rl_cmd *cmd, redisReply *rep, int status) {
  sub_cmd *sc = cmd->data;
  rl_chan *ch = sc->ch;
  int unsubscribe = sc->unsubscribe;
  free(sc);
  if (status != RL_CMD_REPLY && status != RL_CMD_LATE) {
    /* The connection dropped: the channel's bits were cleared with it
     * (forget_conn), or the client is closing. */
    return;
  }
  rl_pubsub *ps = ch->ps;
  int i = cmd->idx;
  uint64_t bit = 1ull << i;
  if (!unsubscribe) {
    ch->sending &= ~bit;
    if (rep->type == REDIS_REPLY_ERROR) {
      /* Refused (an ACL user without this channel): waiters of this
       * master sleep to the holder's PTTL instead. */
      if (ps->cfg.log) ps->cfg.log(ps->cfg.data, i, RLOCK_LOG_WARN, rep->str);
      chan_maybe_free(ch);
      return;
    }
    ch->acked |= bit;
    int restored = (ch->ever & bit) != 0;
    ch->ever |= bit;
    if (ch->refs == 0) {
      chan_sync_one(ch, i); /* nobody waits any more: unsubscribe */
      return;
    }
    if (restored && ch->confirmed) {
      rl_chan_event(ch, -1);
      return;
    }
    chan_check(ch);
  } else {
    ch->leaving &= ~bit;
    chan_sync_one(ch, i); /* a waiter may have come meanwhile */
    chan_maybe_free(ch);
  }
}

/* Messages: ["message", channel, payload]. */
static void on_push(rl_conn *conn, const redisReply *msg) {
  rl_sub *s = conn->data;
  const redisReply *kind = msg->element[0], *name = msg->element[1];
  if (name->type != REDIS_REPLY_STRING ||
      strcasecmp(kind->str, "message") != 0)
    return;
  rl_chan *ch = chan_find(s->ps, name->str, (size_t)name->len);
  if (ch != NULL && ch->refs > 0) rl_chan_event(ch, s->idx);
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

static void on_sub_state(rl_conn *conn, int state) {
  rl_sub *s = conn->data;
  rl_pubsub *ps = s->ps;
  if (ps->closing) return;
  if (state == RL_CONN_READY) {
    for (size_t b = 0; b < ps->nbuckets; b++)
      for (rl_chan *ch = ps->buckets[b]; ch != NULL; ch = ch->next)
        chan_sync_one(ch, s->idx);
    check_all(ps);
  } else if (state == RL_CONN_DOWN) {
    forget_conn(ps, s->idx);
    check_all(ps); /* fewer connections up may be enough now */
  }
}

static void on_sub_log(rl_conn *conn, int level, const char *msg) {
  rl_sub *s = conn->data;
  if (s->ps->cfg.log) s->ps->cfg.log(s->ps->cfg.data, s->idx, level, msg);
}

/* --- lifecycle ------------------------------------------------------------- */

rl_pubsub *rl_pubsub_new(const rl_pubsub_config *cfg) {
  rl_pubsub *ps = calloc(1, sizeof *ps);
  if (ps == NULL) return NULL;
  ps->cfg = *cfg;
  ps->cfg.conn.mode = RL_CONN_SUBSCRIBER;
  ps->cfg.conn.command_timeout_ms = 0; /* subscriptions have no deadline */
  ps->n = cfg->n;
  ps->quorum = cfg->n / 2 + 1;
  ps->subs = calloc((size_t)cfg->n, sizeof *ps->subs);
  ps->urls = calloc((size_t)cfg->n, sizeof *ps->urls);
  ps->nbuckets = 16;
  ps->buckets = calloc(ps->nbuckets, sizeof *ps->buckets);
  if (ps->subs == NULL || ps->urls == NULL || ps->buckets == NULL) {
    free(ps->subs);
    free(ps->urls);
    free(ps->buckets);
    free(ps);
    return NULL;
  }
  memcpy(ps->urls, cfg->urls, sizeof *ps->urls * (size_t)cfg->n);
  ps->conns_open = ps->n;
  for (int i = 0; i < ps->n; i++) {
    rl_sub *s = &ps->subs[i];
    s->ps = ps;
    s->idx = i;
    s->conn.data = s;
    s->conn.on_state = on_sub_state;
    s->conn.on_push = on_push;
    s->conn.on_log = on_sub_log;
    rl_conn_start(&s->conn, cfg->loop, &ps->urls[i], &ps->cfg.conn);
  }
  return ps;
}

static void on_sub_closed(rl_conn *conn) {
  rl_sub *s = conn->data;
  rl_pubsub *ps = s->ps;
  if (--ps->conns_open > 0) return;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    rl_chan *ch = ps->buckets[b];
    while (ch != NULL) {
      rl_chan *next = ch->next;
      free(ch);
      ch = next;
    }
  }
  void (*closed)(void *) = ps->cfg.closed;
  void *data = ps->cfg.data;
  free(ps->buckets);
  free(ps->subs);
  free(ps->urls);
  free(ps);
  if (closed) closed(data);
}

void rl_pubsub_close(rl_pubsub *ps) {
  ps->closing = 1;
  for (int i = 0; i < ps->n; i++) {
    ps->subs[i].conn.on_closed = on_sub_closed;
    rl_conn_close(&ps->subs[i].conn);
  }
}
