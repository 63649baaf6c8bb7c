/* LD_PRELOAD shim for tests/iso_input_once.rs: the owner of an input ISO
 * changing it at a chosen moment of a run, with no race. At the first
 * open(2) of a path starting with $SWAP_TRIGGER (the output's directory:
 * the copy's temp file is made there after every check of the input), or
 * at the first openat(2) that makes a file (O_TMPFILE, O_CREAT: the copy's
 * temp file, made on the output directory's descriptor), it first changes
 * $SWAP_INPUT into the bytes of $SWAP_WITH:
 *   SWAP_MODE=rename: renames $SWAP_WITH over it (a new file at the path);
 *   SWAP_MODE=write:  writes them into it (the same file, changed).
 * Every open of $SWAP_INPUT is counted into $SWAP_COUNT (one line each). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int done;

static void copy_into(const char *from, const char *to) {
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, "open64");
    int in = real(from, O_RDONLY), out = real(to, O_WRONLY);
    char buf[65536];
    ssize_t n;
    if (in < 0 || out < 0) abort();
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n) abort();
    close(in);
    close(out);
}

static void swap(void);

static void before_open(const char *path) {
    const char *trigger = getenv("SWAP_TRIGGER"), *input = getenv("SWAP_INPUT");
    const char *with = getenv("SWAP_WITH"), *mode = getenv("SWAP_MODE");
    const char *count = getenv("SWAP_COUNT");
    if (!path || !input) return;
    if (strcmp(path, input) == 0 && count) {
        FILE *f = fopen(count, "a");
        if (f) {
            fputs("open\n", f);
            fclose(f);
        }
    }
    if (done || !trigger || !with || !mode) return;
    if (strncmp(path, trigger, strlen(trigger)) != 0) return;
    swap();
}

static void swap(void) {
    const char *input = getenv("SWAP_INPUT"), *with = getenv("SWAP_WITH");
    const char *mode = getenv("SWAP_MODE");
    if (done || !getenv("SWAP_TRIGGER") || !input || !with || !mode) return;
    done = 1;
    if (strcmp(mode, "rename") == 0) {
        if (rename(with, input) != 0) abort();
    } else {
        copy_into(with, input);
    }
}

#define MODE_ARG                                  \
    mode_t m = 0;                                 \
    if (flags & (O_CREAT | __O_TMPFILE)) {        \
        va_list ap;                               \
        va_start(ap, flags);                      \
        m = va_arg(ap, mode_t);                   \
        va_end(ap);                               \
    }

int open64(const char *path, int flags, ...) {
    MODE_ARG
    before_open(path);
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, "open64");
    return real(path, flags, m);
}

int open(const char *path, int flags, ...) {
    MODE_ARG
    before_open(path);
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
    return real(path, flags, m);
}

int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG
    if (flags & (O_CREAT | __O_TMPFILE)) swap();
    int (*real)(int, const char *, int, ...) = dlsym(RTLD_NEXT, "openat");
    return real(dirfd, path, flags, m);
}
