"""python3 -m unittest discover -s sdks/python/tests (run by test/unit/sdk-python-harness.test.ts)."""

import asyncio
import itertools
import json
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

    def test_placeholder_cases_shared_with_the_server_and_the_js_sdk(self):
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "placeholders.json"), encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 10)
        for case in cases:
            with self.subTest(case["name"]):
                outputs = [output for _, output in case["results"]]

                async def probe(ctx, input):
                    for i, (tool, _) in enumerate(case["results"]):
                        await ctx.tool(tool, {"i": i})
                    r = await ctx.model(input=input)
                    return json.dumps(r["parts"][0]["arguments"]["v"], sort_keys=True)

                tools = {tool: (lambda a: outputs[a["i"]]) for tool, _ in case["results"]}
                out = run_locally(probe, "", {"turns": [{"tool_calls": [{"name": "probe", "arguments": {"v": case["template"]}}]}]}, tools=tools)
                # Compared as JSON text: in Python True == 1, in JSON true is not 1.
                self.assertEqual(out["answer"], json.dumps(case["expected"], sort_keys=True))

if __name__ == "__main__":
    unittest.main()
