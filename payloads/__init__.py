"""The payload path: payload stores, the claim check, encryption, the payload converter, redaction.

`settings.py` holds the deployment settings these parts (and the connection and the worker) read.
"""
