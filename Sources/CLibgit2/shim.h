#ifndef CONCORD_CLIBGIT2_SHIM_H
#define CONCORD_CLIBGIT2_SHIM_H
#include <git2.h>
#include <git2/sys/merge.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
#include <stdlib.h>
#include <string.h>

/* git_libgit2_opts is variadic, which Swift cannot call: one typed wrapper per shape used. */
static inline int concord_git_opts_int(int option, int value) {
    return git_libgit2_opts(option, value);
}

static inline int concord_git_opts_cache_limit(int type, size_t limit) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, (git_object_t)type, limit);
}

static inline int concord_git_opts_cache_max_size(ssize_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, bytes);
}

static inline int concord_git_opts_mwindow_file_limit(size_t files) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_FILE_LIMIT, files);
}

static inline size_t concord_git_opts_get_mwindow_file_limit(void) {
    size_t files = 0;
    git_libgit2_opts(GIT_OPT_GET_MWINDOW_FILE_LIMIT, &files);
    return files;
}

/* An object database backend and a pack writer with a pointer of concord's after libgit2's part
 * (`PackWriteBounds`): libgit2 hands back only the pointer to its part, the first field. */
typedef struct { git_odb_backend parent; void *context; } concord_odb_backend;
typedef struct { git_odb_writepack parent; void *context; } concord_odb_writepack;

#endif
