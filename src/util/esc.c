/* esc.c: the escaper of esc.h for target-controlled names in text output. */
#include <locale.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "util/esc.h"

size_t pst__utf8_len(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  unsigned char lo = 0x80, hi = 0xbf;
  size_t n;

  if (s[0] < 0x80)
    return 1;
  if (s[0] < 0xc2)
    return 0; /* continuation byte, or overlong 2-byte lead */
  if (s[0] < 0xe0)
    n = 2;
  else if (s[0] < 0xf0) {
    n = 3;
    if (s[0] == 0xe0)
      lo = 0xa0; /* overlong */
    else if (s[0] == 0xed)
      hi = 0x9f; /* UTF-16 surrogates */
  } else if (s[0] < 0xf5) {
    n = 4;
    if (s[0] == 0xf0)
      lo = 0x90; /* overlong */
    else if (s[0] == 0xf4)
      hi = 0x8f; /* above U+10FFFF */
  } else
    return 0;
  /* Only the second byte has the narrower range. A NUL fails the test, so
   * the check never reads past the end of the string. */
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

/* The code point of the well-formed n-byte sequence at s (n 2 or 3). */
static uint32_t code_point(const unsigned char *s, size_t n) {
  if (n == 2)
    return (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
  return (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 |
         (s[2] & 0x3f);
}

/* A code point a terminal must not get raw: C1 controls (CSI U+009B, OSC
 * U+009D, ... act like ESC sequences on some terminals), the line and
 * paragraph separators and the bidirectional embeddings, overrides and
 * isolates (U+2028-U+202E, U+2066-U+2069: they end or reorder a line). */
static int hidden(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

/* The escaped form of the character (or ill-formed byte) at s, which is
 * not its NUL, into p (at least 8 bytes, not terminated): sets *plen to
 * its length and returns the number of bytes of s it stands for. */
static size_t piece(const char *s, char p[8], size_t *plen) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char c = (unsigned char)*s;
  size_t n = pst__utf8_len(s);
  uint32_t cp;

  if (n == 1 && c >= 0x20 && c < 0x7f && c != '\\') {
    p[0] = (char)c;
    *plen = 1;
    return 1;
  }
  if (n == 1 && (c == '\\' || c == '\n' || c == '\r' || c == '\t')) {
    p[0] = '\\';
    p[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
    *plen = 2;
    return 1;
  }
  if (n <= 1) { /* other C0, DEL, or a byte of ill-formed UTF-8 */
    p[0] = '\\';
    p[1] = 'x';
    p[2] = hex[c >> 4];
    p[3] = hex[c & 0xf];
    *plen = 4;
    return 1;
  }
  cp = n < 4 ? code_point((const unsigned char *)s, n) : 0;
  if (hidden(cp)) {
    p[0] = '\\';
    p[1] = 'u';
    for (int i = 0; i < 4; i++)
      p[2 + i] = hex[(cp >> (12 - 4 * i)) & 0xf];
    *plen = 6;
    return n;
  }
  memcpy(p, s, n);
  *plen = n;
  return n;
}

void pst__utf8_copy(char *out, size_t size, const char *s) {
  size_t len = strlen(s);

  if (len >= size) {
    len = size - 1;
    /* back to the start of the character at the cut */
    while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
      len--;
  }
  memcpy(out, s, len);
  out[len] = '\0';
}

const char *pst__esc(char *out, size_t size, const char *s) {
  size_t len = 0, mark = 0; /* mark: the last cut with room for "..." */
  char p[8];

  if (!s)
    s = "";
  while (*s) {
    size_t plen, used = piece(s, p, &plen);

    if (len + plen > size - 1) { /* does not fit: cut at mark */
      if (size >= 4) {
        memcpy(out + mark, "...", 3);
        len = mark + 3;
      }
      break;
    }
    memcpy(out + len, p, plen);
    len += plen;
    if (len + 3 <= size - 1)
      mark = len;
    s += used;
  }
  out[len] = '\0';
  return out;
}

void pst__esc_put(FILE *f, const char *s) {
  const char *run; /* start of the bytes written as they are */
  char p[8];

  if (!s)
    s = "";
  run = s;
  while (*s) {
    size_t plen, used = piece(s, p, &plen);

    if (plen == used && !memcmp(p, s, used)) { /* as is: in the run */
      s += used;
      continue;
    }
    fwrite(run, 1, (size_t)(s - run), f);
    fwrite(p, 1, plen, f);
    s += used;
    run = s;
  }
  fwrite(run, 1, (size_t)(s - run), f);
}

/* Terminal columns of code point cp: wcwidth() in the C.UTF-8 locale (2
 * for East Asian wide and fullwidth characters, 0 for combining marks),
 * without touching the process's locale; 1 where that locale is missing
 * or wcwidth() has no answer. */
static int cp_columns(uint32_t cp) {
  static locale_t utf8;
  static int tried;
  locale_t old;
  int w;

  if (cp < 0x80)
    return 1;
  if (!tried) {
    tried = 1;
    utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  }
  if (!utf8)
    return 1;
  old = uselocale(utf8);
  w = wcwidth((wchar_t)cp);
  uselocale(old);
  return w < 0 ? 1 : w;
}

/* The code point of the well-formed sequence of n bytes at s. */
static uint32_t any_code_point(const unsigned char *s, size_t n) {
  if (n == 1)
    return s[0];
  if (n == 4)
    return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
           (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
  return code_point(s, n);
}

int pst__utf8_columns(const char *s) {
  int cols = 0;

  while (*s) {
    size_t n = pst__utf8_len(s);
    if (!n) { /* not from pst__esc(): a byte, one column */
      cols++;
      s++;
      continue;
    }
    cols += cp_columns(any_code_point((const unsigned char *)s, n));
    s += n;
  }
  return cols;
}

const char *pst__esc_cell(char *out, size_t size, const char *s, int width) {
  size_t len = strlen(pst__esc(out, size, s)), at = 0;
  int cols = pst__utf8_columns(out);

  if (cols > width) { /* cut to width - 2 columns, then ".." */
    cols = 0;
    while (out[at]) {
      size_t n = pst__utf8_len(out + at);
      int w;
      if (!n)
        n = 1;
      w = n == 1
              ? 1
              : cp_columns(any_code_point((const unsigned char *)out + at, n));
      if (cols + w > width - 2)
        break;
      cols += w;
      at += n;
    }
    len = at;
    for (int i = 0; i < 2 && len + 1 < size; i++, cols++)
      out[len++] = '.';
  }
  for (; cols < width && len + 1 < size; cols++)
    out[len++] = ' ';
  out[len] = '\0';
  return out;
}
