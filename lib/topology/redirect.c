/*
 * Error replies, sorted for cluster routing. Matching is on the first
 * word, as every client does, because the words are the protocol and the
 * rest of the text is prose that Redis versions reword; only the errors a
 * script's own calls get (src/script.c, scriptVerifyClusterState) have no
 * word of their own, so their fixed prefixes are matched (a script's
 * error ends with " script: <sha>, on @user_script:<n>.", which varies,
 * and under pcall the text comes back without it).
 */
#include "redirect.h"

#include <string.h>

#define NONLOCAL_PREFIX \
  "ERR Script attempted to access a non local key in a cluster node"
#define SCRIPT_DOWN_PREFIX \
  "ERR Script attempted to execute a command while the cluster is down"

static int starts_word(const char *s, size_t len, const char *word) {
  size_t n = strlen(word);
  return len >= n && memcmp(s, word, n) == 0 && (len == n || s[n] == ' ');
}

int rl_hostport_split(const char *s, size_t len, char *host, size_t cap,
                      int *port) {
  const char *colon = NULL;
  for (size_t i = len; i > 0; i--)
    if (s[i - 1] == ':') {
      colon = s + i - 1;
      break;
    }
  if (colon == NULL) return RLOCK_EPROTO;
  const char *h = s, *hend = colon;
  if (hend > h && *h == '[') {
    if (hend[-1] != ']' || hend - h < 3) return RLOCK_EPROTO;
    h++;
    hend--;
  }
  size_t hlen = (size_t)(hend - h);
  if (hlen >= cap) return RLOCK_EPROTO;
  for (size_t i = 0; i < hlen; i++) {
    unsigned char c = (unsigned char)h[i];
    if (c <= ' ' || c == 0x7f || c == '[' || c == ']') return RLOCK_EPROTO;
  }
  const char *p = colon + 1, *end = s + len;
  long v = 0;
  if (p == end || end - p > 5) return RLOCK_EPROTO;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9') return RLOCK_EPROTO;
    v = v * 10 + (*p - '0');
  }
  if (v < 1 || v > 65535) return RLOCK_EPROTO;
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  *port = (int)v;
  return 0;
}

/* "<slot> <host>:<port>" after MOVED or ASK. 0 or -1. */
static int parse_target(const char *s, size_t len, rl_redirect *out) {
  size_t i = 0;
  long slot = 0;
  if (len == 0 || s[0] < '0' || s[0] > '9') return -1;
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
    slot = slot * 10 + (s[i] - '0');
    if (slot > 16383) return -1;
  }
  if (i >= len || s[i] != ' ') return -1;
  i++;
  if (rl_hostport_split(s + i, len - i, out->host, sizeof out->host,
                        &out->port) != 0)
    return -1;
  out->slot = (int)slot;
  out->host_unknown = strcmp(out->host, "?") == 0;
  return 0;
}

int rl_redirect_parse(const char *text, size_t len, rl_redirect *out) {
  memset(out, 0, sizeof *out);
  out->slot = -1;
  out->kind = RL_REPLY_ERROR;
  if (text == NULL) return out->kind;
  if (starts_word(text, len, "MOVED") || starts_word(text, len, "ASK")) {
    int moved = text[0] == 'M';
    size_t skip = moved ? 6 : 4;
    if (len > skip && parse_target(text + skip, len - skip, out) == 0) {
      out->kind = moved ? RL_REPLY_MOVED : RL_REPLY_ASK;
    } else {
      memset(out, 0, sizeof *out);
      out->slot = -1;
      out->kind = RL_REPLY_ERROR;
    }
  } else if (starts_word(text, len, "TRYAGAIN")) {
    out->kind = RL_REPLY_TRYAGAIN;
  } else if (starts_word(text, len, "CLUSTERDOWN")) {
    static const char unserved[] = "CLUSTERDOWN Hash slot not served";
    out->kind = RL_REPLY_CLUSTERDOWN;
    out->unserved = len >= sizeof unserved - 1 &&
                    memcmp(text, unserved, sizeof unserved - 1) == 0;
  } else if (starts_word(text, len, "CROSSSLOT")) {
    out->kind = RL_REPLY_CROSSSLOT;
  } else if (starts_word(text, len, "READONLY")) {
    out->kind = RL_REPLY_READONLY;
  } else if (len >= sizeof NONLOCAL_PREFIX - 1 &&
             memcmp(text, NONLOCAL_PREFIX, sizeof NONLOCAL_PREFIX - 1) == 0) {
    out->kind = RL_REPLY_NONLOCAL;
  } else if (len >= sizeof SCRIPT_DOWN_PREFIX - 1 &&
             memcmp(text, SCRIPT_DOWN_PREFIX,
                    sizeof SCRIPT_DOWN_PREFIX - 1) == 0) {
    /* A script without declared keys runs while the cluster is down, and
     * its first call fails: nothing was written, as for CLUSTERDOWN. */
    out->kind = RL_REPLY_CLUSTERDOWN;
  }
  return out->kind;
}

int rl_redirect_classify(const redisReply *reply, rl_redirect *out) {
  if (reply == NULL || reply->type != REDIS_REPLY_ERROR) {
    memset(out, 0, sizeof *out);
    out->slot = -1;
    out->kind = RL_REPLY_RESULT;
    return out->kind;
  }
  return rl_redirect_parse(reply->str, reply->str ? reply->len : 0, out);
}
