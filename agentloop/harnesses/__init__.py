"""Harnesses run the agent loop.

simple_harness.py  SimpleHarness (ours, every stage in view), RunSettings and run_settings (a run's settings)
"""
