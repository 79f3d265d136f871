/*
 * How the tool writes what it read from Redis: as JSON strings that always
 * parse (keys and owners are binary) or as text for a human, with control
 * bytes escaped.
 */
#include <stdio.h>
#include <string.h>

#include "tool.h"

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len;
  unsigned min;
  unsigned cp;
  if (s[0] < 0x80) return 1;
  if ((s[0] & 0xe0) == 0xc0) len = 2, min = 0x80, cp = s[0] & 0x1f;
  else if ((s[0] & 0xf0) == 0xe0) len = 3, min = 0x800, cp = s[0] & 0x0f;
  else if ((s[0] & 0xf8) == 0xf0) len = 4, min = 0x10000, cp = s[0] & 0x07;
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

/* Writes s as a JSON string. Bytes that are not valid UTF-8 (Redis keys
 * are binary) are written as \u00XX, their Latin-1 reading, so the output
 * always parses. */
void rt_json_str(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  for (size_t i = 0; i < n;) {
    unsigned char ch = p[i];
    if (ch == '"' || ch == '\\') {
      fputc('\\', f);
      fputc(ch, f);
      i++;
    } else if (ch < 0x20 || ch == 0x7f) {
      fprintf(f, "\\u%04x", ch);
      i++;
    } else {
      size_t l = utf8_len(p + i, n - i);
      if (l == 0) {
        fprintf(f, "\\u%04x", ch);
        i++;
      } else {
        fwrite(p + i, 1, l, f);
        i += l;
      }
    }
  }
  fputc('"', f);
}

void rt_json_cstr(FILE *f, const char *s) {
  if (s == NULL) fputs("null", f);
  else rt_json_str(f, s, strlen(s));
}

/* Prints s for a human, with control bytes escaped. */
void rt_human_str(FILE *f, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == 0x7f) fprintf(f, "\\x%02x", ch);
    else fputc(ch, f);
  }
}
