"""A code agent (sdk troupe-py@1): Troupe runs ``run`` in its sandbox and journals every ctx call, so the run is
replayed from the start after each wait. Keep what decides a call deterministic (no time, no random).
Standard library only. Types: sdks/python (troupe_agent.Ctx)."""

import asyncio
import json
import re

PROMPTS = {
    "billing": "You answer billing questions for a software company. Be brief and exact about amounts and dates.",
    "technical": "You answer technical support questions for a software company. Give one concrete next step.",
}


def passes(text):
    """The rule every answer must keep: it starts with "Answer:" (the help desk's format)."""
    return text.strip().startswith("Answer:")


async def run(ctx, input):
    route = "billing" if re.search(r"refund|invoice|bill|charge|price|plan", input, re.I) else "technical"
    ctx.emit("routed to " + route)
    # In parallel: a custom tool (runs in the sandbox) and an external one (your service answers it).
    account, status = await asyncio.gather(ctx.tool("lookup_account", {"question": input}), ctx.tool("service_status", {"area": route}))
    facts = "Account: %s\nService status: %s" % (json.dumps(account), json.dumps(status))
    messages = [{"role": "user", "content": input + "\n\n" + facts}]
    answer = await ctx.model(system=PROMPTS[route], messages=messages)
    if not passes(answer["text"]):
        ctx.emit("the answer broke the format rule; retrying once")
        answer = await ctx.model(system=PROMPTS[route] + ' Always start your reply with "Answer:".', messages=messages)
    return answer["text"] if passes(answer["text"]) else "Answer: (needs a human) " + answer["text"]


agent = {"instructions": PROMPTS["technical"], "run": run}
