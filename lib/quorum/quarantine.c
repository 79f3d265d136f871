/*
 * Restart quarantine and one vote per server.
 *
 * A master restarted without persistence has forgotten the locks it
 * granted. Counting it at once toward a quorum lets a second client take
 * a lock whose holder still has it on a minority (Redlock's "delayed
 * restart" rule). So a master whose run_id changed does not count toward
 * an acquisition until the deployment's longest lease has passed since it
 * started: its uptime, read in the handshake, says how much is left
 * (the uptime as conn.c gives it: 1 s less than the whole seconds Redis
 * reports, which may overstate it by up to 1 s, so the wait may be up to
 * 2 s longer than needed and never shorter).
 *
 * The hard part is knowing that it changed. A client that was connected
 * before sees the run_id change; a client opened after the restart (every
 * `rlock exec`) has never seen the old one. So clients keep records on the
 * masters themselves: a hash <prefix>run_ids on every master, field = a
 * master's address, value = its run_id and whether a change of run_id was
 * ever seen ("<run_id> 0|1"). Every client, when it connects to a master,
 * merges what it knows into that master's hash and reads the hash back in
 * the same script call (RL_SCRIPT_RECORD); the merge marks a run_id that
 * differs from the stored one as changed, and a changed run_id stays so.
 * A fresh client thus learns from the other masters that the one it just
 * met has a run_id nobody had seen before it restarted. A master with no
 * record anywhere is trusted: a brand-new deployment is usable at once.
 *
 * Records are read in each connection's handshake (the records command is
 * the connection's extra handshake command, conn.h), so no reply to a lock
 * command on a connection is delivered before that master's records are
 * known: whichever masters decide a round, the records of each of them
 * are in. The command also writes what this client knows (the masters it
 * has a live connection to); since a master's own run_id comes in the
 * same handshake, it is sent again, fire-and-forget, to every connected
 * master once known. Records of masters that did not answer may still be
 * on their way, and a record read later may reveal a restart, which is
 * why the quarantine is applied when a round is decided (rl_votes_settle),
 * not when a reply is classified.
 *
 * How long. The configured length (restart_quarantine_ms) covers every
 * lease only if no client takes a longer one; a user who keeps the
 * defaults gets a minute. The masters themselves know better: every
 * script that grants or extends a lease pushes its master's lease
 * horizon (<prefix>horizon, whose TTL is the latest expiry that master
 * handed out; scripts.h, RL_LUA_HORIZON). Why the others' horizons cover
 * every lease the restarted master i forgot: a lease that counted was
 * granted by a majority with i in it, so by at least quorum - 1 other
 * masters, each of which pushed its horizon past the lease's end when it
 * granted (a grant counted only if it landed within the round's master
 * timeout; the read waits that long after i's start, so every grant of
 * a round sent before i restarted has landed). An other master j bounds
 * the leases it took part in by b_j: a reading of j's horizon whose PTTL
 * was sent at or after i's ready time (i's start, as late as it can be,
 * plus the master timeout) bounds every grant j made before it, so b_j
 * is the smallest of such readings' bounds. A reading bounds the run of
 * j that answered: if that run followed a restart of j, what j granted
 * before is bounded only by the end of j's own quarantine as this client
 * worked it out (by the same argument one restart earlier; while that is
 * pending, that reading bounds nothing). Readings are kept (a few
 * seconds' worth per master, with the run that answered), so a reading
 * of j's run from before j restarted counts for i's bound after j
 * restarted too: two masters restarted one after the other do not wait
 * on each other's bound when this client read the second before it went
 * down. Each bound made final is followed by every pending one again.
 * The worst majority is i with the quorum - 1 others whose b_j
 * are largest; the smallest of those, the (n - quorum + 1)th smallest
 * b_j, is when every lease i may have forgotten has run out. A PTTL is
 * counted from the reply's arrival (a late one's too) and stretched by
 * the drift factor. The horizons are read while a bound is pending, every
 * HZ_RETRY_MS, and also while a master's connection is down (its restart
 * is learned only when the connection is back, after its backoff;
 * readings taken meanwhile count once its start is known). A master
 * that cannot be read, where it is needed (down, slow, a Cluster
 * or Sentinel master: their quarantine is per node, node_info, and their
 * horizons are not read), and no kept reading of it is late enough,
 * leaves the configured length, and the read is tried again while that
 * lasts. Two masters of a majority restarted within a master timeout of
 * each other (or before this client read either after the first one's
 * ready time) leave nothing that bounds the leases both forgot: both keep
 * the configured length. The horizon
 * never makes the quarantine longer than the configured length, and an
 * acquisition that does not count still pushes the horizon (its grant
 * is undone, but a grant that counted is indistinguishable on the
 * master): with constant contention the read sees the horizon a lease
 * ahead, never more.
 *
 * The horizon bounds only leases that pushed it: a missing key reads as
 * no lease. So it holds when every client of the masters pushes it (an
 * older client, or an ACL user that may not write the key, does not; the
 * push is a pcall, so that it never fails a grant) and no master evicts
 * it. Only the automatic length (RLOCK_QUARANTINE_AUTO) is shortened by
 * it; a length the user set is kept whole, which is the way out for a
 * deployment that cannot promise that.
 *
 * What is not caught (README, "Guarantees"): with N = 1 the only records
 * are on the master that lost them, so only a client connected across the
 * restart notices it; masters addressed differently by different clients
 * (a host name resolving elsewhere, TCP against a unix socket) keep
 * separate records; records expire after a week without any client.
 *
 * One vote per server: two connections whose servers report the same
 * run_id are one server; the one with the higher index does not count.
 */
#include "quarantine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "options.h"
#include "resp.h"
#include "scripts.h"
#include "util.h"

#define RUNID_MAX 48
#define ADDR_MAX (RL_URL_HOST_MAX + 120)

typedef struct rec {
  char run_id[RUNID_MAX]; /* "" when the record has no such field */
  int changed;
} rec;

/* A reading of a master's horizon: when the PTTL was sent (monotonic ms,
 * this client's clock), which run of the master answered (its gen), and
 * the latest expiry it bounds (0: none; the reply's arrival plus the PTTL
 * stretched by the drift factor). end_ms 0 and gen 0 in an unused one. */
typedef struct hz_reading {
  uint64_t sent_ms;
  uint64_t end_ms;
  unsigned gen;
  int used;
} hz_reading;

/* Readings kept per master (a ring): enough for a few seconds of reads
 * every HZ_RETRY_MS while a quarantine is pending. */
#define HZ_READINGS 32
/* Covers of a master's earlier runs kept (cover_of when the run ended). */
#define HZ_PAST 8

typedef struct qmaster {
  char addr[ADDR_MAX];    /* the field name of its records */
  char run_id[RUNID_MAX]; /* of the last connection; "" unknown */
  int current;            /* run_id is the live connection's */
  uint64_t info_ms;       /* monotonic ms when run_id and uptime came */
  uint64_t uptime_ms;
  int self_seen;          /* this client saw the run_id change */
  int restarted;          /* the current run_id follows another */
  uint64_t until_ms;      /* quarantined until then (monotonic ms) */
  /* The horizon bound of a restarted master (hz_*): */
  int hz_state;           /* HZ_NONE, HZ_WAIT or HZ_DONE */
  unsigned hz_gen;        /* its run, counted from 1 per run_id seen */
  uint64_t hz_ready_ms;   /* a reading sent from then on counts */
  hz_reading rd[HZ_READINGS]; /* readings of this master's horizon */
  int rd_next;
  struct {
    unsigned gen;
    uint64_t cover; /* cover_of its run when it ended; UINT64_MAX unknown */
  } past[HZ_PAST];
  int past_next;
  uint64_t down_ms;       /* when its connection went down, if it did */
} qmaster;

/* A restarted master's horizon bound: none (not restarted, or nothing
 * left to wait), pending (readings sent from hz_ready_ms on count), or
 * done (until_ms is what the other masters' horizons said). */
enum { HZ_NONE = 0, HZ_WAIT, HZ_DONE };

/* While a bound is pending, the horizons are read again this often (a
 * needed master down, stopped or slow answers a later read; a restarted
 * peer's own bound may become known meanwhile). */
#define HZ_RETRY_MS 100

/* A node of a master whose server changes (a cluster's), as this client
 * saw it: by connection, and by address for a connection made anew. */
typedef struct qnode {
  const rl_conn *conn;
  char addr[ADDR_MAX];
  char run_id[RUNID_MAX];
  uint64_t until_ms; /* quarantined until then (monotonic ms) */
} qnode;

typedef struct rl_quarantine {
  int n;
  char key[RL_PREFIX_MAX + 16];
  char hz_key[RL_PREFIX_MAX + 16]; /* <prefix>horizon */
  qmaster *m;
  rec *recs; /* n * n: recs[k * n + i] is what master k says of master i */
  qnode *nodes;
  size_t nnodes;
  int dup_logged; /* duplicate_in_round said so once */
  int hz_reading;     /* a horizon read is in flight */
  uint64_t hz_next_ms; /* no horizon read is sent before then */
} rl_quarantine;

static int set_handshakes(rl_client *c);
static rl_conn *single_conn(rl_client *c, int k);

int rl_quarantine_init(rl_client *c, const rl_master_url *urls) {
  int n = c->nmasters;
  rl_quarantine *q = calloc(1, sizeof *q);
  if (q == NULL) return RLOCK_ENOMEM;
  q->n = n;
  q->m = calloc((size_t)n, sizeof *q->m);
  q->recs = calloc((size_t)n * (size_t)n, sizeof *q->recs);
  if (q->m == NULL || q->recs == NULL) {
    free(q->m);
    free(q->recs);
    free(q);
    return RLOCK_ENOMEM;
  }
  snprintf(q->key, sizeof q->key, "%srun_ids", c->prefix);
  snprintf(q->hz_key, sizeof q->hz_key, "%s" RL_HORIZON_SUFFIX, c->prefix);
  for (int i = 0; i < n; i++)
    rl_url_canonical(&urls[i].url, q->m[i].addr, sizeof q->m[i].addr);
  c->quarantine = q;
  if (set_handshakes(c) != 0) {
    rl_quarantine_free(c);
    return RLOCK_ENOMEM;
  }
  return 0;
}

void rl_quarantine_free(rl_client *c) {
  rl_quarantine *q = c->quarantine;
  if (q == NULL) return;
  /* Closed connections freed theirs; never started ones (a failed open)
   * still have it. */
  for (int k = 0; k < c->nmasters; k++) {
    rl_conn *conn = single_conn(c, k);
    if (conn != NULL)
      rl_conn_set_handshake_extra(conn, NULL, 0, 0, NULL, NULL);
  }
  free(q->m);
  free(q->recs);
  free(q->nodes);
  free(q);
  c->quarantine = NULL;
}

uint64_t rl_quarantine_length(const rl_client *c) {
  int64_t q = c->opts.restart_quarantine_ms;
  if (q != RLOCK_QUARANTINE_AUTO) return (uint64_t)q;
  int64_t w = c->opts.watchdog_timeout_ms, l = c->opts.max_lease_ms;
  return (uint64_t)(w > l ? w : l);
}

/* The master of a connection (one of a single master's). */
static int conn_index(const rl_conn *conn) { return conn->master->idx; }

/* Master k's connection when it is a single server (whose restart records
 * the masters keep), else NULL: a cluster's nodes are judged each by what
 * this client saw of it (node_info). */
static rl_conn *single_conn(rl_client *c, int k) {
  rl_conn *conn = NULL;
  if (c->masters[k] == NULL || c->masters[k]->kind != RL_MASTER_SINGLE)
    return NULL;
  rl_master_primaries(c->masters[k], &conn, 1);
  return conn;
}

static void hz_poll(rl_client *c);

/* Decides whether master i restarted, from what this client saw and from
 * every record read so far, and starts its quarantine when it did: the
 * configured length from its start, until the other masters' horizons
 * tell a shorter one (hz_poll). */
static void evaluate(rl_client *c, int i) {
  rl_quarantine *q = c->quarantine;
  qmaster *m = &q->m[i];
  if (m->run_id[0] == '\0' || m->restarted) return;
  int seen = m->self_seen;
  for (int k = 0; k < q->n && !seen; k++) {
    const rec *r = &q->recs[k * q->n + i];
    if (r->run_id[0] != '\0' && (strcmp(r->run_id, m->run_id) != 0 ||
                                 r->changed))
      seen = 1;
  }
  if (!seen) return;
  m->restarted = 1;
  atomic_fetch_add(&c->masters[i]->restarts, 1);
  uint64_t len = rl_quarantine_length(c);
  uint64_t left = m->uptime_ms < len ? len - m->uptime_ms : 0;
  m->until_ms = left > 0 ? m->info_ms + left : 0;
  uint64_t now = rl_now_ms();
  if (m->until_ms > now)
    rl_log(c, RLOCK_LOG_WARN,
           "master %s restarted (run_id %s is new%s): its grants do not "
           "count for %llu ms",
           m->addr, m->run_id, m->self_seen ? "" : ", by the records",
           (unsigned long long)(m->until_ms - now));
  else
    rl_log(c, RLOCK_LOG_INFO,
           "master %s restarted (run_id %s is new), longer ago than the "
           "quarantine",
           m->addr, m->run_id);
  if (m->until_ms > now &&
      c->opts.restart_quarantine_ms == RLOCK_QUARANTINE_AUTO) {
    /* A grant of the restart's last round may land on the others up to
     * a master timeout after it started (below): the read counts from
     * then. Its start is taken as late as it can be (the uptime as
     * conn.c gives it is never above the real one; its drift counted). */
    double d = c->opts.drift_factor;
    uint64_t up = (uint64_t)((double)m->uptime_ms * (1.0 - d));
    uint64_t start = m->info_ms > up ? m->info_ms - up : 0;
    m->hz_state = HZ_WAIT;
    m->hz_ready_ms =
        start + (uint64_t)((double)c->opts.master_timeout_ms * (1.0 + d)) + 1;
    hz_poll(c);
  }
}

/* What this client tells every master: the masters whose connection it
 * has now, each with its run_id and whether it is known to have changed.
 * Fills argv/len from index 0 with "EVALSHA", the script's sha, 1, the
 * key, the TTL (in ttl) and the triples; returns the count, or -1 when
 * out of memory (the caller frees *argv and *len either way). */
static int records_command(rl_client *c, const char ***argv, size_t **len,
                           char ttl[24]) {
  rl_quarantine *q = c->quarantine;
  int n = q->n, argc = 0;
  *argv = malloc((size_t)(5 + 3 * n) * sizeof **argv);
  *len = malloc((size_t)(5 + 3 * n) * sizeof **len);
  if (*argv == NULL || *len == NULL) return -1;
  const char **av = *argv;
  av[argc++] = "EVALSHA";
  av[argc++] = rl_script_sha(RL_SCRIPT_RECORD);
  av[argc++] = "1";
  av[argc++] = q->key;
  snprintf(ttl, 24, "%lld", (long long)RL_RECORDS_TTL_MS);
  av[argc++] = ttl;
  for (int i = 0; i < n; i++) {
    qmaster *m = &q->m[i];
    if (!m->current) continue;
    av[argc++] = m->addr;
    av[argc++] = m->run_id;
    av[argc++] = m->restarted ? "1" : "0";
  }
  for (int i = 0; i < argc; i++) (*len)[i] = strlen(av[i]);
  return argc;
}

/* Master k's records (an HGETALL reply): replaces what it said before,
 * then re-evaluates every master. */
static void take_records(rl_client *c, int k, const redisReply *rep) {
  rl_quarantine *q = c->quarantine;
  if (q == NULL || rep == NULL || rep->type != REDIS_REPLY_ARRAY) return;
  rec *row = &q->recs[k * q->n];
  memset(row, 0, sizeof *row * (size_t)q->n);
  for (size_t e = 0; e + 1 < rep->elements; e += 2) {
    const redisReply *f = rep->element[e], *v = rep->element[e + 1];
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
      continue;
    for (int i = 0; i < q->n; i++) {
      if (strlen(q->m[i].addr) != f->len ||
          memcmp(q->m[i].addr, f->str, f->len) != 0)
        continue;
      size_t idlen = strcspn(v->str, " ");
      if (idlen == 0 || idlen >= RUNID_MAX) break;
      memcpy(row[i].run_id, v->str, idlen);
      row[i].run_id[idlen] = '\0';
      row[i].changed = strcmp(v->str + idlen, " 0") != 0;
      break;
    }
  }
  for (int i = 0; i < q->n; i++) evaluate(c, i);
}

static void record_late(rl_round *r, int k, const redisReply *rep) {
  take_records(r->client, k, rep);
}

static const rl_round_ops record_ops = {NULL, NULL, record_late, NULL};

/* Sends master k the records command, fire-and-forget (the reply, k's
 * records again, goes to record_late). */
static void send_records(rl_client *c, int k) {
  const char **argv = NULL;
  size_t *len = NULL;
  char ttl[24];
  int argc = records_command(c, &argv, &len, ttl);
  rl_round *r = NULL;
  if (argc > 0) {
    argv[1] = NULL; /* EVALSHA of the script, for rl_round_new */
    r = rl_round_new(c, &record_ops, NULL, RL_SCRIPT_RECORD, argc - 1,
                     argv + 1, len + 1);
  }
  free(argv);
  free(len);
  if (r != NULL) rl_round_send_one(r, k);
  /* Out of memory: no records this time. */
}

/* The records command's reply in a connection's handshake: refused on an
 * error reply (a user without the script's commands, OOM), with its text:
 * a master whose records cannot be read could be one that restarted. */
static int on_handshake_records(rl_conn *conn, int i, const redisReply *rep,
                                void *data) {
  (void)i;
  rl_client *c = data;
  if (rep->type == REDIS_REPLY_ERROR) return 1;
  take_records(c, conn_index(conn), rep);
  return 0;
}

/* Makes the records command part of every later handshake (of the
 * connections not closed); 0, or -1 when out of memory (the handshakes
 * keep the command they had). */
static int set_handshakes(rl_client *c) {
  const char **argv = NULL;
  size_t *len = NULL;
  char ttl[24], *resp = NULL;
  int argc = records_command(c, &argv, &len, ttl);
  if (argc > 0) resp = malloc(rl_resp_size(argc, argv, len));
  int rc = resp != NULL ? 0 : -1;
  if (resp != NULL) {
    size_t n = rl_resp_write(resp, argc, argv, len);
    for (int k = 0; k < c->nmasters; k++)
      if (single_conn(c, k) != NULL &&
          single_conn(c, k)->state != RL_CONN_CLOSED)
        rc |= rl_conn_set_handshake_extra(single_conn(c, k), resp, n, 1,
                                          on_handshake_records, c);
  }
  free(resp);
  free(argv);
  free(len);
  return rc;
}

static void refresh_handshakes(rl_client *c) {
  if (!rl_client_closing(c)) set_handshakes(c);
  /* Out of memory: later handshakes tell a little less, and still read
   * the records (the first command, set at open, cannot be lost). */
}

/* --- the lease horizons ----------------------------------------------- */

/* The latest expiry (monotonic ms) of the leases master j granted before
 * its current run started, as far as this client bounds them: 0 when it
 * did not restart (nothing before its run, or a restart nobody recorded:
 * see "What is not caught"), its quarantine's end once that is final
 * (read from the horizons, or the configured length run out), else
 * UINT64_MAX (not known yet). */
static uint64_t cover_of(const qmaster *m, uint64_t now) {
  if (!m->restarted) return 0;
  if (m->hz_state == HZ_DONE || m->hz_state == HZ_NONE || now >= m->until_ms)
    return m->until_ms;
  return UINT64_MAX;
}

/* cover_of for run gen of master j: its current run's, or what it was
 * when an earlier run ended (UINT64_MAX when not kept or not known). */
static uint64_t cover_gen(const qmaster *m, unsigned gen, uint64_t now) {
  if (gen == m->hz_gen) return cover_of(m, now);
  for (int k = 0; k < HZ_PAST; k++)
    if (m->past[k].gen == gen && gen != 0) return m->past[k].cover;
  return UINT64_MAX;
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* What a reading of master m bounds: the leases its run granted before
 * the reading, and (its run's cover) those its earlier runs granted. */
static uint64_t reading_bound(const qmaster *m, const hz_reading *rd,
                              uint64_t now) {
  uint64_t cover = cover_gen(m, rd->gen, now);
  return cover == UINT64_MAX ? UINT64_MAX : max64(rd->end_ms, cover);
}

/*
 * A bound b_j on the leases that restarted master i forgot and master j
 * took part in (hz_recompute), or UINT64_MAX: the smallest of what the
 * readings of j sent at or after i's ready time (its start plus the
 * master timeout) bound. j's grant of such a lease landed before then,
 * so whichever run of j answered granted it or came after the run that
 * did (reading_bound). A reading of an earlier run of j thus still counts
 * after j restarted too, and j's own pending bound is then not needed.
 */
static uint64_t bound_for(const rl_quarantine *q, int i, int j,
                          uint64_t now) {
  const qmaster *mi = &q->m[i], *mj = &q->m[j];
  uint64_t best = UINT64_MAX;
  for (int k = 0; k < HZ_READINGS; k++) {
    const hz_reading *rd = &mj->rd[k];
    if (rd->used && rd->sent_ms >= mi->hz_ready_ms)
      best = min64(best, reading_bound(mj, rd, now));
  }
  return best;
}

/*
 * Master i's quarantine ends when the last lease a majority with i may
 * have granted has run out. Each other master j bounds the leases it took
 * part in by b_j (bound_for); a master not read bounds nothing. A grant
 * that counted went to i and at least quorum - 1 others, so the worst
 * such majority's smallest bound, the (n - quorum + 1)th smallest b_j,
 * bounds every lease i may have forgotten. Returns 1 if that made i's
 * bound final.
 */
static int hz_recompute(rl_client *c, int i, uint64_t now) {
  rl_quarantine *q = c->quarantine;
  qmaster *m = &q->m[i];
  if (m->hz_state != HZ_WAIT) return 0;
  if (now >= m->until_ms) {
    m->hz_state = HZ_NONE; /* the configured length has run out */
    return 1;
  }
  uint64_t b[RL_MAX_MASTERS];
  int nb = 0;
  for (int j = 0; j < q->n; j++) {
    if (j == i) continue;
    uint64_t bj = bound_for(q, i, j, now);
    int k = nb++;
    for (; k > 0 && b[k - 1] > bj; k--) b[k] = b[k - 1];
    b[k] = bj;
  }
  uint64_t t = nb > 0 ? b[q->n - (q->n / 2 + 1)] : UINT64_MAX;
  if (t == UINT64_MAX) return 0;
  m->hz_state = HZ_DONE;
  if (t >= m->until_ms) return 1;
  m->until_ms = t;
  rl_log(c, RLOCK_LOG_INFO,
         "master %s restarted: the leases the other masters recorded end "
         "%s%llu ms from now; its grants count from then",
         m->addr, t > now ? "" : "before, ",
         (unsigned long long)(t > now ? t - now : 0));
  return 1;
}

/* Every pending bound again, until none changes (one made final may make
 * another's). */
static void hz_recompute_all(rl_client *c) {
  rl_quarantine *q = c->quarantine;
  uint64_t now = rl_now_ms();
  for (int again = 1, rounds = 0; again && rounds <= q->n; rounds++) {
    again = 0;
    for (int i = 0; i < q->n; i++) again |= hz_recompute(c, i, now);
  }
}

/* Keeps a reading of master idx: a PTTL reply (-2: no key, every lease it
 * recorded has run out; -1, a key without a TTL, not rlock's doing, tells
 * nothing) to the read sent at sent_ms, arrived now. */
static void hz_keep(rl_client *c, int idx, uint64_t sent_ms,
                    const redisReply *rep) {
  rl_quarantine *q = c->quarantine;
  if (rep == NULL || rep->type != REDIS_REPLY_INTEGER || rep->integer == -1 ||
      rep->integer < -2)
    return;
  /* A cluster node listed as a plain master records no horizon (its
   * scripts may not touch the key: scripts.h), so it is not read. */
  const rl_conn *cj = single_conn(c, idx);
  qmaster *m = &q->m[idx];
  if (cj == NULL || !cj->standalone || !m->current) return;
  uint64_t end = 0;
  if (rep->integer >= 0)
    end = rl_now_ms() +
          (uint64_t)((double)rep->integer * (1.0 + c->opts.drift_factor)) + 2;
  hz_reading *rd = &m->rd[m->rd_next];
  m->rd_next = (m->rd_next + 1) % HZ_READINGS;
  rd->sent_ms = sent_ms;
  rd->end_ms = end;
  rd->gen = m->hz_gen;
  rd->used = 1;
}

/* A reply, in time or after the master timed out: a reading all the same
 * (a late one was sent when the others were, and counts from its later
 * arrival). */
static void hz_late(rl_round *r, int idx, const redisReply *rep) {
  rl_client *c = r->client;
  if (c->quarantine == NULL || rl_client_closing(c)) return;
  hz_keep(c, idx, r->t_start, rep);
  hz_recompute_all(c);
}

static int hz_classify(rl_round *r, int idx, const redisReply *rep) {
  hz_late(r, idx, rep);
  return RL_VOTE_YES;
}

static void hz_done(rl_round *r) {
  rl_client *c = r->client;
  if (c->quarantine == NULL || rl_client_closing(c)) return;
  c->quarantine->hz_reading = 0;
  hz_recompute_all(c);
}

static const rl_round_ops hz_ops = {hz_classify, hz_done, hz_late, NULL};

/* Sends a horizon read (PTTL of every master's horizon, done once every
 * master answered or failed), at most every HZ_RETRY_MS and one at a
 * time: while a bound is pending and its ready time has come (a reading
 * sent earlier could miss a grant of a round that began before the
 * master restarted and landed on another master later), and while a
 * master's connection has been down for less than the configured length
 * (it may be restarting: the readings of the others taken meanwhile count
 * for its bound once this client learns its start, though the backoff
 * of its connection delays that, and another master may have restarted
 * by then). Run when a round is settled, so as often as the client is
 * used. */
static void hz_poll(rl_client *c) {
  rl_quarantine *q = c->quarantine;
  if (rl_client_closing(c) || q->hz_reading ||
      c->opts.restart_quarantine_ms != RLOCK_QUARANTINE_AUTO)
    return; /* a length set by the user is kept whole */
  uint64_t now = rl_now_ms();
  if (now < q->hz_next_ms) return;
  hz_recompute_all(c);
  int due = 0;
  for (int k = 0; k < q->n; k++)
    due |= (q->m[k].hz_state == HZ_WAIT && now >= q->m[k].hz_ready_ms) ||
           (q->m[k].run_id[0] != '\0' && !q->m[k].current &&
            single_conn(c, k) != NULL &&
            now < q->m[k].down_ms + rl_quarantine_length(c));
  if (!due) return;
  q->hz_next_ms = now + HZ_RETRY_MS;
  const char *argv[2] = {"PTTL", q->hz_key};
  size_t len[2] = {4, strlen(q->hz_key)};
  rl_round *r = rl_round_new(c, &hz_ops, NULL, -1, 2, argv, len);
  if (r == NULL) return; /* out of memory: later */
  r->wait_all = 1;
  q->hz_reading = 1;
  rl_round_send(r); /* may decide at once: hz_done */
}

static qnode *node_find(rl_quarantine *q, const rl_conn *conn) {
  for (size_t k = 0; k < q->nnodes; k++)
    if (q->nodes[k].conn == conn) return &q->nodes[k];
  return NULL;
}

/*
 * A node of a master whose server changes (a cluster's) said who it is.
 * Such a node has no restart records (they are kept per single master),
 * so only what this client saw counts: the same address answering with
 * another run_id and an uptime below the quarantine. A replica promoted
 * by a failover was not restarted: its run_id is new at that address but
 * its uptime is long, so nothing is left to wait. A fresh cluster is
 * usable at once.
 */
static void node_info(rl_client *c, rl_master *m, rl_conn *node,
                      const char *run_id, uint64_t uptime_ms) {
  rl_quarantine *q = c->quarantine;
  char addr[ADDR_MAX];
  rl_node_address(node, addr, sizeof addr);
  qnode *n = node_find(q, node);
  for (size_t k = 0; n == NULL && k < q->nnodes; k++)
    if (strcmp(q->nodes[k].addr, addr) == 0) n = &q->nodes[k];
  if (n == NULL) {
    qnode *more = realloc(q->nodes, (q->nnodes + 1) * sizeof *more);
    if (more == NULL) return; /* out of memory: nothing known of it */
    q->nodes = more;
    n = &q->nodes[q->nnodes++];
    memset(n, 0, sizeof *n);
    snprintf(n->addr, sizeof n->addr, "%s", addr);
  }
  n->conn = node;
  if (n->run_id[0] != '\0' && strcmp(n->run_id, run_id) != 0) {
    uint64_t len = rl_quarantine_length(c);
    uint64_t left = uptime_ms < len ? len - uptime_ms : 0;
    atomic_fetch_add(&m->restarts, 1);
    n->until_ms = left > 0 ? rl_now_ms() + left : 0;
    if (left > 0)
      rl_log(c, RLOCK_LOG_WARN,
             "master %s: node %s restarted (run_id %s is new): its grants do "
             "not count for %llu ms",
             m->name, addr, run_id, (unsigned long long)left);
  }
  snprintf(n->run_id, sizeof n->run_id, "%s", run_id);
}

int rl_node_quarantined(rl_client *c, int idx, const rl_conn *node) {
  rl_quarantine *q = c->quarantine;
  if (q == NULL || node == NULL) return 0;
  if (c->masters[idx]->kind == RL_MASTER_SINGLE) return 0; /* by index */
  qnode *n = node_find(q, node);
  return n != NULL && n->until_ms != 0 && rl_now_ms() < n->until_ms;
}

void rl_quarantine_on_state(rl_master *mm, rl_conn *node, int state) {
  rl_client *c = mm->data;
  rl_quarantine *q = c->quarantine;
  if (q == NULL || state == RL_CONN_HANDSHAKE || state == RL_CONN_READY)
    return;
  if (node == NULL || mm->kind != RL_MASTER_SINGLE) return; /* by node */
  qmaster *m = &q->m[conn_index(node)];
  if (!m->current) return;
  m->current = 0; /* its run_id may be stale by the next connection */
  m->down_ms = rl_now_ms();
  refresh_handshakes(c);
}

void rl_quarantine_on_info(rl_master *mm, rl_conn *node, const char *run_id,
                           uint64_t uptime_ms) {
  rl_client *c = mm->data;
  rl_quarantine *q = c->quarantine;
  if (q == NULL) return;
  if (mm->kind != RL_MASTER_SINGLE) {
    node_info(c, mm, node, run_id, uptime_ms);
    return;
  }
  int i = conn_index(node);
  qmaster *m = &q->m[i];
  m->current = 1;
  if (strcmp(m->run_id, run_id) != 0) {
    int had = m->run_id[0] != '\0';
    /* What bounds the leases of the run that ended, for its readings. */
    if (m->hz_gen != 0) {
      m->past[m->past_next].gen = m->hz_gen;
      m->past[m->past_next].cover = cover_of(m, rl_now_ms());
      m->past_next = (m->past_next + 1) % HZ_PAST;
    }
    snprintf(m->run_id, sizeof m->run_id, "%s", run_id);
    m->info_ms = rl_now_ms();
    m->uptime_ms = uptime_ms;
    m->self_seen = had;
    m->restarted = 0;
    m->until_ms = 0;
    m->hz_state = HZ_NONE;
    m->hz_gen++;
    evaluate(c, i);
    for (int j = 0; j < q->n; j++) {
      if (j == i || strcmp(q->m[j].run_id, run_id) != 0) continue;
      int lo = j < i ? j : i, hi = j < i ? i : j;
      rl_log(c, RLOCK_LOG_ERROR,
             "masters[%d] %s and masters[%d] %s are the same server (run_id "
             "%s): its votes count once",
             lo, q->m[lo].addr, hi, q->m[hi].addr, run_id);
    }
  }
  if (rl_client_closing(c)) return;
  /* Later handshakes carry it; the masters connected now are told at
   * once: those whose handshake gave their run_id too, ready or not. One
   * still in its handshake (its many SCRIPT LOADs) wrote its records
   * command before this run_id was known, and the later handshakes that
   * carry it are not its own: its command waits for the handshake, as
   * this one's does. */
  refresh_handshakes(c);
  for (int k = 0; k < q->n; k++)
    if (k != i && q->m[k].current && single_conn(c, k) != NULL)
      send_records(c, k);
  send_records(c, i);
}

int rl_master_quarantined(rl_client *c, int idx) {
  rl_quarantine *q = c->quarantine;
  if (q == NULL || q->m[idx].until_ms == 0) return 0;
  hz_poll(c);
  return rl_now_ms() < q->m[idx].until_ms;
}

int rl_master_duplicate(rl_client *c, int idx) {
  rl_quarantine *q = c->quarantine;
  if (q == NULL || q->m[idx].run_id[0] == '\0') return 0;
  for (int j = 0; j < idx; j++)
    if (rl_master_ready(c->masters[j]) &&
        strcmp(q->m[j].run_id, q->m[idx].run_id) == 0)
      return 1;
  return 0;
}

/* The run_id of the server that answered for master i in a round: a
 * single master's, or a cluster node's as its handshake said; NULL when
 * not known. */
static const char *answered_run_id(rl_client *c, const rl_round *r, int i) {
  rl_quarantine *q = c->quarantine;
  if (c->masters[i]->kind == RL_MASTER_SINGLE)
    return q->m[i].run_id[0] != '\0' ? q->m[i].run_id : NULL;
  qnode *n = node_find(q, r->slot[i].answered);
  return n != NULL && n->run_id[0] != '\0' ? n->run_id : NULL;
}

/* 1 if the server that answered for master i also answered, in this
 * round, for an earlier master, and one of the two is a master whose
 * server changes (a cluster node given as a master of its own too, say):
 * that server's votes count once. Two single masters are compared by
 * rl_master_duplicate. */
static int duplicate_in_round(rl_client *c, const rl_round *r, int i) {
  if (c->quarantine == NULL) return 0;
  const char *id = answered_run_id(c, r, i);
  if (id == NULL) return 0;
  for (int j = 0; j < i; j++) {
    const rl_round_slot *o = &r->slot[j];
    if (o->vote != RL_VOTE_YES && o->vote != RL_VOTE_NO) continue;
    if (c->masters[i]->kind == RL_MASTER_SINGLE &&
        c->masters[j]->kind == RL_MASTER_SINGLE)
      continue;
    const char *other = answered_run_id(c, r, j);
    if (other != NULL && strcmp(other, id) == 0) {
      if (!c->quarantine->dup_logged++)
        rl_log(c, RLOCK_LOG_ERROR,
             "masters[%d] and masters[%d] answered from the same server "
             "(run_id %s): its votes count once",
             j, i, id);
      return 1;
    }
  }
  return 0;
}

int rl_votes_settle(rl_round *r, int grants) {
  rl_client *c = r->client;
  if (c->quarantine != NULL) hz_poll(c);
  for (int i = 0; i < r->n; i++) {
    rl_round_slot *sl = &r->slot[i];
    if (sl->vote != RL_VOTE_YES && sl->vote != RL_VOTE_NO) continue;
    int drop = rl_master_duplicate(c, i) || duplicate_in_round(c, r, i) ||
               (grants && sl->vote == RL_VOTE_YES &&
                (rl_master_quarantined(c, i) || sl->node_quarantined));
    if (!drop) continue;
    if (sl->vote == RL_VOTE_YES)
      r->yes--;
    else
      r->no--;
    sl->vote = RL_VOTE_FAIL;
    r->fail++;
  }
  int answered = r->yes + r->no + r->fail;
  if (r->wait_all && answered < r->n) {
    r->decided = 0;
    return 0;
  }
  if (r->yes >= r->quorum) {
    r->outcome = RL_VOTE_YES;
    return 1;
  }
  if (r->no + r->fail > r->n - r->quorum) {
    r->outcome = RL_VOTE_NO;
    return 1;
  }
  r->decided = 0; /* not decided after all: wait for more answers */
  return 0;
}
