"""Custom tool handler in Python: runs in the sandbox like the JavaScript one.

Troupe calls ``handler(args, context)`` with the model's arguments (already
valid against the input schema) and a context holding ``secrets`` (the
declared secrets this session has), ``scratch_dir`` (this call's writable
folder) and ``storage_dir`` (None unless the session has a storage binding).
The return value must be JSON-serialisable; it is the result the model sees.
A raised exception becomes an error result. ``async def handler`` works too.
"""

# (the day's high below this many °C, what to wear), coldest first.
BANDS = (
    (0, "a winter coat, hat and gloves"),
    (10, "a warm jacket"),
    (18, "a light jacket or a sweater"),
    (25, "a T-shirt, with a layer for the evening"),
)

# A day whose low is this much under its high needs a layer to add or shed.
LAYER_SWING_C = 10


def handler(args, context):
    high, low = float(args["high_c"]), float(args["low_c"])
    wear = next((what for below, what in BANDS if high < below), "light summer clothes")
    swing = high - low
    advice = "Wear %s" % wear
    advice += "; it drops to %g °C, so bring a layer." % low if swing >= LAYER_SWING_C else "."
    return {"wear": wear, "advice": advice, "swing_c": round(swing, 1)}
