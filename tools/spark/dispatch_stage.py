"""`luahier dispatch` as a stage of Apache Spark (docs/spark.md), in the two ways the recipe
gives: `RDD.pipe`, one process per partition fed its lines; and `mapPartitionsWithIndex`,
the same with each partition's `--line-offset`, so that its output is the single run's byte
for byte. The rules, a bundle (signed: `--bundle-key`) or a rules file, are shipped to the
executors with `addFile`.

    python3 dispatch_stage.py --luahier PATH --rules RULES [--bundle-key PUB] --input IN
                              --output OUT [--executors N] [--partitions N] [--mode pipe|offsets]

Writes OUT (Spark's part files, in partition order) and prints one line of JSON: lines,
seconds, lines per second.
"""
import argparse
import json
import os
import subprocess
import threading
import time

from pyspark import SparkConf, SparkContext, SparkFiles


def dispatch_partition(luahier, name, flags):
    """A partition of (line, index) pairs, in order: its lines through `luahier dispatch`,
    numbered from the first one's index, streamed in and out."""

    def run(_, items):
        process = None
        for line, index in items:
            if process is None:
                command = [luahier, "dispatch", SparkFiles.get(name), "-", "--line-offset", str(index)] + flags
                process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                errors = []
                reader = threading.Thread(target=lambda: errors.append(process.stderr.read()))
                reader.start()
                answers = []
                collector = threading.Thread(target=lambda: answers.extend(process.stdout.read().decode().splitlines()))
                collector.start()
            process.stdin.write(line.encode() + b"\n")
        if process is None:
            return iter(())
        process.stdin.close()
        collector.join()
        reader.join()
        if process.wait() != 0:
            raise RuntimeError(f"luahier dispatch exited {process.returncode}: {errors[0].decode()}")
        return iter(answers)

    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--luahier", required=True)
    parser.add_argument("--rules", required=True)
    parser.add_argument("--bundle-key")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--executors", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--mode", choices=["pipe", "offsets"], default="offsets")
    arguments = parser.parse_args()

    conf = SparkConf().setMaster(f"local[{arguments.executors}]").setAppName("luahier dispatch")
    conf.set("spark.ui.enabled", "false")
    context = SparkContext(conf=conf)
    context.setLogLevel("ERROR")
    context.addFile(arguments.rules)
    name = os.path.basename(arguments.rules)
    # The same names on every executor: the input's, and the rules' (not the path each got;
    # a bundle's rules run under its manifest's names already).
    flags = ["--source", "input", "--invalid-ok"]
    if arguments.bundle_key:
        context.addFile(arguments.bundle_key)
        flags += ["--bundle-key", SparkFiles.get(os.path.basename(arguments.bundle_key))]
    else:
        flags += ["--rules-name", name]
    partitions = arguments.partitions or arguments.executors
    lines = context.textFile(arguments.input, minPartitions=partitions)

    started = time.monotonic()
    if arguments.mode == "pipe":
        # The command runs on each executor, in its working folder, where addFile put the
        # rules (local mode: the driver's SparkFiles folder, the same path).
        command = [arguments.luahier, "dispatch", SparkFiles.get(name), "-"] + flags
        answers = lines.pipe(" ".join(command), checkCode=True)
    else:
        answers = lines.zipWithIndex().mapPartitionsWithIndex(dispatch_partition(arguments.luahier, name, flags))
    answers.saveAsTextFile(arguments.output)
    seconds = time.monotonic() - started
    count = lines.count()
    print(json.dumps({"mode": arguments.mode, "executors": arguments.executors, "partitions": lines.getNumPartitions(),
                      "lines": count, "seconds": round(seconds, 2), "lines_per_second": round(count / seconds)}))
    context.stop()


if __name__ == "__main__":
    main()
