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
 * the leases it took part in by b_j, the later of its horizon and, if j
 * restarted too, the end of its own quarantine as this client worked it
 * out (which bounds what j granted before, by the same argument one
 * restart earlier; unknown while j's read is pending, and then j bounds
 * nothing). The worst majority is i with the quorum - 1 others whose b_j
 * are largest; the smallest of those, the (n - quorum + 1)th smallest
 * b_j, is when every lease i may have forgotten has run out. A PTTL is
 * counted from the reply's arrival and stretched by the drift factor. A
 * master that cannot be read, where it is needed (down, slow, a Cluster
 * or Sentinel master: their quarantine is per node, node_info, and their
 * horizons are not read), leaves the configured
 * length, and the read is tried again while that lasts. The horizon
 * never makes the quarantine longer than the configured length, and an
 * acquisition that does not count still pushes the horizon (its grant
 * is undone, but a grant that counted is indistinguishable on the
 * master): with constant contention the read sees the horizon a lease
 * ahead, never more.
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

typedef struct qmaster {
  char addr[ADDR_MAX];    /* the field name of its records */
  char run_id[RUNID_MAX]; /* of the last connection; "" unknown */
  int current;            /* run_id is the live connection's */
  uint64_t info_ms;       /* monotonic ms when run_id and uptime came */
  uint64_t uptime_ms;
  int self_seen;          /* this client saw the run_id change */
  int restarted;          /* the current run_id follows another */
  uint64_t until_ms;      /* quarantined until then (monotonic ms) */
  /* The horizon read of a restarted master (hz_*): */
  int hz_state;           /* HZ_NONE, _WAIT, _READING or _DONE */
  unsigned hz_gen;        /* its run; a read of an earlier one is stale */
  uint64_t hz_ready_ms;   /* a read sent from then on counts (monotonic) */
} qmaster;

/* A restarted master's horizon read: none (not restarted, or nothing
 * left to wait), waiting to be sent (from hz_ready_ms on), in flight, or
 * done (until_ms is what the other masters' horizons said). */
enum { HZ_NONE = 0, HZ_WAIT, HZ_READING, HZ_DONE };

/* A failed read (a needed master down or slow) is sent again after this
 * long, while the configured quarantine lasts. */
#define HZ_RETRY_MS 1000

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

static void hz_poll(rl_client *c, int i);

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
  if (m->until_ms > now) {
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
    hz_poll(c, i);
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

/* A horizon read's data: the restarted master and its run. */
#define HZ_TAG(i, gen) ((void *)(uintptr_t)((unsigned)(i) | ((gen) << 8)))
#define HZ_GEN_MASK 0xffffffu

static int hz_classify(rl_round *r, int idx, const redisReply *rep) {
  /* -2: no key, every lease it recorded has run out; -1 (a key without a
   * TTL, not rlock's doing) tells nothing. */
  if (rep->type != REDIS_REPLY_INTEGER || rep->integer == -1 ||
      rep->integer < -2)
    return RL_VOTE_FAIL;
  r->slot[idx].v[0] = rep->integer;
  r->slot[idx].v[1] = (int64_t)rl_now_ms(); /* the reply's time counted */
  return RL_VOTE_YES;
}

/* Every other master's horizon is in (or failed): master i's quarantine
 * ends when the last lease a majority with i may have granted has run
 * out. Each other master j bounds the leases it took part in by b_j, the
 * later of its horizon (the reply's arrival plus its PTTL, stretched by
 * the drift factor) and what it granted before its own restart
 * (cover_of); a master not read bounds nothing. A grant that counted went
 * to i and at least quorum - 1 others, so the worst such majority's
 * smallest bound, the (n - quorum + 1)th smallest b_j, bounds every
 * lease i may have forgotten. No bound (a needed master not read), and
 * the read is tried again in a while; the configured length holds
 * meanwhile, and is never exceeded. */
static void hz_done(rl_round *r) {
  rl_client *c = r->client;
  rl_quarantine *q = c->quarantine;
  uintptr_t tag = (uintptr_t)r->data;
  int i = (int)(tag & 0xff);
  if (q == NULL || rl_client_closing(c)) return;
  qmaster *m = &q->m[i];
  if ((m->hz_gen & HZ_GEN_MASK) != (unsigned)(tag >> 8) ||
      m->hz_state != HZ_READING)
    return;
  uint64_t now = rl_now_ms(), b[RL_MAX_MASTERS];
  double d = c->opts.drift_factor;
  int nb = 0;
  for (int j = 0; j < q->n; j++) {
    if (j == i) continue;
    const rl_round_slot *sl = &r->slot[j];
    uint64_t bj = UINT64_MAX;
    /* A cluster node listed as a plain master records no horizon (its
     * scripts may not touch the key: scripts.h), so it is not read. */
    const rl_conn *cj = single_conn(c, j);
    if (cj != NULL && cj->standalone && sl->vote == RL_VOTE_YES) {
      uint64_t h = 0;
      if (sl->v[0] >= 0)
        h = (uint64_t)sl->v[1] + (uint64_t)((double)sl->v[0] * (1.0 + d)) + 2;
      uint64_t cover = cover_of(&q->m[j], now);
      bj = cover == UINT64_MAX ? UINT64_MAX : h > cover ? h : cover;
    }
    int k = nb++;
    for (; k > 0 && b[k - 1] > bj; k--) b[k] = b[k - 1];
    b[k] = bj;
  }
  uint64_t t = nb > 0 ? b[q->n - (q->n / 2 + 1)] : UINT64_MAX;
  if (t == UINT64_MAX) {
    m->hz_state = HZ_WAIT;
    m->hz_ready_ms = now + HZ_RETRY_MS;
    return;
  }
  m->hz_state = HZ_DONE;
  if (t >= m->until_ms) return;
  m->until_ms = t;
  rl_log(c, RLOCK_LOG_INFO,
         "master %s restarted: the leases the other masters recorded end "
         "%s%llu ms from now; its grants count from then",
         m->addr, t > now ? "" : "before, ",
         (unsigned long long)(t > now ? t - now : 0));
}

static const rl_round_ops hz_ops = {hz_classify, hz_done, NULL, NULL};

/* Sends master i's horizon read (PTTL of every master's horizon, read
 * once every master answered or failed) when it is waiting and its time
 * has come. A read sent earlier could miss a grant of a round that began
 * before i restarted and landed on another master later. */
static void hz_poll(rl_client *c, int i) {
  rl_quarantine *q = c->quarantine;
  qmaster *m = &q->m[i];
  if (m->hz_state != HZ_WAIT || rl_client_closing(c)) return;
  uint64_t now = rl_now_ms();
  if (now >= m->until_ms) {
    m->hz_state = HZ_NONE; /* the configured length has run out */
    return;
  }
  if (now < m->hz_ready_ms) return;
  const char *argv[2] = {"PTTL", q->hz_key};
  size_t len[2] = {4, strlen(q->hz_key)};
  rl_round *r = rl_round_new(c, &hz_ops, HZ_TAG(i, m->hz_gen & HZ_GEN_MASK),
                             -1, 2, argv, len);
  if (r == NULL) {
    m->hz_ready_ms = now + HZ_RETRY_MS; /* out of memory: later */
    return;
  }
  r->wait_all = 1;
  m->hz_state = HZ_READING;
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
  if (q->m[idx].hz_state == HZ_WAIT) hz_poll(c, idx);
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
