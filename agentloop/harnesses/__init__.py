"""Harnesses run the agent loop: SimpleHarness (ours, every stage in view) and, later, PiHarness (pi over RPC)."""
