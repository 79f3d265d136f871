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
    "  elect [options] NAME [--value V] [--] COMMAND [ARGS...]\n"
    "                                              run COMMAND while leader\n"
    "  observe [--json] NAME                       print the election's\n"
    "                                              leader at every change\n"
    "  elect [options] NAME [--value V] [--] COMMAND [ARGS...]\n"
    "                                              run COMMAND while leader\n"
    "  observe [--json] NAME                       print an election's\n"
    "                                              leader at every change\n"
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

/* Runs the subcommand argv[0] with the global options g. Returns the
 * exit code. */
static int run_subcommand(rt_global *g, int argc, char **argv) {
  const char *cmd = argv[0];
  if (strcmp(cmd, "exec") == 0 || strcmp(cmd, "elect") == 0)
    return rt_cmd_exec(g, argc, argv);
  if (strcmp(cmd, "observe") == 0) return rt_cmd_observe(g, argc, argv);
  if (strcmp(cmd, "unlock") == 0) return rt_cmd_unlock(g, argc, argv);
  if (strcmp(cmd, "status") == 0 || strcmp(cmd, "scan") == 0) {
    /* A master that hangs up must give an error, not kill with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    return cmd[1] == 't' ? rt_cmd_status(g, argc, argv)
                         : rt_cmd_scan(g, argc, argv);
  }
  if (strcmp(cmd, "help") == 0) {
    fputs(main_usage, stdout);
    return RT_EXIT_OK;
  }
  fprintf(stderr, "rlock: unknown command '%s'\n", cmd);
  fputs(main_usage, stderr);
  return RT_EXIT_USAGE;
}

/* Takes one of the global options before the subcommand into g, or
 * answers --version. */
static int main_take_option(rt_global *g, int opt, const char *longname,
                            void *arg) {
  (void)longname;
  (void)arg;
  if (opt == 'V') {
    printf("rlock %d.%d.%d\n", RLOCK_VERSION_MAJOR, RLOCK_VERSION_MINOR,
           RLOCK_VERSION_PATCH);
    return RT_TAKE_DONE;
  }
  int taken = rt_global_option(g, opt, optarg);
  if (taken == RT_TAKE_BAD)
    fprintf(stderr, "rlock: bad --masters (a comma-separated list of "
                    "master URLs, none empty)\n");
  return taken;
}

static const struct option main_long_options[] = {
    {"version", no_argument, NULL, 'V'},
    RT_GLOBAL_LONG_OPTIONS,
    RT_HELP_LONG_OPTION_AND_END};

int main(int argc, char **argv) {
  rt_global g = {.prefix = RT_DEFAULT_PREFIX};
  rt_tls_from_env(&g);
  const char *env = getenv("RLOCK_MASTERS");
  if (rt_set_masters(&g, env && *env ? env : RT_DEFAULT_MASTERS) != 0) {
    fprintf(stderr, "rlock: bad RLOCK_MASTERS (a comma-separated list of "
                    "master URLs, none empty)\n");
    return RT_EXIT_USAGE;
  }
  /* '+': stop at the subcommand, whose options are its own. */
  rt_cmdline line = {"+hV", main_long_options, main_usage, main_take_option,
                     NULL, 1, INT_MAX};
  int rc = rt_parse_options(&g, argc, argv, &line);
  if (rc < 0) rc = run_subcommand(&g, argc - optind, argv + optind);
  rt_global_free(&g);
  return rc;
}
