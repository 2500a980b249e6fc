"""What every dashboard answer carries, and what every change must show: headers that keep the page from
being framed or from running anything but its own static files, and the same-origin and CSRF checks."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# No inline script or style at all: the page's CSS and JS are static files of this origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    # A one-time link's token is in its URL: no page sends its address anywhere.
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
FORM_LIMIT = 65536  # bytes of a form's body


class SecurityHeaders:
    """ASGI middleware: the headers above on every answer, and `no-store` on every page (a page shows
    what one caller may see; no cache keeps it for the next)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"][len(scope.get("root_path", "")) :].startswith("/static/")

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *HEADERS]
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_guarded)


def same_origin(request: Request) -> bool:
    """Whether a change comes from a page of this very origin: its Origin header names this scheme, host
    and port. A browser sends Origin with every POST; a request without it is refused, unless the
    browser's Sec-Fetch-Site says same-origin."""
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    if origin is None or origin == "null":
        return request.headers.get("sec-fetch-site") == "same-origin"
    return host is not None and origin == f"{request.url.scheme}://{host}"


async def form(request: Request) -> dict[str, str] | None:
    """An url-encoded form's fields (the last of a repeated one wins, but see `form_lists`); None for a
    body of another type or over FORM_LIMIT."""
    fields = await form_lists(request)
    return None if fields is None else {k: v[-1] for k, v in fields.items()}


async def form_lists(request: Request) -> dict[str, list[str]] | None:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_LIMIT:
            return None
    fields: dict[str, list[str]] = {}
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        return None
    for key, value in pairs:
        fields.setdefault(key, []).append(value)
    return fields
