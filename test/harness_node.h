/*
 * Servers of the topology harnesses (harness_cluster.h, harness_sentinel.h)
 * with the arguments harness.c does not give: cluster nodes, sentinels,
 * replicas with a masterauth. harness.c's rt_redis_start takes no extra
 * arguments, and it must not be edited here, so these functions start the
 * server through test/topology_node.sh, which harness.c runs in place of
 * the server program for the length of one start (rt_redis_opts.server)
 * and which execs the server program (rt_server_program()) with the extra
 * arguments. The server
 * is then an ordinary rt_redis: rt_redis_stop, _kill, _pause, _resume and
 * _cmd work on it, and the runner cleans it up like any other.
 *
 * These change the process environment for the length of a start, so,
 * like every start in harness.h, they belong on the test's main thread,
 * and no other thread may read or change the environment meanwhile.
 */
#ifndef RT_HARNESS_NODE_H
#define RT_HARNESS_NODE_H

#include "harness.h"

/*
 * Starts a server like rt_redis_start, with args (blank-separated, no
 * quoting; NULL for none) appended to harness.c's arguments so that they
 * win. With sentinel, the server runs in Sentinel mode on a configuration
 * file of its own, DIR/sentinel.conf, that starts empty. 0 or -1.
 */
int rt_node_start(rt_redis *r, const char *password, int sentinel,
                  const char *args);
/* rt_redis_restart with the same extra arguments and mode. 0 or -1. */
int rt_node_restart(rt_redis *r, int sentinel, const char *args);

/*
 * Runs a program (argv[0] looked up in PATH) with stdin on /dev/null and
 * stdout and stderr appended to the file log, in a process group of its
 * own, killed with its group if it has not exited after timeout_ms.
 * Returns its exit status, or -1 if it could not run or was killed.
 */
int rt_run(const char *const *argv, const char *log, int timeout_ms);

/* Prints a line naming what failed, then the last bytes (at most 2000) of
 * a file, to stderr. */
void rt_print_tail(const char *what, const char *path);

#endif /* RT_HARNESS_NODE_H */
