"""Runs one Python tool call inside the sandbox; the counterpart of runner.ts.

Reads one JSON request ``{handler, args, secrets, scratchDir, storageDir?,
exportName?}`` on stdin, calls ``handler(args, context)`` (a coroutine is run
with asyncio), and writes exactly one JSON result, ``{"ok": true, "output": ...}``
or ``{"ok": false, "error": "Name: message"}``, to fd 3. Stdout stays the
tool's own, so ``print`` cannot corrupt the result. The process ends with
``os._exit`` once the result is written, so threads or event-loop tasks the
handler left behind cannot hold the call until its timeout.

Standard library only: the interpreter runs with ``-I -S -B`` (no user or site
packages, no environment-driven configuration, no bytecode written beside the
version's read-only files).
"""

import asyncio
import importlib.util
import inspect
import json
import os
import sys

MAX_ERROR_CHARS = 4096
RESULT_FD = 3
# runsc passes no fd 3 (runsc.ts): there the result goes to a file in a bound directory.
RESULT_FILE = os.environ.pop("TROUPE_RESULT_FILE", None)
MIB = 1024 * 1024


class ToolContext:
    """What a handler gets besides its arguments: the JS context in Python naming."""

    __slots__ = ("secrets", "scratch_dir", "storage_dir")

    def __init__(self, secrets, scratch_dir, storage_dir):
        self.secrets = secrets
        self.scratch_dir = scratch_dir
        self.storage_dir = storage_dir

    def __repr__(self):
        # Never the secrets' values: a handler that logs its context must not print them.
        return "ToolContext(secrets=<%d names>, scratch_dir=%r, storage_dir=%r)" % (len(self.secrets), self.scratch_dir, self.storage_dir)


def error_text(exc):
    try:
        message = str(exc)
    except Exception:  # A hostile __str__ must not cost the call its result.
        message = "<unprintable>"
    return ("%s: %s" % (type(exc).__name__, message))[:MAX_ERROR_CHARS]


def limit_memory(memory_mb):
    """The tool's memory cap as RLIMIT_DATA, set from inside: Python has no heap flag like V8's, and this holds where prlimit is missing."""
    if memory_mb is None:
        return
    try:
        import resource

        cap = memory_mb * MIB
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


def start_egress_bridge():
    """With internet access on under the namespace sandbox, 127.0.0.1 reaches the egress proxy through a Unix socket."""
    socket_path = os.environ.get("TROUPE_EGRESS_SOCKET")
    if not socket_path:
        return
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "egress_bridge.py")
    bridge = load_module(path, "troupe_egress_bridge", add_to_path=False)
    bridge.start(socket_path)


def load_module(path, name=None, add_to_path=True):
    if add_to_path:
        # Sibling modules import as they would beside a script: the handler's folder comes first.
        sys.path.insert(0, os.path.dirname(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    if name is None:
        name = stem if stem.isidentifier() and stem not in sys.modules else "troupe_tool"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def _wait(awaitable):
    return await awaitable


def call_handler(handler, args, context):
    result = handler(args, context)
    if inspect.isawaitable(result):
        result = asyncio.run(_wait(result))
    return result


def as_data(value):
    """The entrypoint object as data, like JSON.stringify in runner.ts: callables (and modules, classes) are dropped from mappings."""
    if isinstance(value, dict):
        return {str(k): as_data(v) for k, v in value.items() if not _is_code(v)}
    if isinstance(value, (list, tuple)):
        return [None if _is_code(v) else as_data(v) for v in value]
    return value


def _is_code(value):
    return callable(value) or inspect.ismodule(value)


def restore_environment(secrets):
    """The tool's environment is its secrets and TMPDIR, as for JS tools: nothing of the sandbox's making
    (bwrap's PWD) or Python's (C-locale coercion's LC_CTYPE, PEP 538)."""
    for name in ("LC_CTYPE", "PWD"):
        if name in secrets:
            os.environ[name] = secrets[name]
        else:
            os.environ.pop(name, None)


def run(request):
    restore_environment(request.get("secrets") or {})
    path = request["handler"]
    export_name = request.get("exportName")
    if export_name is not None:
        module = load_module(path)
        if not hasattr(module, export_name):
            return {"ok": False, "error": "The module does not export %s." % export_name}
        return {"ok": True, "output": as_data(getattr(module, export_name))}
    module = load_module(path)
    handler = getattr(module, "handler", None)
    if not callable(handler):
        return {"ok": False, "error": "The tool module does not define a handler function."}
    context = ToolContext(dict(request.get("secrets") or {}), request["scratchDir"], request.get("storageDir"))
    return {"ok": True, "output": call_handler(handler, request.get("args"), context)}


def serialize(outcome):
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and the launcher would take them for a forged result.
        return json.dumps(outcome, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return json.dumps({"ok": False, "error": ("The handler's result is not JSON: " + error_text(exc))[:MAX_ERROR_CHARS]})


def report(outcome):
    # A lone surrogate can only sit inside a JSON string, where backslashreplace writes it as the JSON escape
    # (\udc80) that JSON.stringify writes too, instead of bytes that are not UTF-8.
    data = serialize(outcome).encode("utf-8", "backslashreplace")
    view = memoryview(data)
    try:
        fd = os.open(RESULT_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if RESULT_FILE else RESULT_FD
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass  # The launcher stopped reading (output cap): it has its answer.
    os._exit(0)


def main():
    memory_mb = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
    limit_memory(memory_mb)
    try:
        request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
        start_egress_bridge()
        outcome = run(request)
    except Exception as exc:  # SystemExit and KeyboardInterrupt end the process: a crash, as process.exit does in JS.
        outcome = {"ok": False, "error": error_text(exc)}
    report(outcome)


if __name__ == "__main__":
    main()
