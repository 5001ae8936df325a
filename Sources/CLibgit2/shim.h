#ifndef CONCORD_CLIBGIT2_SHIM_H
#define CONCORD_CLIBGIT2_SHIM_H
#include <git2.h>
#include <git2/sys/merge.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
#include <zlib.h>

/* git_libgit2_opts is variadic, which Swift cannot call: one typed wrapper per shape used. */
static inline int concord_git_opts_int(int option, int value) {
    return git_libgit2_opts(option, value);
}

static inline int concord_git_opts_cache_limit(int type, size_t limit) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, (git_object_t)type, limit);
}

/* Deflates `length` bytes at `level` into `out` (capacity `*out_length`, updated); Z_OK on success. */
static inline int concord_deflate(const unsigned char *data, unsigned long length, unsigned char *out,
                                  unsigned long *out_length, int level) {
    return compress2(out, out_length, data, length, level);
}
static inline unsigned long concord_crc32(unsigned long crc, const unsigned char *data, unsigned int length) {
    return crc32(crc, data, length);
}
static inline unsigned long concord_deflate_bound(unsigned long length) {
    return compressBound(length);
}
#endif
