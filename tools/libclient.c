/*
 * What the subcommands that use the library's client (exec and unlock
 * --force) share: opening a client on the global options, printing a
 * library error with why, and the lock kinds a NAME may be taken as.
 */
#include <stdio.h>
#include <string.h>

#include "rlock.h"
#include "tool.h"

/* Opens a client on the global masters with the given watchdog timeout
 * (0: the library's default), longest lease and connect timeout (0: the
 * library's defaults). A first call waits for the masters' first
 * connection attempt, so no retry is needed. Prints why on failure. */
int rt_open_client(const rt_global *g, long long watchdog_ms,
                       long long max_lease_ms, long long connect_ms,
                       rlock_client **out) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = g->masters;
  o.nmasters = g->nmasters;
  o.key_prefix = g->prefix;
  o.tls_ca_file = g->cacert;
  o.tls_ca_dir = g->cacertdir;
  o.tls_cert_file = g->cert;
  o.tls_key_file = g->key;
  o.tls_server_name = g->sni;
  o.tls_insecure = g->insecure;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  if (max_lease_ms > 0) o.max_lease_ms = max_lease_ms;
  if (connect_ms > 0) o.connect_timeout_ms = connect_ms;
  o.retry_delay_ms = 50;
  o.retry_jitter_ms = 50;
  int rc = rlock_client_open(out, &o);
  if (rc != 0) {
    char why[320];
    rlock_open_error(why, sizeof why);
    fprintf(stderr, "rlock: cannot open client: %s\n", why);
  }
  return rc;
}

/* Writes into buf (of size) how many masters are connected, then the
 * masters that are not connected, with why
 * (the connection's own error text: "connection refused", "WRONGPASS
 * ...", a TLS failure), and those whose commands timed out, from the
 * client's metrics: what a user needs after RLOCK_ENOQUORUM. */
static void failed_masters(rlock_client *c, char *buf, size_t size) {
  static rlock_metrics m; /* large; the tool is single-threaded here */
  size_t used = 0;
  buf[0] = '\0';
  if (rlock_metrics_snapshot(c, &m) != 0) return;
  /* How many are up first: one master down of three does not by itself
   * stop a majority, and the line must not read as if it did. */
  size_t up = 0;
  for (size_t i = 0; i < m.nmasters; i++) up += m.masters[i].up != 0;
  int n0 = snprintf(buf, size, "%zu of %zu masters connected", up,
                    m.nmasters);
  if (n0 < 0) return;
  used = (size_t)n0 < size ? (size_t)n0 : size - 1;
  for (size_t i = 0; i < m.nmasters && used + 1 < size; i++) {
    const rlock_master_metrics *mm = &m.masters[i];
    /* A Sentinel master whose sentinels name no node has no address
     * yet: its place in --masters names it then. */
    char who[300];
    if (mm->address[0] != '\0')
      snprintf(who, sizeof who, "%s", mm->address);
    else
      snprintf(who, sizeof who, "masters[%zu] (no address known)", i);
    int n;
    if (mm->error[0] != '\0') /* down: the connection says why */
      n = snprintf(buf + used, size - used, "%s%s: not connected (%s)",
                   used ? "; " : "", who, mm->error);
    else if (mm->timeouts > 0) /* connected, stalled or slow */
      n = snprintf(buf + used, size - used,
                   "%s%s: connected, %llu command(s) timed out",
                   used ? "; " : "", who, (unsigned long long)mm->timeouts);
    else if (!mm->up)
      n = snprintf(buf + used, size - used, "%s%s: not connected",
                   used ? "; " : "", who);
    else
      continue;
    if (n < 0) break;
    used += (size_t)n < size - used ? (size_t)n : size - used - 1;
  }
}

/* Prints a library error, with the master's error reply when there is
 * one, and which masters failed when a majority could not be reached. */
void rt_print_lib_error(const char *what, rlock_client *c, int rc) {
  char buf[1024] = "";
  if (rc == RLOCK_EREDIS || rc == RLOCK_EINVAL || rc == RLOCK_ECONFLICT)
    rlock_client_last_error(c, buf, sizeof buf);
  if (rc == RLOCK_ENOQUORUM) failed_masters(c, buf, sizeof buf);
  fprintf(stderr, "rlock: %s: %s%s%s\n", what, rlock_strerror(rc),
          buf[0] ? ": " : "", buf);
}

/* --- lock kinds ---------------------------------------------------------- */

/* The kinds a NAME may be taken as (rlock.h): a reentrant lock, a fair
 * lock, or the read or write side of a read-write lock. */
const char *const rt_kind_names[] = {"lock", "fair", "read", "write"};

/* The index of a --kind value, or -1. */
static int kind_index(const char *s) {
  for (int i = 0; i < 4; i++)
    if (strcmp(s, rt_kind_names[i]) == 0) return i;
  return -1;
}

/* A handle on NAME of kind k (an index into kinds). */
int rt_get_handle(rlock_client *c, int k, const char *name, rlock **out) {
  switch (k) {
    case 1: return rlock_get_fair(c, name, out);
    case 2: return rlock_get_read(c, name, out);
    case 3: return rlock_get_write(c, name, out);
    default: return rlock_get(c, name, out);
  }
}


/* --kind and its shorthands, shared by exec and unlock --force: 1 if opt
 * was one of them (*kind set, or -1 for a bad value), else 0. */
int rt_kind_option(int opt, const char *arg, int *kind) {
  switch (opt) {
    case RT_OPT_KIND: *kind = kind_index(arg); return 1;
    case RT_OPT_FAIR: *kind = 1; return 1;
    case RT_OPT_READ: *kind = 2; return 1;
    case RT_OPT_WRITE: *kind = 3; return 1;
    default: return 0;
  }
}
