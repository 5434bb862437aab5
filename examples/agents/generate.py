#!/usr/bin/env python3
"""Writes coding-agents.jsonl: seeded agent runs in anvil's `jsonl` agent
format (docs/workloads.md "Agent traces"), whose graph, delays and shared
blocks are known, for the replay's acceptance tests and the demo recipe.

Each task: a planner call; three readers fanned out after tool delays,
each inheriting the planner's prompt and adding its own blocks; a patch
call that joins the readers and inherits the planner's prompt; a test run
(a long tool delay) and a final call that inherits the patch's prompt.
Every task begins with the same two system-prompt blocks (0 and 1), so
tasks share them across the run.

    python3 examples/agents/generate.py > examples/agents/coding-agents.jsonl
"""
import json
import random
import sys

SEED = 41
TASKS = 12


def main(out=sys.stdout):
    rng = random.Random(SEED)
    next_block = 100
    for t in range(TASKS):
        task = f"task-{t:02d}"

        def blocks(n):
            nonlocal next_block
            ids = list(range(next_block, next_block + n))
            next_block += n
            return ids

        plan = [0, 1] + blocks(rng.randint(2, 4))
        calls = [dict(call="plan", hash_ids=plan, output_tokens=rng.randint(24, 48), deadline_ms=30000)]
        readers = []
        for r in range(3):
            own = blocks(rng.randint(1, 3))
            name = f"read-{r}"
            readers.append(name)
            calls.append(dict(call=name, parents=["plan"], inherit="plan", hash_ids=own,
                              delay_ms=rng.choice([100, 200, 300, 400]), output_tokens=rng.randint(8, 24)))
        calls.append(dict(call="patch", parents=readers, inherit="plan", hash_ids=blocks(2),
                          delay_ms=50, output_tokens=rng.randint(32, 64)))
        calls.append(dict(call="final", parents=["patch"], inherit="patch", hash_ids=blocks(1),
                          delay_ms=rng.choice([500, 800]), output_tokens=16))
        for c in calls:
            line = {"task": task, **c}
            if c["call"] == "plan":
                line["arrival_ms"] = t * 1500
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
