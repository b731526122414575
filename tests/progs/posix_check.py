#!/usr/bin/env python3
"""posix_check.py - the POSIX calls real programs make, against a directory (the mount).

    posix_check.py DIR [OTHER]

DIR: where to work (a fresh directory is made in it). OTHER: the same directory as another
node's mount sees it (close-to-open: what one node closed, the other opens and reads). Prints
"ok NAME" per check and "FAIL NAME: why" for a failed one; exits 1 if any failed.
"""
import errno
import mmap
import os
import stat
import sys
import time

failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print("ok", name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))


def expect_errno(name, want, fn, *args):
    try:
        fn(*args)
    except OSError as e:
        check(name, e.errno in want, "errno %s (%s), expected %s" %
              (e.errno, os.strerror(e.errno), [errno.errorcode[w] for w in want]))
        return
    check(name, False, "succeeded, expected %s" % [errno.errorcode[w] for w in want])


def main():
    base = os.path.join(sys.argv[1], "posix-%d" % os.getpid())
    other = os.path.join(sys.argv[2], os.path.basename(base)) if len(sys.argv) > 2 else None
    os.mkdir(base, 0o755)
    p = lambda *n: os.path.join(base, *n)

    # create, O_EXCL, write at offsets (a hole reads as zeros), pread/pwrite
    fd = os.open(p("f"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o640)
    check("create mode", stat.S_IMODE(os.fstat(fd).st_mode) == 0o640 & ~current_umask())
    expect_errno("O_EXCL on an existing file", [errno.EEXIST], os.open, p("f"),
                 os.O_CREAT | os.O_EXCL | os.O_RDWR)
    os.pwrite(fd, b"abc", 0)
    os.pwrite(fd, b"xyz", 1 << 20)
    check("size after a write past a hole", os.fstat(fd).st_size == (1 << 20) + 3)
    check("a hole reads as zeros", os.pread(fd, 8, 100) == b"\0" * 8)
    check("pread at an offset", os.pread(fd, 3, 1 << 20) == b"xyz")
    check("read past the end is short", os.pread(fd, 10, (1 << 20) + 1) == b"yz")
    os.fsync(fd)
    os.close(fd)
    check("stat size after close", os.stat(p("f")).st_size == (1 << 20) + 3)

    # O_APPEND
    with open(p("log"), "ab") as f:
        f.write(b"one\n")
    with open(p("log"), "ab") as f:
        f.write(b"two\n")
    check("O_APPEND appends", open(p("log"), "rb").read() == b"one\ntwo\n")

    # truncate: shorter, then longer again: the cut bytes read as zeros
    with open(p("t"), "wb") as f:
        f.write(b"0123456789")
    os.truncate(p("t"), 4)
    check("truncate shorter", open(p("t"), "rb").read() == b"0123")
    os.truncate(p("t"), 8)
    check("truncate longer reads zeros", open(p("t"), "rb").read() == b"0123\0\0\0\0")
    with open(p("t"), "r+b") as f:
        f.truncate(0)
        f.write(b"new")
    check("ftruncate to 0, then write", open(p("t"), "rb").read() == b"new")
    with open(p("t"), "wb") as f:  # O_TRUNC of an existing file
        f.write(b"w")
    check("O_TRUNC", open(p("t"), "rb").read() == b"w")

    # unlink of an open file: still readable through the open descriptor
    with open(p("gone"), "wb") as f:
        f.write(b"still here")
    fd = os.open(p("gone"), os.O_RDONLY)
    os.unlink(p("gone"))
    check("unlinked name is gone", not os.path.exists(p("gone")))
    check("an open file outlives its unlink", os.pread(fd, 10, 0) == b"still here")
    os.close(fd)
    expect_errno("unlink of a missing file", [errno.ENOENT], os.unlink, p("gone"))

    # directories
    os.mkdir(p("d"))
    os.mkdir(p("d", "e"))
    expect_errno("mkdir of an existing name", [errno.EEXIST], os.mkdir, p("d"))
    expect_errno("rmdir of a non-empty directory", [errno.ENOTEMPTY, errno.EEXIST], os.rmdir,
                 p("d"))
    expect_errno("rmdir of a file", [errno.ENOTDIR], os.rmdir, p("f"))
    expect_errno("unlink of a directory", [errno.EISDIR, errno.EPERM], os.unlink, p("d"))
    for i in range(50):
        open(p("d", "n%02d" % i), "wb").close()
    check("readdir lists every entry once",
          sorted(os.listdir(p("d"))) == sorted(["e"] + ["n%02d" % i for i in range(50)]))
    os.rmdir(p("d", "e"))
    check("rmdir of an empty directory", not os.path.exists(p("d", "e")))
    expect_errno("create in a missing directory", [errno.ENOENT], open, p("nodir", "x"), "wb")

    # rename: within and across directories, over a file, a directory over an empty one
    with open(p("r1"), "wb") as f:
        f.write(b"r1")
    with open(p("r2"), "wb") as f:
        f.write(b"r2")
    os.rename(p("r1"), p("d", "r1"))
    check("rename across directories", open(p("d", "r1"), "rb").read() == b"r1")
    os.rename(p("d", "r1"), p("r2"))
    check("rename over a file replaces it", open(p("r2"), "rb").read() == b"r1" and
          not os.path.exists(p("d", "r1")))
    os.mkdir(p("x"))
    os.mkdir(p("y"))
    os.rename(p("x"), p("y"))
    check("rename of a directory over an empty one", os.path.isdir(p("y")) and
          not os.path.exists(p("x")))
    open(p("y", "inside"), "wb").close()
    os.mkdir(p("z"))
    expect_errno("rename over a non-empty directory", [errno.ENOTEMPTY, errno.EEXIST],
                 os.rename, p("z"), p("y"))
    expect_errno("rename of a directory over a file", [errno.ENOTDIR], os.rename, p("z"),
                 p("r2"))
    expect_errno("rename of a file over a directory", [errno.EISDIR], os.rename, p("r2"),
                 p("z"))
    os.rename(p("y"), p("d", "y"))
    check("a moved directory keeps its entries", os.listdir(p("d", "y")) == ["inside"])

    # attributes
    os.chmod(p("r2"), 0o600)
    check("chmod", stat.S_IMODE(os.stat(p("r2")).st_mode) == 0o600)
    os.utime(p("r2"), (1000000000, 1000000000))
    check("utime sets mtime", int(os.stat(p("r2")).st_mtime) == 1000000000)
    before = time.time() - 5
    with open(p("m"), "wb") as f:
        f.write(b"m")
    check("mtime of a new file is now", os.stat(p("m")).st_mtime >= before)
    check("owner is the caller", os.stat(p("m")).st_uid == os.getuid())

    # symbolic links
    os.symlink("r2", p("link"))
    check("readlink", os.readlink(p("link")) == "r2")
    check("a link is followed", open(p("link"), "rb").read() == b"r1")
    check("lstat of a link", stat.S_ISLNK(os.lstat(p("link")).st_mode))

    # what is not supported fails as programs expect
    expect_errno("hard link", [errno.EPERM, errno.ENOSYS, errno.EOPNOTSUPP], os.link, p("r2"),
                 p("hard"))
    expect_errno("extended attribute", [errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS],
                 os.setxattr, p("r2"), "user.x", b"1")
    expect_errno("name too long", [errno.ENAMETOOLONG], open, p("n" * 256), "wb")

    # mmap, read and write
    with open(p("mm"), "wb") as f:
        f.write(b"\0" * 8192)
    with open(p("mm"), "r+b") as f:
        m = mmap.mmap(f.fileno(), 8192)
        m[4096:4101] = b"mmap!"
        m.flush()
        m.close()
    check("mmap write reaches the file", open(p("mm"), "rb").read()[4096:4101] == b"mmap!")
    # a shared map of a file opened read-only (numpy.memmap mode "r" does this); such files are
    # read past the page cache where the kernel allows it with a shared map
    with open(p("mm"), "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        check("a shared map of a read-only file reads it", m[4096:4101] == b"mmap!")
        m.close()

    # statfs: the job's capacity
    sv = os.statvfs(base)
    check("statfs gives a size", sv.f_blocks > 0 and sv.f_bavail <= sv.f_blocks)

    # another node: what was closed here is seen there
    if other:
        big = os.urandom(3 << 20)
        with open(p("shared"), "wb") as f:
            f.write(big)
        with open(os.path.join(other, "shared"), "rb") as f:
            check("another node reads a closed file whole", f.read() == big)
        with open(os.path.join(other, "shared"), "r+b") as f:
            f.seek(10)
            f.write(b"from the other node")
        with open(p("shared"), "rb") as f:
            got = f.read()
        check("this node reads the other node's change after its close",
              got[10:29] == b"from the other node" and len(got) == len(big))
        check("another node lists the directory",
              sorted(os.listdir(other)) == sorted(os.listdir(base)))

    print("%d failed" % failed)
    return 1 if failed else 0


def current_umask():
    u = os.umask(0)
    os.umask(u)
    return u


if __name__ == "__main__":
    sys.exit(main())
