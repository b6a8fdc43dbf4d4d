/* cxxname.c: the short form of a demangled C++ function name (see
 * cxxname.h for what is kept and what is dropped). */
#include <ctype.h>
#include <string.h>

#include "native/cxxname.h"

struct out {
  char *p;
  size_t n, size;
};

/* Appends n bytes of s, as many as fit (one byte kept for the NUL). */
static void put(struct out *o, const char *s, size_t n) {
  size_t room = o->size - 1 - o->n;

  if (n > room)
    n = room;
  memcpy(o->p + o->n, s, n);
  o->n += n;
}

static int starts(const char *s, const char *prefix) {
  return !strncmp(s, prefix, strlen(prefix));
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The index past the bracket group that opens at s[i] ('<', '(', '[' or
 * '{'), brackets of every kind nested ("->" is not a closing one); the
 * string's end when it is not closed. */
static size_t skip_group(const char *s, size_t i) {
  int depth = 0;

  for (; s[i]; i++) {
    if (strchr("<([{", s[i]))
      depth++;
    else if (strchr(">)]}", s[i]) && !(s[i] == '>' && i && s[i - 1] == '-'))
      if (--depth == 0)
        return i + 1;
  }
  return i;
}

/* After "operator" at s[i]: copies the operator's own name ("()", "[]",
 * "<<=", " new[]", " bool") and drops its template arguments; the index
 * past them. */
static size_t operator_name(const char *s, size_t i, struct out *o) {
  size_t j = i;

  if (starts(s + i, "()") || starts(s + i, "[]")) {
    j = i + 2;
  } else if (s[i] == ' ' && s[i + 1] != '<') {
    /* new, delete, a conversion's type: to the parameters */
    for (j = i + 1; s[j] && s[j] != '(';)
      j = s[j] == '<' ? skip_group(s, j) : j + 1;
  } else {
    while (j - i < 3 && s[j] && strchr("<>=!+-*/%^&|~,", s[j]))
      j++;
  }
  put(o, s + i, j - i);
  if (s[j] == ' ' && s[j + 1] == '<') /* operator<< <T>: its arguments */
    j = skip_group(s, j + 1);
  return j;
}

/* After a parameter list ending at s[i]: its qualifiers (" const", " &&",
 * " noexcept") skipped. The index of what follows them: "::" of a local
 * entity, " [clone", or the end (anything else ends the name too). */
static size_t qualifiers(const char *s, size_t i) {
  while (s[i] && !starts(s + i, "::") && !starts(s + i, " [clone") &&
         (s[i] == ' ' || s[i] == '&' || islower((unsigned char)s[i])))
    i++;
  return i;
}

const char *pst__cxx_short(const char *name, char *out, size_t size) {
  struct out o = {out, 0, size};
  size_t i = 0;

  if (!strpbrk(name, "(<")) {
    put(&o, name, strlen(name));
    out[o.n] = '\0';
    return out;
  }
  while (name[i]) {
    const char *s = name + i;
    if (starts(s, "operator") && !ident_char(s[8]) &&
        (i == 0 || !ident_char(s[-1]))) {
      put(&o, s, 8);
      i = operator_name(name, i + 8, &o);
    } else if (starts(s, "(anonymous namespace)")) {
      put(&o, s, 21);
      i += 21;
    } else if (*s == '(') { /* the parameters: a local entity follows, or
                               the end */
      i = qualifiers(name, skip_group(name, i));
      if (!starts(name + i, "::"))
        break;
      put(&o, "::", 2);
      i += 2;
    } else if (*s == '<' || starts(s, "[abi:")) { /* template arguments */
      i = skip_group(name, i);
    } else if (*s == '{') { /* a lambda, an unnamed type: as it is */
      size_t j = skip_group(name, i);
      put(&o, s, j - i);
      i = j;
    } else if (starts(s, " [clone")) {
      break;
    } else if (*s == ' ') { /* what came before was a return type */
      o.n = 0;
      i++;
    } else {
      put(&o, s, 1);
      i++;
    }
  }
  if (starts(name + i, " [clone"))
    put(&o, name + i, strlen(name + i));
  if (o.n == 0)
    put(&o, name, strlen(name));
  out[o.n] = '\0';
  return out;
}
