"""The egress bridge of a sandboxed Python tool that has internet access.

The sandbox's network namespace holds only loopback; its one way out is the
call's egress proxy, an HTTP forward proxy on the Unix socket named by
TROUPE_EGRESS_SOCKET. start() listens on 127.0.0.1 (a free port) inside the
sandbox, pipes each connection to that socket from a daemon thread, and sets
HTTP_PROXY / HTTPS_PROXY / ALL_PROXY (both cases) to it, so urllib, requests,
httpx and aiohttp (trust_env=True) send their traffic through the proxy;
names resolve at the proxy. Call it before the tool module is imported: some
clients read the variables when they are created.

Nothing here is a boundary: a tool that bypasses it reaches nothing, because
the namespace has no route out. Standard library only.
"""
import os
import socket
import threading

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# The proxy bounds connections per call too; this only keeps a runaway tool from exhausting threads here.
MAX_CONNECTIONS = 64
CHUNK = 64 * 1024


def _pump(src, dst):
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Half-close, so the other direction may still finish (a request body ended, the answer still comes).
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(conn, path, slots):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
        back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
        back.start()
        _pump(conn, upstream)
        back.join()
    except OSError:
        pass
    finally:
        upstream.close()
        conn.close()
        slots.release()


def _accept(server, path):
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        if not slots.acquire(blocking=False):
            conn.close()
            continue
        threading.Thread(target=_serve, args=(conn, path, slots), daemon=True).start()


def start(socket_path=None):
    """Starts the bridge and returns its port, or None when the call has no internet access."""
    path = socket_path or os.environ.get("TROUPE_EGRESS_SOCKET")
    if not path:
        return None
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(MAX_CONNECTIONS)
    port = server.getsockname()[1]
    url = "http://127.0.0.1:%d" % port
    for name in PROXY_VARS:
        os.environ[name] = url
    # Empty rather than absent: nothing inherited may exempt a host from the proxy.
    os.environ["NO_PROXY"] = ""
    os.environ["no_proxy"] = ""
    threading.Thread(target=_accept, args=(server, path), daemon=True).start()
    return port
