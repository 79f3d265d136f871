/*
 * The test proxy; see proxy.h. One thread polls the listening socket and
 * every connection pair every few ms; modes are atomics the test sets
 * from its own thread. Delayed chunks wait in a FIFO per pair and
 * direction with the time they may go, so order is kept.
 */
#include "proxy.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 32

typedef struct chunk {
  struct chunk *next;
  uint64_t due_ms;
  size_t len, off;
  char data[];
} chunk;

typedef struct pair {
  int cfd, sfd;       /* -1 when unused */
  int cdone;          /* the client closed: forward what is queued, then
                         close, as TCP would deliver it */
  chunk *head, *tail; /* client to server, waiting for their time */
  chunk *rhead, *rtail; /* server to client (replies), the same */
} pair;

struct rt_proxy {
  int lfd;
  int target_port;
  char url[32];
  pthread_t thread;
  atomic_int stop;
  atomic_int cut;
  atomic_int cut_gen; /* bumped by every rt_proxy_cut */
  atomic_int seen_gen; /* the cut_gen the thread has acted on */
  atomic_int delay_ms;
  atomic_int reply_delay_ms;
  pair pairs[MAX_PAIRS];
};

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void pair_close(pair *pr) {
  if (pr->cfd >= 0) close(pr->cfd);
  if (pr->sfd >= 0) close(pr->sfd);
  pr->cfd = pr->sfd = -1;
  pr->cdone = 0;
  while (pr->head) {
    chunk *c = pr->head;
    pr->head = c->next;
    free(c);
  }
  pr->tail = NULL;
  while (pr->rhead) {
    chunk *c = pr->rhead;
    pr->rhead = c->next;
    free(c);
  }
  pr->rtail = NULL;
}

static int connect_target(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

static void accept_one(rt_proxy *p) {
  int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return;
  if (atomic_load(&p->cut)) {
    close(fd);
    return;
  }
  for (int i = 0; i < MAX_PAIRS; i++) {
    pair *pr = &p->pairs[i];
    if (pr->cfd >= 0) continue;
    pr->sfd = connect_target(p->target_port);
    if (pr->sfd < 0) break;
    pr->cfd = fd;
    return;
  }
  close(fd);
}

/* Reads what fd has; 0 on EOF or error. */
static ssize_t read_some(int fd, char *buf, size_t size) {
  ssize_t n = read(fd, buf, size);
  return n > 0 ? n : 0;
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Queues a copy of buf[0..len) to go at due_ms. 0, or -1 out of memory. */
static int enqueue(chunk **head, chunk **tail, const char *buf, size_t len,
                   uint64_t due_ms) {
  chunk *c = malloc(sizeof *c + len);
  if (c == NULL) return -1;
  c->next = NULL;
  c->due_ms = due_ms;
  c->len = len;
  c->off = 0;
  memcpy(c->data, buf, len);
  if (*tail)
    (*tail)->next = c;
  else
    *head = c;
  *tail = c;
  return 0;
}

/* Writes the chunks of one FIFO whose time has come to fd; -1 if that
 * failed. */
static int flush_fifo(chunk **head, chunk **tail, int fd, uint64_t now) {
  while (*head && (*head)->due_ms <= now) {
    chunk *c = *head;
    if (write_all(fd, c->data + c->off, c->len - c->off) != 0) return -1;
    *head = c->next;
    if (*head == NULL) *tail = NULL;
    free(c);
  }
  return 0;
}

/* Sends the chunks whose time has come; -1 if either side failed. */
static int flush_due(pair *pr, uint64_t now) {
  if (flush_fifo(&pr->head, &pr->tail, pr->sfd, now) != 0) return -1;
  if (pr->cdone) return 0;
  return flush_fifo(&pr->rhead, &pr->rtail, pr->cfd, now);
}

static void *run(void *arg) {
  rt_proxy *p = arg;
  char buf[65536];
  while (!atomic_load(&p->stop)) {
    int gen = atomic_load(&p->cut_gen);
    if (gen != atomic_load(&p->seen_gen)) {
      for (int i = 0; i < MAX_PAIRS; i++) pair_close(&p->pairs[i]);
      atomic_store(&p->seen_gen, gen);
    }
    struct pollfd fds[1 + 2 * MAX_PAIRS];
    int map[1 + 2 * MAX_PAIRS];
    int n = 0;
    fds[n].fd = p->lfd;
    fds[n].events = POLLIN;
    map[n++] = -1;
    for (int i = 0; i < MAX_PAIRS; i++) {
      if (p->pairs[i].cfd < 0) continue;
      fds[n].fd = p->pairs[i].cfd;
      fds[n].events = p->pairs[i].cdone ? 0 : POLLIN;
      map[n++] = i;
      fds[n].fd = p->pairs[i].sfd;
      fds[n].events = POLLIN;
      map[n++] = i;
    }
    poll(fds, (nfds_t)n, 2);
    uint64_t now = now_ms();
    if (fds[0].revents & POLLIN) accept_one(p);
    for (int k = 1; k < n; k++) {
      pair *pr = &p->pairs[map[k]];
      if (pr->cfd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      if (fds[k].fd == pr->cfd) {
        if (pr->cdone) continue;
        ssize_t got = read_some(pr->cfd, buf, sizeof buf);
        if (got == 0) {
          pr->cdone = 1;
          continue;
        }
        if (enqueue(&pr->head, &pr->tail, buf, (size_t)got,
                    now + (uint64_t)atomic_load(&p->delay_ms)) != 0)
          pair_close(pr);
      } else {
        ssize_t got = read_some(pr->sfd, buf, sizeof buf);
        int rd = atomic_load(&p->reply_delay_ms);
        if (got == 0) {
          pair_close(pr);
        } else if (rd > 0 || pr->rhead != NULL) {
          /* Behind replies still held, so that order is kept. */
          if (enqueue(&pr->rhead, &pr->rtail, buf, (size_t)got,
                      now + (uint64_t)rd) != 0)
            pair_close(pr);
        } else if (!pr->cdone && write_all(pr->cfd, buf, (size_t)got)) {
          pair_close(pr);
        }
      }
    }
    for (int i = 0; i < MAX_PAIRS; i++) {
      pair *pr = &p->pairs[i];
      if (pr->cfd < 0) continue;
      if (flush_due(pr, now) != 0 || (pr->cdone && pr->head == NULL))
        pair_close(pr);
    }
  }
  for (int i = 0; i < MAX_PAIRS; i++) pair_close(&p->pairs[i]);
  return NULL;
}

rt_proxy *rt_proxy_start(int target_port) {
  rt_proxy *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  for (int i = 0; i < MAX_PAIRS; i++) p->pairs[i].cfd = p->pairs[i].sfd = -1;
  p->target_port = target_port;
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof a;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(p->lfd, 64) != 0 ||
      getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0) {
    if (p->lfd >= 0) close(p->lfd);
    free(p);
    return NULL;
  }
  snprintf(p->url, sizeof p->url, "127.0.0.1:%d", ntohs(a.sin_port));
  if (pthread_create(&p->thread, NULL, run, p) != 0) {
    close(p->lfd);
    free(p);
    return NULL;
  }
  return p;
}

const char *rt_proxy_url(const rt_proxy *p) { return p->url; }

void rt_proxy_cut(rt_proxy *p) {
  atomic_store(&p->cut, 1);
  int gen = atomic_fetch_add(&p->cut_gen, 1) + 1;
  /* Returns once the connections are closed. */
  while (atomic_load(&p->seen_gen) != gen) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

void rt_proxy_pass(rt_proxy *p) {
  atomic_store(&p->delay_ms, 0);
  atomic_store(&p->reply_delay_ms, 0);
  atomic_store(&p->cut, 0);
}

void rt_proxy_delay(rt_proxy *p, int ms) { atomic_store(&p->delay_ms, ms); }

void rt_proxy_reply_delay(rt_proxy *p, int ms) {
  atomic_store(&p->reply_delay_ms, ms);
}

void rt_proxy_stop(rt_proxy *p) {
  if (p == NULL) return;
  atomic_store(&p->stop, 1);
  pthread_join(p->thread, NULL);
  close(p->lfd);
  free(p);
}
