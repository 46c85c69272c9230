"""process.PID: this process's id without a system call, current after a fork."""

from __future__ import annotations

import os

from refapi import process


def test_the_pid_is_the_childs_after_a_fork():
    assert process.PID == os.getpid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report what it sees, and leave at once
        os.write(write, f"{process.PID} {os.getpid()}".encode())
        os._exit(0)
    os.close(write)
    seen, real = os.read(read, 64).decode().split()
    os.close(read)
    os.waitpid(child, 0)
    assert seen == real and int(seen) != os.getpid()
    assert process.PID == os.getpid()  # the parent's is untouched
