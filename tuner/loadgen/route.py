"""How the load generator reaches a server: which httpx transport, through which proxy.

Every request goes through httpx's API (``httpx.AsyncClient``); the transport under it is
chosen here. ``raw`` (``raw_http``) is the default, the cheapest per streamed token; ``aiohttp``
is httpx-aiohttp's; ``httpx`` is httpx's own. Proxies come from the environment as everywhere
(HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY, upper or lower case), except that a loopback
address is never proxied: a server on this machine is talked to directly. The raw transport
speaks to the server itself and cannot go through a proxy; aiohttp's cannot use a SOCKS one.
A transport that was not asked for gives way to one that can; one that was asked for refuses
with a line naming the one to use.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import urllib.request
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

import httpx

from tuner.core import ConfigError

Transport = Literal["raw", "aiohttp", "httpx"]
TRANSPORTS: tuple[Transport, ...] = get_args(Transport)
DEFAULT: Transport = "raw"
NEEDS = {"aiohttp": ("httpx_aiohttp", "httpx-aiohttp")}
"""The module a transport imports, and the package that installs it."""


@dataclass(frozen=True)
class Route:
    """The transport and the proxy (None: direct) the client uses for one server."""

    transport: Transport
    proxy: str | None = None

    def describe(self) -> str:
        return (f"transport {self.transport}, "
                + (f"proxy {redact(self.proxy)}" if self.proxy else "no proxy"))


DIRECT = Route(DEFAULT)
"""The default route: the raw transport, no proxy."""


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url``; None for loopback or a NO_PROXY host."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if is_loopback(host):
        return None
    proxies = urllib.request.getproxies_environment()
    if urllib.request.proxy_bypass(parts.netloc):  # NO_PROXY (the environment's, on Linux)
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def redact(proxy: str) -> str:
    """A proxy URL without its password."""
    parts = urlsplit(proxy)
    if parts.password is None:
        return proxy
    return proxy.replace(f":{parts.password}@", ":***@", 1)


def route_for(url: str, transport: str | None) -> Route:
    """The route to ``url`` with the ``transport`` asked for (None: the default, or one that
    can use the environment's proxy). Raises ConfigError (one line) for an unknown or
    uninstalled transport, or one that cannot use the proxy."""
    if transport is not None and transport not in TRANSPORTS:
        raise ConfigError(f"--transport {transport}: not a transport; give one of "
                          f"{', '.join(TRANSPORTS)}")
    if transport in NEEDS:
        module, package = NEEDS[transport]
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f"--transport {transport}: {package} is not installed; "
                              f"pip install {package}, or give --transport httpx")
    proxy = proxy_for(url)
    chosen: Transport = transport or DEFAULT
    why = cannot_use(chosen, proxy)
    if why is not None:
        if transport is not None:
            raise ConfigError(f"--transport {transport}: {why}; give --transport httpx (or "
                              f"exclude the host with NO_PROXY)")
        chosen = "httpx"
    if chosen == "httpx" and proxy is not None and proxy.startswith("socks") \
            and importlib.util.find_spec("socksio") is None:
        raise ConfigError(f"the proxy {redact(proxy)} is a SOCKS proxy, which httpx needs "
                          "socksio for: pip install 'httpx[socks]'")
    return Route(chosen, proxy)


def cannot_use(transport: Transport, proxy: str | None) -> str | None:
    """Why ``transport`` cannot reach the server through ``proxy``, or None."""
    if proxy is None or transport == "httpx":
        return None
    if transport == "raw":
        return f"the raw transport cannot go through the proxy {redact(proxy)}"
    if proxy.startswith("socks"):
        return f"aiohttp's transport cannot use the SOCKS proxy {redact(proxy)}"
    return None


def make_transport(route: Route, limits: httpx.Limits) -> httpx.AsyncBaseTransport:
    """The httpx transport of ``route``, with its proxy and connection limits."""
    if route.transport == "raw":
        from tuner.loadgen.raw_http import RawTransport

        return RawTransport(limits)
    proxy = httpx.Proxy(route.proxy) if route.proxy else None
    if route.transport == "aiohttp":  # imported here: aiohttp takes 0.2-0.3 s to import
        from httpx_aiohttp import AiohttpTransport

        return AiohttpTransport(limits=limits, proxy=proxy)
    return httpx.AsyncHTTPTransport(limits=limits, proxy=proxy)



def plain_client(url: str | None, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """An httpx client for the requests beside the load (the probe, the metrics scraper) to
    ``url``: the environment's proxy, loopback excepted, as the load's own route."""
    return httpx.AsyncClient(timeout=timeout, proxy=proxy_for(url) if url else None,
                             trust_env=False)
