"""python3 -m unittest discover -s sdks/python/tests (run by test/unit/sdk-python-harness.test.ts)."""

import asyncio
import itertools
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from troupe_agent import CallFailed  # noqa: E402
from troupe_agent.harness import NondeterministicReplay, run_locally  # noqa: E402


async def agent(ctx, input):
    ctx.emit("start")
    a, b = await asyncio.gather(ctx.tool("add", {"a": 1, "b": 2}), ctx.tool("add", {"a": 3, "b": 4}))
    r = await ctx.model(input="%s %d" % (input, a["sum"] + b["sum"]))
    try:
        await ctx.tool("missing")
    except CallFailed as exc:
        return "%s (%s)" % (r["text"], exc)
    return r["text"]


class HarnessTest(unittest.TestCase):
    def test_scripted_model_tools_in_parallel_and_journal(self):
        out = run_locally(agent, "sum", {"turns": [{"text": "ten"}]}, tools={"add": lambda a: {"sum": a["a"] + a["b"]}})
        self.assertEqual(out["answer"], "ten (The agent has no tool named missing.)")
        self.assertEqual(out["emits"], ["start"])
        self.assertEqual([(e["position"], e["kind"], e["name"]) for e in out["journal"]], [(0, "emit", "emit"), (1, "tool", "add"), (2, "tool", "add"), (3, "model", "default"), (4, "tool", "missing")])

    def test_nondeterministic_replay(self):
        counter = itertools.count()

        async def flaky(ctx, input):
            return str(await ctx.tool("add", {"a": next(counter), "b": 0}))

        with self.assertRaisesRegex(NondeterministicReplay, r'at position 0 the run called tool add\({"a":1,"b":0}\), but the journal has tool add\({"a":0,"b":0}\)'):
            run_locally(flaky, "", {"turns": []}, tools={"add": lambda a: 1})

    def test_scripted_placeholders_read_the_latest_tool_results(self):
        async def filled(ctx, input):
            await ctx.tool("add", {"a": 1, "b": 2})
            r = await ctx.model(input=input)
            return r["text"]

        out = run_locally(filled, "", {"turns": [{"text": "sum {{add.sum}}, {{add.missing}}"}]}, tools={"add": lambda a: {"sum": a["a"] + a["b"]}})
        self.assertEqual(out["answer"], "sum 3, {{add.missing}}")

if __name__ == "__main__":
    unittest.main()
