"""Peer scenarios of bench/overhead.py: other Temporal agent integrations doing the same work."""
