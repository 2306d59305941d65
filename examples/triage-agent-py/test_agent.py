"""The example's local test: runs agent.py with the SDK's harness (sdks/python), no server. Its model is this folder's
script.json, its custom tool the real tools/lookup_account.py, and the external service_status answered here as your
service would. The harness then replays the run against its own journal, as Troupe does after each wait.
Run: python3 examples/triage-agent-py/test_agent.py (npm test runs it in its unit layer). Standard library only."""

import importlib.util
import json
import os
import sys
import unittest

# No __pycache__ in this folder: `troupe deploy` uploads what is in it.
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdks", "python"))

from troupe_agent.harness import run_locally  # noqa: E402


def load(relative):
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_")[:-3], os.path.join(HERE, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


agent = load("agent.py").agent
lookup_account = load("tools/lookup_account.py").handler
with open(os.path.join(HERE, "script.json")) as f:
    script = json.load(f)
tools = {"lookup_account": lambda args: lookup_account(args, None), "service_status": lambda args: {"status": "all systems normal"}}


class TriageAgentTest(unittest.TestCase):
    def test_billing_route_parallel_tools_rule_check_and_one_retry(self):
        out = run_locally(agent["run"], "When does my plan renew?", script, tools=tools)
        # script.json's first answer breaks the "Answer:" rule; its second keeps it, its {{tool.field}}s filled as deployed.
        self.assertEqual(out["answer"], "Answer: your Team plan renews on 2026-12-01; service status: all systems normal.")
        self.assertEqual(out["emits"], ["routed to billing", "the answer broke the format rule; retrying once"])
        self.assertEqual(["%s %s" % (e["kind"], e["name"]) for e in out["journal"]], ["emit emit", "tool lookup_account", "tool service_status", "model default", "emit emit", "model default"])
        self.assertEqual(out["journal"][2]["arguments"], {"area": "billing"})

    def test_technical_route_and_no_retry_when_the_rule_holds(self):
        out = run_locally(agent["run"], "The app crashes on login", {"turns": [{"text": "Answer: clear the cache."}]}, tools=tools)
        self.assertEqual(out["answer"], "Answer: clear the cache.")
        self.assertEqual(out["emits"], ["routed to technical"])
        self.assertEqual(len([e for e in out["journal"] if e["kind"] == "model"]), 1)

    def test_a_second_broken_answer_goes_to_a_human(self):
        out = run_locally(agent["run"], "Refund please", {"turns": [{"text": "no"}, {"text": "still no"}]}, tools=tools)
        self.assertEqual(out["answer"], "Answer: (needs a human) still no")


if __name__ == "__main__":
    unittest.main()
