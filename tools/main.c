/*
 * rlock(1): to distributed locks what flock(1) is to local ones. This file
 * owns the command line before the subcommand: the global options, the
 * help and version, and the dispatch to the subcommand's own file (exec.c,
 * unlock.c, status.c, scan.c).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock.h"
#include "tool.h"

static const char main_usage[] =
    "usage: rlock [--masters URL,...] [--prefix P] COMMAND [ARGS...]\n"
    "Distributed locks over Redis (the rlock library), as flock(1) for\n"
    "local ones.\n"
    "Commands:\n"
    "  exec [options] NAME [--] COMMAND [ARGS...]  run COMMAND under the lock\n"
    "                                              (--fair, --read, --write:\n"
    "                                              the lock's other kinds)\n"
    "  exec --sem NAME:K [--] COMMAND [ARGS...]    ... under a semaphore's\n"
    "                                              permit: at most K at once\n"
    "  status [--json] NAME                        show who holds NAME, as\n"
    "                                              every kind, semaphore and\n"
    "                                              latch\n"
    "  unlock --force NAME                         delete NAME's lock\n"
    "  scan [--json] [--pattern P] [--lease-over SECONDS]  find leaked locks\n"
    "Global options (also accepted after COMMAND):\n"
    "  --masters URL,...  masters, each host:port,\n"
    "                     redis://[[user]:password@]host[:port][/db],\n"
    "                     rediss://... (TLS),\n"
    "                     unix://[[user]:password@]/path[?db=N],\n"
    "                     redis-cluster://[[user]:password@]host[:port]\n"
    "                     [?seed=host[:port]&...] (a Redis Cluster) or\n"
    "                     redis-sentinel://[[user]:password@]host[:port]/\n"
    "                     SERVICE[?sentinel=host[:port]&...] (the master\n"
    "                     a Sentinel group names; rediss-cluster:// and\n"
    "                     rediss-sentinel:// over TLS; default:\n"
    "                     $RLOCK_MASTERS, else " RT_DEFAULT_MASTERS ")\n"
    "  --prefix P         key prefix (default " RT_DEFAULT_PREFIX ")\n"
    RT_TLS_USAGE
    "'rlock COMMAND --help' shows a command's options; see rlock(1).\n";

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"masters", required_argument, NULL, RT_OPT_MASTERS},
      {"prefix", required_argument, NULL, RT_OPT_PREFIX},
      RT_TLS_LONG_OPTIONS,
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  rt_global g = {.prefix = RT_DEFAULT_PREFIX};
  rt_tls_from_env(&g);
  const char *env = getenv("RLOCK_MASTERS");
  if (rt_set_masters(&g, env && *env ? env : RT_DEFAULT_MASTERS) != 0) {
    fprintf(stderr, "rlock: bad RLOCK_MASTERS (a comma-separated list of "
                    "master URLs, none empty)\n");
    return RT_EXIT_USAGE;
  }
  int c, rc = RT_EXIT_USAGE;
  while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
    switch (c) {
    case RT_OPT_MASTERS:
      if (rt_set_masters(&g, optarg) != 0) {
        fprintf(stderr, "rlock: bad --masters (a comma-separated list of "
                        "master URLs, none empty)\n");
        goto out;
      }
      break;
    case RT_OPT_PREFIX: g.prefix = optarg; break;
    case 'h':
      fputs(main_usage, stdout);
      rc = RT_EXIT_OK;
      goto out;
    case 'V':
      printf("rlock %d.%d.%d\n", RLOCK_VERSION_MAJOR, RLOCK_VERSION_MINOR,
             RLOCK_VERSION_PATCH);
      rc = RT_EXIT_OK;
      goto out;
    default:
      if (rt_tls_option(&g, c, optarg)) break;
      fputs(main_usage, stderr);
      goto out;
    }
  }
  if (optind >= argc) {
    fputs(main_usage, stderr);
    goto out;
  }
  const char *cmd = argv[optind];
  int sub_argc = argc - optind;
  char **sub_argv = argv + optind;
  if (strcmp(cmd, "exec") == 0) {
    rc = rt_cmd_exec(&g, sub_argc, sub_argv);
  } else if (strcmp(cmd, "unlock") == 0) {
    rc = rt_cmd_unlock(&g, sub_argc, sub_argv);
  } else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "scan") == 0) {
    /* A master that hangs up must give an error, not kill with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    rc = cmd[1] == 't' ? rt_cmd_status(&g, sub_argc, sub_argv)
                       : rt_cmd_scan(&g, sub_argc, sub_argv);
  } else if (strcmp(cmd, "help") == 0) {
    fputs(main_usage, stdout);
    rc = RT_EXIT_OK;
  } else {
    fprintf(stderr, "rlock: unknown command '%s'\n", cmd);
    fputs(main_usage, stderr);
  }
out:
  rt_global_free(&g);
  return rc;
}
