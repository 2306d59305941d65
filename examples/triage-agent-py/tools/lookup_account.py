# Stands in for a CRM lookup; runs in Troupe's sandbox.
def handler(args, context):
    return {"plan": "Team", "renews_on": "2026-12-01", "open_tickets": len(args["question"]) % 3}
