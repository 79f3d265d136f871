/*
 * The namespace and the rules of netns.h. The rules in force are kept
 * here, and every change rewrites the harness's chain whole in one nft
 * transaction ("flush chain" and the rules, read by nft -f from a pipe),
 * so that a heal never leaves half a cut behind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CUTS 64
#define TABLE "rt_net"

typedef struct cut {
  int id; /* 0: free */
  char addr[32];
  int port;
  int dir;
} cut;

static cut cuts[MAX_CUTS];
static int next_id = 1;

/* Runs nft -f - with script on its stdin; its messages go to our stderr.
 * 0 when it exited 0. quiet: stderr to /dev/null (probing). */
static int run_nft(const char *script, int quiet) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(p[0], 0);
    if (quiet) {
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, 2);
    }
    execlp("nft", "nft", "-f", "-", (char *)NULL);
    execl("/usr/sbin/nft", "nft", "-f", "-", (char *)NULL);
    _exit(127);
  }
  close(p[0]);
  /* A failed exec closes the pipe: ignore SIGPIPE for the write. */
  struct sigaction ign = {.sa_handler = SIG_IGN}, old;
  sigaction(SIGPIPE, &ign, &old);
  size_t len = strlen(script), off = 0;
  while (off < len) {
    ssize_t n = write(p[1], script + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += (size_t)n;
  }
  close(p[1]);
  sigaction(SIGPIPE, &old, NULL);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int lo_up(void) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  close(fd);
  return rc;
}

int rt_netns_enter(char *why, size_t cap) {
  if (unshare(CLONE_NEWNET) != 0) {
    snprintf(why, cap, "cannot make a network namespace: unshare: %s%s",
             strerror(errno),
             errno == EPERM ? " (the test needs root, as CI runs it)" : "");
    return -1;
  }
  if (lo_up() != 0) {
    snprintf(why, cap, "cannot bring the namespace's loopback up: %s",
             strerror(errno));
    return -1;
  }
  static const char table[] =
      "table inet " TABLE " {\n"
      "  chain input {\n"
      "    type filter hook input priority 0; policy accept;\n"
      "  }\n"
      "}\n";
  if (run_nft(table, 1) != 0) {
    snprintf(why, cap,
             "nft cannot make a table in the namespace (is the nftables "
             "package installed and nf_tables in the kernel?)");
    return -1;
  }
  return 0;
}

int rt_netns_skip(const char *name, const char *why) {
  printf("SKIP: %s (%s)\n", name, why);
  fflush(stdout);
  return 77;
}

const char *rt_net_addr(int k, char *buf, size_t cap) {
  snprintf(buf, cap, "127.0.0.%d", 10 + k);
  return buf;
}

/* Rewrites the chain with the cuts in force. */
static int apply(void) {
  char script[MAX_CUTS * 2 * 160 + 128];
  size_t n = (size_t)snprintf(script, sizeof script,
                              "flush chain inet " TABLE " input\n");
  for (int i = 0; i < MAX_CUTS; i++) {
    const cut *c = &cuts[i];
    if (c->id == 0) continue;
    char req[64] = "", rep[64] = "";
    if (c->addr[0]) {
      snprintf(req, sizeof req, "ip daddr %s ", c->addr);
      snprintf(rep, sizeof rep, "ip saddr %s ", c->addr);
    }
    if (c->dir & RT_NET_REQUESTS)
      n += (size_t)snprintf(script + n, sizeof script - n,
                            "add rule inet " TABLE " input %stcp dport %d "
                            "drop\n", req, c->port);
    if (c->dir & RT_NET_REPLIES)
      n += (size_t)snprintf(script + n, sizeof script - n,
                            "add rule inet " TABLE " input %stcp sport %d "
                            "drop\n", rep, c->port);
  }
  return run_nft(script, 0);
}

int rt_net_cut(const char *addr, int port, int dir) {
  for (int i = 0; i < MAX_CUTS; i++) {
    if (cuts[i].id != 0) continue;
    cuts[i] = (cut){.id = next_id++, .port = port, .dir = dir};
    if (addr) snprintf(cuts[i].addr, sizeof cuts[i].addr, "%s", addr);
    if (apply() != 0) {
      cuts[i].id = 0;
      return -1;
    }
    return cuts[i].id;
  }
  return -1;
}

int rt_net_heal(int id) {
  for (int i = 0; i < MAX_CUTS; i++)
    if (cuts[i].id == id && id > 0) {
      cuts[i].id = 0;
      return apply();
    }
  return -1;
}

int rt_net_heal_all(void) {
  for (int i = 0; i < MAX_CUTS; i++) cuts[i].id = 0;
  return apply();
}

int rt_net_cuts(void) {
  int n = 0;
  for (int i = 0; i < MAX_CUTS; i++) n += cuts[i].id != 0;
  return n;
}
