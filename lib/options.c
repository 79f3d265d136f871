/*
 * Options: defaults, validation and the resolution of master host names.
 * hiredis resolves names with a blocking getaddrinfo, which must never run
 * on the loop; resolving once at open, on the caller's thread, keeps the
 * loop non-blocking and makes a bad host name an open-time error.
 */
#include "options.h"

#include <arpa/inet.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "client.h"

void rlock_options_init(rlock_options *o) {
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
  o->log_level = RLOCK_LOG_INFO;
}

static int prefix_ok(const char *p) {
  if (p == NULL) return 0;
  size_t n = strlen(p);
  if (n > RL_PREFIX_MAX) return 0;
  return strpbrk(p, "{}") == NULL;
}

int rl_options_check(const rlock_options *o, rl_url *urls) {
  if (o == NULL || o->masters == NULL || o->nmasters == 0 ||
      o->nmasters > RL_MAX_MASTERS)
    return RLOCK_EINVAL;
  /* A day is far beyond any sane lease; it keeps lease arithmetic in
   * range and catches a seconds/ms mix-up. */
  if (o->watchdog_timeout_ms < 30 || o->watchdog_timeout_ms > 86400000)
    return RLOCK_EINVAL;
  if (o->master_timeout_ms < 1 || o->master_timeout_ms > 60000)
    return RLOCK_EINVAL;
  if (o->connect_timeout_ms < 1 || o->connect_timeout_ms > 600000)
    return RLOCK_EINVAL;
  if (!(o->drift_factor >= 0.0 && o->drift_factor < 0.5) ||
      isnan(o->drift_factor))
    return RLOCK_EINVAL;
  if (o->retry_delay_ms < 0 || o->retry_delay_ms > 600000 ||
      o->retry_jitter_ms < 0 || o->retry_jitter_ms > 600000)
    return RLOCK_EINVAL;
  if (!prefix_ok(o->key_prefix)) return RLOCK_EINVAL;
  if (o->watchdog_batch < 1 || o->watchdog_batch > 10000) return RLOCK_EINVAL;
  if (o->max_extensions < 0) return RLOCK_EINVAL;
  if (o->restart_quarantine_ms < RLOCK_QUARANTINE_AUTO ||
      o->restart_quarantine_ms > 86400000)
    return RLOCK_EINVAL;
  if (o->wait_strategy != RLOCK_WAIT_PUBSUB &&
      o->wait_strategy != RLOCK_WAIT_POLL)
    return RLOCK_EINVAL;
  for (size_t i = 0; i < o->nmasters; i++)
    if (rl_url_parse(o->masters[i], &urls[i]) != 0) return RLOCK_EINVAL;
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
  if (getaddrinfo(u->host, NULL, &hints, &res) != 0 || res == NULL)
    return RLOCK_EINVAL;
  int rc = RLOCK_EINVAL;
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
  return rc;
}

int rl_name_check(const char *name) {
  if (name == NULL) return RLOCK_EINVAL;
  size_t n = strnlen(name, RL_NAME_MAX + 1);
  if (n == 0 || n > RL_NAME_MAX) return RLOCK_EINVAL;
  if (strpbrk(name, "{}") != NULL) return RLOCK_EINVAL;
  return 0;
}
