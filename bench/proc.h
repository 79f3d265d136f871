/*
 * The process's own resource use, read from outside the library: resident
 * memory (/proc/self/statm), heap in use (glibc's mallinfo2, every arena
 * and mmapped chunk), and CPU time per thread (/proc/self/task/<tid>/
 * schedstat, in ns). The watchdog benchmark uses them to say what held
 * locks cost without instrumenting rlock.
 */
#ifndef BENCH_PROC_H
#define BENCH_PROC_H

#include <dirent.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Resident set size in bytes, after giving free heap pages back, so that
 * memory freed by finished requests is not counted. */
static inline uint64_t bench_rss_bytes(void) {
  malloc_trim(0);
  unsigned long size = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
  fclose(f);
  return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Bytes handed out by malloc and not yet freed, all arenas. */
static inline uint64_t bench_heap_bytes(void) {
  struct mallinfo2 mi = mallinfo2();
  return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
}

/* CPU time of the threads of this process: *main_ns for the main thread,
 * *others_ns summed over all others (rlock's loop thread, when the program
 * starts no thread of its own); returns how many others there are. */
static inline int bench_thread_cpu(uint64_t *main_ns, uint64_t *others_ns) {
  *main_ns = *others_ns = 0;
  int others = 0;
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  long self = (long)getpid();
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300];
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (f == NULL) continue;
    if (fscanf(f, "%llu", &ns) != 1) ns = 0;
    fclose(f);
    if (atol(e->d_name) == self) {
      *main_ns = ns;
    } else {
      *others_ns += ns;
      others++;
    }
  }
  closedir(d);
  return others;
}

/* User and system CPU time, in ns, summed over every thread but main,
 * from /proc/self/task/<tid>/stat (clock ticks: 10 ms steps), so that a
 * window's loop time can be split into rlock's own work and the kernel's
 * (system calls, wake-ups). */
static inline void bench_others_user_sys(uint64_t *user_ns, uint64_t *sys_ns) {
  *user_ns = *sys_ns = 0;
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return;
  long self = (long)getpid(), tick = sysconf(_SC_CLK_TCK);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || atol(e->d_name) == self) continue;
    char path[300], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields 14 and 15, counted after the ')' that ends the name. */
    char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (p != NULL &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) == 2) {
      *user_ns += ut * (1000000000ull / (unsigned long long)tick);
      *sys_ns += st * (1000000000ull / (unsigned long long)tick);
    }
  }
  closedir(d);
}

#endif
