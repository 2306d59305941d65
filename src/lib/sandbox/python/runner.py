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

# A code agent's step (docs/code-agents.md), as in runner.ts: the run coroutine runs from the start with a ``ctx``
# whose calls are numbered in the order they are made. A call the journal holds returns its recorded result at once;
# the first calls past it are reported, with every other call started before the run waits, and the process exits.

RUN_MARK = "[run function]"


class CallFailed(Exception):
    """What ctx.model and ctx.tool raise when the journaled call failed."""


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _describe(kind, name, args):
    text = "%s %s(%s)" % (kind, name, _canonical(args))
    return text if len(text) <= 300 else text[:300] + "\u2026"


class AgentContext:
    """``ctx``: model, tool, sleep (seconds), emit, transcript, and the message (``input``, ``message``)."""

    def __init__(self, step):
        self.input = step.get("input", "")
        self.message = step.get("message")
        # Sent only to a message whose run asked for it (as runner.ts): without it, the step stops and asks.
        self._transcript = step.get("transcript")
        self.wanted = False
        self.used = False
        self._journal = {e["position"]: e for e in step.get("journal") or []}
        self._next = 0
        self.calls = []
        self.emits = []
        self.diverged = None

    def _check(self, position, kind, name, args):
        recorded = self._journal.get(position)
        if recorded is not None and self.diverged is None and (recorded["kind"] != kind or recorded["name"] != name or _canonical(recorded["arguments"]) != _canonical(args)):
            self.diverged = "nondeterministic_replay: at position %d the run called %s, but the journal has %s." % (
                position, _describe(kind, name, args), _describe(recorded["kind"], recorded["name"], recorded["arguments"]))
        return recorded

    def _call(self, kind, name, raw):
        position = self._next
        self._next += 1
        args = json.loads(json.dumps(raw if raw is not None else {}))
        recorded = self._check(position, kind, name, args)
        future = asyncio.get_running_loop().create_future()
        if self.diverged is None:
            if recorded is not None and recorded.get("result") is not None:
                result = recorded["result"]
                if result.get("ok"):
                    future.set_result(result.get("output"))
                else:
                    future.set_exception(CallFailed(result.get("error")))
            elif recorded is None:
                self.calls.append({"position": position, "kind": kind, "name": name, "arguments": args})
        return future

    def model(self, request=None, **fields):
        req = dict(request or {}, **fields)
        return self._call("model", req["llm_id"] if isinstance(req.get("llm_id"), str) else "default", req)

    def tool(self, name, args=None):
        return self._call("tool", str(name), args or {})

    def sleep(self, seconds):
        return self._call("sleep", "sleep", {"ms": int(float(seconds) * 1000)})

    def emit(self, text):
        position = self._next
        self._next += 1
        if self._check(position, "emit", "emit", {"text": str(text)}) is None and self.diverged is None:
            self.emits.append({"position": position, "text": str(text)})

    def transcript(self):
        if self._transcript is None:
            self.wanted = True
            return []
        self.used = True
        return self._transcript


def _answer(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    return value


async def _step(run_fn, ctx):
    task = asyncio.ensure_future(run_fn(ctx, ctx.input))
    seen = -1
    turn = 0
    while True:
        # Journaled results resolve within a few loop turns; past them the run waits on something of its own.
        await asyncio.sleep(0 if turn < 5 else 0.02)
        turn += 1
        if ctx.wanted:
            task.cancel()
            return {"kind": "transcript"}
        if ctx.diverged is not None:
            return {"kind": "failed", "emits": ctx.emits, "error": ctx.diverged}
        if task.done():
            exc = task.exception()
            if exc is not None:
                return {"kind": "failed", "emits": ctx.emits, "error": error_text(exc)}
            return {"kind": "done", "emits": ctx.emits, "answer": _answer(task.result())}
        if ctx.calls and len(ctx.calls) == seen and turn >= 3:
            return {"kind": "suspend", "emits": ctx.emits, "calls": ctx.calls}
        seen = len(ctx.calls)


def _run_function(value):
    run_fn = value.get("run") if isinstance(value, dict) else getattr(value, "run", None)
    return run_fn if callable(run_fn) else None


def agent_step(value, step):
    run_fn = _run_function(value)
    if run_fn is None:
        return {"ok": False, "error": "The entrypoint export has no run function."}
    ctx = AgentContext(step)
    outcome = asyncio.run(_step(run_fn, ctx))
    if ctx.used:
        # Told to the host, which then sends the message's later steps the transcript (as runner.ts).
        outcome["transcript_used"] = True
    return {"ok": True, "output": outcome}


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
        value = getattr(module, export_name)
        if request.get("agentStep"):
            return agent_step(value, request.get("args") or {})
        data = as_data(value)
        # A run function is marked (a code agent), as runner.ts does.
        if _run_function(value) is not None:
            data = dict(data) if isinstance(data, dict) else {}
            data["run"] = RUN_MARK
        return {"ok": True, "output": data}
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
