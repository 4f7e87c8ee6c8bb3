"""Harnesses run the agent loop; each takes (llm, history, question, settings, emit, files) and
sends the events of events.py.

simple_harness.py  SimpleHarness (ours, every stage in view), RunSettings and run_settings (a run's
                   settings)
pi_harness.py      PiHarness: the pi coding agent as a child in RPC mode, its records as events
model_endpoint.py  ModelEndpoint: this page's model as an OpenAI-compatible endpoint, for pi
pi_extension.ts    the extension pi loads: reports requests, asks permission, registers our tools
"""
