"""The examples' tests; the fleet example's needs nats-py (the tox env ``fleet`` runs it)."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("nats") is None:
    # Not collected (rather than skipped) where nats-py is not installed: the unit envs.
    collect_ignore = ["test_fleet_bridge.py"]
