/*
 * Slot maps from CLUSTER SHARDS and CLUSTER SLOTS replies. The replies
 * come from the network, so every element is checked before it is used:
 * its type, its length, the range of every number, and strings for
 * embedded NULs (a host with one would be cut short). Unknown fields of a
 * node are skipped, so that a newer server's extra fields do not break an
 * older client. Under RESP3 (hiredis 1.x) a SHARDS node is a map; a map is
 * read like the flat array of pairs RESP2 gives.
 */
#include "slotmap.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One node as a reply describes it, before the address is chosen. */
typedef struct node_desc {
  const redisReply *id, *ip, *endpoint, *hostname, *role, *health;
  long long port, tls_port, offset;
  int endpoint_nil; /* SLOTS: nil endpoint (unknown-endpoint) */
} node_desc;

static int fail(rl_slotmap *m, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(rl_slotmap *m, int code, const char *fmt, ...) {
  char why[sizeof m->err];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  rl_slotmap_free(m);
  memcpy(m->err, why, sizeof m->err);
  return code;
}

void rl_slotmap_init(rl_slotmap *m) {
  memset(m, 0, sizeof *m);
  for (int s = 0; s < RL_SLOTS; s++) m->owner[s] = RL_SLOTMAP_NONE;
}

void rl_slotmap_free(rl_slotmap *m) {
  free(m->nodes);
  free(m->shards);
  rl_slotmap_init(m);
}

/* Reply helpers. */

static int is_list(const redisReply *r) {
  if (r == NULL) return 0;
#ifdef REDIS_REPLY_MAP
  if (r->type == REDIS_REPLY_MAP) return 1;
#endif
  return r->type == REDIS_REPLY_ARRAY;
}

static int is_text(const redisReply *r) {
  return r != NULL &&
         (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
         r->str != NULL && memchr(r->str, '\0', r->len) == NULL;
}

static int text_is(const redisReply *r, const char *s) {
  return is_text(r) && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

/* An integer reply, or a string of decimal digits (some proxies turn
 * integers into strings). 0, or -1. */
static int int_of(const redisReply *r, long long *out) {
  if (r == NULL) return -1;
  if (r->type == REDIS_REPLY_INTEGER) {
    *out = r->integer;
    return 0;
  }
  if (!is_text(r) || r->len == 0 || r->len > 18) return -1;
  long long v = 0;
  for (size_t i = 0; i < r->len; i++) {
    if (r->str[i] < '0' || r->str[i] > '9') return -1;
    v = v * 10 + (r->str[i] - '0');
  }
  *out = v;
  return 0;
}

/* Copies a text reply into dst; -1 if it does not fit. */
static int copy_text(char *dst, size_t cap, const redisReply *r) {
  if (!is_text(r) || r->len >= cap) return -1;
  memcpy(dst, r->str, r->len);
  dst[r->len] = '\0';
  return 0;
}

/* Reads a node's flat list of pairs (SHARDS) into d. Unknown names are
 * skipped; a known name with a value of the wrong type is an error. */
static int read_pairs(const redisReply *r, node_desc *d) {
  if (!is_list(r) || r->elements % 2 != 0) return -1;
  for (size_t i = 0; i < r->elements; i += 2) {
    const redisReply *k = r->element[i], *v = r->element[i + 1];
    if (!is_text(k)) return -1;
    const redisReply **text = NULL;
    long long *num = NULL;
    if (text_is(k, "id")) text = &d->id;
    else if (text_is(k, "ip")) text = &d->ip;
    else if (text_is(k, "endpoint")) text = &d->endpoint;
    else if (text_is(k, "hostname")) text = &d->hostname;
    else if (text_is(k, "role")) text = &d->role;
    else if (text_is(k, "health")) text = &d->health;
    else if (text_is(k, "port")) num = &d->port;
    else if (text_is(k, "tls-port")) num = &d->tls_port;
    else if (text_is(k, "replication-offset")) num = &d->offset;
    if (text != NULL) {
      if (!is_text(v)) return -1;
      *text = v;
    } else if (num != NULL) {
      if (int_of(v, num) != 0) return -1;
    }
  }
  return 0;
}

static int is_ip_literal(const char *s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/*
 * Fills n's address from d: host, hostname and port. 0, or -1 with the
 * reason in *why when there is no address this client can use.
 */
static int choose_address(rl_slotnode *n, const node_desc *d, int tls,
                          const char *from_host, const char **why) {
  long long port = d->port;
  if (tls && d->tls_port > 0) port = d->tls_port;
  if (port <= 0 || port > 65535) {
    *why = tls ? "no port for TLS or plain TCP" : "no plain TCP port";
    return -1;
  }
  n->port = (int)port;

  n->hostname[0] = '\0';
  if (d->hostname != NULL && d->hostname->len > 0 &&
      copy_text(n->hostname, sizeof n->hostname, d->hostname) != 0) {
    *why = "hostname too long";
    return -1;
  }

  const redisReply *use = NULL;
  int unknown = d->endpoint_nil ||
                (d->endpoint != NULL && d->endpoint->len == 0);
  if (d->endpoint != NULL && d->endpoint->len > 0 &&
      !text_is(d->endpoint, "?"))
    use = d->endpoint; /* the server's preferred endpoint */
  else if (unknown && from_host != NULL && *from_host != '\0')
    use = NULL;        /* "the host you asked" */
  else if (d->ip != NULL && d->ip->len > 0)
    use = d->ip;       /* "?" (no hostname), or no endpoint at all */
  else {
    *why = "no usable endpoint or ip";
    return -1;
  }
  if (use == NULL) {
    size_t len = strlen(from_host);
    if (len >= sizeof n->host) {
      *why = "from_host too long";
      return -1;
    }
    memcpy(n->host, from_host, len + 1);
  } else if (copy_text(n->host, sizeof n->host, use) != 0) {
    *why = "endpoint too long";
    return -1;
  }
  /* A preferred endpoint that is a name is the name to check a
   * certificate against, when no hostname field said otherwise. */
  if (n->hostname[0] == '\0' && !is_ip_literal(n->host) &&
      use == d->endpoint && use != NULL)
    memcpy(n->hostname, n->host, sizeof n->hostname);
  return 0;
}

/* Appends a node; returns its index, or -1 when out of memory. */
static int add_node(rl_slotmap *m, const rl_slotnode *n) {
  if (m->nnodes == m->cap_nodes) {
    int cap = m->cap_nodes ? m->cap_nodes * 2 : 8;
    rl_slotnode *p = realloc(m->nodes, (size_t)cap * sizeof *p);
    if (p == NULL) return -1;
    m->nodes = p;
    m->cap_nodes = cap;
  }
  m->nodes[m->nnodes] = *n;
  return m->nnodes++;
}

/* Appends a shard whose primary is n; returns its index, or -1. */
static int add_shard(rl_slotmap *m, rl_slotnode *n) {
  if (m->nshards >= RL_SLOTMAP_NONE) return -1; /* owner[] is 16 bits */
  if (m->nshards == m->cap_shards) {
    int cap = m->cap_shards ? m->cap_shards * 2 : 4;
    rl_slotshard *p = realloc(m->shards, (size_t)cap * sizeof *p);
    if (p == NULL) return -1;
    m->shards = p;
    m->cap_shards = cap;
  }
  n->primary = 1;
  n->shard = m->nshards;
  int first = add_node(m, n);
  if (first < 0) return -1;
  m->shards[m->nshards] = (rl_slotshard){first, 1, 0};
  return m->nshards++;
}

/* Appends a replica to the last shard (replicas follow their primary). */
static int add_replica(rl_slotmap *m, int shard, rl_slotnode *n) {
  n->primary = 0;
  n->shard = shard;
  if (add_node(m, n) < 0) return -1;
  m->shards[shard].n++;
  return 0;
}

/* Gives slots [lo, hi] to a shard. 0, or RLOCK_EPROTO (with m->err) when a
 * number is out of range or a slot already has an owner. */
static int claim(rl_slotmap *m, long long lo, long long hi, int shard) {
  if (lo < 0 || hi >= RL_SLOTS || lo > hi) {
    snprintf(m->err, sizeof m->err, "slot range %lld-%lld out of 0-16383",
             lo, hi);
    return RLOCK_EPROTO;
  }
  for (long long s = lo; s <= hi; s++) {
    if (m->owner[s] != RL_SLOTMAP_NONE) {
      snprintf(m->err, sizeof m->err, "slot %lld served by two shards", s);
      return RLOCK_EPROTO;
    }
    m->owner[s] = (uint16_t)shard;
  }
  m->shards[shard].nslots += (int)(hi - lo + 1);
  m->covered += (int)(hi - lo + 1);
  return 0;
}

static int health_of(const redisReply *h) {
  if (h == NULL) return RL_NODE_UNKNOWN;
  if (text_is(h, "online")) return RL_NODE_ONLINE;
  if (text_is(h, "loading")) return RL_NODE_LOADING;
  if (text_is(h, "fail")) return RL_NODE_FAIL;
  return RL_NODE_UNKNOWN;
}

/* A node of a SHARDS reply, described and addressed. */
static int shards_node(rl_slotmap *m, const redisReply *r, int tls,
                       const char *from_host, rl_slotnode *n, int *primary) {
  node_desc d = {0};
  d.offset = -1;
  const char *why = NULL;
  if (read_pairs(r, &d) != 0) {
    snprintf(m->err, sizeof m->err, "SHARDS: a node is not a list of pairs");
    return -1;
  }
  memset(n, 0, sizeof *n);
  if (d.id == NULL || d.id->len == 0 || copy_text(n->id, sizeof n->id, d.id)) {
    snprintf(m->err, sizeof m->err, "SHARDS: a node without a valid id");
    return -1;
  }
  if (text_is(d.role, "master")) *primary = 1;
  else if (text_is(d.role, "replica") || text_is(d.role, "slave")) *primary = 0;
  else {
    snprintf(m->err, sizeof m->err, "SHARDS: node %s has no role", n->id);
    return -1;
  }
  if (choose_address(n, &d, tls, from_host, &why) != 0) {
    snprintf(m->err, sizeof m->err, "SHARDS: node %s: %s", n->id, why);
    return -1;
  }
  n->health = health_of(d.health);
  n->offset = d.offset;
  return 0;
}

/* One element of a SHARDS reply: "slots", [lo, hi, ...], "nodes", [...].
 * A shard with no slots (a failed primary, an empty one) is skipped.
 * 0, RLOCK_EPROTO (the reason in m->err) or RLOCK_ENOMEM. */
static int shards_entry(rl_slotmap *m, const redisReply *e, int tls,
                        const char *from_host) {
  const redisReply *slots = NULL, *nodes = NULL;
  if (!is_list(e) || e->elements % 2 != 0) {
    snprintf(m->err, sizeof m->err, "SHARDS: a shard is not a list of pairs");
    return RLOCK_EPROTO;
  }
  for (size_t i = 0; i < e->elements; i += 2) {
    if (text_is(e->element[i], "slots")) slots = e->element[i + 1];
    else if (text_is(e->element[i], "nodes")) nodes = e->element[i + 1];
  }
  if (slots == NULL || nodes == NULL || slots->type != REDIS_REPLY_ARRAY ||
      slots->elements % 2 != 0 || !is_list(nodes) ||
      nodes->type != REDIS_REPLY_ARRAY) {
    snprintf(m->err, sizeof m->err, "SHARDS: a shard lacks slots or nodes");
    return RLOCK_EPROTO;
  }
  if (slots->elements == 0) return 0;

  /* The primary first, wherever the reply lists it; exactly one that has
   * not failed. Valkey keeps a primary that failed and was replaced in
   * its shard, still "master", with "health" "fail", beside its
   * successor, until it comes back as a replica; Redis 7.0 moves it to a
   * shard of its own, without slots (test/TOPOLOGY-FACTS.md). A failed
   * primary is the shard's only when no other is there (its replica not
   * promoted yet), and is never a replica. */
  int shard = -1, nfailed = 0;
  rl_slotnode failed;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < nodes->elements; i++) {
      rl_slotnode n;
      int primary;
      if (shards_node(m, nodes->element[i], tls, from_host, &n, &primary))
        return RLOCK_EPROTO;
      if (pass == 0 && primary && n.health == RL_NODE_FAIL) {
        if (nfailed++ == 0) failed = n;
      } else if (pass == 0 && primary) {
        if (shard >= 0) {
          snprintf(m->err, sizeof m->err, "SHARDS: two primaries in a shard");
          return RLOCK_EPROTO;
        }
        if ((shard = add_shard(m, &n)) < 0) goto nomem;
      } else if (pass == 1 && !primary) {
        if (add_replica(m, shard, &n) != 0) goto nomem;
      }
    }
    if (pass == 0 && shard < 0 && nfailed > 1) {
      snprintf(m->err, sizeof m->err,
               "SHARDS: two failed primaries and no other in a shard");
      return RLOCK_EPROTO;
    }
    if (pass == 0 && shard < 0 && nfailed == 1 &&
        (shard = add_shard(m, &failed)) < 0)
      goto nomem;
    if (shard < 0) {
      snprintf(m->err, sizeof m->err, "SHARDS: a shard with slots and no "
                                      "primary");
      return RLOCK_EPROTO;
    }
  }
  for (size_t i = 0; i < slots->elements; i += 2) {
    long long lo, hi;
    if (int_of(slots->element[i], &lo) || int_of(slots->element[i + 1], &hi)) {
      snprintf(m->err, sizeof m->err, "SHARDS: a slot is not a number");
      return RLOCK_EPROTO;
    }
    if (claim(m, lo, hi, shard) != 0) return RLOCK_EPROTO;
  }
  return 0;
nomem:
  snprintf(m->err, sizeof m->err, "out of memory");
  return RLOCK_ENOMEM;
}

/* An error reply fails the build with its text, which the caller needs to
 * tell "unknown subcommand" (try SLOTS) from the rest. */
static int error_reply(rl_slotmap *m, const redisReply *r, const char *cmd) {
  int len = r->str ? (int)(r->len < 120 ? r->len : 120) : 0;
  return fail(m, RLOCK_EREDIS, "%s: %.*s", cmd, len,
              r->str ? r->str : "");
}

int rl_slotmap_from_shards(rl_slotmap *m, const redisReply *r, int tls,
                           const char *from_host) {
  rl_slotmap_free(m);
  if (r != NULL && r->type == REDIS_REPLY_ERROR)
    return error_reply(m, r, "CLUSTER SHARDS");
  if (r == NULL || r->type != REDIS_REPLY_ARRAY)
    return fail(m, RLOCK_EPROTO, "CLUSTER SHARDS: not an array");
  for (size_t i = 0; i < r->elements; i++) {
    int rc = shards_entry(m, r->element[i], tls, from_host);
    if (rc == RLOCK_ENOMEM) return fail(m, rc, "out of memory");
    if (rc != 0) return fail(m, RLOCK_EPROTO, "%s", m->err);
  }
  m->from = RL_SLOTMAP_FROM_SHARDS;
  return 0;
}

/* A node of a SLOTS range: [endpoint, port, id, {ip/hostname}], of which
 * Redis 3.0 gives only the first two and 4.0 to 6.2 the first three. */
static int slots_node(rl_slotmap *m, const redisReply *r, int tls,
                      const char *from_host, rl_slotnode *n) {
  node_desc d = {0};
  const char *why = NULL;
  memset(n, 0, sizeof *n);
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
    snprintf(m->err, sizeof m->err, "SLOTS: a node is not [host, port, ...]");
    return -1;
  }
  const redisReply *ep = r->element[0];
  if (ep != NULL && ep->type == REDIS_REPLY_NIL) d.endpoint_nil = 1;
  else if (is_text(ep)) d.endpoint = ep;
  else {
    snprintf(m->err, sizeof m->err, "SLOTS: a node's endpoint is not text");
    return -1;
  }
  if (int_of(r->element[1], &d.port) != 0) {
    snprintf(m->err, sizeof m->err, "SLOTS: a node's port is not a number");
    return -1;
  }
  const redisReply *id = r->elements >= 3 ? r->element[2] : NULL;
  if (id != NULL &&
      (!is_text(id) || id->len == 0 || copy_text(n->id, sizeof n->id, id))) {
    snprintf(m->err, sizeof m->err, "SLOTS: a node without a valid id");
    return -1;
  }
  if (r->elements >= 4) {
    node_desc more = {0};
    if (read_pairs(r->element[3], &more) != 0) {
      snprintf(m->err, sizeof m->err, "SLOTS: bad endpoint metadata");
      return -1;
    }
    d.ip = more.ip;
    d.hostname = more.hostname;
  }
  /* The one port SLOTS gives is already the one for this connection's
   * transport (src/cluster.c, addNodeToNodeReply). */
  if (choose_address(n, &d, tls, from_host, &why) != 0) {
    snprintf(m->err, sizeof m->err, "SLOTS: node %s: %s",
             n->id[0] ? n->id : "?", why);
    return -1;
  }
  n->offset = -1;
  return 0;
}

/* The shard whose primary is n (by id if known, else by address), or -1.
 * A known id at another address is an error (-2). */
static int find_shard(const rl_slotmap *m, const rl_slotnode *n) {
  for (int i = 0; i < m->nshards; i++) {
    const rl_slotnode *p = &m->nodes[m->shards[i].first];
    int same_id = n->id[0] && strcmp(p->id, n->id) == 0;
    int same_addr = p->port == n->port && strcmp(p->host, n->host) == 0;
    if (same_id && !same_addr) return -2;
    if (same_id || (same_addr && (!n->id[0] || !p->id[0]))) return i;
    if (same_addr) return -2; /* two ids at one address */
  }
  return -1;
}

static int shard_has(const rl_slotmap *m, int shard, const rl_slotnode *n) {
  const rl_slotshard *s = &m->shards[shard];
  for (int i = s->first; i < s->first + s->n; i++)
    if (rl_slotnode_same(&m->nodes[i], n)) return 1;
  return 0;
}

/* One element of a SLOTS reply: [lo, hi, primary, replica...]. 0,
 * RLOCK_EPROTO (the reason in m->err) or RLOCK_ENOMEM. */
static int slots_entry(rl_slotmap *m, const redisReply *e, int tls,
                       const char *from_host) {
  long long lo, hi;
  rl_slotnode n;
  if (e == NULL || e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
      int_of(e->element[0], &lo) || int_of(e->element[1], &hi)) {
    snprintf(m->err, sizeof m->err, "SLOTS: a range is not [lo, hi, node...]");
    return RLOCK_EPROTO;
  }
  if (slots_node(m, e->element[2], tls, from_host, &n) != 0)
    return RLOCK_EPROTO;
  int shard = find_shard(m, &n);
  if (shard == -2) {
    snprintf(m->err, sizeof m->err, "SLOTS: node %s listed at two addresses",
             n.id);
    return RLOCK_EPROTO;
  }
  /* Replicas of a shard are stored right after its primary, so a range of
   * a shard met before may not add new ones unless that shard is last. */
  if (shard < 0 && (shard = add_shard(m, &n)) < 0) return RLOCK_ENOMEM;
  for (size_t i = 3; i < e->elements; i++) {
    rl_slotnode r;
    if (slots_node(m, e->element[i], tls, from_host, &r) != 0)
      return RLOCK_EPROTO;
    r.health = RL_NODE_ONLINE; /* SLOTS lists available replicas only */
    if (shard_has(m, shard, &r)) continue;
    if (shard != m->nshards - 1) {
      snprintf(m->err, sizeof m->err, "SLOTS: ranges of one primary list "
                                      "different replicas");
      return RLOCK_EPROTO;
    }
    if (add_replica(m, shard, &r) != 0) return RLOCK_ENOMEM;
  }
  return claim(m, lo, hi, shard);
}

int rl_slotmap_from_slots(rl_slotmap *m, const redisReply *r, int tls,
                          const char *from_host) {
  rl_slotmap_free(m);
  if (r != NULL && r->type == REDIS_REPLY_ERROR)
    return error_reply(m, r, "CLUSTER SLOTS");
  if (r == NULL || r->type != REDIS_REPLY_ARRAY)
    return fail(m, RLOCK_EPROTO, "CLUSTER SLOTS: not an array");
  for (size_t i = 0; i < r->elements; i++) {
    int rc = slots_entry(m, r->element[i], tls, from_host);
    if (rc == RLOCK_ENOMEM) return fail(m, rc, "out of memory");
    if (rc != 0) return fail(m, RLOCK_EPROTO, "%s", m->err);
  }
  m->from = RL_SLOTMAP_FROM_SLOTS;
  return 0;
}

/* Lookups. */

int rl_slotmap_shard(const rl_slotmap *m, int slot) {
  if (slot < 0 || slot >= RL_SLOTS || m->owner[slot] == RL_SLOTMAP_NONE)
    return -1;
  return m->owner[slot];
}

const rl_slotnode *rl_slotmap_primary(const rl_slotmap *m, int slot) {
  int s = rl_slotmap_shard(m, slot);
  return s < 0 ? NULL : &m->nodes[m->shards[s].first];
}

const rl_slotnode *rl_slotmap_replica(const rl_slotmap *m, int slot, int i) {
  int s = rl_slotmap_shard(m, slot);
  if (s < 0 || i < 0 || i >= m->shards[s].n - 1) return NULL;
  return &m->nodes[m->shards[s].first + 1 + i];
}

int rl_slotmap_primaries(const rl_slotmap *m, const rl_slotnode **out,
                         int cap) {
  int n = 0;
  for (int i = 0; i < m->nshards; i++) {
    if (m->shards[i].nslots == 0) continue;
    if (n < cap) out[n] = &m->nodes[m->shards[i].first];
    n++;
  }
  return n;
}

int rl_slotnode_same(const rl_slotnode *a, const rl_slotnode *b) {
  if (a->port != b->port || strcmp(a->host, b->host) != 0) return 0;
  return !a->id[0] || !b->id[0] || strcmp(a->id, b->id) == 0;
}

int rl_slotmap_diff(const rl_slotmap *a, const rl_slotmap *b,
                    unsigned char *moved) {
  int n = 0;
  if (moved != NULL) memset(moved, 0, RL_SLOTS / 8);
  for (int s = 0; s < RL_SLOTS; s++) {
    const rl_slotnode *x = rl_slotmap_primary(a, s);
    const rl_slotnode *y = rl_slotmap_primary(b, s);
    int same = (x == NULL && y == NULL) ||
               (x != NULL && y != NULL && rl_slotnode_same(x, y));
    if (same) continue;
    n++;
    if (moved != NULL) moved[s / 8] |= (unsigned char)(1u << (s % 8));
  }
  return n;
}

int rl_slotmap_apply_moved(rl_slotmap *m, int slot, const char *host,
                           int port) {
  if (slot < 0 || slot >= RL_SLOTS || host == NULL || *host == '\0' ||
      strlen(host) >= RL_SLOTMAP_HOST_MAX || port <= 0 || port > 65535)
    return RLOCK_EPROTO;
  rl_slotnode n;
  memset(&n, 0, sizeof n);
  strcpy(n.host, host);
  n.port = port;
  n.offset = -1;
  int shard = find_shard(m, &n);
  int added = 0;
  if (shard < 0) {
    if ((shard = add_shard(m, &n)) < 0) return RLOCK_ENOMEM;
    added = 1;
  }
  int old = m->owner[slot];
  if (old == shard) return added;
  if (old != RL_SLOTMAP_NONE) m->shards[old].nslots--;
  else m->covered++;
  m->owner[slot] = (uint16_t)shard;
  m->shards[shard].nslots++;
  if (m->from == 0) m->from = RL_SLOTMAP_FROM_MOVED;
  return added;
}
