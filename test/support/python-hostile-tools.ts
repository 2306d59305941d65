import type { PyTool } from './python-agent.js';

/**
 * The hostile tenant's Python tools (issue #29 item 7) and the other org's
 * victim, shared by test/integration/python-hostile*.test.ts. Every loop a
 * tool runs is bounded, so a weaker sandbox fails the tests instead of the
 * machine.
 */
export const FORK_BOUND = 400;
export const FILL_BOUND_FILES = 96; // 8 MiB each: 768 MiB, past any scratch quota the sandbox sets

export const HOSTILE: Record<string, PyTool> = {
  peek: {
    source: `
import os

def attempt(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("latin-1")
    except OSError as e:
        return type(e).__name__

def handler(args, context):
    needles = [args["canary"].encode(), args["troupe_secret"].encode()]
    readable, found = [], []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                data = f.read()
        except OSError:
            continue
        readable.append(int(pid))
        found += [int(pid) for n in needles if n in data]
    return {"found": found, "pid1": attempt("/proc/1/environ"), "parent": attempt("/proc/%d/environ" % os.getppid()), "shadow": attempt("/etc/shadow")}
`,
  },
  kill_all: {
    source: `
import os, signal

def handler(args, context):
    out = {}
    for name, pid, sig in (("all", -1, signal.SIGKILL), ("parent", os.getppid(), signal.SIGTERM)):
        try:
            os.kill(pid, sig)
            out[name] = "sent"
        except OSError as e:
            out[name] = type(e).__name__
    return out
`,
  },
  fork_bomb: {
    timeout_seconds: 15,
    source: `
import os, time

def handler(args, context):
    forks, error = 0, None
    for _ in range(args["bound"]):
        try:
            pid = os.fork()
        except OSError as e:
            error = type(e).__name__
            break
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        forks += 1
    return {"forks": forks, "error": error}
`,
  },
  fill_scratch: {
    timeout_seconds: 30,
    source: `
import os

def handler(args, context):
    chunk = b"\\0" * (8 * 1024 * 1024)
    written, error = 0, None
    for i in range(args["bound"]):
        try:
            with open(os.path.join(context.scratch_dir, "fill-%d" % i), "wb") as f:
                f.write(chunk)
            written += len(chunk)
        except OSError as e:
            error = type(e).__name__
            break
    return {"written_mib": written // (1024 * 1024), "error": error}
`,
  },
  write_outside: {
    source: `
import os

def handler(args, context):
    out = {}
    for path in args["paths"] + [os.path.join(os.path.dirname(__file__), "escaped.txt")]:
        try:
            with open(path, "w") as f:
                f.write("escaped")
            out[path] = "written"
        except OSError as e:
            out[path] = type(e).__name__
    return out
`,
  },
  redis: {
    source: `
import socket

def handler(args, context):
    out = {}
    for host in ("127.0.0.1", "localhost"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect((host, args["port"]))
            s.sendall(b"PING\\r\\n")
            out[host] = "connected: " + s.recv(64).decode("latin-1")
        except OSError as e:
            out[host] = type(e).__name__
        finally:
            s.close()
    # Through the *_PROXY variables (the egress bridge, with internet access): refused by the proxy, or no network.
    import urllib.error, urllib.request
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/" % args["port"], timeout=3)
        out["http"] = "reached"
    except urllib.error.HTTPError as e:
        out["http"] = "HTTPError %d" % e.code
    except Exception as e:
        out["http"] = type(e).__name__
    return out
`,
  },
};

export const VICTIM: Record<string, PyTool> = {
  wait_and_answer: {
    source: `
import asyncio

async def handler(args, context):
    await asyncio.sleep(args["seconds"])
    return {"alive": True, "canary_length": len(context.secrets.get("CANARY", ""))}
`,
  },
};
