/* test-esc.c: the escaper of target-controlled names (util/esc.c): controls
 * and ill-formed UTF-8 shown as escapes, readable names kept, bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task.h"
#include "util/esc.h"

/* s escaped to a stream, as a new string (free()). */
static char *esc_stream(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);

  if (!f)
    return NULL;
  pst__esc_put(f, s);
  fclose(f);
  return buf;
}

TEST_IMPL(esc_controls) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain name", "plain name"},
      {"", ""},
      /* An OSC title then an SGR colour: nothing of it stays raw. */
      {"\x1b]0;TITLE\x07\x1b[31m", "\\x1b]0;TITLE\\x07\\x1b[31m"},
      {"a\nb\rc\td", "a\\nb\\rc\\td"},
      {"del\x7f", "del\\x7f"},
      {"back\\slash", "back\\\\slash"},
      /* C1 CSI: a raw byte (ill-formed UTF-8), then as UTF-8 (U+009B). */
      {"x\x9by", "x\\x9by"},
      {"x\xc2\x9by", "x\\u009by"},
      {"\xc2\x80\xc2\x9f", "\\u0080\\u009f"},
      /* Bidirectional override and line separator. */
      {"a\xe2\x80\xae"
       "b\xe2\x80\xa8",
       "a\\u202eb\\u2028"},
      {"\xe2\x81\xa6x\xe2\x81\xa9", "\\u2066x\\u2069"},
      /* Readable non-ASCII stays as is. */
      {"\xc3\xbc"
       "n\xc3\xaf"
       "code",
       "\xc3\xbc"
       "n\xc3\xaf"
       "code"},
      {"\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x8d", "\xe6\x97\xa5\xe6\x9c\xac "
                                                    "\xf0\x9f\x90\x8d"},
      {"\xc2\xa0nbsp", "\xc2\xa0nbsp"},
      /* Ill-formed: overlong, surrogate, truncated, stray continuation. */
      {"\xc0\xaf", "\\xc0\\xaf"},
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},
      {"ab\xe2\x82", "ab\\xe2\\x82"},
      {"\x80z\xff", "\\x80z\\xff"},
  };
  char out[PST_ESC_SIZE];

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *s = esc_stream(cases[i].in);
    ASSERT_STR_EQ(pst__esc(out, sizeof(out), cases[i].in), cases[i].out);
    ASSERT(s != NULL);
    ASSERT_STR_EQ(s, cases[i].out);
    free(s);
  }
  ASSERT_STR_EQ(pst__esc(out, sizeof(out), NULL), "");
  return 0;
}

TEST_IMPL(esc_bounds) {
  char out[16], big[PST_ESC_SIZE];
  char *in = malloc(4097), *s;

  ASSERT(in != NULL);
  /* Fits exactly: no "...". */
  ASSERT_STR_EQ(pst__esc(out, sizeof(out), "0123456789abcde"),
                "0123456789abcde");
  /* One more: cut, with "..." inside the bound. */
  ASSERT_STR_EQ(pst__esc(out, sizeof(out), "0123456789abcdef"),
                "0123456789ab...");
  /* An escape or a character is never split. */
  ASSERT_STR_EQ(pst__esc(out, sizeof(out), "0123456789\x1b\x1b"),
                "0123456789...");
  ASSERT_STR_EQ(pst__esc(out, sizeof(out), "012345678\xc3\xbc\xc3\xbc\xc3\xbc"),
                "012345678\xc3\xbc\xc3\xbc\xc3\xbc");
  ASSERT_STR_EQ(
      pst__esc(out, sizeof(out), "012345678\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc"),
      "012345678\xc3\xbc...");
  /* pst__utf8_copy: whole when it fits, else cut before the character it
   * would split (a thread name of 50 "ü" in 64 bytes: 31 of them). */
  pst__utf8_copy(out, sizeof(out), "0123456789abcde");
  ASSERT_STR_EQ(out, "0123456789abcde");
  pst__utf8_copy(out, sizeof(out), "0123456789abcd\xc3\xbc");
  ASSERT_STR_EQ(out, "0123456789abcd");
  pst__utf8_copy(out, sizeof(out), "0123456789a\xf0\x9f\x90\x8d!");
  ASSERT_STR_EQ(out, "0123456789a\xf0\x9f\x90\x8d");
  pst__utf8_copy(out, 1, "abc");
  ASSERT_STR_EQ(out, "");
  /* Tiny buffers stay terminated. */
  ASSERT_STR_EQ(pst__esc(out, 1, "abc"), "");
  ASSERT_STR_EQ(pst__esc(out, 3, "abc"), "ab");
  ASSERT_STR_EQ(pst__esc(out, 4, "abcd"), "...");
  /* The longest name the target gives, all escapes: bounded; to a stream,
   * whole (4 bytes a byte). */
  memset(in, 0x1b, 4096);
  in[4096] = '\0';
  ASSERT_EQ(strlen(pst__esc(big, sizeof(big), in)), sizeof(big) - 1);
  ASSERT_STR_EQ(big + sizeof(big) - 4, "...");
  s = esc_stream(in);
  ASSERT(s != NULL);
  ASSERT_EQ(strlen(s), 4 * 4096);
  free(s);
  free(in);
  return 0;
}

/* Every byte value: no control byte (C0, DEL, raw C1) and no ESC reaches
 * the output. */
TEST_IMPL(esc_no_raw_controls) {
  char in[3], out[32];

  for (int a = 1; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      in[0] = (char)a;
      in[1] = (char)b;
      in[2] = '\0';
      pst__esc(out, sizeof(out), in);
      for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
        ASSERT(*p >= 0x20 && *p != 0x7f);
        /* A raw C1 byte only as a UTF-8 continuation of a kept letter. */
        if (*p >= 0x80 && *p <= 0x9f)
          ASSERT(p > (const unsigned char *)out && p[-1] >= 0xc2);
      }
    }
  return 0;
}

/* Table cells in terminal columns: East Asian wide characters take two,
 * combining marks none; a cell is padded or cut (at a whole character,
 * ".." at its end) to exactly its width. */
TEST_IMPL(esc_cell_columns) {
  char e[PST_ESC_SIZE];

  ASSERT_EQ(pst__utf8_columns("abc"), 3);
  ASSERT_EQ(pst__utf8_columns("\xc3\xb1"), 1);                 /* ñ */
  ASSERT_EQ(pst__utf8_columns("\xe6\x95\xb0\xe6\x8d\xae"), 4); /* 数据 */
  ASSERT_EQ(pst__utf8_columns("e\xcc\x81"), 1); /* e + combining acute */
  ASSERT_STR_EQ(pst__esc_cell(e, sizeof(e), "ab", 5), "ab   ");
  ASSERT_STR_EQ(pst__esc_cell(e, sizeof(e), "\xe6\x95\xb0\xe6\x8d\xae", 6),
                "\xe6\x95\xb0\xe6\x8d\xae  ");
  /* 数据数据 (8 columns) in 5: one wide character fits before "..", and
   * the cell is padded to 5 (2 + 2 + 1). */
  ASSERT_STR_EQ(
      pst__esc_cell(e, sizeof(e),
                    "\xe6\x95\xb0\xe6\x8d\xae\xe6\x95\xb0\xe6\x8d\xae", 5),
      "\xe6\x95\xb0.. ");
  /* An escape counts as what is printed: "\x1b" is 4 columns. */
  ASSERT_STR_EQ(pst__esc_cell(e, sizeof(e), "\x1b", 6), "\\x1b  ");
  ASSERT_EQ(pst__utf8_columns(pst__esc_cell(e, sizeof(e), "abcdefgh", 6)), 6);
  return 0;
}
