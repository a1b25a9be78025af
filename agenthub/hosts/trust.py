"""Which host a URL reaches: the one function every host rule decides on.  Pure: no I/O.

A credential is sent only where a rule allows it: a key from the environment to its own endpoint,
AWS credentials to AWS hosts, Google credentials to ``*.googleapis.com``, nothing needed on
loopback.  Those rules are only as good as the host they look at, and two URL parsers may see two
hosts in one string: ``https://attacker.test\\.amazonaws.com`` is ``attacker.test\\.amazonaws.com``
to ``urllib.parse`` and ``attacker.test`` to the connecting parser (urllib3's ``parse_url``, which
requests uses); ``https://attacker.test\\@127.0.0.1`` is ``127.0.0.1`` to one and ``attacker.test``
to the other.  So the authority of a base URL is read here by RFC 3986's grammar and refused when
it holds anything else:

    authority = [ userinfo "@" ] host [ ":" port ]
    userinfo  = *( unreserved / pct-encoded / sub-delims / ":" )
    host      = "[" IPv6address "]" / IPv4address / reg-name

(a reg-name here is what a DNS name may hold: letters, digits, ``-``, ``.``, ``_``, ``~``; no
percent-encoding, no sub-delims, no second ``@``).  On every authority this accepts, urllib3,
requests and ``urllib.parse`` see the same host (``tests/test_host_trust.py`` checks them side by
side), so the host returned is the one connected to.  ``authority_host`` reads a Host header or a
bind address by the same rules (``agenthub serve``, the trace viewer).
"""

import ipaddress
import re
from typing import Any, Iterable, Optional, Tuple

from .._redact import shown_url
from ..errors import ConfigError

__all__ = ["check_model_segments", "url_host", "route_host", "url_origin", "url_server", "circuit_host", "authority_host", "authority_parts", "check_base_url", "join_url",
           "host_is", "is_loopback", "is_loopback_host", "split_authority"]

_SCHEME = re.compile(r"^(https?)://")
_USERINFO = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*$")
_REG_NAME = re.compile(r"^[A-Za-z0-9\-._~]+$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_PORT = re.compile(r"^\d{1,5}$")


class _Refused(ValueError):
    pass


def _host_part(text: str) -> Tuple[str, Optional[int]]:
    """``host[:port]`` -> (lower-case host, IPv6 without brackets; port or None); _Refused otherwise."""
    port = None  # type: Optional[int]
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise _Refused("an IPv6 address without its closing bracket")
        host, rest = text[1:end], text[end + 1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise _Refused("a bracketed host that is not an IPv6 address") from None
        if rest:
            if not rest.startswith(":"):
                raise _Refused("characters after the IPv6 address")
            port_text = rest[1:]
        else:
            port_text = None
    else:
        host, colon, port_text_found = text.partition(":")
        port_text = port_text_found if colon else None
        if not host:
            raise _Refused("no host")
        bad = next((ch for ch in host if not _REG_NAME.match(ch)), None)
        if bad is not None:
            raise _Refused("the character {!r} in the host (outside RFC 3986's host names)".format(bad))
        if _IPV4.match(host):
            try:
                ipaddress.IPv4Address(host)
            except ValueError:
                raise _Refused("an IPv4 address out of range") from None
    if port_text is not None:
        if not _PORT.match(port_text) or not 0 < int(port_text) < 65536:
            raise _Refused("a port that is not a number from 1 to 65535")
        port = int(port_text)
    return host.lower(), port


def split_authority(url: str) -> Tuple[str, str, str, Optional[int]]:
    """An http(s) URL -> (scheme, userinfo, host, port), read by RFC 3986; ValueError (with the reason,
    never the URL) for anything else."""
    if not isinstance(url, str):
        raise _Refused("not a string")
    match = _SCHEME.match(url)
    if match is None:
        raise _Refused("not an http(s) URL")
    rest = url[match.end():]
    end = len(rest)
    for delimiter in "/?#":
        found = rest.find(delimiter)
        if 0 <= found < end:
            end = found
    authority = rest[:end]
    userinfo, at, hostport = authority.rpartition("@")
    if at and (not _USERINFO.match(userinfo) or "@" in userinfo):
        bad = next((ch for ch in userinfo if not _USERINFO.match(ch) and ch != "%"), "@")
        raise _Refused("the character {!r} in the user part (outside RFC 3986)".format(bad))
    host, port = _host_part(hostport)
    return match.group(1).lower(), userinfo, host, port


def check_model_segments(model: str) -> None:
    """ConfigError when a model id holds a path segment ``.`` or ``..`` (also percent-encoded: requests
    decodes ``%2e`` before urllib3 removes dot segments): in a URL path (Gemini, Bedrock, Vertex AI, an
    Azure deployment) it would leave its place and reach another resource."""
    from urllib.parse import unquote

    for segment in model.split("/"):
        if unquote(segment).strip() in (".", ".."):
            raise ConfigError("model {!r} has a path segment {!r}: in the request's URL it would reach another "
                              "resource; it was not sent".format(model[:100], segment))


def url_host(url: Any) -> str:
    """The host ``url`` connects to (lower case, an IPv6 address without brackets); "" for a URL whose
    authority is not RFC 3986 (such a base URL is refused by ``check_base_url`` before anything is sent)."""
    try:
        return split_authority(url)[2]
    except ValueError:
        return ""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def route_host(url: Any) -> str:
    """Where ``url`` connects, as a route names it: ``url_host``, with ``:port`` when the URL names a port
    other than its scheme's (two endpoints on one host read apart; an IPv6 address is then in brackets)."""
    try:
        scheme, _, host, port = split_authority(url)
    except ValueError:
        return ""
    if not port or port == _DEFAULT_PORTS.get(scheme):
        return host
    return "{}:{}".format("[{}]".format(host) if ":" in host else host, port)


def url_server(url: Any) -> Optional[Tuple[str, int]]:
    """(host, port) ``url`` connects to (an attempt's ``server``); None for a URL without a host."""
    origin = url_origin(url)
    return None if origin is None else (origin[1], origin[2])


def circuit_host(url: Any) -> str:
    """The host part of the endpoint a circuit breaker (``breaker.endpoint_name``) and a limiter's pause key: host
    and port, always (two gateways on one host are two endpoints); "" for a URL without a host."""
    origin = url_origin(url)
    if origin is None:
        return ""
    _, host, port = origin
    return "[{}]:{}".format(host, port) if ":" in host else "{}:{}".format(host, port)


def url_origin(url: Any) -> Optional[Tuple[str, str, int]]:
    """(scheme, host, port) ``url`` connects to, the scheme's port when none is written; None for a URL
    whose authority is not RFC 3986 (as ``url_host``)."""
    try:
        scheme, _, host, port = split_authority(url)
    except ValueError:
        return None
    return scheme, host, port or _DEFAULT_PORTS[scheme]


def check_base_url(url: Any, what: str = "base_url") -> str:
    """``url`` when it is an http(s) URL whose authority RFC 3986 reads one way; a ConfigError otherwise
    (it names the problem and the character, never the URL's user part)."""
    start = _SCHEME.match(url) if isinstance(url, str) else None
    if start is None or url[start.end():start.end() + 1] in ("", "/", "?", "#") or url[start.end()].isspace():
        shown = shown_url(url) if isinstance(url, str) else type(url).__name__  # never its user:password
        raise ConfigError("{} must be an http(s) URL (got {!r})".format(what, shown if len(shown) < 200 else
                                                                           shown[:200] + "..."))
    try:
        split_authority(url)
    except ValueError as exc:
        raise ConfigError("{} refused: {}; nothing was sent (two URL parsers could disagree on the host it "
                          "reaches)".format(what, exc)) from None
    return url


def join_url(base_url: str, path: str) -> str:
    """``path`` (it may hold its own query: ``...?alt=sse``) after ``base_url``'s path, and ``base_url``'s
    query string after the path's own (a gateway's ``?key=``): ``https://gw/v1?key=K`` and
    ``/chat/completions`` -> ``https://gw/v1/chat/completions?key=K`` (the path was appended to the query)."""
    base, mark, query = base_url.partition("?")
    url = base.rstrip("/") + path
    if mark and query:
        url += ("&" if "?" in path else "?") + query
    return url


def authority_parts(authority: Any) -> Optional[Tuple[str, Optional[int]]]:
    """A Host header or a bind address (``name``, ``name:port``, ``[::1]:port``, a bare IPv6 address) ->
    (its lower-case host without brackets, its port or None); None when it is not one RFC 3986 host."""
    if not isinstance(authority, str):
        return None
    text = authority.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = "[" + text + "]"  # a bare IPv6 address (a bind address)
    try:
        host, port = _host_part(text)
    except ValueError:
        return None
    return host, port


def authority_host(authority: Any) -> str:
    """The host of a Host header or a bind address (see ``authority_parts``); "" when it is not one."""
    parts = authority_parts(authority)
    return parts[0] if parts else ""


def host_is(url: Any, names: Iterable[str] = (), suffixes: Iterable[str] = ()) -> bool:
    """True when ``url``'s host is one of ``names`` or ends with one of ``suffixes`` (``.amazonaws.com``)."""
    host = url_host(url)
    if not host:
        return False
    return host in {name.lower() for name in names} or any(host.endswith(s.lower()) for s in suffixes)


def is_loopback_host(host: Any) -> bool:
    """True for localhost (and *.localhost), 127.0.0.0/8 and ::1 (brackets and a port allowed)."""
    name = authority_host(host)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return bool(name) and ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback(base_url: Any) -> bool:
    """True for http(s)://localhost, 127.0.0.0/8 and [::1] (local servers need no key)."""
    host = url_host(base_url)
    return bool(host) and is_loopback_host("[" + host + "]" if ":" in host else host)
