"""POSTs the requests of scripts/alerts.jsonl in turn, N of them, on one keep-alive
connection, each after the last answer came: a steady client whose requests the server's
instruction count is divided by (Benchmarks/serve/instructions.sh)."""
import http.client
import sys

port, count = int(sys.argv[1]), int(sys.argv[2])
lines = [line for line in open("scripts/alerts.jsonl").read().splitlines() if line.strip()]
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
for number in range(count):
    connection.request("POST", "/v1/dispatch", body=lines[number % len(lines)],
                       headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    answer.read()
    if answer.status not in (200, 400):
        sys.exit(f"request {number}: HTTP {answer.status}")
