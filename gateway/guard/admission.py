"""The guard's identity step: who is calling (static token or the provider's), and may they do this.

`Admission.principal` authenticates a request: a static token (`gateway.guard.static_tokens`), else, with an
OpenID provider configured, a token the provider signed (`OidcVerifier`; its `aud` must be the
gateway's audience, or `<audience>/mcp` on `/mcp`). A refusal is 401 `unauthorized` with
`WWW-Authenticate: Bearer` (on `/mcp` with `resource_metadata`, RFC 9728; for a provider's token
that failed a check, `error="invalid_token"` and the check's name in `error_description` and the
message: `expired`, `not_yet_valid`, `audience`, `issuer`, `algorithm`, `signature`,
`unknown_key`, `oversized`, `malformed`, `missing_claim`, `principal`). The provider being
unreachable with no keys cached is 503 `unavailable`.

`Admission.admit` then classifies the request (`gateway.guard.operations`), checks each
operation's scope (403 `forbidden`, `error="insufficient_scope"` in the challenge), the request
rate and, for what starts a run, the quotas (429), and audits what changes state. Nothing reaches
a route or a workflow before these pass. The one rule for runs: only an ask starts one; steering
or deciding an existing request never meets the quotas, whatever the protocol, and an ask with
`on_busy: "steer"` refused by the quotas is admitted when its thread runs a request (it steers
that one: `_steers_a_running_request`, one read of the session, only at the limit).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.types import Message, Receive, Scope, Send
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from clients.errors import RejectedError
from contracts.errors import QUOTA_EXCEEDED, UNAUTHORIZED
from gateway.context import GatewayContext
from gateway.errors import GatewayError
from gateway.guard import chat_signin
from gateway.guard.operations import Operation, classify, reads_body
from gateway.guard.quotas import RunQuotas
from gateway.guard.rate import RequestRate
from gateway.guard.resource_metadata import MCP_PATH, RESOURCE_METADATA_PATH, challenge
from gateway.guard.static_tokens import authenticate
from gateway.http_input import handing_on
from gateway.identity.audit import AuditTrail, request_id_of
from gateway.identity.oidc import OidcVerifier, ProviderUnavailable, TokenRefused
from gateway.identity.principal import Principal
from gateway.identity.scopes import ScopeRefusal, require
from gateway.owners import session_id
from gateway.server.metrics import OPERATIONS_STATE
from gateway.settings import GatewaySettings

__all__ = ["Admission", "AuthenticationRefused", "admission_of"]

PUBLIC_PATHS = frozenset({RESOURCE_METADATA_PATH, chat_signin.CONFIG_PATH, chat_signin.TOKEN_PATH})
"""Identity's routes a caller reaches without a token (it has none yet)."""
UNAVAILABLE = "unavailable"
PROVIDER_RETRY_S = 5


class AuthenticationRefused(GatewayError):
    """401 `unauthorized`; `reason` names the failed check (None: no or an unknown static token)."""

    def __init__(self, path: str, settings: GatewaySettings, reason: str | None = None) -> None:
        """The refusal of a request to `path` (`reason`: the provider token's failed check)."""
        oidc = settings.identity.oidc
        if reason is None:
            message = "a valid `Authorization: Bearer <token>` header is required"
            header = challenge(oidc, path)
        else:
            message = f"the bearer token was refused: {reason}"
            header = challenge(oidc, path, error="invalid_token")
            header += f', error_description="{reason}"'
        super().__init__(401, UNAUTHORIZED, message, headers={"WWW-Authenticate": header})
        self.reason = reason


class Admission:
    """Authentication, scopes, rate and quotas of one gateway (its guard owns one)."""

    def __init__(
        self,
        settings: GatewaySettings,
        quotas: RunQuotas | None = None,
        runs_a_request: RunsARequest | None = None,
    ) -> None:
        """The admission of `settings`' callers.

        `quotas`: the run quotas, when any is set; `runs_a_request`: whether a principal's thread
        (agent, thread id) runs a request now (a steering ask at the limit steers it).
        """
        self._settings = settings
        self._runs_a_request = runs_a_request
        oidc = settings.identity.oidc
        self.verifier = OidcVerifier(oidc) if oidc is not None else None
        per_minute = settings.identity.quotas.requests_per_minute
        self._rate = RequestRate(per_minute) if per_minute is not None else None
        self._quotas = quotas
        self.audit = AuditTrail()

    async def aclose(self) -> None:
        """Close the verifier's HTTP client."""
        if self.verifier is not None:
            await self.verifier.aclose()

    async def principal(self, headers: Mapping[str, str], path: str, *, public: bool) -> Principal | None:
        """The caller (a public path may be called without a valid token: then None).

        Raises:
            GatewayError: 401 `unauthorized` (audited), 503 `unavailable`.
        """
        public = public or path in PUBLIC_PATHS
        try:
            return await self._authenticate(headers, path)
        except AuthenticationRefused as refused:
            if public:
                return None
            self.audit.record(
                principal=None,
                action="authenticate",
                target=path[:200],
                outcome="denied",
                status=401,
                request_id=request_id_of(headers),
                code=UNAUTHORIZED,
                reason=refused.reason or ("no_token" if "authorization" not in headers else "unknown_token"),
            )
            raise

    async def _authenticate(self, headers: Mapping[str, str], path: str) -> Principal:
        try:
            return authenticate(headers, self._settings)
        except GatewayError:
            if self.verifier is None:
                raise AuthenticationRefused(path, self._settings) from None
        scheme, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationRefused(path, self._settings)
        oidc = self.verifier.settings
        audiences = [oidc.audience, oidc.mcp_resource] if path == MCP_PATH else [oidc.audience]
        try:
            verified = await self.verifier.verify(token, audiences)
        except TokenRefused as refused:
            raise AuthenticationRefused(path, self._settings, refused.reason) from None
        except ProviderUnavailable:
            raise GatewayError(
                503,
                UNAVAILABLE,
                "the identity provider could not be reached to check the token; try again",
                headers={"Retry-After": str(PROVIDER_RETRY_S)},
            ) from None
        return Principal(verified.principal, verified.scopes)

    async def admit(
        self, scope: Scope, principal: Principal | None, receive: Receive, send: Send
    ) -> tuple[Receive, Send]:
        """Check what `principal` asks of the gateway; the receive and send the route gets.

        Raises:
            GatewayError: 403 `forbidden`, 429 `rate_limited` or `quota_exceeded`.
        """
        if principal is None:
            return receive, send
        method: str = scope["method"]
        path: str = scope["path"]
        body: bytes | None = None
        if reads_body(method, path):
            body, receive = await _peek_body(receive)
        operations = classify(method, path, body)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        request_id = request_id_of(headers)
        scope.setdefault("state", {})["request_id"] = request_id
        scope["state"][OPERATIONS_STATE] = [op.action for op in operations]  # the metrics' label
        audited = [op for op in operations if op.audited]
        try:
            self._check_scopes(principal, operations, path)
            if self._rate is not None:
                self._rate.admit(principal.name)
            await self._admit_runs(principal, operations)
        except GatewayError as err:
            for operation in audited or [Operation("request", None, thread=path)]:
                if audited or err.status == 429:
                    self.audit.record(
                        principal=principal.name,
                        action=operation.action,
                        target=operation.target,
                        outcome="refused",
                        status=err.status,
                        request_id=request_id,
                        code=err.code,
                    )
            raise
        if not audited:
            return receive, send
        return receive, self.audit.watch(send, principal.name, audited, request_id)

    async def _admit_runs(self, principal: Principal, operations: list[Operation]) -> None:
        """The quotas of the runs `operations` start (steering or deciding a request starts none).

        Raises:
            GatewayError: 429 `quota_exceeded`, 503 `unavailable`.
        """
        asks = [op for op in operations if op.starts_run]
        if self._quotas is None or not asks:
            return
        try:
            await self._quotas.admit(principal.name)
        except GatewayError as refused:
            if refused.code != QUOTA_EXCEEDED or not all(op.steers_running for op in asks):
                raise
            for ask in asks:
                if not await self._steers_a_running_request(principal, ask):
                    raise
            # Every ask steers a request that runs: none starts a run, the quotas do not hold them.

    async def _steers_a_running_request(self, principal: Principal, ask: Operation) -> bool:
        if self._runs_a_request is None or not ask.agent or not ask.thread:
            return False
        return await self._runs_a_request(principal, ask.agent, ask.thread)

    def _check_scopes(self, principal: Principal, operations: list[Operation], path: str) -> None:
        for operation in operations:
            if operation.scope is None:
                continue
            try:
                require(principal, operation.scope)
            except ScopeRefusal as refusal:
                header = challenge(
                    self._settings.identity.oidc, path, error="insufficient_scope", scope=refusal.scope
                )
                refusal.headers["WWW-Authenticate"] = header
                raise


RunsARequest = Callable[[Principal, str, str], Awaitable[bool]]
"""Whether a principal's thread (agent, thread id) runs a request now."""


def admission_of(ctx: GatewayContext) -> Admission:
    """The admission of a gateway on `ctx` (its run quotas read `ctx.client`; sessions `ctx.sessions`)."""
    quotas = RunQuotas(ctx.settings.identity.quotas, ctx.client, ctx.runs)

    async def runs_a_request(principal: Principal, agent: str, thread: str) -> bool:
        try:
            status = await ctx.sessions.get(session_id(principal, agent, thread)).status()
        except (GatewayError, RPCError, RejectedError, WorkflowQueryFailedError):
            return False  # no such thread (or no answer): the ask would start a run
        return status.active_request_id is not None

    return Admission(ctx.settings, quotas if quotas.enabled else None, runs_a_request)


async def _peek_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The body the guard already read whole (its first message), and a receive that hands it on."""
    first: Message = await receive()
    body = first.get("body", b"") if first["type"] == "http.request" and not first.get("more_body") else None
    return body, handing_on(first, receive)
