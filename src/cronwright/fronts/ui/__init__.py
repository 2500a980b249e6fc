"""The dashboard (DESIGN semantic 40): HTML pages over the protocol, served by `serve` at `/ui/`.

Everything it shows comes from a protocol request made as the logged-in caller, so a source sees what the
API would answer it and nothing more. `site.create_ui` builds the ASGI app; docs/dashboard.md describes it.
"""
