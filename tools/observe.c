/*
 * The `observe` subcommand: prints the leader of an election (its value
 * and fencing token) once at start and at every change, until SIGINT or
 * SIGTERM. The changes come from rlock_observe on the library's loop
 * thread, which writes each line and flushes it; the main thread only
 * waits for the signal.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rlock.h"
#include "tool.h"

static const char observe_usage[] =
    "usage: rlock observe [--json] NAME\n"
    "Prints the leader of the election NAME, one line per change, until\n"
    "interrupted: 'leader TOKEN VALUE', or 'none TOKEN' when there is no\n"
    "leader (TOKEN then the last leader's, 0 if none was seen). With\n"
    "--json, one object per line: {\"leader\":true|false,\"token\":N,\n"
    "\"value\":\"...\",\"at_ms\":N} (at_ms: the wall clock).\n"
    "      --connect-timeout MS  as for every command\n";

enum { OPT_JSON = 256, OPT_CONNECT };

typedef struct observe_args {
  int json;
  long long connect_ms;
} observe_args;

static int observe_take_option(rt_global *g, int opt, const char *longname,
                               void *arg) {
  (void)longname;
  observe_args *a = arg;
  if (opt == OPT_JSON) {
    a->json = 1;
    return RT_TAKE_OK;
  }
  if (opt == OPT_CONNECT) {
    if (rt_parse_ll(optarg, 0, (long long)1 << 40, &a->connect_ms) == 0)
      return RT_TAKE_OK;
    fprintf(stderr, "rlock observe: bad --connect-timeout\n");
    return RT_TAKE_BAD;
  }
  int taken = rt_global_option(g, opt, optarg);
  if (taken == RT_TAKE_BAD) fprintf(stderr, "rlock observe: bad --masters\n");
  return taken;
}

static const struct option observe_long_options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT},
    RT_GLOBAL_LONG_OPTIONS,
    RT_HELP_LONG_OPTION_AND_END};

/* On the loop thread: one line per change. */
static void on_change(rlock_election *e, const char *value, uint64_t token,
                      void *arg) {
  (void)e;
  const observe_args *a = arg;
  if (a->json) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("{\"leader\":%s,\"token\":%" PRIu64 ",\"value\":",
           value ? "true" : "false", token);
    rt_json_cstr(stdout, value ? value : "");
    printf(",\"at_ms\":%lld}\n",
           (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  } else if (value != NULL) {
    printf("leader %" PRIu64 " ", token);
    rt_human_str(stdout, value, strlen(value)); /* one line, whatever it is */
    putchar('\n');
  } else {
    printf("none %" PRIu64 "\n", token);
  }
  fflush(stdout);
}

int rt_cmd_observe(rt_global *g, int argc, char **argv) {
  observe_args a = {.connect_ms = 2000};
  rt_cmdline line = {"h", observe_long_options, observe_usage,
                     observe_take_option, &a, 1, 1};
  int rc = rt_parse_options(g, argc, argv, &line);
  if (rc >= 0) return rc;
  /* The signals are waited for, not handled. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  rlock_client *client;
  rc = rt_open_client(g, 0, 0, a.connect_ms, &client);
  if (rc != 0) return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
  rlock_election *e;
  rc = rlock_election_get(client, argv[optind], &e);
  if (rc == 0) rc = rlock_observe(e, on_change, &a);
  if (rc != 0) {
    rt_print_lib_error("cannot observe", client, rc);
    rlock_client_close(client);
    return rc == RLOCK_EINVAL ? RT_EXIT_USAGE : RT_EXIT_OSERR;
  }
  int sig = 0;
  sigwait(&set, &sig);
  rlock_election_free(e);
  rlock_client_close(client);
  return RT_EXIT_OK;
}
