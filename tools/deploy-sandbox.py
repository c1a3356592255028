"""Runs a command under deploy/luahier.service's sandbox, as far as one process can without
systemd (tools/deploy-check.sh; docs/deploy.md#what-was-verified):

  chroot ROOT, as UID:UID, no supplementary groups    (DynamicUser=, root from the caller)
  SystemCallFilter=@system-service                    (the groups as systemd-analyze lists them)
  SystemCallFilter=~@privileged @resources
  SystemCallErrorNumber=EPERM
  RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX    (others: EAFNOSUPPORT, as systemd)
  MemoryDenyWriteExecute=yes                          (the kernel's own: PR_SET_MDWE, 6.3+)

then execs it, so the caller's pid is the command's. Debian's python3 with python3-seccomp.
  /usr/bin/python3 tools/deploy-sandbox.py ROOT UID COMMAND [ARGS...]
"""
import ctypes
import errno
import mmap
import os
import socket
import subprocess
import sys

import seccomp

PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
AF_MAX = 46  # Linux's bound on address families


def syscall_groups():
    """systemd's groups: name -> the calls and groups it lists."""
    listing = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
    groups, current = {}, None
    for line in listing.splitlines():
        item = line.strip()
        if line.startswith("@"):
            current = groups.setdefault(item, [])
        elif item and not item.startswith("#") and current is not None:
            current.append(item)
    return groups


def expand(groups, name, seen=()):
    if not name.startswith("@"):
        return {name}
    return set().union(*(expand(groups, item, seen + (name,)) for item in groups[name] if item not in seen))


def main():
    root, uid, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    groups = syscall_groups()
    allowed = expand(groups, "@system-service") - expand(groups, "@privileged") - expand(groups, "@resources")
    allowed.discard("socket")  # by family, below

    # chroot and the user change are the caller's (systemd's) doing: before the filter.
    os.chroot(root)
    os.chdir("/")
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)

    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
        sys.exit("deploy-sandbox: this kernel has no PR_SET_MDWE (Linux 6.3+): W^X not enforced")
    try:
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        sys.exit("deploy-sandbox: PR_SET_MDWE is set, yet a writable executable page was mapped")
    except PermissionError:
        pass

    rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
    unknown = []
    for name in sorted(allowed):
        try:
            rules.add_rule(seccomp.ALLOW, name)
        except (RuntimeError, ValueError):
            unknown.append(name)  # another architecture's call, or one libseccomp predates
    families = {socket.AF_UNIX, socket.AF_INET, socket.AF_INET6}
    for family in range(AF_MAX):
        action = seccomp.ALLOW if family in families else seccomp.ERRNO(errno.EAFNOSUPPORT)
        rules.add_rule(action, "socket", seccomp.Arg(0, seccomp.EQ, family))
    rules.load()
    print(f"deploy-sandbox: uid {uid}, {len(allowed) - len(unknown)} system calls, "
          f"AF_UNIX AF_INET AF_INET6, W^X", file=sys.stderr)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
