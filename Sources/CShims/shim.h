#ifndef CONCORD_CSHIMS_SHIM_H
#define CONCORD_CSHIMS_SHIM_H
/* What Swift cannot call directly, for the git formats (ConcordGitFormats) and the bounded
   loose-object reader (ConcordGit): zlib through typed wrappers (Swift never touches a z_stream),
   Linux's renameat2 and glibc's malloc tuning. Built with -DCONCORD_PORTABLE (`make test-portable`),
   the Linux-only calls are left out and each caller takes its portable path, as on other systems. */
#include <zlib.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#if defined(__linux__) && !defined(CONCORD_PORTABLE)
#define CONCORD_LINUX_CALLS 1
#include <sys/syscall.h>
#include <malloc.h>
#include <unistd.h>
#endif

/* Swaps two existing paths in one step (Linux renameat2 with RENAME_EXCHANGE, which glibc's
   headers hide behind _GNU_SOURCE); -1 with errno set where the system or file system lacks it
   (elsewhere, and with CONCORD_PORTABLE, always: the caller then renames). */
static inline int concord_rename_exchange(const char *from, const char *to) {
#if defined(CONCORD_LINUX_CALLS) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 2 /* RENAME_EXCHANGE */);
#else
    errno = ENOSYS;
    return -1;
#endif
}


/* Deflates `length` bytes at `level` into `out` (capacity `*out_length`, updated); Z_OK on success. */
static inline int concord_deflate(const unsigned char *data, unsigned long length, unsigned char *out,
                                  unsigned long *out_length, int level) {
    return compress2(out, out_length, data, length, level);
}
static inline unsigned long concord_crc32(unsigned long crc, const unsigned char *data, unsigned int length) {
    return crc32(crc, data, length);
}
static inline unsigned long concord_adler32(unsigned long adler, const unsigned char *data, unsigned int length) {
    return adler32(adler, data, length);
}
static inline unsigned long concord_deflate_bound(unsigned long length) {
    return compressBound(length);
}

/* One deflate stream reused for many small objects: compress2 sets up (and frees) ~256 KiB of
   state per call, which costs more than compressing a 300-byte record. */
typedef struct { z_stream stream; } concord_deflater;

static inline concord_deflater *concord_deflater_new(int level) {
    concord_deflater *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (deflateInit(&d->stream, level) != Z_OK) { free(d); return NULL; }
    return d;
}

/* Deflates `length` bytes into `out` (capacity `*out_length`, updated); Z_OK on success. */
static inline int concord_deflater_run(concord_deflater *d, const unsigned char *data, unsigned long length,
                                       unsigned char *out, unsigned long *out_length) {
    if (deflateReset(&d->stream) != Z_OK) return Z_STREAM_ERROR;
    d->stream.next_in = (Bytef *)data;
    d->stream.avail_in = (uInt)length;
    d->stream.next_out = out;
    d->stream.avail_out = (uInt)*out_length;
    int result = deflate(&d->stream, Z_FINISH);
    if (result != Z_STREAM_END) return result == Z_OK ? Z_BUF_ERROR : result;
    *out_length -= d->stream.avail_out;
    return Z_OK;
}

static inline void concord_deflater_free(concord_deflater *d) {
    if (d) { deflateEnd(&d->stream); free(d); }
}
/* One inflate stream reused for many objects of a pack (inflateInit allocates its state each time). */
typedef struct { z_stream stream; } concord_inflater;

static inline concord_inflater *concord_inflater_new(void) {
    concord_inflater *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (inflateInit(&d->stream) != Z_OK) { free(d); return NULL; }
    return d;
}

/* Inflates the zlib stream starting at `in` (it may end before `in_len`) into `out`, which has
   room for `size` + 1 bytes: 0 when the stream is whole and holds exactly `size` bytes, -1
   otherwise (damaged, truncated, more or fewer bytes); *consumed is then the stream's length.
   One inflate call: time and memory are bounded by `in_len` and `size`. */
static inline int concord_inflater_run(concord_inflater *d, const unsigned char *in, size_t in_len,
                                       unsigned char *out, size_t size, size_t *consumed) {
    if (in_len > 0xFFFFFFFFu || size >= 0xFFFFFFFFu || inflateReset(&d->stream) != Z_OK) return -1;
    d->stream.next_in = (Bytef *)in;
    d->stream.avail_in = (uInt)in_len;
    d->stream.next_out = out;
    d->stream.avail_out = (uInt)(size + 1);
    int r = inflate(&d->stream, Z_FINISH);
    *consumed = in_len - d->stream.avail_in;
    return r == Z_STREAM_END && d->stream.avail_out == 1 ? 0 : -1;
}

static inline void concord_inflater_free(concord_inflater *d) {
    if (d) { inflateEnd(&d->stream); free(d); }
}

/* Inflates the start of the zlib stream `in` into `out` (at most `out_len` bytes): how many
 * bytes came out, or -1 when the stream is damaged before that. For a delta's header. */
static inline long concord_inflate_prefix(const unsigned char *in, size_t in_len, unsigned char *out, size_t out_len) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit(&s) != Z_OK) return -1;
    s.next_in = (unsigned char *)in;
    s.avail_in = (uInt)in_len;
    s.next_out = out;
    s.avail_out = (uInt)out_len;
    int r = inflate(&s, Z_SYNC_FLUSH);
    long produced = (long)(out_len - s.avail_out);
    inflateEnd(&s);
    if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) return -1;
    return produced;
}

/* For a one-shot command that allocates and frees large buffers: freed memory is kept for the
 * next allocation instead of handed back to the kernel and faulted in again (below 32 MiB from
 * the heap, not mmap; up to 256 MiB free at the top of the heap kept). */
static inline void concord_keep_freed_memory(void) {
#if defined(CONCORD_LINUX_CALLS) && defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, 32 << 20);
#endif
}

/* Gives the heap's free memory back to the system: glibc's malloc_trim(0); nothing elsewhere
   (and with CONCORD_PORTABLE), where the allocator returns freed pages itself. */
static inline void concord_return_freed_memory(void) {
#if defined(CONCORD_LINUX_CALLS) && defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* Inflates one loose object file (`in`, `in_len` bytes) whose header must declare at most
   `max_size` bytes of content. On success returns 0 and sets *out (malloc'd, to be freed with
   free()) to the header and content, *out_len to their length. Returns -2 when the declared size
   is over `max_size` (that size in *out_len, nothing inflated), -1 for anything else that is wrong: not zlib, truncated, no header, more or
   less content than declared, data after the end. Memory and time are bounded by the declared size
   and the input: every inflate call either makes progress or stops the loop. */
static inline int concord_inflate_loose(const unsigned char *in, size_t in_len, size_t max_size,
                                        unsigned char **out, size_t *out_len) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (in_len > 0xFFFFFFFFu || inflateInit(&s) != Z_OK) return -1;
    unsigned char head[64];
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)in_len;
    s.next_out = head;
    s.avail_out = sizeof head;
    int r = inflate(&s, Z_NO_FLUSH);
    if (r != Z_OK && r != Z_STREAM_END) { inflateEnd(&s); return -1; }
    size_t got = sizeof head - s.avail_out;
    unsigned char *nul = memchr(head, 0, got);
    unsigned char *space = nul ? memchr(head, ' ', (size_t)(nul - head)) : NULL;
    if (!space || space + 1 == nul) { inflateEnd(&s); return -1; }
    size_t size = 0;
    int over = 0;
    for (unsigned char *p = space + 1; p < nul; p++) {
        if (*p < '0' || *p > '9') { inflateEnd(&s); return -1; }
        if (size < ((size_t)1 << 56)) size = size * 10 + (size_t)(*p - '0');
        if (size > max_size) over = 1;
    }
    /* Over the bound: refused from the declared size (given in out_len), nothing inflated. */
    if (over) { *out_len = size; inflateEnd(&s); return -2; }
    size_t total = (size_t)(nul - head) + 1 + size;
    if (got > total) { inflateEnd(&s); return -1; }
    unsigned char *buffer = malloc(total + 1);
    if (!buffer) { inflateEnd(&s); return -1; }
    memcpy(buffer, head, got);
    s.next_out = buffer + got;
    s.avail_out = (uInt)(total + 1 - got);
    while (r != Z_STREAM_END) {
        r = inflate(&s, Z_NO_FLUSH);
        if (r != Z_OK && r != Z_STREAM_END) break;
    }
    size_t produced = total + 1 - s.avail_out;
    int trailing = s.avail_in != 0;
    inflateEnd(&s);
    if (r != Z_STREAM_END || produced != total || trailing) { free(buffer); return -1; }
    *out = buffer;
    *out_len = total;
    return 0;
}
#endif
