/*
 * The glue between harness.c and test/topology_node.sh: see harness_node.h
 * for why the topology harnesses start their servers through a script.
 * Also a bounded way to run a helper program (redis-cli --cluster create).
 */
#include "harness_node.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RT_TOPO_NODE_SH
#define RT_TOPO_NODE_SH "test/topology_node.sh"
#endif

/* The script learns what harness.c does not pass from the environment of
 * the one server it starts (the slot's extra entries, kept for restarts),
 * and the slot runs the script instead of the binary: the process's own
 * environment is never changed, since other threads (a client's loop
 * thread calling getenv) run while a test starts a node. */
static int start_through_script(rt_redis *r, const char *password,
                                int sentinel, const char *args, int restart) {
  const char *script = getenv("RT_TOPO_NODE_SH");
  if (!script || !*script) script = RT_TOPO_NODE_SH;
  if (access(script, X_OK) != 0) {
    fprintf(stderr, "rt_node: %s is not an executable script (set "
                    "RT_TOPO_NODE_SH)\n", script);
    return -1;
  }
  /* The server program harness.c would run is the one the script runs. */
  char server[512], role[32], more[512];
  snprintf(server, sizeof server, "RT_TOPO_SERVER=%s", rt_server_program());
  snprintf(role, sizeof role, "RT_TOPO_SENTINEL=%d", sentinel ? 1 : 0);
  if ((size_t)snprintf(more, sizeof more, "RT_TOPO_ARGS=%s",
                       args ? args : "") >= sizeof more) {
    fprintf(stderr, "rt_node: the arguments %s are too long\n", args);
    return -1;
  }
  const char *env[] = {server, role, more, NULL};
  if (restart) return rt_redis_restart_ex(r, env);
  rt_redis_opts o;
  rt_redis_opts_default(&o, password);
  o.env = env;
  o.server = script;
  return rt_redis_start_opts(r, &o);
}

int rt_node_start(rt_redis *r, const char *password, int sentinel,
                  const char *args) {
  return start_through_script(r, password, sentinel, args, 0);
}

int rt_node_restart(rt_redis *r, int sentinel, const char *args) {
  return start_through_script(r, NULL, sentinel, args, 1);
}

int rt_run(const char *const *argv, const char *log, int timeout_ms) {
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    /* The child: async-signal-safe calls only, as in harness.c. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in < 0 || out < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    if (close_range(3, ~0U, 0) != 0)
      for (int fd = 3; fd < 4096; fd++) close(fd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  setpgid(pid, pid);
  int st;
  for (uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;; rt_sleep_ms(20)) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (w < 0 && errno != EINTR) return -1;
    if (rt_now_ms() > end) break;
  }
  fprintf(stderr, "rt_run: %s did not finish in %d ms; killed\n", argv[0],
          timeout_ms);
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) continue;
  return -1;
}

void rt_print_tail(const char *what, const char *path) {
  char buf[2000];
  ssize_t n = 0;
  int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    off_t end = lseek(fd, 0, SEEK_END);
    n = pread(fd, buf, sizeof buf, end > (off_t)sizeof buf
                                       ? end - (off_t)sizeof buf : 0);
    close(fd);
  }
  fprintf(stderr, "%s; end of %s:\n%.*s\n", what, path, n > 0 ? (int)n : 0,
          buf);
}
