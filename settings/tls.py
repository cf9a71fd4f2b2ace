"""TLS to the Temporal frontend from `TEMPORAL_TLS*` variables (see `settings.deployment`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from temporalio.service import TLSConfig

from settings.env_values import SettingsError, flag, value


def _pem(env: Mapping[str, str], *names: str) -> tuple[str, bytes] | None:
    """(variable, PEM bytes) from the first of `names` that is set: inline PEM or a file path."""
    for name in names:
        text = value(env, name)
        if text is None:
            continue
        if text.startswith("-----BEGIN"):
            return name, text.encode()
        try:
            data = Path(text).expanduser().read_bytes()
        except OSError as error:
            raise SettingsError(name, f"cannot read {text!r}: {error.strerror or error}") from None
        if b"-----BEGIN" not in data:
            raise SettingsError(name, f"{text!r} is not a PEM file (no -----BEGIN line)")
        return name, data
    return None


def tls_from_env(env: Mapping[str, str], has_api_key: bool) -> TLSConfig | bool:
    """TLS for the connection: off, on with the system roots, or a `TLSConfig` (CA, mTLS, server name).

    An API key turns TLS on unless `TEMPORAL_TLS` is false.

    Raises:
        SettingsError: half an mTLS pair, an unreadable or non-PEM file, or TLS forced off with TLS
            settings present.
    """
    forced = flag(env, "TEMPORAL_TLS")
    cert = _pem(env, "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_CERT_PATH")
    key = _pem(env, "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CLIENT_KEY_PATH")
    ca = _pem(env, "TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH")
    server_name = value(env, "TEMPORAL_TLS_SERVER_NAME")
    if (cert is None) != (key is None):
        given, missing = (
            ("TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY")
            if key is None
            else ("TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CERT")
        )
        raise SettingsError(missing, f"is required when {given} is set (mTLS needs both)")
    configured = cert is not None or ca is not None or server_name is not None
    if forced is False:
        if configured:
            raise SettingsError("TEMPORAL_TLS", "is false, but TLS certificates or a server name are set")
        return False
    if not (forced or configured or has_api_key):
        return False
    if not configured:
        return True
    return TLSConfig(
        server_root_ca_cert=ca[1] if ca else None,
        domain=server_name,
        client_cert=cert[1] if cert else None,
        client_private_key=key[1] if key else None,
    )
