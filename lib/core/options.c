/*
 * Options: defaults, validation and the resolution of master host names.
 * hiredis resolves names with a blocking getaddrinfo, which must never run
 * on the loop; resolving once at open, on the caller's thread, keeps the
 * loop non-blocking and makes a bad host name an open-time error.
 */
#include "options.h"

#include <arpa/inet.h>
#include <math.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client.h"

/* Why the calling thread's last rlock_client_open failed; see
 * rlock_open_error. */
static __thread char open_error[320];

void rl_open_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(open_error, sizeof open_error, fmt, ap);
  va_end(ap);
}

void rl_open_error_clear(void) { open_error[0] = '\0'; }

size_t rlock_open_error(char *buf, size_t size) {
  size_t len = strlen(open_error);
  if (buf != NULL && size > 0) {
    size_t n = len < size - 1 ? len : size - 1;
    memcpy(buf, open_error, n);
    buf[n] = '\0';
  }
  return len;
}

void rlock_options_init(rlock_options *o) {
  if (o == NULL) return;
  memset(o, 0, sizeof *o);
  o->watchdog_timeout_ms = 30000;
  o->master_timeout_ms = 200;
  o->connect_timeout_ms = 1000;
  o->drift_factor = 0.01;
  o->retry_delay_ms = 100;
  o->retry_jitter_ms = 100;
  o->key_prefix = "rlock:";
  o->watchdog_batch = 100;
  o->max_extensions = 10;
  o->restart_quarantine_ms = RLOCK_QUARANTINE_AUTO;
  o->max_lease_ms = RL_DEFAULT_MAX_LEASE_MS;
  o->log_level = RLOCK_LOG_INFO;
  o->replica_ack_timeout_ms = 100;
  o->waiter_alive_ms = RLOCK_WAITER_ALIVE_AUTO;
  o->sem_limit_ttl_ms = 86400000;
  o->latch_ttl_ms = 86400000;
  o->latch_linger_ms = 600000;
}

int rl_prefix_check(const char *p) {
  if (p == NULL || strlen(p) > RL_PREFIX_MAX) return RLOCK_EINVAL;
  return strpbrk(p, "{}") == NULL ? 0 : RLOCK_EINVAL;
}

/* Refuses an option with a reason for rlock_open_error. */
#define REFUSE(...)           \
  do {                        \
    rl_open_error(__VA_ARGS__); \
    return RLOCK_EINVAL;      \
  } while (0)

/* The TLS options' own rules; the files are read at open (tls.c). */
static int tls_options_check(const rlock_options *o) {
  const struct {
    const char *name, *value;
  } files[] = {{"tls_ca_file", o->tls_ca_file},
               {"tls_ca_dir", o->tls_ca_dir},
               {"tls_cert_file", o->tls_cert_file},
               {"tls_key_file", o->tls_key_file}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    if (files[i].value != NULL && files[i].value[0] == '\0')
      REFUSE("%s: empty (NULL means not set)", files[i].name);
  if ((o->tls_cert_file == NULL) != (o->tls_key_file == NULL))
    REFUSE("%s: given without %s (a client certificate needs both)",
           o->tls_cert_file ? "tls_cert_file" : "tls_key_file",
           o->tls_cert_file ? "tls_key_file" : "tls_cert_file");
  if (o->tls_server_name != NULL) {
    size_t n = strlen(o->tls_server_name);
    if (n == 0 || n > 255 || strpbrk(o->tls_server_name, " \t\r\n/") != NULL)
      REFUSE("tls_server_name: \"%.200s\", not a host name",
             o->tls_server_name);
  }
  if (o->tls_insecure != 0 && o->tls_insecure != 1)
    REFUSE("tls_insecure: %d, not 0 or 1", o->tls_insecure);
  return 0;
}

int rl_options_check(const rlock_options *o, rl_master_url *urls) {
  if (o == NULL) REFUSE("options: NULL");
  if (o->masters == NULL || o->nmasters == 0)
    REFUSE("masters: none given (at least one is needed)");
  if (o->nmasters > RL_MAX_MASTERS)
    REFUSE("nmasters: %zu, more than %d", o->nmasters, RL_MAX_MASTERS);
  /* A day is far beyond any sane lease; it keeps lease arithmetic in
   * range and catches a seconds/ms mix-up. */
  if (o->watchdog_timeout_ms < 30 || o->watchdog_timeout_ms > 86400000)
    REFUSE("watchdog_timeout_ms: %lld, not in 30..86400000",
           (long long)o->watchdog_timeout_ms);
  if (o->master_timeout_ms < 1 || o->master_timeout_ms > 60000)
    REFUSE("master_timeout_ms: %lld, not in 1..60000",
           (long long)o->master_timeout_ms);
  if (o->connect_timeout_ms < 1 || o->connect_timeout_ms > 600000)
    REFUSE("connect_timeout_ms: %lld, not in 1..600000",
           (long long)o->connect_timeout_ms);
  if (!(o->drift_factor >= 0.0 && o->drift_factor < 0.5) ||
      isnan(o->drift_factor))
    REFUSE("drift_factor: %g, not in [0, 0.5)", o->drift_factor);
  if (o->retry_delay_ms < 0 || o->retry_delay_ms > 600000)
    REFUSE("retry_delay_ms: %lld, not in 0..600000",
           (long long)o->retry_delay_ms);
  if (o->retry_jitter_ms < 0 || o->retry_jitter_ms > 600000)
    REFUSE("retry_jitter_ms: %lld, not in 0..600000",
           (long long)o->retry_jitter_ms);
  if (rl_prefix_check(o->key_prefix) != 0)
    REFUSE("key_prefix: %s", o->key_prefix == NULL
                                 ? "NULL"
                                 : "longer than 64 bytes, or has '{' or '}'");
  if (o->watchdog_batch < 1 || o->watchdog_batch > 10000)
    REFUSE("watchdog_batch: %d, not in 1..10000", o->watchdog_batch);
  if (o->max_extensions < 0)
    REFUSE("max_extensions: %d, negative", o->max_extensions);
  const struct {
    const char *name;
    int64_t v;
  } life[] = {{"sem_limit_ttl_ms", o->sem_limit_ttl_ms},
              {"latch_ttl_ms", o->latch_ttl_ms},
              {"latch_linger_ms", o->latch_linger_ms}};
  for (size_t i = 0; i < sizeof life / sizeof life[0]; i++)
    if (life[i].v < 1 || life[i].v > RL_LEASE_MAX_MS)
      REFUSE("%s: %lld, not in 1..%lld (30 days)", life[i].name,
             (long long)life[i].v, (long long)RL_LEASE_MAX_MS);
  if (o->restart_quarantine_ms < RLOCK_QUARANTINE_AUTO ||
      o->restart_quarantine_ms > 86400000)
    REFUSE("restart_quarantine_ms: %lld, not RLOCK_QUARANTINE_AUTO, 0 or "
           "up to 86400000",
           (long long)o->restart_quarantine_ms);
  if (o->max_lease_ms < 1 || o->max_lease_ms > RL_LEASE_MAX_MS)
    REFUSE("max_lease_ms: %lld, not in 1..%lld", (long long)o->max_lease_ms,
           (long long)RL_LEASE_MAX_MS);
  if (o->wait_strategy != RLOCK_WAIT_PUBSUB &&
      o->wait_strategy != RLOCK_WAIT_POLL)
    REFUSE("wait_strategy: %d, not RLOCK_WAIT_PUBSUB or RLOCK_WAIT_POLL",
           o->wait_strategy);
  /* A queued waiter attempts every third of it, and each attempt may take
   * a master timeout to land: a live waiter must never look dead. */
  if (o->waiter_alive_ms != RLOCK_WAITER_ALIVE_AUTO &&
      (o->waiter_alive_ms < 4 * o->master_timeout_ms ||
       o->waiter_alive_ms > 86400000))
    REFUSE("waiter_alive_ms: %lld, not RLOCK_WAITER_ALIVE_AUTO or in "
           "4 * master_timeout_ms (%lld)..86400000",
           (long long)o->waiter_alive_ms, (long long)(4 * o->master_timeout_ms));
  if (tls_options_check(o) != 0) return RLOCK_EINVAL;
  if (o->replica_acks < 0 || o->replica_acks > RL_REPLICA_ACKS_MAX)
    REFUSE("replica_acks: %d, not in 0..%d", o->replica_acks,
           RL_REPLICA_ACKS_MAX);
  /* WAIT 0 would wait for ever: a timeout is needed, and it delays every
   * grant by up to that much, so it must be short against the lease. */
  if (o->replica_acks > 0 && (o->replica_ack_timeout_ms < 1 ||
                              o->replica_ack_timeout_ms > 60000))
    REFUSE("replica_ack_timeout_ms: %lld, not in 1..60000",
           (long long)o->replica_ack_timeout_ms);
  for (size_t i = 0; i < o->nmasters; i++) {
    const char *why = "invalid";
    char shown[208]; /* the address without its password */
    rl_url_mask(o->masters[i], shown, sizeof shown);
    if (rl_master_url_parse(o->masters[i], &urls[i], &why) != 0)
      REFUSE("masters[%zu] \"%s\": %s", i, shown, why);
    if (urls[i].kind != 0 && !rl_master_kind_supported(urls[i].kind))
      REFUSE("masters[%zu] \"%s\": %s masters are not supported yet", i,
             shown, urls[i].kind == RL_TOPO_CLUSTER ? "cluster" : "Sentinel");
  }
  return 0;
}

int rl_master_kind_supported(int kind) {
  return kind == 0 || kind == RL_TOPO_SENTINEL || kind == RL_TOPO_CLUSTER;
}

int rl_master_url_resolve(rl_master_url *m) {
  if (m->kind == 0) return rl_url_resolve(&m->url);
  for (int k = 0; k < m->topo.naddrs; k++) {
    rl_url u;
    rl_master_url_node(m, m->topo.addr[k].host, m->topo.addr[k].port, &u);
    int rc = rl_url_resolve(&u);
    if (rc != 0) return rc;
    snprintf(m->topo.addr[k].numeric, sizeof m->topo.addr[k].numeric, "%s",
             u.host);
  }
  rl_master_url_seed(m, 0, &m->url);
  return 0;
}

int rl_url_resolve(rl_url *u) {
  if (u->kind != RL_URL_TCP) return 0;
  unsigned char buf[sizeof(struct in6_addr)];
  if (inet_pton(AF_INET, u->host, buf) == 1 ||
      inet_pton(AF_INET6, u->host, buf) == 1)
    return 0;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gai = getaddrinfo(u->host, NULL, &hints, &res);
  if (gai != 0 || res == NULL) {
    rl_open_error("master host \"%.200s\": %s", u->host,
                  gai != 0 ? gai_strerror(gai) : "no address");
    return RLOCK_ENOTFOUND;
  }
  int rc = RLOCK_ENOTFOUND;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    const void *addr = NULL;
    if (ai->ai_family == AF_INET)
      addr = &((struct sockaddr_in *)ai->ai_addr)->sin_addr;
    else if (ai->ai_family == AF_INET6)
      addr = &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
    if (addr && inet_ntop(ai->ai_family, addr, u->host, sizeof u->host)) {
      rc = 0;
      break;
    }
  }
  freeaddrinfo(res);
  if (rc != 0)
    rl_open_error("master host \"%.200s\": no IPv4 or IPv6 address", u->host);
  return rc;
}

/* --- one server, one vote ---------------------------------------------- */

/* The address a resolved master is reached at, in one spelling: numeric
 * host (IPv6 in brackets) and port, or the socket's real path. */
void rl_url_canonical(const rl_url *u, char *buf, size_t size) {
  if (u->kind == RL_URL_UNIX) {
    char real[PATH_MAX];
    snprintf(buf, size, "unix:%s", realpath(u->path, real) ? real : u->path);
  } else if (strchr(u->host, ':') != NULL) {
    snprintf(buf, size, "[%s]:%d", u->host, u->port);
  } else {
    snprintf(buf, size, "%s:%d", u->host, u->port);
  }
}

/* A master as its user wrote it, without the password. */
static void display(const char *s, char *buf, size_t size) {
  rl_url u;
  if (s != NULL && rl_topo_url_is(s)) {
    rl_url_mask(s, buf, size);
    buf[strcspn(buf, "?")] = '\0'; /* the seeds and options */
  } else if (s == NULL || rl_url_parse(s, &u) != 0)
    snprintf(buf, size, "?");
  else if (u.kind == RL_URL_UNIX)
    snprintf(buf, size, "unix://%.200s", u.path);
  else
    snprintf(buf, size, strchr(u.host, ':') ? "[%.200s]:%d" : "%.200s:%d",
             u.host, u.port);
}

/* A master's identity for that check: its address, and for a Sentinel
 * group the service too (one set of sentinels may watch several masters,
 * which are then different servers; their run_ids tell if not). */
static void master_canonical(const rl_master_url *u, char *buf, size_t size) {
  rl_url_canonical(&u->url, buf, size);
  if (u->kind == RL_TOPO_SENTINEL) {
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "/%s", u->topo.service);
  }
}

int rl_masters_check_unique(const rlock_options *o,
                            const rl_master_url *urls) {
  char a[RL_URL_HOST_MAX + 400], b[sizeof a];
  for (size_t i = 0; i < o->nmasters; i++) {
    master_canonical(&urls[i], a, sizeof a);
    for (size_t j = 0; j < i; j++) {
      master_canonical(&urls[j], b, sizeof b);
      if (strcmp(a, b) != 0) continue;
      char dj[300], di[300];
      display(o->masters[j], dj, sizeof dj);
      display(o->masters[i], di, sizeof di);
      REFUSE("masters[%zu] \"%s\" and masters[%zu] \"%s\" are the same "
             "server (%.200s): it would vote twice in every quorum",
             j, dj, i, di, a);
    }
  }
  return 0;
}

int rl_name_check(const char *name) {
  if (name == NULL) return RLOCK_EINVAL;
  size_t n = strnlen(name, RL_NAME_MAX + 1);
  if (n == 0 || n > RL_NAME_MAX) return RLOCK_EINVAL;
  if (strpbrk(name, "{}") != NULL) return RLOCK_EINVAL;
  return 0;
}
