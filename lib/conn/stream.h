/*
 * A byte stream to one master, over TCP (uv_tcp_t) or a unix socket
 * (uv_pipe_t), plain or TLS (tls.h). It knows nothing of Redis: it
 * connects, hands up the plaintext it receives, writes what it is given,
 * and reports the one failure that ends it. One stream is one connection
 * attempt's life; a reconnect makes a new one. Loop thread only.
 *
 * Writes never raise SIGPIPE: libuv writes with write(2), which raises it
 * when the peer is gone, so the stream never calls uv_write. It sends with
 * send(MSG_NOSIGNAL) itself, on the socket libuv connected and reads, and
 * when the kernel's buffer is full it waits for room through a uv_poll_t
 * on a duplicate of the descriptor (epoll keeps the two apart), so that a
 * process that did not ignore SIGPIPE survives a dead master on its own
 * loop too.
 */
#ifndef RL_STREAM_H
#define RL_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "tls.h"
#include "url.h"

typedef struct rl_stream rl_stream;

/*
 * What the stream reports, each with the stream (whose data slot is the
 * owner's). After failed, nothing but closed comes, and the owner must
 * call rl_stream_close. After rl_stream_close, nothing but closed comes.
 */
typedef struct rl_stream_handler {
  /* Connected (and, over TLS, the TLS handshake is complete). */
  void (*connected)(rl_stream *s);
  /* Plaintext from the master. */
  void (*received)(rl_stream *s, const char *data, size_t len);
  /* The stream is dead: connect refused, TLS handshake failed, the master
   * closed, an I/O error. why says which, in a line; tls is 1 when TLS
   * (verification, a TLS alert) is what failed. */
  void (*failed)(rl_stream *s, const char *why, int tls);
  /* Every handle is closed; the stream is freed when this returns. */
  void (*closed)(rl_stream *s);
} rl_stream_handler;

/*
 * Starts connecting to url: TLS when tls is not NULL, verifying
 * server_name. The outcome comes as connected or failed, never inside
 * this call. NULL only when out of memory.
 */
rl_stream *rl_stream_open(uv_loop_t *loop, const rl_url *url, rl_tls_ctx *tls,
                          const char *server_name,
                          const rl_stream_handler *handler, void *data);

/*
 * Ends the connection when the peer has not acknowledged data for ms
 * (TCP_USER_TIMEOUT), and probes an idle one (keepalive) after about as
 * long: a peer cut off without a reset is then reported as failed instead
 * of being waited on for TCP's minutes. TCP only; set before it connects.
 * 0: none.
 */
void rl_stream_set_peer_timeout(rl_stream *s, unsigned ms);

/* The owner's slot. */
void *rl_stream_data(const rl_stream *s);

/* 1 while the TLS handshake is in progress (the socket is connected). */
int rl_stream_tls_handshaking(const rl_stream *s);

/* 1 if the stream failed because its connect was refused: nothing
 * listened at the address (ECONNREFUSED, or ENOENT for a unix socket's
 * path). */
int rl_stream_refused(const rl_stream *s);

/* Stages bytes for the next rl_stream_flush (copied). 0, RLOCK_ECLOSED
 * unless connected, or RLOCK_ENOMEM. */
int rl_stream_append(rl_stream *s, const char *data, size_t len);

/* Sends what is staged (encrypting it first over TLS), as far as the
 * kernel takes it now; the rest goes when there is room. 0, or
 * RLOCK_ECLOSED when the stream failed (reported through failed first)
 * or was not open. */
int rl_stream_flush(rl_stream *s);

/*
 * Set by a thread that flushes off the loop thread, under the client's
 * loop lock (lib/core/client.c): then a send that fails does not fail the stream
 * (whose callbacks would run user code on that thread) but waits for the
 * socket to be writable, which it is at once when it has failed, and the
 * loop thread sends again and fails it there.
 */
extern __thread int rl_stream_off_loop;

/* Reads what the kernel already holds for this stream, now, instead of
 * at the loop's next poll; received (or failed) runs inside. */
void rl_stream_read_now(rl_stream *s);

/*
 * Off the loop thread, under the client's loop lock (lib/lock/fast.c, a caller
 * that finishes its own round): reads what the kernel already holds for
 * a plain stream that is open, and hands it to received on the calling
 * thread. Nothing here fails the stream, whose failed callback would run
 * user code on that thread: end of stream, an error, a stream that is not
 * open and any TLS stream are left to the loop thread, whose poll sees
 * them (level-triggered) when it next turns. 1 if bytes were handed up,
 * 0 if none were there, -1 if the loop must take over.
 */
int rl_stream_read_off_loop(rl_stream *s);

/* The socket's descriptor (for poll(2)), or -1. */
int rl_stream_fd(const rl_stream *s);

/*
 * The same caller, around its own round: mute 1 takes the socket out of
 * the loop's epoll set, so that the reply it waits for does not also
 * wake the sleeping loop thread (which would then only wait for the loop
 * lock and turn for nothing, holding the lock when the caller's next call
 * wants it); mute 0 puts it back as libuv registered it, before the loop
 * lock is let go. A socket libuv has not registered yet is left alone.
 * Level-triggered: a reply that arrives while muted is seen by the loop
 * once it is back.
 */
void rl_stream_mute(rl_stream *s, int mute);

/*
 * Closes the stream. With linger_ms > 0 and the stream connected, what is
 * still unsent is sent first (over TLS, followed by close_notify), then
 * the write side is shut and the stream reads, and drops, whatever the
 * master still sends until it closes too or linger_ms pass: the master
 * gets every byte, and the socket never closes with unread data (which
 * would make it a reset that could discard the last commands). Else the
 * stream closes at once. closed follows either way.
 */
void rl_stream_close(rl_stream *s, uint64_t linger_ms);

#endif
