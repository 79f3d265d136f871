/*
 * Channel subscriptions.
 *
 * Each master keeps subscriber connections apart from its command
 * connections (master.h: one for a single server, one per node of a
 * cluster, made when the client first waits), which send only SUBSCRIBE
 * and UNSUBSCRIBE after their handshake (SSUBSCRIBE and SUNSUBSCRIBE on a
 * cluster, where unlock messages go to the shard of the lock's slot): a
 * connection in subscribed mode takes nothing else, and keeping
 * subscriptions off the command connections keeps a flood of messages
 * from delaying lock replies. Messages arrive at any time and go to one
 * dispatcher, which finds the channel by name in the table, so a message
 * for a channel already freed is simply not found. Replies to SUBSCRIBE
 * and UNSUBSCRIBE come in order, each to its own command.
 *
 * A subscription ends without being asked when its connection goes down,
 * and, on a cluster, when the channel's slot leaves the node (the node
 * pushes an unsubscribe): the channel is then subscribed again where the
 * master now routes it, and that acknowledgement counts as an event like
 * any restored subscription (below), so waiters try again.
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

static uint64_t hash_name(const char *p, size_t len);

/* --- runs of hand-offs, by exact channel name ---------------------------- */

static rl_chan_run **run_bucket(rl_pubsub *ps, const char *name, size_t len) {
  return &ps->runs[hash_name(name, len) % RL_CHAN_RUN_BUCKETS];
}

static rl_chan *chan_find(rl_pubsub *ps, const char *name, size_t len);

/* Makes room in a full table of runs: frees the entry of a channel that no
 * waiter of this client waits on now. Such an entry is what a run leaves
 * when it ended without a message (its last holder lost the lock, say); a
 * run that was in fact still going on restarts its count, which lets it
 * go on for at most one more run (the caller's max_run). 0, or -1 if
 * every entry's channel has waiters. */
static int runs_evict_idle(rl_pubsub *ps) {
  for (size_t b = 0; b < RL_CHAN_RUN_BUCKETS; b++)
    for (rl_chan_run **p = &ps->runs[b]; *p != NULL; p = &(*p)->next) {
      rl_chan *ch = chan_find(ps, (*p)->name, (*p)->len);
      if (ch != NULL && ch->refs > 0) continue;
      rl_chan_run *r = *p;
      *p = r->next;
      free(r);
      ps->nruns--;
      return 0;
    }
  return -1;
}

rl_chan_run *rl_chan_run_of(rl_pubsub *ps, const char *name, size_t len,
                            int make) {
  rl_chan_run **b = run_bucket(ps, name, len);
  for (rl_chan_run *r = *b; r != NULL; r = r->next)
    if (r->len == len && memcmp(r->name, name, len) == 0) return r;
  if (!make) return NULL;
  if (ps->nruns >= RL_CHAN_RUNS_MAX && runs_evict_idle(ps) != 0) return NULL;
  rl_chan_run *r = malloc(sizeof *r + len);
  if (r == NULL) return NULL;
  r->count = 0;
  r->len = len;
  memcpy(r->name, name, len);
  r->next = *b;
  *b = r;
  ps->nruns++;
  return r;
}

unsigned rl_chan_run_end(rl_pubsub *ps, const char *name, size_t len) {
  if (ps->nruns == 0) return 0; /* the usual case: no hand-off under way */
  for (rl_chan_run **p = run_bucket(ps, name, len); *p != NULL;
       p = &(*p)->next) {
    rl_chan_run *r = *p;
    if (r->len != len || memcmp(r->name, name, len) != 0) continue;
    unsigned n = r->count;
    *p = r->next;
    free(r);
    ps->nruns--;
    return n;
  }
  return 0;
}

static void runs_free(rl_pubsub *ps) {
  for (size_t b = 0; b < RL_CHAN_RUN_BUCKETS; b++)
    while (ps->runs[b] != NULL) {
      rl_chan_run *r = ps->runs[b];
      ps->runs[b] = r->next;
      free(r);
    }
  ps->nruns = 0;
}

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

rl_chan *rl_chan_find(rl_pubsub *ps, const char *name, size_t len) {
  return chan_find(ps, name, len);
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
  free(ch->where);
  free(ch);
}

/* Frees ch once nobody waits on it and no connection has it. */
static void chan_maybe_free(rl_chan *ch) {
  if (ch->refs == 0 && (ch->sending | ch->acked | ch->leaving) == 0)
    chan_free(ch);
}

/* --- subscribing ------------------------------------------------------------ */

/* A SUBSCRIBE or UNSUBSCRIBE in flight, and the channel it is for. */
typedef struct sub_cmd {
  rl_msub s;
  rl_chan *ch;
  int idx;
} sub_cmd;

static void on_sub_reply(rl_msub *s, rl_conn *where, const redisReply *rep,
                         int status);

static int send_cmd(rl_pubsub *ps, int i, rl_chan *ch, int unsubscribe) {
  sub_cmd *sc = calloc(1, sizeof *sc);
  if (sc == NULL) return -1;
  sc->ch = ch;
  sc->idx = i;
  sc->s.channel = ch->name;
  sc->s.len = ch->len;
  sc->s.unsubscribe = unsubscribe;
  sc->s.where = unsubscribe ? ch->where[i] : NULL;
  sc->s.cb = on_sub_reply;
  sc->s.data = sc;
  if (rl_master_sub_send(ps->masters[i], &sc->s) != 0) {
    free(sc);
    return -1;
  }
  return 0;
}

/* Sends what master i needs for ch, if nothing is in flight there. */
static void chan_sync_one(rl_chan *ch, int i) {
  rl_pubsub *ps = ch->ps;
  uint64_t bit = 1ull << i;
  if (ps->closing) return;
  if ((ch->sending | ch->leaving) & bit) return;
  if (ch->refs > 0 && !(ch->acked & bit)) {
    if (send_cmd(ps, i, ch, 0) == 0) ch->sending |= bit;
  } else if (ch->refs == 0 && (ch->acked & bit)) {
    if (send_cmd(ps, i, ch, 1) == 0) {
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
    if (rl_master_sub_up(ps->masters[i], ch->name, ch->len)) ready++;
  int need = ready >= ps->quorum ? ps->quorum : (ready > 0 ? ready : 1);
  if (popcount64(ch->acked) < need) return;
  ch->confirmed = 1;
  ch->ps->event(ch, -1);
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
    ch->where = calloc((size_t)ps->n, sizeof *ch->where);
    if (ch->where == NULL) {
      free(ch);
      return NULL;
    }
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

/* A subscription left on a node that no longer serves its channel's
 * slot (the node did not drop it, or it was made there by a map that was
 * already stale: a replica takes SSUBSCRIBE too) is ended there, with
 * nobody waiting for the answer; the channel is subscribed where its
 * slot is now. Without this the old node would keep it, and deliver its
 * messages twice, for as long as its connection lasts. */
typedef struct stale_sub {
  rl_msub s;
  char name[];
} stale_sub;

static void on_stale_reply(rl_msub *s, rl_conn *where, const redisReply *rep,
                           int status) {
  (void)where;
  (void)rep;
  (void)status;
  free(s->data);
}

static void unsubscribe_stale(rl_pubsub *ps, int i, const rl_chan *ch,
                              rl_conn *where) {
  stale_sub *u = calloc(1, sizeof *u + ch->len + 1);
  if (u == NULL) return; /* it lasts as long as that connection */
  memcpy(u->name, ch->name, ch->len);
  u->s.channel = u->name;
  u->s.len = ch->len;
  u->s.unsubscribe = 1;
  u->s.where = where;
  u->s.cb = on_stale_reply;
  u->s.data = u;
  if (rl_master_sub_send(ps->masters[i], &u->s) != 0) free(u);
}

/* The reply to one SUBSCRIBE or UNSUBSCRIBE of master sc->idx. */
static void on_sub_reply(rl_msub *s, rl_conn *where, const redisReply *rep,
                         int status) {
  sub_cmd *sc = s->data;
  rl_chan *ch = sc->ch;
  int i = sc->idx, unsubscribe = s->unsubscribe;
  free(sc);
  rl_pubsub *ps = ch->ps;
  uint64_t bit = 1ull << i;
  if (unsubscribe) {
    ch->leaving &= ~bit;
    ch->where[i] = NULL;
    chan_sync_one(ch, i); /* a waiter may have come meanwhile */
    chan_maybe_free(ch);
    return;
  }
  ch->sending &= ~bit;
  if (status == RL_CMD_DROPPED || rep == NULL) {
    /* Never confirmed (the connection dropped, or the client is closing):
     * try again where the master routes it now, if anywhere. */
    chan_sync_one(ch, i);
    chan_maybe_free(ch);
    return;
  }
  if (rep->type == REDIS_REPLY_ERROR) {
    /* Refused (an ACL user without this channel): waiters of this
     * master sleep to the holder's PTTL instead. */
    if (ps->cfg.log) ps->cfg.log(ps->cfg.data, i, RLOCK_LOG_WARN, rep->str);
    chan_maybe_free(ch);
    return;
  }
  rl_conn *now = rl_master_sub_where(ps->masters[i], ch->name, ch->len);
  if (now != NULL && where != now) {
    /* Confirmed by a node that no longer serves the channel's slot: the
     * map moved while the subscribe was on its way, after the resync
     * that would have moved it (on_resync moves only confirmed ones). */
    unsubscribe_stale(ps, i, ch, where);
    chan_sync_one(ch, i);
    chan_maybe_free(ch);
    return;
  }
  ch->acked |= bit;
  ch->where[i] = where;
  int restored = (ch->ever & bit) != 0;
  ch->ever |= bit;
  if (ch->refs == 0) {
    chan_sync_one(ch, i); /* nobody waits any more: unsubscribe */
    return;
  }
  if (restored && ch->confirmed) {
    ch->ps->event(ch, -1);
    return;
  }
  chan_check(ch);
}

/* --- what the masters say ------------------------------------------------------ */

static void on_message(void *data, rl_master *m, const char *name,
                       size_t len) {
  rl_chan *ch = chan_find(data, name, len);
  if (ch != NULL && ch->refs > 0) ch->ps->event(ch, m->idx);
}

/* A subscription ended on where without being asked. */
static void on_dropped(void *data, rl_master *m, rl_conn *where,
                       const char *name, size_t len) {
  rl_pubsub *ps = data;
  rl_chan *ch = chan_find(ps, name, len);
  int i = m->idx;
  uint64_t bit = 1ull << i;
  if (ch == NULL || !(ch->acked & bit) || ch->where[i] != where) return;
  ch->acked &= ~bit;
  ch->where[i] = NULL;
  if (ps->cfg.log)
    ps->cfg.log(ps->cfg.data, i, RLOCK_LOG_INFO,
                "a subscription was dropped by the server (its slot moved): "
                "subscribing again");
  chan_sync_one(ch, i);
  chan_maybe_free(ch);
}

/* A subscriber connection of master m is gone, and what it had with it. */
static void on_down(void *data, rl_master *m, rl_conn *where) {
  rl_pubsub *ps = data;
  int i = m->idx;
  uint64_t bit = 1ull << i;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    rl_chan *ch = ps->buckets[b];
    while (ch != NULL) {
      rl_chan *next = ch->next;
      if ((ch->acked & bit) && ch->where[i] == where) {
        ch->acked &= ~bit;
        ch->where[i] = NULL;
        chan_maybe_free(ch);
      }
      ch = next;
    }
  }
  check_all(ps); /* fewer connections up may be enough now */
}

/* Master m may subscribe where it could not, or elsewhere: every channel
 * is brought in line with its waiters. */
static void on_resync(void *data, rl_master *m) {
  rl_pubsub *ps = data;
  int i = m->idx;
  uint64_t bit = 1ull << i;
  if (ps->closing) return;
  for (size_t b = 0; b < ps->nbuckets; b++)
    for (rl_chan *ch = ps->buckets[b]; ch != NULL; ch = ch->next) {
      if ((ch->acked & bit) && ch->refs > 0 &&
          ch->where[i] != rl_master_sub_where(m, ch->name, ch->len)) {
        /* Its slot moved without the old node saying so (yet): it is
         * ended there and subscribed again where the slot is now. */
        unsubscribe_stale(ps, i, ch, ch->where[i]);
        ch->acked &= ~bit;
        ch->where[i] = NULL;
      }
      chan_sync_one(ch, i);
    }
  check_all(ps);
}

static void on_log(void *data, rl_master *m, int level, const char *msg) {
  rl_pubsub *ps = data;
  if (ps->cfg.log) ps->cfg.log(ps->cfg.data, m->idx, level, msg);
}

static void on_closed(void *data, rl_master *m);

static const rl_master_sub_hooks hooks = {on_message, on_dropped, on_down,
                                          on_resync,  on_log,     on_closed};

/* --- lifecycle ------------------------------------------------------------- */

rl_pubsub *rl_pubsub_make(const rl_pubsub_config *cfg,
                          void (*event)(rl_chan *ch, int idx)) {
  rl_pubsub *ps = calloc(1, sizeof *ps);
  if (ps == NULL) return NULL;
  ps->cfg = *cfg;
  ps->event = event;
  ps->n = cfg->n;
  ps->quorum = cfg->n / 2 + 1;
  ps->masters = calloc((size_t)cfg->n, sizeof *ps->masters);
  ps->nbuckets = 16;
  ps->buckets = calloc(ps->nbuckets, sizeof *ps->buckets);
  if (ps->masters == NULL || ps->buckets == NULL) {
    free(ps->masters);
    free(ps->buckets);
    free(ps);
    return NULL;
  }
  memcpy(ps->masters, cfg->masters, sizeof *ps->masters * (size_t)cfg->n);
  ps->cfg.masters = NULL;
  ps->open = ps->n;
  for (int i = 0; i < ps->n; i++) rl_master_sub_start(ps->masters[i], &hooks, ps);
  return ps;
}

static void on_closed(void *data, rl_master *m) {
  (void)m;
  rl_pubsub *ps = data;
  if (--ps->open > 0) return;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    rl_chan *ch = ps->buckets[b];
    while (ch != NULL) {
      rl_chan *next = ch->next;
      free(ch->where);
      free(ch);
      ch = next;
    }
  }
  runs_free(ps);
  void (*closed)(void *) = ps->cfg.closed;
  void *data_ = ps->cfg.data;
  free(ps->buckets);
  free(ps->masters);
  free(ps);
  if (closed) closed(data_);
}

void rl_pubsub_close(rl_pubsub *ps) {
  ps->closing = 1;
  ps->open++; /* a master may say closed at once: ps lives to the end */
  for (int i = 0; i < ps->n; i++) rl_master_sub_close(ps->masters[i]);
  on_closed(ps, NULL);
}
