/* flamegraph.c: a self-contained interactive SVG flame graph: samples of
 * all threads merged by common stack prefix, root at the bottom, each frame
 * as wide as its share of the samples.
 *
 * Layout follows flamegraph.pl's conventions: an "all" root, siblings in
 * alphabetical order of their labels (so the picture depends only on the
 * counts, not on the order samples came in), 16-pixel rows, labels cut to
 * the width with "..", frames narrower than 0.1 pixel left out. Colors come
 * from a hash of the function name: warm for Python frames (*.py), blue for
 * synthetic frames (no file), green for any other (native) file.
 *
 * Each frame is <g class="f" data-l="label"> holding a <title> tooltip
 * "label: N samples, P%", its <rect> and its <text>. The embedded script
 * (no external resources; ES5) zooms into a frame on click (its ancestors
 * stay, dimmed, below it), resets with "Reset Zoom", Escape or a click on
 * "all", searches frames by regular expression ("Search", Ctrl-F) and shows
 * the matched share of samples, and shows the hovered frame's tooltip text
 * at the bottom. Names are XML-escaped (&<>"'), so the file is well-formed
 * XML; labels are valid UTF-8 without control characters.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/writer.h"
#include "util/array.h"
#include "util/esc.h"
#include "util/hash.h"

#define NONE UINT32_MAX

/* Geometry, in SVG pixels. */
#define IMG_W 1200
#define XPAD 10
#define FRAME_H 16
#define TOP 60    /* title and buttons */
#define BOTTOM 34 /* details line */
#define FONT_SIZE 12
/* Average character width of Verdana at FONT_SIZE: 0.59 em, the estimate
 * flamegraph.pl uses to cut labels (no font metrics in a static file). */
#define CHAR_W (0.59 * FONT_SIZE)
#define MIN_W 0.1 /* narrower frames are not drawn */

/* One frame of the merged call tree. */
struct node {
  uint32_t frame;       /* NONE for the "all" root */
  uint32_t child, next; /* first child, next sibling; NONE at the end */
  uint32_t depth;
  uint64_t count; /* samples in this frame and below */
  uint64_t start; /* left edge, in samples */
};

struct tree {
  struct node *v;
  uint32_t *parents; /* node i's parent (only building needs it) */
  size_t n, cap;
  struct pst__hash ids; /* hash of (parent, frame) -> node index */
  uint32_t max_depth;
};

struct child_key {
  uint32_t parent, frame;
};

static int child_eq(const void *ctx, uint32_t i, const void *key) {
  const struct tree *t = ctx;
  const struct child_key *k = key;
  return t->parents[i] == k->parent && t->v[i].frame == k->frame;
}

/* The child of parent for frame, created if needed. Returns its index, or
 * NONE when out of memory. */
static uint32_t tree_child(struct tree *t, uint32_t parent, uint32_t frame) {
  struct child_key k = {parent, frame};
  uint64_t h = pst__hash_u64((uint64_t)parent << 32 | frame);
  int64_t i = pst__hash_find(&t->ids, h, child_eq, t, &k);

  if (i >= 0)
    return (uint32_t)i;
  if (t->n == t->cap) {
    size_t cap = t->cap * 2;
    struct node *v = realloc(t->v, cap * sizeof(*v));
    uint32_t *par;

    if (!v)
      return NONE;
    t->v = v;
    par = realloc(t->parents, cap * sizeof(*par));
    if (!par)
      return NONE;
    t->parents = par;
    t->cap = cap;
  }
  if (pst__hash_insert(&t->ids, h, (uint32_t)t->n))
    return NONE;
  t->v[t->n] = (struct node){
      frame, NONE, t->v[parent].child, t->v[parent].depth + 1, 0, 0};
  t->v[parent].child = (uint32_t)t->n;
  t->parents[t->n] = parent;
  if (t->v[t->n].depth > t->max_depth)
    t->max_depth = t->v[t->n].depth;
  return (uint32_t)t->n++;
}

struct sibling {
  const char *label;
  uint32_t node;
};

static int sibling_cmp(const void *a, const void *b) {
  const struct sibling *x = a, *y = b;
  int c = strcmp(x->label, y->label);
  return c ? c : (x->node > y->node) - (x->node < y->node);
}

/* Puts every node's children in label order and gives each node its left
 * edge. Children are created after their parent, so one pass in index
 * order sees every parent placed before its children. */
static int tree_layout(struct tree *t, char *const *labels) {
  struct sibling *sib = NULL;
  size_t sib_cap = 0;

  for (size_t i = 0; i < t->n; i++) {
    size_t k = 0;
    uint64_t x = t->v[i].start;

    for (uint32_t c = t->v[i].child; c != NONE; c = t->v[c].next) {
      if (pst__array_reserve((void **)&sib, &sib_cap, k + 1, sizeof(*sib))) {
        free(sib);
        return -ENOMEM;
      }
      sib[k++] = (struct sibling){labels[t->v[c].frame], c};
    }
    if (k > 1)
      qsort(sib, k, sizeof(*sib), sibling_cmp);
    t->v[i].child = k ? sib[0].node : NONE;
    for (size_t s = 0; s < k; s++) {
      struct node *c = &t->v[sib[s].node];
      c->next = s + 1 < k ? sib[s + 1].node : NONE;
      c->start = x;
      x += c->count;
    }
  }
  free(sib);
  return 0;
}

#ifndef NDEBUG
/* Children sit side by side from their parent's left edge, one row up,
 * and hold no more samples than it. */
static void check_invariants(const struct tree *t) {
  for (size_t i = 0; i < t->n; i++) {
    uint64_t x = t->v[i].start;

    for (uint32_t c = t->v[i].child; c != NONE; c = t->v[c].next) {
      assert(t->v[c].start == x && t->v[c].depth == t->v[i].depth + 1);
      x += t->v[c].count;
    }
    assert(x <= t->v[i].start + t->v[i].count);
  }
}
#else
static void check_invariants(const struct tree *t) { (void)t; }
#endif

/* Builds the merged tree of all stacks with samples. */
static int tree_build(const struct pst__profile *p, struct tree *t,
                      char *const *labels) {
  size_t nstacks = pst__profile_nstacks(p);
  uint64_t *counts = calloc(nstacks + 1, sizeof(*counts));
  int err = -ENOMEM;

  t->cap = 256;
  t->v = malloc(t->cap * sizeof(*t->v));
  t->parents = malloc(t->cap * sizeof(*t->parents));
  if (!counts || !t->v || !t->parents || pst__hash_init(&t->ids, 1024))
    goto out;
  t->v[0] = (struct node){NONE, NONE, NONE, 0, 0, 0};
  t->parents[0] = NONE;
  t->n = 1;
  pst__profile_stack_totals(p, counts, NULL);
  for (uint32_t s = 0; s < nstacks; s++) {
    size_t n;
    const uint32_t *ids = pst__profile_stack(p, s, &n);
    uint32_t cur = 0;

    if (!counts[s])
      continue;
    t->v[0].count += counts[s];
    for (size_t d = 0; d < n; d++) {
      cur = tree_child(t, cur, ids[d]);
      if (cur == NONE)
        goto out;
      t->v[cur].count += counts[s];
    }
  }
  err = tree_layout(t, labels);
  if (!err)
    check_invariants(t);
out:
  free(counts);
  return err;
}

/* ---- SVG ---- */

/* Writes at most max characters of the clean UTF-8 string s, XML-escaped.
 * U+FFFE and U+FFFF, which XML does not allow, become U+FFFD. */
static void put_xml(FILE *f, const char *s, size_t max) {
  for (size_t n = 0; *s && n < max; n++) {
    size_t len = pst__utf8_len(s);

    switch (*s) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&apos;", f);
      break;
    default:
      if (len == 3 && !memcmp(s, "\xef\xbf", 2) &&
          ((unsigned char)s[2] == 0xbe || (unsigned char)s[2] == 0xbf))
        fputs("\xef\xbf\xbd", f);
      else
        fwrite(s, 1, len ? len : 1, f);
    }
    s += len ? len : 1;
  }
}

/* The colours' hash: 32-bit FNV-1a, folded. Changing it changes every
 * picture's colours. */
static uint32_t name_hash(const char *s) {
  uint32_t h = pst__hash_str32(s);
  return h ^ (h >> 15);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

static void frame_color(const struct pst__prof_frame *fr, char *buf,
                        size_t size) {
  uint32_t h;
  unsigned r, g, b;

  if (!fr) {
    snprintf(buf, size, "rgb(190,190,190)");
    return;
  }
  h = name_hash(fr->name ? fr->name : "");
  if (!fr->file || !*fr->file) { /* synthetic: blue */
    r = 90 + h % 50;
    g = 140 + (h >> 8) % 50;
    b = 200 + (h >> 16) % 55;
  } else if (ends_with(fr->file, ".py")) { /* Python: red to yellow */
    r = 205 + h % 50;
    g = 60 + (h >> 8) % 170;
    b = (h >> 16) % 55;
  } else { /* native: green */
    r = 60 + h % 80;
    g = 180 + (h >> 8) % 70;
    b = 60 + (h >> 16) % 70;
  }
  snprintf(buf, size, "rgb(%u,%u,%u)", r, g, b);
}

static const char *const svg_style =
    "<style type=\"text/css\">\n"
    "text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
    "#title { font-size: 17px; }\n"
    ".btn { cursor: pointer; fill: #333; }\n"
    ".btn:hover { text-decoration: underline; }\n"
    ".off { display: none; }\n"
    ".hide { display: none; }\n"
    ".parent { opacity: 0.5; }\n"
    "g.f { cursor: pointer; }\n"
    "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
    "</style>\n";

/* The interactive part. ES5, no external resources; kept free of "]]>",
 * '\\' and '"' so it goes into CDATA and a C string unchanged. */
static const char *const svg_script =
    "(function () {\n"
    "  'use strict';\n"
    "  var W = parseFloat(document.documentElement.getAttribute('width'));\n"
    "  var frames = [], zoomed = null, searching = false;\n"
    "  var byId = function (id) { return document.getElementById(id); };\n"
    "  var details = byId('details'), matched = byId('matched');\n"
    "  var unzoomBtn = byId('unzoom'), searchBtn = byId('search');\n"
    "  var gs = document.getElementsByClassName('f');\n"
    "  var i;\n"
    "  for (i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    frames.push({\n"
    "      g: g, r: r, t: g.getElementsByTagName('text')[0],\n"
    "      x: parseFloat(r.getAttribute('x')),\n"
    "      w: parseFloat(r.getAttribute('width')),\n"
    "      y: parseFloat(r.getAttribute('y')),\n"
    "      fill: r.getAttribute('fill'),\n"
    "      label: g.getAttribute('data-l'),\n"
    "      info: g.getElementsByTagName('title')[0].textContent\n"
    "    });\n"
    "  }\n"
    "  function fit(f, x, w) {\n"
    "    var chars = Array.from ? Array.from(f.label) : f.label.split('');\n"
    "    var n = Math.floor((w - 6) / CHAR_W);\n"
    "    f.r.setAttribute('x', x.toFixed(3));\n"
    "    f.r.setAttribute('width', w.toFixed(3));\n"
    "    f.t.setAttribute('x', (x + 3).toFixed(3));\n"
    "    f.t.textContent = n < 3 ? '' : chars.length <= n ? f.label :\n"
    "        chars.slice(0, n - 2).join('') + '..';\n"
    "  }\n"
    "  function show(f) {\n"
    "    f.g.classList.remove('hide');\n"
    "    f.g.classList.remove('parent');\n"
    "  }\n"
    "  function unzoom() {\n"
    "    frames.forEach(function (f) { show(f); fit(f, f.x, f.w); });\n"
    "    zoomed = null;\n"
    "    unzoomBtn.classList.add('off');\n"
    "  }\n"
    "  function zoom(z) {\n"
    "    var eps = 0.01, scale = (W - 2 * PAD) / z.w;\n"
    "    if (z.w >= W - 2 * PAD - eps) { unzoom(); return; }\n"
    "    frames.forEach(function (f) {\n"
    "      show(f);\n"
    "      if (f.y <= z.y + eps && f.x >= z.x - eps &&\n"
    "          f.x + f.w <= z.x + z.w + eps) {\n"
    "        fit(f, PAD + (f.x - z.x) * scale, f.w * scale);\n"
    "      } else if (f.y > z.y + eps && f.x <= z.x + eps &&\n"
    "          f.x + f.w >= z.x + z.w - eps) {\n"
    "        f.g.classList.add('parent');\n"
    "        fit(f, PAD, W - 2 * PAD);\n"
    "      } else {\n"
    "        f.g.classList.add('hide');\n"
    "      }\n"
    "    });\n"
    "    zoomed = z;\n"
    "    unzoomBtn.classList.remove('off');\n"
    "  }\n"
    "  function resetSearch() {\n"
    "    frames.forEach(function (f) { f.r.setAttribute('fill', f.fill); });\n"
    "    matched.textContent = ' ';\n"
    "    searchBtn.textContent = 'Search';\n"
    "    searching = false;\n"
    "  }\n"
    "  function search(term) {\n"
    "    var re, hits = [], covered = 0, end = -1;\n"
    "    try { re = new RegExp(term); } catch (e) {\n"
    "      matched.textContent = 'Bad regular expression';\n"
    "      return;\n"
    "    }\n"
    "    frames.forEach(function (f) {\n"
    "      if (re.test(f.label)) {\n"
    "        f.r.setAttribute('fill', 'rgb(230,0,230)');\n"
    "        hits.push(f);\n"
    "      } else {\n"
    "        f.r.setAttribute('fill', f.fill);\n"
    "      }\n"
    "    });\n"
    "    /* Share of samples under a match: the union of the matched\n"
    "       frames' spans (a match inside a match counts once). */\n"
    "    hits.sort(function (a, b) { return a.x - b.x; });\n"
    "    hits.forEach(function (f) {\n"
    "      var s = Math.max(f.x, end), e = f.x + f.w;\n"
    "      if (e > s) covered += e - s;\n"
    "      if (e > end) end = e;\n"
    "    });\n"
    "    matched.textContent = 'Matched: ' +\n"
    "        (100 * covered / (W - 2 * PAD)).toFixed(2) + '% (' +\n"
    "        hits.length + ' frames)';\n"
    "    searchBtn.textContent = 'Reset Search';\n"
    "    searching = true;\n"
    "  }\n"
    "  function askSearch() {\n"
    "    var term = window.prompt('Search frames (regular expression):', '');\n"
    "    if (term) search(term);\n"
    "  }\n"
    "  frames.forEach(function (f) {\n"
    "    f.g.addEventListener('click', function () { zoom(f); });\n"
    "    f.g.addEventListener('mouseover', function () {\n"
    "      details.textContent = f.info;\n"
    "    });\n"
    "    f.g.addEventListener('mouseout', function () {\n"
    "      details.textContent = ' ';\n"
    "    });\n"
    "  });\n"
    "  unzoomBtn.addEventListener('click', unzoom);\n"
    "  searchBtn.addEventListener('click', function () {\n"
    "    if (searching) resetSearch(); else askSearch();\n"
    "  });\n"
    "  document.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && e.key === 'f') {\n"
    "      e.preventDefault();\n"
    "      askSearch();\n"
    "    } else if (e.key === 'Escape') {\n"
    "      if (zoomed) unzoom(); else resetSearch();\n"
    "    }\n"
    "  });\n"
    "})();\n";

static void write_node(FILE *f, const struct pst__profile *p,
                       const struct node *nd, char *const *labels,
                       uint64_t total, double scale, int img_h) {
  const struct pst__prof_frame *fr =
      nd->frame == NONE ? NULL : pst__profile_frame(p, nd->frame);
  const char *label = fr ? labels[nd->frame] : "all";
  double w = total ? (double)nd->count * scale : IMG_W - 2 * XPAD;
  double x = XPAD + (double)nd->start * scale;
  int y = img_h - BOTTOM - (int)(nd->depth + 1) * FRAME_H;
  double avail = (w - 6) / CHAR_W;
  size_t fit = avail > 0 ? (size_t)avail : 0, chars;
  char color[32];

  frame_color(fr, color, sizeof(color));
  fputs("<g class=\"f\" data-l=\"", f);
  put_xml(f, label, SIZE_MAX);
  fputs("\"><title>", f);
  put_xml(f, label, SIZE_MAX);
  fprintf(f, ": %" PRIu64 " sample%s, %.2f%%</title>", nd->count,
          nd->count == 1 ? "" : "s",
          total ? 100.0 * (double)nd->count / (double)total : 0.0);
  fprintf(f,
          "<rect x=\"%.3f\" y=\"%d\" width=\"%.3f\" height=\"%d\" "
          "fill=\"%s\" rx=\"2\" ry=\"2\"/>",
          x, y, w, FRAME_H - 1, color);
  fprintf(f, "<text x=\"%.3f\" y=\"%d\">", x + 3, y + FRAME_H - 4);
  chars = pst__writer_utf8_chars(label);
  if (fit >= 3 && chars <= fit)
    put_xml(f, label, SIZE_MAX);
  else if (fit >= 3) {
    put_xml(f, label, fit - 2);
    fputs("..", f);
  }
  fputs("</text></g>\n", f);
}

static int flamegraph_write(const struct pst__profile *p, FILE *f) {
  char **labels = pst__writer_labels(p, PST_CLEAN_CTRL);
  struct tree t = {0};
  uint64_t total;
  double scale;
  int err = -ENOMEM, img_h;

  if (!labels)
    goto out;
  err = tree_build(p, &t, labels);
  if (err)
    goto out;
  total = t.v[0].count;
  scale = total ? (double)(IMG_W - 2 * XPAD) / (double)total : 0;
  img_h = TOP + (int)(t.max_depth + 1) * FRAME_H + BOTTOM;

  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
          IMG_W, img_h, IMG_W, img_h);
  fputs(svg_style, f);
  fputs("<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
        "<stop offset=\"5%\" stop-color=\"#eeeeee\"/>"
        "<stop offset=\"95%\" stop-color=\"#eeeeb0\"/>"
        "</linearGradient></defs>\n",
        f);
  fprintf(f,
          "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
          "fill=\"url(#bg)\"/>\n",
          IMG_W, img_h);
  fprintf(f,
          "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">"
          "Flame graph</text>\n"
          "<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">"
          "%" PRIu64 " samples, %zu threads, %zu processes, period %.3f ms"
          "</text>\n",
          IMG_W / 2, IMG_W / 2, total, pst__profile_nthreads(p),
          pst__profile_nprocesses(p), (double)pst__profile_period_ns(p) / 1e6);
  fprintf(f,
          "<text id=\"unzoom\" class=\"btn off\" x=\"%d\" y=\"24\">"
          "Reset Zoom</text>\n"
          "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" "
          "text-anchor=\"end\">Search</text>\n"
          "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> "
          "</text>\n"
          "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
          XPAD, IMG_W - XPAD, IMG_W - XPAD, img_h - 12, XPAD, img_h - 12);
  fputs("<g id=\"frames\">\n", f);
  for (size_t i = 0; i < t.n; i++)
    if (!total || (double)t.v[i].count * scale >= MIN_W)
      write_node(f, p, &t.v[i], labels, total, scale, img_h);
  fputs("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
  fprintf(f, "var PAD = %d, CHAR_W = %.2f;\n", XPAD, CHAR_W);
  fputs(svg_script, f);
  fputs("]]></script>\n</svg>\n", f);
  err = ferror(f) ? -EIO : 0;
out:
  free(t.v);
  free(t.parents);
  pst__hash_exit(&t.ids);
  pst__writer_labels_free(p, labels);
  return err;
}

const struct pst__writer_ops pst__writer_flamegraph = {
    .name = "flamegraph",
    .ext = ".svg",
    .desc = "interactive SVG flame graph of all threads (zoom, search)",
    .write = flamegraph_write,
};
