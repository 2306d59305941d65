"""The Troupe agent SDK for Python (``sdk: "troupe-py@1"``): the types of the ``ctx`` a code agent's run coroutine
gets. Inside Troupe the sandbox provides ``ctx``, so an agent needs nothing of this at run time (the sandbox runs
the standard library only); use it for type checking and for ``troupe_agent.harness.run_locally``.
Reference: docs/code-agents.md.
"""

from typing import Any, Awaitable, Dict, List, Optional, Protocol, TypedDict

__all__ = ["Ctx", "ModelResponse", "TranscriptEntry", "CallFailed"]


class ModelResponse(TypedDict):
    text: str
    parts: List[Dict[str, Any]]
    stop_reason: str
    usage: Optional[Dict[str, int]]


class TranscriptEntry(TypedDict):
    role: str
    text: str


class CallFailed(Exception):
    """What ``ctx.model`` and ``ctx.tool`` raise when the call failed (inside Troupe the sandbox raises its own of this name)."""


class Ctx(Protocol):
    """What a run coroutine may do. Every call is journaled and answered from the journal when the run is replayed,
    so a run must make the same calls in the same order each time; start several before awaiting them
    (``asyncio.gather``) to run them in parallel."""

    input: str
    message: Dict[str, Any]

    def model(self, request: Optional[Dict[str, Any]] = None, **fields: Any) -> Awaitable[ModelResponse]:
        """``llm_id``, ``system``, ``messages`` ([{role, content}]) or ``input``, ``tools`` (names), ``max_tokens``."""
        ...

    def tool(self, name: str, args: Optional[Dict[str, Any]] = None) -> Awaitable[Any]: ...

    def sleep(self, seconds: float) -> Awaitable[None]:
        """A durable sleep: the agent holds no process meanwhile."""
        ...

    def emit(self, text: str) -> None: ...

    def transcript(self) -> List[TranscriptEntry]: ...
