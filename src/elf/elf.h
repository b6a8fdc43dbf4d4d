/* elf.h: reading ELF files of the target with libelf: symbols, sections,
 * bytes at a virtual address, and the load bias of a mapping.
 *
 * pst__elf_open() takes ownership of the fd and maps the file read-only;
 * pst__elf_close() unmaps and closes it. Lookups return file-relative virtual
 * addresses (add the load bias for a runtime address).
 *
 * The file is the target's: it may be truncated while mapped. A read of a
 * page past its new end does not kill pystitch with SIGBUS: a process-wide
 * handler (installed at the first open) replaces that page with zeros and
 * marks the image faulted. Whoever read from an image (directly, or through
 * these functions) checks pst__elf_faulted() afterwards and drops what it
 * read: that module is an error, not a crash.
 */
#ifndef PST_ELF_H
#define PST_ELF_H

#include <stddef.h>
#include <stdint.h>

struct pst__elf;

/* Takes ownership of fd whatever happens (closed on failure, else by
 * pst__elf_close). Returns 0 and *out, -ENOEXEC (not ELF), or -errno. */
int pst__elf_open(int fd, struct pst__elf **out);
void pst__elf_close(struct pst__elf *e);

/* ELF e_machine (EM_X86_64, EM_AARCH64) and e_type (ET_EXEC, ET_DYN). */
int pst__elf_machine(const struct pst__elf *e);
int pst__elf_type(const struct pst__elf *e);

/* Looks name up in .dynsym, then .symtab (local symbols included). Returns
 * 0 with *value (and *size if non-NULL), or PST_ENOSYM. */
int pst__elf_symbol(const struct pst__elf *e, const char *name, uint64_t *value,
                    uint64_t *size);

/* Looks up n names in one pass over .dynsym and .symtab (a missing name
 * costs one full scan per call, so batch them). values[i] (and sizes[i] if
 * sizes is non-NULL) are set for each name found and left 0 otherwise.
 * Returns the number of names found. */
int pst__elf_symbols(const struct pst__elf *e, const char *const *names,
                     size_t n, uint64_t *values, uint64_t *sizes);

/* Address and size of section name, or PST_ENOSYM. */
int pst__elf_section(const struct pst__elf *e, const char *name, uint64_t *addr,
                     uint64_t *size);

/* The file bytes of section name (borrowed from the mapping, valid until
 * pst__elf_close), or NULL. */
const void *pst__elf_section_bytes(const struct pst__elf *e, const char *name,
                                   uint64_t *size);

/* Copies len bytes at virtual address vaddr from the file's PT_LOAD segments.
 * Bytes past a segment's file size (bss) read as zero. 0 or -EFAULT. */
int pst__elf_read(const struct pst__elf *e, uint64_t vaddr, void *buf,
                  size_t len);

/* 1 when a page of e's mapping was found past the end of the file (it reads
 * as zeros from then on): what was read from e may be wrong. */
int pst__elf_faulted(const struct pst__elf *e);
/* How many such pages all images have had: a cheap check that nothing
 * faulted during an operation (compare before and after). */
unsigned long pst__elf_faults(void);

/* The whole file as mapped read-only by pst__elf_open (borrowed, valid until
 * pst__elf_close); *len gets its size. */
const void *pst__elf_image(const struct pst__elf *e, size_t *len);

/* The first program header of type (PT_GNU_EH_FRAME, ...): its virtual
 * address, file offset and file size. 0 or PST_ENOSYM. */
int pst__elf_segment(const struct pst__elf *e, unsigned type, uint64_t *vaddr,
                     uint64_t *offset, uint64_t *filesz);

/* Load bias: runtime address = vaddr + bias, given the runtime start of the
 * mapping that maps file offset map_offset. 0 or -EINVAL. */
int pst__elf_bias(const struct pst__elf *e, uint64_t map_start,
                  uint64_t map_offset, uint64_t *bias);

#endif
