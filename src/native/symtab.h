/* symtab.h: address-to-function-name lookup for one ELF image, for the
 * --native feature (symbolising the instruction pointers of native frames).
 *
 * A struct pst__symtab is built once per module from the ELF image in memory
 * and is immutable afterwards, so any number of threads may look up in it
 * at once without locking. It holds every defined function symbol
 * (STT_FUNC and STT_GNU_IFUNC, local ones included) of:
 *   - .symtab and .dynsym;
 *   - MiniDebugInfo: the .gnu_debugdata section, an xz-compressed ELF whose
 *     .symtab holds the local functions of a stripped binary (Fedora ships
 *     them; see GDB's manual, "MiniDebugInfo"). Decompressed with liblzma,
 *     at most PST_SYMTAB_MAX_DEBUGDATA bytes, not recursively;
 *   - with pst__symtab_build_debug(), the .symtab of the image's separate
 *     debug file (found by debuginfo.h: build-id or .gnu_debuglink).
 * Symbols of size 0 get the size up to the next symbol (or to the end of
 * their section). Aliases (several names at one address) are all kept; a
 * lookup returns the preferred one: a sized symbol, then GLOBAL before WEAK
 * before LOCAL, then fewer leading underscores, then the shorter name (what
 * perf shows: __nanosleep, not its weak alias nanosleep).
 *
 * Names: C++ ("_Z") names are demangled once, at build time, by libiberty
 * (cplus_demangle_v3_callback with DMGL_PARAMS | DMGL_ANSI, the demangler
 * of binutils and GDB), so lookups return e.g. "ns::Foo<int>::bar(int)",
 * and a GCC clone "ns::f() [clone .cold]". Why libiberty and not
 * libstdc++'s __cxa_demangle: it is plain C (no C++ runtime in
 * libpystitch); its callback form writes straight into our name pool, with
 * no allocation per name and with a cap on the output (a mangled name can
 * expand a lot through substitutions); and Debian's libiberty.a
 * (libiberty-dev, no pkg-config file: configure.ac checks header and
 * library) is built position-independent (only PC-relative, PLT and GOT
 * relocations), so it links into the shared libpystitch.so (and
 * --exclude-libs keeps its symbols out of our exports). Names longer than
 * 16 KiB mangled or 64 KiB demangled, and names that fail to demangle, are
 * kept mangled.
 *
 * Memory: one sorted array of 16-byte entries {start, size, name offset}
 * plus one pool of NUL-terminated names; nothing points into the image.
 * A symbol's size is clamped below 2 GiB.
 *
 * Input is untrusted: every offset, size and count read from the image is
 * checked against its length (and the decompressed one against its own), so
 * no input makes pst__symtab_build() read out of bounds. Only ELF64 in the
 * host's byte order is read (pystitch runs on x86_64 and aarch64 only);
 * anything else is -ENOEXEC.
 */
#ifndef PST_NATIVE_SYMTAB_H
#define PST_NATIVE_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

/* Cap on the decompressed size of .gnu_debugdata; a larger one is ignored
 * (the table is built from the outer symbols alone). */
#define PST_SYMTAB_MAX_DEBUGDATA ((size_t)64 << 20)

struct pst__symtab;

/* Builds the sorted function table of the ELF image [image, image + len).
 * The image is only borrowed during the call: the table copies what it
 * keeps, so the image may be unmapped afterwards. An image with no function
 * symbol gives an empty table (every lookup NULL), not an error.
 * Returns 0 and *out (free it with pst__symtab_free), -ENOEXEC when the image
 * is not an ELF64 file of the host's byte order or its section header table
 * is out of bounds, -ENOMEM, or -EOVERFLOW (names past 4 GiB). A corrupt symbol section, string table or
 * .gnu_debugdata is skipped, not an error. *out is untouched on failure. */
int pst__symtab_build(const void *image, size_t len, struct pst__symtab **out);

/* pst__symtab_build() of image plus the function symbols of its separate
 * debug file (debuginfo.h), the image [debug, debug + debug_len], whose
 * addresses are the image's link-time ones: one table, as if the image had
 * never been stripped. Both are borrowed during the call only. A debug
 * image that is not ELF64 is left out (logged at debug level), not an
 * error; debug NULL is pst__symtab_build(). Same returns as
 * pst__symtab_build(). */
int pst__symtab_build_debug(const void *image, size_t len, const void *debug,
                            size_t debug_len, struct pst__symtab **out);

/* Frees t and its names. NULL is a no-op. */
void pst__symtab_free(struct pst__symtab *t);

/* The function containing vaddr, a file-relative virtual address (runtime
 * ip minus the module's load bias). Returns its demangled name, borrowed
 * from t (valid until pst__symtab_free), and sets *offset (if non-NULL) to
 * vaddr minus the symbol's start; NULL when no symbol covers vaddr. */
const char *pst__symtab_lookup(const struct pst__symtab *t, uint64_t vaddr,
                               uint64_t *offset);

/* The ranges [starts[i], ends[i]) of every symbol whose (demangled) name is
 * name, or name followed by a GCC clone suffix: "." as in ".cold",
 * ".part.0", ".isra.0", ".constprop.0", or " [clone " for demangled C++.
 * For _PyEval_EvalFrameDefault this gives the function and its .cold part.
 * Fills at most max ranges, in address order; returns how many there are
 * (which may exceed max), 0 when none. Linear in the table: not for the
 * sampling path. */
int pst__symtab_ranges(const struct pst__symtab *t, const char *name,
                       uint64_t *starts, uint64_t *ends, int max);

/* Number of symbols held (aliases included). */
size_t pst__symtab_count(const struct pst__symtab *t);

/* Bytes allocated for t: the structure, its entries and its name pool. */
size_t pst__symtab_memory(const struct pst__symtab *t);

#endif
