/*
 * OpenSSL sessions over memory BIOs; see tls.h.
 *
 * Every failure is turned into one line that says what went wrong in
 * OpenSSL's own words ("certificate verify failed: certificate has
 * expired", "tlsv13 alert certificate required", "wrong version number"):
 * an operator who sees it in a metric or a log must not need a debugger.
 * OpenSSL's error queue is per thread, so it is cleared before each call
 * and read right after it.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct rl_tls_ctx {
  SSL_CTX *ssl_ctx;
  int insecure;
};

struct rl_tls {
  SSL *ssl;
  BIO *rbio, *wbio; /* owned by ssl */
  int insecure;
  char err[200];
};

/* The reason of the oldest error in the queue, or fallback; clears it.
 * With code, also its reason code. */
static const char *queued_reason_code(const char *fallback, int *code) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (code != NULL) *code = e != 0 ? ERR_GET_REASON(e) : 0;
  const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
  return r != NULL ? r : fallback;
}

static const char *queued_reason(const char *fallback) {
  return queued_reason_code(fallback, NULL);
}

/* Checks that a file option names a readable file, for a message that
 * says so before OpenSSL's does. */
static int readable(const char *what, const char *path, char *why,
                    size_t size) {
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    fclose(f);
    return 1;
  }
  snprintf(why, size, "%s \"%.200s\": %s", what, path, strerror(errno));
  return 0;
}

rl_tls_ctx *rl_tls_ctx_new(const rl_tls_config *cfg, char *why,
                           size_t size) {
  rl_tls_ctx *ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) {
    snprintf(why, size, "out of memory");
    return NULL;
  }
  ERR_clear_error();
  ctx->insecure = cfg->insecure;
  ctx->ssl_ctx = SSL_CTX_new(TLS_client_method());
  if (ctx->ssl_ctx == NULL) {
    snprintf(why, size, "TLS: %s", queued_reason("cannot make a context"));
    goto fail;
  }
  SSL_CTX_set_min_proto_version(ctx->ssl_ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx->ssl_ctx,
                     cfg->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
  if (cfg->ca_file != NULL &&
      !readable("tls_ca_file", cfg->ca_file, why, size))
    goto fail;
  if (cfg->ca_file != NULL || cfg->ca_dir != NULL) {
    if (SSL_CTX_load_verify_locations(ctx->ssl_ctx, cfg->ca_file,
                                      cfg->ca_dir) != 1) {
      snprintf(why, size, "%s \"%.200s\": %s",
               cfg->ca_file ? "tls_ca_file" : "tls_ca_dir",
               cfg->ca_file ? cfg->ca_file : cfg->ca_dir,
               queued_reason("cannot load"));
      goto fail;
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx->ssl_ctx) != 1) {
    snprintf(why, size, "TLS: the system's CA store: %s",
             queued_reason("cannot load"));
    goto fail;
  }
  if (cfg->cert_file != NULL) {
    if (!readable("tls_cert_file", cfg->cert_file, why, size)) goto fail;
    if (SSL_CTX_use_certificate_chain_file(ctx->ssl_ctx, cfg->cert_file) !=
        1) {
      snprintf(why, size, "tls_cert_file \"%.200s\": %s", cfg->cert_file,
               queued_reason("cannot load"));
      goto fail;
    }
  }
  if (cfg->key_file != NULL) {
    if (!readable("tls_key_file", cfg->key_file, why, size)) goto fail;
    if (SSL_CTX_use_PrivateKey_file(ctx->ssl_ctx, cfg->key_file,
                                    SSL_FILETYPE_PEM) != 1) {
      int code;
      const char *r = queued_reason_code("cannot load", &code);
      if (code == X509_R_KEY_VALUES_MISMATCH)
        snprintf(why, size, "tls_key_file \"%.200s\" does not match "
                 "tls_cert_file (%s)", cfg->key_file, r);
      else
        snprintf(why, size, "tls_key_file \"%.200s\": %s", cfg->key_file,
                 r);
      goto fail;
    }
    if (SSL_CTX_check_private_key(ctx->ssl_ctx) != 1) {
      snprintf(why, size, "tls_key_file \"%.200s\" does not match "
               "tls_cert_file (%s)", cfg->key_file,
               queued_reason("key values mismatch"));
      goto fail;
    }
  }
  return ctx;
fail:
  rl_tls_ctx_free(ctx);
  return NULL;
}

void rl_tls_ctx_free(rl_tls_ctx *ctx) {
  if (ctx == NULL) return;
  if (ctx->ssl_ctx != NULL) SSL_CTX_free(ctx->ssl_ctx);
  free(ctx);
}

static int is_ip_literal(const char *s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

rl_tls *rl_tls_new(rl_tls_ctx *ctx, const char *server_name) {
  rl_tls *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  ERR_clear_error();
  t->insecure = ctx->insecure;
  t->ssl = SSL_new(ctx->ssl_ctx);
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) goto fail;
  /* An empty read BIO means "no more yet", never end of file. */
  BIO_set_mem_eof_return(t->rbio, -1);
  SSL_set_bio(t->ssl, t->rbio, t->wbio);
  SSL_set_connect_state(t->ssl);
  if (server_name != NULL && server_name[0] != '\0') {
    int ip = is_ip_literal(server_name);
    if (!ip && SSL_set_tlsext_host_name(t->ssl, server_name) != 1) goto fail;
    if (!t->insecure) {
      int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl),
                                                  server_name)
                  : SSL_set1_host(t->ssl, server_name);
      if (ok != 1) goto fail;
    }
  }
  return t;
fail:
  ERR_clear_error();
  if (t->ssl != NULL) {
    SSL_free(t->ssl); /* frees the BIOs it was given */
  } else {
    if (t->rbio) BIO_free(t->rbio);
    if (t->wbio) BIO_free(t->wbio);
  }
  free(t);
  return NULL;
}

void rl_tls_free(rl_tls *t) {
  if (t == NULL) return;
  SSL_free(t->ssl);
  free(t);
}

/* Records why call failed (its return value was ret) and returns the
 * status to report. */
static int failure(rl_tls *t, int ret, const char *during) {
  int e = SSL_get_error(t->ssl, ret);
  if (e == SSL_ERROR_ZERO_RETURN) {
    snprintf(t->err, sizeof t->err, "TLS: the master closed the session");
    ERR_clear_error();
    return RLOCK_ECLOSED;
  }
  long verify = SSL_get_verify_result(t->ssl);
  const char *reason = queued_reason(NULL);
  if (verify != X509_V_OK && !t->insecure)
    snprintf(t->err, sizeof t->err, "TLS %s: certificate verify failed: %s",
             during, X509_verify_cert_error_string(verify));
  else if (reason != NULL)
    snprintf(t->err, sizeof t->err, "TLS %s: %s", during, reason);
  else
    snprintf(t->err, sizeof t->err, "TLS %s: the connection ended", during);
  return RLOCK_EPROTO;
}

int rl_tls_handshake(rl_tls *t) {
  ERR_clear_error();
  int r = SSL_do_handshake(t->ssl);
  if (r == 1) return 1;
  int e = SSL_get_error(t->ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  return failure(t, r, "handshake");
}

int rl_tls_feed(rl_tls *t, const char *data, size_t len) {
  while (len > 0) {
    int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
    int n = BIO_write(t->rbio, data, chunk);
    if (n <= 0) {
      snprintf(t->err, sizeof t->err, "TLS: out of memory");
      return RLOCK_ENOMEM;
    }
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

long rl_tls_read(rl_tls *t, char *buf, size_t size) {
  ERR_clear_error();
  int chunk = size > (1u << 30) ? (1 << 30) : (int)size;
  int n = SSL_read(t->ssl, buf, chunk);
  if (n > 0) return n;
  int e = SSL_get_error(t->ssl, n);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  return failure(t, n, "read");
}

int rl_tls_write(rl_tls *t, const char *data, size_t len) {
  while (len > 0) {
    ERR_clear_error();
    int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
    int n = SSL_write(t->ssl, data, chunk);
    if (n <= 0) return failure(t, n, "write");
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

void rl_tls_shutdown(rl_tls *t) {
  ERR_clear_error();
  SSL_shutdown(t->ssl);
  ERR_clear_error();
}

size_t rl_tls_take(rl_tls *t, char *buf, size_t size) {
  if (BIO_ctrl_pending(t->wbio) == 0) return 0;
  int chunk = size > (1u << 30) ? (1 << 30) : (int)size;
  int n = BIO_read(t->wbio, buf, chunk);
  return n > 0 ? (size_t)n : 0;
}

const char *rl_tls_error(const rl_tls *t) {
  return t->err[0] ? t->err : "TLS: unknown error";
}
