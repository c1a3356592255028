# Request lines for tools/compare-dispatch.sh: SEED COUNT -> COUNT lines on stdout.
import json, random, sys
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
paths = ["/app/tap", "/app/swap", "/app/boom", "/app/fn", "/app/nested", "/nowhere", "app", "/app//tap", "/", "/app/tap/", "", "/app"]
vals = [None, True, False, 0, -1, 1.5, 1e300, "x", "Tap", "", [], {}, [1, None], {"a": None}, {"type": "Tap"}, {"type": 5},
        {"type": "E", "title": "T", "recovery": ["Retry"]}, {"message": "m"}, [1, 2], {"type": "Tap", "n": [1, {"b": None}]}, "\u00e9\u4e2d"]
keys = ["id", "at", "event", "error", "extra", "ID", "at "]
def member():
    k = random.choice(keys)
    if k == "at": v = random.choice(paths + vals)
    else: v = random.choice(vals)
    return k, v
def line():
    r = random.random()
    members = [("at", random.choice(paths)), (random.choice(["event", "error"]), random.choice(vals))]
    if random.random() < 0.7: members.insert(0, ("id", random.choice(vals)))
    for _ in range(random.choice([0, 0, 0, 1, 2])):
        members.insert(random.randrange(len(members) + 1), member())
    if random.random() < 0.1: random.shuffle(members)
    text = "{" + ", ".join(json.dumps(k) + ": " + json.dumps(v) for k, v in members) + "}"
    if r < 0.1:
        i = random.randrange(len(text)); text = text[:i] + text[i + 1:]
    elif r < 0.15:
        i = random.randrange(len(text)); text = text[:i] + random.choice(['"', ',', '}', '{', '[', ':', 'n', '\\']) + text[i:]
    elif r < 0.18:
        text = random.choice(["[1]", "5", "\"s\"", "null", "[null]", "{}", "", "  ", "{\"at\":\"/app/tap\",\"event\":\"Tap\"} x", "{\"a\":[1,null]}", "[" * 300 + "]" * 300])
    return text
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3000):
    print(line())
