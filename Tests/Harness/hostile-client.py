#!/usr/bin/env python3
"""A hostile or broken local client of netdevd's control socket, for BadDaysKernelTests.

    hostile-client.py SOCKET connections N   open N connections, never call, hold them until stdin closes
    hostile-client.py SOCKET pipeline BYTES  a Monitor call, then BYTES of GetState calls without reading a reply
    hostile-client.py SOCKET huge BYTES      one message of BYTES without its terminating NUL

Prints one JSON object with what happened (how many connections stayed open, how many bytes netdevd took), then
for `connections` waits for standard input to close before it lets go.
"""
import json
import resource
import select
import socket
import sys


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def push(s, chunk, total):
    """Writes `chunk` over and over until `total` bytes, the peer closes, or the socket stays full for 1 s."""
    s.setblocking(False)
    written = 0
    outcome = "all written"
    while written < total:
        try:
            written += s.send(chunk)
        except BlockingIOError:
            if not select.select([], [s], [], 1.0)[1]:
                outcome = "socket full (netdevd stopped reading)"
                break
        except (BrokenPipeError, ConnectionResetError):
            outcome = "closed by netdevd"
            break
    return written, outcome


def main():
    path, mode, amount = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "connections":
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, amount + 64), hard))
        held = [connect(path) for _ in range(amount)]
        # netdevd answers those over its limits with an error and closes them at once; the others have nothing to read.
        select.select([], [], [], 0.5)
        open_ = 0
        for s in held:
            s.setblocking(False)
            try:
                s.recv(1)
            except BlockingIOError:
                open_ += 1
            except ConnectionResetError:
                pass
        print(json.dumps({"opened": amount, "still_open": open_}), flush=True)
        sys.stdin.read()
    elif mode == "pipeline":
        s = connect(path)
        s.sendall(b'{"method":"io.netdevd.Monitor","more":true}\0')
        call = b'{"method":"io.netdevd.GetState"}\0'
        written, outcome = push(s, call * (65536 // len(call)), amount)
        print(json.dumps({"written": written, "outcome": outcome}), flush=True)
    elif mode == "huge":
        s = connect(path)
        written, outcome = push(s, b'{"method":"io.netdevd.GetState","parameters":{"x":"' + b"a" * 65536, amount)
        print(json.dumps({"written": written, "outcome": outcome}), flush=True)
    else:
        sys.exit("unknown mode " + mode)


main()
