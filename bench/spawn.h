/*
 * Runs a floor program (bench_floor, bench_floor_handoff) as a child
 * process, so that the raw baseline is measured in a process where no
 * rlock thread is alive. The child is found beside the running program and
 * writes its JSON lines to the same standard output. While it runs, the
 * parent's rlock client is idle (its loop thread sleeps in epoll: rlock
 * arms no timer of its own while nothing is in flight or held).
 */
#ifndef BENCH_SPAWN_H
#define BENCH_SPAWN_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs PROG (a file beside this program) with argv (argv[0] is replaced by
 * its path); returns its exit status, or -1. */
static inline int bench_spawn(const char *prog, char **argv) {
  char self[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  snprintf(path, sizeof path, "%s/%s", dirname(self), prog);
  argv[0] = path;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execv(path, argv);
    perror(path);
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
