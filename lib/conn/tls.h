/*
 * TLS for master connections, with OpenSSL 3 over memory BIOs: the
 * session never touches a socket. The stream (stream.c) feeds it the
 * ciphertext it reads and sends the ciphertext it produces, so that TLS
 * and plain connections share one libuv I/O path, one way of writing
 * without SIGPIPE, and one connect timeout.
 *
 * One context per client holds what every TLS master shares: the CA to
 * verify against, the client certificate, and whether verification is on.
 * A session is one connection's; both are used on the loop thread only
 * (the context is made and freed by the opening and closing thread).
 */
#ifndef RL_TLS_H
#define RL_TLS_H

#include <stddef.h>

#include "rlock.h"

typedef struct rl_tls_ctx rl_tls_ctx;
typedef struct rl_tls rl_tls;

typedef struct rl_tls_config {
  const char *ca_file;   /* PEM bundle to verify masters against */
  const char *ca_dir;    /* or a hashed directory (c_rehash) */
  const char *cert_file; /* client certificate (PEM, chain allowed) */
  const char *key_file;  /* its private key (PEM) */
  int insecure;          /* 1: verify neither chain nor host name */
} rl_tls_config;

/*
 * Makes a context: loads the CA (the system's default store when neither
 * ca_file nor ca_dir is given) and the client certificate and key, and
 * checks that they match. NULL on failure, with the reason (OpenSSL's,
 * and which file) in why.
 */
rl_tls_ctx *rl_tls_ctx_new(const rl_tls_config *cfg, char *why, size_t size);
void rl_tls_ctx_free(rl_tls_ctx *ctx);

/*
 * Makes a client session. server_name is sent as SNI (unless it is an IP
 * address, which SNI does not carry) and is the name the master's
 * certificate must carry (as a DNS name, or an IP address in its subject
 * alternative names). NULL when out of memory.
 */
rl_tls *rl_tls_new(rl_tls_ctx *ctx, const char *server_name);
void rl_tls_free(rl_tls *t);

/* Status of the calls below: 0 fine (perhaps waiting for more input), or
 * a public code with the reason in rl_tls_error: RLOCK_ECLOSED when the
 * master closed the session (the nearest code: the session is closed,
 * though the client is not), RLOCK_ENOMEM when a buffer could not grow,
 * RLOCK_EPROTO on any other failure (handshake, certificate, record). */

/* Drives the handshake; 1 once it is complete, 0 while it needs more
 * input, or an error status. */
int rl_tls_handshake(rl_tls *t);

/* Hands the session ciphertext read from the socket. 0 or RLOCK_EPROTO. */
int rl_tls_feed(rl_tls *t, const char *data, size_t len);

/* Decrypts into buf: the number of plaintext bytes (0 when none is
 * ready yet), or an error status. */
long rl_tls_read(rl_tls *t, char *buf, size_t size);

/* Encrypts len bytes of plaintext (all of them). 0 or RLOCK_EPROTO. */
int rl_tls_write(rl_tls *t, const char *data, size_t len);

/* Queues a close_notify alert. */
void rl_tls_shutdown(rl_tls *t);

/* Moves ciphertext the session produced into buf: the number of bytes
 * (0 when there is none). */
size_t rl_tls_take(rl_tls *t, char *buf, size_t size);

/* Why the last call failed, as OpenSSL says it, with the certificate
 * verification result when that is what failed. */
const char *rl_tls_error(const rl_tls *t);

#endif
