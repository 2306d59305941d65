"""Runs a code agent locally, without a server: model calls answered by a script (``{"turns": [{"text"} |
{"tool_calls"}]}``, one turn per call), tools by the handlers you pass. Then it runs the agent again answering every
call from the first run's journal, as Troupe replays a turn, and raises ``NondeterministicReplay`` when the replay
makes a different call. Standard library only."""

import asyncio
import inspect
import json
import re

from . import CallFailed

__all__ = ["run_locally", "NondeterministicReplay"]


class NondeterministicReplay(Exception):
    pass


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


_PLACEHOLDER = r"\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}"
_INDEX = re.compile(r"0|[1-9][0-9]*")
_MISSING = object()


def _fill(value, results):
    """``{{tool_name.field}}`` becomes that field of the tool's latest result in the run, as Troupe's ``scripted``
    provider fills it (one placeholder alone keeps the value's JSON type; a missing or null value alone stays as
    written). The contract is sdks/fixtures/placeholders.json, whose cases the server and the JS SDK run too."""

    def lookup(tool, path):
        v = results.get(tool, _MISSING)
        for key in [k for k in path.split(".") if k]:
            if isinstance(v, dict):
                v = v.get(key, _MISSING)
            elif isinstance(v, list) and _INDEX.fullmatch(key) and int(key) < len(v):
                v = v[int(key)]
            else:
                v = _MISSING
        return v

    if isinstance(value, str):
        whole = re.fullmatch(_PLACEHOLDER, value)
        if whole:
            v = lookup(whole.group(1), whole.group(2))
            return value if v is _MISSING or v is None else v

        def one(m):
            v = lookup(m.group(1), m.group(2))
            return m.group(0) if v is _MISSING else v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)

        return re.sub(_PLACEHOLDER, one, value)
    if isinstance(value, list):
        return [_fill(v, results) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, results) for k, v in value.items()}
    return value


def _scripted(turns, index, results):
    turn = turns[index] if index < len(turns) else next((t for t in reversed(turns) if "text" in t), {"text": ""})
    if "tool_calls" in turn:
        parts = [{"type": "tool_call", "id": c.get("id", "call_%d_%d" % (index, i)), "name": c["name"], "arguments": _fill(c["arguments"], results)} for i, c in enumerate(turn["tool_calls"])]
        return {"text": "", "parts": parts, "stop_reason": "tool_use", "usage": None}
    text = _fill(turn["text"], results)
    return {"text": text, "parts": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": None}


class _LocalCtx:
    def __init__(self, input, script, tools, replay, metadata, transcript):
        self.input = input
        self.message = {"id": "msg_local", "parts": [{"type": "text", "text": input}], "metadata": metadata}
        self._script = script
        self._tools = tools
        self._replay = replay
        self._transcript = transcript
        self._next = 0
        self._models = 0
        self._results = {}
        self.journal = []
        self.emits = []

    async def _record(self, kind, name, raw, live):
        position = self._next
        self._next += 1
        args = json.loads(json.dumps(raw if raw is not None else {}))
        if self._replay is not None:
            was = self._replay.get(position)
            if was is None or was["kind"] != kind or was["name"] != name or _canonical(was["arguments"]) != _canonical(args):
                have = "%s %s(%s)" % (was["kind"], was["name"], _canonical(was["arguments"])) if was else "nothing"
                raise NondeterministicReplay("nondeterministic_replay: at position %d the run called %s %s(%s), but the journal has %s." % (position, kind, name, _canonical(args), have))
            result = was["result"]
        else:
            try:
                value = live()
                if inspect.isawaitable(value):
                    value = await value
                result = {"ok": True, "output": json.loads(json.dumps(value))}
            except Exception as exc:  # the run gets it as CallFailed, as inside Troupe
                result = {"ok": False, "error": str(exc)}
        self.journal.append({"position": position, "kind": kind, "name": name, "arguments": args, "result": result})
        if kind == "tool" and result["ok"]:
            self._results[name] = result["output"]
        if not result["ok"]:
            raise CallFailed(result["error"])
        return result["output"]

    def model(self, request=None, **fields):
        req = dict(request or {}, **fields)

        def live():
            index = self._models
            self._models += 1
            return _scripted(self._script.get("turns", []), index, self._results)

        return self._record("model", req.get("llm_id") or "default", req, live)

    def tool(self, name, args=None):
        def live():
            handler = self._tools.get(name)
            if handler is None:
                raise LookupError("The agent has no tool named %s." % name)
            return handler(args or {})

        return self._record("tool", name, args or {}, live)

    def sleep(self, seconds):
        return self._record("sleep", "sleep", {"ms": int(float(seconds) * 1000)}, lambda: None)

    def emit(self, text):
        position = self._next
        self._next += 1
        self.emits.append(str(text))
        self.journal.append({"position": position, "kind": "emit", "name": "emit", "arguments": {"text": str(text)}, "result": {"ok": True, "output": None}})

    def transcript(self):
        return self._transcript


def _text(answer):
    if isinstance(answer, dict) and isinstance(answer.get("text"), str):
        return answer["text"]
    return answer if isinstance(answer, str) else json.dumps(answer)


def run_locally(run, input, script, tools=None, metadata=None, transcript=None):
    """Runs ``run(ctx, input)`` and replays it; returns ``{"answer", "journal", "emits"}`` of the first run."""
    first = _LocalCtx(input, script, tools or {}, None, metadata, transcript or [])
    answer = _text(asyncio.run(run(first, input)))
    replay = _LocalCtx(input, script, tools or {}, {e["position"]: e for e in first.journal}, metadata, transcript or [])
    again = _text(asyncio.run(run(replay, input)))
    if again != answer:
        raise NondeterministicReplay("nondeterministic_replay: the replay answered %r, the run %r." % (again, answer))
    return {"answer": answer, "journal": sorted(first.journal, key=lambda e: e["position"]), "emits": first.emits}
