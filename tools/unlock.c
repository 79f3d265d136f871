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

/* What unlock's command line says. */
typedef struct unlock_args {
  int force;
  int kind; /* an index into rt_kind_names */
  long long connect_ms;
} unlock_args;

/* Takes one of unlock's options into g and arg, an unlock_args. */
static int unlock_take_option(rt_global *g, int opt, const char *longname,
                              void *arg) {
  unlock_args *a = arg;
  (void)longname;
  if (opt == 'f' || opt == OPT_FORCE) {
    a->force = 1;
    return RT_TAKE_OK;
  }
  if (opt == OPT_CONNECT) {
    if (rt_parse_ll(optarg, 0, (long long)1 << 40, &a->connect_ms) == 0)
      return RT_TAKE_OK;
    fprintf(stderr, "rlock unlock: bad --connect-timeout\n");
    return RT_TAKE_BAD;
  }
  if (rt_kind_option(opt, optarg, &a->kind)) {
    if (a->kind >= 0) return RT_TAKE_OK;
    fprintf(stderr, "rlock unlock: bad --kind (lock, fair, read or "
                    "write)\n");
    return RT_TAKE_BAD;
  }
  int taken = rt_global_option(g, opt, optarg);
  if (taken == RT_TAKE_BAD) fprintf(stderr, "rlock unlock: bad --masters\n");
  return taken;
}

static const struct option unlock_long_options[] = {
    {"force", no_argument, NULL, OPT_FORCE},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT},
    RT_KIND_LONG_OPTIONS,
    RT_GLOBAL_LONG_OPTIONS,
    RT_HELP_LONG_OPTION_AND_END};

int rt_cmd_unlock(rt_global *g, int argc, char **argv) {
  unlock_args a = {.connect_ms = 2000};
  rt_cmdline line = {"fh", unlock_long_options, unlock_usage,
                     unlock_take_option, &a, 1, 1};
  int rc = rt_parse_options(g, argc, argv, &line);
  if (rc >= 0) return rc;
  if (!a.force) {
    fprintf(stderr, "rlock unlock: only --force is supported: a lock is "
                    "released by the process that holds it\n");
    return RT_EXIT_USAGE;
  }
  rlock_client *client;
  rc = rt_open_client(g, 0, 0, a.connect_ms, &client);
  if (rc != 0) return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
  rlock *lock;
  rc = rt_get_handle(client, a.kind, argv[optind], &lock);
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
