/*
 * rabs-landlock: the script sandbox's second layer (broker/handlers/sandbox.py). Inside the
 * bubblewrap sandbox, restrict this process and everything it starts with the kernel's Landlock
 * LSM, then exec the script:
 *
 *   rabs-landlock [--ro PATH]... [--rw PATH]... [--connect PORT]... -- PROGRAM ARGS...
 *
 * --ro: execute, read files, list directories beneath PATH. --rw: everything beneath PATH.
 * Nothing else of the filesystem is reachable. Where the kernel's Landlock ABI has them: TCP
 * bind refused and TCP connect only to the --connect ports (ABI 4), no abstract unix sockets or
 * signals outside the sandbox (ABI 6). Without Landlock in the kernel it exits 125 and says so
 * (the control plane checks first and does not use it then).
 *
 * Built by `make install` (cc -O2 -o var/bin/rabs-landlock broker/handlers/landlock.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

/* The uapi, spelled out: this machine's headers may be older than its kernel. */
struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
struct path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));
struct net_port_attr {
    uint64_t allowed_access;
    uint64_t port;
};
#define RULE_PATH_BENEATH 1
#define RULE_NET_PORT 2
#define CREATE_RULESET_VERSION (1U << 0)

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_V1_ALL ((1ULL << 13) - 1) /* execute … make_sym */
#define FS_REFER (1ULL << 13)        /* ABI 2 */
#define FS_TRUNCATE (1ULL << 14)     /* ABI 3 */
#define FS_IOCTL_DEV (1ULL << 15)    /* ABI 5 */
#define NET_BIND_TCP (1ULL << 0)     /* ABI 4 */
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define SCOPE_SIGNAL (1ULL << 1)

static void die(const char *what) {
    fprintf(stderr, "rabs-landlock: %s: %s\n", what, strerror(errno));
    exit(125);
}

int main(int argc, char **argv) {
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION);
    if (abi < 1) {
        fprintf(stderr, "rabs-landlock: the kernel has no Landlock\n");
        return 125;
    }
    uint64_t fs_all = FS_V1_ALL;
    if (abi >= 2) fs_all |= FS_REFER;
    if (abi >= 3) fs_all |= FS_TRUNCATE;
    if (abi >= 5) fs_all |= FS_IOCTL_DEV;
    struct ruleset_attr attr = {.handled_access_fs = fs_all};
    size_t attr_size = sizeof(uint64_t);
    if (abi >= 4) {
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
        attr_size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6) {
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL;
        attr_size = sizeof(attr);
    }
    int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
    if (ruleset < 0) die("landlock_create_ruleset");

    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "rabs-landlock: %s needs a value\n", argv[i]);
            return 125;
        }
        const char *flag = argv[i], *value = argv[i + 1];
        if (strcmp(flag, "--connect") == 0) {
            if (abi < 4) continue;
            struct net_port_attr port = {.allowed_access = NET_CONNECT_TCP,
                                         .port = strtoull(value, NULL, 10)};
            if (syscall(__NR_landlock_add_rule, ruleset, RULE_NET_PORT, &port, 0)) die(value);
            continue;
        }
        uint64_t access;
        if (strcmp(flag, "--ro") == 0) {
            access = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;
        } else if (strcmp(flag, "--rw") == 0) {
            access = fs_all;
        } else {
            fprintf(stderr, "rabs-landlock: unknown option %s\n", flag);
            return 125;
        }
        int fd = open(value, O_PATH | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT) continue; /* an optional path this sandbox does not have */
            die(value);
        }
        struct path_beneath_attr beneath = {.allowed_access = access, .parent_fd = fd};
        /* A file (not a directory) takes only the file rights. */
        if (syscall(__NR_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &beneath, 0)) {
            beneath.allowed_access &= FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE |
                                      FS_IOCTL_DEV;
            if (syscall(__NR_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &beneath, 0))
                die(value);
        }
        close(fd);
    }
    if (i >= argc - 1) {
        fprintf(stderr, "rabs-landlock: no program after --\n");
        return 125;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("no_new_privs");
    if (syscall(__NR_landlock_restrict_self, ruleset, 0)) die("landlock_restrict_self");
    close(ruleset);
    execvp(argv[i + 1], &argv[i + 1]);
    die(argv[i + 1]);
}
