"""A short Python script, one of the small processes whose memory the
allocators are compared on (suites/experiments/small-processes.toml)."""
import collections
import json

words = [str(i * 7919 % 100003) for i in range(200000)]
counts = collections.Counter(w[:3] for w in words)
table = {w: [len(w), w[::-1]] for w in words[:50000]}
print(json.dumps(counts.most_common(5)), len(table))
