/*
 * Streams to masters; see stream.h for what one is and why it sends with
 * send(MSG_NOSIGNAL) rather than uv_write.
 *
 * A stream has up to three libuv handles: the socket (uv_tcp_t or
 * uv_pipe_t), a timer (the linger bound of a graceful close, or a
 * failure found inside rl_stream_open that must be reported later, never
 * from inside the call), and the write watcher, made only the first time
 * the kernel's buffer fills. It frees itself once all are closed.
 *
 * Over TLS, received ciphertext goes into the session and plaintext comes
 * out; staged plaintext is encrypted in one piece per flush (so a batch
 * of commands becomes few TLS records, not one per command) and the
 * session's ciphertext joins the bytes to send. The handshake runs on the
 * same reads and writes, before connected is reported.
 */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
  S_CONNECTING = 0, /* transport connect in progress */
  S_HANDSHAKING,    /* TLS handshake in progress */
  S_OPEN,           /* connected reported */
  S_FAILED,         /* failed reported; waiting for rl_stream_close */
  S_LINGER,         /* graceful close: sending the rest, then reading */
  S_CLOSED          /* handles closing */
};

/* Bytes in [off, len) of p. */
typedef struct rl_bytes {
  char *p;
  size_t off, len, cap;
} rl_bytes;

struct rl_stream {
  uv_loop_t *loop;
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } io;
  uv_connect_t connect_req;
  uv_timer_t timer;
  uv_poll_t wpoll;
  int wfd;        /* the duplicate wpoll watches, or -1 */
  unsigned peer_timeout_ms; /* rl_stream_set_peer_timeout; 0: none */
  int refused; /* the connect was refused (rl_stream_refused) */
  int wpoll_made; /* wpoll was initialized (and must be closed) */
  int handles;    /* open handles */
  int state;
  int shut_wr;    /* the write side is shut (graceful close) */
  int muted;      /* out of the loop's epoll set (rl_stream_mute) */
  unsigned muted_events;
  const rl_stream_handler *h;
  void *data;
  rl_tls *tls;
  rl_bytes out;   /* bytes to send (ciphertext over TLS) */
  rl_bytes stage; /* TLS: plaintext staged for the next flush */
  char deferred[160]; /* a failure found in rl_stream_open */
  char rbuf[65536];
};

static void finish_close(rl_stream *s);

/* --- byte buffers ---------------------------------------------------------- */

/* Makes room for n more bytes at the end. 0 or -1. */
static int bytes_reserve(rl_bytes *b, size_t n) {
  if (b->off > 0 && b->off == b->len) b->off = b->len = 0;
  if (b->cap - b->len >= n) return 0;
  if (b->off > 0) { /* move the unsent rest to the front first */
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->cap - b->len >= n) return 0;
  }
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len < n) cap *= 2;
  char *p = realloc(b->p, cap);
  if (p == NULL) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int bytes_append(rl_bytes *b, const char *data, size_t n) {
  if (bytes_reserve(b, n) != 0) return -1;
  memcpy(b->p + b->len, data, n);
  b->len += n;
  return 0;
}

static size_t bytes_size(const rl_bytes *b) { return b->len - b->off; }

/* --- failure and close ----------------------------------------------------- */

static int fd_of(const rl_stream *s) {
  uv_os_fd_t fd = -1;
  if (uv_fileno(&s->io.handle, &fd) != 0) return -1;
  return fd;
}

/* Ends the stream after an error: a failure to report while it is in
 * use, the end of a graceful close while it lingers. */
static void fail(rl_stream *s, const char *why, int tls) {
  if (s->state == S_LINGER) {
    finish_close(s);
    return;
  }
  if (s->state == S_FAILED || s->state == S_CLOSED) return;
  s->state = S_FAILED;
  uv_read_stop(&s->io.stream);
  if (s->wpoll_made) uv_poll_stop(&s->wpoll);
  s->h->failed(s, why, tls);
}

static void on_handle_closed(uv_handle_t *h) {
  rl_stream *s = h->data;
  if (--s->handles > 0) return;
  if (s->wfd >= 0) close(s->wfd);
  rl_tls_free(s->tls);
  free(s->out.p);
  free(s->stage.p);
  s->h->closed(s);
  free(s);
}

static void finish_close(rl_stream *s) {
  if (s->state == S_CLOSED) return;
  s->state = S_CLOSED;
  s->muted = 0; /* libuv takes the descriptor out of epoll itself */
  uv_close(&s->io.handle, on_handle_closed);
  uv_close((uv_handle_t *)&s->timer, on_handle_closed);
  if (s->wpoll_made) uv_close((uv_handle_t *)&s->wpoll, on_handle_closed);
}

/* --- sending ----------------------------------------------------------------- */

static void try_send(rl_stream *s);

static void on_writable(uv_poll_t *p, int status, int events) {
  (void)status, (void)events;
  try_send(p->data); /* an error shows in the send itself */
}

/* Waits for room in the kernel's buffer. 0 or -1. */
static int watch_writable(rl_stream *s, int fd) {
  if (!s->wpoll_made) {
    s->wfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (s->wfd < 0) return -1;
    if (uv_poll_init(s->loop, &s->wpoll, s->wfd) != 0) {
      close(s->wfd);
      s->wfd = -1;
      return -1;
    }
    s->wpoll.data = s;
    s->wpoll_made = 1;
    s->handles++;
  }
  return uv_poll_start(&s->wpoll, UV_WRITABLE, on_writable) == 0 ? 0 : -1;
}

/* Shuts the write side once a lingering stream has sent everything. */
static void maybe_shut(rl_stream *s, int fd) {
  if (s->state != S_LINGER || s->shut_wr || bytes_size(&s->out) > 0) return;
  s->shut_wr = 1;
  shutdown(fd, SHUT_WR);
}

/* A write failed on a TLS stream: the master may have said why before it
 * closed (a TLS alert: "certificate required", say), in bytes not read
 * yet. Reads them and fails with that reason if there is one; 1 if so.
 * Plaintext found on the way is dropped: the stream is failing anyway. */
static int explain_from_input(rl_stream *s, int fd) {
  for (int i = 0; i < 16; i++) {
    ssize_t n = recv(fd, s->rbuf, sizeof s->rbuf, MSG_DONTWAIT);
    if (n <= 0 || rl_tls_feed(s->tls, s->rbuf, (size_t)n) != 0) break;
  }
  long r;
  if (s->state == S_HANDSHAKING)
    r = rl_tls_handshake(s->tls);
  else
    while ((r = rl_tls_read(s->tls, s->rbuf, sizeof s->rbuf)) > 0) continue;
  if (r >= 0) return 0;
  fail(s, rl_tls_error(s->tls), 1);
  return 1;
}

__thread int rl_stream_off_loop;

static void try_send(rl_stream *s) {
  if (s->state != S_OPEN && s->state != S_HANDSHAKING &&
      s->state != S_LINGER)
    return;
  int fd = fd_of(s);
  while (bytes_size(&s->out) > 0) {
    ssize_t n = send(fd, s->out.p + s->out.off, bytes_size(&s->out),
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      s->out.off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if ((n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ||
        rl_stream_off_loop) {
      if (watch_writable(s, fd) != 0) fail(s, "write: cannot poll", 0);
      return;
    }
    char why[96];
    snprintf(why, sizeof why, "write: %s", strerror(n < 0 ? errno : EIO));
    if (s->tls != NULL && s->state != S_LINGER && explain_from_input(s, fd))
      return;
    fail(s, why, 0);
    return;
  }
  s->out.off = s->out.len = 0;
  if (s->wpoll_made) uv_poll_stop(&s->wpoll);
  maybe_shut(s, fd);
}

/* Moves the ciphertext the session produced to the bytes to send. */
static int take_tls_output(rl_stream *s) {
  for (;;) {
    if (bytes_reserve(&s->out, 16384) != 0) return -1;
    size_t n = rl_tls_take(s->tls, s->out.p + s->out.len,
                           s->out.cap - s->out.len);
    if (n == 0) return 0;
    s->out.len += n;
  }
}

static void send_tls_output(rl_stream *s) {
  if (take_tls_output(s) != 0) {
    fail(s, "TLS: out of memory", 1);
    return;
  }
  try_send(s);
}

int rl_stream_append(rl_stream *s, const char *data, size_t len) {
  if (s->state != S_OPEN) return RLOCK_ECLOSED;
  if (bytes_append(s->tls ? &s->stage : &s->out, data, len) != 0)
    return RLOCK_ENOMEM;
  return 0;
}

int rl_stream_flush(rl_stream *s) {
  if (s->state != S_OPEN) return RLOCK_ECLOSED;
  if (s->tls != NULL && bytes_size(&s->stage) > 0) {
    int rc = rl_tls_write(s->tls, s->stage.p + s->stage.off,
                          bytes_size(&s->stage));
    s->stage.off = s->stage.len = 0;
    if (rc != 0) {
      fail(s, rl_tls_error(s->tls), 1);
      return RLOCK_ECLOSED;
    }
    send_tls_output(s);
  } else {
    try_send(s);
  }
  return s->state == S_OPEN ? 0 : RLOCK_ECLOSED;
}

/* --- receiving --------------------------------------------------------------- */

static void tls_input(rl_stream *s, const char *data, size_t len) {
  if (rl_tls_feed(s->tls, data, len) != 0) {
    fail(s, rl_tls_error(s->tls), 1);
    return;
  }
  if (s->state == S_HANDSHAKING) {
    int r = rl_tls_handshake(s->tls);
    send_tls_output(s); /* the next flight, or the alert that explains */
    if (r < 0) fail(s, rl_tls_error(s->tls), 1);
    if (r <= 0 || s->state != S_HANDSHAKING) return;
    s->state = S_OPEN;
    s->h->connected(s);
  }
  while (s->state == S_OPEN || s->state == S_LINGER) {
    /* The receive buffer is free again: the ciphertext is in the
     * session. */
    long n = rl_tls_read(s->tls, s->rbuf, sizeof s->rbuf);
    if (n > 0) {
      if (s->state == S_OPEN) s->h->received(s, s->rbuf, (size_t)n);
      continue;
    }
    if (n < 0) {
      send_tls_output(s);
      fail(s, rl_tls_error(s->tls), 1);
      return;
    }
    break;
  }
  send_tls_output(s); /* post-handshake messages (key updates) */
}

static void input(rl_stream *s, const char *data, size_t len) {
  if (s->tls != NULL)
    tls_input(s, data, len);
  else if (s->state == S_OPEN)
    s->h->received(s, data, len);
}

static void on_eof_or_error(rl_stream *s, int err) {
  char why[96];
  if (err == UV_EOF)
    snprintf(why, sizeof why, "the master closed the connection");
  else
    snprintf(why, sizeof why, "read: %s", uv_strerror(err));
  fail(s, why, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  rl_stream *s = h->data;
  /* Over TLS the buffer is also where plaintext is decrypted to: the
   * ciphertext is copied into the session first. */
  *buf = uv_buf_init(s->rbuf, sizeof s->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  rl_stream *s = st->data;
  if (nread > 0) {
    /* Over TLS the data must leave rbuf before it is reused as output. */
    if (s->tls != NULL) {
      if (rl_tls_feed(s->tls, buf->base, (size_t)nread) != 0) {
        fail(s, rl_tls_error(s->tls), 1);
        return;
      }
      tls_input(s, NULL, 0);
    } else {
      input(s, buf->base, (size_t)nread);
    }
  } else if (nread < 0) {
    on_eof_or_error(s, (int)nread);
  }
}

void rl_stream_read_now(rl_stream *s) {
  for (int i = 0; i < 16; i++) {
    if (s->state != S_OPEN && s->state != S_HANDSHAKING) return;
    ssize_t n = recv(fd_of(s), s->rbuf, sizeof s->rbuf, MSG_DONTWAIT);
    if (n > 0) {
      on_read(&s->io.stream, n, &(uv_buf_t){.base = s->rbuf, .len = (size_t)n});
      continue;
    }
    if (n == 0) {
      on_eof_or_error(s, UV_EOF);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      on_eof_or_error(s, uv_translate_sys_error(errno));
    }
    return;
  }
}

int rl_stream_read_off_loop(rl_stream *s) {
  int got = 0;
  for (int i = 0; i < 16; i++) {
    if (s->state != S_OPEN || s->tls != NULL) return -1;
    ssize_t n = recv(fd_of(s), s->rbuf, sizeof s->rbuf, MSG_DONTWAIT);
    if (n > 0) {
      s->h->received(s, s->rbuf, (size_t)n);
      got = 1;
      if ((size_t)n < sizeof s->rbuf) return got;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return got;
    return -1; /* the end, or an error: the loop's read reports it */
  }
  return got;
}

void rl_stream_mute(rl_stream *s, int mute) {
  uv__io_t *w = &s->io.stream.io_watcher;
  if (mute == s->muted) return;
  if (mute) {
    /* Not registered with epoll (yet): nothing the loop could wake on
     * that the caller must hide. */
    if (s->state != S_OPEN || w->events == 0 || w->fd < 0) return;
    if (epoll_ctl(uv_backend_fd(s->loop), EPOLL_CTL_DEL, w->fd, NULL) != 0)
      return;
    s->muted = 1;
    s->muted_events = w->events;
    return;
  }
  s->muted = 0;
  /* libuv's view is unchanged (it registers pevents as events, data.fd
   * the descriptor): the same registration again. */
  struct epoll_event e;
  memset(&e, 0, sizeof e);
  e.events = s->muted_events;
  e.data.fd = w->fd;
  if (w->fd >= 0)
    epoll_ctl(uv_backend_fd(s->loop), EPOLL_CTL_ADD, w->fd, &e);
}

int rl_stream_fd(const rl_stream *s) {
  if (s->state != S_OPEN && s->state != S_HANDSHAKING) return -1;
  return fd_of(s);
}

/* --- connecting ---------------------------------------------------------------- */

/*
 * A peer that stops acknowledging: the network dropped it without a
 * reset (a partition, a host gone, a server killed behind a cut whose
 * FIN and RST were lost). TCP alone would keep such a connection for
 * many minutes, and after the network heals it resumes only at its next
 * retransmission, whose backoff doubles to two minutes: a master cut
 * off for a minute stayed unusable for up to another minute after the
 * heal. With TCP_USER_TIMEOUT the kernel ends the connection once data
 * has gone unacknowledged for ms, and keepalive probes (first after
 * about as long idle) do the same for a connection that sends nothing,
 * a subscriber's: the owner reconnects with its backoff. A stopped or
 * slow server still acknowledges at the TCP level, so this never cuts
 * a connection that is merely waiting for a reply. Best effort: a
 * system without these options keeps TCP's own behavior.
 */
static void set_peer_timeout(int fd, unsigned ms) {
  if (fd < 0 || ms == 0) return;
  int on = 1, idle = (int)(ms / 1000) > 0 ? (int)(ms / 1000) : 1, intvl = 1,
      cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

void rl_stream_set_peer_timeout(rl_stream *s, unsigned ms) {
  s->peer_timeout_ms = ms;
}

static void on_connect(uv_connect_t *req, int status) {
  rl_stream *s = req->data;
  if (s->state != S_CONNECTING) return; /* closed meanwhile (cancelled) */
  if (status < 0) {
    char why[96];
    snprintf(why, sizeof why, "connect: %s", uv_strerror(status));
    s->refused = status == UV_ECONNREFUSED || status == UV_ENOENT;
    fail(s, why, 0);
    return;
  }
  int fd = fd_of(s);
  int flags = fcntl(fd, F_GETFD);
  if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  if (s->io.handle.type == UV_TCP) {
    uv_tcp_nodelay(&s->io.tcp, 1);
    set_peer_timeout(fd, s->peer_timeout_ms);
  }
  uv_read_start(&s->io.stream, on_alloc, on_read);
  if (s->tls == NULL) {
    s->state = S_OPEN;
    s->h->connected(s);
    return;
  }
  s->state = S_HANDSHAKING;
  int r = rl_tls_handshake(s->tls); /* the ClientHello */
  send_tls_output(s);
  if (r < 0) fail(s, rl_tls_error(s->tls), 1);
}

static void on_deferred_failure(uv_timer_t *t) {
  rl_stream *s = t->data;
  fail(s, s->deferred, 0);
}

static void on_linger_timeout(uv_timer_t *t) { finish_close(t->data); }

/* Starts the transport connect. 0, or -1 with the reason in deferred. */
static int start_connect(rl_stream *s, const rl_url *url) {
  int rc;
  if (url->kind == RL_URL_UNIX) {
    rc = uv_pipe_init(s->loop, &s->io.pipe, 0);
    if (rc == 0) {
      s->handles++;
      uv_pipe_connect(&s->connect_req, &s->io.pipe, url->path, on_connect);
    }
  } else {
    struct sockaddr_storage addr;
    rc = strchr(url->host, ':') != NULL
             ? uv_ip6_addr(url->host, url->port, (struct sockaddr_in6 *)&addr)
             : uv_ip4_addr(url->host, url->port, (struct sockaddr_in *)&addr);
    int init = uv_tcp_init(s->loop, &s->io.tcp);
    if (init == 0) s->handles++;
    if (rc == 0) rc = init;
    if (rc == 0)
      rc = uv_tcp_connect(&s->connect_req, &s->io.tcp,
                          (const struct sockaddr *)&addr, on_connect);
  }
  if (rc != 0)
    snprintf(s->deferred, sizeof s->deferred, "connect: %s", uv_strerror(rc));
  return rc == 0 ? 0 : -1;
}

rl_stream *rl_stream_open(uv_loop_t *loop, const rl_url *url, rl_tls_ctx *tls,
                          const char *server_name,
                          const rl_stream_handler *handler, void *data) {
  rl_stream *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->loop = loop;
  s->h = handler;
  s->data = data;
  s->wfd = -1;
  s->connect_req.data = s;
  uv_timer_init(loop, &s->timer);
  s->timer.data = s;
  s->handles = 1;
  if (tls != NULL) {
    s->tls = rl_tls_new(tls, server_name);
    if (s->tls == NULL)
      snprintf(s->deferred, sizeof s->deferred, "TLS: out of memory");
  }
  if (s->deferred[0] == '\0' && start_connect(s, url) == 0) {
    s->io.handle.data = s;
    return s;
  }
  s->io.handle.data = s;
  if (s->handles == 1) { /* no socket handle: close as a TCP one */
    uv_tcp_init(loop, &s->io.tcp);
    s->handles++;
  }
  /* Reported from the loop, as any other outcome is. */
  uv_timer_start(&s->timer, on_deferred_failure, 0, 0);
  return s;
}

void *rl_stream_data(const rl_stream *s) { return s->data; }

int rl_stream_tls_handshaking(const rl_stream *s) {
  return s->state == S_HANDSHAKING;
}

int rl_stream_refused(const rl_stream *s) { return s->refused; }

void rl_stream_close(rl_stream *s, uint64_t linger_ms) {
  if (s->state == S_CLOSED || s->state == S_LINGER) return;
  if (linger_ms == 0 || s->state != S_OPEN) {
    finish_close(s);
    return;
  }
  if (s->tls != NULL && bytes_size(&s->stage) > 0) rl_stream_flush(s);
  if (s->state != S_OPEN) { /* the flush failed */
    finish_close(s);
    return;
  }
  s->state = S_LINGER;
  uv_timer_start(&s->timer, on_linger_timeout, linger_ms, 0);
  if (s->tls != NULL) {
    rl_tls_shutdown(s->tls);
    send_tls_output(s);
  } else {
    try_send(s);
  }
  if (s->state == S_LINGER) maybe_shut(s, fd_of(s));
}
