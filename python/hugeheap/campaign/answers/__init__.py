"""What the runs of a campaign answered: each tool's answer read from its
output (adapters.py), checked against its instance where the instance can
prove it wrong (checks.py), and judged against the answers of the other runs
on the instance (verdicts.py)."""
