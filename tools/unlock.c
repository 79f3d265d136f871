/*
 * The `unlock --force` subcommand: deletes a lock whoever holds it, through
 * the library (rlock_force_unlock), so that the fair lock's next waiter is
 * told as a library user's force unlock would tell it.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "rlock.h"
#include "tool.h"

enum { OPT_FORCE = 256, OPT_CONNECT };

static const char unlock_usage[] =
    "usage: rlock unlock --force [--kind KIND] [--connect-timeout MS]\n"
    "                    [--masters URL,...] [--prefix P]\n"
    "                    [TLS options as for every command] NAME\n"
    "Deletes the lock NAME whoever holds it (rlock_force_unlock). --kind\n"
    "fair also tells the fair lock's next waiter; read deletes every read\n"
    "hold of NAME's read-write lock, write its write hold (--fair, --read,\n"
    "--write are short for those). The holder\n"
    "is not told until its watchdog or its unlock notices (exit 75 for an\n"
    "rlock exec holder). Exit 0 when done, 1 if no quorum could be reached,\n"
    "64 on bad usage (including a missing --force).\n";

int rt_cmd_unlock(rt_global *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"force", no_argument, NULL, OPT_FORCE},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"masters", required_argument, NULL, RT_OPT_MASTERS},
      {"prefix", required_argument, NULL, RT_OPT_PREFIX},
      RT_KIND_LONG_OPTIONS,
      RT_TLS_LONG_OPTIONS,
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int force = 0, c, kind = 0;
  long long connect_ms = 2000;
  optind = 0; /* 0: glibc reinitializes, dropping the earlier "+" mode */
  while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
    switch (c) {
    case 'f':
    case OPT_FORCE: force = 1; break;
    case OPT_CONNECT:
      if (rt_parse_ll(optarg, 0, (long long)1 << 40, &connect_ms) != 0) {
        fprintf(stderr, "rlock unlock: bad --connect-timeout\n");
        return RT_EXIT_USAGE;
      }
      break;
    case RT_OPT_MASTERS:
      if (rt_set_masters(g, optarg) != 0) {
        fprintf(stderr, "rlock unlock: bad --masters\n");
        return RT_EXIT_USAGE;
      }
      break;
    case RT_OPT_PREFIX: g->prefix = optarg; break;
    case 'h': fputs(unlock_usage, stdout); return RT_EXIT_OK;
    default:
      if (rt_kind_option(c, optarg, &kind)) {
        if (kind < 0) {
          fprintf(stderr, "rlock unlock: bad --kind (lock, fair, read or "
                          "write)\n");
          return RT_EXIT_USAGE;
        }
        break;
      }
      if (rt_tls_option(g, c, optarg)) break;
      fputs(unlock_usage, stderr);
      return RT_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    fputs(unlock_usage, stderr);
    return RT_EXIT_USAGE;
  }
  if (!force) {
    fprintf(stderr, "rlock unlock: only --force is supported: a lock is "
                    "released by the process that holds it\n");
    return RT_EXIT_USAGE;
  }
  rlock_client *client;
  int rc = rt_open_client(g, 0, 0, connect_ms, &client);
  if (rc != 0) return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
  rlock *lock;
  rc = rt_get_handle(client, kind, argv[optind], &lock);
  if (rc != 0) {
    fprintf(stderr, "rlock: bad lock name '%s': %s\n", argv[optind],
            rlock_strerror(rc));
    rlock_client_close(client);
    return RT_EXIT_USAGE;
  }
  rc = rlock_force_unlock(lock);
  if (rc != 0) rt_print_lib_error("force unlock failed", client, rc);
  rlock_free(lock);
  rlock_client_close(client);
  return rc == 0 ? RT_EXIT_OK : RT_EXIT_CONFLICT;
}
