/* LD_PRELOAD shim for tests/io_safety_dirs.rs (review 19 r19c F3):
 * another user swapping the FIFO given to -o for a link of theirs right
 * after the program looked at it, with no race. The stat-family lookup of
 * exactly $SWAP_AT that succeeds, after $SWAP_SKIP such lookups, renames
 * $SWAP_AT to $SWAP_AT.moved and makes the link $SWAP_AT -> $SWAP_TO
 * owned by uid/gid $SWAP_UID, then returns the first answer. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int done, seen;

static void after(const char *path, int ret) {
    const char *at = getenv("SWAP_AT"), *to = getenv("SWAP_TO"), *uid = getenv("SWAP_UID");
    if (done || ret != 0 || !path || !at || !to || !uid || strcmp(path, at) != 0) return;
    const char *skip = getenv("SWAP_SKIP");
    if (skip && seen++ < atoi(skip)) return;
    done = 1;
    int saved = errno;
    char moved[4096];
    snprintf(moved, sizeof moved, "%s.moved", at);
    if (rename(at, moved) != 0) abort();
    if (symlink(to, at) != 0) abort();
    if (lchown(at, atoi(uid), atoi(uid)) != 0) abort();
    errno = saved;
}

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
    int (*real)(int, const char *, int, unsigned, struct statx *) = dlsym(RTLD_NEXT, "statx");
    int ret = real(dirfd, path, flags, mask, buf);
    after(path, ret);
    return ret;
}

int lstat64(const char *path, struct stat64 *buf) {
    int (*real)(const char *, struct stat64 *) = dlsym(RTLD_NEXT, "lstat64");
    int ret = real(path, buf);
    after(path, ret);
    return ret;
}

int lstat(const char *path, struct stat *buf) {
    int (*real)(const char *, struct stat *) = dlsym(RTLD_NEXT, "lstat");
    int ret = real(path, buf);
    after(path, ret);
    return ret;
}
