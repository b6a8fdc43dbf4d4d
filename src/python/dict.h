/* dict.h: reading the target's dict objects, of every CPython layout, and
 * the str and int objects used as their keys. Internal to src/python: the
 * one dict reader behind thread names (threadname.c) and the thread
 * registry (registry.c).
 *
 * A dict is read in steps that can also run on bytes the caller read
 * itself (the registry batches them with other reads):
 *   head   the dict object: type, ma_used, ma_keys and ma_values (3.x),
 *          ma_mask and ma_table (2.7);
 *   table  where its entries are: from the keys object's header (3.x), or
 *          the table and mask (2.7);
 *   items  the live (key, value) pairs of the entries, values taken from
 *          the split values array when there is one.
 * Every count read from the target is bounded by a caller's maximum, and
 * every parse checks what it reads; garbage gives PST_EBADDATA.
 *
 * Nothing here allocates memory the caller must free; the helpers that
 * read entries allocate a scratch buffer for the call only.
 */
#ifndef PST_PY_DICT_H
#define PST_PY_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "proc/mem.h"
#include "python/python.h"

/* Room for a dict object's head: every field used lies in it (checked by
 * pst__py_layout_check()). A 3.x PyDictObject is exactly 48 bytes, 64 in a
 * free-threaded build (its PyObject is 16 bytes longer); PST_PY_DICT_LEN
 * is what is read. */
#define PST_PY_DICT_HEAD 64
#define PST_PY_DICT_LEN(py) ((size_t)(py)->lay.ob_type + 40)
/* Bytes read of a keys object's header (3.6-3.10: 40, 3.11+: 32). */
#define PST_PY_KEYS_HEAD 40
/* Bytes read of an int object: its header and two 30-bit digits, enough for
 * any value below 2^60 (a thread ident is a user-space address): 32, or 48
 * in a free-threaded build (PST_PY_INT_LEN); PST_PY_INT_READ is the room. */
#define PST_PY_INT_READ 48
#define PST_PY_INT_LEN(py) ((size_t)(py)->lay.ob_type + 24)

/* What a dict object's head says. */
struct pst__py_dict_head {
  int64_t used;    /* ma_used */
  uint64_t keys;   /* ma_keys (3.x), ma_table (2.7) */
  uint64_t values; /* ma_values (3.x; 0 when combined), 0 on 2.7 */
  int64_t mask;    /* ma_mask (2.7), else 0 */
};

/* Where a dict's entries are. */
struct pst__py_dict_table {
  uint64_t keys;    /* the keys object (3.x) or the table (2.7) */
  uint64_t entries; /* address of entry 0 */
  uint64_t values;  /* the split values array's first value, or 0 */
  int64_t n;        /* entries to scan: dk_nentries, or ma_mask + 1 */
  int64_t nvalues;  /* values readable in the split array (<= n) */
  int esize;        /* bytes per entry: 24 {hash, key, value}, or 16
                        {key, value} (3.11+ str-keyed and split kinds) */
  int key_off;      /* offset of the key in an entry; the value follows */
};

/* One live entry of a dict. */
struct pst__py_dict_item {
  uint64_t key, value;
  uint64_t slot; /* target address of the word holding value */
};

/* Parses a dict object's first PST_PY_DICT_HEAD bytes (buf, read at addr
 * dict). Checks ob_type against PyDict_Type when known and ma_used against
 * max. 0 or PST_EBADDATA. */
int pst__py_dict_head_parse(const struct pst__py *py, const uint8_t *buf,
                            int64_t max, struct pst__py_dict_head *h);

/* Fills t from a dict head and, on 3.x, the first PST_PY_KEYS_HEAD bytes of
 * its keys object (khdr; NULL on 2.7). values is the split values array as
 * ma_values gives it (0 if none). 0, or PST_EBADDATA when the header is
 * not a keys object of this version or has more than max entries. */
int pst__py_dict_table_parse(const struct pst__py *py, uint64_t keys,
                             const uint8_t *khdr, uint64_t values, int64_t mask,
                             int64_t max, struct pst__py_dict_table *t);

/* Bytes from t->keys to the end of its last entry: what to read to have
 * the whole keys object (3.x) or table (2.7) in one piece. */
size_t pst__py_dict_table_span(const struct pst__py_dict_table *t);

/* The live items of t from a copy of its entries (ents: t->n * t->esize
 * bytes read at t->entries) and, when t->values, of its values (vals:
 * t->nvalues words). Entries with no key or no value (deleted, or being
 * written) are skipped. Returns the count stored in out (at most max). */
int pst__py_dict_items_parse(const struct pst__py_dict_table *t,
                             const uint8_t *ents, const uint64_t *vals,
                             struct pst__py_dict_item *out, int max);

/* Reads the head of the dict object at dict (into *h, may be NULL) and
 * the header of its keys: 2 reads (1 on 2.7; 3 for a 3.13+ split dict).
 * 0, -errno or PST_EBADDATA. */
int pst__py_dict_open(struct pst__py *py, struct pst__mem *mem, uint64_t dict,
                      int64_t max, struct pst__py_dict_table *t,
                      struct pst__py_dict_head *h);

/* The same for a keys object with its values array (an instance's shared
 * keys with its split or inline values, 3.x): 1 read. */
int pst__py_keys_open(struct pst__py *py, struct pst__mem *mem, uint64_t keys,
                      uint64_t values, int64_t nvalues, int64_t max,
                      struct pst__py_dict_table *t);

/* Reads t's entries (and values) and returns its live items in out (at most
 * max): 1 read. The count, or -errno, -ENOMEM. */
int pst__py_dict_items(struct pst__py *py, struct pst__mem *mem,
                       const struct pst__py_dict_table *t,
                       struct pst__py_dict_item *out, int max);

/* Index in items of the one whose key is the str name (ASCII, < 64
 * bytes), or PST_ENOSYM, or -errno. Key strings are read in batches (one
 * read per 256 keys). *memo (may be NULL) is a key object known to be name
 * (names of attributes and globals are interned: a pointer compare finds
 * them); set when found. */
int pst__py_dict_find_str(struct pst__py *py, struct pst__mem *mem,
                          const struct pst__py_dict_item *items, int n,
                          const char *name, uint64_t *memo);

/* Looks name up in the dict object at dict (at most max entries): the
 * value, and where the entry holds it (*slot, may be NULL). 0, PST_ENOSYM
 * (no such key), -errno or PST_EBADDATA. 3 reads, plus the key strings'
 * when *memo does not match. */
int pst__py_dict_get_str(struct pst__py *py, struct pst__mem *mem,
                         uint64_t dict, int64_t max, const char *name,
                         uint64_t *memo, uint64_t *value, uint64_t *slot);

/* The namespace of module name: sys.modules[name].__dict__ (the dict
 * object's address in *dict). memo as for pst__py_dict_find_str(). 0,
 * PST_ENOSYM (not imported, or no sys.modules yet), PST_EBADDATA (not a
 * module), -errno. */
int pst__py_module_dict(struct pst__py *py, struct pst__mem *mem,
                        const char *name, uint64_t *memo, uint64_t *dict);

/* threadname.c: the instance attribute attr (a str key, < 64 bytes) of the
 * object at obj, wherever its version keeps instance attributes (a dict at
 * tp_dictoffset, a managed dict, split or inline values): its value and
 * the address holding it (*slot, may be NULL). memo as for
 * pst__py_dict_find_str(): one per attribute name. 0, PST_ENOSYM (no such
 * attribute, or no instance dict), -errno or PST_EBADDATA. */
int pst__py_instance_attr(struct pst__py *py, struct pst__mem *mem,
                          uint64_t obj, const char *attr, uint64_t *memo,
                          uint64_t *value, uint64_t *slot);

/* The value of an int object (PyLong; PyInt or PyLong on 2.7) from its
 * first len bytes (buf), as an unsigned 64-bit number. Checks the type
 * against PyLong_Type/PyInt_Type when known. 0, or PST_EBADDATA (not an
 * int, negative, wider than 64 bits, or more digits than len holds). */
int pst__py_int_parse(const struct pst__py *py, const uint8_t *buf, size_t len,
                      uint64_t *out);

#endif
