"""Which transport and proxy the client takes: the environment's proxy except for loopback, a
transport that cannot use it refused when asked for and passed over when not, and a real
forward proxy (on 127.0.0.1) carrying the load of httpx's and aiohttp's transports."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import pytest

from tuner.core import ConfigError
from tuner.loadgen import route as route_module
from tuner.loadgen.client import ServerCaps, StreamClient
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.route import DIRECT, Route, proxy_for, redact, route_for
from tuner.workload import PlannedRequest

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_no_proxy_in_the_environment_is_the_default_route() -> None:
    assert route_for("http://10.1.2.3:8000", None) == DIRECT
    assert route_for("http://10.1.2.3:8000", "httpx") == Route("httpx")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "http://localhost:8000",
                                 "http://[::1]:8000", "http://127.5.0.1"])
def test_loopback_is_never_proxied(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("ALL_PROXY", "http://proxy.example:3128")
    assert proxy_for(url) is None
    assert route_for(url, "raw") == DIRECT


def test_the_environment_s_proxy_and_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("ALL_PROXY", "http://all.example:3128")
    monkeypatch.setenv("NO_PROXY", "inside.example,.corp")
    assert proxy_for("https://api.example/v1") == "http://proxy.example:3128"
    assert proxy_for("http://api.example/v1") == "http://all.example:3128"
    assert proxy_for("http://inside.example:8000") is None
    assert proxy_for("http://gpu1.corp:8000") is None


def test_a_transport_not_asked_for_gives_way_to_one_that_can_use_the_proxy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://user:secret@proxy.example:3128")
    route = route_for("http://gpu1.example:8000", None)
    assert route == Route("httpx", "http://user:secret@proxy.example:3128")
    assert route.describe() == "transport httpx, proxy http://user:***@proxy.example:3128"
    assert route_for("http://gpu1.example:8000", "aiohttp").transport == "aiohttp"


def test_a_transport_asked_for_that_cannot_use_the_proxy_is_refused_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://user:secret@proxy.example:3128")
    with pytest.raises(ConfigError) as raised:
        route_for("http://gpu1.example:8000", "raw")
    assert str(raised.value) == (
        "--transport raw: the raw transport cannot go through the proxy "
        "http://user:***@proxy.example:3128; give --transport httpx (or exclude the host with "
        "NO_PROXY)")
    monkeypatch.setenv("HTTP_PROXY", "socks5://proxy.example:1080")
    with pytest.raises(ConfigError, match="^--transport aiohttp: aiohttp's transport cannot "
                       "use the SOCKS proxy socks5://proxy.example:1080; give --transport httpx"):
        route_for("http://gpu1.example:8000", "aiohttp")


def test_an_unknown_or_missing_transport_is_refused_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"^--transport h2: not a transport; give one of "
                       "raw, aiohttp, httpx$"):
        route_for("http://127.0.0.1:8000", "h2")
    real = route_module.importlib.util.find_spec
    monkeypatch.setattr(route_module.importlib.util, "find_spec",
                        lambda name: None if name == "httpx_aiohttp" else real(name))
    with pytest.raises(ConfigError, match=r"^--transport aiohttp: httpx-aiohttp is not "
                       "installed; pip install httpx-aiohttp, or give --transport httpx$"):
        route_for("http://127.0.0.1:8000", "aiohttp")


def test_a_password_is_left_out_of_what_is_shown() -> None:
    assert redact("http://u:p4ss@proxy:3128") == "http://u:***@proxy:3128"
    assert redact("http://proxy:3128") == "http://proxy:3128"


# A real forward proxy and the server behind it, both on 127.0.0.1. The client is given a name
# that is not loopback (so the environment's proxy applies); only the proxy resolves it.

STREAM = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked"
          b"\r\n\r\n")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def serve_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    await reader.readexactly(length)
    event = (b'data: {"choices":[{"text":"a"}],"usage":{"prompt_tokens":10,'
             b'"completion_tokens":2}}\n\n')
    writer.write(STREAM + chunk(event) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    await writer.drain()
    writer.close()


@asynccontextmanager
async def proxied_server() -> AsyncIterator[tuple[str, str, list[bytes]]]:
    """(the server's URL under a name only the proxy knows, the proxy's URL, the request
    lines the proxy forwarded)."""
    server = await asyncio.start_server(serve_stream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    forwarded: list[bytes] = []

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, rest = head.split(b"\r\n", 1)
        method, target, version = line.split(b" ")
        forwarded.append(line)
        url = urlsplit(target.decode())  # absolute form: http://upstream.test:PORT/path
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", url.port)
        up_writer.write(b"%s %s %s\r\n%s" % (method, url.path.encode(), version, rest))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer),
                             return_exceptions=True)

    proxy = await asyncio.start_server(forward, "127.0.0.1", 0)
    proxy_port = proxy.sockets[0].getsockname()[1]
    async with server, proxy:
        yield (f"http://upstream.test:{port}", f"http://127.0.0.1:{proxy_port}", forwarded)


@pytest.mark.parametrize("transport", [None, "aiohttp", "httpx"])
async def test_the_load_goes_through_the_environment_s_proxy(
        monkeypatch: pytest.MonkeyPatch, transport: str | None) -> None:
    async with proxied_server() as (url, proxy, forwarded):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        route = route_for(url, transport)
        assert route == Route(transport or "httpx", proxy)  # the default gave way to httpx
        rec = RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=10,
                            planned_output_tokens=2, scheduled_ns=0)
        async with StreamClient(url, model="m", api="completions", caps=ServerCaps(),
                                pool_size=2, timeout_s=10, route=route) as client:
            await client.send(PlannedRequest(0, "c", None, 10, 2, "hello"), rec, 0)
    assert rec.ok, rec.error
    assert rec.output_tokens == 2
    assert forwarded == [f"POST {url}/v1/completions HTTP/1.1".encode()]
