/* sa-launch: the small process between speedaudit's runner and the measured program.
 *
 * Why hand-written (no library does this): the peak RSS that wait4 reports for a process
 * includes what it had *before* exec, and a child forked from the runner starts as a copy of
 * the runner (tens of MB with pandas loaded, GBs in a Dask worker). This launcher forks the
 * program itself, so the program's pre-exec RSS is the launcher's (~1 MB), and reports the
 * program's own rusage and wall time (monotonic clock around fork and reap).
 *
 * In the child, before exec, it confines the program:
 *   - (serve mode, flag VIEW) a private mount and IPC namespace with a new root: a tmpfs of
 *     `scratch_bytes` (the quota of everything the program may write: its scratch = working
 *     directory, at the same path as on the host, and fresh /tmp, /var/tmp, /dev/shm), the system directories (/usr, /bin, /lib*, /sbin,
 *     /etc) and the program's own files bound read-only, a few device nodes, and a fresh /proc
 *     with hidepid=2 (it sees only its own processes). Nothing of the host's /tmp, /dev/shm,
 *     the suite, the answers or the journals is in that view, and the whole tree is gone when
 *     the program's last process exits;
 *   - rlimits (address space, file size, process count, CPU, no core dumps), no new
 *     privileges (setuid binaries do not elevate), an unprivileged uid, a fresh session
 *     keyring, and a seccomp filter (see install_filter: user namespaces, keyrings, io_uring,
 *     memfd_secret, bpf, perf events, priority / scheduling class / affinity);
 *   - (serve mode with --cgroup) a cgroup per run, joined ahead by the standby child, whose
 *     counters give the whole tree's CPU and peak memory and whose limit covers memfd and
 *     tmpfs pages (see cg_prepare);
 *   - its own process group, killed as a whole when the program ends or when the runner sends
 *     SIGUSR1 (wall limit, output cap) or dies (PR_SET_PDEATHSIG).
 * The launcher reaps the program only after the group was killed (so the group id cannot be
 * reused while signalled), reaps every orphan at once as a subreaper (zombies count against
 * RLIMIT_NPROC) and kills survivors that left the group, by uid.
 *
 * The launcher is not dumpable (PR_SET_DUMPABLE 0): a program of the same uid cannot ptrace
 * it or read its memory. Inside bwrap it runs as pid 1 of the sandbox's pid namespace
 * (`--as-pid-1`) and installs no handler for any signal the program could send, so the kernel
 * drops every signal from inside the namespace (SIGKILL included); it dies only with bwrap
 * (PR_SET_PDEATHSIG SIGKILL from the outer side).
 *
 * Serve mode ("zygote"), one per runner thread: a request is one SOCK_SEQPACKET message
 * carrying the program's stdin/stdout/stderr (and optionally a 4th descriptor, which the
 * program gets as fd 3: the report channel of an instruction counter; with --nested the 4th and
 * 5th are the inner launcher's report and kill lines, and an optional 6th becomes fd 9, which
 * the inner launcher hands to the program as fd 3, see REPORT_FD) as SCM_RIGHTS; it costs one fork of a 1 MB process instead of a fork
 * of the runner plus an exec of the launcher, and that fork happens before the request: a
 * standby child (see `standby`) builds the request-independent part of the view (--view
 * DIR) ahead, then takes the request itself. With --netns the server first moves itself into
 * a new, empty network namespace (no interface is up, not even loopback), which every program
 * it starts inherits: no socket of the host is reachable; after a run that left any socket
 * in it, it moves to a fresh one (see `sockets_in_netns`).
 *
 * Build: cc -O2 -pthread -static -o sa-launch launcher.c, or without -static where the C library's
 * archive is missing (speedaudit builds it once per machine into its cache, keyed by the SHA-256 of
 * this file: a change of these flags is a change of this line).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#define FLAG_VIEW 1          /* private mount + IPC namespace with the minimal root described above */

/* The program being run (0 = none) and whether it has been reaped. */
static volatile sig_atomic_t child = 0, reaped = 1, stop = 0;

static void on_kill(int sig) {           /* SIGUSR1 (serve mode): kill the program's group */
    (void)sig;
    stop = 1;
    if (child > 0 && !reaped) kill(-child, SIGKILL);
}

static void on_die(int sig) {            /* serve mode: the runner is gone */
    (void)sig;
    if (child > 0 && !reaped) kill(-child, SIGKILL);
    _exit(0);
}

typedef void (*report_fn)(void *ctx, const char *text);

static void report_fd(void *ctx, const char *text) {
    int fd = *(int *)ctx;
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t k = write(fd, text, n);
        if (k < 0) { if (errno == EINTR) continue; return; }
        text += k; n -= (size_t)k;
    }
}

static void report_sock(void *ctx, const char *text) {
    int fd = *(int *)ctx;
    while (send(fd, text, strlen(text), MSG_NOSIGNAL) < 0 && errno == EINTR) {}
}

/* Kill every process of `uid` (the sandbox's own uid: nothing else runs under it). */
static void sweep(long long uid) {
    if (uid < 0 && geteuid() == 0) return;        /* never kill(-1) as root */
    if (uid < 0) { kill(-1, SIGKILL); return; }   /* we already are the unprivileged uid */
    pid_t p = fork();
    if (p == 0) {
        if (setgroups(0, NULL) == 0 && setgid((gid_t)uid) == 0 && setuid((uid_t)uid) == 0) kill(-1, SIGKILL);
        _exit(0);
    }
}

static int limit(int which, long long soft, long long hard) {
    struct rlimit rl;
    if (soft < 0) return 0;
    rl.rlim_cur = (rlim_t)soft; rl.rlim_max = (rlim_t)hard;
    return setrlimit(which, &rl);
}

/* A standby child (see serve) builds its view before it has the program's stderr: there a
   failure is kept in `failed` and reported once the request (with the descriptors) arrives. */
static jmp_buf *fail_jump = NULL;
static char failed[512];

static void fail(const char *what, const char *path) {
    if (fail_jump) {
        snprintf(failed, sizeof failed, "sa-launch: %s %s: %s\n", what, path ? path : "", strerror(errno));
        longjmp(*fail_jump, 1);
    }
    fprintf(stderr, "sa-launch: %s %s: %s\n", what, path ? path : "", strerror(errno));
    _exit(126);
}

/* mkdir -p of `path` (absolute, inside the new root `box`), every level 0755 root. */
static void make_dirs(const char *box, const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s%s", box, path) >= (int)sizeof buf) { errno = ENAMETOOLONG; fail("path", path); }
    for (char *p = buf + strlen(box) + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) fail("mkdir", buf);
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) fail("mkdir", buf);
}

/* Bind `src` read-only (no setuid, no devices) at the same path inside `box`. */
static void bind_ro(const char *box, const char *src) {
    char dst[4096];
    struct stat st;
    if (stat(src, &st) != 0) return;             /* vanished: nothing to show */
    if (snprintf(dst, sizeof dst, "%s%s", box, src) >= (int)sizeof dst) { errno = ENAMETOOLONG; fail("path", src); }
    if (S_ISDIR(st.st_mode)) {
        make_dirs(box, src);
    } else {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", src);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) { *slash = 0; make_dirs(box, parent); }
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) fail("create", dst);
        if (fd >= 0) close(fd);
    }
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0) fail("bind", src);
    if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0)
        fail("remount read-only", src);
}

/* A system path: a directory is bound read-only, a symlink (merged /usr: /bin -> usr/bin) copied. */
static void system_path(const char *box, const char *path) {
    struct stat st;
    char dst[4096], target[4096];
    if (lstat(path, &st) != 0) return;
    snprintf(dst, sizeof dst, "%s%s", box, path);
    if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 0) fail("readlink", path);
        target[n] = 0;
        if (symlink(target, dst) != 0 && errno != EEXIST) fail("symlink", dst);
    } else if (S_ISDIR(st.st_mode)) {
        bind_ro(box, path);
    }
}

static void node(const char *box, const char *name, int major, int minor) {
    char dst[4096];
    snprintf(dst, sizeof dst, "%s/dev/%s", box, name);
    if (mknod(dst, S_IFCHR | 0666, makedev(major, minor)) != 0) fail("mknod", dst);
    chmod(dst, 0666);
}

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
struct mount_attr { unsigned long long attr_set, attr_clr, propagation, userns_fd; };
#endif

/* A detached copy of the host's mount tree (open_tree OPEN_TREE_CLONE of "/"), taken by a
   standby child before it pivots into its new root: the program's own files (known only
   with the request) are cloned from it, so pivot_root and the detach of the old root, whose
   RCU wait was the largest part of the view left on each run's path (0.2 ms of 0.3 ms,
   measured), happen before the request. -1: not available (old kernel), the view then
   pivots after the request as before. The copy is never visible to the program (it is no
   mount of the program's namespace, and the descriptor is close-on-exec and closed before
   the exec; the launcher drops it after the report, off the measured path). */
static int host_tree = -1;
/* How a standby child hands it over: a socket pair the launcher makes before it enters its
   network namespace (so it is no socket of that namespace; see sockets_in_netns). */
static int tree_pair[2] = {-1, -1};

/* Bind `src` (absolute, resolved inside host_tree as its root) read-only at the same path in the new root. */
static void bind_from_tree(const char *src) {
    struct stat st;
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT;
    int at = (int)syscall(SYS_openat2, host_tree, src, &how, sizeof how);
    if (at < 0) return;                           /* vanished: nothing to show */
    if (fstat(at, &st) != 0) fail("stat", src);
    if (S_ISDIR(st.st_mode)) {
        make_dirs("", src);
    } else {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", src);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) { *slash = 0; make_dirs("", parent); }
        int fd = open(src, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) fail("create", src);
        if (fd >= 0) close(fd);
    }
    int mnt = (int)syscall(SYS_open_tree, at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    close(at);
    if (mnt < 0) fail("bind", src);
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (syscall(SYS_mount_setattr, mnt, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0)
        fail("remount read-only", src);
    if (syscall(SYS_move_mount, mnt, "", AT_FDCWD, src, MOVE_MOUNT_F_EMPTY_PATH) != 0) fail("bind", src);
    close(mnt);
}

static void enter_root(const char *box) {
    if (chdir(box) != 0) fail("chdir", box);
    if (syscall(SYS_pivot_root, ".", ".") != 0) fail("pivot_root", box);
    if (umount2(".", MNT_DETACH) != 0) fail("detach the old root", "");
    if (chdir("/") != 0) fail("chdir", "/");
}

/* The private view (see the header), in two halves. prepare_view: everything that does not
   depend on the request (namespaces, the tmpfs root, system directories, devices, /proc);
   finish_view: the program's own files, its scratch, the tmpfs's size, pivot_root. Both
   run in the forked child, as root, before the uid switch. A standby child (serve mode)
   runs prepare_view while it waits for the request, so that part is off each run's path. */
static int high_fd(int fd);

static void prepare_view(const char *box, long long scratch_bytes) {
    static const char *system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", NULL};
    char opts[128], path[4096];
    if (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0) fail("unshare", "(mount, ipc)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("make private", "/");
    snprintf(opts, sizeof opts, "size=%lld,nr_inodes=65536,mode=0755", scratch_bytes);
    if (mount("speedaudit", box, "tmpfs", MS_NOSUID, opts) != 0) fail("mount tmpfs", box);
    for (int i = 0; system_dirs[i]; i++) system_path(box, system_dirs[i]);
    static const char *dirs[] = {"/dev", "/proc", "/tmp", "/var", "/var/tmp", "/dev/shm", NULL};
    for (int i = 0; dirs[i]; i++) make_dirs(box, dirs[i]);
    node(box, "null", 1, 3); node(box, "zero", 1, 5); node(box, "full", 1, 7);
    node(box, "random", 1, 8); node(box, "urandom", 1, 9);
    static const char *links[][2] = {{"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
                                     {"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"}};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s%s", box, links[i][1]);
        if (symlink(links[i][0], path) != 0) fail("symlink", path);
    }
    static const char *sticky[] = {"/tmp", "/var/tmp", "/dev/shm", NULL};
    for (int i = 0; sticky[i]; i++) {
        snprintf(path, sizeof path, "%s%s", box, sticky[i]);
        if (chmod(path, 01777) != 0) fail("chmod", path);
    }
    snprintf(path, sizeof path, "%s/proc", box);
    if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") != 0) fail("mount proc", path);
    /* clear of 0-9, where child_setup puts the request's descriptors (a report channel on 3) */
    host_tree = high_fd((int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    if (host_tree >= 0) enter_root(box);
}

static void finish_view(const char *box, const char *scratch, long long scratch_bytes, long long prepared_bytes,
                        long long uid, char **keep, int n_keep) {
    char opts[128];
    const char *root = host_tree >= 0 ? "" : box;   /* already inside the new root, or not yet */
    if (scratch_bytes != prepared_bytes) {   /* the request's quota differs from the standby's guess */
        snprintf(opts, sizeof opts, "size=%lld,nr_inodes=65536,mode=0755", scratch_bytes);
        if (mount(NULL, host_tree >= 0 ? "/" : box, NULL, MS_REMOUNT | MS_NOSUID, opts) != 0) fail("resize tmpfs", box);
    }
    for (int i = 0; i < n_keep; i++) {
        if (host_tree >= 0) bind_from_tree(keep[i]); else bind_ro(box, keep[i]);
    }
    make_dirs(root, scratch);                        /* the scratch: the program's own, empty */
    char path[4096];
    snprintf(path, sizeof path, "%s%s", root, scratch);
    if (uid >= 0 && chown(path, (uid_t)uid, (gid_t)uid) != 0) fail("chown", path);
    if (chmod(path, 0700) != 0) fail("chmod", path);
    if (host_tree < 0) enter_root(box);
}

/* Tearing a mount namespace down waits for an RCU grace period (milliseconds on a busy
   machine), and it happens when the last reference goes. If that were the program's exit, it
   would be part of the measured wall time; so the launcher holds a reference to each run's
   namespace (an open /proc/PID/ns/mnt) and a thread of its own drops it after the report. */
static int closer_w = -1;

/* Per-run cgroups (serve mode with --cgroup DIR, one DIR per cgroup v1 hierarchy: memory and
   cpuacct, each a folder speedaudit made under the runner's own cgroup). For every run the
   standby child makes DIR/<launcher pid>-<n>/prog first thing after its fork (under bwrap one run
   ahead, see serve) and joins it at once, before the request (see serve; a migration waits for an RCU grace period: cgroup_threadgroup_rwsem
   leaves its fast path, unless another migration on the machine happened within the last grace
   period; 0.02 to 13-70 ms measured, for a fresh and a reused cgroup alike, so reusing folders
   would not save it). When the request comes it sets the memory limit of prog to the
   address-space limit plus the scratch quota and (local) resets the counters (cpuacct.usage,
   memory.max_usage_in_bytes). Under bwrap everything the standby starts is born in prog: bwrap,
   the inner launcher and the program, so nothing migrates on the runner's path (until 2026-12-06
   bwrap sat in a folder of its own and the inner launcher's child joined prog, a migration per
   run); the inner launcher resets the counters when it forks the program and reads them when the
   program's tree is gone, through descriptors the standby hands down (cg_hand_down, opened by
   root: the kernel checks the opener's credentials), less bwrap's own usage then (see
   cg_start_inherited). After the run, once prog holds no process: CPU (cpuacct.usage: every
   task's CPU, also of children that were never waited for or were reaped by the kernel, SIGCHLD
   ignored), peak memory (memory.max_usage_in_bytes: the tree's sum at once, with tmpfs, memfd,
   pipe and kernel memory) and the kernel's OOM kills (memory.oom_control). The folders are
   removed by the closer thread. They are never reused: a memory cgroup keeps the page cache its
   runs were first to read charged after they ended (50 MB read by one run was the peak of the
   next, measured). */
#define MAX_CG 4
static const char *cg_base[MAX_CG];
static int n_cg = 0, cg_mem = -1, cg_cpu = -1, nested = 0;
static long long cg_seq = 0;
static pid_t cg_owner = 0;   /* the launcher's pid, which names its runs' folders (also in its standby children) */
/* the next run's folders and the descriptors the standby needs after it left the host's view
   (prog's cgroup.procs, its limit and counters; --nested: also its usage, for the inner launcher) */
struct cgrun { long long seq; int ok; int prog[MAX_CG]; int limit, max_usage, usage, current; };
static struct cgrun cg = { 0, 0, {-1, -1, -1, -1}, -1, -1, -1, -1 };

/* A descriptor moved to 10 or above (close-on-exec): the standby child dup2s the request's
   descriptors onto 0-4 (nested: also the cgroup counters onto 5-8), which must not land on its own. */
static int high_fd(int fd) {
    if (fd < 0 || fd >= 10) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return moved;
}

static int cg_file(char *buf, size_t size, int i, long long seq, const char *leaf, const char *file) {
    int n = snprintf(buf, size, "%s/%d-%lld%s%s%s%s", cg_base[i], (int)cg_owner, seq, leaf ? "/" : "",
                     leaf ? leaf : "", file ? "/" : "", file ? file : "");
    return n > 0 && (size_t)n < size;
}

/* Nanoseconds from `a` to `b` (CLOCK_MONOTONIC readings). */
static long long ns_between(struct timespec a, struct timespec b) {
    return (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
}

/* How long the launcher waits, after a run, for the program's last processes to leave (reaped
   orphans; an empty cgroup): a killed process exits within milliseconds unless the kernel holds
   it (a large address space being freed, I/O in flight); 2 s bounds a run's clean-up. */
#define DRAIN_NS 2000000000LL

static long long read_number(const char *path, const char *key) {
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    if (!key) return atoll(buf);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t k = strlen(key);
        if (strncmp(line, key, k) == 0 && line[k] == ' ') return atoll(line + k + 1);
    }
    return -1;
}

static void cg_remove(long long seq, int patient) {
    static const char *order[] = {"prog", NULL};
    char path[4096];
    for (int i = 0; i < n_cg; i++) {
        for (int j = 0; j <= 1; j++) {
            if (!cg_file(path, sizeof path, i, seq, order[j], NULL)) continue;
            for (int tries = 0; rmdir(path) != 0 && errno == EBUSY && patient && tries < 400; tries++) usleep(5000);
        }
    }
}

/* Run `seq`'s folders, made by its standby child itself, first thing after the fork: the
   launcher's own path (between a request and its waitid, see serve) keeps only the fork. */
static void cg_prepare(long long seq) {
    char path[4096];
    cg.seq = seq;
    cg.ok = n_cg > 0;
    for (int i = 0; i < n_cg; i++) {
        cg.prog[i] = -1;
        static const char *leaves[] = {NULL, "prog"};
        for (int j = 0; j < 2 && cg.ok; j++)
            if (!cg_file(path, sizeof path, i, cg.seq, leaves[j], NULL) || mkdir(path, 0755) != 0) cg.ok = 0;
        if (cg.ok && cg_file(path, sizeof path, i, cg.seq, "prog", "cgroup.procs"))
            cg.prog[i] = high_fd(open(path, O_WRONLY | O_CLOEXEC));
        if (cg.prog[i] < 0) cg.ok = 0;
    }
    /* --nested: read and written by the inner launcher too (see cg_hand_down) */
    int rw = nested ? O_RDWR : O_WRONLY;
    cg.limit = cg.max_usage = cg.usage = cg.current = -1;
    if (cg.ok && cg_mem >= 0 && cg_file(path, sizeof path, cg_mem, cg.seq, "prog", "memory.limit_in_bytes"))
        cg.limit = high_fd(open(path, rw | O_CLOEXEC));
    if (cg.ok && cg_mem >= 0 && cg_file(path, sizeof path, cg_mem, cg.seq, "prog", "memory.max_usage_in_bytes"))
        cg.max_usage = high_fd(open(path, rw | O_CLOEXEC));
    if (cg.ok && cg_mem >= 0 && nested && cg_file(path, sizeof path, cg_mem, cg.seq, "prog", "memory.usage_in_bytes"))
        cg.current = high_fd(open(path, O_RDONLY | O_CLOEXEC));
    if (cg.ok && cg_cpu >= 0 && cg_file(path, sizeof path, cg_cpu, cg.seq, "prog", "cpuacct.usage"))
        cg.usage = high_fd(open(path, rw | O_CLOEXEC));
    if ((cg_mem >= 0 && (cg.limit < 0 || cg.max_usage < 0 || (nested && cg.current < 0)))
        || (cg_cpu >= 0 && cg.usage < 0)) cg.ok = 0;
}

/* In the standby child, before the request: join prog. 0 on success. */
static int cg_join_ahead(void) {
    if (!cg.ok) return -1;
    for (int i = 0; i < n_cg; i++)
        if (write(cg.prog[i], "0", 1) != 1) return -1;
    return 0;
}

/* In the standby child, with the request: set prog's memory limit and (local) reset the counters;
   under bwrap the inner launcher resets them when it forks the program (cg_start_inherited). */
static int cg_request(long long as, long long scratch_bytes) {
    char text[64];
    int ok = 1;
    if (!cg.ok) return -1;
    if (cg.max_usage >= 0 && !nested) ok = ok && write(cg.max_usage, "0", 1) == 1;
    if (cg.limit >= 0 && as >= 0) {
        snprintf(text, sizeof text, "%lld", as + (scratch_bytes > 0 ? scratch_bytes : 0));
        ok = ok && write(cg.limit, text, strlen(text)) == (ssize_t)strlen(text);
    }
    if (cg.usage >= 0 && !nested) ok = ok && write(cg.usage, "0", 1) == 1;
    return ok ? 0 : -1;
}

/* The descriptors of prog's counters the inner launcher gets (--nested; see cg_hand_down). */
#define CG_FD_CPU 5        /* cpuacct.usage, read-write */
#define CG_FD_PEAK 6       /* memory.max_usage_in_bytes, read-write */
#define CG_FD_CURRENT 7    /* memory.usage_in_bytes, read */
#define CG_FD_LIMIT 8      /* memory.limit_in_bytes, read-write */

/* In the standby child just before exec (--nested): prog's counters as fds 5-8 for the inner
   launcher, which resets them when the program starts and reads them when its tree is gone. */
static void cg_hand_down(void) {
    int from[4] = {cg.usage, cg.max_usage, cg.current, cg.limit}, high[4];
    for (int k = 0; k < 4; k++) high[k] = from[k] >= 0 ? fcntl(from[k], F_DUPFD_CLOEXEC, 100) : -1;
    for (int k = 0; k < 4; k++)
        if (high[k] >= 0 && dup2(high[k], CG_FD_CPU + k) == CG_FD_CPU + k) fcntl(CG_FD_CPU + k, F_SETFD, 0);
}

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
/* The inner launcher under bwrap (one shot): bwrap, this launcher and the program are all in the
   run's cgroup `prog` from their birth (the outer standby joined it before it exec'd bwrap), so no
   process migrates on the runner's path (a migration waits for an RCU grace period: 2.7-5.1 ms per
   run on average, measured at load 11-12, when the inner launcher's child joined prog itself).
   The program's own figures are taken around it: just before the fork the counters are reset
   (cpuacct.usage to 0, memory.max_usage_in_bytes to the usage then) and the usage then, bwrap's
   and this launcher's (`cg_base_bytes`), is read and added to the memory limit; once the program
   and every orphan are reaped, CPU and peak are read (the peak less that base). */
static int cg_inherited = 0;               /* fds 5-8 are prog's counters (cg_hand_down) */
static int cg_has_cpu = 0, cg_has_peak = 0; /* which of them are, each checked on its own */
static long long cg_base_bytes = 0;

static int cg_fd_ok(int fd) {
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 && fs.f_type == CGROUP_SUPER_MAGIC;
}

static long long cg_read_fd(int fd) {
    char buf[64];
    if (lseek(fd, 0, SEEK_SET) != 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0) return -1;
    buf[n] = 0;
    return atoll(buf);
}

static int cg_write_fd(int fd, long long value) {
    char text[32];
    int n = snprintf(text, sizeof text, "%lld", value);
    return write(fd, text, (size_t)n) == n ? 0 : -1;
}

/* Before the fork: reset, read the base, widen the limit by it. */
static void cg_start_inherited(void) {
    int cpu = cg_fd_ok(CG_FD_CPU), peak = cg_fd_ok(CG_FD_PEAK), cur = cg_fd_ok(CG_FD_CURRENT);
    int lim = cg_fd_ok(CG_FD_LIMIT);
    cg_has_cpu = cpu && cg_write_fd(CG_FD_CPU, 0) == 0;
    cg_has_peak = peak && cg_write_fd(CG_FD_PEAK, 0) == 0;
    cg_inherited = cg_has_cpu || cg_has_peak;
    cg_base_bytes = cur ? cg_read_fd(CG_FD_CURRENT) : 0;
    if (cg_base_bytes < 0) cg_base_bytes = 0;
    long long limit = lim ? cg_read_fd(CG_FD_LIMIT) : -1;
    if (limit > 0 && limit < (1LL << 60) && cg_base_bytes > 0) cg_write_fd(CG_FD_LIMIT, limit + cg_base_bytes);
}

/* In the child before exec (and the parent after the fork): the counters are not the program's. */
static void cg_close_inherited(void) {
    for (int fd = CG_FD_CPU; fd <= CG_FD_LIMIT; fd++) if (cg_fd_ok(fd)) close(fd);
}

/* After the program and every orphan were reaped: the tree's CPU and peak since the reset. */
static void cg_read_inherited(long long *cpu_us, long long *peak_kb) {
    /* only an fd found to be a cgroup counter (and reset) is read: any other fd 5-8 is not the tree's */
    long long ns = cg_has_cpu ? cg_read_fd(CG_FD_CPU) : -1, peak = cg_has_peak ? cg_read_fd(CG_FD_PEAK) : -1;
    *cpu_us = ns >= 0 ? ns / 1000 : -1;
    *peak_kb = peak >= 0 ? (peak > cg_base_bytes ? peak - cg_base_bytes : 0) / 1024 : -1;
}

/* After the run (the program and every orphan reaped): wait until prog is empty, then read.
   Returns 0 when one of them still held a process after DRAIN_NS (the counters may then miss its
   last part), else 1. */
static int cg_measure(long long seq, long long *cpu_us, long long *peak_kb, long long *oom) {
    char path[4096];
    int drained = 1;
    *cpu_us = *peak_kb = *oom = -1;
    struct timespec ts, now;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (int i = 0; i < n_cg; i++) {
        static const char *leaves[] = {"prog"};
        for (int j = 0; j < 1; j++) {
            if (!cg_file(path, sizeof path, i, seq, leaves[j], "cgroup.procs")) continue;
            for (;;) {
                char buf[16];
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : 0;
                if (fd >= 0) close(fd);
                if (n <= 0) break;
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (ns_between(ts, now) >= DRAIN_NS) { drained = 0; break; }
                usleep(500);
            }
        }
    }
    if (cg_cpu >= 0 && cg_file(path, sizeof path, cg_cpu, seq, "prog", "cpuacct.usage")) {
        long long ns = read_number(path, NULL);
        if (ns >= 0) *cpu_us = ns / 1000;
    }
    if (cg_mem >= 0 && cg_file(path, sizeof path, cg_mem, seq, "prog", "memory.max_usage_in_bytes")) {
        long long bytes = read_number(path, NULL);
        if (bytes >= 0) *peak_kb = bytes / 1024;
        if (cg_file(path, sizeof path, cg_mem, seq, "prog", "memory.oom_control")) *oom = read_number(path, "oom_kill");
        if (*oom < 0) *oom = 0;
    }
    return drained;
}

/* Folders of launchers that died without removing them (SIGKILL): removed at start. */
static void cg_remove_stale(void) {
    for (int i = 0; i < n_cg; i++) {
        DIR *d = opendir(cg_base[i]);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            int pid;
            long long seq;
            char path[4096];
            if (sscanf(e->d_name, "%d-%lld", &pid, &seq) != 2 || (kill(pid, 0) == 0 || errno != ESRCH)) continue;
            static const char *leaves[] = {"prog", "box", ""};   /* box: bwrap's, before 2026-12-06 */
            for (int j = 0; j < 3; j++) {
                snprintf(path, sizeof path, "%s/%s/%s", cg_base[i], e->d_name, leaves[j]);
                rmdir(path);
            }
        }
        closedir(d);
    }
}

/* What the closer thread is given: a descriptor to close, then a run's cgroup folders to remove. */
struct closing { int fd; long long seq; };

/* One attempt at removing run `seq`'s folders, without waiting: 1 when they are all gone, 0 when
   one is still busy (a process of the run has not left it yet). */
static int cg_remove_once(long long seq) {
    static const char *order[] = {"prog", NULL};
    char path[4096];
    int gone = 1;
    for (int i = 0; i < n_cg; i++)
        for (int j = 0; j <= 1; j++)
            if (cg_file(path, sizeof path, i, seq, order[j], NULL) && rmdir(path) != 0 && errno == EBUSY) gone = 0;
    return gone;
}

/* The closer thread: closes descriptors and removes run folders off the runner's path. A folder
   still busy is retried, from 5 ms apart doubling to 1 s, until it empties, while later items are
   taken: a killed process can take seconds to leave its cgroup on a loaded machine (a large
   address space being freed, I/O in flight), and a closer that gave up after 2 s left the folder
   for the launcher's whole life (seen on CI, 2026-12-07: one run's memory folder beside the next
   runs' ones). MAX_BUSY folders at most wait; beyond that one is removed patiently, as before. */
#define MAX_BUSY 64
static void *closer(void *arg) {
    int r = *(int *)arg;
    long long busy[MAX_BUSY];
    int n_busy = 0, wait_ms = 5;
    struct timespec retry = {0, 0}, now;
    for (;;) {
        int timeout = -1;
        if (n_busy) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            long long left = (ns_between(now, retry) + 999999) / 1000000;
            timeout = left > 0 ? (int)left : 0;
        }
        struct pollfd p = { r, POLLIN, 0 };
        int ready = poll(&p, 1, timeout);
        if (ready < 0 && errno != EINTR) return NULL;
        if (ready > 0) {
            struct closing item;
            ssize_t n = read(r, &item, sizeof item);
            if (n < 0 && errno == EINTR) continue;
            if (n != (ssize_t)sizeof item) return NULL;
            if (item.fd >= 0) close(item.fd);
            if (item.seq > 0 && !cg_remove_once(item.seq)) {
                if (n_busy == 0) {
                    wait_ms = 5;
                    clock_gettime(CLOCK_MONOTONIC, &retry);
                    retry.tv_nsec += wait_ms * 1000000L;
                }
                if (n_busy < MAX_BUSY) busy[n_busy++] = item.seq;
                else cg_remove(item.seq, 1);
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (n_busy && ns_between(retry, now) >= 0) {   /* a timed retry (also between items) */
            int kept = 0;
            for (int k = 0; k < n_busy; k++)
                if (!cg_remove_once(busy[k])) busy[kept++] = busy[k];
            n_busy = kept;
            wait_ms = wait_ms < 500 ? wait_ms * 2 : 1000;
            retry = now;
            retry.tv_nsec += wait_ms * 1000000L;
        }
        if (retry.tv_nsec >= 1000000000L) { retry.tv_sec += retry.tv_nsec / 1000000000L; retry.tv_nsec %= 1000000000L; }
    }
}

static void release_run_later(int fd, long long seq) {
    if (fd < 0 && seq <= 0) return;
    if (closer_w < 0) {
        static int fds[2];
        pthread_t t;
        if (pipe2(fds, O_CLOEXEC) == 0 && pthread_create(&t, NULL, closer, &fds[0]) == 0) {
            pthread_detach(t);
            closer_w = fds[1];
        }
    }
    struct closing item = { fd, seq };
    if (closer_w < 0 || write(closer_w, &item, sizeof item) != (ssize_t)sizeof item) {
        if (fd >= 0) close(fd);
        if (seq > 0) cg_remove(seq, 0);
    }
}

static void release_later(int fd) { release_run_later(fd, 0); }

/* The program's seccomp filter (both sandboxes: the forked child under local, the inner
   launcher's child under bwrap), refusing with EPERM:
   - a user namespace of its own: under a user namespace a program gets capabilities over
     namespaces it makes, e.g. to mount a tmpfs of any size (bwrap also has --disable-userns):
     unshare/clone with CLONE_NEWUSER (clone3, whose flags a filter cannot read, gets ENOSYS,
     and the C library falls back to clone);
   - the kernel's state shared beyond the run: keyrings (keyctl, add_key, request_key: the
     uid's user keyring and a keyring made world-searchable outlive the run and are found by
     the next run of the uid, or by any uid), io_uring (its own kernel threads and registered
     buffers, outside the process tree's accounting), memfd_secret (memory no limit reads),
     bpf and perf_event_open (kernel-wide objects and counters), userfaultfd;
   - priority, scheduling class and affinity (setpriority, sched_setscheduler, sched_setparam,
     sched_setattr, sched_setaffinity, ioprio_set): a program could renice itself or its
     measurer (the inner launcher is its uid's under bwrap), switch to SCHED_IDLE or re-pin;
   - every system call of another ABI (i386, x32), whose numbers the filter would not recognise. */
#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#define __NR_io_uring_enter 426
#define __NR_io_uring_register 427
#endif
#define REFUSE(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
static int install_filter(void) {
#if defined(__x86_64__)
#define SA_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SA_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
#ifdef SA_AUDIT_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SA_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),           /* x32 system calls */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        REFUSE(__NR_keyctl), REFUSE(__NR_add_key), REFUSE(__NR_request_key),
        REFUSE(__NR_io_uring_setup), REFUSE(__NR_io_uring_enter), REFUSE(__NR_io_uring_register),
        REFUSE(__NR_memfd_secret), REFUSE(__NR_bpf), REFUSE(__NR_perf_event_open), REFUSE(__NR_userfaultfd),
        REFUSE(__NR_setpriority), REFUSE(__NR_sched_setscheduler), REFUSE(__NR_sched_setparam),
        REFUSE(__NR_sched_setattr), REFUSE(__NR_sched_setaffinity), REFUSE(__NR_ioprio_set),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof filter / sizeof filter[0]), filter };
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
    errno = ENOSYS;
    return -1;
#endif
}

struct request {
    long long uid, as, fsize, nproc, cpu, flags, scratch_bytes;
    const char *cwd;
    char **keep; int n_keep;
    char **argv, **envp;
};

/* The report channel of a counted run under bwrap (see the header): the outer standby puts the
   request's 6th descriptor on this number (clear of 3-4, the inner launcher's lines, and 5-8, the
   cgroup hand-down); the inner launcher, when it is a pipe, gives it to the program as fd 3. */
#define REPORT_FD 9
#define N_FDS 6

/* In the child: the program's descriptors, its own process group, default signal handlers. */
static void child_setup(const int *fds, int close_fd) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGUSR1, &dfl, NULL);
    setpgid(0, 0);
    if (close_fd >= 0) close(close_fd);
    if (fds) {   /* received close-on-exec: only the dup2 copies survive the exec */
        int high[N_FDS];  /* first out of the way of 0-4 and 9, then into place (one may sit on another's number) */
        for (int i = 0; i < N_FDS; i++) high[i] = fds[i] >= 0 ? fcntl(fds[i], F_DUPFD_CLOEXEC, 100) : -1;
        for (int i = 0; i < N_FDS; i++) {
            int target = i < 5 ? i : REPORT_FD;
            if (i < 3 && high[i] < 0) _exit(126);
            if (high[i] >= 0 && dup2(high[i], target) < 0) _exit(126);
            if (high[i] >= 0) close(high[i]);
        }
    }
}

/* In the child, after any view: rlimits, the uid, no new privileges, the filter, exec. */
static void confine_and_exec(const struct request *rq) {
    if (rq->cwd && rq->cwd[0] && chdir(rq->cwd) != 0) fail("cannot enter", rq->cwd);
    if (limit(RLIMIT_CORE, 0, 0) || limit(RLIMIT_AS, rq->as, rq->as) || limit(RLIMIT_FSIZE, rq->fsize, rq->fsize)
        || limit(RLIMIT_NPROC, rq->nproc, rq->nproc) || limit(RLIMIT_CPU, rq->cpu, rq->cpu < 0 ? rq->cpu : rq->cpu + 1))
        fail("setrlimit", "");
    if (rq->uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)rq->uid) || setuid((uid_t)rq->uid))) {
        fprintf(stderr, "sa-launch: cannot switch to uid %lld: %s\n", rq->uid, strerror(errno));
        _exit(126);
    }
    /* a fresh, empty session keyring of its own (the runner's, which it would otherwise
       inherit, can outlive the run); the filter then refuses every keyring call anyway */
    syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* --nested: the "program" is bwrap, which needs its namespaces; the inner launcher filters the real one */
    if (!nested && install_filter() != 0) fail("seccomp", "");
    if (rq->envp) execvpe(rq->argv[0], rq->argv, rq->envp); else execvp(rq->argv[0], rq->argv);
    fprintf(stderr, "sa-launch: cannot execute %s: %s\n", rq->argv[0], strerror(errno));
    _exit(127);
}

static ssize_t read_full(int fd, void *buf, size_t size);

/* One shot inside bwrap: fd 4, when it is a pipe, is the runner's kill line. The runner closes
   its end at the wall limit or the output cap; this thread then kills the program's group, and
   the launcher reaps and reports as for any end, so a run the runner killed is measured like
   any other (without it bwrap would be killed, and with it the only measuring process). */
#define KILL_FD 4
static void *kill_line(void *arg) {
    char byte;
    (void)arg;
    while (read(KILL_FD, &byte, 1) < 0 && errno == EINTR) {}
    stop = 1;
    if (child > 0 && !reaped) kill(-child, SIGKILL);
    return NULL;
}

/* One shot inside bwrap: fd 9, when it is a pipe, is the counted run's report channel, which
   the program gets as fd 3 (close-on-exec here: the inner launcher's own copy goes at exec). */
static int report_channel(void) {
    struct stat st;
    if (fstat(REPORT_FD, &st) != 0 || !S_ISFIFO(st.st_mode)) return -1;
    fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
    return REPORT_FD;
}

static int watch_kill_line(void) {
    struct stat st;
    pthread_t t;
    if (fstat(KILL_FD, &st) != 0 || !S_ISFIFO(st.st_mode)) return 0;
    fcntl(KILL_FD, F_SETFD, FD_CLOEXEC);
    if (pthread_create(&t, NULL, kill_line, NULL) != 0) return 0;
    pthread_detach(t);
    return 1;
}

/* Set when the orphan loop below reaped the next run's standby (it died: killed from outside),
   so that serve neither uses nor signals its pid, which may be another process's by then. */
static int spare_reaped = 0;

/* Whether `spare` is the launcher's only child (orphans of the program are reparented to the
   main thread, the subreaper, and listed with its children until they are reaped). */
static int only_child(pid_t spare) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *end;
    long first = strtol(buf, &end, 10);
    while (*end == ' ' || *end == '\n') end++;
    return first == (long)spare && *end == 0;
}

/* The program runs as `pid` (its own group) since t0: report the pid; wait; kill its group;
   reap it and every orphan (every child but `spare`, the next run's standby); report. */
static int watch(pid_t pid, long long uid, struct timespec t0, int t0_fd, int ns_fd, int cg_ok, long long seq,
                 pid_t spare, report_fn say, void *ctx) {
    char buf[256];
    struct timespec t1;
    reaped = 0;
    child = pid;
    if (stop) kill(-pid, SIGKILL);   /* the kill arrived while starting */
    if (t0_fd < 0) {                 /* (one shot: the child says it itself, once its clock runs) */
        snprintf(buf, sizeof buf, "pid %d\n", (int)pid);
        say(ctx, buf);
    }
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0) {
        if (errno != EINTR) { snprintf(buf, sizeof buf, "error waitid: %s\n", strerror(errno)); say(ctx, buf); return 125; }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (t0_fd >= 0) {                /* the child's own reading of the start (see run) */
        struct timespec own;
        if (read_full(t0_fd, &own, sizeof own) == (ssize_t)sizeof own) t0 = own;
        close(t0_fd);
    }
    kill(-pid, SIGKILL);             /* stray descendants in its group; the zombie keeps the id reserved */
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) { snprintf(buf, sizeof buf, "error wait4: %s\n", strerror(errno)); say(ctx, buf); return 125; }
    }
    reaped = 1;
    child = 0;
    /* Reap the rest at once: killed descendants would otherwise wait as zombies for init,
       and zombies still count against the uid's RLIMIT_NPROC. Survivors (a descendant that
       left the process group) are swept by uid. */
    int swept = 0, drained = 1;
    struct timespec ts, now;
    /* The tree's CPU without a cgroup: the program's rusage (with the children it waited for)
       plus every orphan's, reaped here as subreaper (or pid 1 under bwrap); its peak: the
       largest single process's. A child the kernel reaped itself (its parent ignored SIGCHLD)
       is in no rusage: only a cgroup counts it (see cg_measure). */
    long long tree_us = (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec
                        + (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
    long tree_rss = ru.ru_maxrss;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (;;) {
        struct rusage orphan;
        pid_t r = wait4(-1, NULL, WNOHANG, &orphan);
        if (r > 0 && r == spare) { spare_reaped = 1; continue; }   /* it died (killed from outside) */
        if (r > 0) {
            tree_us += (long long)orphan.ru_utime.tv_sec * 1000000LL + orphan.ru_utime.tv_usec
                       + (long long)orphan.ru_stime.tv_sec * 1000000LL + orphan.ru_stime.tv_usec;
            if (orphan.ru_maxrss > tree_rss) tree_rss = orphan.ru_maxrss;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (spare > 0 && only_child(spare)) break;   /* the next run's standby is no orphan */
        if (!swept) { sweep(uid); swept = 1; }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (ns_between(ts, now) >= DRAIN_NS) { drained = 0; break; }
        usleep(1000);
    }
    long long wall = ns_between(t0, t1);
    long long cg_us = -1, cg_kb = -1, oom = -1;
    if (cg_ok && !cg_measure(seq, &cg_us, &cg_kb, &oom)) drained = 0;
    if (!cg_ok && cg_inherited) cg_read_inherited(&cg_us, &cg_kb);   /* inner launcher (bwrap) */
    /* done STATUS WALL_NS USER_US SYS_US MAXRSS_KB TREE_CPU_US TREE_RSS_KB CG_CPU_US CG_PEAK_KB OOM_KILLS
       DRAINED: the program's own rusage; the tree's by rusage (every reaped process: CPU summed,
       the largest peak); the tree's cgroup (CPU, peak of the sum, the kernel's OOM kills), -1
       without; 1 when every process of the tree was gone within DRAIN_NS, else 0 (the tree's
       figures may miss what the ones left still did) */
    snprintf(buf, sizeof buf, "done %d %lld %lld %lld %ld %lld %ld %lld %lld %lld %d\n", status, wall,
             (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
             (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss,
             tree_us, tree_rss, cg_us, cg_kb, oom, drained);
    say(ctx, buf);
    release_run_later(ns_fd, cg_ok || n_cg > 0 ? seq : 0);
    stop = 0;
    return 0;
}

/* One shot (no view): fork, confine and exec; watch. */
static int run(const struct request *rq, int close_fd, int kill_fd, int report, report_fn say, void *ctx) {
    char buf[256];
    struct timespec t0;
    int ready[2];
    /* the clock starts in the child, after the fork: from there on, exec, the program and its exit
       are what is measured. The child reads the clock itself (it may well finish before the
       launcher runs again). Under bwrap the run's cgroup counters are reset just before the fork
       (cg_start_inherited). */
    if (pipe2(ready, O_CLOEXEC) != 0) { snprintf(buf, sizeof buf, "error pipe: %s\n", strerror(errno)); say(ctx, buf); return 125; }
    cg_start_inherited();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(buf, sizeof buf, "error fork: %s\n", strerror(errno));
        say(ctx, buf);
        return 125;
    }
    if (pid == 0) {
        close(ready[0]);
        if (kill_fd >= 0) close(kill_fd);
        cg_close_inherited();
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (write(ready[1], &t0, sizeof t0) != (ssize_t)sizeof t0) _exit(126);
        /* the runner's wall clock starts with this line (inside bwrap: the program's start) */
        snprintf(buf, sizeof buf, "pid %d\n", (int)getpid());
        say(ctx, buf);
        child_setup(NULL, close_fd);
        if (report >= 0 && dup2(report, 3) != 3) _exit(126);   /* after fd 3 (our report line) closed */
        close(ready[1]);
        confine_and_exec(rq);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);   /* only if the child died before its own reading */
    setpgid(pid, pid);
    close(ready[1]);
    if (report >= 0) close(report);        /* the program's copy only: its end is the channel's end */
    /* straight to waitid: a launcher that is still runnable when the program exits waits for a
       time slice before it reads the clock (milliseconds on a loaded machine) */
    return watch(pid, rq->uid, t0, ready[0], -1, 0, 0, 0, say, ctx);
}

/* A request: one SOCK_SEQPACKET message, fields separated by NUL:
   uid as fsize nproc cpu cwd flags scratch_bytes n_keep keep... n_env env... argv...
   Returns 1 when well formed. `data` is NUL-terminated at data[n]. */
static int parse_request(char *data, ssize_t n, struct request *rq) {
    static char *fields[8192], *envp[4096];
    int count = 0;
    for (char *p = data; p < data + n && count < 8191; p += strlen(p) + 1) fields[count++] = p;
    fields[count] = NULL;
    int ok = count >= 11;
    int n_keep = ok ? atoi(fields[8]) : -1;
    ok = ok && n_keep >= 0 && 9 + n_keep < count;
    int n_env = ok ? atoi(fields[9 + n_keep]) : -1;
    ok = ok && n_env >= 0 && 10 + n_keep + n_env < count;
    if (!ok) return 0;
    rq->uid = atoll(fields[0]); rq->as = atoll(fields[1]); rq->fsize = atoll(fields[2]);
    rq->nproc = atoll(fields[3]); rq->cpu = atoll(fields[4]); rq->cwd = fields[5];
    rq->flags = atoll(fields[6]); rq->scratch_bytes = atoll(fields[7]);
    rq->n_keep = n_keep; rq->keep = fields + 9;
    int k = 0;
    for (; k < n_env && k < 4095; k++) envp[k] = fields[10 + n_keep + k];
    envp[k] = NULL;
    rq->envp = envp;
    rq->argv = fields + 10 + n_keep + n_env;
    return 1;
}

/* What a standby child tells the launcher when it has taken a request. */
struct note { int ok, cg_ok; long long uid, scratch_bytes; struct timespec t0; };

/* Serve mode, the standby child: forked *before* the request arrives (see serve), it makes its
   run's cgroup folders (cg_prepare), builds the request-independent half of the view
   (prepare_view: 0.5-0.9 ms per run measured on this 2-core machine), then takes the next
   request from the socket itself (so its descriptors arrive in the process that runs the
   program), tells the launcher, finishes the view and execs. Each run still gets a fresh
   child, a fresh tmpfs root and fresh mount and IPC namespaces: nothing is shared between runs
   that was not shared before (only the network namespace, one per launcher).
   It joins its run's cgroup at once (under bwrap one run ahead, see serve), then waits on
   `go_r` for its turn; only then does it build the view, with the quota `go_r` carries. */
static void standby(int sock, const char *box, pid_t launcher, int note_w, int sync_w, int ack_r, int go_r) {
    static char data[1 << 20];
    jmp_buf jump;
    char byte = 1;
    long long prepared_bytes = 0;
    prctl(PR_SET_PDEATHSIG, SIGKILL);     /* a standby must not outlive its launcher */
    if (getppid() != launcher) _exit(0);
    int joined = cg_join_ahead() == 0;   /* off the measured path (see cg_prepare) */
    if (read_full(go_r, &prepared_bytes, sizeof prepared_bytes) != (ssize_t)sizeof prepared_bytes) _exit(0);
    close(go_r);
    if (box) {
        if (setjmp(jump) == 0) {          /* a failure is reported to the program's stderr below */
            fail_jump = &jump;
            prepare_view(box, prepared_bytes);
        }
        fail_jump = NULL;
        /* tell the launcher the namespace exists and wait until it holds a reference */
        if (write(sync_w, &byte, 1) != 1 || read(ack_r, &byte, 1) != 1) _exit(1);
    }
    struct iovec iov = { data, sizeof data - 1 };
    union { char buf[CMSG_SPACE(N_FDS * sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr msg;
    ssize_t n;
    do {
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov; msg.msg_iovlen = 1;
        msg.msg_control = control.buf; msg.msg_controllen = sizeof control.buf;
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) _exit(n == 0 ? 0 : 1);    /* the runner closed the connection: the launcher ends */
    struct note nt;
    memset(&nt, 0, sizeof nt);
    clock_gettime(CLOCK_MONOTONIC, &nt.t0);
    data[n] = 0;
    int fds[N_FDS] = { -1, -1, -1, -1, -1, -1 };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        for (int k = 3; k <= N_FDS; k++)
            if (c->cmsg_len == CMSG_LEN(k * sizeof(int))) memcpy(fds, CMSG_DATA(c), k * sizeof(int));
    }
    struct request rq;
    nt.ok = fds[0] >= 0 && parse_request(data, n, &rq) && ((rq.flags & FLAG_VIEW) != 0) == (box != NULL);
    nt.uid = nt.ok ? rq.uid : -1;
    nt.scratch_bytes = nt.ok ? rq.scratch_bytes : prepared_bytes;
    nt.cg_ok = nt.ok && joined && cg_request(rq.as, rq.scratch_bytes) == 0;
    if (write(note_w, &nt, sizeof nt) != (ssize_t)sizeof nt || !nt.ok) _exit(0);
    child_setup(fds, sock);
    if (failed[0]) { report_fd(&(int){2}, failed); _exit(126); }
    if (box) finish_view(box, rq.cwd, rq.scratch_bytes, prepared_bytes, rq.uid, rq.keep, rq.n_keep);
    if (host_tree >= 0) {   /* hand the copy of the host's tree to the launcher, which drops it later */
        union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl;
        struct iovec one = { &byte, 1 };
        struct msghdr m;
        memset(&m, 0, sizeof m);
        memset(&ctl, 0, sizeof ctl);
        m.msg_iov = &one; m.msg_iovlen = 1;
        m.msg_control = ctl.buf; m.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET; h->cmsg_type = SCM_RIGHTS; h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &host_tree, sizeof(int));
        sendmsg(tree_pair[1], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(host_tree);
        host_tree = -1;
    }
    close(note_w);
    if (tree_pair[1] >= 0) close(tree_pair[1]);
    if (tree_pair[0] >= 0) close(tree_pair[0]);
    if (nested && nt.cg_ok) cg_hand_down();
    confine_and_exec(&rq);
}

/* The copy of the host's tree a standby child handed over (see host_tree), or -1. */
static int take_tree(int note_r) {
    char byte;
    struct iovec one = { &byte, 1 };
    union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &one; m.msg_iovlen = 1;
    m.msg_control = ctl.buf; m.msg_controllen = sizeof ctl.buf;
    if (recvmsg(note_r, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0) return -1;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    if (!h || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS || h->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(h), sizeof fd);
    return fd;
}

static ssize_t read_full(int fd, void *buf, size_t size) {
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, (char *)buf + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* The network namespace is one per launcher (creating one per run cost 0.6 ms), so nothing
   may outlive a run in it: a program can put sockets in flight in a cycle of Unix sockets
   (each carrying the other's descriptor), which keeps them, and an abstract name or a bound
   port, alive after its last process died, until the kernel's Unix garbage collector runs
   (asynchronously: the next run found them, we measured). That would be a channel from one
   run to the next, so after every run the launcher reads its namespace's count of sockets
   ("sockets: used" in /proc/self/net/sockstat: every socket a process made, Unix and netlink
   ones included; no kernel socket) and, if it is not zero, moves to a fresh empty namespace:
   the old one, with whatever lingers in it, is unreachable from then on. Cost: one read of a
   /proc file per run, after the report. */
static long sockets_in_netns(void) {
    char buf[512];
    int fd = open("/proc/self/net/sockstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    long used = -1;
    if (sscanf(buf, "sockets: used %ld", &used) != 1) return -1;
    return used;
}

static int fresh_netns_if_used(int *moved) {
    *moved = 0;
    if (sockets_in_netns() == 0) return 0;
    *moved = 1;
    return unshare(CLONE_NEWNET);
}

/* A standby child as the launcher sees it: its pid, its run's cgroup folders (seq) and the
   launcher's ends of its pipes (note: the request was taken; sync/ack: its mount namespace
   exists (--view); go: its turn, with the tmpfs quota to prepare). */
struct spare { pid_t pid; long long seq; int note_r, sync_r, ack_w, go_w; };

static void spare_close(struct spare *s) {
    int *ends[] = {&s->note_r, &s->sync_r, &s->ack_w, &s->go_w};
    for (int k = 0; k < 4; k++) if (*ends[k] >= 0) { close(*ends[k]); *ends[k] = -1; }
}

/* Fork a standby (after the folders of its run's cgroup were made). `other`: the standby
   already waiting, whose launcher-side ends the new one must not hold. 0 on success. */
static int spare_fork(struct spare *s, int sock, const char *box, struct spare *other) {
    int note_p[2], sync_p[2], ack_p[2], go_p[2];
    if (pipe2(note_p, O_CLOEXEC) != 0) return -1;
    /* pipes, not sockets: a socket would be one of the program's network namespace (see sockets_in_netns) */
    if (pipe2(sync_p, O_CLOEXEC) != 0 || pipe2(ack_p, O_CLOEXEC) != 0 || pipe2(go_p, O_CLOEXEC) != 0) return -1;
    int *ours[] = {&note_p[0], &note_p[1], &sync_p[0], &sync_p[1], &ack_p[0], &ack_p[1], &go_p[0], &go_p[1]};
    for (int k = 0; k < 8; k++) *ours[k] = high_fd(*ours[k]);   /* clear of 0-8 (see high_fd) */
    s->seq = n_cg > 0 ? ++cg_seq : 0;
    pid_t self = getpid();
    s->pid = fork();
    if (s->pid < 0) return -1;
    if (s->pid == 0) {
        if (n_cg > 0) cg_prepare(s->seq);
        if (other) spare_close(other);
        close(note_p[0]); close(sync_p[0]); close(ack_p[1]); close(go_p[1]);
        standby(sock, box, self, note_p[1], sync_p[1], ack_p[0], go_p[0]);
        _exit(126);
    }
    setpgid(s->pid, s->pid);
    close(note_p[1]); close(sync_p[1]); close(ack_p[0]); close(go_p[0]);
    s->note_r = note_p[0]; s->sync_r = sync_p[0]; s->ack_w = ack_p[1]; s->go_w = go_p[1];
    return 0;
}

/* A standby that will not run (the launcher ends, or it sits in a network namespace that a
   program left sockets in): killed, reaped, its folders removed. */
static void spare_discard(struct spare *s) {
    if (s->pid <= 0) return;
    if (!spare_reaped) {
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {}
    }
    spare_reaped = 0;
    spare_close(s);
    if (n_cg > 0) cg_remove(s->seq, 1);
    s->pid = 0;
}

/* Whether a standby died before its turn (killed from outside; then writing its turn would
   raise SIGPIPE in the launcher). */
static int spare_dead(struct spare *s) {
    siginfo_t info;
    if (s->pid <= 0) return 0;
    if (spare_reaped) return 1;
    info.si_pid = 0;
    return waitid(P_PID, (id_t)s->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == s->pid;
}

/* Tell a standby its turn has come, with the tmpfs quota to prepare. SIGPIPE is blocked
   around the write and a pending one dropped: a standby that died just before (spare_dead
   looked) must not kill the launcher; it then fails to take the request, as before. */
static void give_turn(int go_w, long long prepared) {
    sigset_t pipe_set, old;
    struct timespec zero = {0, 0};
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    while (write(go_w, &prepared, sizeof prepared) < 0 && errno == EINTR) {}
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {}
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Serve mode: runs one program at a time. Under bwrap (--nested) with --cgroup two standby
   children exist at once (see standby): the one that takes the next request, and the one forked
   for the run after it when a run's turn is given, which makes its folders and joins its cgroup
   meanwhile, so that its migration (an RCU grace period when nothing else on the machine
   migrated lately: 0.02-70 ms measured) passes during bwrap's set-up of the run before it
   (10-20 ms), before that run's program starts. Under local the program starts within a
   millisecond of its turn, so anything of the next standby done ahead is done *while a program
   is measured*, and it was measured to lengthen the program (2026-12-06, 17:56 UTC, nothing else
   running; /bin/true's wall_s, 250 runs per variant in interleaved blocks): forking the next
   standby once a run's request was taken and letting it build its view meanwhile, +0.42 ms
   median (0.81 -> 1.22 ms; python3 -c pass +0.50 ms) for 82.2 -> 83.4 % of a bare loop's
   runs/s; forking it only, with its folders and view built after the program ended, +0.09 ms
   (+11 %; python3 -c pass +0.22 ms) for 84.8 %. Earlier, at load 7-19, a standby joining its cgroup ahead
   lengthened it by 0.4-6 ms. So local forks one standby per run, when its turn comes, and
   nothing of the launcher runs while a program is measured; so does a launcher without
   cgroups, which has nothing to hide.
   With `box` (--view DIR) every request must ask for the private view, built on DIR (a
   directory of the host that serves only as the mount point; each child mounts its own
   tmpfs there, in its own mount namespace); without it none may. */
static int serve(int sock, const char *box, int netns) {
    long long prepared = 256LL << 20;    /* the tmpfs quota a standby starts with: the last request's */
    struct spare cur = {0, 0, -1, -1, -1, -1}, next = {0, 0, -1, -1, -1, -1};
    int ahead = n_cg > 0 && nested;   /* see above: only where bwrap's set-up, not the program, overlaps it */
    for (;;) {
        int ns_fd = -1, moved = 0;
        if (netns && fresh_netns_if_used(&moved) != 0) {   /* the next program must not meet the last one's sockets */
            report_sock(&sock, "error cannot create a network namespace\n");
            spare_discard(&next);
            return 124;
        }
        if (moved || spare_dead(&next)) spare_discard(&next);   /* forked in the old namespace, or killed */
        stop = 0;
        if (next.pid > 0) cur = next;
        else if (spare_fork(&cur, sock, box, NULL) != 0) return 1;
        next.pid = 0;
        /* bwrap: the next run's standby is forked now, so that its folders and its migration's
           sleep fall in bwrap's set-up of this run, before the program starts */
        if (ahead && spare_fork(&next, sock, box, &cur) != 0) next.pid = 0;   /* then forked in its turn */
        give_turn(cur.go_w, prepared);
        close(cur.go_w);
        cur.go_w = -1;
        if (box) {
            char byte = 0, path[64];
            if (read_full(cur.sync_r, &byte, 1) == 1) {
                snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)cur.pid);
                ns_fd = open(path, O_RDONLY | O_CLOEXEC);
                while (write(cur.ack_w, &byte, 1) < 0 && errno == EINTR) {}
            }
        }
        struct note nt;
        ssize_t got = read_full(cur.note_r, &nt, sizeof nt);
        spare_close(&cur);
        if (got != (ssize_t)sizeof nt || !nt.ok) {
            int st = 0;
            while (waitpid(cur.pid, &st, 0) < 0 && errno == EINTR) {}
            if (ns_fd >= 0) close(ns_fd);
            if (n_cg > 0) cg_remove(cur.seq, 1);
            if (got != (ssize_t)sizeof nt) {  /* no request came: the runner is gone (or the socket failed) */
                spare_discard(&next);
                return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
            }
            report_sock(&sock, "error bad request\n");
            continue;
        }
        prepared = nt.scratch_bytes;
        watch(cur.pid, nt.uid, nt.t0, -1, ns_fd, nt.cg_ok, cur.seq, next.pid, report_sock, &sock);
        for (int fd; (fd = take_tree(tree_pair[0])) >= 0;) release_later(fd);
    }
}

/* sa-launch --serve SOCKFD [--netns] [--view DIR] [--nested] [--cgroup DIR]...
   sa-launch FD UID AS FSIZE NPROC CPU -- PROGRAM [ARGS...]   (one shot; -1 = unchanged) */
int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);   /* no ptrace, no /proc/PID/mem for the program's uid */
    prctl(PR_SET_CHILD_SUBREAPER, 1);     /* orphans of the program come to us, and we reap them */
    if (argc >= 3 && strcmp(argv[1], "--serve") == 0) {
        const char *box = NULL;
        int netns = 0;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--netns") == 0) netns = 1;
            else if (strcmp(argv[i], "--nested") == 0) nested = 1;
            else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc && n_cg < MAX_CG) {
                const char *dir = argv[++i];
                char probe[4096];
                snprintf(probe, sizeof probe, "%s/memory.max_usage_in_bytes", dir);
                if (access(probe, F_OK) == 0) cg_mem = n_cg;
                snprintf(probe, sizeof probe, "%s/cpuacct.usage", dir);
                if (access(probe, F_OK) == 0) cg_cpu = n_cg;
                cg_base[n_cg++] = dir;
            }
            else if (strcmp(argv[i], "--view") == 0 && i + 1 < argc) box = argv[++i];
            else return 125;
        }
        if (box && socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, tree_pair) != 0) return 125;
        tree_pair[0] = high_fd(tree_pair[0]);
        tree_pair[1] = high_fd(tree_pair[1]);
        cg_owner = getpid();
        if (n_cg > 0) cg_remove_stale();
        if (netns && unshare(CLONE_NEWNET) != 0) {
            fprintf(stderr, "sa-launch: cannot create a network namespace: %s\n", strerror(errno));
            return 124;
        }
        sa.sa_handler = on_kill;
        sigaction(SIGUSR1, &sa, NULL);
        sa.sa_handler = on_die;
        sigaction(SIGTERM, &sa, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1) return 0;
        return serve(atoi(argv[2]), box, netns);
    }
    if (argc < 9 || strcmp(argv[7], "--") != 0) {
        fprintf(stderr, "usage: sa-launch FD UID AS FSIZE NPROC CPU -- PROGRAM [ARGS...] | sa-launch --serve SOCKFD [--netns] [--view DIR]\n");
        return 125;
    }
    int fd = atoi(argv[1]);
    /* One shot (inside bwrap, as pid 1 of its pid namespace): no signal handler at all, so no
       signal from the program reaches us; we die with bwrap (SIGKILL is sent from outside). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct request rq;
    memset(&rq, 0, sizeof rq);
    rq.uid = atoll(argv[2]); rq.as = atoll(argv[3]); rq.fsize = atoll(argv[4]);
    rq.nproc = atoll(argv[5]); rq.cpu = atoll(argv[6]); rq.cwd = NULL; rq.argv = argv + 8; rq.envp = NULL;
    int kill_fd = watch_kill_line() ? KILL_FD : -1;
    return run(&rq, fd, kill_fd, report_channel(), report_fd, &fd);
}
